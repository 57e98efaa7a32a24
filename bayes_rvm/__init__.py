"""Sparse Bayesian learning and the Relevance Vector Machine.

One hierarchical model (Tipping 2001), fitted by type-II maximum likelihood
(:func:`fit_type2`, the estimators :class:`RVR` and :class:`RVC`), and, through PyMC, by
MCMC and variational inference (:func:`build_model`, or :func:`rvm_weights` in a model of
your own; :func:`sample`, :func:`fit_vi`); every fit becomes an ArviZ DataTree
(:func:`to_inference_data`), predicts through :func:`predict`, and they are compared side by
side (:func:`compare`).

The PyMC-based names are imported on first use, so that ``import bayes_rvm`` stays fast for
users of the estimators alone.
"""

from __future__ import annotations

from importlib import import_module

from bayes_rvm import datasets
from bayes_rvm.estimators import RVC, RVR
from bayes_rvm.solvers import Prior, ScalesFit, Type2Result, fit_type2, fit_type2_scales

#: public name -> module that defines it, imported on first access (PyMC is slow to import)
_LAZY = {
    "Comparison": "bayes_rvm.inference",
    "compare": "bayes_rvm.inference",
    "fit_vi": "bayes_rvm.inference",
    "model_from_estimator": "bayes_rvm.inference",
    "predict": "bayes_rvm.inference",
    "sample": "bayes_rvm.inference",
    "to_inference_data": "bayes_rvm.inference",
    "build_model": "bayes_rvm.pymc_model",
    "rvm_weights": "bayes_rvm.pymc_model",
}

__all__ = [
    "RVC",
    "RVR",
    "Prior",
    "ScalesFit",
    "Type2Result",
    "datasets",
    "fit_type2",
    "fit_type2_scales",
    *sorted(_LAZY),
]
__version__ = "0.1.0"


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'bayes_rvm' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
