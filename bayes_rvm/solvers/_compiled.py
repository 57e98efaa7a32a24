"""The sequential solver's compiled path: Gaussian likelihood on a basis held in memory
(classification's weighted problems too, :mod:`._classify`).

The basis ``Phi~`` (normalised columns) is held as ``B = Phi~^T``, so that the products
of a column about to be added are one matrix-vector product, and the whole ascent runs
in the compiled step loop of :mod:`bayes_rvm.solvers._steps`. The schedule
(:class:`Schedule`) is a noise continuation from below the noise optimum: each ``alpha``
sub-problem is solved only to a tolerance proportional to the gain of the last noise
update, and the fit ends with a certificate on exact ``S, Q`` (no single add, re-estimate
or delete gains more than ``tol``, and the noise update gains at most ``tol``).
The evidence is multimodal in the noise, and which optimum a continuation reaches depends
on where it starts: a fit runs the ascents of the first ``n`` starts of the schedule
(:meth:`Schedule.first_starts`, ``n`` the public ``n_starts``) and returns the one with
the highest log
evidence; the ascents share the products of the columns they add (:class:`GramRows`).
None starts below a lower bound of every noise optimum when one is known (the
least-squares residual of a reduced design), and an ascent whose start that bound makes
an earlier one's is not run.
"""

from __future__ import annotations

import dataclasses
import enum
import math

import numpy as np

from bayes_rvm.evidence import noise_variance_cd
from bayes_rvm.solvers import _slots
from bayes_rvm.solvers._base import Prior, TargetMoments, initial_noise_var, noise_var_floor
from bayes_rvm.solvers._newton import joint_newton
from bayes_rvm.solvers._schedule import Schedule, Start

__all__ = ["Ascent", "GramRows", "Status", "ascend_dense"]


def _kernels():
    """The compiled step loop (numba is imported, and the loop compiled or loaded from its
    cache, on the first compiled fit only)."""
    from bayes_rvm.solvers import _steps

    return _steps


class Status(enum.IntEnum):
    """How one call of the compiled step loop ended."""

    CONVERGED = _slots.CONVERGED
    MAX_ITER = _slots.MAX_ITER
    ABOVE = _slots.ABOVE  # the first noise update fell far below the start: restart lower
    FULL = _slots.FULL  # the arrays are full: grow them and call again
    NOT_PD = _slots.NOT_PD  # the posterior precision lost positive definiteness
    NEWTON = _slots.NEWTON  # joint Newton steps on the active alpha are due
    LIMIT = _slots.LIMIT  # the next step would take the gain beyond ``limit``


class GramRows:
    """The products ``Phi~^T phi~_j = B B_j`` of the columns the ascents on one ``B`` have
    added, each computed on its first add and copied on the next (a re-add after a delete,
    or an add in a later ascent): the same numbers as a new product, without its pass over
    ``B``. Nothing is kept (``rows`` and ``fetched`` empty) when ``n_basis^2`` doubles take
    more than ``budget`` bytes. (The large path keeps such products in
    :class:`~._crosses.CrossCache`, fetched from a :class:`~bayes_rvm.basis.Basis` in
    batches; this is the compiled loop's, arrays it reads and fills itself.)"""

    def __init__(self, n_basis: int, budget: int):
        kept = n_basis if 8 * n_basis * n_basis <= budget else 0
        self.rows = np.empty((kept, n_basis))
        self.fetched = np.zeros(kept, dtype=np.bool_)


class _Slot:
    """A read-only attribute backed by one slot of the loop's state arrays."""

    def __init__(self, array: str, index: int):
        self.array, self.index = array, index

    def __get__(self, ascent, owner=None):
        if ascent is None:
            return self
        return getattr(ascent, self.array)[self.index].item()


class Ascent:
    """One sequential ascent: the arrays of the compiled loop, changed only by its methods.

    Parameters
    ----------
    B : ndarray of shape (n_basis, N)
        ``Phi~^T``, the normalised basis transposed; with ``rows`` and ``cols``, ``Phi^T``
        of the design ``Phi~ = diag(rows) Phi diag(cols)``, which is never formed (the
        products of a column about to be added are then one matrix-vector product with
        ``Phi^T`` too: classification's weighted problems, one per Laplace mode, on one
        ``Phi^T``).
    t : ndarray of shape (N,)
    beta : float
        Starting noise precision.
    learn_noise : bool
    prior : Prior
        ``c, d`` of the noise hyperprior enter eq. 46 and the objective.
    tol : float
    max_iter : int
    schedule : Schedule
    full_t : ndarray, optional
        When ``B`` is a reduced design ``[R; 0]^T`` (target ``t = [z; r]``), the target of
        the rows it stands for: their number is ``N`` (eq. 36 and 46, ``sub_steps``) and
        the noise floor is taken from it.
    targets : TargetMoments
        The moments of the rows the data stand for, which set the noise floor.
    gram : GramRows, optional
        The products of the columns added so far on ``B``, shared with other ascents on
        it; by default its own, kept within :attr:`Schedule.gram_bytes`.
    ceiling : float, optional
        The largest noise variance a learned noise takes (a continuation towards a fixed
        noise, :func:`ascend_dense`).
    limit : float, optional
        :meth:`run` answers ``LIMIT`` before a step that would take the log evidence more
        than this above the start (a trust region; the first step is always taken).
    rows, cols : ndarray of shape (N,) and (n_basis,), optional
        The row and column scales of a row-weighted design (``B`` above); ``cols_j = 0``
        leaves column ``j`` out.
    """

    def __init__(
        self, B, t, beta, *, learn_noise, prior, tol, max_iter, schedule, targets, full_t=None,
        gram=None, ceiling=math.inf, limit=math.inf, rows=None, cols=None,
    ):  # fmt: skip
        n_basis, N = B.shape
        # read-only to the compiled loop whoever holds it (a one-vs-rest fit shares its
        # Phi^T read-only): one compiled specialisation of the loop, not two
        B = B.view()
        B.flags.writeable = False
        self.B, self.t = B, t
        full_t = t if full_t is None else full_t
        self.n_rows = full_t.size
        if rows is None:
            self.rows = self.cols = np.zeros(0)
            self.phi_t = B @ t
            self.unit = (np.einsum("ij,ij->i", B, B) > 0).astype(np.float64)
        else:
            self.rows, self.cols = rows, cols
            self.phi_t = cols * (B @ (rows * t))
            self.unit = (cols > 0).astype(np.float64)
        self.learn_noise = learn_noise
        self.prior = prior
        # the Gamma(c, d) noise hyperprior enters the objective when the noise is learned
        self.has_hyper = learn_noise and (prior.c != 0.0 or prior.d != 0.0)
        self.tol, self.max_iter, self.schedule = tol, max_iter, schedule
        self.floor, self.ceiling, self.limit = noise_var_floor(targets), ceiling, limit
        cap = min(n_basis, 64)
        self.idx = np.zeros(cap, dtype=np.int64)
        self.alpha = np.zeros(cap)
        self.C = np.zeros((cap, n_basis))
        self.Phi = np.zeros((cap, N))
        self.Sigma = np.zeros((cap, cap))
        self.L = np.zeros((cap, cap))
        self.mu = np.zeros(cap)
        self.position = np.full(n_basis, -1, dtype=np.int64)
        self.S = np.zeros(n_basis)
        self.Q = np.zeros(n_basis)
        self.unresolved = np.zeros(n_basis, dtype=np.bool_)
        self.path = np.zeros(min(max_iter, 4096) + 2)
        self.istate = np.zeros(_slots.N_ISTATE, dtype=np.int64)
        self.fstate = np.zeros(4)
        self.gram = GramRows(n_basis, schedule.gram_bytes) if gram is None else gram
        self._start_pd = True  # the starting model's posterior precision (see resume)
        self._start(beta)

    def _start(self, beta: float) -> None:
        """The empty model at noise precision ``beta`` (Faul & Tipping 2002: ``S = beta
        phi^T phi``, ``Q = beta phi^T t``), its log evidence the first path entry."""
        self.position[:] = -1
        self.unresolved[:] = False
        self.istate[:] = 0
        self.istate[_slots.I_PROBE] = int(self.learn_noise)
        self.istate[_slots.I_STALE] = int(self.learn_noise)
        self.fstate[:] = 0.0
        self.fstate[_slots.F_BETA] = beta
        self.fstate[_slots.F_INNER] = self.schedule.first_inner if self.learn_noise else self.tol
        self._refresh()
        self.path[0] = self.fstate[_slots.F_LOG_EV]
        self.istate[_slots.I_PATH] = 1

    @classmethod
    def resume(
        cls, B, t, idx, alpha, beta, *, prior, tol, max_iter, schedule, targets, full_t=None,
        learn_noise=True, gram=None, limit=math.inf, rows=None, cols=None,
    ) -> Ascent:  # fmt: skip
        """An ascent that starts from the model of the columns ``idx`` of ``B`` at
        precisions ``alpha`` and noise precision ``beta``, fitted before (on fewer columns,
        or at another noise): a learned noise's update is due, and its ``alpha``
        sub-problem is solved to ``tol`` from the start. :meth:`run` answers ``NOT_PD`` at
        once when the posterior precision of that model is not positive definite."""
        ascent = cls(
            B, t, beta, learn_noise=learn_noise, prior=prior, tol=tol, max_iter=max_iter,
            schedule=schedule, full_t=full_t, targets=targets, gram=gram, limit=limit, rows=rows,
            cols=cols,
        )  # fmt: skip
        M = idx.size
        while ascent.alpha.size < M:
            ascent._grow()
        ascent.idx[:M], ascent.alpha[:M] = idx, alpha
        ascent.position[idx] = np.arange(M)
        if rows is None:
            ascent.Phi[:M] = B[idx]
            ascent.C[:M] = B[idx] @ B.T
        else:  # the design's rows and their products, Phi~_a^T Phi~ = (rows o Phi~_a)^T Phi cols
            ascent.Phi[:M] = B[idx] * rows * cols[idx, None]
            ascent.C[:M] = ((ascent.Phi[:M] * rows) @ B.T) * cols
        ascent.istate[_slots.I_M] = M
        ascent.istate[_slots.I_PROBE] = 0  # a fitted model, not a start from below
        ascent.fstate[_slots.F_INNER] = tol
        ascent._start_pd = ascent._refresh()
        ascent.path[0] = ascent.log_evidence
        return ascent

    def _refresh(self) -> bool:
        return _kernels().refresh(
            self.idx, self.alpha, self.C, self.Phi, self.t, self.n_rows, self.phi_t, self.unit,
            self.Sigma, self.mu, self.L, self.S, self.Q, self.istate, self.fstate, self.has_hyper,
            self.prior.c, self.prior.d,
        )  # fmt: skip

    def _grow(self) -> None:
        """Double whichever array is full."""
        if self.istate[_slots.I_PATH] + 1 >= self.path.size:
            self.path = np.concatenate([self.path, np.zeros(self.path.size)])
            return
        n_basis, N = self.B.shape
        cap = min(n_basis, 2 * self.alpha.size)
        M = self.M
        for name, shape in (("idx", (cap,)), ("alpha", (cap,)), ("mu", (cap,)),
                            ("C", (cap, n_basis)), ("Phi", (cap, N))):  # fmt: skip
            old = getattr(self, name)
            new = np.zeros(shape, dtype=old.dtype)
            new[:M] = old[:M]
            setattr(self, name, new)
        for name in ("Sigma", "L"):
            square = np.zeros((cap, cap))
            square[:M, :M] = getattr(self, name)[:M, :M]
            setattr(self, name, square)

    M = _Slot("istate", _slots.I_M)  # active columns
    steps = _Slot("istate", _slots.I_STEPS)
    beta = _Slot("fstate", _slots.F_BETA)
    log_evidence = _Slot("fstate", _slots.F_LOG_EV)

    def run(self) -> Status:
        """Steps until the certificate holds, ``max_iter``, the ``limit`` or a restart;
        restarts from the empty model below the noise optimum when the first noise update
        says the start was above it (Tipping 2001, eq. 46 more than halved the variance)."""
        sch = self.schedule
        settings = np.array(
            [
                self.tol, self.floor, sch.refactor_min, sch.span, sch.resolution,
                sch.relative_inner, sch.sub_steps * self.n_rows, sch.restart_below,
                sch.noise_growth, sch.noise_rtol, sch.polish, sch.cancellation,
                sch.newton_after, sch.newton_min, sch.defer, sch.defer_min, self.ceiling,
                self.limit,
            ]
        )  # fmt: skip
        if not self._start_pd:
            return Status.NOT_PD
        while True:
            code = Status(
                _kernels().ascend(
                    self.B, self.rows, self.cols, self.t, self.n_rows, self.phi_t, self.unit,
                    self.idx, self.alpha, self.C, self.Phi, self.Sigma, self.mu, self.L,
                    self.position, self.S, self.Q, self.istate, self.fstate, self.unresolved,
                    self.path, self.learn_noise, self.has_hyper, self.prior.c, self.prior.d,
                    self.max_iter, settings, self.gram.rows, self.gram.fetched,
                )
            )  # fmt: skip
            if code == Status.FULL:
                self._grow()
                continue
            if code == Status.ABOVE:
                noise = max(sch.starts[0].noise / self.beta, self.floor)
                self._start(1.0 / min(noise, self.ceiling))
                continue
            if code == Status.NEWTON and self._newton():
                continue
            return Status.NOT_PD if code == Status.NEWTON else code

    def _newton(self) -> bool:
        """Joint Newton steps on the active ``alpha`` (noise and active set fixed), then
        exact ``Sigma, mu, S, Q`` and log evidence, recorded as one step; False when the
        new posterior precision is not positive definite."""
        sch = self.schedule
        M, beta = self.M, self.beta
        idx = self.idx[:M]
        G = beta * self.C[:M, idx]  # beta Phi_a^T Phi_a
        G = 0.5 * (G + G.T)
        inner = self.fstate[_slots.F_INNER]
        tol = inner if inner > self.tol else self.tol * sch.polish
        alpha, _ = joint_newton(
            G, beta * self.phi_t[idx], self.alpha[:M], np.arange(M), tol, sch.newton
        )
        self.alpha[:M] = alpha
        if not self._refresh():
            return False
        self.istate[_slots.I_STEPS] += 1
        self.istate[_slots.I_STALE] = int(self.learn_noise)
        self.unresolved[:] = False
        self.path[self.istate[_slots.I_PATH]] = self.log_evidence
        self.istate[_slots.I_PATH] += 1
        return True

    def model(self) -> tuple[np.ndarray, np.ndarray]:
        """Active columns and their (normalised) precisions."""
        return self.idx[: self.M].copy(), self.alpha[: self.M].copy()

    def readd_gain_inputs(self) -> tuple[np.ndarray, np.ndarray]:
        """``S, Q`` of every column (exact after a converged run)."""
        return self.S.copy(), self.Q.copy()

    def recorded_path(self) -> np.ndarray:
        return self.path[: self.istate[_slots.I_PATH]].copy()


def ascend_dense(
    B: np.ndarray,
    t: np.ndarray,
    *,
    prior: Prior,
    max_iter: int,
    tol: float,
    schedule: Schedule,
    targets: TargetMoments,
    full_t: np.ndarray | None = None,
    least_squares_rss: float = 0.0,
    n_starts: int | None = None,
    noise_var: float | None = None,
) -> tuple[Ascent, Status]:
    """The best of the ascents of the first ``n_starts`` starts of the schedule
    (:meth:`Schedule.first_starts`; ``targets`` and ``full_t``: see :class:`Ascent`; the
    starting noise is taken from ``targets`` too). ``n_starts=None``:
    :attr:`Schedule.held_starts` on a held basis, :attr:`Schedule.reduced_starts` on a
    reduced design.

    With the noise variance fixed at ``noise_var`` the starts are the same and the fixed
    noise is their ceiling: an ascent that starts below it learns the noise (a
    continuation from the over-fitted side, no higher than ``noise_var``) and then
    finishes at ``noise_var``; an ascent that would start at or above it runs at
    ``noise_var`` from the empty model. Every ascent is certified, and compared, at the
    fixed noise. (From the empty model alone, a broad kernel can stop at an optimum
    hundreds of nats below the one the continuation reaches.)

    ``least_squares_rss`` is a lower bound on ``||t - Phi w||^2`` over every ``w`` (for a
    reduced design ``[R; 0]`` with target ``[z; r]``: ``r^2``, the least-squares
    residual). Every fixed point of eq. 46 has a noise variance of at least ``(that + 2d)
    / (N + 2c)`` (its ``rss`` is no smaller and ``sum gamma >= 0``), so no ascent
    starts below it: with many more rows than columns the bound is close to the optimum,
    and a start far below it costs steps (the first ``alpha`` sub-problem takes the
    columns of a noise level the fit then leaves). An ascent from an earlier one's start
    and with its growth would repeat it and is not run.
    """
    options = {
        "prior": prior, "tol": tol, "max_iter": max_iter, "full_t": full_t,
        "targets": targets, "gram": GramRows(B.shape[0], schedule.gram_bytes),  # shared
    }  # fmt: skip
    if n_starts is None:
        n_starts = schedule.reduced_starts if full_t is not None else schedule.held_starts
    full_t = t if full_t is None else full_t
    # Tipping (2001) eq. 46 with rss at its least and sum gamma = 0: below every optimum
    bound = noise_variance_cd(least_squares_rss, 0.0, full_t.size, prior.c, prior.d)
    floor = noise_var_floor(targets)
    runs: list[tuple[float, Schedule]] = []

    ceiling = math.inf if noise_var is None else noise_var

    def run(start: Start, noise: float) -> tuple[Ascent | None, Status]:
        noise = min(noise, ceiling)
        learn = noise < ceiling
        growth = schedule.noise_growth if start.growth is None else start.growth
        ascent_schedule = dataclasses.replace(schedule, noise_growth=growth) if learn else schedule
        if (noise, ascent_schedule) in runs:
            return None, Status.CONVERGED
        runs.append((noise, ascent_schedule))
        ascent = Ascent(
            B, t, 1.0 / noise, learn_noise=learn, schedule=ascent_schedule, ceiling=ceiling,
            **options,
        )  # fmt: skip
        status = ascent.run()
        if noise_var is None or not learn or status != Status.CONVERGED:
            return ascent, status
        # the continuation's model, from its noise to the fixed one
        idx, alpha = ascent.model()
        fixed = Ascent.resume(
            B, t, idx, alpha, 1.0 / noise_var, learn_noise=False, schedule=schedule, **options
        )
        fixed.istate[_slots.I_STEPS] = ascent.steps  # max_iter counts both
        return fixed, fixed.run()

    first_start, *later = schedule.first_starts(n_starts)
    first, status = run(first_start, max(initial_noise_var(targets, first_start.noise), bound))
    assert first is not None  # the first ascent repeats none
    if status != Status.CONVERGED:
        return first, status
    best = first
    for start in later:  # a fraction of the first ascent's noise variance
        ascent, status = run(start, max(start.noise / first.beta, floor, bound))
        if ascent is None or status != Status.CONVERGED:
            continue  # a repeat of an earlier start, or an ascent that did not converge
        if ascent.log_evidence > best.log_evidence:
            best = ascent
    return best, Status.CONVERGED
