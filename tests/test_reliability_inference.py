"""Bad input to the evidence-fit to PyMC / ArviZ bridges: clear errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse

from bayes_rvm import RVR, fit_type2, model_from_estimator, to_inference_data
from bayes_rvm.solvers import EmptyModelWarning


def test_sparse_design_with_nan_is_rejected():
    rng = np.random.default_rng(0)
    Phi = np.abs(rng.normal(size=(20, 5)))
    t = Phi @ rng.normal(size=5) + 0.1 * rng.normal(size=20)
    fit = fit_type2(Phi, t, solver="mackay")
    Phi[2, fit.active[0]] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        to_inference_data(fit, Phi, t, draws=10, random_seed=0)  # the dense design raises
    with pytest.raises(ValueError, match="NaN"):
        to_inference_data(fit, scipy.sparse.csr_matrix(Phi), t, draws=10, random_seed=0)


def test_model_of_an_empty_fit_says_what_to_do():
    """Every basis function pruned: the relevant basis is empty, and the error says so
    (it used to say "expected a non-empty Phi"); basis="all" still builds the model."""
    X = np.linspace(-5, 5, 25)[:, None]
    with pytest.warns(EmptyModelWarning, match="every basis function was pruned"):
        model = RVR(gamma=0.5).fit(X, np.zeros(25))
    with pytest.raises(ValueError, match=r"kept no basis function.*basis='all'"):
        model_from_estimator(model, X, np.zeros(25), a=2.0, b=2.0, c=2.0, d=2.0)
    full = model_from_estimator(model, X, np.zeros(25), basis="all", a=2.0, b=2.0, c=2.0, d=2.0)
    assert full["Phi"].get_value().shape == (25, 26)
