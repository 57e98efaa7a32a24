"""Gaussian fits on bases too large for the compiled path and too wide to reduce: the
compiled ascent on a working set of columns, certified on every column.

A basis with about as many columns as rows (every training point a centre, the RVM) and
more than :attr:`~._schedule.Schedule.dense_bytes` of them is neither held by the
compiled loop nor reducible (:meth:`~bayes_rvm.basis.Basis.reduce` needs twice as many
rows as columns). The sequential ascent then runs on a working set ``W`` of columns:

1. ``W`` starts with :attr:`~._schedule.Schedule.working_set` columns evenly spaced over
   the basis, and the compiled loop (the first ascent of its schedule alone: the rounds
   replace most of the columns it keeps) fits the model of ``W`` on a reduced design of
   ``W`` (:func:`_reduced_design`: the columns' coordinates in an orthonormal frame of
   their span, with the products ``Phi~_W^T Phi~_W``, ``Phi~_W^T t`` and ``t^T t`` of
   the ``N`` rows).
2. A certificate on every column: exact ``S, Q`` (Tipping & Faul 2003, eq. 24-25) of all
   ``n_basis`` columns at the fitted ``alpha, beta``, from the products
   ``Phi~^T phi~_a`` of the active columns (one pass over the basis for the columns that
   became active since the last certificate).
3. The next ``W``: the active columns and the ``working_set`` inactive ones with the
   largest ``Q^2 / S`` (those whose add gains come first; the next best are the next
   round's candidates). Its reduced design is built anew from the Gram matrix of ``W``,
   whose products with the active columns the certificate has already computed, and
   the ascent resumes from the model it reached (:meth:`~._compiled.Ascent.resume`).

Memory: the products of the active columns with every column (``n_basis M``) and the
reduced design (``|W|^2``, ``|W| <= M + working_set``), besides the ``N M`` columns of
the final posterior.

A round's tolerance is ``relative_inner`` times the largest gain its certificate found
among the inactive columns (at least ``tol``), so that the early rounds do not polish
``alpha`` that the next columns will move. The fit ends when an ascent to ``tol`` leaves
no inactive column that gains more than ``tol``: no single add, re-estimate or delete of
any column and no noise update gains more than ``tol``, the sequential solver's
certificate. Each round starts from the model the last one reached. The converged
model's ``alpha`` then take joint Newton steps together (:meth:`WorkingSetFit.polish`),
and the certificate is taken again at them, whole: the adds of the inactive columns,
and the re-estimates and deletes of the active ones and the noise update
(:meth:`WorkingSetFit.settled_gain`), which the Newton steps may have moved; a gain over
``tol`` there takes the fit to another round at ``tol``. A round that gains at most
``tol`` although its ``W`` held every column that gains (the ascent's own ``S, Q`` of
them are below its resolution, or differ from the certificate's by rounding near
``tol``) is followed by a round at ``tol``, and one more such round ends the fit.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import linalg

from bayes_rvm._blocks import in_threads
from bayes_rvm.basis import Basis
from bayes_rvm.evidence import (
    column_gain,
    delta_add,
    noise_variance,
    own_sparsity_quality,
    sparsity_quality,
)
from bayes_rvm.posterior import fit_gaussian, gaussian_posterior
from bayes_rvm.solvers._ascent import Stopping
from bayes_rvm.solvers._base import Prior, TargetMoments, noise_var_floor
from bayes_rvm.solvers._compiled import Ascent, Status, ascend_dense
from bayes_rvm.solvers._newton import joint_newton
from bayes_rvm.solvers._schedule import Schedule

__all__ = ["WorkingSetFit", "fit_working_set"]

#: Bytes of ``N``-row columns evaluated at a time (the Gram matrix of a working set), and
#: of the products used at a time in the certificate's ``S, Q``.
_CHUNK_BYTES = 64 * 2**20
#: Bytes of the columns of a working set's Gram matrix held at once, so that each
#: chunk of them is evaluated once (the columns are those of the working set outside
#: the last certificate's products: 160 MB for 1,000 columns of 20,000 rows).
_GRAM_BYTES = 256 * 2**20
#: A column adds a direction to the frame of a reduced design when its squared residual
#: from the span of the columns before it exceeds this many times ``eps`` times the size
#: of the working set (unit columns): below, it is the rounding of the Gram matrix.
_ROUNDING = 64


def _gram(basis: Basis, scales: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``Phi~_idx^T Phi~_idx`` of the normalised columns ``idx``, evaluated
    :data:`_CHUNK_BYTES` of columns at a time (each pair of chunks once). When all the
    chunks take at most :data:`_GRAM_BYTES` each is evaluated once, and the chunks and
    then the blocks of the Gram matrix are computed in the basis's ``n_jobs`` threads
    (each block written by one: the same products with any number); else each chunk is
    evaluated again for each block it enters."""
    chunk = max(1, _CHUNK_BYTES // (8 * basis.n_rows))
    starts = list(range(0, idx.size, chunk))

    def columns(start: int) -> np.ndarray:
        return basis.columns(idx[start : start + chunk]) / scales[idx[start : start + chunk]]

    gram = np.empty((idx.size, idx.size))

    def fill(left: np.ndarray, right: np.ndarray, i: int, j: int) -> None:
        block = left.T @ right
        gram[i : i + chunk, j : j + chunk] = block
        gram[j : j + chunk, i : i + chunk] = block.T

    if 8 * basis.n_rows * idx.size <= _GRAM_BYTES:
        held = dict(zip(starts, in_threads(columns, starts, basis.n_jobs), strict=True))
        pairs = [(i, j) for k, i in enumerate(starts) for j in starts[k:]]
        in_threads(lambda ij: fill(held[ij[0]], held[ij[1]], *ij), pairs, basis.n_jobs)
        return gram
    for k, i in enumerate(starts):
        left = columns(i)
        for j in starts[k:]:
            fill(left, left if j == i else columns(j), i, j)
    return gram


def _reduced_design(
    gram: np.ndarray, phi_t: np.ndarray, tt: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A reduced design of columns with Gram matrix ``gram``, products ``phi_t`` with the
    target and ``tt = t^T t``: their coordinates ``B`` in an orthonormal frame of their
    span and the target's ``[z; r]``, so that ``B B^T = gram``, ``B [z; r] = phi_t`` and
    ``z^T z + r^2 = tt`` (to rounding), in the order ``perm`` (rows of ``B`` are columns
    ``perm``).

    A pivoted Cholesky factor ``gram[perm][:, perm] = U^T U`` (LAPACK ``dpstrf``) whose
    first ``rank`` columns span the frame: a column whose squared residual from the span
    of those before it is rounding (:data:`_ROUNDING`; a duplicate, a smooth kernel's
    column that others reproduce to 1e-7) gets no direction of its own, but stays a
    candidate with its coordinates in the frame, its products as accurate as ``gram``.
    """
    size = gram.shape[0]
    rounding = _ROUNDING * np.finfo(float).eps * max(1, size)
    U, perm, rank, info = linalg.lapack.dpstrf(gram, lower=0, tol=rounding)
    if info < 0:
        raise RuntimeError(f"LAPACK dpstrf failed with info={info}")
    perm = perm - 1
    U = np.triu(U[:rank])  # rank x size, upper trapezoidal
    # the target's coordinates: U_11^T z = Phi~_frame^T t
    z = linalg.solve_triangular(U[:, :rank], phi_t[perm[:rank]], trans="T")
    B = np.zeros((size, rank + 1))  # the last coordinate: the target's residual
    B[:, :rank] = U.T
    return B, np.append(z, np.sqrt(max(tt - float(z @ z), 0.0))), perm


def _positions(columns: np.ndarray, n_columns: int) -> np.ndarray:
    """For each of ``n_columns`` columns its position in ``columns``, ``-1`` if absent."""
    where = np.full(n_columns, -1, dtype=np.intp)
    where[columns] = np.arange(columns.size)
    return where


class WorkingSetFit:
    """The state of a working-set fit: the working set and the reduced design of the last
    round, its ascent, and the products of the active columns with every column."""

    def __init__(
        self,
        basis: Basis,
        t: np.ndarray,
        prior: Prior,
        schedule: Schedule,
        final_tol: float,
        phi_t: np.ndarray,
        sq_norms: np.ndarray,
        targets: TargetMoments,
    ):
        """``phi_t``: ``Phi~^T t`` of the normalised columns; ``sq_norms``: the squared
        column norms of ``basis``; ``targets``: the moments of the rows ``t`` stands for
        (the starting noise and its floor)."""
        self.basis, self.t, self.prior, self.schedule = basis, t, prior, schedule
        self.targets = targets
        self.final_tol = final_tol
        self.usable = sq_norms > 0
        self.scales = np.where(self.usable, np.sqrt(sq_norms), 1.0)
        self.phi_t = phi_t
        self.unit = self.usable.astype(np.float64)
        self.order = np.zeros(0, dtype=np.intp)  # the working set, in its design's order
        # Phi~^T phi~_j for the columns j in crossed (active at the last certificate)
        self.cross = np.zeros((sq_norms.size, 0))
        self.crossed = np.zeros(0, dtype=np.intp)
        self.passes = 0  # passes over the basis for the products of active columns
        self.rounds = 0
        self.steps = 0  # steps and noise updates of every round
        self._ascent: Ascent | None = None
        self._polished: tuple[np.ndarray, np.ndarray, float] | None = None
        self.path: list[np.ndarray] = []

    @property
    def ascent(self) -> Ascent:
        """The last round's ascent."""
        if self._ascent is None:
            raise RuntimeError("no round has run")
        return self._ascent

    def start(self) -> np.ndarray:
        """The first working set: ``working_set`` usable columns evenly spaced."""
        usable = np.flatnonzero(self.usable)
        size = min(self.schedule.working_set, usable.size)
        return usable[np.unique(np.linspace(0, usable.size - 1, size).round().astype(np.intp))]

    def ascend(self, working: np.ndarray, tol: float, max_iter: int) -> Status:
        """The compiled ascent to ``tol`` on the reduced design of the columns ``working``:
        from scratch on the first round, else resumed from the model of the last one (whose
        columns ``working`` holds)."""
        B, t_reduced, perm = _reduced_design(
            self._working_gram(working), self.phi_t[working], float(self.t @ self.t)
        )
        working = working[perm]
        schedule = self.schedule
        if tol > self.final_tol:  # a round before the last: no polish below its tolerance
            schedule = dataclasses.replace(schedule, polish=1.0)
        if self._ascent is None:
            # the first ascent alone: its model only starts the rounds, which replace
            # most of its columns
            self._ascent, status = ascend_dense(
                B, t_reduced, prior=self.prior, tol=tol, max_iter=max_iter, schedule=schedule,
                full_t=self.t, n_starts=1, targets=self.targets,
            )  # fmt: skip
        else:
            active, alpha, beta = self.model()
            self._ascent = Ascent.resume(
                B, t_reduced, _positions(working, self.usable.size)[active], alpha, beta,
                prior=self.prior, tol=tol,
                max_iter=max_iter, schedule=schedule, full_t=self.t, targets=self.targets,
            )  # fmt: skip
            status = self._ascent.run()
        self.order = working
        self._polished = None
        self.rounds += 1
        self.steps += self.ascent.steps
        self.path.append(self.ascent.recorded_path())
        return status

    def _working_gram(self, working: np.ndarray) -> np.ndarray:
        """``Phi~_W^T Phi~_W``: the products with the active columns from the last
        certificate's, the others evaluated."""
        where = _positions(self.crossed, self.usable.size)  # column -> column of cross
        known, rest = np.flatnonzero(where[working] >= 0), np.flatnonzero(where[working] < 0)
        gram = np.empty((working.size, working.size))
        gram[:, known] = self.cross[working][:, where[working[known]]]
        gram[np.ix_(known, rest)] = gram[np.ix_(rest, known)].T
        gram[np.ix_(rest, rest)] = _gram(self.basis, self.scales, working[rest])
        return gram

    def gained(self) -> float:
        """The log evidence the last round gained."""
        path = self.path[-1]
        return float(path[-1] - path[0])

    def model(self) -> tuple[np.ndarray, np.ndarray, float]:
        """Active columns (sorted), their normalised ``alpha``, and ``beta``: the last
        round's, or their polish (:meth:`polish`)."""
        if self._polished is not None:
            return self._polished
        idx, alpha = self.ascent.model()
        active = self.order[idx]
        order = np.argsort(active, kind="stable")
        return active[order], alpha[order], self.ascent.beta

    def exact_sq(self) -> tuple[np.ndarray, np.ndarray]:
        """``S, Q`` of every column at the current model (Tipping & Faul 2003, eq. 24-25),
        from ``Phi~^T phi~_a``: one pass for the columns active since the last call."""
        active, alpha, beta = self.model()
        kept = np.flatnonzero(np.isin(self.crossed, active))
        missing = np.setdiff1d(active, self.crossed)
        # one new array, its columns filled by slices (a column mask copies far slower)
        cross = np.empty((self.unit.size, kept.size + missing.size))
        cross[:, : kept.size] = np.take(self.cross, kept, axis=1)
        if missing.size:
            columns = self.basis.columns(missing) / self.scales[missing]
            cross[:, kept.size :] = self.basis.transpose_dot(columns) / self.scales[:, None]
            self.passes += 1
        self.cross = cross
        self.crossed = np.concatenate([self.crossed[kept], missing])
        if not active.size:
            return beta * self.unit, beta * self.phi_t
        alpha, gram = self._crossed_model()
        # Tipping (2001) eq. 12-13 on the products of the N rows
        L, mu = gaussian_posterior(gram, self.phi_t[self.crossed], alpha, beta)
        S, Q = np.empty(self.unit.size), np.empty(self.unit.size)
        step = max(1, _CHUNK_BYTES // (8 * active.size))

        def chunk(start: int) -> None:  # rows of its own: the same bits in any thread
            rows = slice(start, start + step)
            S[rows], Q[rows] = sparsity_quality(
                beta * self.cross[rows], beta * self.unit[rows], beta * self.phi_t[rows], L, mu
            )

        in_threads(chunk, list(range(0, S.size, step)), self.basis.n_jobs)
        return S, Q

    def polish(self, tol: float) -> float:
        """Joint Newton steps on the active ``alpha`` at the last round's noise, from the
        products of the last :meth:`exact_sq`, which must have run at the current model
        (:func:`~._newton.joint_newton`, until a
        step gains at most ``tol``); returns their gain.

        The re-estimates stop once none gains more than ``polish tol``, which leaves a
        weakly determined ``alpha`` anywhere in a valley that flat: two fits whose sums
        round differently (rows in chunks, another order) ended with ``mu`` 2.5e-4 apart.
        The Newton steps take the ``alpha`` to the valley's floor together."""
        beta = self.model()[2]
        if not self.crossed.size:
            return 0.0
        alpha, gram = self._crossed_model()
        alpha, gain = joint_newton(
            beta * gram, beta * self.phi_t[self.crossed], alpha, np.arange(alpha.size), tol,
            self.schedule.newton,
        )  # fmt: skip
        order = np.argsort(self.crossed, kind="stable")
        self._polished = (self.crossed[order], alpha[order], beta)
        self.path.append(np.array([self.path[-1][-1] + gain]))
        return gain

    def settled_gain(self, S: np.ndarray, Q: np.ndarray) -> float:
        """The largest gain (nats) of a re-estimate or delete of an active column (from
        ``S, Q`` of :meth:`exact_sq` at the current model, Faul & Tipping 2002) and of the
        noise update (Tipping 2001, eq. 46, above the floor) at the current ``alpha``: the
        part of the certificate that the inactive columns' add gains do not cover, once
        joint Newton steps (:meth:`polish`) have moved the ``alpha`` after the last round.
        The noise gain is eq. 36 at the two noise levels on the last round's reduced
        design, which holds the active columns (``n_rows = N``)."""
        active, alpha, beta = self.model()
        if not active.size:
            return 0.0
        s, q = own_sparsity_quality(S[active], Q[active], alpha)  # Faul & Tipping eq. 21
        steps = float(column_gain(s, q, alpha)[0].max())
        columns = self.ascent.B[_positions(self.order, self.usable.size)[active]].T
        fit = fit_gaussian(columns, self.ascent.t, alpha, beta, n_rows=self.t.size)
        gamma = 1.0 - alpha * fit.sigma_diag  # Tipping (2001) eq. 17
        # Tipping (2001) eq. 46
        variance = noise_variance(fit.rss, float(gamma.sum()), self.t.size, self.prior)
        beta_new = 1.0 / max(variance, noise_var_floor(self.targets))
        moved = fit_gaussian(columns, self.ascent.t, alpha, beta_new, n_rows=self.t.size)
        noise = moved.log_evidence(self.prior) - fit.log_evidence(self.prior)
        return max(steps, noise)

    def _crossed_model(self) -> tuple[np.ndarray, np.ndarray]:
        """The active ``alpha`` and ``Phi~_a^T Phi~_a`` in the order of the products'
        columns (``crossed``: the active columns once :meth:`exact_sq` has run)."""
        active, alpha, _ = self.model()
        gram = self.cross[self.crossed]
        return alpha[np.searchsorted(active, self.crossed)], 0.5 * (gram + gram.T)

    def next_set(self, S: np.ndarray, Q: np.ndarray, tol: float) -> tuple[np.ndarray, int, float]:
        """The next working set: the active columns and the ``working_set`` inactive ones
        with the largest ``Q^2 / S`` (an add gains when it exceeds 1, the more the larger);
        how many inactive columns gain more than ``tol``, and the largest gain."""
        active = self.model()[0]
        inactive = self.usable & (S > 0)
        inactive[active] = False
        candidates = np.flatnonzero(inactive)
        ratio = Q[candidates] ** 2 / S[candidates]
        gain = delta_add(S[candidates], Q[candidates])
        best = candidates[np.argsort(-ratio, kind="stable")[: self.schedule.working_set]]
        working = np.concatenate([active, best])
        return working, int(np.count_nonzero(gain > tol)), float(gain.max(initial=0.0))


def fit_working_set(
    basis: Basis,
    t: np.ndarray,
    prior: Prior,
    stop: Stopping,
    schedule: Schedule,
    phi_t: np.ndarray,
    sq_norms: np.ndarray,
    targets: TargetMoments,
) -> tuple[WorkingSetFit, Status, np.ndarray, np.ndarray]:
    """The working-set ascent (module docstring; ``phi_t, sq_norms``: see
    :class:`WorkingSetFit`); returns its state, how the last ascent ended (``CONVERGED``
    only with the certificate on every column), and the exact ``S, Q`` of every column at
    the final model."""
    fit = WorkingSetFit(basis, t, prior, schedule, stop.tol, phi_t, sq_norms, targets)
    working, round_tol = fit.start(), stop.tol
    while True:
        status = fit.ascend(working, round_tol, stop.max_iter - fit.steps)
        S, Q = fit.exact_sq()
        if status != Status.CONVERGED:
            return fit, status, S, Q
        working, violators, largest = fit.next_set(S, Q, stop.tol)
        if stop.verbose:
            active, _, beta = fit.model()
            print(
                f"[sequential] working set {fit.order.size}: M={active.size}, noise sd "
                f"{beta**-0.5:.4g}, log evidence {fit.ascent.log_evidence:.6f} after "
                f"{fit.ascent.steps} steps at tolerance {round_tol:.2g}; {violators} columns "
                f"gain more than tol (largest {largest:.3g})"
            )
        stuck = fit.rounds > 1 and fit.gained() <= stop.tol
        if round_tol <= stop.tol and (violators == 0 or stuck):
            # stuck: the last ascent had these columns in W and took none of them (below
            # its resolution, or rounding of the two computations of a gain near tol)
            fit.polish(stop.tol * schedule.polish**2)
            S, Q = fit.exact_sq()  # the certificate again, at the polished alpha
            working, violators, largest = fit.next_set(S, Q, stop.tol)
            if stuck or (violators == 0 and fit.settled_gain(S, Q) <= stop.tol):
                return fit, Status.CONVERGED, S, Q
        if fit.steps >= stop.max_iter:
            return fit, Status.MAX_ITER, S, Q
        round_tol = stop.tol if stuck else max(stop.tol, schedule.relative_inner * largest)
