"""One sequential ascent (Tipping & Faul 2003): the step loop over a :class:`Workspace`,
with an outer loop (the noise, or the Laplace mode) between converged ``alpha`` steps."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from bayes_rvm.evidence import column_gain, optimal_alpha
from bayes_rvm.solvers._crosses import Crosses
from bayes_rvm.solvers._workspace import Workspace

__all__ = ["Ascent", "Outcome", "OuterLoop", "Stopping"]


class Outcome(enum.Enum):
    """How an outer update or an ascent ended.

    An outer update (:meth:`OuterLoop.update`) returns ``MOVED`` (it changed the objective
    by more than ``tol``: update again once the ``alpha`` steps have converged), ``SETTLED``,
    ``ABOVE`` (the noise started above its optimum: restart lower) or ``STALLED`` (no
    progress over several updates: stop). :meth:`Ascent.ascend` returns ``CONVERGED``,
    ``MAX_ITER``, or the ``ABOVE`` / ``STALLED`` of an update.
    """

    MOVED = enum.auto()
    SETTLED = enum.auto()
    ABOVE = enum.auto()
    STALLED = enum.auto()
    CONVERGED = enum.auto()
    MAX_ITER = enum.auto()


class OuterLoop(Protocol):
    """What the ascent learns besides ``alpha``: the noise, or the Laplace mode."""

    def due(self, run: Ascent, gain: float) -> bool:
        """Whether the update must come before a step of ``gain`` nats."""
        ...

    def update(self, run: Ascent) -> Outcome:
        """The update (``MOVED``, ``SETTLED``, ``ABOVE`` or ``STALLED``)."""
        ...


@dataclass(frozen=True)
class Stopping:
    """When a fit stops: ``max_iter`` steps and outer updates, or no step (and no outer
    update) gaining more than ``tol`` nats; ``verbose`` prints progress."""

    max_iter: int
    tol: float
    verbose: bool = False


def exact_gain(alpha: float, s: float, q: float) -> tuple[float, float]:
    """Gain (nats) of the best action on one column from exact ``s, q``, and its ``alpha``
    (:func:`~bayes_rvm.evidence.column_gain` of one column)."""
    gain, alpha_new = column_gain(np.array([s]), np.array([q]), np.array([alpha]))
    return float(gain[0]), float(alpha_new[0])


def active_gains(ws: Workspace) -> np.ndarray:
    """Gain (nats) of the best action on every active column, from ``Sigma, mu``."""
    s, q = ws.own()
    return column_gain(s, q, ws.alpha[: ws.M])[0]


class Ascent:
    """One sequential ascent: the workspace, where its columns come from, the step loop.

    ``position[j]`` is the workspace position of column ``j`` (``-1`` when inactive) and
    ``alpha_full[j]`` its (normalised) precision, ``inf`` when inactive. ``log_ev`` follows
    the objective through the steps (``path``); ``steps`` counts the steps and the outer
    updates (noise or mode), which :meth:`ascend` takes through an ``outer`` object.
    """

    def __init__(
        self,
        ws: Workspace,
        cache: Crosses,
        stop: Stopping,
        *,
        polish: bool = False,
    ):
        n_basis = ws.phi_t.size
        self.ws = ws
        self.cache = cache
        self.tol = stop.tol
        self.max_iter = stop.max_iter
        self.verbose = stop.verbose
        self.position = np.full(n_basis, -1, dtype=np.intp)
        self.alpha_full = np.full(n_basis, np.inf)
        self.log_ev = -np.inf
        self.path: list[float] = []
        self.steps = 0
        self.polish = polish  # joint Newton steps on the tail of re-estimates

    def record(self, log_ev: float, *, first: bool = False) -> float:
        """The objective is now ``log_ev`` (after an outer update or new products): it
        joins the path (``first``: the path starts at it). Returns the change."""
        gain, self.log_ev = log_ev - self.log_ev, log_ev
        if first:
            self.path = []
        self.path.append(log_ev)
        return gain

    def add(self, j: int, alpha_j: float, ranked: np.ndarray) -> None:
        column, cross = self.cache.get(j, ranked)
        self.position[j] = self.ws.M
        self.alpha_full[j] = alpha_j
        self.ws.add(j, alpha_j, column, cross)

    def delete(self, p: int) -> None:
        ws = self.ws
        j, column, cross = ws.delete(p)
        self.cache.put(j, column, cross)
        self.position[j] = -1
        self.alpha_full[j] = np.inf
        if p < ws.M:
            self.position[ws.index[p]] = p

    def ranking(self) -> np.ndarray:
        """The ``2 prefetch`` inactive candidates closest to being worth adding, by
        ``Q^2 / S`` (a column is added when it exceeds 1), best first."""
        ws = self.ws
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where((self.position < 0) & (ws.S > 0), ws.Q**2 / ws.S, -np.inf)
        top = min(2 * ws.schedule.prefetch, ratio.size - 1)
        order = np.argpartition(-ratio, top)[:top]
        order = order[np.argsort(-ratio[order], kind="stable")]
        return order[np.isfinite(ratio[order])]

    def clear(self) -> None:
        """Delete every active column."""
        while self.ws.M:
            self.delete(self.ws.M - 1)

    def add_first(self, usable: np.ndarray) -> None:
        """Add the usable column with the largest gain to the empty model (Bishop 2006,
        Sec. 7.2.2 step 2); ``S, Q`` must be current."""
        ws = self.ws
        gain = ws.add_gain()
        first = int(np.argmax(np.where(usable, gain, -np.inf)))
        # Faul & Tipping (2002) eq. 17 (s = S, q = Q with no active column); with no
        # column supported, any finite start (deleted next)
        first_alpha = float(optimal_alpha(ws.S[first], ws.Q[first]))
        self.add(first, first_alpha if np.isfinite(first_alpha) else ws.S[first], self.ranking())

    def newton(self) -> float:
        """Joint Newton steps on the active ``alpha`` whose single-column optimum is
        finite; returns the gain."""
        ws = self.ws
        s, q = ws.own()
        free = np.flatnonzero((q**2 > s) & (s > 0))
        gain = ws.newton(free, self.tol)
        self.alpha_full[ws.index[: ws.M]] = ws.alpha[: ws.M]
        return gain

    def choose(self, unresolved: np.ndarray) -> tuple[float, int, int]:
        """The step with the largest gain: ``(gain, column, position)``, position ``-1`` for
        an add. Active columns are judged from ``Sigma, mu`` (current), inactive ones from
        ``S, Q`` as of the last flush; ties go to the lowest column index."""
        ws = self.ws
        add_gain = np.where(unresolved, 0.0, ws.add_gain())
        j = int(np.argmax(add_gain))
        best, position = float(add_gain[j]), -1
        if ws.M:
            active = ws.index[: ws.M]
            gain = np.where(unresolved[active], 0.0, active_gains(ws))
            top = float(gain.max())
            if top >= best:
                tied = np.flatnonzero(gain == top)
                p = int(tied[np.argmin(active[tied])])
                if top > best or active[p] < j:
                    best, j, position = top, int(active[p]), p
        return best, j, position

    def ascend(self, outer: OuterLoop | None, stale: bool) -> Outcome:
        """Steps until no step gains more than ``tol`` with ``outer`` up to date.

        ``outer`` (``None``: nothing besides ``alpha`` is learned) is updated when the
        ``alpha`` steps have converged and ``stale`` says that ``alpha`` moved since its
        last update, and before a step it says is :meth:`~OuterLoop.due`. Returns
        ``CONVERGED``, ``MAX_ITER``, or the ``ABOVE`` / ``STALLED`` of an update.

        The candidates' gains are brought up to date (:meth:`Workspace.flush`) before an
        add is taken on them; while an active column offers more than every inactive one
        did at the last flush, the steps stay on the active set.
        """
        ws, tol = self.ws, self.tol
        n_basis = self.position.size
        fresh = True  # S, Q exact: no rank-one update since the last refresh
        unresolved = np.zeros(n_basis, dtype=bool)  # gains below rounding since the last step
        streak = 0  # re-estimates in a row
        while True:
            gain, j, p = self.choose(unresolved)
            if gain <= tol:
                if not fresh:  # confirm with exact S, Q before acting on "no step left"
                    ws.refresh(ws.beta)
                    fresh = True
                    continue
                if outer is None or not stale:
                    return Outcome.CONVERGED
                if self.steps == self.max_iter:
                    return Outcome.MAX_ITER
                self.steps += 1  # an outer update counts as an iteration
                # the alpha steps have converged: now (only now) update the rest
                update = outer.update(self)
                if update in (Outcome.ABOVE, Outcome.STALLED):
                    return update
                unresolved[:] = False
                stale = update is Outcome.MOVED
                continue
            if p < 0 and ws.pending:  # the candidates' gains as of now, then look again
                ws.flush()
                continue
            s, q = ws.exact(j, p)
            if ws.in_span(j, s):
                # inactive: in the span of the active columns to rounding; active: s > 0
                # in exact arithmetic, so this is rounding at this conditioning
                unresolved[j] = True
                continue
            best, alpha_j = exact_gain(self.alpha_full[j], s, q)
            if not best > tol:
                # the running S_j, Q_j had drifted: correct them and look elsewhere (the
                # round trip through S, Q can lose digits, so do not look here again
                # before the next step)
                if p < 0:
                    ws.set_exact(j, s, q)
                unresolved[j] = True
                continue
            if best <= ws.resolution() * (1.0 + best):
                unresolved[j] = True  # rounding at this conditioning: not a step, for now
                continue
            if self.steps == self.max_iter:
                return Outcome.MAX_ITER
            self.steps += 1
            if stale and outer is not None and outer.due(self, best):  # update, look again
                update = outer.update(self)
                if update in (Outcome.ABOVE, Outcome.STALLED):
                    return update
                stale = update is Outcome.MOVED
                fresh = True
                unresolved[:] = False
                continue
            fresh = False
            unresolved[:] = False
            stale = outer is not None
            if p < 0:
                self.add(j, alpha_j, self.ranking())
                streak = 0
            elif np.isfinite(alpha_j) and self.polish and streak >= ws.schedule.large_newton_after:
                best = self.newton()
                fresh, streak = True, 0
            elif np.isfinite(alpha_j):
                ws.reestimate(p, alpha_j)
                self.alpha_full[j] = alpha_j
                streak += 1
            else:
                self.delete(p)
                streak = 0
            self.log_ev += best
            self.path.append(self.log_ev)
            if self.verbose and self.steps % 100 == 0:
                print(
                    f"[sequential] step {self.steps}: M={ws.M} log evidence="
                    f"{self.log_ev:.6f} best gain={best:.2e}"
                )
