"""Where the sequential solver's cross products ``Phi~^T W phi~_j`` come from.

Three strategies behind one protocol, :class:`Crosses`: exact products from passes over
the basis (:class:`CrossCache`; a basis in memory is one matrix product per pass), and
products from a compressed basis ``B = Phi~^T U`` (:func:`compress`), either of the
projected basis ``U U^T Phi~`` or, when the compression is exact to rounding, of the
basis itself (:class:`CompressedCrosses`). ``Phi~`` is the basis with columns of unit
norm (``scales`` are the column norms); ``W`` the diagonal weights of the problem.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

import numpy as np

from bayes_rvm.basis import Basis
from bayes_rvm.solvers._schedule import Schedule

__all__ = ["CompressedCrosses", "Compression", "CrossCache", "Crosses", "compress"]


class Crosses(Protocol):
    """Normalised columns and their products with every column, for the sequential steps."""

    passes: int  # passes over the basis so far

    def get(self, j: int, ranked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(phi~_j, Phi~^T W phi~_j)``; ``ranked`` orders the candidates likely to be
        requested next (fetched together where that saves work)."""
        ...

    def put(self, j: int, column: np.ndarray, cross: np.ndarray) -> None:
        """Keep the column and products of ``j`` (it left the active set)."""
        ...

    def reweight(self, weights: np.ndarray) -> None:
        """New weights ``W = diag(weights)``: the stored products are stale."""
        ...

    def weighted(self, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``Phi~^T V`` and ``diag(Phi~^T W Phi~)``."""
        ...


class CrossCache:
    """Normalised columns ``phi_j`` and their products ``Phi^T W phi_j``, fetched in batches.

    ``W`` is the diagonal weight matrix of the problem: the identity in regression (the
    noise precision is applied by the workspace), ``diag(y (1 - y))`` at the current mode
    in classification (:meth:`reweight`). A request for a column that is not stored
    triggers one pass over the basis that also computes the products of the ``size - 1``
    best-ranked other candidates; columns that leave the active set are stored back,
    since they are often re-added. At most ``keep`` columns are kept (the oldest are
    dropped): ``cache_bytes`` worth, and never fewer than ``2 * size``.
    """

    def __init__(self, basis: Basis, scales: np.ndarray, size: int, cache_bytes: int):
        self.basis = basis
        self.scales = scales
        self.size = size
        per_column = 8 * (basis.n_rows + basis.n_columns)
        self.keep = max(2 * size, cache_bytes // per_column)
        self.store: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.passes = 0
        self.weights: np.ndarray | None = None

    def get(self, j: int, ranked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(phi_j, Phi^T W phi_j)`` (normalised); ``ranked`` orders the other candidates."""
        if j not in self.store:
            extra = [int(i) for i in ranked[: 2 * self.size] if i != j and i not in self.store]
            idx = np.array([j, *extra[: self.size - 1]], dtype=np.intp)
            columns, cross = self._fetch(idx)
            for k, i in enumerate(idx):
                self.put(int(i), columns[:, k], cross[:, k])
        column, cross = self.store.pop(j)
        return column, cross

    def _fetch(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Columns ``idx`` and their products with every column: one pass."""
        columns = self.basis.columns(idx) / self.scales[idx]
        weighted = columns if self.weights is None else self.weights[:, None] * columns
        self.passes += 1
        return columns, self.basis.transpose_dot(weighted) / self.scales[:, None]

    def put(self, j: int, column: np.ndarray, cross: np.ndarray) -> None:
        self.store[j] = (column, cross)
        while len(self.store) > self.keep:
            del self.store[next(iter(self.store))]

    def reweight(self, weights: np.ndarray) -> None:
        self.weights = weights
        self.store.clear()

    def weighted(self, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``Phi^T V`` and ``diag(Phi^T W Phi)`` (normalised) in one pass over the basis."""
        self.passes += 1
        products, norms = self.basis.transpose_dot_with_norms(V, weights=self.weights)
        return products / self.scales[:, None], norms / self.scales**2


class CompressedCrosses(CrossCache):
    """Products ``Phi^T W phi_j ~ B (U^T W U) B_j`` from the compressed basis of :func:`compress`.

    With ``project=False`` (the compression is exact to rounding) the column itself is
    evaluated exactly (``N`` kernel values); otherwise it is the projected column
    ``U B_j``, so that the run works with the projected basis ``U U^T Phi~`` consistently.
    Both are products with ``B`` (``n_basis x rank``); a request computes
    ``compressed_prefetch`` best-ranked candidates in one matrix product and keeps them
    like :class:`CrossCache`.
    """

    def __init__(
        self,
        basis: Basis,
        scales: np.ndarray,
        compression: Compression,
        schedule: Schedule,
        *,
        project: bool,
    ):
        super().__init__(basis, scales, schedule.compressed_prefetch, schedule.cache_bytes)
        self.B = compression.B
        self.U = compression.U
        self.project = project
        self.BG = self.B  # B (U^T W U): B itself for W = I

    def _fetch(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        B_idx = self.B[idx].T
        columns = self.U @ B_idx if self.project else self.basis.columns(idx) / self.scales[idx]
        return columns, self.BG @ B_idx

    def reweight(self, weights: np.ndarray) -> None:
        self.BG = self.B @ (self.U.T @ (weights[:, None] * self.U))
        self.store.clear()

    def weighted(self, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``Phi^T V ~ B U^T V`` and ``diag(Phi^T W Phi) ~ diag(B U^T W U B^T)``."""
        return self.B @ (self.U.T @ V), np.einsum("ij,ij->i", self.BG, self.B)


class Compression(NamedTuple):
    """What :func:`compress` found: ``B = Phi~^T U`` (``n_basis x rank``; rank 0 when the
    basis is not compressed), the orthonormal ``U`` (``N x rank``), the largest squared
    relative residual ``||phi~_m - U U^T phi~_m||^2`` left, ``Phi~^T t`` and the squared
    column norms of ``Phi``."""

    B: np.ndarray
    U: np.ndarray
    leftover: float
    phi_t: np.ndarray
    sq_norms: np.ndarray

    @property
    def rank(self) -> int:
        return int(self.B.shape[1])

    @classmethod
    def none(cls, basis: Basis, t: np.ndarray) -> Compression:
        """No compression: ``Phi~^T t`` and the squared column norms (one pass)."""
        products, sq_norms = basis.transpose_dot_with_norms(t[:, None])
        phi_t = products[:, 0] / np.where(sq_norms > 0, np.sqrt(sq_norms), 1.0)
        return cls(np.zeros((basis.n_columns, 0)), np.zeros((t.size, 0)), 0.0, phi_t, sq_norms)


def _orthonormal_complement(U: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """An orthonormal basis of new directions of ``Y`` (orthogonal to the orthonormal ``U``).

    Gram-Schmidt against ``U`` twice, then QR; when columns of ``Y`` lie in the span of
    ``U`` to rounding, the QR factor normalises rounding noise and the orthogonality to
    ``U`` is lost by the inverse of the residual norm, so the result goes through the same
    two projections and QR once more.
    """
    for _ in range(2):
        for _ in range(2):
            Y = Y - U @ (U.T @ Y)
        Y, _ = np.linalg.qr(Y)
    return Y


def compress(
    basis: Basis, t: np.ndarray, schedule: Schedule, give_up: float = np.inf
) -> Compression:
    """``B = Phi~^T U`` for an orthonormal ``U`` spanning the dominant normalised columns.

    Block-pivoted Gram-Schmidt: each pass takes the ``compress_block`` columns with the
    largest residual ``||phi~_m - U U^T phi~_m||^2 = 1 - ||B_m||^2``, orthonormalises
    them against ``U`` (twice, for stability) and computes their products with every
    column in one pass over the basis. Then ``Phi~^T Phi~ = B B^T + R^T R`` with ``R`` the
    residual, so ``B B_j`` is ``Phi~^T phi~_j`` up to ``max residual``. Stops when the
    squared residual is below ``exact_residual``, or after ``compress_passes`` passes, or
    when ``compress_bytes`` is reached. The first block is spread evenly over the columns,
    and its pass also computes ``Phi^T t`` and the column norms (the normalisation); when
    the squared residual after it is above ``give_up``, the basis is taken not to
    compress and no further pass is made.
    """
    n, n_basis = basis.shape
    cap = min(n_basis, n, schedule.compress_bytes // (8 * (n + n_basis)))
    k = min(schedule.compress_block, cap)
    pick = np.linspace(0, n_basis - 1, k).astype(np.intp)
    Y = basis.columns(pick)
    norms = np.sqrt(np.einsum("ij,ij->j", Y, Y))
    Y, pick = Y[:, norms > 0] / norms[norms > 0], pick[norms > 0]
    U, _ = np.linalg.qr(Y)
    products, sq_norms = basis.transpose_dot_with_norms(np.column_stack([U, t]))
    scales = np.where(sq_norms > 0, np.sqrt(sq_norms), 1.0)
    B, phi_t = products[:, :-1] / scales[:, None], products[:, -1] / scales
    residual = np.maximum((sq_norms > 0) - np.einsum("ij,ij->i", B, B), 0.0)
    passes = schedule.compress_passes if residual.max() <= give_up else 1
    for _ in range(passes - 1):
        if residual.max() <= schedule.exact_residual or B.shape[1] >= cap:
            break
        size = min(schedule.compress_block, cap - B.shape[1])
        pick = np.argsort(-residual, kind="stable")[:size]
        U_block = _orthonormal_complement(U, basis.columns(pick) / scales[pick])
        B_block = basis.transpose_dot(U_block) / scales[:, None]
        U = np.column_stack([U, U_block])
        B = np.column_stack([B, B_block])
        residual = np.maximum(residual - np.einsum("ij,ij->i", B_block, B_block), 0.0)
    return Compression(B, U, float(residual.max()), phi_t, sq_norms)
