"""MacKay re-estimation of the hyperparameters (Tipping 2001, Sec. 2.2 and App. A.2).

``alpha_i <- (gamma_i + 2a) / (mu_i^2 + 2b)`` (eq. 44) and
``sigma^2 <- (||t - Phi mu||^2 + 2d) / (N - sum gamma + 2c)`` (eq. 46), with the basis
function dropped when its ``gamma_i`` falls below machine precision (App. B.1).
Fast in practice, but not guaranteed to increase the evidence at every step.
"""

from __future__ import annotations

import numpy as np

from bayes_rvm.basis import Basis
from bayes_rvm.evidence import EPS, Prior, noise_variance
from bayes_rvm.solvers._base import Type2Result
from bayes_rvm.solvers._reestimation import Rules, State, reestimate

__all__ = ["fit"]


def _alpha(state: State, alpha: np.ndarray, prior: Prior) -> np.ndarray:
    # Tipping (2001) eq. 44
    return (state.gamma + 2.0 * prior.a) / (state.weight_sq + 2.0 * prior.b)


def _noise_var(state: State, beta: float, n: int, prior: Prior) -> float:
    return noise_variance(state.residual_sq, float(np.sum(state.gamma)), n, prior)


def _prune(state: State, alpha: np.ndarray, prior: Prior) -> np.ndarray:
    # Tipping (2001) App. B.1: gamma_i below machine precision
    return state.gamma < EPS


RULES = Rules("mackay", _alpha, _noise_var, _prune)


def fit(basis: Basis, t: np.ndarray, **options) -> Type2Result:
    """MacKay re-estimation from the full basis; options as in :func:`bayes_rvm.fit_type2`."""
    return reestimate(basis, t, RULES, **options)
