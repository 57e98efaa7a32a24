"""Exact state of the compiled step loop (:mod:`._steps`): a new Cholesky factor of ``H =
A + beta Phi_a^T Phi_a`` with ``Sigma, mu`` (Tipping 2001, eq. 12-13), exact ``S, Q`` of
every column (Tipping & Faul 2003, eq. 24-25), the log evidence (Tipping 2001, eq. 36),
the noise update (eq. 46) and the gain of an action on one column (Faul & Tipping 2002,
eq. 17). The equations are compiled from the one place they are written
(:mod:`bayes_rvm.evidence`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from bayes_rvm import evidence
from bayes_rvm.solvers._factor import (
    cholesky,
    combine_rows,
    copy_block,
    forward_rows,
    inverse,
    solve,
)
from bayes_rvm.solvers._slots import (
    F_BETA,
    F_LOG_EV,
    F_RESOLUTION,
    I_FACTOR_PENDING,
    I_FRESH,
    I_LSYNC,
    I_M,
    I_SINCE,
)

__all__ = ["gains", "log_evidence", "noise_update", "refactor", "refresh", "rss"]

_jit = numba.njit(cache=True, nogil=True)
_inline = numba.njit(inline="always")  # called from one place: see _factor._inline

_l = _jit(evidence.log_likelihood_alpha_i)  # Faul & Tipping (2002) eq. 15
_eq36 = _jit(evidence.log_evidence_terms)  # Tipping (2001) eq. 36, 38, 41
_eq46 = _jit(evidence.noise_variance_cd)  # Tipping (2001) eq. 46


@_jit
def gains(alpha_p, s, q):
    """Gain (nats) of the best action on one column from its ``s, q``, and its alpha.

    ``alpha_p = inf`` for an inactive column. Faul & Tipping (2002) eq. 17: the optimum
    ``s^2 / (q^2 - s)`` when ``q^2 > s``, else ``inf`` (a delete, or no add).
    """
    theta = q * q - s
    if theta > 0.0:
        alpha_new = s * s / theta
        gain = _l(alpha_new, s, q)
        if math.isfinite(alpha_p):
            gain -= _l(alpha_p, s, q)
        return gain, alpha_new
    if math.isfinite(alpha_p):
        return -_l(alpha_p, s, q), math.inf
    return 0.0, math.inf


@_jit
def refactor(idx, alpha, C, phi_t, Sigma, mu, L_keep, istate, fstate):
    """``Sigma, mu`` from a new Cholesky factor of ``A + beta Phi_a^T Phi_a`` (Tipping 2001,
    eq. 12-13); returns ``log|H|`` (``nan`` when ``H`` is not positive definite)."""
    M = istate[I_M]
    beta = fstate[F_BETA]
    U = np.empty((M, M))  # H, then its factor U = L^T, then Sigma
    for a in range(M):
        for b in range(a + 1):
            v = 0.5 * beta * (C[b, idx[a]] + C[a, idx[b]])
            U[a, b] = v
            U[b, a] = v
        U[a, a] += alpha[a]
    if not cholesky(U):
        return math.nan
    logdet = 0.0
    largest, smallest = 0.0, math.inf
    for a in range(M):
        logdet += 2.0 * math.log(U[a, a])
        largest = max(largest, U[a, a])
        smallest = min(smallest, U[a, a])
    copy_block(L_keep, U)  # held as U = L^T: the updates below read rows of U
    # eps cond(H), cond(H) estimated by (max diag L / min diag L)^2 (a lower bound)
    fstate[F_RESOLUTION] = 2.2e-16 * (largest / smallest) ** 2 if M else 0.0
    # Tipping (2001) eq. 13: mu = beta Sigma Phi_a^T t, by the two triangular solves
    for a in range(M):
        mu[a] = beta * phi_t[idx[a]]
    solve(U, mu)
    # eq. 12: Sigma = L^-T L^-1 from the triangular inverse of the factor
    inverse(U)
    copy_block(Sigma, U)
    istate[I_SINCE] = 0
    istate[I_LSYNC] = 1
    istate[I_FACTOR_PENDING] = 0  # the updates recorded before are in the new factor
    return logdet


@_jit
def refresh(
    idx, alpha, C, Phi, t, n_rows, phi_t, unit, Sigma, mu, L_keep, S, Q, istate, fstate,
    has_hyper, c, d,
):  # fmt: skip
    """A new factor, exact ``S, Q`` of every column (Tipping & Faul 2003, eq. 24-25) and the
    log evidence (Tipping 2001, eq. 36) of ``n_rows`` observations; returns False when ``H``
    is not positive definite."""
    M = istate[I_M]
    beta = fstate[F_BETA]
    logdet = refactor(idx, alpha, C, phi_t, Sigma, mu, L_keep, istate, fstate)
    if math.isnan(logdet):
        return False
    n_basis = S.size
    Ca = C[:M]
    # X = L^-1 beta Phi_a^T Phi~ (M x n_basis): S from its sums of squares, which lose
    # fewer digits than beta^2 c^T Sigma c (an S near rounding of that form can come out
    # negative and hide a column that gains)
    X = beta * Ca
    forward_rows(L_keep, M, X)
    cm = np.empty(n_basis)
    combine_rows(C, M, mu, cm)
    xx = np.zeros(n_basis)
    for a in range(M):
        for m in range(n_basis):
            xx[m] += X[a, m] * X[a, m]
    for m in range(n_basis):
        # Tipping & Faul (2003) eq. 24-25
        S[m] = beta * unit[m] - xx[m]
        Q[m] = beta * (phi_t[m] - cm[m])
    fstate[F_LOG_EV] = log_evidence(alpha, Phi, t, n_rows, mu, M, beta, logdet, has_hyper, c, d)
    istate[I_FRESH] = 1
    return True


@_jit
def rss(Phi, t, mu, M):
    """``||t - Phi_a mu||^2``."""
    fit = np.empty(t.size)
    combine_rows(Phi, M, mu, fit)
    total = 0.0
    for i in range(t.size):
        residual = t[i] - fit[i]
        total += residual * residual
    return total


@_inline
def log_evidence(alpha, Phi, t, n_rows, mu, M, beta, logdet, has_hyper, c, d):
    """Tipping (2001) eq. 36 with eq. 38 and 41, plus ``c log beta - d beta`` when the noise
    is learned (the Gamma hyperprior on the log scale, eq. 35). ``n_rows`` is ``N``: the
    size of ``t``, or the number of rows a reduced design ``[R; 0]`` stands for."""
    log_alpha = 0.0
    weight_quad = 0.0
    for a in range(M):
        log_alpha += math.log(alpha[a])
        weight_quad += alpha[a] * mu[a] * mu[a]
    value = _eq36(logdet, log_alpha, weight_quad, beta, rss(Phi, t, mu, M), n_rows)
    if has_hyper:
        value += c * math.log(beta) - d * beta
    return value


@_inline
def noise_update(alpha, Phi, t, n_rows, Sigma, mu, M, c, d, floor, ceiling):
    """Tipping (2001) eq. 46: ``beta = (N - sum gamma + 2c) / (rss + 2d)`` with ``N =
    n_rows``, ``gamma_i = 1 - alpha_i Sigma_ii`` (eq. 17) and the noise variance at least
    ``floor`` and at most ``ceiling``."""
    gamma = 0.0
    for a in range(M):
        gamma += 1.0 - alpha[a] * Sigma[a, a]  # Tipping (2001) eq. 17
    return 1.0 / min(max(_eq46(rss(Phi, t, mu, M), gamma, n_rows, c, d), floor), ceiling)
