"""Checks of user input, shared by the functional core and the estimators.

Every check raises :class:`ValueError` or :class:`TypeError` with a message that says
what was expected and what came, so that no LAPACK error, silent NaN or half-updated
object can follow from bad input.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse

__all__ = [
    "check_design",
    "check_noise_var",
    "check_nonnegative",
    "check_positive_int",
    "check_target",
]


def _as_float_array(value, name: str) -> np.ndarray:
    if scipy.sparse.issparse(value):
        raise TypeError(
            f"{name} must be a dense array; got a sparse matrix ({type(value).__name__}). "
            "Convert it with .toarray() first."
        )
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as err:  # ragged nested sequences
        raise ValueError(f"{name} must be a numeric array; could not convert it: {err}") from err
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers; got dtype {array.dtype}")
    return array.astype(np.float64, copy=False)


def check_design(Phi, name: str = "Phi") -> np.ndarray:
    """A finite float64 matrix with at least one row and one column."""
    Phi = _as_float_array(Phi, name)
    if Phi.ndim != 2:
        raise ValueError(f"expected {name} with 2 dimensions, got {Phi.ndim}")
    if Phi.shape[0] == 0 or Phi.shape[1] == 0:
        raise ValueError(f"expected a non-empty {name}, got shape {Phi.shape}")
    if not np.all(np.isfinite(Phi)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return Phi


def check_target(t, n_rows: int, name: str = "t") -> np.ndarray:
    """A finite float64 vector of length ``n_rows``."""
    t = _as_float_array(t, name)
    if t.ndim == 2 and t.shape[1] == 1:
        t = t[:, 0]
    if t.ndim != 1:
        raise ValueError(f"expected {name} with 1 dimension, got shape {t.shape}")
    if t.shape[0] != n_rows:
        raise ValueError(f"expected {name} of length {n_rows} (one per row), got {t.shape[0]}")
    if not np.all(np.isfinite(t)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return t


def check_nonnegative(value, name: str) -> float:
    """A finite real number >= 0 (the Gamma hyperparameters a, b, c, d)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be finite and >= 0, got {value}")
    return value


def check_noise_var(noise_var) -> float | None:
    """``None`` (learn the noise) or a finite variance > 0."""
    if noise_var is None:
        return None
    if isinstance(noise_var, bool) or not isinstance(noise_var, numbers.Real):
        raise TypeError(f"noise_var must be None or a positive number, got {noise_var!r}")
    noise_var = float(noise_var)
    if not np.isfinite(noise_var) or noise_var <= 0:
        raise ValueError(f"noise_var must be None or a finite number > 0, got {noise_var}")
    return noise_var


def check_positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)
