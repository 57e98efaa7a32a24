"""``sample_weight``: a weight of 2 is the row repeated, a weight of 0 the row left out."""

from __future__ import annotations

import numpy as np
import pytest

from bayes_rvm import RVR, fit_type2
from bayes_rvm.datasets import make_sinc


@pytest.fixture(scope="module")
def sinc():
    data = make_sinc(40, noise_level=0.1, random_state=1)
    return data.X, data.y


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["sequential", "mackay", "em"])
def test_integer_weights_equal_repeated_rows(sinc, solver):
    X, y = sinc
    weights = np.random.default_rng(0).integers(0, 4, size=y.size)
    repeated = np.repeat(np.arange(y.size), weights)
    # a kernel centred on every repeated row is a duplicated column: use the precomputed
    # kernel of the distinct rows as the basis of both fits
    K = np.exp(-0.25 * (X - X.T) ** 2)
    Phi = np.column_stack([K, np.ones(y.size)])
    weighted = fit_type2(Phi, y, solver=solver, sample_weight=weights, tol=1e-9)
    copies = fit_type2(Phi[repeated], y[repeated], solver=solver, tol=1e-9)
    np.testing.assert_array_equal(weighted.active, copies.active)
    np.testing.assert_allclose(weighted.mu, copies.mu, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(weighted.alpha, copies.alpha, rtol=1e-5)
    assert weighted.beta == pytest.approx(copies.beta, rel=1e-6)
    assert weighted.log_evidence == pytest.approx(copies.log_evidence, abs=1e-6)


def test_rvr_sample_weight_of_two_is_a_duplicated_row(sinc):
    X, y = sinc
    weights = np.ones(y.size)
    weights[[3, 17]] = 2.0
    weighted = RVR(gamma=0.25, solver="mackay", tol=1e-9).fit(X, y, sample_weight=weights)
    # the duplicated rows as precomputed kernel columns over the distinct centres
    rows = np.r_[np.arange(y.size), 3, 17]
    K = np.exp(-0.25 * (X[rows] - X.T) ** 2)
    Phi = np.column_stack([K, np.ones(rows.size)])
    copies = fit_type2(Phi, y[rows], solver="mackay", tol=1e-9)
    np.testing.assert_array_equal(weighted.result_.active, copies.active)
    np.testing.assert_allclose(weighted.result_.mu, copies.mu, rtol=1e-6, atol=1e-9)
    assert weighted.log_evidence_ == pytest.approx(copies.log_evidence, abs=1e-6)


@pytest.mark.parametrize(
    "weights", [np.full(40, -1.0), np.zeros(40), np.ones(5), np.full(40, np.nan)]
)
def test_invalid_sample_weight_is_named(sinc, weights):
    X, y = sinc
    with pytest.raises(ValueError, match="sample_weight"):
        RVR().fit(X, y, sample_weight=weights)
