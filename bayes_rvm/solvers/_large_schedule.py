"""The schedule of the sequential solver's large path (no numba import here)."""

from __future__ import annotations

from dataclasses import dataclass, field

from bayes_rvm.solvers._newton import NewtonSettings

__all__ = ["LargeSchedule"]


@dataclass(frozen=True)
class LargeSchedule:
    """The sequential solver's schedule for bases above :attr:`Schedule.dense_bytes` that
    are not reduced (noise learned or fixed), and for classification
    (``bayes_rvm.solvers.sequential.fit(..., large_schedule=...)``).

    Attributes
    ----------
    prefetch : int
        Columns whose products ``Phi^T phi_j`` one pass over the basis computes together.
    flush : int
        Steps whose rank-one terms of the candidates' ``S, Q`` may be pending (applied
        together by one ``n_basis x M x flush`` matrix product, or earlier when an add is
        about to be chosen).
    refactor : int
        Rank-one updates of ``Sigma`` and ``mu`` between two recomputations from a new
        factor.
    polish_after : int
        Re-estimates in a row after which the active ``alpha`` take joint Newton steps in
        place of the next re-estimate (classification: on the weighted problem between
        mode updates).
    newton : NewtonSettings
        Steps per polish, largest step and damping of the joint Newton steps.
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
    span : float
        An inactive column with ``S_m <= span beta ||phi_m||^2`` lies in the span of the
        active columns to rounding: its ``S, Q`` are cancellation noise and it is not added.
    start_noise : float
        Starting noise variance as a fraction of ``var(t)``: below the noise optimum, so
        that the greedy path starts on the over-fitted side.
    restart_below : float
        The run restarts lower when its first noise update takes the noise variance below
        this fraction of the start (the start was above the optimum).
    resolution : float
        A step is taken only if its gain exceeds ``resolution eps cond(H) (1 + gain)``:
        below, the gains of an ill-conditioned active set are rounding.
    mode_gain, mode_gain_min, mode_gain_max : float
        Classification: the trust region of the weighted problem. The mode is found again
        before a step would take the gain the steps claim since the last mode beyond
        ``radius`` nats; ``radius`` starts at ``mode_gain``, doubles (up to
        ``mode_gain_max``) when the Laplace evidence gained more than 3/4 of the claim and
        halves (down to ``mode_gain_min``) when it gained less than 1/4.
    mode_dense_bytes : int
        Classification: a basis of at most this many bytes is held as a dense matrix
        (:meth:`holds`; mode updates re-weigh the products of every column with the
        active ones, over the rows whose weights moved; above it, every update is a pass
        over the whole basis).
    mode_rows : float
        Classification with the basis in memory: a mode update re-weighs the rows whose
        weight ``B_n`` or weighted target moved by more than this times the largest
        ``y (1 - y)`` (times the row's likelihood weight); the ascent still ends on
        products weighed in full.
    mode_stall : int
        Classification: the run stops when this many mode updates in a row have not raised
        the best Laplace evidence by ``tol``, and returns to the best model.
    """

    prefetch: int = 64
    flush: int = 8
    refactor: int = 32
    polish_after: int = 32
    newton: NewtonSettings = field(default_factory=NewtonSettings)
    compressed_prefetch: int = 16
    cache_bytes: int = 48 * 2**20
    compress_block: int = 128
    compress_passes: int = 4
    compress_bytes: int = 96 * 2**20
    exact_residual: float = 1e-14
    span: float = 1e-10
    start_noise: float = 0.01
    restart_below: float = 0.5
    resolution: float = 1.0
    mode_gain: float = 1.0
    mode_gain_min: float = 1e-3
    mode_gain_max: float = 10.0
    mode_dense_bytes: int = 2**30
    mode_rows: float = 1e-3
    mode_stall: int = 10

    def holds(self, shape: tuple[int, int]) -> bool:
        """Whether a classification fit holds a basis of ``shape`` (rows, columns) as a
        dense matrix: at most ``mode_dense_bytes`` of doubles."""
        n_rows, n_basis = shape
        return 8 * n_rows * n_basis <= self.mode_dense_bytes
