"""Type-II maximum-likelihood solvers and their common entry point :func:`fit_type2`.

Every solver has the signature
``fit(basis, t, *, prior, noise_var, max_iter, tol, verbose) -> Type2Result`` and is
registered in :data:`SOLVERS` under the name the ``solver=`` option takes.
"""

from __future__ import annotations

from bayes_rvm.solvers._base import EmptyModelWarning, InterpolationWarning, Prior, Type2Result
from bayes_rvm.solvers._fit import SOLVER_CHOICES, SOLVERS, default_solver, fit_type2
from bayes_rvm.solvers.scales import ScalesFit, fit_type2_scales

__all__ = [
    "SOLVERS",
    "SOLVER_CHOICES",
    "EmptyModelWarning",
    "InterpolationWarning",
    "Prior",
    "ScalesFit",
    "Type2Result",
    "default_solver",
    "fit_type2",
    "fit_type2_scales",
]
