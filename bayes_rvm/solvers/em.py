"""Expectation-maximisation of the hyperparameters (Tipping 2001, App. A.3).

``alpha_i <- (1 + 2a) / (<w_i^2> + 2b)`` with ``<w_i^2> = mu_i^2 + Sigma_ii`` (eq. 48) and
``sigma^2 <- (||t - Phi mu||^2 + sigma^2_old sum gamma + 2d) / (N + 2c)`` (eq. 50).
Every step increases the evidence.

Pruning. Under EM an irrelevant ``alpha_i`` grows only linearly (by about ``s_i - q_i^2``
per step), so the App. B.1 rule ``gamma_i < eps`` would need ~1e16 steps. Instead a column
is dropped once EM itself has made it negligible (``gamma_i < 1e-3``: the weight's
posterior is within 0.1% of its prior) *and* the evidence, as a function of its
``alpha_i`` alone, increases all the way to ``alpha_i = inf``, which holds when
``q_i^2 <= s_i`` (Faul & Tipping 2002, Sec. 3). Setting it to ``inf`` is then an exact
coordinate-ascent step, so the objective still never decreases; requiring a small
``gamma_i`` first keeps the step from being taken early and greedily, before the other
weights have settled. ``s_i`` and ``q_i`` come from the posterior:
``Sigma_ii = 1 / (alpha_i + s_i)`` and ``mu_i = q_i Sigma_ii``. With a proper prior (``a`` or
``b`` > 0) the optimum of every ``alpha_i`` is finite and only the App. B.1 rule applies.
"""

from __future__ import annotations

import numpy as np

from bayes_rvm.basis import Basis
from bayes_rvm.evidence import EPS, Prior
from bayes_rvm.solvers._base import Type2Result
from bayes_rvm.solvers._reestimation import (
    Rules,
    State,
    reestimate,
    unbounded_negligible,
)

__all__ = ["fit"]


def _alpha(state: State, alpha: np.ndarray, prior: Prior) -> np.ndarray:
    # Tipping (2001) eq. 48
    # (K weights sharing alpha_m: K in place of 1 and sums over the K weights)
    return (state.n_outputs + 2.0 * prior.a) / (
        state.weight_sq + state.variance_sum + 2.0 * prior.b
    )


def _noise_var(state: State, beta: float, n: int, prior: Prior) -> float:
    # Tipping (2001) eq. 50
    rss = state.residual_sq
    return (rss + float(np.sum(state.gamma)) / beta + 2.0 * prior.d) / (n + 2.0 * prior.c)


def _prune(state: State, alpha: np.ndarray, prior: Prior) -> np.ndarray:
    # Tipping (2001) App. B.1, as in MacKay's solver, and the coordinate step to infinity
    return (state.gamma < EPS) | unbounded_negligible(state, alpha, prior)


#: EM stops when the log evidence gains less than ``min(tol, 1e-6)`` nats over this many
#: iterations (with a warning): its steps shrink geometrically near the optimum.
STALL_WINDOW = 100

RULES = Rules("em", _alpha, _noise_var, _prune, stall_window=STALL_WINDOW)


def fit(basis: Basis, t: np.ndarray, **options) -> Type2Result:
    """EM from the full basis; see :func:`bayes_rvm.fit_type2` for the options."""
    return reestimate(basis, t, RULES, **options)
