"""Scale invariance over the float range (Tipping 2001, Sec. 2.1).

Under the flat hyperpriors the type-II fit is invariant to rescaling the targets and the
basis columns: the predictions scale with the targets, the active set is the same, and
the log evidence moves by the Jacobian ``-N log k``. :func:`bayes_rvm.fit_type2` solves in
units where the targets have unit root mean square and the columns unit norm, so this
holds for every solver until a precision itself leaves the float range, which raises a
``ValueError`` naming the range.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from bayes_rvm import RVC, RVR
from bayes_rvm.datasets import make_sinc
from bayes_rvm.evidence import log_evidence_dense

SOLVERS = ("sequential", "mackay", "em")
TARGET_SCALES = (1e-150, 1e-80, 1e-20, 1e20, 1e100, 1e150, 1e154)


@pytest.fixture(scope="module")
def sinc():
    data = make_sinc(60, noise_level=0.1, random_state=0)
    return data.X, data.y


@pytest.fixture(scope="module")
def labels():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 2))
    return X, (X[:, 0] + 0.3 * rng.normal(size=80) > 0).astype(int)


@pytest.mark.parametrize("solver", SOLVERS)
def test_regression_is_invariant_to_the_target_scale(sinc, solver):
    X, y = sinc
    with warnings.catch_warnings():  # EM stalls short of the gradient test here
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference = RVR(gamma=0.25, solver=solver).fit(X, y)
    mean, std = reference.predict(X, return_std=True)
    for k in TARGET_SCALES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = RVR(gamma=0.25, solver=solver).fit(X, y * k)
        scaled_mean, scaled_std = model.predict(X, return_std=True)
        np.testing.assert_array_equal(model.relevance_indices_, reference.relevance_indices_)
        # the fit is the same up to rounding: 1e-9 of the signal
        np.testing.assert_allclose(scaled_mean / k, mean, rtol=0, atol=1e-9)
        np.testing.assert_allclose(scaled_std / k, std, rtol=1e-9)
        np.testing.assert_allclose(model.noise_var_ / k**2, reference.noise_var_, rtol=1e-9)
        # the Jacobian of y -> k y
        assert model.log_evidence_ + y.size * np.log(k) == pytest.approx(
            reference.log_evidence_, abs=1e-8
        )


def test_regression_with_proper_priors_solves_the_same_problem_in_other_units(sinc):
    """Gamma(a, b) on alpha and Gamma(c, d) on beta: y -> k y with b -> k^2 b and
    d -> k^2 d is the same model in other units."""
    X, y = sinc
    options = {"gamma": 0.25, "solver": "mackay", "a": 1e-3, "c": 1e-3}
    reference = RVR(b=1e-3, d=1e-3, **options).fit(X, y)
    for k in (1e-60, 1e60):
        model = RVR(b=1e-3 * k**2, d=1e-3 * k**2, **options).fit(X, y * k)
        np.testing.assert_array_equal(model.relevance_indices_, reference.relevance_indices_)
        np.testing.assert_allclose(model.predict(X) / k, reference.predict(X), atol=1e-9)
        assert model.log_evidence_ + y.size * np.log(k) == pytest.approx(
            reference.log_evidence_, abs=1e-8
        )


@pytest.mark.parametrize("solver", SOLVERS)
def test_classification_is_invariant_to_the_input_scale(labels, solver):
    """A linear kernel on X * k scales the kernel columns by k^2 (the bias column not)."""
    X, y = labels
    reference = RVC(kernel="linear", solver=solver).fit(X, y)
    assert reference.n_relevance_ > 0
    for k in (1e-60, 1e-4, 1e4, 1e60):
        model = RVC(kernel="linear", solver=solver).fit(X * k, y)
        assert model.active_names_ == reference.active_names_
        np.testing.assert_allclose(
            model.predict_proba(X * k), reference.predict_proba(X), rtol=0, atol=1e-9
        )
        assert model.log_evidence_ == pytest.approx(reference.log_evidence_, abs=1e-8)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize(
    "k",
    [
        1e-200,
        1e160,
        1e200,
    ],
)
def test_targets_beyond_the_float_range_name_it(sinc, solver, k):
    """A noise variance ``k^2`` times that of the unit fit is past the float range from
    ``k`` about 1e156 here: a ``ValueError`` naming the range, the previous fit kept."""
    X, y = sinc
    with warnings.catch_warnings():  # EM stalls short of the gradient test here
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = RVR(gamma=0.25, solver=solver).fit(X, y)
        before = model.predict(X, return_std=True)
        with pytest.raises(ValueError, match="outside the float range"):
            model.fit(X, y * k)
    assert np.isfinite(model.noise_var_)
    for got, expected in zip(model.predict(X, return_std=True), before, strict=True):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("solver", SOLVERS)
def test_weight_covariance_beyond_the_float_range_names_it(solver):
    """Here the noise variance of ``y * 1e155`` is still a float (5.8e307) but the
    posterior covariance of the weights is not: a ``ValueError`` naming the range, no
    overflow ``RuntimeWarning``, and the previous fit kept (not ``sigma_`` = inf)."""
    data = make_sinc(50, noise_level=0.1, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("error", RuntimeWarning)
        model = RVR(solver=solver).fit(data.X, data.y)
        before = model.sigma_
        with pytest.raises(ValueError, match=r"outside the float range.*\(sigma_\)"):
            model.fit(data.X, data.y * 1e155)
    np.testing.assert_array_equal(model.sigma_, before)


@pytest.mark.parametrize(
    "priors",
    [{}, {"a": 1e-3, "c": 1e-3}, {"a": 1e-3, "b": 1e-2, "c": 1e-3, "d": 1e-2}],
    ids=["flat", "improper", "proper"],
)
def test_log_evidence_is_in_the_units_of_the_data(sinc, priors):
    """The reported eq. 36 (hyperprior terms included) equals the dense ``N x N``
    evaluation at the returned hyperparameters, on the data as given."""
    X, y = sinc
    for k in (1.0, 1e3, 1e-40):
        model = RVR(gamma=0.25, solver="mackay", **priors).fit(X, y * k)
        result = model.result_
        direct = log_evidence_dense(
            model.design_matrix(X), y * k, result.alpha, result.beta
        ) + result.prior.log_density(result.alpha, result.beta)
        assert model.log_evidence_ == pytest.approx(direct, abs=1e-8)
