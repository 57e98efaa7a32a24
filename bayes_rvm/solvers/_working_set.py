"""Gaussian fits on bases too large for the compiled path and too wide to reduce: the
compiled ascent on a working set of columns, certified on every column.

A basis with about as many columns as rows (every training point a centre, the RVM) and
more than :attr:`~._compiled.Schedule.dense_bytes` of them is neither held by the
compiled loop nor reducible (:meth:`~bayes_rvm.basis.Basis.reduce` needs twice as many
rows as columns). The sequential ascent then runs on a working set ``W`` of columns:

1. ``W`` starts with :attr:`~._compiled.Schedule.working_set` columns evenly spaced over
   the basis, and the compiled loop (both ascents of its schedule) fits the model of ``W``
   on a reduced design of ``W`` (:class:`_ReducedColumns`: the columns' coordinates in an
   orthonormal frame of their span, with the products ``Phi~_W^T Phi~_W``,
   ``Phi~_W^T t`` and ``t^T t`` of the ``N`` rows).
2. A certificate on every column: exact ``S, Q`` (Tipping & Faul 2003, eq. 24-25) of all
   ``n_basis`` columns at the fitted ``alpha, beta``, from the products
   ``Phi~^T phi~_a`` of the active columns (one pass over the basis for the columns that
   became active since the last certificate).
3. The next ``W``: the active columns and the ``working_set`` inactive ones with the
   largest ``Q^2 / S`` (those whose add gains come first; the next best are the next
   round's candidates). Its reduced design is built anew, and the ascent resumes from the
   model it reached (:meth:`~._compiled.Ascent.resume`).

Memory: the products of the active columns with every column (``n_basis M``) and the
reduced design (``|W|^2``, ``|W| <= M + working_set``), besides the ``N M`` columns of
the final posterior.

A round's tolerance is ``relative_inner`` times the largest gain its certificate found
among the inactive columns (at least ``tol``), so that the early rounds do not polish
``alpha`` that the next columns will move. The fit ends when an ascent to ``tol`` leaves
no inactive column that gains more than ``tol``: no single add, re-estimate or delete of
any column and no noise update gains more than ``tol``, the sequential solver's
certificate. Each round starts from the model the last one reached, so the log evidence
never decreases from round to round. A round that gains at most ``tol`` although its
``W`` held every column that gains (the ascent's own ``S, Q`` of them are below its
resolution, or differ from the certificate's by rounding near ``tol``) is followed by a
round at ``tol``, and one more such round ends the fit.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import linalg

from bayes_rvm.basis import Basis
from bayes_rvm.evidence import delta_add
from bayes_rvm.posterior import gaussian_posterior
from bayes_rvm.solvers._ascent import Stopping
from bayes_rvm.solvers._base import Prior
from bayes_rvm.solvers._compiled import Ascent, Schedule, Status, ascend_dense

__all__ = ["WorkingSetFit", "fit_working_set"]

#: Bytes of ``N``-row columns evaluated at a time when the working set grows (the new
#: columns, and the frame's columns they are multiplied with).
_CHUNK_BYTES = 64 * 2**20
#: A new column adds a direction to the frame when the squared norm of its residual from
#: the frame's span exceeds this many times ``eps`` times the frame's size (unit columns):
#: below, the residual is the rounding of the products it is computed from.
_ROUNDING = 64


class _ReducedColumns:
    """A reduced design of a growing set ``W`` of normalised columns, in the order they
    joined: their coordinates in an orthonormal frame of their span, ``B`` (a row per
    column), and the target's, ``[z; r]``, so that ``B B^T = Phi~_W^T Phi~_W``,
    ``B [z; r] = Phi~_W^T t`` and ``z^T z + r^2 = t^T t`` (to rounding).

    The frame is spanned by the ``frame`` columns of ``W``, whose coordinates are the
    upper-triangular ``R``: ``R^T R`` is their Gram matrix. A new column gets its
    coordinates from its products with the frame's columns and a direction of its own
    from the residual of those (a pivoted Cholesky factor of the residuals' Gram matrix)
    unless the residual is rounding: a column in the span of ``W`` (a duplicate, a smooth
    kernel's column that the others reproduce to 1e-7) stays a candidate with
    coordinates in the frame. Each ``Phi~_W^T phi~_j`` is then as accurate as the product
    itself, as in the compiled loop's own products.
    """

    def __init__(self, basis: Basis, scales: np.ndarray, t: np.ndarray):
        self.basis, self.scales, self.t = basis, scales, t
        self.order = np.zeros(0, dtype=np.intp)  # W
        self.frame = np.zeros(0, dtype=np.intp)  # the columns of W that span the frame
        self.R = np.zeros((0, 0))
        self.B = np.zeros((0, 0))
        self.z = np.zeros(0)
        self.residual_sq = float(t @ t)  # r^2

    def _columns(self, idx: np.ndarray) -> np.ndarray:
        return self.basis.columns(idx) / self.scales[idx]

    def extend(self, new: np.ndarray) -> None:
        """Add the columns ``new`` (not in ``W``), a chunk of :data:`_CHUNK_BYTES` at a
        time."""
        chunk = max(1, _CHUNK_BYTES // (8 * self.t.size))
        for start in range(0, new.size, chunk):
            self._extend(new[start : start + chunk], chunk)

    def _extend(self, new: np.ndarray, chunk: int) -> None:
        P = self._columns(new)
        size = self.frame.size
        G = np.empty((size, new.size))  # products with the frame's columns
        for start in range(0, size, chunk):
            block = self.frame[start : start + chunk]
            G[start : start + block.size] = self._columns(block).T @ P
        X = linalg.solve_triangular(self.R, G, trans="T") if size else G  # coordinates
        residual = P.T @ P - X.T @ X  # the Gram matrix of the residuals from the frame
        rounding = _ROUNDING * np.finfo(float).eps * max(1, size + new.size)
        U, piv, rank, info = linalg.lapack.dpstrf(residual, lower=0, tol=rounding)
        if info < 0:
            raise RuntimeError(f"LAPACK dpstrf failed with info={info}")
        piv -= 1
        U = np.triu(U[:rank])  # U^T U = residual[piv][:, piv], new directions for piv[:rank]
        new, P, X = new[piv], P[:, piv], X[:, piv]
        # the target's coordinates along the new directions
        z_new = linalg.solve_triangular(
            U[:, :rank], P[:, :rank].T @ self.t - X[:, :rank].T @ self.z, trans="T"
        )
        self.residual_sq = max(self.residual_sq - float(z_new @ z_new), 0.0)
        grown = np.zeros((size + rank, size + rank))
        grown[:size, :size] = self.R
        grown[:size, size:] = X[:, :rank]
        grown[size:, size:] = U[:, :rank]
        self.R = grown
        rows = np.zeros((self.order.size + new.size, size + rank))
        rows[: self.order.size, :size] = self.B
        rows[self.order.size :] = np.vstack([X, U]).T
        self.B = rows
        self.z = np.concatenate([self.z, z_new])
        self.frame = np.concatenate([self.frame, new[:rank]])
        self.order = np.concatenate([self.order, new])

    def design(self) -> tuple[np.ndarray, np.ndarray]:
        """``B`` with a zero column for the target's residual, and the target ``[z; r]``."""
        B = np.zeros((self.order.size, self.frame.size + 1))
        B[:, :-1] = self.B
        return B, np.append(self.z, np.sqrt(self.residual_sq))


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
    ):
        """``phi_t``: ``Phi~^T t`` of the normalised columns; ``sq_norms``: the squared
        column norms of ``basis``."""
        self.basis, self.t, self.prior, self.schedule = basis, t, prior, schedule
        self.final_tol = final_tol
        self.usable = sq_norms > 0
        if not self.usable.any():
            raise ValueError("expected a design matrix with a nonzero column, got all zeros")
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
        reduced = _ReducedColumns(self.basis, self.scales, self.t)
        reduced.extend(working)
        B, t_reduced = reduced.design()
        schedule = self.schedule
        if tol > self.final_tol:  # a round before the last: no polish below its tolerance
            schedule = dataclasses.replace(schedule, polish=1.0)
        if self._ascent is None:
            self._ascent, status = ascend_dense(
                B, t_reduced, prior=self.prior, tol=tol, max_iter=max_iter, schedule=schedule,
                full_t=self.t,
            )  # fmt: skip
        else:
            active, alpha, beta = self.model()
            where = np.full(self.usable.size, -1, dtype=np.intp)
            where[reduced.order] = np.arange(reduced.order.size)
            self._ascent = Ascent.resume(
                B, t_reduced, where[active], alpha, beta, prior=self.prior, tol=tol,
                max_iter=max_iter, schedule=schedule, full_t=self.t,
            )  # fmt: skip
            status = self._ascent.run()
        self.order = reduced.order
        self.rounds += 1
        self.steps += self.ascent.steps
        self.path.append(self.ascent.recorded_path())
        return status

    def gained(self) -> float:
        """The log evidence the last round gained."""
        path = self.path[-1]
        return float(path[-1] - path[0])

    def model(self) -> tuple[np.ndarray, np.ndarray, float]:
        """Active columns (sorted), their normalised ``alpha``, and ``beta``."""
        idx, alpha = self.ascent.model()
        active = self.order[idx]
        order = np.argsort(active, kind="stable")
        return active[order], alpha[order], self.ascent.beta

    def exact_sq(self) -> tuple[np.ndarray, np.ndarray]:
        """``S, Q`` of every column at the current model (Tipping & Faul 2003, eq. 24-25),
        from ``Phi~^T phi~_a``: one pass for the columns active since the last call."""
        active, alpha, beta = self.model()
        kept = np.isin(self.crossed, active)
        missing = np.setdiff1d(active, self.crossed)
        blocks = [self.cross[:, kept]]
        if missing.size:
            columns = self.basis.columns(missing) / self.scales[missing]
            blocks.append(self.basis.transpose_dot(columns) / self.scales[:, None])
            self.passes += 1
        self.cross = np.hstack(blocks)
        self.crossed = np.concatenate([self.crossed[kept], missing])
        if not active.size:
            return beta * self.unit, beta * self.phi_t
        # the model in the order of the products' columns
        alpha = alpha[np.searchsorted(active, self.crossed)]
        gram = self.cross[self.crossed]
        # Tipping (2001) eq. 12-13 on the products of the N rows
        L, mu = gaussian_posterior(0.5 * (gram + gram.T), self.phi_t[self.crossed], alpha, beta)
        S = np.empty(self.unit.size)
        step = max(1, _CHUNK_BYTES // (8 * active.size))
        for start in range(0, S.size, step):
            rows = slice(start, start + step)
            Z = linalg.solve_triangular(L, self.cross[rows].T, lower=True)
            # Tipping & Faul (2003) eq. 24
            S[rows] = beta * self.unit[rows] - beta * beta * np.einsum("ij,ij->j", Z, Z)
        # Tipping & Faul (2003) eq. 25
        Q = beta * (self.phi_t - self.cross @ mu)
        return S, Q

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
) -> tuple[WorkingSetFit, Status, np.ndarray, np.ndarray]:
    """The working-set ascent (module docstring; ``phi_t, sq_norms``: see
    :class:`WorkingSetFit`); returns its state, how the last ascent ended (``CONVERGED``
    only with the certificate on every column), and the exact ``S, Q`` of every column at
    the final model."""
    fit = WorkingSetFit(basis, t, prior, schedule, stop.tol, phi_t, sq_norms)
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
            return fit, Status.CONVERGED, S, Q
        if fit.steps >= stop.max_iter:
            return fit, Status.MAX_ITER, S, Q
        round_tol = stop.tol if stuck else max(stop.tol, schedule.relative_inner * largest)
