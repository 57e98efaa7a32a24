"""Kernels: callables ``k(X, Y) -> Gram matrix`` with a ``diag(X)`` method.

Any callable ``k(X, Y)`` returning an ``(n_X, n_Y)`` array is accepted wherever a
kernel is; :func:`get_kernel` wraps it in :class:`CallableKernel`. The RVM does not
need Mercer kernels: the Gram columns are just basis functions (Tipping 2001, Sec. 2).
"""

from __future__ import annotations

import inspect
import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np

from bayes_rvm._validation import call_user, check_real, lookup, real_values

__all__ = [
    "RBF",
    "CallableKernel",
    "Kernel",
    "Laplacian",
    "Linear",
    "LinearSpline",
    "Polynomial",
    "check_gamma",
    "check_kernel",
    "get_kernel",
]


def _as_inputs(X, Y=None) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64)
    Y = X if Y is None else np.asarray(Y, dtype=np.float64)
    if X.ndim != 2 or Y.ndim != 2:
        raise ValueError(f"expected 2-D inputs, got shapes {X.shape} and {Y.shape}")
    if X.shape[1] != Y.shape[1]:
        raise ValueError(
            f"expected inputs with the same number of features, got {X.shape[1]} and {Y.shape[1]}"
        )
    return X, Y


class Kernel(ABC):
    """Base class: ``kernel(X, Y)`` is the Gram matrix, ``kernel.diag(X)`` its diagonal."""

    #: Whether ``k(x, y) = k(y, x)`` for all inputs. A basis centred on its own inputs is
    #: then a symmetric matrix, and a pass over it evaluates each pair of inputs once
    #: (:class:`~bayes_rvm.basis.KernelBasis`). The kernels of this module are. A wrapped
    #: function or a direct subclass of :class:`Kernel` is taken not to be unless it sets
    #: this to ``True``; a subclass of a kernel here inherits ``True``, and must set
    #: ``False`` if its ``k(x, y)`` is not ``k(y, x)``.
    symmetric: bool = False

    @abstractmethod
    def __call__(self, X, Y=None) -> np.ndarray: ...

    def diag(self, X) -> np.ndarray:
        """``k(x_n, x_n)`` for every row; subclasses override with a cheap formula."""
        X, _ = _as_inputs(X)
        return np.array([self(x[None, :], x[None, :])[0, 0] for x in X])

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({params})"


def _check_scales(gamma, name: str = "gamma") -> float | np.ndarray:
    if gamma is None or isinstance(gamma, bool | np.bool_):
        raise TypeError(f"{name} must be a positive number or array, got {gamma!r}")
    if isinstance(gamma, numbers.Real):
        value = float(gamma)
        if not np.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be finite and > 0, got {value}")
        return value
    scales = np.asarray(gamma)
    if scales.dtype.kind not in "iuf":
        raise TypeError(
            f"{name} must be a positive real number or an array of them, got {gamma!r} "
            f"(dtype {scales.dtype})"
        )
    scales = scales.astype(np.float64)
    if scales.ndim != 1 or scales.size == 0:
        raise ValueError(
            f"expected {name} to be a number or a 1-D array, got shape {scales.shape}"
        )
    if not np.all(np.isfinite(scales)) or np.any(scales <= 0):
        raise ValueError(f"{name} must be finite and > 0 in every dimension, got {scales}")
    return scales


def _per_feature(scales: float | np.ndarray, n_features: int) -> np.ndarray:
    """``scales`` (one number, or one per input) as one per input of ``n_features``."""
    if np.ndim(scales) and np.shape(scales)[0] != n_features:
        raise ValueError(
            f"expected {np.shape(scales)[0]} features (one per scale), got {n_features}"
        )
    return np.broadcast_to(scales, (n_features,))


class RBF(Kernel):
    """Gaussian kernel ``exp(-sum_k eta_k (x_k - y_k)^2)`` (Tipping 2001, eq. 30 and 56).

    Parameters
    ----------
    gamma : float or array of shape (n_features,)
        Input scale ``eta = r^-2``: one for all inputs, or one per input dimension.
    """

    symmetric = True

    def __init__(self, gamma: float | np.ndarray = 1.0):
        self.gamma = _check_scales(gamma)

    def _scaled(self, X, Y):
        """``(X - c) sqrt(eta)`` and ``(Y - c) sqrt(eta)`` for the shift ``c = Y[0]``.

        The expansion ``2 x.y - |x|^2 - |y|^2`` cancels in proportion to ``|x|^2``, so
        far from the origin (timestamps, projected coordinates) it loses the distance;
        relative to a row of ``Y`` it loses only what the distances themselves carry.
        The subtraction is exact for inputs within a factor of two of each other, so an
        offset that the inputs hold exactly leaves the shifted values (and the Gram
        matrix) unchanged to the last digit.
        """
        X, Y = _as_inputs(X, Y)
        root = _per_feature(np.sqrt(self.gamma), X.shape[1])
        shift = Y[0] if Y.shape[0] else np.zeros(Y.shape[1])
        Xs = np.subtract(X, shift)
        Xs *= root
        Ys = np.subtract(Y, shift)
        Ys *= root
        return Xs, Ys

    def __call__(self, X, Y=None) -> np.ndarray:
        Xs, Ys = self._scaled(X, Y)
        # in place: one n_X x n_Y array, however large the block, holding minus the
        # squared distance 2 x.y - |x|^2 - |y|^2 of the shifted inputs (doubling is
        # exact), capped at 0 where rounding makes it positive: four passes over the block
        out = (2.0 * Xs) @ Ys.T
        out -= np.einsum("ij,ij->i", Xs, Xs)[:, None]
        out -= np.einsum("ij,ij->i", Ys, Ys)[None, :]
        np.minimum(out, 0.0, out=out)
        return np.exp(out, out=out)

    def diag(self, X) -> np.ndarray:
        return np.ones(np.asarray(X).shape[0])

    @staticmethod
    def _coordinate_distance(difference: np.ndarray) -> np.ndarray:
        """What ``gamma_k`` multiplies in the exponent: ``(x_k - y_k)^2``."""
        return difference**2

    def log_scale_gradient(self, X, Y, D) -> np.ndarray:
        """``sum_nm D_nm dK(x_n, y_m) / d log eta_k`` for every input dimension ``k``.

        The product of a matrix ``D`` of shape ``(n_X, n_Y)`` with the derivative of the
        Gram matrix with respect to the log input scales (a vector-Jacobian product), so
        that no ``n_features x n_X x n_Y`` array is formed.

        Parameters
        ----------
        X : array of shape (n_X, n_features)
        Y : array of shape (n_Y, n_features)
        D : array of shape (n_X, n_Y)
            Typically ``dL / dK``, the derivative of an objective with respect to the
            Gram matrix (Tipping 2001, eq. 54-55).

        Returns
        -------
        ndarray of shape (n_features,)
            With a scalar ``gamma`` the entries are the derivatives with respect to
            per-dimension scales all equal to ``gamma``; their sum is the derivative with
            respect to ``log gamma``.

        Notes
        -----
        For ``K_nm = exp(-sum_k eta_k d(x_nk, y_mk))``,
        ``dK_nm / d log eta_k = -eta_k d(x_nk, y_mk) K_nm`` (Tipping 2001, eq. 57 with the
        chain rule ``d / d log eta = eta d / d eta``), with ``d`` the squared difference
        (Gaussian) or the absolute difference (Laplacian).

        Examples
        --------
        >>> import numpy as np
        >>> X = np.array([[0.0, 0.0], [1.0, 2.0]])
        >>> K = RBF([0.5, 0.1])
        >>> g = K.log_scale_gradient(X, X, np.ones((2, 2)))
        >>> bool(np.allclose(g, [-2 * 0.5 * 1 * np.exp(-0.9), -2 * 0.1 * 4 * np.exp(-0.9)]))
        True
        """
        X, Y = _as_inputs(X, Y)
        D = np.asarray(D, dtype=np.float64)
        if D.shape != (X.shape[0], Y.shape[0]):
            raise ValueError(
                f"expected D of shape {(X.shape[0], Y.shape[0])} (one entry per kernel value), "
                f"got {D.shape}"
            )
        scales = _per_feature(self.gamma, X.shape[1])
        weighted = D * self(X, Y)
        gradient = np.empty(X.shape[1])
        for k in range(X.shape[1]):
            distance = self._coordinate_distance(X[:, k, None] - Y[None, :, k])
            # Tipping (2001) eq. 57, times eta_k for the derivative in log eta_k
            gradient[k] = -scales[k] * float(np.sum(weighted * distance))
        return gradient


class Laplacian(RBF):
    """``exp(-sum_k gamma_k |x_k - y_k|)``."""

    @staticmethod
    def _coordinate_distance(difference: np.ndarray) -> np.ndarray:
        """What ``gamma_k`` multiplies in the exponent: ``|x_k - y_k|``."""
        return np.abs(difference)

    def __call__(self, X, Y=None) -> np.ndarray:
        X, Y = _as_inputs(X, Y)
        gamma = _per_feature(self.gamma, X.shape[1])
        out = np.zeros((X.shape[0], Y.shape[0]))
        for k in range(X.shape[1]):
            out += gamma[k] * np.abs(X[:, k, None] - Y[None, :, k])
        return np.exp(-out)


class LinearSpline(Kernel):
    """Linear spline kernel with an infinite number of knots (Tipping 2001, eq. 29).

    For ``d > 1`` inputs the kernel is the product of the one-dimensional kernels.
    """

    symmetric = True

    def __call__(self, X, Y=None) -> np.ndarray:
        X, Y = _as_inputs(X, Y)
        out = np.ones((X.shape[0], Y.shape[0]))
        for k in range(X.shape[1]):
            xm, xn = X[:, k, None], Y[None, :, k]
            lo = np.minimum(xm, xn)
            # Tipping (2001) eq. 29
            out *= 1.0 + xm * xn + xm * xn * lo - 0.5 * (xm + xn) * lo**2 + lo**3 / 3.0
        return out

    def diag(self, X) -> np.ndarray:
        X, _ = _as_inputs(X)
        # eq. 29 with x_m = x_n = min(x_m, x_n) = x
        return np.prod(1.0 + X**2 + X**3 / 3.0, axis=1)

    def __repr__(self) -> str:
        return "LinearSpline()"


class Polynomial(Kernel):
    """``(sum_k gamma_k x_k y_k + coef0) ** degree``.

    Parameters
    ----------
    degree : int
    gamma : float or array of shape (n_features,)
        One scale for all inputs, or one per input dimension.
    coef0 : float
    """

    symmetric = True

    def __init__(self, degree: int = 3, gamma: float = 1.0, coef0: float = 1.0):
        if isinstance(degree, bool) or not isinstance(degree, numbers.Integral) or degree < 1:
            raise ValueError(f"degree must be an integer >= 1, got {degree!r}")
        self.degree: int = int(degree)
        self.gamma: float | np.ndarray = _check_scales(gamma)
        self.coef0: float = check_real(coef0, "coef0")

    def __call__(self, X, Y=None) -> np.ndarray:
        X, Y = _as_inputs(X, Y)
        scaled = X * _per_feature(self.gamma, X.shape[1])
        return (scaled @ Y.T + self.coef0) ** self.degree

    def diag(self, X) -> np.ndarray:
        X, _ = _as_inputs(X)
        scaled = X * _per_feature(self.gamma, X.shape[1])
        return (np.einsum("ij,ij->i", scaled, X) + self.coef0) ** self.degree


class Linear(Kernel):
    """``<x, y>``."""

    symmetric = True

    def __call__(self, X, Y=None) -> np.ndarray:
        X, Y = _as_inputs(X, Y)
        return X @ Y.T

    def diag(self, X) -> np.ndarray:
        X, _ = _as_inputs(X)
        return np.einsum("ij,ij->i", X, X)

    def __repr__(self) -> str:
        return "Linear()"


class CallableKernel(Kernel):
    """Wraps a user function ``k(X, Y) -> (n_X, n_Y)`` and checks what it returns."""

    def __init__(self, function: Callable[[np.ndarray, np.ndarray], np.ndarray]):
        self.function = function

    def __call__(self, X, Y=None) -> np.ndarray:
        X, Y = _as_inputs(X, Y)
        what = f"kernel function {self.function!r}"
        K = real_values(call_user(self.function, what, X, Y), what)
        if K.shape != (X.shape[0], Y.shape[0]):
            raise ValueError(
                f"kernel function {self.function!r} returned shape {K.shape}, "
                f"expected {(X.shape[0], Y.shape[0])}"
            )
        if not np.all(np.isfinite(K)):
            raise ValueError(f"kernel function {self.function!r} returned NaN or infinite values")
        return K


#: Kernel names accepted by :func:`get_kernel` and the estimators.
KERNELS = {
    "rbf": lambda gamma, degree, coef0: RBF(gamma),
    "laplacian": lambda gamma, degree, coef0: Laplacian(gamma),
    "linear_spline": lambda gamma, degree, coef0: LinearSpline(),
    "poly": lambda gamma, degree, coef0: Polynomial(degree, gamma, coef0),
    "linear": lambda gamma, degree, coef0: Linear(),
}


#: Kernel names the estimators accept: :data:`KERNELS` and a precomputed kernel matrix.
KERNEL_CHOICES = (*KERNELS, "precomputed")


def check_kernel(kernel, name: str = "kernel"):
    """A name in :data:`KERNEL_CHOICES`, a :class:`Kernel` or a callable, as given."""
    if isinstance(kernel, str):
        return lookup(KERNEL_CHOICES, kernel, name)
    if isinstance(kernel, type):
        raise TypeError(
            f"{name} must be a name, a Kernel instance or a callable k(X, Y); got the class "
            f"{kernel.__name__}: pass an instance such as {kernel.__name__}()"
        )
    if not callable(kernel):
        raise TypeError(f"{name} must be a name, a Kernel or a callable k(X, Y); got {kernel!r}")
    if not isinstance(kernel, Kernel):
        try:
            inspect.signature(kernel).bind(None, None)
        except TypeError:
            raise TypeError(
                f"{name} must be a callable k(X, Y) of two arrays returning their Gram "
                f"matrix; got {kernel!r}, which cannot be called with two arguments"
            ) from None
        except ValueError:  # no signature to read (some builtins): called as it is
            pass
    return kernel


def check_gamma(gamma, name: str = "gamma"):
    """``"scale"``, ``"auto"``, a number > 0, or one number > 0 per input dimension."""
    if isinstance(gamma, str):
        if gamma not in ("scale", "auto"):
            raise ValueError(f"{name} must be 'scale', 'auto' or a positive number; got {gamma!r}")
        return gamma
    return _check_scales(gamma, name)


def get_kernel(kernel, gamma: float | np.ndarray = 1.0, degree: int = 3, coef0: float = 1.0):
    """A :class:`Kernel` from a name in :data:`KERNELS`, a Kernel, or a callable."""
    kernel = check_kernel(kernel)
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(kernel, str):
        return lookup(KERNELS, kernel, "kernel")(gamma, degree, coef0)
    return CallableKernel(kernel)
