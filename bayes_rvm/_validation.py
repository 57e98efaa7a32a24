"""Checks of user input, shared by the functional core and the estimators.

Every check raises :class:`ValueError` or :class:`TypeError` with a message that says
what was expected and what came, so that no LAPACK error, silent NaN or half-updated
object can follow from bad input.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Callable, Mapping

import numpy as np
import scipy.sparse
from sklearn.utils.multiclass import check_classification_targets

__all__ = [
    "call_user",
    "check_bool",
    "check_class_labels",
    "check_design",
    "check_no_missing_labels",
    "check_noise_var",
    "check_nonnegative",
    "check_open_unit",
    "check_positive_int",
    "check_positive_real",
    "check_real",
    "check_sample_weight",
    "check_target",
    "check_untimed",
    "lookup",
    "none_or",
    "one_of",
    "real_values",
    "validate_parameters",
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


def check_untimed(value, name: str) -> None:
    """Raise ``TypeError`` if ``value`` (an array, a pandas or dask object) holds dates or
    durations (``datetime64`` / ``timedelta64``): their integer ticks are no unit a kernel
    width or a noise level could be read in, so the choice of unit is the user's."""
    dtypes = getattr(value, "dtypes", None)  # a pandas DataFrame: one dtype per column
    if dtypes is None or not hasattr(dtypes, "__iter__"):
        dtypes = [getattr(value, "dtype", None)]
    timed = [str(dtype) for dtype in dtypes if getattr(dtype, "kind", None) in ("M", "m")]
    if timed:
        raise TypeError(
            f"{name} holds dates or durations (dtype {', '.join(sorted(set(timed)))}); "
            "expected real numbers. Convert them in the unit you mean, e.g. "
            "(x - x0) / np.timedelta64(1, 'D') for days since a date x0, "
            "d / np.timedelta64(1, 'h') for durations in hours"
        )


def call_user(function: Callable, what: str, *args):
    """``function(*args)`` for a function the user passed (a kernel, an extra column): an
    exception inside it is re-raised as a ``ValueError`` naming ``what``, chained to the
    original, so that the traceback says which of the user's functions failed."""
    try:
        return function(*args)
    except Exception as err:
        raise ValueError(f"{what} raised {type(err).__name__}: {err}") from err


def real_values(values, what: str) -> np.ndarray:
    """What a basis function returned, as float64; complex values, strings or other
    non-numbers are an error (a ``TypeError`` naming ``what``), not silently cast to
    their real part or failing in a conversion that names no function."""
    values = np.asarray(values)
    if np.iscomplexobj(values):
        raise TypeError(f"{what} returned complex values; basis functions must be real")
    if values.dtype.kind not in "biuf":
        raise TypeError(
            f"{what} returned values of dtype {values.dtype}; basis functions must return "
            "real numbers"
        )
    return values.astype(np.float64, copy=False)


def check_design(Phi, name: str = "Phi", *, min_rows: int = 1) -> np.ndarray:
    """A finite float64 matrix with at least ``min_rows`` rows and one column.

    ``min_rows=0`` admits an empty set of rows (the kernel centres of a model whose
    kernel columns were all pruned).
    """
    Phi = _as_float_array(Phi, name)
    if Phi.ndim != 2:
        raise ValueError(f"expected {name} with 2 dimensions, got {Phi.ndim}")
    if Phi.shape[0] < min_rows or Phi.shape[1] == 0:
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


def check_sample_weight(sample_weight, n_rows: int) -> np.ndarray | None:
    """``None``, or finite weights ``>= 0`` (one per row, not all 0) as float64; a scalar
    applies to every row."""
    if sample_weight is None:
        return None
    weights = _as_float_array(sample_weight, "sample_weight")
    if weights.ndim == 0:
        weights = np.full(n_rows, float(weights))
    if weights.shape != (n_rows,):
        raise ValueError(
            f"expected sample_weight of shape ({n_rows},) (one per row), got {weights.shape}"
        )
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError("sample_weight must be finite and >= 0")
    if not np.any(weights > 0):
        raise ValueError("sample_weight must not be all zero: no sample would be fitted")
    return weights


def lookup(table, name, what: str):
    """The entry of option ``name`` in ``table`` (a mapping, or a sequence of names).

    The one way string options are read (solvers, likelihoods, kernels, samplers, data
    set variants, ...): an unknown name raises ``ValueError`` listing the valid ones.
    """
    if not isinstance(name, str) or name not in table:
        valid = ", ".join(repr(k) for k in table)
        raise ValueError(f"unknown {what} {name!r}; expected one of: {valid}")
    return table[name] if isinstance(table, Mapping) else name


def _is_real(value) -> bool:
    """Python or NumPy integers and floats; not bool (``True`` is no tolerance)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def check_real(value, name: str) -> float:
    """A finite real number (Python or NumPy int or float, not bool)."""
    if not _is_real(value):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    return value


def check_positive_real(value, name: str) -> float:
    """A finite real number > 0 (tolerances, step sizes)."""
    if not _is_real(value):
        raise TypeError(
            f"{name} must be a finite number > 0, got {value!r} ({type(value).__name__})"
        )
    value = float(value)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def check_bool(value, name: str) -> bool:
    """``True`` or ``False`` (Python or NumPy booleans)."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")
    return bool(value)


def check_nonnegative(value, name: str) -> float:
    """A finite real number >= 0 (the Gamma hyperparameters a, b, c, d)."""
    if not _is_real(value):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be finite and >= 0, got {value}")
    return value


def check_noise_var(noise_var, name: str = "noise_var") -> float | None:
    """``None`` (learn the noise) or a finite variance > 0."""
    if noise_var is None:
        return None
    if not _is_real(noise_var):
        raise TypeError(f"{name} must be None or a positive number, got {noise_var!r}")
    noise_var = float(noise_var)
    if not np.isfinite(noise_var) or noise_var <= 0:
        raise ValueError(f"{name} must be None or a finite number > 0, got {noise_var}")
    return noise_var


def check_positive_int(value, name: str, minimum: int = 1) -> int:
    """An integer >= ``minimum`` (1 by default; 0 for counts that may be zero) that a
    64-bit integer holds (compiled loops count in int64)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if value > np.iinfo(np.int64).max:
        raise ValueError(f"{name} must be at most 2**63 - 1 (a 64-bit integer), got {value}")
    return int(value)


def check_open_unit(value, name: str) -> float:
    """A real number strictly between 0 and 1 (a probability target such as target_accept)."""
    if not _is_real(value):
        raise TypeError(f"{name} must be a number in (0, 1), got {type(value).__name__}")
    if not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {value}")
    return float(value)


def one_of(table, what: str | None = None) -> Callable:
    """Constraint: a name in ``table`` (see :func:`lookup`)."""

    def check(value, name: str):
        return lookup(table, value, what or name)

    return check


def none_or(check: Callable) -> Callable:
    """Constraint: ``None``, or what ``check`` accepts."""

    def check_or_none(value, name: str):
        return None if value is None else check(value, name)

    return check_or_none


def validate_parameters(estimator) -> None:
    """Check every constructor parameter of ``estimator`` against its constraint.

    ``type(estimator)._parameter_constraints`` maps each parameter name to a function
    ``check(value, name)`` that raises ``TypeError`` (wrong kind of value) or
    ``ValueError`` (right kind, invalid value) with a message naming the parameter, what
    was expected and what came; the same declarative table that scikit-learn's
    estimators keep, with this package's checks.
    """
    constraints = type(estimator)._parameter_constraints
    for name, value in estimator.get_params(deep=False).items():
        constraints[name](value, name)


def _label_kind(value) -> str:
    if isinstance(value, bool | np.bool_):
        return "bool"
    if isinstance(value, numbers.Real):
        return "number"
    if isinstance(value, str):
        return "str"
    return type(value).__name__


def check_class_labels(y) -> tuple[np.ndarray, np.ndarray]:
    """The sorted classes of a 1-D label vector and each label's class index.

    Labels may be of any one type: integers, integral floats, booleans, strings, or other
    objects that can be sorted (``classes_`` is sorted, as in scikit-learn). An object
    array (a pandas column, a list of Python values) of numbers or booleans is treated as
    the numeric array it stands for. Raises ``ValueError`` for continuous (non-integral
    float) targets and for labels that mix types (strings and numbers, ``None`` and
    strings), ``TypeError`` for objects that cannot be ordered.

    Examples
    --------
    >>> import numpy as np
    >>> classes, codes = check_class_labels(np.array([2, 1, 2], dtype=object))
    >>> classes, codes.tolist()
    (array([1, 2]), [1, 0, 1])
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"expected class labels with 1 dimension, got shape {y.shape}")
    kinds = {"str"}
    if y.dtype == object:
        kinds = {_label_kind(value) for value in y.tolist()}
        if len(kinds) > 1:
            raise ValueError(
                f"class labels must all be of one type; got a mix of {', '.join(sorted(kinds))}"
            )
        if kinds <= {"bool", "number"}:
            # Python / NumPy numbers become a numeric array; Fraction, Decimal stay objects
            y = np.array(y.tolist())
    if y.dtype != object or kinds == {"str"}:
        # scikit-learn's check: rejects continuous targets and NaN (it cannot classify
        # other objects, which are taken as labels as they are)
        check_classification_targets(y)
    try:
        classes, codes = np.unique(y, return_inverse=True)
        # np.unique trusts "<": labels it cannot order totally (sets ordered by
        # inclusion) would be split into spurious classes
        ordered = all(bool(low < high) for low, high in itertools.pairwise(classes))
    except TypeError as err:
        ordered, cause = False, err
    else:
        cause = None
    if not ordered:
        raise TypeError(
            "class labels must be comparable with each other (totally ordered by '<') to be "
            f"sorted into classes_; got labels of type {type(y[0]).__name__}"
            + ("" if cause is None else f": {cause}")
        ) from cause
    return classes, codes.reshape(-1)


def check_no_missing_labels(y) -> None:
    """Raise ``ValueError`` if the labels ``y`` hold missing values (``None``, ``NaN``,
    ``pandas.NA``), which name no class."""
    values = np.asarray(y, dtype=object).reshape(-1)

    def missing(value) -> bool:
        try:
            return value is None or bool(value != value)
        except TypeError:  # pandas.NA: its truth value is undefined
            return True

    positions = [i for i, value in enumerate(values.tolist()) if missing(value)]
    if positions:
        raise ValueError(
            f"class labels must not be missing; y holds {len(positions)} missing value(s) "
            f"(None, NaN or NA), first at position {positions[0]}"
        )
