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

The exact state (a new factor, ``S, Q`` of every column, the evidence, the noise update)
is :mod:`._exact`; the rank-one steps and their bookkeeping are :mod:`._updates`; the
linear algebra is :mod:`._factor`.
"""

from __future__ import annotations

import math
from typing import cast

import numba
import numpy as np

from bayes_rvm.solvers._exact import gains, noise_update, refactor, refresh
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
    LIMIT,
    MAX_ITER,
    NEWTON,
    NOT_PD,
)
from bayes_rvm.solvers._updates import (
    add_column,
    defer_factor,
    design_row,
    exact_inactive,
    fetch,
    flush_pending,
    record,
    reestimate_pending,
    remove_column,
    sigma_inactive,
    sq_update,
    sync_factor,
)

__all__ = ["ABOVE", "CONVERGED", "FULL", "LIMIT", "MAX_ITER", "NEWTON", "ascend", "refresh"]

_jit = numba.njit(cache=True, nogil=True)

# "No column" as an int64 rather than the literal -1, a type of its own to numba: a function
# that takes a column index would be compiled twice, for Literal[int](-1) and for int64
_NO_COLUMN = cast(int, np.int64(-1))


@_jit
def ascend(
    B, rows, cols, t, n_rows, phi_t, unit, idx, alpha, C, Phi, Sigma, mu, L_keep, position, S,
    Q, istate, fstate, unresolved, path, learn_noise, has_hyper, c, d, max_iter, settings,
    gram, fetched,
):  # fmt: skip
    """Steps until converged; returns a code (:data:`CONVERGED`, :data:`MAX_ITER`, ...).

    ``n_rows`` is ``N`` of eq. 36 and 46: ``t.size``, or the number of rows that a reduced
    design ``B = [R; 0]^T`` with target ``t = [z; r]`` stands for. ``rows, cols`` are empty,
    or ``B`` is ``Phi^T`` of a row-weighted design ``Phi~ = diag(rows) Phi diag(cols)``
    (:func:`~._updates.design_row`).

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
    re-estimates are kept pending (:func:`~._updates.flush_pending`); after
    ``newton_after`` re-estimates in a row on at least ``newton_min`` active columns the
    loop returns :data:`NEWTON` (the caller takes joint Newton steps on the active
    ``alpha`` and calls again). ``settings`` holds ``tol, floor, refactor_min, span,
    resolution, relative_inner, sub_steps, restart_below, noise_growth, noise_rtol,
    polish, cancellation, newton_after, newton_min, defer, defer_min``
    (:class:`~._schedule.Schedule`), ``ceiling`` (a learned noise variance stays within
    ``[floor, ceiling]``) and ``limit``: the loop returns :data:`LIMIT` before a step that
    would take the gain since its start beyond it (the first step is always taken).
    ``gram, fetched`` keep the products of the fetched columns
    (:func:`~._updates.fetch`). The state is complete (nothing pending) when it returns.
    """
    cap = alpha.size
    pending = np.zeros((max(int(settings[14]), 1), cap))  # the Sigma columns of the pending steps
    terms = np.zeros((2, pending.shape[0]))  # their kappa and kappa mu_p
    diag = np.zeros(cap)  # diag(Sigma) with the pending terms applied
    count = np.zeros(1, dtype=np.int64)
    # the factor updates recorded since the last factor: at most max(refactor_min, M),
    # after which the loop takes a new factor (defer_factor applies a full record rather
    # than write past it: the loop does not check bounds)
    updates = np.zeros(max(cap, int(settings[2])), dtype=np.int64)
    deltas = np.zeros(updates.size)
    tol, floor, refactor_min, span, resolution = settings[:5]
    relative_inner, sub_steps, restart_below, noise_growth, noise_rtol, polish = settings[5:11]
    cancellation, newton_after, newton_min, defer, defer_min, ceiling, limit = settings[11:18]
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
            flush_pending(pending, terms, count, C, Sigma, S, Q, M, beta)
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
            flush_pending(pending, terms, count, C, Sigma, S, Q, M, beta)
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
            beta_new = noise_update(alpha, Phi, t, n_rows, Sigma, mu, M, c, d, floor, ceiling)
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
            record(path, istate, fstate)
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
            s_j, q_j = sigma_inactive(j, C, Sigma, mu, M, beta, phi_t, unit)
            if s_j < cancellation * beta * unit[j]:
                # most digits of beta - beta^2 c^T Sigma c cancel: from a current factor
                sync_factor(L_keep, istate, updates, deltas)
                if not istate[I_LSYNC] and math.isnan(
                    refactor(idx, alpha, C, phi_t, Sigma, mu, L_keep, istate, fstate)
                ):
                    code = NOT_PD
                    break
                s_j, q_j = exact_inactive(j, C, L_keep, mu, M, beta, phi_t, unit)
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
        if istate[I_STEPS] > 0 and fstate[F_LOG_EV] + best - path[0] > limit:
            code = LIMIT
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
        record(path, istate, fstate)
        istate[I_RUN] = istate[I_RUN] + 1 if p >= 0 and math.isfinite(best_alpha) else 0
        if p < 0:
            # add_column extends the factor: the one the updates give when each is applied as
            # it comes (extended first and updated after, it is the same up to rounding)
            sync_factor(L_keep, istate, updates, deltas)
            design_row(j, B, rows, cols, Phi[M])
            fetch(j, B, rows, cols, Phi[M], gram, fetched, C[M])
            add_column(j, best_alpha, S[j], Q[j], C, Sigma, mu, L_keep, unit, idx, alpha,
                       position, S, Q, istate, fstate)  # fmt: skip
        elif math.isfinite(best_alpha) and defer > 0 and defer_min <= M:
            reestimate_pending(p, best_alpha, Sigma, mu, alpha, pending, terms, diag, count, M)
            istate[I_SINCE] += 1
            if istate[I_LSYNC]:
                defer_factor(L_keep, istate, updates, deltas, p, best_alpha - alpha[p])
            alpha[p] = best_alpha
            if count[0] == defer:
                flush_pending(pending, terms, count, C, Sigma, S, Q, M, beta)
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
            sq_update(C, sigma_p, M, beta, S, Q, kappa, kappa * mu_p, _NO_COLUMN)
            istate[I_SINCE] += 1
            if math.isfinite(best_alpha):
                if istate[I_LSYNC]:
                    defer_factor(L_keep, istate, updates, deltas, p, best_alpha - alpha[p])
                alpha[p] = best_alpha
            else:
                if p != M - 1:  # the last position moves into the hole: L is not triangular
                    istate[I_LSYNC] = 0
                    istate[I_FACTOR_PENDING] = 0
                else:  # the recorded updates go in while the factor has their M rows
                    sync_factor(L_keep, istate, updates, deltas)
                remove_column(p, idx, alpha, C, Phi, Sigma, mu, position, istate)
    # the loop can end with re-estimates and factor updates pending
    flush_pending(pending, terms, count, C, Sigma, S, Q, istate[I_M], fstate[F_BETA])
    sync_factor(L_keep, istate, updates, deltas)
    return code
