"""Sparse Bayesian learning and the Relevance Vector Machine.

One hierarchical model (Tipping 2001), fitted by type-II maximum likelihood
(:func:`fit_type2`, the estimators :class:`RVR` and :class:`RVC`), and, through PyMC, by MCMC and
variational inference.
"""

from __future__ import annotations

from bayes_rvm import datasets
from bayes_rvm.estimators import RVC, RVR
from bayes_rvm.solvers import Prior, ScalesFit, Type2Result, fit_type2, fit_type2_scales

__all__ = [
    "RVC",
    "RVR",
    "Prior",
    "ScalesFit",
    "Type2Result",
    "datasets",
    "fit_type2",
    "fit_type2_scales",
]
__version__ = "0.1.0"
