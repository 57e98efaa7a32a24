"""A design matrix with NaN must raise in ``to_inference_data``, sparse or dense."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse

from bayes_rvm import fit_type2, to_inference_data


@pytest.mark.xfail(
    strict=True,
    reason="the sparse branch of to_inference_data skips the finiteness check of the "
    "design: it returns an all-NaN log_likelihood (the dense design raises)",
)
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
