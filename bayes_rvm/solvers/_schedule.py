"""The sequential solver's schedule, in one place: the starts of a fit, how each ascent
of the compiled step loop (:mod:`bayes_rvm.solvers._compiled`) moves the noise, solves its
``alpha`` sub-problems, refactors and certifies, and how the large path (classification on
bases over ``mode_dense_bytes``, larger Gaussian bases that compress) fetches, caches
and re-weighs its products.

A fit runs the ascents of the first ``n_starts`` starts (:meth:`Schedule.first_starts`)
and returns the one with the highest log evidence: the evidence has many local optima in
the noise, and which one an ascent reaches depends on where it starts.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bayes_rvm.solvers._newton import NewtonSettings

__all__ = ["Schedule", "Start"]


@dataclasses.dataclass(frozen=True)
class Start:
    """One ascent of :attr:`Schedule.starts`.

    Attributes
    ----------
    noise : float
        Starting noise variance: for the first ascent a fraction of ``var(t)``, for the
        later ones a fraction of the noise variance the first ascent found.
    growth : float, optional
        The ascent's :attr:`Schedule.noise_growth` (that of the schedule when ``None``).
    """

    noise: float
    growth: float | None = None


@dataclasses.dataclass(frozen=True)
class Schedule:
    """The sequential solver's schedule: which path a fit takes, the compiled path's
    starts and ascents, the tolerances both paths share, and the large path's settings
    (the attributes from ``large_start_noise`` on: classification on a basis over
    ``mode_dense_bytes``, and Gaussian bases over ``dense_bytes`` that are neither reduced
    nor fitted on a working set).

    Attributes
    ----------
    dense_bytes : int
        A Gaussian fit's compiled path holds ``Phi~^T`` when it takes at most this many
        bytes (:meth:`holds`).
    gram_bytes : int
        An ascent keeps the products ``Phi~^T phi~_j`` of the columns it adds, for re-adds
        and for the later ascents on the same basis
        (:class:`~bayes_rvm.solvers._compiled.GramRows`), when ``n_basis^2`` doubles take
        at most this many bytes.
    reduced_bytes : int
        A larger basis with at least twice as many rows as columns is reduced to its
        triangular factor (:meth:`~bayes_rvm.basis.Basis.reduce`, ``(n_basis + 1)^2``
        doubles) when that takes at most this many bytes (:meth:`reduces`), and the
        compiled path runs on it (the MacKay and EM solvers also run on it).
    starts : tuple of Start
        The first ascents of a fit, in order; the one with the highest log evidence is
        returned. The first starts from below the noise optimum of most data; the second
        from a quarter of the first one's noise variance (below its optimum, where a
        high-noise optimum of the first cannot trap it); the third at the first one's
        noise (where the model may need fewer columns); the fourth from below it in a
        slower continuation (an ``alpha`` sub-problem solved loosely at a low noise keeps
        too few columns, its residual overstates the noise, and a fast continuation
        follows it to a high-noise optimum).
    restart_range : tuple of float
        Ascents after :attr:`starts` start at fractions of the first one's noise variance
        spread over this range, evenly in ``log`` (:meth:`first_starts`).
    restart_growths : tuple of float
        Their :attr:`noise_growth`, in turn.
    held_starts, reduced_starts : int
        The number of starts of a fit by default on a basis held as it is, and on a
        reduced design (whose ascents keep hundreds of columns and take seconds each).
    first_inner : float
        Tolerance (nats) of the first ``alpha`` sub-problem.
    relative_inner : float
        Tolerance of the next sub-problem as a fraction of the last noise update's gain.
    sub_steps : float
        Until a noise update gains at most ``tol``, an ``alpha`` sub-problem takes at most
        ``sub_steps N`` steps before the noise is updated (``N`` rows: the bound does
        not move with duplicated or all-zero columns).
    restart_below : float
        An ascent restarts lower (the compiled path: at the first start's fraction of the
        estimate) when its first noise update takes the variance below this fraction of
        the start (the start was above the optimum).
    noise_growth : float
        A noise update raises the noise variance at most by this factor (a continuation:
        the ``alpha`` steps add the columns of the lower noise before it moves on).
    noise_rtol : float
        The noise has converged when its update gains at most ``tol`` and changes ``log
        beta`` by at most this much (the fixed point of eq. 46 to this accuracy).
    polish : float
        In the last sub-problem a re-estimate is taken when it gains more than ``polish
        tol`` (adds and deletes still need ``tol``), so that the active ``alpha`` sit at
        their joint optimum to about ``sqrt(polish tol)`` relative, not ``sqrt(tol)``.
    cancellation : float
        An add is confirmed on ``S_j`` from ``Sigma`` (``O(M^2)``), or from a new factor
        (``O(M^3)``, fewer digits lost) when ``S_j`` is below this fraction of ``beta
        ||phi~_j||^2``.
    refactor_min : int
        Rank-one updates of ``Sigma, mu`` between two factorisations: at least this many
        and at least ``M``.
    span : float
        An inactive column with ``S_m <= span beta ||phi~_m||^2`` lies in the span of the
        active columns to rounding and is not added.
    resolution : float
        A step is taken only if its gain exceeds ``resolution eps cond(H) (1 + gain)``:
        below, the gains of an ill-conditioned active set are rounding.
    newton_after : int
        After this many re-estimates in a row on at least ``newton_min`` active columns,
        the active ``alpha`` take joint Newton steps (:func:`~._newton.joint_newton`): one
        re-estimate at a time, hundreds of coupled ``alpha`` converge slowly. The large
        path takes them after ``large_newton_after`` re-estimates.
    newton_min : int
        Active columns from which the joint Newton steps are taken (each costs a few
        ``O(M^3)`` factorisations; below, the re-estimates are cheaper).
    newton : NewtonSettings
        Steps per call, largest step and damping of the joint Newton steps (both paths).
    defer : int
        Re-estimates whose rank-one terms of ``Sigma`` and of every column's ``S, Q`` may
        be pending, applied together by matrix products: each re-estimate then costs
        ``O(M defer)`` instead of ``O(M^2 + n_basis M)`` (0: none pending).
    defer_min : int
        Active columns from which re-estimates are deferred.
    working_set : int
        A basis over ``dense_bytes`` that is not reduced (fewer than twice as many rows as
        columns) and has more columns than this is fitted on a working set of columns
        (:mod:`~bayes_rvm.solvers._working_set`): this many to start, then the active
        columns and this many inactive ones.
    working_residual : float
        Such a basis is fitted on the working set when it does not compress: when its
        normalised columns keep a squared residual above this after their projection on
        the first :attr:`compress_block` of them (evenly spaced). A basis that
        compresses (a broad kernel) takes the large path, which reaches higher optima
        there.
    large_start_noise : float
        The large path's starting noise variance as a fraction of ``var(t)``: below the
        noise optimum, so that the greedy path starts on the over-fitted side.
    prefetch : int
        Columns whose products ``Phi^T phi_j`` one pass over the basis computes together.
    flush : int
        Steps whose rank-one terms of the candidates' ``S, Q`` may be pending (applied
        together by one ``n_basis x M x flush`` matrix product, or earlier when an add is
        about to be chosen).
    large_refactor : int
        Rank-one updates of ``Sigma`` and ``mu`` between two recomputations from a new
        factor.
    large_newton_after : int
        Re-estimates in a row after which the active ``alpha`` take joint Newton steps in
        place of the next re-estimate (classification: on the weighted problem between
        mode updates).
    compressed_prefetch : int
        Columns whose products with the compressed basis one request computes together.
    cache_bytes : int
        Bytes the cache of fetched columns and cross products may hold (at least
        ``2 prefetch`` columns).
    compress_block : int
        Columns added to the compressed basis per pass.
    compress_passes : int
        Largest number of passes the compression may take.
    compress_bytes : int
        Bytes the compressed basis ``B`` (and its orthonormal ``U``) may take.
    exact_residual : float
        Squared relative residual below which the compressed cross products are exact
        (their error, at most the residual, is then at the level of rounding).
    mode_gain, mode_gain_min, mode_gain_max : float
        Classification (on a held basis too, :mod:`~bayes_rvm.solvers._classify`): the
        trust region of the weighted problem. The mode is found again
        before a step would take the gain the steps claim since the last mode beyond
        ``radius`` nats; ``radius`` starts at ``mode_gain``, doubles (up to
        ``mode_gain_max``) when the Laplace evidence gained more than 3/4 of the claim and
        halves (down to ``mode_gain_min``) when it gained less than 1/4.
    mode_dense_bytes : int
        Classification holds ``Phi^T`` when it takes at most this many bytes
        (:meth:`mode_holds`) and runs the compiled loop on it
        (:mod:`~bayes_rvm.solvers._classify`; each Laplace mode costs two passes over
        ``Phi^T``); above it, the large path, whose every mode update is a pass over the
        whole basis.
    mode_stall : int
        Classification (on a held basis too): the run stops when this many mode updates in
        a row have not raised the best Laplace evidence by ``tol``, and returns to the best
        model.
    """

    dense_bytes: int = 16 * 2**20
    gram_bytes: int = 16 * 2**20
    reduced_bytes: int = 512 * 2**20
    starts: tuple[Start, ...] = (Start(0.02), Start(0.25), Start(1.0), Start(0.05, growth=1.5))
    restart_range: tuple[float, float] = (0.01, 1.0)
    restart_growths: tuple[float, ...] = (2.0, 1.5)
    held_starts: int = 4
    reduced_starts: int = 2
    first_inner: float = 0.1
    relative_inner: float = 0.01
    sub_steps: float = 1.0
    restart_below: float = 0.5
    noise_growth: float = 2.0
    noise_rtol: float = 1e-10
    polish: float = 1e-3
    refactor_min: int = 32
    span: float = 1e-10
    resolution: float = 1.0
    cancellation: float = 1e-4
    newton_after: int = 512
    newton_min: int = 256
    newton: NewtonSettings = dataclasses.field(default_factory=NewtonSettings)
    defer: int = 16
    defer_min: int = 256
    working_set: int = 1000
    working_residual: float = 1e-4
    # the large path
    large_start_noise: float = 0.01
    prefetch: int = 64
    flush: int = 8
    large_refactor: int = 32
    large_newton_after: int = 32
    compressed_prefetch: int = 16
    cache_bytes: int = 48 * 2**20
    compress_block: int = 128
    compress_passes: int = 4
    compress_bytes: int = 96 * 2**20
    exact_residual: float = 1e-14
    mode_gain: float = 1.0
    mode_gain_min: float = 1e-3
    mode_gain_max: float = 10.0
    mode_dense_bytes: int = 2**30
    mode_stall: int = 10

    def holds(self, shape: tuple[int, int]) -> bool:
        """Whether the compiled path holds a basis of ``shape`` (rows, columns) as it is:
        at most ``dense_bytes`` of doubles."""
        n_rows, n_basis = shape
        return 8 * n_rows * n_basis <= self.dense_bytes

    def mode_holds(self, shape: tuple[int, int]) -> bool:
        """Whether a classification fit holds a basis of ``shape`` (rows, columns) as a
        matrix (``Phi^T``) and runs the compiled loop: at most ``mode_dense_bytes`` of
        doubles."""
        n_rows, n_basis = shape
        return 8 * n_rows * n_basis <= self.mode_dense_bytes

    def mode_radius(self, radius: float, ratio: float) -> float:
        """Classification's trust radius after a mode update whose Laplace evidence gain
        was ``ratio`` times the gain the steps claimed: doubled (up to ``mode_gain_max``)
        above 3/4, halved (down to ``mode_gain_min``) below 1/4."""
        if ratio > 0.75:
            return min(2.0 * radius, self.mode_gain_max)
        if ratio < 0.25:
            return max(0.5 * radius, self.mode_gain_min)
        return radius

    def reduces(self, shape: tuple[int, int]) -> bool:
        """Whether a Gaussian fit of a basis of ``shape`` (rows, columns) runs on the
        triangular factor of ``[Phi | t]`` (:meth:`~bayes_rvm.basis.Basis.reduce`): a
        basis over ``dense_bytes``, with at least twice as many rows as columns, whose
        factor takes at most ``reduced_bytes``. Every type-II solver of a Gaussian
        likelihood takes this rule."""
        n_rows, n_basis = shape
        return (
            not self.holds(shape)
            and n_rows >= 2 * (n_basis + 1)
            and 8 * (n_basis + 1) ** 2 <= self.reduced_bytes
        )

    def first_starts(self, n: int) -> tuple[Start, ...]:
        """The first ``n`` starts: :attr:`starts`, then fractions of the first ascent's
        noise variance at the points ``u_k = frac(1/2 + k / golden ratio)``, k = 0, 1, ...,
        of the unit interval (each new one in one of the largest gaps the others leave)
        mapped to :attr:`restart_range` in ``log``."""
        low, high = np.log(self.restart_range)
        further = []
        for k in range(max(n - len(self.starts), 0)):
            u = (0.5 + k * _INVERSE_GOLDEN) % 1.0
            growth = self.restart_growths[k % len(self.restart_growths)]
            further.append(Start(float(np.exp(low + u * (high - low))), growth=growth))
        return (self.starts + tuple(further))[:n]


_INVERSE_GOLDEN = (5**0.5 - 1) / 2
