"""Design matrices: the basis functions evaluated at the inputs.

``Phi = [k(X, centres) | 1 | extra columns]`` (Tipping 2001, eq. 1 and Sec. 4.3).
A :class:`KernelBasis` never forms the full ``N x N`` kernel matrix unless asked
(:meth:`~KernelBasis.toarray`): the solvers ask for a few columns at a time or for
products ``Phi^T V`` computed in blocks of centres, so that memory stays ``O(N M)``.
:class:`PrecomputedBasis` is the same layout over a kernel matrix the user computed,
:class:`DenseBasis` wraps any user-given design matrix.

After a fit, :meth:`KernelBasis.restrict` keeps the columns the solver kept: the
:class:`FittedBasis` it returns evaluates the design rows of new inputs over exactly
those basis functions, with the kernel, bias and extra columns as fitted.
"""

from __future__ import annotations

import copy
import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import combinations_with_replacement

import numpy as np
from sklearn.cluster import kmeans_plusplus
from sklearn.utils import check_random_state

from bayes_rvm._blocks import (
    in_threads,
    reduce_blocks,
    square_pairs,
    symmetric_matrix,
    symmetric_pass,
    weighted_sq_norms,
)
from bayes_rvm._validation import call_user, check_design, real_values
from bayes_rvm.kernels import Kernel

__all__ = [
    "Basis",
    "DenseBasis",
    "ExtraColumns",
    "FittedBasis",
    "KernelBasis",
    "PrecomputedBasis",
    "as_basis",
    "choose_centres",
]

#: Bytes one block of kernel columns may take while computing ``Phi^T V``. Small enough
#: for the elementwise passes of the kernel evaluation to stay in cache: a 5000 x 5000
#: RBF kernel took 74 ms in blocks of 200 columns (8 MB), 146 ms in blocks of 800.
BLOCK_BYTES = 8 * 2**20

#: With inputs that are not in memory (a dask array), ``centres=n`` runs k-means++ on
#: ``KMEANS_SAMPLE * n`` rows drawn uniformly at random (all rows if fewer).
KMEANS_SAMPLE = 20

#: :meth:`Basis.reduce` folds at least this many rows of ``[Phi | t]`` into the factor at a
#: time (more when a block of :data:`BLOCK_BYTES` holds more): LAPACK's ``dtpqrt`` ran at
#: 40 GFlop/s with 250 rows of 2,001 columns, 48 GFlop/s with 2,000 (one core).
REDUCE_ROWS = 256


def choose_centres(X, centres, random_state=None) -> np.ndarray | None:
    """The candidate centres of a kernel basis on inputs ``X``.

    Parameters
    ----------
    X : array of shape (n_rows, n_features)
        Training inputs (a NumPy array, or a dask array chunked by rows).
    centres : None, int or array of shape (n_centres, n_features)
        ``None``: every training input (the RVM; returns ``None``). An int: that many
        centres chosen among the inputs by k-means++ (:func:`sklearn.cluster.kmeans_plusplus`,
        on a random sample of :data:`KMEANS_SAMPLE` ``* centres`` rows when ``X`` is a dask
        array with more rows than that). An array: the given centres.
    random_state : None, int or numpy.random.RandomState
        Seed of k-means++ (and of the sample).

    Raises
    ------
    ValueError
        More centres than inputs, centres with another number of features than ``X``, or
        NaN or infinite centres.
    """
    if centres is None:
        return None
    n_rows, n_features = X.shape
    if isinstance(centres, numbers.Integral) and not isinstance(centres, bool | np.bool_):
        count = int(centres)
        if not 1 <= count <= n_rows:
            raise ValueError(
                f"centres={count} must be between 1 and the number of training inputs, {n_rows}"
            )
        rng = check_random_state(random_state)
        pool = X
        if not isinstance(X, np.ndarray):
            size = KMEANS_SAMPLE * count
            rows = np.sort(rng.choice(n_rows, size, replace=False)) if size < n_rows else ...
            pool = np.asarray(X[rows])
        # relative to one row: k-means++ expands squared distances, which loses the inputs'
        # digits far from the origin (timestamps, projected coordinates)
        _, chosen = kmeans_plusplus(pool - pool[0], count, random_state=rng)
        return pool[chosen]
    centres = check_design(centres, "centres")
    if centres.shape[1] != n_features:
        raise ValueError(
            f"expected centres with {n_features} features like X, got shape {centres.shape}"
        )
    return centres


class Basis(ABC):
    """What a solver needs of a design matrix ``Phi`` of shape ``(n_rows, n_columns)``."""

    n_rows: int
    n_columns: int
    #: Threads for work over blocks of its columns (:func:`~bayes_rvm._blocks.in_threads`;
    #: ``None``: one); a basis that wraps another takes the other's.
    n_jobs: int | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_rows, self.n_columns)

    @abstractmethod
    def columns(self, idx) -> np.ndarray:
        """``Phi[:, idx]`` as an ``(n_rows, len(idx))`` array."""

    @abstractmethod
    def transpose_dot(self, V: np.ndarray) -> np.ndarray:
        """``Phi^T V`` for ``V`` of shape ``(n_rows,)`` or ``(n_rows, k)``."""

    @abstractmethod
    def sq_norms(self) -> np.ndarray:
        """``diag(Phi^T Phi)``: the squared norm of every column."""

    def transpose_dot_with_norms(
        self, V: np.ndarray, weights: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(Phi^T V, diag(Phi^T W Phi))`` with ``W = diag(weights)`` (the identity when
        ``None``: the squared column norms); a basis that evaluates its columns computes
        both in one pass."""
        if weights is None:
            return self.transpose_dot(V), self.sq_norms()
        return self.transpose_dot(V), weighted_sq_norms(self.toarray(), weights)

    def scaled_array(self, scales: np.ndarray) -> np.ndarray | None:
        """``Phi / scales`` (each column divided by its scale) when the basis holds that
        matrix for these scales or makes it in the memory of the result alone; ``None``
        otherwise (the caller fills it in blocks of columns)."""
        return None

    def in_memory(self) -> Basis:
        """This basis as a matrix in memory (the sequential classification path holds it):
        a :class:`DenseBasis` of :meth:`toarray` unless the basis has a more compact form."""
        return DenseBasis(self.toarray())

    def transposed(self) -> np.ndarray:
        """``Phi^T`` as a new C-ordered array (the sequential classification path holds it:
        the columns as contiguous rows)."""
        return np.ascontiguousarray(self.toarray().T)

    def scaled_transposed(self, scales: np.ndarray) -> np.ndarray:
        """``(Phi / scales)^T`` as a new C-ordered array."""
        return np.ascontiguousarray(self._filled(scales).T)

    def scaled_in_memory(self, scales: np.ndarray) -> Basis:
        """``Phi / scales`` as a matrix in memory: a :class:`DenseBasis` of
        :meth:`scaled_array` when there is one, else of the columns scaled in blocks."""
        return DenseBasis(self._filled(scales))

    def evaluated(self) -> Basis:
        """The basis a fit uses: a basis that evaluates its columns on demand returns
        its matrix as a :class:`DenseBasis` when that is small enough that every pass
        over it would evaluate it whole anyway (so that the column norms, the scaled
        matrix and the products of one fit evaluate it once); any other basis returns
        itself."""
        return self

    def toarray(self) -> np.ndarray:
        """The whole matrix (``n_rows x n_columns`` floats: beware of large ``n_rows``),
        filled in blocks of at most :data:`BLOCK_BYTES` columns (no second full copy)."""
        return self._filled(None)

    def _filled(self, scales: np.ndarray | None) -> np.ndarray:
        """``Phi`` (``Phi / scales`` with scales: :meth:`scaled_array` when there is one) as
        a new array filled in blocks of at most :data:`BLOCK_BYTES` columns."""
        if scales is not None and (held := self.scaled_array(scales)) is not None:
            return held
        out = np.empty(self.shape)
        step = max(1, BLOCK_BYTES // (8 * max(1, self.n_rows)))
        for start in range(0, self.n_columns, step):
            stop = min(start + step, self.n_columns)
            block = self.columns(np.arange(start, stop))
            out[:, start:stop] = block if scales is None else block / scales[start:stop]
        return out

    def reduce(self, t: np.ndarray, row_scale: np.ndarray | None = None) -> np.ndarray:
        """The triangular factor of the design matrix beside the target.

        Returns the upper-triangular ``(n + 1) x (n + 1)`` matrix ``R_aug = [[R, z], [0,
        r]]`` (``n = n_columns``) of a QR factorisation ``[D Phi | t] = Q R_aug``, with
        ``D = diag(row_scale)`` (the identity when ``None``), computed in blocks of rows
        (:func:`~bayes_rvm._blocks.fold_rows`; ``Q`` is never formed). Then ``R^T R =
        Phi^T D^2 Phi``, ``R^T z = Phi^T D t`` and ``z^T z + r^2 = t^T t``: everything a Gaussian
        likelihood needs of the data besides the number of rows (Tipping 2001, eq. 12-13,
        36 and 46). The design ``[R; 0]`` with target ``[z; r]`` has ``n + 1`` rows and the
        same products; it has the same column norms as ``Phi``. No Gram matrix is
        squared, so rank-deficient designs lose no digits.

        Parameters
        ----------
        t : ndarray of shape (n_rows,)
            The target (not multiplied by ``row_scale``).
        row_scale : ndarray of shape (n_rows,), optional
            Factors of the rows of ``Phi``.

        Raises
        ------
        ValueError
            If ``t`` or ``row_scale`` has not one entry per row.
        """
        t = self._row_vector(t, "t")
        row_scale = None if row_scale is None else self._row_vector(row_scale, "row_scale")
        return reduce_blocks(self._augmented_blocks(t, row_scale), self.n_columns + 1)

    def _row_vector(self, values, name: str) -> np.ndarray:
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (self.n_rows,):
            raise ValueError(
                f"expected {name} of shape ({self.n_rows},), one entry per row, got shape "
                f"{values.shape}"
            )
        return values

    def _reduce_step(self) -> int:
        """Rows per block of :meth:`reduce`."""
        return max(REDUCE_ROWS, BLOCK_BYTES // (8 * (self.n_columns + 1)))

    def _augmented_blocks(self, t: np.ndarray, row_scale: np.ndarray | None):
        """Blocks of rows of ``[D Phi | t]``, in order (Fortran order, ready to fold)."""
        Phi = self.toarray()
        step = self._reduce_step()
        for start in range(0, self.n_rows, step):
            rows = slice(start, start + step)
            block = np.asfortranarray(np.column_stack([Phi[rows], t[rows]]))
            if row_scale is not None:
                block[:, :-1] *= row_scale[rows, None]
            yield block

    def cross(self, idx) -> np.ndarray:
        """``Phi^T Phi[:, idx]``, shape ``(n_columns, len(idx))``."""
        return self.transpose_dot(self.columns(idx))


class DenseBasis(Basis):
    """A design matrix given as an array (precomputed kernel or any user basis)."""

    def __init__(self, Phi):
        self.Phi = check_design(Phi)
        self.n_rows, self.n_columns = self.Phi.shape
        self.column_names = [f"phi_{j}" for j in range(self.n_columns)]

    def columns(self, idx) -> np.ndarray:
        return self.Phi[:, np.asarray(idx, dtype=np.intp)]

    def transpose_dot(self, V: np.ndarray) -> np.ndarray:
        return self.Phi.T @ V

    def sq_norms(self) -> np.ndarray:
        return weighted_sq_norms(self.Phi, None)

    def toarray(self) -> np.ndarray:
        return self.Phi

    def scaled_array(self, scales: np.ndarray) -> np.ndarray:
        return self.Phi / scales

    def in_memory(self) -> Basis:
        return self


class ExtraColumns:
    """Extra basis functions appended after the kernel columns (Tipping 2001, Sec. 4.3).

    Parameters
    ----------
    terms : sequence
        Each item is ``"linear"`` (the raw inputs ``x_k``), ``"quadratic"`` (all products
        ``x_k x_l`` with ``k <= l``), or a pair ``(name, f)`` with ``f(X)`` returning an
        array of shape ``(n,)`` or ``(n, p)``.
    """

    def __init__(self, terms: Sequence = ()):
        if isinstance(terms, str):
            terms = [terms]
        if isinstance(terms, Mapping) or not isinstance(terms, Iterable):
            raise TypeError(
                "extra_columns must be a sequence of 'linear', 'quadratic' or (name, function) "
                f"pairs; got {terms!r} ({type(terms).__name__})"
            )
        for term in terms:
            if isinstance(term, str):
                if term not in ("linear", "quadratic"):
                    raise ValueError(
                        f"unknown extra column {term!r}; expected 'linear', 'quadratic' or a "
                        "pair (name, function)"
                    )
            elif not (
                isinstance(term, tuple)
                and len(term) == 2
                and isinstance(term[0], str)
                and callable(term[1])
            ):
                raise TypeError(
                    f"an extra column must be a name or (name, function); got {term!r}"
                )
        self.terms = list(terms)

    def __len__(self) -> int:
        return len(self.terms)

    def evaluate(self, X: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """Columns and their names for inputs ``X``."""
        blocks: list[np.ndarray] = []
        names: list[str] = []
        for term in self.terms:
            if term == "linear":
                blocks.append(X)
                names += [f"x{k + 1}" for k in range(X.shape[1])]
            elif term == "quadratic":
                pairs = list(combinations_with_replacement(range(X.shape[1]), 2))
                blocks.append(np.column_stack([X[:, k] * X[:, l] for k, l in pairs]))
                names += [f"x{k + 1}*x{l + 1}" for k, l in pairs]
            else:
                name, function = term
                what = f"extra column {name!r}"
                values = real_values(call_user(function, what, X), what)
                if values.ndim not in (1, 2) or values.shape[0] != X.shape[0]:
                    raise ValueError(
                        f"extra column {name!r} must return shape ({X.shape[0]},) or "
                        f"({X.shape[0]}, p), one row per input; got shape {values.shape}"
                    )
                values = values.reshape(X.shape[0], -1)
                if not np.all(np.isfinite(values)):
                    raise ValueError(f"extra column {name!r} returned NaN or infinite values")
                blocks.append(values)
                names += (
                    [name]
                    if values.shape[1] == 1
                    else [f"{name}[{j}]" for j in range(values.shape[1])]
                )
        taken = {name for name in names if names.count(name) > 1} | ({"bias"} & set(names))
        if taken:
            raise ValueError(
                f"extra column names must be unique and differ from 'bias'; {sorted(taken)} "
                "would name two basis functions (note that 'linear' names the inputs "
                "'x1', 'x2', ...)"
            )
        if not blocks:
            return np.empty((X.shape[0], 0)), []
        return np.column_stack(blocks), names


class KernelBasis(Basis):
    """``Phi = [k(X, centres) | 1 | extra(X)]``, evaluated lazily.

    Parameters
    ----------
    X : array of shape (n_rows, n_features)
        Inputs at which the basis functions are evaluated.
    kernel : Kernel or callable
    centres : array of shape (n_centres, n_features), optional
        Kernel centres; the training inputs by default (the RVM). May be empty
        (``n_centres = 0``): then only the bias and the extra columns remain.
    bias : bool
        Append a constant column.
    extra : ExtraColumns or sequence, optional
    n_jobs : int, optional
        Threads for a pass over the kernel (``transpose_dot``, ``sq_norms``): its
        blocks are evaluated and multiplied concurrently (numpy releases the GIL in both),
        each thread with one BLAS thread. ``None``: one; ``-1``: every core (joblib's
        convention). The results are those of one thread to the last bit: each block of
        columns writes rows of its own, and the square blocks of a symmetric ``k(X, X)``
        are summed in :data:`~bayes_rvm._blocks.PASS_GROUPS` fixed groups (at most that
        many threads).
    """

    def __init__(
        self,
        X: np.ndarray,
        kernel: Kernel | Callable,
        centres: np.ndarray | None = None,
        bias: bool = True,
        extra: ExtraColumns | Sequence = (),
        n_jobs: int | None = None,
    ):
        self.X = check_design(X, "X")
        self.n_jobs = n_jobs
        self.centres = self.X if centres is None else check_design(centres, "centres", min_rows=0)
        #: Whether the candidate centres are the inputs themselves (the RVM).
        self.centres_are_inputs = centres is None
        self.kernel = kernel
        self.bias = bool(bias)
        self.extra = extra if isinstance(extra, ExtraColumns) else ExtraColumns(extra)
        self._extra_values, extra_names = self.extra.evaluate(self.X)
        self.n_rows = self.X.shape[0]
        self.n_centres = self.centres.shape[0]
        self.n_columns = self.n_centres + int(self.bias) + self._extra_values.shape[1]
        self.column_names = (
            [f"k{j}" for j in range(self.n_centres)]
            + (["bias"] if self.bias else [])
            + extra_names
        )
        self._block = max(1, BLOCK_BYTES // (8 * self.n_rows))
        self._square = max(1, math.isqrt(BLOCK_BYTES // 8))  # side of a symmetric block
        # the centres are the inputs (given or not): k(X, X) is square
        self._square_matrix = centres is None or np.array_equal(self.centres, self.X)

    def with_kernel(self, kernel: Kernel | Callable) -> KernelBasis:
        """The same basis (inputs, centres, bias, extra columns) with another kernel.

        The extra columns are not re-evaluated; used when kernel parameters such as the
        input scales change during a fit (Tipping 2001, App. C).
        """
        other = copy.copy(self)
        other.kernel = kernel
        return other

    def _kernel(self, X: np.ndarray, centres: np.ndarray) -> np.ndarray:
        return _kernel_values(self.kernel, X, centres)

    def _split(self, idx) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions in ``idx`` of kernel, bias and extra columns, and their local indices."""
        idx = np.asarray(idx, dtype=np.intp).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= self.n_columns):
            raise IndexError(f"column index out of range for {self.n_columns} columns")
        return idx, idx < self.n_centres, idx >= self.n_centres + int(self.bias)

    def evaluate(self, X, idx) -> np.ndarray:
        """Rows of the design matrix for new inputs ``X``, columns ``idx`` only."""
        return _design_rows(X, self.kernel, self.centres, self.bias, self.extra, self._split(idx))

    @classmethod
    def _at_inputs(
        cls, X, kernel, bias: bool, extra: ExtraColumns, centres: np.ndarray | None = None
    ) -> KernelBasis:
        """A basis of this kind evaluated at the inputs ``X``, centred on ``centres``
        (``X`` itself when ``None``)."""
        return KernelBasis(X, kernel, centres=centres, bias=bias, extra=extra)

    def restrict(self, active) -> FittedBasis:
        """The basis functions in columns ``active`` (a fit's active set), as a
        :class:`FittedBasis` that evaluates them at new inputs."""
        return FittedBasis(self, active)

    def columns(self, idx) -> np.ndarray:
        idx, is_kernel, is_extra = self._split(idx)
        if idx.size and is_kernel.all():  # the kernel's block as it comes, not a copy of it
            return self._kernel(self.X, self.centres[idx])
        out = np.empty((self.n_rows, idx.size))
        if is_kernel.any():
            out[:, is_kernel] = self._kernel(self.X, self.centres[idx[is_kernel]])
        if self.bias:
            out[:, idx == self.n_centres] = 1.0
        if is_extra.any():
            out[:, is_extra] = self._extra_values[
                :, idx[is_extra] - self.n_centres - int(self.bias)
            ]
        return out

    def _kernel_blocks(self):
        for start in range(0, self.n_centres, self._block):
            stop = min(start + self._block, self.n_centres)
            yield start, stop, self._kernel(self.X, self.centres[start:stop])

    @property
    def _symmetric_square(self) -> bool:
        """Every input a centre and a kernel that says it is symmetric: ``k(X, X)`` is a
        symmetric matrix, whose blocks above the diagonal give those below."""
        return self._square_matrix and getattr(self.kernel, "symmetric", False) is True

    def _pass(self, V: np.ndarray | None, with_norms: bool, weights=None) -> tuple:
        """One pass over the kernel blocks: ``Phi^T V`` (``None`` without ``V``) and the
        (``weights``-weighted) squared column norms (``None`` unless ``with_norms``)."""
        product = None if V is None else np.empty((self.n_columns, *V.shape[1:]))
        norms = np.empty(self.n_columns) if with_norms else None
        if self._symmetric_square:
            # each pair of inputs evaluated once, in fixed groups of blocks: any n_jobs
            pairs = list(square_pairs(self.n_centres, self._square))
            outs = (
                None if product is None else product[: self.n_centres],
                None if norms is None else norms[: self.n_centres],
            )
            symmetric_pass(self._square_blocks, pairs, V, weights, outs, self.n_jobs)
        else:

            def column_block(start: int) -> None:
                stop = min(start + self._block, self.n_centres)
                K = self._kernel(self.X, self.centres[start:stop])
                if product is not None:
                    product[start:stop] = K.T @ V
                if norms is not None:
                    norms[start:stop] = weighted_sq_norms(K, weights)

            # each block writes rows of its own: the same results with any number of threads
            in_threads(column_block, list(range(0, self.n_centres, self._block)), self.n_jobs)
        tail = self.n_centres
        if self.bias:
            if product is not None and V is not None:
                product[tail] = V.sum(axis=0)
            if norms is not None:
                norms[tail] = self.n_rows if weights is None else np.sum(weights)
            tail += 1
        if product is not None:
            product[tail:] = self._extra_values.T @ V
        if norms is not None:
            norms[tail:] = weighted_sq_norms(self._extra_values, weights)
        return product, norms

    def _square_blocks(self, pairs: Iterable[tuple[slice, slice]]):
        """``(I, J, k(X_I, X_J))`` for the square blocks ``pairs`` of ``k(X, X)`` (from
        :func:`~bayes_rvm._blocks.square_pairs`), each evaluated as it is reached."""
        for left, right in pairs:
            yield left, right, self._kernel(self.X[left], self.X[right])

    def _augmented_blocks(self, t: np.ndarray, row_scale: np.ndarray | None):
        """Rows of ``[D Phi | t]`` evaluated a block at a time: memory ``O(rows n)``."""
        step = self._reduce_step()
        tail = self.n_centres + int(self.bias)
        for start in range(0, self.n_rows, step):
            rows = slice(start, min(start + step, self.n_rows))
            block = np.empty((rows.stop - rows.start, self.n_columns + 1), order="F")
            block[:, : self.n_centres] = self._kernel(self.X[rows], self.centres)
            if self.bias:
                block[:, self.n_centres] = 1.0
            block[:, tail:-1] = self._extra_values[rows]
            if row_scale is not None:
                block[:, :-1] *= row_scale[rows, None]
            block[:, -1] = t[rows]
            yield block

    def toarray(self) -> np.ndarray:
        """The whole matrix, filled in blocks of kernel columns (no second full copy)."""
        out = np.empty(self.shape)
        for start, stop, K in self._kernel_blocks():
            out[:, start:stop] = K
        tail = self.n_centres
        if self.bias:
            out[:, tail] = 1.0
            tail += 1
        out[:, tail:] = self._extra_values
        return out

    def evaluated(self) -> Basis:
        """A :class:`DenseBasis` of the matrix when it takes at most :data:`BLOCK_BYTES`
        (a pass evaluates it as one block), else this basis."""
        if 8 * self.n_rows * self.n_columns > BLOCK_BYTES:
            return self
        return DenseBasis(self.toarray())

    def scaled_array(self, scales: np.ndarray) -> np.ndarray:
        """:meth:`toarray`, a new array, divided by ``scales`` in place: its kernel
        blocks are written once, not copied through the columns of a wrapper."""
        out = self.toarray()
        out /= scales
        return out

    def scaled_transposed(self, scales: np.ndarray) -> np.ndarray:
        """With every input a centre and a symmetric kernel, the kernel matrix written
        straight into the first rows of the result and scaled there (row ``j`` of ``K`` is
        column ``j``): no second matrix."""
        if not self._symmetric_square:
            return super().scaled_transposed(scales)
        n = self.n_centres
        out = np.empty((self.n_columns, n))
        symmetric_matrix(n, self._square_blocks(square_pairs(n, self._square)), out[:n])
        out[:n] /= scales[:n, None]
        out[n:] = self.columns(np.arange(n, self.n_columns)).T / scales[n:, None]
        return out

    def transpose_dot(self, V: np.ndarray) -> np.ndarray:
        return self._pass(np.asarray(V, dtype=np.float64), False)[0]

    def transpose_dot_with_norms(
        self, V: np.ndarray, weights: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        return self._pass(np.asarray(V, dtype=np.float64), True, weights)

    def sq_norms(self) -> np.ndarray:
        return self._pass(None, True)[1]


def _kernel_values(kernel, X: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """``k(X, centres)``, checked: the one place every kernel column is evaluated."""
    with np.errstate(over="ignore", invalid="ignore"):
        K = real_values(kernel(X, centres), f"kernel {kernel!r}")
    if K.shape != (X.shape[0], centres.shape[0]):
        raise ValueError(
            f"kernel returned shape {K.shape}, expected {(X.shape[0], centres.shape[0])}"
        )
    if not np.all(np.isfinite(K)):
        largest = max(float(np.max(np.abs(X), initial=0.0)), float(np.max(np.abs(centres))))
        raise ValueError(
            f"kernel {kernel!r} overflowed: its values at the inputs are not finite "
            f"(largest |x| is {largest:.3g}); rescale X (e.g. StandardScaler) or choose "
            "smaller kernel parameters"
        )
    return K


def _design_rows(X, kernel, centres, bias: bool, extra: ExtraColumns, split) -> np.ndarray:
    """Rows ``[k(X, centres) | 1 | extra(X)]`` at inputs ``X``, over the columns that
    ``split`` (from :meth:`KernelBasis._split`) selects, in its order."""
    X = check_design(X, "X")
    idx, is_kernel, is_extra = split
    n_centres = centres.shape[0]
    out = np.empty((X.shape[0], idx.size))
    if is_kernel.any():
        out[:, is_kernel] = _kernel_values(kernel, X, centres[idx[is_kernel]])
    if bias:
        out[:, idx == n_centres] = 1.0
    if is_extra.any():
        values, _ = extra.evaluate(X)
        out[:, is_extra] = values[:, idx[is_extra] - n_centres - int(bias)]
    return out


class _GramColumns(Kernel):
    """The basis functions of a precomputed kernel matrix: the value of centre ``j`` at a
    row of kernel values is that row's entry ``j`` (the centres hold column numbers)."""

    def __call__(self, X, Y=None) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        columns = np.arange(X.shape[1]) if Y is None else np.asarray(Y)[:, 0].astype(np.intp)
        return X[:, columns]


class PrecomputedBasis(KernelBasis):
    """``Phi = [K | 1]`` for a kernel matrix ``K`` computed by the user.

    Column ``j`` of ``K`` is the basis function centred on training input ``j``; new rows
    ``K_new = k(X_new, X_train)`` give the design rows of new inputs
    (:meth:`~KernelBasis.evaluate`, :meth:`FittedBasis.design`). No extra columns: they
    need the inputs, which a kernel matrix does not carry.

    Parameters
    ----------
    K : array of shape (n_rows, n_centres)
        ``k(x_n, x_j)`` for the training inputs ``x_n`` and the centres ``x_j`` (square
        for the RVM: the training inputs are the centres).
    bias : bool
        Append a constant column.
    """

    def __init__(self, K, bias: bool = True):
        K = check_design(K, "K")
        centres = np.arange(K.shape[1], dtype=np.float64)[:, None]
        super().__init__(K, _GramColumns(), centres=centres, bias=bias)

    @classmethod
    def _at_inputs(
        cls, X, kernel, bias: bool, extra: ExtraColumns, centres: np.ndarray | None = None
    ) -> PrecomputedBasis:
        return cls(X, bias=bias)


class FittedBasis:
    """The basis functions a fit kept, evaluated at new inputs.

    Made by :meth:`KernelBasis.restrict` from the training basis and the fit's active
    columns. It holds what predictions need and nothing of the training set beyond the
    kept centres: the fitted kernel (learned input scales included), the kept centres,
    whether the bias and which extra columns are kept.

    Attributes
    ----------
    active : ndarray of int
        The kept columns of the training basis, in the fit's order.
    column_names : list of str
        Name of every kept column: ``"k12"`` (the kernel centred on training input 12),
        ``"bias"``, or the name of an extra column.
    relevance_indices : ndarray of int
        Training inputs that are kept centres (the relevance vectors), in the order of
        :attr:`active`.
    is_kernel, is_bias, is_extra : ndarray of bool
        Kind of every kept column.
    extra_names : list of str
        Names of all extra columns of the training basis, kept or not.
    kernel : Kernel or callable
    centres : ndarray of shape (n_centres, n_features) or None
        Every candidate centre of the training basis, kept or not; ``None`` when the
        candidates were the training inputs themselves (the RVM).
    relevance_vectors : ndarray of shape (n_relevance, n_features)
        The kept centres, in the order of :attr:`active`.
    n_train : int
        Rows of the training basis.
    """

    def __init__(self, basis: KernelBasis, active):
        idx, self.is_kernel, self.is_extra = basis._split(active)
        self.active = idx
        self.is_bias = ~self.is_kernel & ~self.is_extra
        self.column_names = [basis.column_names[j] for j in idx]
        self.extra_names = basis.column_names[basis.n_centres + int(basis.bias) :]
        self.relevance_indices = idx[self.is_kernel]
        self.kernel = basis.kernel
        self.n_train = basis.n_rows
        self._kind = type(basis)
        self._bias = basis.bias
        self._extra = basis.extra
        self.centres = None if basis.centres_are_inputs else basis.centres
        self.relevance_vectors = basis.centres[self.relevance_indices]
        # column of every kept function in [k(., kept centres) | 1 | extra]
        n_kept = self.relevance_indices.size
        local = idx.copy()
        local[self.is_kernel] = np.arange(n_kept)
        local[~self.is_kernel] -= basis.n_centres - n_kept
        self._split = (local, self.is_kernel, self.is_extra)

    @property
    def n_columns(self) -> int:
        return self.active.size

    def design(self, X) -> np.ndarray:
        """Design rows of inputs ``X`` over the kept basis functions, in the order of
        :attr:`active` (the columns the fit's weights belong to)."""
        return _design_rows(
            X, self.kernel, self.relevance_vectors, self._bias, self._extra, self._split
        )

    def design_blocks(self, X):
        """:meth:`design` in blocks of rows, in order: each block of at most
        :data:`BLOCK_BYTES` (and at least one row), so that predictions at any number of
        inputs take bounded memory."""
        X = check_design(X, "X", min_rows=0)
        step = max(1, BLOCK_BYTES // (8 * max(1, self.n_columns)))
        for start in range(0, max(1, X.shape[0]), step):
            yield self.design(X[start : start + step])

    def training_basis(self, X) -> KernelBasis:
        """The whole training basis (every column, kept or not) at the fitted kernel,
        rebuilt from the training inputs ``X`` and the candidate centres.

        Raises
        ------
        ValueError
            If ``X`` does not have the training set's number of rows.
        """
        full = self._kind._at_inputs(X, self.kernel, self._bias, self._extra, self.centres)
        if full.n_rows != self.n_train:
            raise ValueError(
                f"expected the {self.n_train} training inputs the basis was fitted on, "
                f"got {full.n_rows}"
            )
        return full


def as_basis(Phi) -> Basis:
    """A :class:`Basis` as it is, or an array wrapped in :class:`DenseBasis`."""
    return Phi if isinstance(Phi, Basis) else DenseBasis(Phi)
