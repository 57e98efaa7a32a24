"""Cholesky factorisation of the posterior precision and what follows from it.

The posterior precision ``H = A + beta Phi^T Phi`` (Tipping 2001, eq. 12) is factored
once per hyperparameter step; every solve, log-determinant and diagonal of
``Sigma = H^-1`` comes from the factor. No matrix is inverted explicitly.

The LAPACK routines (``dpotrf``, ``dtrtrs``, ``dpotrs``) are called directly: the
sequential solver makes several small solves per step, and the argument checking of the
``scipy.linalg`` wrappers cost more than the solves themselves.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

__all__ = [
    "NotPositiveDefiniteError",
    "cho_solve",
    "cholesky",
    "inverse_diag",
    "logdet",
    "solve_lower",
]

#: Relative jitter steps tried, in order, when a factorisation fails.
JITTER_STEPS = (0.0, 1e-12, 1e-10, 1e-8, 1e-6)


class NotPositiveDefiniteError(ValueError):
    """A matrix that should be positive definite could not be factored, even with jitter."""


def cholesky(H: np.ndarray, what: str = "posterior precision") -> np.ndarray:
    """Lower Cholesky factor ``L`` with ``L @ L.T == H``.

    ``H`` is symmetric positive definite in exact arithmetic. When rounding makes the
    factorisation fail, a jitter ``eps * mean(diag(H))`` is added to the diagonal for
    ``eps`` in :data:`JITTER_STEPS`; the first success is returned.

    Raises
    ------
    NotPositiveDefiniteError
        If ``H`` is not finite or every jitter step fails.
    """
    if H.shape[0] == 0:
        return np.zeros((0, 0))
    if not np.all(np.isfinite(H)):
        raise NotPositiveDefiniteError(f"the {what} matrix has NaN or infinite entries")
    scale = float(np.mean(np.diag(H))) if H.size else 1.0
    for eps in JITTER_STEPS:
        target = H if eps == 0.0 else H + (eps * scale) * np.eye(H.shape[0])
        factor, info = lapack.dpotrf(target, lower=1, clean=1)
        if info == 0:
            return factor
    raise NotPositiveDefiniteError(
        f"the {what} matrix ({H.shape[0]} x {H.shape[0]}) is not positive definite even "
        f"after adding {JITTER_STEPS[-1]:g} x mean(diag) to its diagonal; the basis is "
        "numerically degenerate (duplicated columns with vanishing alpha)"
    )


def _checked(result: tuple[np.ndarray, int], routine: str) -> np.ndarray:
    solution, info = result
    if info != 0:
        raise NotPositiveDefiniteError(f"LAPACK {routine} failed (info={info}): singular factor")
    return solution


def solve_lower(L: np.ndarray, B: np.ndarray, transpose: bool = False) -> np.ndarray:
    """``L^-1 B`` by forward substitution (``L^-T B`` by back substitution if ``transpose``)."""
    if L.shape[0] == 0:
        return np.zeros(np.shape(B))
    return _checked(lapack.dtrtrs(L, B, lower=1, trans=int(transpose)), "dtrtrs")


def cho_solve(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``H^-1 B`` from the lower factor of ``H``."""
    if L.shape[0] == 0:
        return np.zeros(np.shape(B))
    return _checked(lapack.dpotrs(L, B, lower=1), "dpotrs")


def logdet(L: np.ndarray) -> float:
    """``log |H|`` = 2 sum log diag L."""
    return 2.0 * float(np.sum(np.log(np.diag(L))))


def inverse_diag(L: np.ndarray) -> np.ndarray:
    """``diag(H^-1)``: squared column norms of ``L^-1`` (triangular solve, no inverse of H)."""
    Linv = solve_lower(L, np.eye(L.shape[0]))
    return np.einsum("ij,ij->j", Linv, Linv)
