"""Compiled step loop of the sequential solver (Gaussian likelihood).

One call of :func:`ascend` takes add / re-estimate / delete steps and noise updates on a
workspace held in arrays until the fit converges, an add needs products that are not
available, the arrays are full, or ``max_iter`` is reached; the state stays in the arrays,
so a call can resume where the previous one returned. Each step costs ``O(n_basis M)``
arithmetic and no interpreter overhead. The rank-one updates are those of Tipping & Faul
(2003, appendix); the evidence, the noise update and the single-column objective are the
package's own (:mod:`bayes_rvm.evidence`), compiled here.

The basis is held as ``B = Phi~^T`` (normalised columns as rows): the products of a
column about to be added are ``Phi~^T phi~_j = B B_j``, one matrix-vector product. ``C``
holds ``Phi_a^T Phi~`` (``M x n_basis`` rows used) and ``Phi`` the active columns as rows
(``M x N``), so that the products of a step are contiguous matrix-vector products. The
lower Cholesky factor ``L`` of ``H = A + beta Phi_a^T Phi_a`` from the last factorisation
is kept current through adds (a new row) and re-estimates (a rank-one update) until a
delete reorders the positions; an add whose ``S_j`` is confirmed on ``L`` then costs
``O(M^2)`` rather than a new factorisation. It is held transposed, ``U = L^T``, so that
the rank-one updates and the solves run along contiguous rows.
"""

from __future__ import annotations

import math
from typing import cast

import numba
import numpy as np

from bayes_rvm import evidence
from bayes_rvm.solvers._factor import (
    cholesky,
    combine_rows,
    copy_block,
    copy_row,
    forward,
    forward_rows,
    gemm,
    inverse,
    product,
    solve,
    update_factor,
)
from bayes_rvm.solvers._slots import (
    ABOVE,
    CONVERGED,
    F_BETA,
    F_INNER,
    F_LOG_EV,
    F_RESOLUTION,
    FULL,
    I_FACTOR_PENDING,
    I_FRESH,
    I_LSYNC,
    I_M,
    I_PATH,
    I_PROBE,
    I_RUN,
    I_SINCE,
    I_STALE,
    I_STEPS,
    I_SUB_STEPS,
    MAX_ITER,
    NEWTON,
    NOT_PD,
)

__all__ = [
    "ABOVE",
    "CONVERGED",
    "FULL",
    "MAX_ITER",
    "NEWTON",
    "ascend",
    "gains",
    "log_evidence",
    "noise_update",
    "refresh",
]

_jit = numba.njit(cache=True, nogil=True)
_inline = numba.njit(inline="always")  # called from one place: see _factor._inline

# "No column" as an int64 rather than the literal -1, a type of its own to numba: a function
# that takes a column index would be compiled twice, for Literal[int](-1) and for int64
_NO_COLUMN = cast(int, np.int64(-1))

# The paper's equations, compiled from the one place they are written (evidence.py)
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
def noise_update(alpha, Phi, t, n_rows, Sigma, mu, M, c, d, floor):
    """Tipping (2001) eq. 46: ``beta = (N - sum gamma + 2c) / (rss + 2d)`` with ``N =
    n_rows``, ``gamma_i = 1 - alpha_i Sigma_ii`` (eq. 17) and the noise variance at least
    ``floor``."""
    gamma = 0.0
    for a in range(M):
        gamma += 1.0 - alpha[a] * Sigma[a, a]  # Tipping (2001) eq. 17
    return 1.0 / max(_eq46(rss(Phi, t, mu, M), gamma, n_rows, c, d), floor)


@_jit
def _sq_update(C, v, M, beta, S, Q, kappa_s, kappa_q, new_col):
    """``S_m += kappa_s e_m^2``, ``Q_m += kappa_q e_m`` with ``e_m = beta (C_m . v)`` (plus
    ``beta C_m,new`` for an add): the rank-one terms of Tipping & Faul (2003), appendix."""
    e = np.empty(S.size)
    combine_rows(C, M, v, e)
    if new_col >= 0:
        for m in range(e.size):
            e[m] = C[new_col, m] - e[m]
    _add_sq_terms(e, beta, S, Q, kappa_s, kappa_q)


@_jit
def _add_sq_terms(e, beta, S, Q, kappa_s, kappa_q):
    """``S_m += kappa_s (beta e_m)^2``, ``Q_m += kappa_q beta e_m``."""
    for m in range(S.size):
        em = beta * e[m]
        S[m] += kappa_s * em * em
        Q[m] += kappa_q * em


@_jit
def ascend(
    B, t, n_rows, phi_t, unit, idx, alpha, C, Phi, Sigma, mu, L_keep, position, S, Q,
    istate, fstate, unresolved, path, learn_noise, has_hyper, c, d, max_iter, settings,
    gram, fetched,
):  # fmt: skip
    """Steps until converged; returns a code (:data:`CONVERGED`, :data:`MAX_ITER`, ...).

    ``n_rows`` is ``N`` of eq. 36 and 46: ``t.size``, or the number of rows that a reduced
    design ``B = [R; 0]^T`` with target ``t = [z; r]`` stands for.

    An ``alpha`` sub-problem is converged when no step gains more than ``F_INNER`` nats on
    exact ``S, Q`` (or, while ``F_INNER > tol``, after ``sub_steps`` steps); then the
    noise is updated (Tipping 2001, eq. 46; when learned, the variance at most
    ``noise_growth`` times larger, and not at all when the update would lower the
    evidence) and the next sub-problem's tolerance set to ``max(tol, relative_inner
    |noise gain|)``. The fit is converged only when a noise update gains at most ``tol``
    and moves ``log beta`` by at most ``noise_rtol`` and, after it, no single add or
    delete gains more than ``tol`` and no re-estimate more than ``polish tol`` on exact
    ``S, Q``: a failed certificate restarts the ascent.

    On at least ``defer_min`` active columns the rank-one terms of up to ``defer``
    re-estimates are kept pending (:func:`_flush`); after ``newton_after`` re-estimates in
    a row on at least ``newton_min`` active columns the loop returns :data:`NEWTON` (the
    caller takes joint Newton steps on the active ``alpha`` and calls again). ``settings``
    holds ``tol, floor, refactor_min, span, resolution, relative_inner, sub_steps,
    restart_below, noise_growth, noise_rtol, polish, cancellation, newton_after,
    newton_min, defer, defer_min`` (:class:`~._compiled.Schedule`). ``gram, fetched``
    keep the products of the fetched columns (:func:`_fetch`). The state is complete
    (nothing pending) when it returns.
    """
    cap = alpha.size
    pending = np.zeros((max(int(settings[14]), 1), cap))  # the Sigma columns of the pending steps
    terms = np.zeros((2, pending.shape[0]))  # their kappa and kappa mu_p
    diag = np.zeros(cap)  # diag(Sigma) with the pending terms applied
    count = np.zeros(1, dtype=np.int64)
    # the factor updates recorded since the last factor: at most max(refactor_min, M),
    # after which the loop takes a new factor (_defer_factor applies a full record rather
    # than write past it: the loop does not check bounds)
    updates = np.zeros(max(cap, int(settings[2])), dtype=np.int64)
    deltas = np.zeros(updates.size)
    tol, floor, refactor_min, span, resolution = settings[:5]
    relative_inner, sub_steps, restart_below, noise_growth, noise_rtol, polish = settings[5:11]
    cancellation, newton_after, newton_min, defer, defer_min = settings[11:16]
    n_basis = S.size
    while True:
        if istate[I_PATH] + 1 >= path.size:
            code = FULL
            break
        M = istate[I_M]
        if istate[I_RUN] >= newton_after and newton_min <= M:
            istate[I_RUN] = 0
            code = NEWTON
            break
        beta = fstate[F_BETA]
        stale_factor = istate[I_SINCE] >= max(refactor_min, M)
        if stale_factor:
            _flush(pending, terms, count, C, Sigma, S, Q, M, beta)
        if stale_factor and math.isnan(
            refactor(idx, alpha, C, phi_t, Sigma, mu, L_keep, istate, fstate)
        ):
            code = NOT_PD
            break
        # the best step: active columns from Sigma, mu; inactive ones from S, Q
        inner = fstate[F_INNER]
        if inner > tol and istate[I_STEPS] - istate[I_SUB_STEPS] >= sub_steps:
            inner = math.inf  # a loose sub-problem has had its steps: the noise moves on
        # the last sub-problem polishes the re-estimates below tol (adds and deletes, which
        # change the model, still need more than tol)
        inner_re = inner if inner > tol else tol * polish
        best = 0.0
        best_j = _NO_COLUMN
        best_alpha = math.inf
        for m in range(n_basis):
            if unresolved[m]:
                continue
            p = position[m]
            if p >= 0:
                sigma = diag[p] if count[0] else Sigma[p, p]
                s = 1.0 / sigma - alpha[p]
                q = mu[p] / sigma
                if not s > 0.0:
                    continue
                g, a_new = gains(alpha[p], s, q)
            else:
                if S[m] <= span * beta * unit[m]:
                    continue
                g, a_new = gains(math.inf, S[m], Q[m])
            threshold = inner_re if p >= 0 and math.isfinite(a_new) else inner
            if g > threshold and g > best:
                best, best_j, best_alpha = g, m, a_new
        if best_j < 0 or ((position[best_j] < 0 or math.isinf(best_alpha)) and count[0]):
            # an add, a delete or the noise update: on the complete state
            _flush(pending, terms, count, C, Sigma, S, Q, M, beta)
            if best_j >= 0:
                continue
            if istate[I_FRESH] == 0:  # confirm on exact S, Q
                if not refresh(idx, alpha, C, Phi, t, n_rows, phi_t, unit, Sigma, mu, L_keep, S, Q,
                               istate, fstate, has_hyper, c, d):  # fmt: skip
                    code = NOT_PD
                    break
                continue
            if not learn_noise or istate[I_STALE] == 0:
                if fstate[F_INNER] <= tol:
                    code = CONVERGED
                    break
                fstate[F_INNER] = tol
                continue
            if istate[I_STEPS] >= max_iter:
                code = MAX_ITER
                break
            istate[I_STEPS] += 1
            beta_new = noise_update(alpha, Phi, t, n_rows, Sigma, mu, M, c, d, floor)
            if istate[I_PROBE] and beta_new * restart_below > beta and beta < 1.0 / floor:
                fstate[F_BETA] = beta_new
                code = ABOVE
                break
            istate[I_PROBE] = 0
            # continuation: the variance grows at most by noise_growth per update, so that
            # the alpha steps add the columns a lower noise needs before the noise moves on
            beta_new = max(beta_new, beta / noise_growth)
            before = fstate[F_LOG_EV]
            fstate[F_BETA] = beta_new
            if not refresh(idx, alpha, C, Phi, t, n_rows, phi_t, unit, Sigma, mu, L_keep, S, Q,
                           istate, fstate, has_hyper, c, d):  # fmt: skip
                code = NOT_PD
                break
            gain = fstate[F_LOG_EV] - before
            if gain < 0.0:  # eq. 46 is a fixed-point step, not an ascent step: keep beta
                fstate[F_BETA] = beta
                if not refresh(idx, alpha, C, Phi, t, n_rows, phi_t, unit, Sigma, mu, L_keep, S, Q,
                               istate, fstate, has_hyper, c, d):  # fmt: skip
                    code = NOT_PD
                    break
                gain = 0.0
            _record(path, istate, fstate)
            unresolved[:] = False
            istate[I_RUN] = 0
            istate[I_STALE] = 0
            fstate[F_INNER] = max(tol, relative_inner * abs(gain))
            istate[I_SUB_STEPS] = istate[I_STEPS]
            if abs(gain) > tol or abs(math.log(fstate[F_BETA] / beta)) > noise_rtol:
                istate[I_STALE] = 1  # the noise moved: its next update is due as well
            continue
        j = best_j
        p = position[j]
        if p < 0:  # confirm an add on exact s, q (Tipping & Faul 2003, eq. 24-25)
            s_j, q_j = _sigma_inactive(j, C, Sigma, mu, M, beta, phi_t, unit)
            if s_j < cancellation * beta * unit[j]:
                # most digits of beta - beta^2 c^T Sigma c cancel: from a current factor
                _sync_factor(L_keep, istate, updates, deltas)
                if not istate[I_LSYNC] and math.isnan(
                    refactor(idx, alpha, C, phi_t, Sigma, mu, L_keep, istate, fstate)
                ):
                    code = NOT_PD
                    break
                s_j, q_j = _exact_inactive(j, C, L_keep, mu, M, beta, phi_t, unit)
            if s_j <= span * beta * unit[j]:
                unresolved[j] = True
                continue
            g, a_new = gains(math.inf, s_j, q_j)
            S[j], Q[j] = s_j, q_j
            if not g > inner or g <= resolution * fstate[F_RESOLUTION] * (1.0 + g):
                unresolved[j] = True
                continue
            best, best_alpha = g, a_new
        if istate[I_STEPS] >= max_iter:
            code = MAX_ITER
            break
        if best <= resolution * fstate[F_RESOLUTION] * (1.0 + best):
            unresolved[j] = True  # rounding at this conditioning: not a step, for now
            continue
        istate[I_STEPS] += 1
        istate[I_FRESH] = 0
        istate[I_STALE] = 1
        unresolved[:] = False
        fstate[F_LOG_EV] += best
        if p < 0 and cap == M:
            istate[I_STEPS] -= 1
            fstate[F_LOG_EV] -= best
            code = FULL
            break
        _record(path, istate, fstate)
        istate[I_RUN] = istate[I_RUN] + 1 if p >= 0 and math.isfinite(best_alpha) else 0
        if p < 0:
            # _add extends the factor: the one the updates give when each is applied as
            # it comes (extended first and updated after, it is the same up to rounding)
            _sync_factor(L_keep, istate, updates, deltas)
            _fetch(j, B, gram, fetched, C[M])
            copy_row(Phi[M], B[j])
            _add(j, best_alpha, S[j], Q[j], C, Sigma, mu, L_keep, unit, idx, alpha, position, S, Q,
                 istate, fstate)  # fmt: skip
        elif math.isfinite(best_alpha) and defer > 0 and defer_min <= M:
            _reestimate_pending(p, best_alpha, Sigma, mu, alpha, pending, terms, diag, count, M)
            istate[I_SINCE] += 1
            if istate[I_LSYNC]:
                _defer_factor(L_keep, istate, updates, deltas, p, best_alpha - alpha[p])
            alpha[p] = best_alpha
            if count[0] == defer:
                _flush(pending, terms, count, C, Sigma, S, Q, M, beta)
        else:
            sigma_p = Sigma[:M, p].copy()
            mu_p = mu[p]
            if math.isfinite(best_alpha):
                # Tipping & Faul (2003), appendix: kappa = 1 / (Sigma_pp + 1 / (alpha~ - alpha))
                kappa = 1.0 / (sigma_p[p] + 1.0 / (best_alpha - alpha[p]))
            else:
                kappa = 1.0 / sigma_p[p]
            for a in range(M):
                for b in range(M):
                    Sigma[a, b] -= kappa * sigma_p[a] * sigma_p[b]
                mu[a] -= kappa * mu_p * sigma_p[a]
            _sq_update(C, sigma_p, M, beta, S, Q, kappa, kappa * mu_p, _NO_COLUMN)
            istate[I_SINCE] += 1
            if math.isfinite(best_alpha):
                if istate[I_LSYNC]:
                    _defer_factor(L_keep, istate, updates, deltas, p, best_alpha - alpha[p])
                alpha[p] = best_alpha
            else:
                if p != M - 1:  # the last position moves into the hole: L is not triangular
                    istate[I_LSYNC] = 0
                    istate[I_FACTOR_PENDING] = 0
                else:  # the recorded updates go in while the factor has their M rows
                    _sync_factor(L_keep, istate, updates, deltas)
                _remove(p, idx, alpha, C, Phi, Sigma, mu, position, istate)
    # the loop can end with re-estimates and factor updates pending
    _flush(pending, terms, count, C, Sigma, S, Q, istate[I_M], fstate[F_BETA])
    _sync_factor(L_keep, istate, updates, deltas)
    return code


@_jit
def _flush(pending, terms, count, C, Sigma, S, Q, M, beta):
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
        _add_sq_terms(E[i], beta, S, Q, terms[0, i], terms[1, i])
    W = np.empty((P, M))
    for i in range(P):
        for a in range(M):
            W[i, a] = terms[0, i] * pending[i, a]
    # Sigma[:M, :M] -= V^T W, column-major: Sigma^T -= W^T V
    gemm(True, M, M, P, -1.0, W, max(M, 1), pending, cap, 1.0, Sigma, Sigma.shape[1])
    count[0] = 0


@_inline
def _fetch(j, B, gram, fetched, out):
    """``out = Phi~^T phi~_j = B B_j``. With a cache (``fetched.size``), row ``j`` of
    ``gram`` holds that product once ``fetched[j]``: computed on the first fetch, copied on
    a re-add or in a later ascent on the same ``B``, the same numbers either way."""
    if fetched.size == 0:
        product(B, B[j], out)
        return
    if not fetched[j]:
        product(B, B[j], gram[j])
        fetched[j] = True
    copy_row(out, gram[j])


@_inline
def _reestimate_pending(p, alpha_new, Sigma, mu, alpha, pending, terms, diag, count, M):
    """Re-estimate ``alpha_p`` with its rank-one term kept pending: the current column
    ``v = Sigma_:,p`` from ``Sigma`` and the pending terms (``O(M P)``), then ``mu`` and
    ``diag(Sigma)`` now (``O(M)``), ``Sigma, S, Q`` at the next :func:`_flush`."""
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
def _record(path, istate, fstate):
    """Append the log evidence to ``path`` (:func:`ascend` keeps room for one entry)."""
    path[istate[I_PATH]] = fstate[F_LOG_EV]
    istate[I_PATH] += 1


@_inline
def _sigma_inactive(j, C, Sigma, mu, M, beta, phi_t, unit):
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
def _exact_inactive(j, C, U, mu, M, beta, phi_t, unit):
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
def _defer_factor(U, istate, updates, deltas, p, delta):
    """Record the update of ``L = U^T`` for ``alpha_p`` changed by ``delta``
    (:func:`~._factor.update_factor`), applied by :func:`_sync_factor` when the factor is
    next read: most are not (a delete or the next factor comes first), and each costs
    ``O((M - p)^2)``."""
    k = istate[I_FACTOR_PENDING]
    if k == updates.size:
        _sync_factor(U, istate, updates, deltas)
        if not istate[I_LSYNC]:
            return
        k = 0
    updates[k] = p
    deltas[k] = delta
    istate[I_FACTOR_PENDING] = k + 1


@_jit
def _sync_factor(U, istate, updates, deltas):
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
def _add(j, alpha_j, S_j, Q_j, C, Sigma, mu, U, unit, idx, alpha, position, S, Q, istate, fstate):
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
    _sq_update(C, w, M, beta, S, Q, -sigma_jj, -mu_j, M)
    idx[M] = j
    alpha[M] = alpha_j
    position[j] = M
    istate[I_M] = M + 1
    istate[I_SINCE] += 1


@_inline
def _remove(p, idx, alpha, C, Phi, Sigma, mu, position, istate):
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
