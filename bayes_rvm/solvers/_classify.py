"""Binary classification on the compiled step loop: weighted Gaussian problems at the
Laplace modes, in a trust region.

At the mode ``w*`` of ``p(w | t, alpha)`` the Laplace evidence is that of a Gaussian model
with noise precisions ``B = diag(y (1 - y))`` (times the rows' weights) and the working
target ``t^ = Phi w* + B^-1 (t - y)`` (Tipping & Faul 2003, Sec. 4; Tipping 2001, eq.
25-26). With the rows scaled by ``B^1/2`` that is a Gaussian problem at unit noise
precision: design ``B^1/2 Phi`` and target ``B^1/2 t^ = B^-1/2 (B F + t - y)``
(``F = Phi w*``), whose products ``Phi^T B Phi`` and ``Phi^T (B F + t - y)`` never form
``B^-1``. The scaled design is not formed either: the compiled loop takes ``Phi^T``, held
once for the whole fit, with the row scales ``B^1/2`` and the column scales of each mode
(:class:`~bayes_rvm.solvers._compiled.Ascent`, ``rows`` and ``cols``), so that a mode
costs two passes over ``Phi^T`` (the column norms and ``Phi^T`` times the target) and the
products of the active columns with every column. The compiled loop (noise fixed) takes
steps on it from the current model, and the mode is found again (IRLS over the active
set, from the last mode's weights) before a step would take the gain the steps claim
beyond a radius.

The weighted problem holds ``B`` constant while its steps move ``alpha``, and ``B`` moves
with ``alpha`` (Bishop 2006, eq. 7.114), so the claim is trusted as far as the Laplace
evidence bears it out: the radius starts at :attr:`Schedule.mode_gain` nats, doubles (up
to ``mode_gain_max``) when the evidence gained more than 3/4 of the claim and halves
(down to ``mode_gain_min``) when it gained less than 1/4. The fit has converged when the
weighted problem at the current mode gains at most ``tol`` in all (it takes the best step
first and every step gains, so no single add, re-estimate or delete gains more): the
fixed point of MacKay's and EM's classification updates. Holding ``B`` constant can leave
no fixed point (a column one mode adds and the next deletes, ``alpha`` moved and moved
back); after :attr:`Schedule.mode_stall` modes in a row that have not raised the best
Laplace evidence by ``tol`` the fit returns to the best one, and the Laplace evidence
itself judges the steps its weighted problem proposes: each step that gains more than
``tol`` there, best first, is taken alone and the mode found again, and the first that
raises the Laplace evidence by more than ``tol`` is kept, until none does. The fit then
ends converged: no single add, re-estimate or delete the weighted problem at the returned
mode proposes raises the Laplace evidence by more than ``tol``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bayes_rvm.evidence import column_gain, own_sparsity_quality
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


def _weighted_problem(
    PhiT: np.ndarray, link: Bernoulli, F: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The Gaussian problem at latent values ``F``: the row scales ``B^1/2``, the target,
    the norms of the row-scaled columns (1 for a column the weights zero) and the column
    scales of the design (their inverses; 0 for a column the weights zero)."""
    curvature, residual = link.irls(F)
    weight = curvature[:, 0, 0]  # Tipping (2001) eq. 25: B = diag(w y (1 - y))
    root = np.sqrt(weight)
    # Tipping & Faul (2003) Sec. 4: B t^ = B F + (t - y), scaled by B^-1/2
    target = np.divide(weight * F + residual, root, out=np.zeros_like(F), where=root > 0)
    sq_norms = np.einsum("ij,ij,j->i", PhiT, PhiT, weight)  # diag(Phi^T B Phi)
    scales = np.where(sq_norms > 0, np.sqrt(sq_norms), 1.0)
    return root, target, scales, np.where(sq_norms > 0, 1.0 / scales, 0.0)


def fit_bernoulli(
    PhiT: np.ndarray,
    link: Bernoulli,
    *,
    prior: Prior,
    tol: float,
    max_iter: int,
    schedule: Schedule,
    verbose: bool = False,
) -> Type2Result | None:
    """The sequential fit of a Bernoulli likelihood on the basis ``Phi`` held in memory as
    ``PhiT`` (``Phi^T``, C-ordered: the columns as rows; module notes); ``None`` when a
    posterior precision lost positive definiteness. ``max_iter`` bounds the steps of all
    the weighted problems together."""
    N = PhiT.shape[1]
    options = {
        # every weighted problem is weighed again after its steps: its re-estimates need
        # more than tol, as its adds and deletes do (the certificate's own threshold)
        "prior": prior, "tol": tol, "schedule": dataclasses.replace(schedule, polish=1.0),
        "targets": TargetMoments.of(np.ones(N)),  # unit noise: the floor is never reached
    }  # fmt: skip
    state = _State.at(PhiT, link, np.zeros(0, dtype=np.intp), np.zeros(0), None)  # y = 1/2
    best, path = state, [state.log_evidence]  # the Laplace evidence at each mode
    steps, stalled, radius = 0, 0, schedule.mode_gain
    settled = None  # the exact S, Q of a model where _settle ended
    while True:
        ascent, scales = _weighted_ascent(PhiT, link, state, options, max_iter - steps, radius)
        status = ascent.run()
        if status == Status.NOT_PD:
            return None
        steps += ascent.steps
        claimed = ascent.log_evidence - ascent.path[0]  # the weighted problem's gain
        if status == Status.CONVERGED and claimed <= tol:  # certified at this mode
            converged = True
            break
        if status == Status.MAX_ITER:
            converged = False
            break
        index, alpha_unit = ascent.model()
        order = np.argsort(index, kind="stable")
        active = index[order]
        alpha = alpha_unit[order] * scales[active] ** 2  # phi~_j = phi_j / scale_j
        previous = state.log_evidence
        state = _State.at(PhiT, link, active, alpha, state.weights_on(active))
        path.append(state.log_evidence)
        # the trust region: the evidence gained against the gain the steps claimed
        radius = schedule.mode_radius(radius, (state.log_evidence - previous) / claimed)
        if verbose:
            print(
                f"[sequential] mode after {steps} steps: M={active.size}, Laplace log "
                f"evidence {state.log_evidence:.6f} (claimed {claimed:.3g}), radius {radius:.3g}"
            )
        if state.log_evidence > best.log_evidence + tol:
            best, stalled = state, 0
        else:
            stalled += 1
        if stalled == schedule.mode_stall:  # no fixed point: from the best model seen
            state, used, settled = _settle(PhiT, link, best, options, max_iter - steps)
            steps += used
            converged = settled is not None
            break
    S, Q = _gain_inputs(PhiT, link, state, options) if settled is None else settled
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
    def at(cls, PhiT, link, active, alpha, w0) -> _State:
        """The mode of ``p(w | t, alpha)`` on the columns ``active`` (IRLS from ``w0``)."""
        Phi_a = np.ascontiguousarray(PhiT[active].T)
        mode = posterior_mode(Phi_a, link, alpha, w0)
        F = Phi_a @ mode.mu
        # Tipping (2001) eq. 25: the Hessian Phi^T B Phi + A at the mode
        chol = hessian_factor(Phi_a, link.irls(F)[0], alpha)
        mode = dataclasses.replace(mode, precision_chol=chol)
        # Bishop (2006) eq. 7.114
        return cls(active, alpha, mode, chol, F, log_evidence_laplace(mode, alpha))

    def weights_on(self, active: np.ndarray) -> np.ndarray:
        """The mode's weights on the columns ``active`` (0 on a column it does not have):
        where IRLS starts for a model one or more steps away."""
        w0 = np.zeros(active.size)
        _, here, there = np.intersect1d(active, self.active, return_indices=True)
        w0[here] = self.mode.mu[there]
        return w0


def _weighted_ascent(
    PhiT, link, state: _State, options: dict, budget: int, limit: float = np.inf
) -> tuple[Ascent, np.ndarray]:
    """The compiled ascent (noise fixed at 1) on the weighted problem at ``state``'s mode,
    from ``state``'s model, and the column norms of that problem."""
    root, target, scales, cols = _weighted_problem(PhiT, link, state.F)
    options = {**options, "learn_noise": False, "max_iter": budget, "limit": limit}
    if not state.active.size:
        return Ascent(PhiT, target, 1.0, rows=root, cols=cols, **options), scales
    alpha_unit = state.alpha / scales[state.active] ** 2
    ascent = Ascent.resume(
        PhiT, target, state.active, alpha_unit, 1.0, rows=root, cols=cols, **options
    )
    return ascent, scales


def _settle(
    PhiT, link, state: _State, options: dict, budget: int
) -> tuple[_State, int, tuple[np.ndarray, np.ndarray] | None]:
    """From ``state``, the steps its weighted problem proposes (gain above ``tol``), best
    first, each taken alone and judged by the Laplace evidence at its mode: one that
    raises it by more than ``tol`` is kept, and the next proposal is judged from there.
    Once a list is through, the proposals are made again at the model reached. Returns
    the model where a list made at it has no step that does (with that list's exact ``S,
    Q``), or where ``budget`` steps ran out (with ``None``), and the steps taken.

    A list is made at one model, and each column appears in it once, so a proposal judged
    after others were kept is still a step on that column from the current model (its
    ``alpha`` from the list): only the Laplace evidence decides, and only a list made at
    the returned model ends the search."""
    tol = options["tol"]
    steps = 0
    while True:
        ascent, scales = _weighted_ascent(PhiT, link, state, options, 0)
        S, Q = ascent.readd_gain_inputs()
        alpha = np.full(S.size, np.inf)
        alpha[state.active] = state.alpha / scales[state.active] ** 2
        gain, proposed = column_gain(*own_sparsity_quality(S, Q, alpha), alpha)
        kept = False
        for j in np.argsort(-gain, kind="stable"):
            if not gain[j] > tol:
                break
            if steps >= budget:
                return state, steps, None
            steps += 1
            model = dict(zip(state.active.tolist(), state.alpha.tolist(), strict=True))
            if np.isinf(proposed[j]):
                del model[int(j)]
            else:
                model[int(j)] = proposed[j] * scales[j] ** 2
            active = np.array(sorted(model), dtype=np.intp)
            alpha = np.array([model[k] for k in active])
            candidate = _State.at(PhiT, link, active, alpha, state.weights_on(active))
            if candidate.log_evidence > state.log_evidence + tol:
                state, kept = candidate, True
        if not kept:
            return state, steps, (S, Q)


def _gain_inputs(PhiT, link, state: _State, options: dict) -> tuple[np.ndarray, np.ndarray]:
    """``S, Q`` of every column on the weighted problem at ``state``'s mode, exact."""
    return _weighted_ascent(PhiT, link, state, options, 0)[0].readd_gain_inputs()
