"""The PyMC model over the basis of a fitted estimator (:func:`model_from_estimator`)."""

from __future__ import annotations

import numpy as np
import pymc as pm

from bayes_rvm._validation import (
    check_target,
    lookup,
)
from bayes_rvm.pymc_model import (
    build_model,
)

#: ``basis`` options: every basis function, or the relevant ones of the evidence fit.
BASIS_CHOICES = ("relevant", "all")


def _estimator_design(estimator, X, basis: str):
    """Training design matrix over the chosen columns, their names, and ``X_new -> rows``."""
    from sklearn.utils.validation import check_is_fitted, validate_data

    check_is_fitted(estimator)
    classes = getattr(estimator, "classes_", None)
    if classes is not None and len(classes) != 2:
        raise ValueError(
            f"full Bayes is implemented for binary classification; the estimator has "
            f"{len(classes)} classes"
        )
    X = validate_data(estimator, X, reset=False, dtype=np.float64)
    # the basis as fitted (kernel, learned scales, bias, extra columns), at the training X
    full = estimator.basis_.training_basis(X)
    _check_training_inputs(estimator, X)
    active = estimator.result_.active
    if basis == "relevant" and active.size == 0:
        raise ValueError(
            "the evidence fit kept no basis function (every alpha_i went to infinity), so "
            "there is no relevant basis to build on; use basis='all' for every basis function"
        )
    columns = np.sort(active) if basis == "relevant" else np.arange(full.n_columns)
    names = np.asarray(full.column_names)[columns]

    def design(X_new):
        X_new = validate_data(estimator, X_new, reset=False, dtype=np.float64)
        return full.evaluate(X_new, columns)

    return full.columns(columns), names, columns, design


def _check_training_inputs(estimator, X: np.ndarray) -> None:
    """Refuse inputs that are not the training inputs where the fit can tell: with every
    training input a candidate centre, its rows at ``relevance_indices_`` are the
    relevance vectors (other inputs of the same shape would give another design)."""
    if estimator.centres is not None or estimator.kernel == "precomputed":
        return
    rows = estimator.relevance_indices_
    if rows.size and not np.array_equal(X[rows], estimator.relevance_vectors_):
        raise ValueError(
            "X is not the training inputs of the fitted estimator: its rows at "
            "relevance_indices_ differ from relevance_vectors_; pass the X the estimator "
            "was fitted on"
        )


def _targets(estimator, y, n: int) -> np.ndarray:
    """Regression targets, or the 0/1 coding ``y == classes_[1]`` of a binary classifier."""
    classes = getattr(estimator, "classes_", None)
    if classes is None:
        return check_target(y, n, "y")
    y = np.asarray(y)
    if y.shape != (n,) or not np.all(np.isin(y, classes)):
        raise ValueError(f"expected y of length {n} with labels in {list(classes)}")
    return (y == classes[1]).astype(np.float64)


def model_from_estimator(
    estimator,
    X,
    y,
    *,
    basis: str = "relevant",
    a: float,
    b: float,
    c: float | None = None,
    d: float | None = None,
    parameterization: str | None = None,
) -> pm.Model:
    """The PyMC model over the basis of a fitted :class:`~bayes_rvm.RVR` (or RVC).

    Parameters
    ----------
    estimator : fitted RVR or RVC
    X, y : arrays
        The training data the estimator was fitted on.
    basis : {"relevant", "all"}
        Only the basis functions the evidence fit kept, or all of them.
    a, b, c, d : float
        Gamma hyperparameters (see :func:`~bayes_rvm.build_model`). With a noise variance
        fixed in the estimator (``noise_var=...``) the model fixes it too and ``c, d`` must
        be left unset.
    parameterization : {"collapsed", "noncentred", "centred"}, optional
        Default ``"collapsed"`` for regression, ``"noncentred"`` for classification.

    Returns
    -------
    pymc.Model
        With ``basis`` coordinates named as the estimator's columns (``"k12"`` for the
        kernel centred on training input 12, ``"bias"``), and predictions from new inputs:
        ``sample(model, X_new=...)``.
    """
    basis = lookup(BASIS_CHOICES, basis, "basis")
    Phi, names, _, design = _estimator_design(estimator, X, basis)
    result = estimator.result_
    t = _targets(estimator, y, Phi.shape[0])
    return build_model(
        Phi,
        t,
        result.likelihood,
        a=a,
        b=b,
        c=c,
        d=d,
        noise_var=result.noise_var if result.noise_fixed else None,
        parameterization=parameterization,
        coords={"basis": names},
        design=design,
    )
