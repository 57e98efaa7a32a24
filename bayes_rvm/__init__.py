"""Sparse Bayesian learning and the Relevance Vector Machine.

One hierarchical model (Tipping 2001), fitted by type-II maximum likelihood
(:func:`fit_type2`, the estimators :class:`RVR`), and, through PyMC, by MCMC and
variational inference (:func:`build_model`, :func:`sample`, :func:`fit_vi`); every fit
becomes an ArviZ DataTree (:func:`to_inference_data`) and they are compared side by side
(:func:`compare`).
"""

from __future__ import annotations

from bayes_rvm.estimators import RVR
from bayes_rvm.inference import (
    Comparison,
    compare,
    fit_vi,
    model_from_estimator,
    sample,
    to_inference_data,
)
from bayes_rvm.pymc_model import build_model
from bayes_rvm.solvers import Prior, Type2Result, fit_type2

__all__ = [
    "RVR",
    "Comparison",
    "Prior",
    "Type2Result",
    "build_model",
    "compare",
    "fit_type2",
    "fit_vi",
    "model_from_estimator",
    "sample",
    "to_inference_data",
]
__version__ = "0.1.0"
