"""Views of a basis that the fits work on: its columns scaled to unit norm
(:class:`ScaledBasis`), its rows weighted (:class:`RowWeightedBasis`), and a kernel basis
whose norms and scaled matrix several fits share (:class:`HeldKernelBasis`).
"""

from __future__ import annotations

import numpy as np

from bayes_rvm.basis import Basis, KernelBasis

__all__ = ["HeldKernelBasis", "RowWeightedBasis", "ScaledBasis"]


class ScaledBasis(Basis):
    """The columns of another basis divided by positive numbers, ``Phi D^-1``.

    Evaluated through the wrapped basis (a kernel basis stays lazy). :func:`bayes_rvm.fit_type2`
    fits on unit-norm columns so that the solvers' thresholds are relative to the data.
    ``base_sq_norms``, the squared column norms of the wrapped basis when the caller has
    them (``fit_type2`` computed them to choose the scales), spares every later pass the
    norms: ``sq_norms`` and ``transpose_dot_with_norms`` (unweighted) return
    ``base_sq_norms / scales^2``, the values a pass would compute.
    """

    def __init__(self, basis: Basis, scales: np.ndarray, base_sq_norms: np.ndarray | None = None):
        self.basis = basis
        self.scales = np.asarray(scales, dtype=np.float64)
        self.n_rows, self.n_columns = basis.shape
        self.n_jobs = basis.n_jobs
        self._sq_norms = None
        if base_sq_norms is not None:
            # scales far below 1 square to 0; the fit then refuses the basis by its range
            with np.errstate(under="ignore", divide="ignore", invalid="ignore"):
                self._sq_norms = base_sq_norms / self.scales**2

    def columns(self, idx) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.intp)
        return self.basis.columns(idx) / self.scales[idx]

    def transpose_dot(self, V: np.ndarray) -> np.ndarray:
        products = self.basis.transpose_dot(V)
        return products / self.scales.reshape((-1,) + (1,) * (products.ndim - 1))

    def toarray(self) -> np.ndarray:
        return self.basis._filled(self.scales)

    def in_memory(self) -> Basis:
        return self.basis.scaled_in_memory(self.scales)

    def transposed(self) -> np.ndarray:
        return self.basis.scaled_transposed(self.scales)

    def sq_norms(self) -> np.ndarray:
        if self._sq_norms is not None:
            return self._sq_norms
        return self.basis.sq_norms() / self.scales**2

    def transpose_dot_with_norms(
        self, V: np.ndarray, weights: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        if weights is None and self._sq_norms is not None:
            return self.transpose_dot(V), self._sq_norms
        products, norms = self.basis.transpose_dot_with_norms(V, weights)
        shape = (-1,) + (1,) * (products.ndim - 1)
        return products / self.scales.reshape(shape), norms / self.scales**2

    def reduce(self, t: np.ndarray, row_scale: np.ndarray | None = None) -> np.ndarray:
        # [D Phi S^-1 | t] = Q R_aug diag(S^-1, 1): the factor's columns scaled alike
        R = self.basis.reduce(t, row_scale)
        R[:, :-1] /= self.scales
        return R


class RowWeightedBasis(Basis):
    """The rows of another basis multiplied by ``sqrt(w_n)``, ``W^(1/2) Phi``.

    A Gaussian likelihood with per-row noise precision ``beta w_n`` is the plain one on
    ``W^(1/2) Phi`` and ``W^(1/2) t`` (:func:`bayes_rvm.fit_type2` with ``sample_weight``).
    """

    def __init__(self, basis: Basis, weights: np.ndarray):
        self.basis = basis
        self.weights = np.asarray(weights, dtype=np.float64)
        self.root = np.sqrt(self.weights)
        self.n_rows, self.n_columns = basis.shape
        self.n_jobs = basis.n_jobs

    def _rows(self, V: np.ndarray) -> np.ndarray:
        V = np.asarray(V, dtype=np.float64)
        return V * self.root.reshape((-1,) + (1,) * (V.ndim - 1))

    def columns(self, idx) -> np.ndarray:
        return self._rows(self.basis.columns(idx))

    def transpose_dot(self, V: np.ndarray) -> np.ndarray:
        return self.basis.transpose_dot(self._rows(V))

    def sq_norms(self) -> np.ndarray:
        return self.basis.transpose_dot_with_norms(np.zeros(self.n_rows), self.weights)[1]

    def transpose_dot_with_norms(
        self, V: np.ndarray, weights: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        combined = self.weights if weights is None else self.weights * weights
        return self.basis.transpose_dot_with_norms(self._rows(V), combined)

    def reduce(self, t: np.ndarray, row_scale: np.ndarray | None = None) -> np.ndarray:
        t = self._row_vector(t, "t")
        if row_scale is not None:
            row_scale = self.root * self._row_vector(row_scale, "row_scale")
        return self.basis.reduce(t, self.root if row_scale is None else row_scale)


class HeldKernelBasis(KernelBasis):
    """A :class:`~bayes_rvm.basis.KernelBasis` whose squared column norms and matrix of
    scaled columns ``Phi / scales`` are computed once and held, for several fits that need them
    (the binary classifiers of a one-vs-rest :class:`~bayes_rvm.RVC`: every fit works
    on the columns divided by their norms, and the classification path reads that
    matrix transposed: what is held, read-only, and shared). The values are those a fit
    of the lazy basis alone reads (its own pass for the norms; :meth:`scaled_transposed`
    of the basis it fits, :meth:`evaluated`: a small basis as its matrix); columns,
    products and :meth:`toarray` are still evaluated lazily. :meth:`restrict` returns a
    :class:`~bayes_rvm.basis.FittedBasis` that holds only the kept centres.

    Parameters
    ----------
    basis : KernelBasis
    sq_norms : ndarray of shape (n_columns,)
        ``basis.sq_norms()``.
    scales : ndarray of shape (n_columns,)
        The column scales the fits will divide by
        (:func:`bayes_rvm.solvers._fit.column_scales` of the basis).
    """

    def __init__(self, basis: KernelBasis, sq_norms: np.ndarray, scales: np.ndarray):
        vars(self).update(vars(basis))
        self._norms = np.array(sq_norms, dtype=np.float64)
        self._scales = np.array(scales, dtype=np.float64)
        # (Phi / scales)^T: what the classification path reads, shared by every class
        self._held_t = basis.evaluated().scaled_transposed(self._scales)
        for values in (self._norms, self._scales, self._held_t):
            values.flags.writeable = False

    def sq_norms(self) -> np.ndarray:
        return self._norms

    def evaluated(self) -> Basis:
        """This basis: it holds its norms and scaled matrix already."""
        return self

    def scaled_array(self, scales: np.ndarray) -> np.ndarray:
        """The held matrix (a read-only view) for the scales it was made with, else a new
        one evaluated as the lazy basis does."""
        if np.array_equal(scales, self._scales):
            return self._held_t.T
        return super().scaled_array(scales)

    def scaled_transposed(self, scales: np.ndarray) -> np.ndarray:
        """The held ``(Phi / scales)^T`` itself (read-only) for the scales it was made
        with, else as the lazy basis makes it."""
        if np.array_equal(scales, self._scales):
            return self._held_t
        return super().scaled_transposed(scales)
