"""Rank-one steps of the compiled step loop (:mod:`._steps`): add, re-estimate and delete
on ``Sigma, mu, S, Q`` (Tipping & Faul 2003, appendix), re-estimates whose terms are kept
pending and applied together, updates of the factor ``L = U^T`` recorded and applied when
it is next read, and the products of a column about to be added.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from bayes_rvm.solvers._factor import (
    combine_rows,
    copy_row,
    forward,
    gemm,
    product,
    update_factor,
)
from bayes_rvm.solvers._slots import (
    F_BETA,
    F_LOG_EV,
    I_FACTOR_PENDING,
    I_LSYNC,
    I_M,
    I_PATH,
    I_SINCE,
)

__all__ = [
    "add_column",
    "add_sq_terms",
    "defer_factor",
    "exact_inactive",
    "fetch",
    "flush_pending",
    "record",
    "reestimate_pending",
    "remove_column",
    "sigma_inactive",
    "sq_update",
    "sync_factor",
]

_jit = numba.njit(cache=True, nogil=True)
_inline = numba.njit(inline="always")  # called from one place: see _factor._inline


@_jit
def sq_update(C, v, M, beta, S, Q, kappa_s, kappa_q, new_col):
    """``S_m += kappa_s e_m^2``, ``Q_m += kappa_q e_m`` with ``e_m = beta (C_m . v)`` (plus
    ``beta C_m,new`` for an add): the rank-one terms of Tipping & Faul (2003), appendix."""
    e = np.empty(S.size)
    combine_rows(C, M, v, e)
    if new_col >= 0:
        for m in range(e.size):
            e[m] = C[new_col, m] - e[m]
    add_sq_terms(e, beta, S, Q, kappa_s, kappa_q)


@_jit
def add_sq_terms(e, beta, S, Q, kappa_s, kappa_q):
    """``S_m += kappa_s (beta e_m)^2``, ``Q_m += kappa_q beta e_m``."""
    for m in range(S.size):
        em = beta * e[m]
        S[m] += kappa_s * em * em
        Q[m] += kappa_q * em


@_jit
def flush_pending(pending, terms, count, C, Sigma, S, Q, M, beta):
    """Apply the pending rank-one terms of ``count[0]`` re-estimates (Tipping & Faul 2003,
    appendix): ``Sigma -= sum_i kappa_i v_i v_i^T`` and, with ``e_i = beta C^T v_i``,
    ``S += kappa_i e_i^2``, ``Q += kappa_i mu_p e_i``, as matrix products (one pass over
    ``C`` for all of them, instead of one per step)."""
    P = count[0]
    if P == 0:
        return
    n_basis, cap = S.size, pending.shape[1]
    # column-major (BLAS): pending[:P, :M] is V^T (M x P), C[:M] is C^T, E^T = C^T V^T
    E = np.zeros((P, n_basis))
    gemm(False, n_basis, P, M, 1.0, C, n_basis, pending, cap, 0.0, E, n_basis)
    for i in range(P):
        add_sq_terms(E[i], beta, S, Q, terms[0, i], terms[1, i])
    W = np.empty((P, M))
    for i in range(P):
        for a in range(M):
            W[i, a] = terms[0, i] * pending[i, a]
    # Sigma[:M, :M] -= V^T W, column-major: Sigma^T -= W^T V
    gemm(True, M, M, P, -1.0, W, max(M, 1), pending, cap, 1.0, Sigma, Sigma.shape[1])
    count[0] = 0


@_inline
def design_row(j, B, rows, cols, out):
    """``out = phi~_j``: row ``j`` of ``B``, or on a row-weighted design ``B = Phi^T`` with
    ``phi~_j = cols_j (rows o phi_j)`` (``rows`` empty: ``B`` is ``Phi~^T`` itself)."""
    if rows.size == 0:
        copy_row(out, B[j])
        return
    for n in range(rows.size):
        out[n] = B[j, n] * rows[n] * cols[j]


@_inline
def fetch(j, B, rows, cols, phi, gram, fetched, out):
    """``out = Phi~^T phi~_j`` for the design row ``phi = phi~_j``: ``B phi``, or on a
    row-weighted design ``cols o (B (rows o phi))``. With a cache (``fetched.size``), row
    ``j`` of ``gram`` holds that product once ``fetched[j]``: computed on the first fetch,
    copied on a re-add or in a later ascent on the same design, the same numbers either
    way."""
    if fetched.size == 0:
        design_product(B, rows, cols, phi, out)
        return
    if not fetched[j]:
        design_product(B, rows, cols, phi, gram[j])
        fetched[j] = True
    copy_row(out, gram[j])


@_inline
def design_product(B, rows, cols, phi, out):
    """``out = Phi~^T phi`` (see :func:`design_row`)."""
    if rows.size == 0:
        product(B, phi, out)
        return
    product(B, phi * rows, out)
    for m in range(out.size):
        out[m] *= cols[m]


@_inline
def reestimate_pending(p, alpha_new, Sigma, mu, alpha, pending, terms, diag, count, M):
    """Re-estimate ``alpha_p`` with its rank-one term kept pending: the current column
    ``v = Sigma_:,p`` from ``Sigma`` and the pending terms (``O(M P)``), then ``mu`` and
    ``diag(Sigma)`` now (``O(M)``), ``Sigma, S, Q`` at the next :func:`flush_pending`."""
    P = count[0]
    if P == 0:
        for a in range(M):
            diag[a] = Sigma[a, a]
    v = Sigma[p, :M].copy()
    for i in range(P):
        f = terms[0, i] * pending[i, p]
        for a in range(M):
            v[a] -= f * pending[i, a]
    # Tipping & Faul (2003), appendix: kappa = 1 / (Sigma_pp + 1 / (alpha~ - alpha))
    k = 1.0 / (v[p] + 1.0 / (alpha_new - alpha[p]))
    mu_p = mu[p]
    for a in range(M):
        diag[a] -= k * v[a] * v[a]
        mu[a] -= k * mu_p * v[a]
    copy_row(pending[P], v)
    terms[0, P] = k
    terms[1, P] = k * mu_p
    count[0] = P + 1


@_jit
def record(path, istate, fstate):
    """Append the log evidence to ``path`` (:func:`~._steps.ascend` keeps room for one entry)."""
    path[istate[I_PATH]] = fstate[F_LOG_EV]
    istate[I_PATH] += 1


@_inline
def sigma_inactive(j, C, Sigma, mu, M, beta, phi_t, unit):
    """``S_j = beta phi_j^T phi_j - beta^2 c^T Sigma c``, ``Q_j = beta (phi_j^T t - c^T mu)``
    with ``c = Phi_a^T phi_j`` (Tipping & Faul 2003, eq. 24-25), ``O(M^2)``."""
    quad = 0.0
    cm = 0.0
    for a in range(M):
        row = 0.0
        for b in range(M):
            row += Sigma[a, b] * C[b, j]
        quad += C[a, j] * row
        cm += C[a, j] * mu[a]
    return beta * unit[j] - beta * beta * quad, beta * (phi_t[j] - cm)


@_inline
def exact_inactive(j, C, U, mu, M, beta, phi_t, unit):
    """``S_j = beta phi_j^T phi_j - ||l||^2`` with ``l = L^-1 beta c`` and ``Q_j = beta
    (phi_j^T t - c^T mu)``, ``c = Phi_a^T phi_j`` (Tipping & Faul 2003, eq. 24-25), from
    the current factor ``L = U^T``: the sum of squares loses fewer digits than ``c^T
    Sigma c``."""
    l = np.empty(M)
    for a in range(M):
        l[a] = beta * C[a, j]
    forward(U, M, l)
    quad = 0.0
    cm = 0.0
    for a in range(M):
        quad += l[a] * l[a]
        cm += C[a, j] * mu[a]
    return beta * unit[j] - quad, beta * (phi_t[j] - cm)


@_jit
def defer_factor(U, istate, updates, deltas, p, delta):
    """Record the update of ``L = U^T`` for ``alpha_p`` changed by ``delta``
    (:func:`~._factor.update_factor`), applied by :func:`sync_factor` when the factor is
    next read: most are not (a delete or the next factor comes first), and each costs
    ``O((M - p)^2)``."""
    k = istate[I_FACTOR_PENDING]
    if k == updates.size:
        sync_factor(U, istate, updates, deltas)
        if not istate[I_LSYNC]:
            return
        k = 0
    updates[k] = p
    deltas[k] = delta
    istate[I_FACTOR_PENDING] = k + 1


@_jit
def sync_factor(U, istate, updates, deltas):
    """Apply the recorded factor updates in their order, on the ``M`` rows they were
    recorded with: the factor eager updates would have held, to the bit. The first that
    loses positive definiteness leaves the factor out of sync (``I_LSYNC`` 0), as it did
    when it was taken."""
    M = istate[I_M]
    for k in range(istate[I_FACTOR_PENDING]):
        if not update_factor(U, M, updates[k], deltas[k]):
            istate[I_LSYNC] = 0
            break
    istate[I_FACTOR_PENDING] = 0


@_inline
def add_column(
    j, alpha_j, S_j, Q_j, C, Sigma, mu, U, unit, idx, alpha, position, S, Q, istate, fstate
):
    """Make column ``j`` (exact ``S_j, Q_j``) active with precision ``alpha_j``; ``C[M]``
    and ``Phi[M]`` hold its products and values (Tipping & Faul 2003, appendix). A factor
    ``L = U^T`` of the current ``H`` gains its new row ``l = L^-1 beta c``, ``sqrt(alpha_j
    + beta phi~_j^T phi~_j - l^T l)`` (a new column of ``U``)."""
    M = istate[I_M]
    beta = fstate[F_BETA]
    c = np.empty(M)
    for a in range(M):
        c[a] = C[a, j]
    if istate[I_LSYNC]:
        l = beta * c
        forward(U, M, l)
        quad = 0.0
        for a in range(M):
            U[a, M] = l[a]
            quad += l[a] * l[a]
        d2 = alpha_j + beta * unit[j] - quad
        if d2 > 0.0:
            U[M, M] = math.sqrt(d2)
        else:
            istate[I_LSYNC] = 0
    w = np.empty(M)  # beta Sigma c
    for a in range(M):
        acc = 0.0
        for b in range(M):
            acc += Sigma[a, b] * c[b]
        w[a] = beta * acc
    # Sigma_jj = 1 / (alpha_j + S_j), mu_j = Sigma_jj Q_j
    sigma_jj = 1.0 / (alpha_j + S_j)
    mu_j = sigma_jj * Q_j
    for a in range(M):
        for b in range(M):
            Sigma[a, b] += sigma_jj * w[a] * w[b]
        Sigma[a, M] = -sigma_jj * w[a]
        Sigma[M, a] = -sigma_jj * w[a]
        mu[a] -= mu_j * w[a]
    Sigma[M, M] = sigma_jj
    mu[M] = mu_j
    # e_m = beta phi_m^T phi_j - beta^2 phi_m^T Phi Sigma Phi^T phi_j = beta (C_mj - C_m . w)
    sq_update(C, w, M, beta, S, Q, -sigma_jj, -mu_j, M)
    idx[M] = j
    alpha[M] = alpha_j
    position[j] = M
    istate[I_M] = M + 1
    istate[I_SINCE] += 1


@_inline
def remove_column(p, idx, alpha, C, Phi, Sigma, mu, position, istate):
    """Drop position ``p``, whose row and column of ``Sigma`` the delete downdate has
    zeroed (Tipping & Faul 2003, appendix), moving the last position into the hole."""
    last = istate[I_M] - 1
    position[idx[p]] = -1
    if p != last:
        idx[p] = idx[last]
        alpha[p] = alpha[last]
        copy_row(C[p], C[last])
        copy_row(Phi[p], Phi[last])
        mu[p] = mu[last]
        for a in range(last):
            Sigma[a, p] = Sigma[a, last]
        for a in range(last):
            Sigma[p, a] = Sigma[last, a]
        Sigma[p, p] = Sigma[last, last]
        position[idx[p]] = p
    istate[I_M] = last
