"""What :class:`~bayes_rvm.RVR` and :class:`~bayes_rvm.RVC` share: the checks of the
shared constructor options, the validation of the training and new inputs, the kernel
basis from the options (candidate centres, ``gamma="scale"``), the solver call
(:func:`~bayes_rvm.fit_type2`) and the fitted attributes it leaves.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, clone, is_classifier
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from bayes_rvm._validation import (
    check_bool,
    check_nonnegative,
    check_positive_int,
    check_positive_real,
    check_real,
    check_untimed,
    none_or,
    one_of,
)
from bayes_rvm.basis import ExtraColumns, KernelBasis, PrecomputedBasis, choose_centres
from bayes_rvm.kernels import Kernel, check_gamma, check_kernel, get_kernel
from bayes_rvm.solvers import SOLVER_CHOICES, default_solver, fit_type2, fit_type2_scales


def _is_fitted_attribute(name: str) -> bool:
    """scikit-learn's rule for a fitted attribute: public, with a trailing underscore."""
    return name.endswith("_") and not name.startswith("_")


def _check_verbose(value, name: str):
    """``verbose``: a boolean or a level >= 0."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    return check_positive_int(value, name, minimum=0)


def _check_extra_columns(value, name: str) -> ExtraColumns:
    return ExtraColumns(value)


def _check_random_state(value, name: str):
    try:
        return check_random_state(value)
    except ValueError as err:
        raise ValueError(
            f"{name} must be None, an int in [0, 2**32 - 1] or a numpy RandomState; got {value!r}"
        ) from err


def _is_dask_array(X) -> bool:
    """Whether ``X`` is a dask array (without importing dask)."""
    return type(X).__module__.partition(".")[0] == "dask"


def _check_centres(value, name: str):
    """``centres``: ``None``, a number of centres >= 1, or an array of centres (checked
    against the inputs at fit, by :func:`bayes_rvm.basis.choose_centres`)."""
    if value is None or hasattr(value, "shape") or isinstance(value, list | tuple):
        return value
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be None, a number of centres or an array of centres, got "
            f"{value!r} ({type(value).__name__})"
        )
    return check_positive_int(value, name)


#: Kernel names that take ``gamma``.
_SCALED_KERNELS = ("rbf", "laplacian", "poly")


def _distinct_rows(X, sample_weight: np.ndarray | None) -> np.ndarray | None:
    """The training rows that are candidate centres when ``centres=None``: one of each
    distinct input (its first row) among the rows of positive weight, ascending; ``None``
    when that is every row (each input once, no weight 0).

    A weight of 0 leaves the row out and a weight of ``k`` stands for the row repeated
    ``k`` times, centres included: equal inputs give one kernel function, not equal
    columns.
    """
    X = np.asarray(X)  # a dask array: the inputs its basis gathers as centres anyway
    rows = np.arange(X.shape[0]) if sample_weight is None else np.flatnonzero(sample_weight > 0)
    _, first = np.unique(X[rows], axis=0, return_index=True)
    if first.size == X.shape[0]:
        return None
    return rows[np.sort(first)]


@dataclass(repr=False, eq=False)
class _BaseRVM(BaseEstimator):
    """Shared plumbing: kernel and basis from the constructor options, fitted attributes.

    The constructor parameters are dataclass fields: the shared ones here, each
    estimator's own in its class (keyword-only). The generated ``__init__`` only stores
    them, with an explicit signature, which is what scikit-learn's ``get_params``,
    ``clone`` and ``check_estimator`` read.
    """

    kernel: str | Kernel | Callable = "rbf"
    _: KW_ONLY
    gamma: float | np.ndarray | str = "scale"
    degree: int = 3
    coef0: float = 1.0
    bias: bool = True
    solver: str = "auto"
    a: float = 0.0
    b: float = 0.0
    max_iter: int | None = None
    tol: float = 1e-6
    optimize_scales: bool = False
    extra_columns: Sequence | None = None
    centres: int | np.ndarray | None = None
    random_state: int | np.random.RandomState | None = None
    verbose: bool | int = False

    #: Parameter name -> ``check(value, name)``, run at the start of every fit
    #: (:func:`~bayes_rvm._validation.validate_parameters`).
    _parameter_constraints: ClassVar[dict[str, Callable]] = {
        "kernel": check_kernel,
        "gamma": check_gamma,
        "degree": check_positive_int,
        "coef0": check_real,
        "bias": check_bool,
        "solver": none_or(one_of(SOLVER_CHOICES)),
        "a": check_nonnegative,
        "b": check_nonnegative,
        "max_iter": none_or(check_positive_int),
        "tol": check_positive_real,
        "optimize_scales": check_bool,
        "extra_columns": none_or(_check_extra_columns),
        "centres": _check_centres,
        "random_state": _check_random_state,
        "verbose": _check_verbose,
    }

    def _fit_atomic(self, X, y, **fit_params):
        """Fit a fresh copy (:func:`sklearn.base.clone`), then take over its fitted state.

        The subclass's ``_fit(X, y)`` validates and fits, setting the fitted attributes
        on the copy. A fit that raises (bad data, a failing solver) leaves ``self`` as it was: a
        previous fit stays intact and predicts as before. A fit that succeeds replaces
        every fitted attribute, so none of an earlier fit survives (``estimators_`` of a
        one-vs-rest fit, ``scales_fit_``, ``feature_names_in_``). The fitted state is all
        public, named by scikit-learn's convention (what ``check_is_fitted`` looks for:
        a trailing underscore); attributes that scikit-learn's machinery sets on the
        estimator around a fit (private names) are left alone.
        """
        fitted = clone(self)
        fitted._fit(X, y, **fit_params)
        for name in [name for name in vars(self) if _is_fitted_attribute(name)]:
            delattr(self, name)
        vars(self).update({k: v for k, v in vars(fitted).items() if _is_fitted_attribute(k)})
        return self

    def _resolve_gamma(self, X: np.ndarray, sample_weight: np.ndarray | None = None):
        """The kernel's gamma; "scale" is ``1 / (n_features X.var())`` with the variance over
        the rows counted with their sample weights (a weight of 2 as the row repeated, 0 as
        the row left out)."""
        if isinstance(self.kernel, str) and self.kernel not in _SCALED_KERNELS:
            return 1.0  # the kernel has no gamma
        if isinstance(self.gamma, str) and self.gamma == "scale":
            if sample_weight is not None:
                X, sample_weight = X[sample_weight > 0], sample_weight[sample_weight > 0]
            # X.var() computed on X / max|X| so that it cannot overflow
            largest = float(np.max(np.abs(X)))
            if largest == 0:
                return 1.0
            Z = X / largest
            if sample_weight is None:
                spread = float(Z.var())
            else:  # the variance of the entries, each row counted w_n times
                centre = np.average(Z.mean(axis=1), weights=sample_weight)
                spread = float(np.average(((Z - centre) ** 2).mean(axis=1), weights=sample_weight))
            with np.errstate(over="ignore", divide="ignore"):
                gamma = 1.0 / (X.shape[1] * spread) / largest / largest if spread > 0 else 1.0
            if not (np.isfinite(gamma) and gamma > 0):
                raise ValueError(
                    "gamma='scale' is 1 / (n_features * X.var()), which is outside the float "
                    f"range for these inputs (largest |x| = {largest:.3g}); rescale X (e.g. "
                    "StandardScaler) or pass a number"
                )
            return gamma
        if isinstance(self.gamma, str):  # "auto", checked by the parameter constraints
            return 1.0 / X.shape[1]
        return self.gamma

    def _validate_training(self, X, y, **kwargs) -> tuple:
        """Training inputs and labels as the fit uses them: ``validate_data`` for
        in-memory inputs; a dask array stays on its workers, chunked by rows
        (:func:`bayes_rvm.dask.check_dask_inputs`), and ``y`` is gathered. Dates and
        durations are refused as inputs and as regression targets
        (:func:`~bayes_rvm._validation.check_untimed`); class labels may be of any type."""
        check_untimed(X, "X")
        if not is_classifier(self):
            check_untimed(y, "y")
        if not _is_dask_array(X):
            return validate_data(self, X, y, dtype=np.float64, **kwargs)
        from bayes_rvm.dask import check_dask_inputs

        X = check_dask_inputs(X)
        y = np.asarray(y)
        if y.shape[:1] != X.shape[:1]:
            raise ValueError(
                f"X and y have inconsistent numbers of samples: {X.shape[0]} and "
                f"{y.shape[0] if y.ndim else y}"
            )
        self.n_features_in_ = int(X.shape[1])
        return X, y

    def _validate_new(self, X) -> np.ndarray:
        """Inputs to predict at (or to evaluate the design at), checked against the fit."""
        check_untimed(X, "X")
        return validate_data(self, X, reset=False, dtype=np.float64)

    def _check_n_samples(self, X: np.ndarray) -> None:
        if X.shape[0] < 2:
            raise ValueError(
                f"{type(self).__name__} needs at least 2 samples; got {X.shape[0]} sample"
            )

    def _candidates(self, X, sample_weight=None) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The candidate centres (:func:`~bayes_rvm.basis.choose_centres`; ``None``: every
        training input) and, when they are some of the training rows because ``centres``
        is ``None`` (:func:`_distinct_rows`), those rows (else ``None``). With
        ``optimize_scales`` the centres are every training input (the learned scales move
        the inputs, not a set of centres); with ``kernel="precomputed"``, ``(None, None)``
        (the columns of the Gram matrix are the basis functions)."""
        if isinstance(self.kernel, str) and self.kernel == "precomputed":
            return None, None
        centres = choose_centres(X, self.centres, self.random_state)
        if centres is not None or self.optimize_scales:
            return centres, None
        rows = _distinct_rows(X, sample_weight)
        return (None, None) if rows is None else (np.asarray(X)[rows], rows)

    def _build_basis(self, X: np.ndarray, sample_weight=None, candidates=None) -> KernelBasis:
        """The training design matrix from the constructor options (read at fit only), with
        the rows' ``sample_weight`` (or ``None``) where ``gamma="scale"`` is resolved and
        the candidate centres chosen; ``candidates``: those of :meth:`_candidates`, when
        already chosen."""
        if isinstance(self.kernel, str) and self.kernel == "precomputed":
            if X.shape[0] != X.shape[1]:
                raise ValueError(
                    "with kernel='precomputed', X must be the square training Gram matrix; "
                    f"got shape {X.shape}"
                )
            if self.extra_columns:
                raise ValueError(
                    "extra_columns need the inputs; with kernel='precomputed' X is a Gram "
                    "matrix: append the extra columns to it instead"
                )
            if self.centres is not None:
                raise ValueError(
                    "centres do not apply to kernel='precomputed': the columns of the Gram "
                    "matrix are the basis functions"
                )
            return PrecomputedBasis(X, bias=self.bias)
        gamma = self._resolve_gamma(X, sample_weight)
        kernel = get_kernel(self.kernel, gamma, self.degree, self.coef0)
        centres, _ = self._candidates(X, sample_weight) if candidates is None else candidates
        if self.centres is not None and self.optimize_scales:
            raise ValueError(
                "optimize_scales=True learns the scales with every training input as a "
                "centre: use centres=None"
            )
        if _is_dask_array(X):
            from bayes_rvm.dask import DaskKernelBasis

            return DaskKernelBasis(
                X, kernel, centres=centres, bias=self.bias, extra=self.extra_columns or ()
            )
        return KernelBasis(
            X, kernel, centres=centres, bias=self.bias, extra=self.extra_columns or (),
            n_jobs=self._pass_jobs(),
        )  # fmt: skip

    def _pass_jobs(self) -> int | None:
        """Threads for the passes over the kernel basis (:class:`KernelBasis` ``n_jobs``)."""
        return None

    def _fit_type2(
        self,
        X: np.ndarray,
        y: np.ndarray,
        likelihood: str,
        sample_weight=None,
        basis: KernelBasis | None = None,
    ) -> None:
        """The solver's fit, with the input scales learned when ``optimize_scales``; stores
        the fitted attributes. ``basis``: the basis :meth:`_build_basis` would build,
        already built (shared by the classifiers of one-vs-rest)."""
        rows = None  # the training rows of the candidate centres, with centres=None
        if basis is None:
            candidates = self._candidates(X, sample_weight)
            basis, rows = self._build_basis(X, sample_weight, candidates), candidates[1]
        options = {"a": self.a, "b": self.b, "max_iter": self.max_iter, "tol": self.tol}
        if likelihood == "gaussian":
            options.update(c=self.c, d=self.d, noise_var=self.noise_var, n_starts=self.n_starts)
        if sample_weight is not None:
            if self.optimize_scales:
                raise ValueError("sample_weight is not supported with optimize_scales=True")
            options.update(sample_weight=sample_weight)
        solver = default_solver(self.solver, likelihood, self.a, self.b)
        self.scales_ = None
        if not self.optimize_scales:
            result = fit_type2(basis, y, likelihood, solver, verbose=self.verbose, **options)
        elif isinstance(basis, PrecomputedBasis):
            raise ValueError("optimize_scales=True needs the inputs, not kernel='precomputed'")
        elif _is_dask_array(X):
            raise ValueError("optimize_scales=True needs inputs in memory, not a dask array")
        else:
            fit = fit_type2_scales(
                X,
                y,
                basis.kernel,
                likelihood,
                solver,
                bias=self.bias,
                extra=basis.extra,
                verbose=self.verbose,
                **options,
            )
            self.scales_ = fit.scales
            self.scales_fit_ = fit
            result, basis = fit.result, fit.basis
        self._store(result, basis, X, rows)

    def _store(self, result, basis: KernelBasis, X: np.ndarray, rows=None) -> None:
        """Fitted attributes from a :class:`~bayes_rvm.Type2Result` and its training basis;
        ``rows``: the training rows of the basis's candidate centres (``None``: the centres
        are every training input, or given)."""
        fitted = basis.restrict(result.active)
        self.basis_ = fitted
        self.result_ = result
        self.n_train_ = fitted.n_train
        self.kernel_ = None if isinstance(basis, PrecomputedBasis) else basis.kernel
        self.relevance_indices_ = (
            fitted.relevance_indices if rows is None else rows[fitted.relevance_indices]
        )
        self.relevance_vectors_ = (
            X[self.relevance_indices_]
            if isinstance(basis, PrecomputedBasis)
            else fitted.relevance_vectors
        )
        self.intercept_active_ = bool(fitted.is_bias.any())
        self.coef_ = result.mu[fitted.is_kernel]
        zero = np.zeros(result.mu.shape[1]) if result.mu.ndim == 2 else 0.0
        intercept = result.mu[fitted.is_bias]
        if result.mu.ndim == 2:  # softmax: one column per class
            self.intercept_ = intercept[0] if intercept.size else zero
        else:
            self.intercept_ = float(intercept[0]) if intercept.size else 0.0
        # Extra columns (Sec. 4.3) by name; pruned ones have weight 0.
        self.extra_coef_ = {
            name: np.copy(zero) if np.ndim(zero) else zero for name in fitted.extra_names
        }
        for position in np.flatnonzero(fitted.is_extra):
            weight = result.mu[position]
            self.extra_coef_[fitted.column_names[position]] = (
                weight if weight.ndim else float(weight)
            )
        self.active_names_ = list(fitted.column_names)
        self.alpha_ = result.alpha
        with np.errstate(over="ignore", invalid="ignore"):
            self.sigma_ = result.Sigma
        if not np.all(np.isfinite(self.sigma_)):
            raise ValueError(
                "the fit is outside the float range in the units of the data: the posterior "
                f"covariance of the weights (sigma_) exceeds {np.finfo(float).max:.3g}; "
                "rescale y or X (the type-II fit is invariant to the scale of both)"
            )
        self.log_evidence_ = result.log_evidence
        self.log_evidence_path_ = result.log_evidence_path
        self.n_iter_ = result.n_iter

    def _by_row_blocks(self, X: np.ndarray, function: Callable):
        """``function(Phi)`` over the design rows of ``X`` in blocks of bounded memory
        (:meth:`~bayes_rvm.basis.FittedBasis.design_blocks`), joined along the rows;
        ``function`` returns an array or a tuple of arrays with one row per input."""
        parts = [function(Phi) for Phi in self.basis_.design_blocks(X)]
        if isinstance(parts[0], tuple):
            return tuple(np.concatenate(columns) for columns in zip(*parts, strict=True))
        return np.concatenate(parts)

    def design_matrix(self, X) -> np.ndarray:
        """Design rows of inputs ``X`` over the fitted active basis functions.

        The matrix :meth:`predict` multiplies the weights with: one column per entry of
        ``alpha_`` (named in ``active_names_``), the kernel centred on each relevance
        vector at the fitted kernel (learned input scales included), the bias and the
        extra columns the fit kept. With ``kernel="precomputed"``, ``X`` holds the kernel
        values ``k(x_new, x_train)``.

        Returns
        -------
        ndarray of shape (n_samples, n_active)
        """
        check_is_fitted(self)
        if hasattr(self, "estimators_"):
            raise ValueError(
                "a one-vs-rest RVC has one basis per classifier: use "
                "estimators_[k].design_matrix(X)"
            )
        X = self._validate_new(X)
        return self.basis_.design(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = isinstance(self.kernel, str) and self.kernel == "precomputed"
        return tags
