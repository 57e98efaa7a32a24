"""Kernel bases over inputs held by a dask cluster (``pip install bayes_rvm[dask]``).

:class:`DaskKernelBasis` is a :class:`~bayes_rvm.basis.KernelBasis` whose inputs are a
dask array chunked by rows. Every pass over the basis the solvers ask for
(``Phi^T V`` and the column norms, Tipping & Faul 2003, eq. 19) is one task per row chunk,
run where the chunk lives: the task evaluates the kernel between its rows and the
centres in blocks of :data:`~bayes_rvm.basis.BLOCK_BYTES` and returns its partial
``(n_columns, k)`` product; the client sums the partials. Column fetches ``Phi[:, idx]``
are one task per chunk as well, and only those columns travel to the client. The
reduction of a Gaussian fit (:meth:`DaskKernelBasis.reduce`) is one task per chunk and
a tree of folds, and only ``(n_columns + 1)^2`` triangular factors travel. The
inputs never leave the workers; the client holds the centres, the target and the
vectors the solver multiplies with.

With a :class:`distributed.Client` active the tasks run on its cluster; otherwise on
dask's default local scheduler. :class:`~bayes_rvm.RVR` and :class:`~bayes_rvm.RVC`
build this basis when ``fit`` is given a dask array. ``import bayes_rvm`` does not
import dask; this module does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise

import dask
import dask.array as da
import numpy as np

from bayes_rvm._blocks import fold_rows
from bayes_rvm._validation import check_design
from bayes_rvm.basis import Basis, ExtraColumns, KernelBasis
from bayes_rvm.kernels import Kernel

__all__ = ["DaskKernelBasis", "check_dask_inputs"]


def check_dask_inputs(X) -> da.Array:
    """Dask training inputs as a float64 array chunked by rows only, kept in memory
    (``persist``) where they were computed.

    Raises
    ------
    TypeError
        Non-numeric inputs.
    ValueError
        Unknown chunk sizes, not 2-dimensional, no rows or no columns, or NaN or infinite
        values.
    """
    X = da.asarray(X)
    if any(np.isnan(size) for size in X.shape):
        raise ValueError(
            f"expected a dask array X of known shape, got shape {X.shape}: its chunk sizes "
            "are unknown (as after boolean indexing or DataFrame.to_dask_array()); call "
            "X.compute_chunk_sizes() (or to_dask_array(lengths=True)) before fit"
        )
    if X.dtype.kind not in "biuf":
        raise TypeError(f"expected a numeric dask array for X, got dtype {X.dtype}")
    if X.ndim != 2:
        raise ValueError(f"expected X with 2 dimensions, got {X.ndim}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"expected a non-empty X, got shape {X.shape}")
    X = X.astype(np.float64)
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    X = X.persist()
    if not bool(da.isfinite(X).all().compute()):
        raise ValueError("X contains NaN or infinite values")
    return X


def _chunk_basis(rows: np.ndarray, kernel, centres, bias: bool, extra) -> KernelBasis:
    return KernelBasis(rows, kernel, centres=centres, bias=bias, extra=extra)


def _chunk_pass(rows, kernel, centres, bias, extra, V, with_norms, weights) -> tuple:
    """One row chunk's share of ``Phi^T V`` and of the (weighted) column norms."""
    return _chunk_basis(rows, kernel, centres, bias, extra)._pass(V, with_norms, weights)


def _chunk_columns(rows, kernel, centres, bias, extra, idx) -> np.ndarray:
    return _chunk_basis(rows, kernel, centres, bias, extra).columns(idx)


def _chunk_reduce(rows, kernel, centres, bias, extra, t, row_scale) -> np.ndarray:
    """One row chunk's triangular factor of ``[D Phi | t]``."""
    return _chunk_basis(rows, kernel, centres, bias, extra).reduce(t, row_scale)


def _fold_factors(upper: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """The factor of two chunks' rows from the factors of each."""
    return fold_rows(upper.copy(order="F"), lower.copy(order="F"), triangular=True)


def _add(parts: list[tuple]) -> tuple:
    """Sum the chunks' ``(product, norms)`` in chunk order (either may be ``None``)."""
    return tuple(
        None if part[0] is None else np.sum(np.stack(part), axis=0)
        for part in zip(*parts, strict=True)
    )


class DaskKernelBasis(KernelBasis):
    """``Phi = [k(X, centres) | 1 | extra(X)]`` over a dask array ``X`` chunked by rows.

    Parameters
    ----------
    X : dask array of shape (n_rows, n_features)
        Training inputs, chunked by rows (see :func:`check_dask_inputs`).
    kernel : Kernel or callable
    centres : array of shape (n_centres, n_features), optional
        Candidate centres, in memory; every training input when ``None`` (gathered to
        the client: ``n_rows x n_features`` floats).
    bias : bool
    extra : ExtraColumns or sequence, optional
        Extra columns, evaluated on the workers at every pass.
    """

    def __init__(
        self,
        X,
        kernel: Kernel | Callable,
        centres: np.ndarray | None = None,
        bias: bool = True,
        extra: ExtraColumns | Sequence = (),
    ):
        self.X = check_dask_inputs(X)
        self.centres_are_inputs = centres is None
        self.centres = np.asarray(self.X) if centres is None else check_design(centres, "centres")
        self.kernel = kernel
        self.bias = bool(bias)
        self.extra = extra if isinstance(extra, ExtraColumns) else ExtraColumns(extra)
        self.n_rows = int(self.X.shape[0])
        self.n_centres = self.centres.shape[0]
        _, extra_names = self.extra.evaluate(np.asarray(self.X[:1]))
        self.n_columns = self.n_centres + int(self.bias) + len(extra_names)
        self.column_names = (
            [f"k{j}" for j in range(self.n_centres)]
            + (["bias"] if self.bias else [])
            + extra_names
        )
        self._chunks = list(self.X.to_delayed().ravel())
        bounds = np.cumsum((0, *self.X.chunks[0]))
        self._rows = [slice(a, b) for a, b in pairwise(bounds)]

    def _setting(self) -> tuple:
        """What every chunk task needs besides its rows, as one graph node each."""
        centres = dask.delayed(self.centres, pure=True)
        return self.kernel, centres, self.bias, self.extra

    def columns(self, idx) -> np.ndarray:
        idx, _, _ = self._split(idx)
        if not idx.size:  # no task per chunk for no column
            return np.empty((self.n_rows, 0))
        setting = self._setting()
        tasks = [dask.delayed(_chunk_columns)(rows, *setting, idx) for rows in self._chunks]
        return np.concatenate(dask.compute(*tasks), axis=0)

    def _pass(self, V: np.ndarray | None, with_norms: bool, weights=None) -> tuple:
        setting = self._setting()
        tasks = [
            dask.delayed(_chunk_pass)(
                rows,
                *setting,
                None if V is None else V[span],
                with_norms,
                None if weights is None else np.asarray(weights)[span],
            )
            for rows, span in zip(self._chunks, self._rows, strict=True)
        ]
        return dask.compute(dask.delayed(_add)(tasks))[0]

    def reduce(self, t: np.ndarray, row_scale: np.ndarray | None = None) -> np.ndarray:
        """:meth:`~bayes_rvm.basis.Basis.reduce` on the cluster: one task per row chunk
        factors its rows of ``[D Phi | t]``, and the factors are folded pairwise in a tree
        (:func:`~bayes_rvm._blocks.fold_rows`). Only ``(n + 1) x (n + 1)`` factors travel;
        ``t`` and ``row_scale`` go to the workers a chunk's share each."""
        t = self._row_vector(t, "t")
        row_scale = None if row_scale is None else self._row_vector(row_scale, "row_scale")
        setting = self._setting()
        factors = [
            dask.delayed(_chunk_reduce)(
                rows, *setting, t[span], None if row_scale is None else row_scale[span]
            )
            for rows, span in zip(self._chunks, self._rows, strict=True)
        ]
        while len(factors) > 1:
            pairs = [
                dask.delayed(_fold_factors)(upper, lower)
                for upper, lower in zip(factors[::2], factors[1::2], strict=False)
            ]
            factors = pairs + factors[len(pairs) * 2 :]
        return dask.compute(factors[0])[0]

    def toarray(self) -> np.ndarray:
        """The whole matrix gathered to the client (``n_rows x n_columns`` floats)."""
        return self.columns(np.arange(self.n_columns))

    def scaled_in_memory(self, scales: np.ndarray) -> Basis:
        """The scaled matrix gathered to the client, as a :class:`DenseBasis` (a basis
        the classification path holds in memory): the inputs are not in memory, so not
        :class:`KernelBasis`' symmetric kernel matrix."""
        return Basis.scaled_in_memory(self, scales)
