"""Binary classification on the compiled step loop: one weighted Gaussian problem per
Laplace mode.

At the mode ``w*`` of ``p(w | t, alpha)`` the Laplace evidence is that of a Gaussian model
with noise precisions ``B = diag(y (1 - y))`` (times the rows' weights) and the working
target ``t^ = Phi w* + B^-1 (t - y)`` (Tipping & Faul 2003, Sec. 4; Tipping 2001, eq.
25-26). With the rows scaled by ``B^1/2`` that is a Gaussian problem at unit noise
precision: design ``B^1/2 Phi`` and target ``B^1/2 t^ = B^-1/2 (B F + t - y)``
(``F = Phi w*``), whose products ``Phi^T B Phi`` and ``Phi^T (B F + t - y)`` never form
``B^-1``. The compiled loop (:class:`~bayes_rvm.solvers._compiled.Ascent`, noise fixed)
solves it to the certificate; the mode is then found again (IRLS over the active set,
warm-started) and the next problem starts from the model the last one reached. The fit
has converged when the problem weighed at the final mode gains at most ``tol`` in all
(its steps together), so that no single add, re-estimate or delete gains more than
``tol`` there. That is the fixed point of MacKay's
and EM's classification updates, which likewise hold ``B`` constant in ``alpha``; the
Laplace evidence need not rise from one mode to the next on the way (Bishop 2006, eq.
7.114 moves with ``B``).

Holding ``B`` constant can leave no fixed point: a column that the problem at one mode
adds and the problem at the next deletes, because the mode moves with it, or a longer
cycle of such steps, or ``alpha`` that one problem moves and the next moves back. When a
mode returns to the model of one of the last :data:`MAX_PERIOD` modes (the same active
set, the Laplace evidence within ``tol``), or the active sets of the last ``2 p`` modes
repeat with a period ``p`` of 2 to :data:`MAX_PERIOD`, the fit ends at the model of the
cycle with the highest Laplace evidence, the objective itself deciding the steps that
the weighted problems disagree on; the ``S, Q`` it reports (re-add gains) are those of
the weighted problem at that mode.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bayes_rvm.laplace import (
    Bernoulli,
    LaplaceMode,
    hessian_factor,
    log_evidence_laplace,
    posterior_mode,
)
from bayes_rvm.solvers._assemble import End, assemble
from bayes_rvm.solvers._base import Prior, TargetMoments, Type2Result
from bayes_rvm.solvers._compiled import Ascent, Status
from bayes_rvm.solvers._schedule import Schedule

__all__ = ["fit_bernoulli"]

#: The longest cycle of active sets the mode loop recognises (module notes).
MAX_PERIOD = 8


def _weighted_problem(
    Phi: np.ndarray, link: Bernoulli, F: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Gaussian problem at latent values ``F``: ``B = Phi~^T`` of the row-scaled design
    (normalised columns), its target, and the column norms."""
    curvature, residual = link.irls(F)
    root = np.sqrt(curvature[:, 0, 0])  # Tipping (2001) eq. 25: B = diag(w y (1 - y))
    # Tipping & Faul (2003) Sec. 4: B t^ = B F + (t - y), scaled by B^-1/2
    target = np.divide(root**2 * F + residual, root, out=np.zeros_like(F), where=root > 0)
    design = root[:, None] * Phi
    sq_norms = np.einsum("ij,ij->j", design, design)
    scales = np.where(sq_norms > 0, np.sqrt(sq_norms), 1.0)
    return np.ascontiguousarray((design / scales).T), target, scales


def fit_bernoulli(
    Phi: np.ndarray,
    link: Bernoulli,
    *,
    prior: Prior,
    tol: float,
    max_iter: int,
    schedule: Schedule,
    verbose: bool = False,
) -> Type2Result | None:
    """The sequential fit of a Bernoulli likelihood on the basis ``Phi`` held in memory
    (module notes); ``None`` when a posterior precision lost positive definiteness.
    ``max_iter`` bounds the steps of all the weighted problems together."""
    N = Phi.shape[0]
    options = {
        "prior": prior, "tol": tol, "schedule": schedule,
        "targets": TargetMoments.of(np.ones(N)),  # unit noise: the floor is never reached
    }  # fmt: skip
    state = _State.at(Phi, link, np.zeros(0, dtype=np.intp), np.zeros(0), None)  # y = 1/2
    states = [state]  # the last 2 MAX_PERIOD
    path: list[float] = []  # the Laplace evidence at each mode
    steps = 0
    while True:
        ascent, scales = _weighted_ascent(Phi, link, state, options, max_iter - steps)
        status = ascent.run()
        if status == Status.NOT_PD:
            return None
        steps += ascent.steps
        # the ascent takes the best step first and every step gains: when all of them
        # together gain at most tol, no single step from the state gained more
        if status == Status.CONVERGED and ascent.log_evidence - ascent.path[0] <= tol:
            converged, S, Q = True, *_gain_inputs(Phi, link, state, options)
            break
        if status != Status.CONVERGED:  # max_iter: the last state at its mode
            converged, S, Q = False, *_gain_inputs(Phi, link, state, options)
            break
        index, alpha_unit = ascent.model()
        order = np.argsort(index, kind="stable")
        active = index[order]
        alpha = alpha_unit[order] * scales[active] ** 2  # phi~_j = phi_j / scale_j
        same = np.array_equal(active, state.active)
        state = _State.at(Phi, link, active, alpha, state.mode.mu if same else None)
        states = [*states[1 - 2 * MAX_PERIOD :], state]
        path.append(state.log_evidence)
        if verbose:
            print(
                f"[sequential] mode update after {steps} steps: M={active.size}, Laplace "
                f"log evidence={state.log_evidence:.6f}"
            )
        cycle = _cycle(states, tol)
        if cycle:  # the best of the cycle, by the Laplace evidence
            state = max(cycle, key=lambda s: s.log_evidence)
            converged, S, Q = True, *_gain_inputs(Phi, link, state, options)
            break
    end = End(S, Q, path, steps, converged)
    return assemble(
        state.chol, state.mode.mu, state.F, link.t, state.active, state.alpha, 1.0, prior,
        link, True, end, N,
    )  # fmt: skip


@dataclasses.dataclass(frozen=True)
class _State:
    """A model (active columns, their ``alpha``) at its Laplace mode: the mode, the factor
    of the Hessian there, the latent values ``F = Phi_a w*`` and the Laplace evidence."""

    active: np.ndarray
    alpha: np.ndarray
    mode: LaplaceMode
    chol: np.ndarray
    F: np.ndarray
    log_evidence: float

    @classmethod
    def at(cls, Phi, link, active, alpha, w0) -> _State:
        """The mode of ``p(w | t, alpha)`` on the columns ``active`` (IRLS from ``w0``)."""
        Phi_a = Phi[:, active]
        mode = posterior_mode(Phi_a, link, alpha, w0)
        F = Phi_a @ mode.mu
        # Tipping (2001) eq. 25: the Hessian Phi^T B Phi + A at the mode
        chol = hessian_factor(Phi_a, link.irls(F)[0], alpha)
        mode = dataclasses.replace(mode, precision_chol=chol)
        # Bishop (2006) eq. 7.114
        return cls(active, alpha, mode, chol, F, log_evidence_laplace(mode, alpha))


def _cycle(states: list[_State], tol: float) -> list[_State]:
    """The states of a cycle of the mode loop, or none: the last ``p + 1`` when the last
    state repeats the one ``p`` modes before it (1 to :data:`MAX_PERIOD`: the same active
    set, and Laplace evidence within ``tol``), or the last ``p`` when the active sets of
    the last ``2 p`` states repeat with a period ``p`` of 2 to :data:`MAX_PERIOD`
    (columns added and deleted in turn while the ``alpha`` drift). ``B`` moves with
    ``alpha``, which each weighted problem holds constant."""
    sets = [frozenset(s.active.tolist()) for s in states]
    last = states[-1]
    for p in range(1, min(MAX_PERIOD, len(states) - 1) + 1):
        earlier = states[-1 - p]
        if sets[-1 - p] == sets[-1] and abs(earlier.log_evidence - last.log_evidence) <= tol:
            return states[-1 - p :]
    for p in range(2, MAX_PERIOD + 1):
        if len(sets) >= 2 * p and sets[-2 * p : -p] == sets[-p:] and len(set(sets[-p:])) > 1:
            return states[-p:]
    return []


def _weighted_ascent(
    Phi, link, state: _State, options: dict, budget: int
) -> tuple[Ascent, np.ndarray]:
    """The compiled ascent (noise fixed at 1) on the weighted problem at ``state``'s mode,
    from ``state``'s model, and the column norms of that problem."""
    B, target, scales = _weighted_problem(Phi, link, state.F)
    if not state.active.size:
        ascent = Ascent(B, target, 1.0, learn_noise=False, max_iter=budget, **options)
        return ascent, scales
    alpha_unit = state.alpha / scales[state.active] ** 2
    ascent = Ascent.resume(
        B, target, state.active, alpha_unit, 1.0, learn_noise=False, max_iter=budget,
        **options,
    )  # fmt: skip
    return ascent, scales


def _gain_inputs(Phi, link, state: _State, options: dict) -> tuple[np.ndarray, np.ndarray]:
    """``S, Q`` of every column on the weighted problem at ``state``'s mode, exact."""
    return _weighted_ascent(Phi, link, state, options, 0)[0].readd_gain_inputs()
