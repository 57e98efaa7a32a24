"""Bad input and numerical edge cases: each ends in a correct fit or a clear error.

The battery covers RVR, RVC, :func:`bayes_rvm.fit_type2` and the Bayesian fits
(:func:`bayes_rvm.build_model`, :func:`bayes_rvm.sample`, :func:`bayes_rvm.fit_vi`,
:func:`bayes_rvm.to_inference_data`). An error must be a ``ValueError`` or ``TypeError``
whose message names what was expected or what came (never a LAPACK ``LinAlgError``); a
fit must predict finite values, and a refit that fails must leave the previous fit as it
was. Cases that depend on the solver run under every solver that applies.

Policies checked here (documented in the estimators' ``fit`` docstrings):

- scipy sparse ``X``: ``TypeError`` asking for dense input (kernel columns are dense).
- float32 / integer / boolean / object-of-numbers ``X``: computed in float64, the same fit
  as the float64 array of the same values.
- every basis function pruned: a ``UserWarning``; the empty model predicts 0 (regression,
  with the learned noise as its standard deviation) or probability 1/K.
- ``max_iter`` reached: a ``ConvergenceWarning`` and a usable fit (the last iterate).
"""

from __future__ import annotations

import datetime
import subprocess
import sys
import warnings
from fractions import Fraction

import numpy as np
import pymc as pm
import pytest
import scipy.sparse
from scipy import linalg
from sklearn.exceptions import ConvergenceWarning

import bayes_rvm as br
from bayes_rvm import RVC, RVR, _linalg, fit_type2
from bayes_rvm.kernels import RBF
from bayes_rvm.solvers import EmptyModelWarning

RVR_SOLVERS = ("mackay", "em", "sequential")
#: Fits that keep about as many weights as points interpolate, and say so (tested in
#: test_reliability_warnings.py).
INTERPOLATES = pytest.mark.filterwarnings("ignore::bayes_rvm.solvers.InterpolationWarning")
RVC_SOLVERS = ("mackay", "em")
#: Bayesian-fit hyperparameters (proper priors, as MCMC and VI need).
PRIOR = {"a": 2.0, "b": 0.5, "c": 3.0, "d": 0.3}


def _regression(n=25, seed=0):
    x = np.linspace(-5.0, 5.0, n)[:, None]
    y = np.sinc(x[:, 0] / np.pi) + np.random.default_rng(seed).normal(0.0, 0.1, n)
    return x, y


def _classification(n=30, seed=1):
    """Two overlapping classes from a logistic model in 2-D (not separable)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    p = 1.0 / (1.0 + np.exp(-2.0 * (X[:, 0] - 0.5 * X[:, 1])))
    return X, (rng.uniform(size=n) < p).astype(np.int64)


X_REG, Y_REG = _regression()
X_CLS, Y_CLS = _classification()
X_TEST_REG = np.linspace(-4.7, 4.7, 9)[:, None]
X_TEST_CLS = np.random.default_rng(2).normal(size=(7, 2))


#: EM converges linearly (Tipping 2001, App. A.3): on several of these cases it needs
#: 10^4-10^5 iterations (two samples, the identity kernel; RVC on 30 points takes seconds
#: per hundred Laplace steps), more than the fast tier can afford. The battery asks EM
#: for a usable fit within these iterations and ignores its ConvergenceWarning on
#: purpose; EM's convergence itself is tested in test_solvers.py and test_rvc.py.
EM_MAX_ITER = {"RVR": 2000, "RVC": 200, "fit_type2": 2000}


def _fit(estimator, solver, X, y, **params):
    """``estimator(solver=solver, **params).fit(X, y)``, EM capped (see EM_MAX_ITER)."""
    if solver != "em":
        return estimator(solver=solver, **params).fit(X, y)
    params.setdefault("max_iter", EM_MAX_ITER[estimator.__name__])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return estimator(solver=solver, **params).fit(X, y)


def _fit_type2(Phi, t, solver, **options):
    """:func:`fit_type2`, EM capped as in :func:`_fit`."""
    if solver != "em":
        return fit_type2(Phi, t, solver=solver, **options)
    options.setdefault("max_iter", EM_MAX_ITER["fit_type2"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fit_type2(Phi, t, solver=solver, **options)


def _usable_regressor(model, X):
    mean, std = model.predict(X, return_std=True)
    assert mean.shape == std.shape == (X.shape[0],)
    assert np.all(np.isfinite(mean))
    assert np.all(np.isfinite(std))
    assert np.all(std > 0)
    return mean, std


def _usable_classifier(model, X):
    proba = model.predict_proba(X)
    assert proba.shape == (X.shape[0], model.classes_.size)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    labels = model.predict(X)
    assert np.all(np.isin(labels, model.classes_))
    return proba


# ---------------------------------------------------------------------------------------
# Errors from the estimators: the data or the options are wrong
# ---------------------------------------------------------------------------------------


def _with(array, index, value):
    out = np.array(array, dtype=np.float64)
    out[index] = value
    return out


#: (X, y) of the wrong kind for both estimators -> (exception, message fragment)
BAD_DATA = {
    "nan_in_X": (_with(X_CLS, (3, 1), np.nan), Y_CLS, ValueError, "NaN"),
    "inf_in_X": (_with(X_CLS, (0, 0), np.inf), Y_CLS, ValueError, "infinity"),
    "nan_in_y": (X_CLS, _with(Y_CLS, 4, np.nan), ValueError, "NaN"),
    "inf_in_y": (X_CLS, _with(Y_CLS, 4, -np.inf), ValueError, "infinity"),
    "empty": (np.empty((0, 2)), np.empty(0), ValueError, "0 sample"),
    "one_sample": (X_CLS[:1], Y_CLS[:1], ValueError, "1 sample"),
    "lengths_differ": (X_CLS, Y_CLS[:-1], ValueError, "inconsistent numbers of samples"),
    "X_1d": (X_CLS[:, 0], Y_CLS, ValueError, "Expected 2D array"),
    "X_3d": (X_CLS[:, :, None], Y_CLS, ValueError, "dim 3"),
    "X_no_features": (np.empty((30, 0)), Y_CLS, ValueError, "0 feature"),
    "y_2_columns": (X_CLS, np.column_stack([Y_CLS, Y_CLS]), ValueError, "1d array"),
    "X_strings": (np.full((30, 2), "a"), Y_CLS, ValueError, "could not convert string"),
    "X_complex": (X_CLS + 1j, Y_CLS, ValueError, "Complex data not supported"),
    "X_sparse": (scipy.sparse.csr_matrix(X_CLS), Y_CLS, TypeError, "dense data is required"),
}

#: estimator options that are invalid -> (exception, message fragment)
BAD_OPTIONS = {
    "unknown_kernel": ({"kernel": "gauss"}, ValueError, "unknown kernel 'gauss'; expected"),
    "kernel_not_callable": ({"kernel": 3}, TypeError, "kernel must be a name"),
    "gamma_name": ({"gamma": "wide"}, ValueError, "gamma must be 'scale', 'auto'"),
    "gamma_negative": ({"gamma": -1.0}, ValueError, "gamma must be finite and > 0"),
    "gamma_nan": ({"gamma": np.nan}, ValueError, "gamma must be finite and > 0"),
    "gamma_wrong_length": ({"gamma": [1.0, 2.0, 3.0]}, ValueError, "one per scale"),
    "degree_zero": ({"kernel": "poly", "degree": 0}, ValueError, "degree must be >= 1"),
    "unknown_solver": ({"solver": "fast"}, ValueError, "unknown solver 'fast'; expected"),
    "a_negative": ({"a": -1.0}, ValueError, "a must be finite and >= 0"),
    "b_string": ({"b": "0"}, TypeError, "b must be a real number"),
    "max_iter_zero": ({"max_iter": 0}, ValueError, "max_iter must be >= 1"),
    "max_iter_float": ({"max_iter": 10.5}, TypeError, "max_iter must be an integer"),
    "tol_zero": ({"tol": 0.0}, ValueError, "tol must be a finite number > 0"),
    "extra_unknown": ({"extra_columns": ["cubic"]}, ValueError, "unknown extra column"),
    "extra_nan": (
        {"extra_columns": [("bad", lambda X: np.full(X.shape[0], np.nan))]},
        ValueError,
        "extra column 'bad' returned NaN",
    ),
    "precomputed_not_square": ({"kernel": "precomputed"}, ValueError, "square training Gram"),
    "scales_without_inputs": (
        {"kernel": "precomputed", "optimize_scales": True},
        ValueError,
        "square training Gram",
    ),
}


@pytest.mark.parametrize("estimator", [RVR, RVC])
@pytest.mark.parametrize("case", list(BAD_DATA))
def test_bad_data_raises_a_clear_error(estimator, case):
    X, y, error, match = BAD_DATA[case]
    with pytest.raises(error, match=match):
        estimator().fit(X, y)


@pytest.mark.parametrize("estimator", [RVR, RVC])
@pytest.mark.parametrize("case", list(BAD_OPTIONS))
def test_bad_options_raise_a_clear_error(estimator, case):
    params, error, match = BAD_OPTIONS[case]
    with pytest.raises(error, match=match):
        estimator(**params).fit(X_CLS, Y_CLS)


@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        ({"noise_var": -0.1}, ValueError, "noise_var must be None or a finite number > 0"),
        ({"noise_var": "small"}, TypeError, "noise_var must be None or a positive number"),
        ({"c": np.inf}, ValueError, "c must be finite and >= 0"),
        ({"solver": "sequential", "a": 1.0}, ValueError, "needs the improper prior"),
    ],
    ids=["noise_var_negative", "noise_var_string", "c_infinite", "sequential_with_prior"],
)
def test_rvr_bad_options(params, error, match):
    with pytest.raises(error, match=match):
        RVR(**params).fit(X_REG, Y_REG)


@pytest.mark.parametrize(
    ("y", "error", "match"),
    [
        (np.where(Y_REG > 0, "up", "down"), TypeError, "y must hold real numbers; got dtype <U"),
        (np.array([None] * 25, dtype=object), ValueError, "could not convert|NaN"),
    ],
    ids=["strings", "none"],
)
def test_rvr_non_numeric_targets(y, error, match):
    with pytest.raises(error, match=match):
        RVR().fit(X_REG, y)


@pytest.mark.parametrize(
    ("y", "error", "match"),
    [
        (np.zeros(30), ValueError, "only one class"),
        (np.full(30, "spam"), ValueError, "only one class"),
        (Y_CLS + 0.5, ValueError, "Unknown label type: continuous"),
        (
            np.array(["a", 1], dtype=object)[Y_CLS],
            ValueError,
            "one type; got a mix of number, str",
        ),
        (np.array([None, "a"], dtype=object)[Y_CLS], ValueError, "must not be missing"),
        (np.array([object(), object()])[Y_CLS], TypeError, "must be comparable"),
    ],
    ids=[
        "one_class",
        "one_class_strings",
        "continuous",
        "mixed_types",
        "none_and_str",
        "unsortable",
    ],
)
def test_rvc_bad_labels(y, error, match):
    with pytest.raises(error, match=match):
        RVC().fit(X_CLS, y)


def test_rvc_bad_options():
    with pytest.raises(ValueError, match="unknown multi_class 'ovo'; expected one of: 'ovr'"):
        RVC(multi_class="ovo").fit(X_CLS, np.arange(30) % 3)
    with pytest.raises(ValueError, match="solver 'sequential' does not support"):
        RVC(solver="sequential", multi_class="multinomial").fit(X_CLS, np.arange(30) % 3)
    with pytest.raises(ValueError, match="needs the improper prior a = b = 0"):
        RVC(solver="sequential", a=1e-6).fit(X_CLS, Y_CLS)


@pytest.mark.parametrize(
    ("X", "error", "match"),
    [
        (_with(X_TEST_CLS, (0, 0), np.nan), ValueError, "NaN"),
        (X_TEST_CLS[:, :1], ValueError, "expecting 2 features"),
        (scipy.sparse.csr_matrix(X_TEST_CLS), TypeError, "dense data is required"),
        (np.empty((0, 2)), ValueError, "0 sample"),
    ],
    ids=["nan", "wrong_width", "sparse", "empty"],
)
@pytest.mark.parametrize("estimator", [RVR, RVC])
def test_bad_prediction_inputs(estimator, X, error, match):
    model = estimator().fit(X_CLS, Y_CLS)
    with pytest.raises(error, match=match):
        model.predict(X)


def test_unfitted_estimators_say_so():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError, match="not fitted yet"):
        RVR().predict(X_REG)
    with pytest.raises(NotFittedError, match="not fitted yet"):
        RVC().predict_proba(X_CLS)


# ---------------------------------------------------------------------------------------
# A failing refit leaves the previous fit intact
# ---------------------------------------------------------------------------------------


def _fitted_state(model):
    return {k: v for k, v in vars(model).items() if k.endswith("_")}


def _assert_same_state(before, after):
    """The same fitted attributes, the same objects: nothing replaced or added."""
    assert before.keys() == after.keys()
    for name, value in before.items():
        assert after[name] is value, name


def _inf_column(Z):
    return np.full(Z.shape[0], np.inf)


#: how the refit data are spoiled -> the error expected
REFIT_FAILURES = {
    "nan_in_X": (lambda X, y: (_with(X, (0, 0), np.nan), y), {}, ValueError),
    "sparse_X": (lambda X, y: (scipy.sparse.csr_matrix(X), y), {}, TypeError),
    "one_sample": (lambda X, y: (X[:1], y[:1]), {}, ValueError),
    "lengths_differ": (lambda X, y: (X, y[:-1]), {}, ValueError),
    # valid data with more features, then a failure inside the fit (after the checks
    # that record n_features_in_)
    "fails_inside_fit": (
        lambda X, y: (np.column_stack([X, X]), y),
        {"extra_columns": [("inf", _inf_column)]},
        ValueError,
    ),
}

FITS = {
    "rvr": (RVR, X_REG, Y_REG, X_TEST_REG, "predict"),
    "rvc_binary": (RVC, X_CLS, Y_CLS, X_TEST_CLS, "predict_proba"),
    "rvc_ovr": (RVC, X_CLS, np.arange(30) % 3, X_TEST_CLS, "predict_proba"),
}


@pytest.mark.parametrize("case", list(REFIT_FAILURES))
@pytest.mark.parametrize("fit", list(FITS))
def test_failing_refit_leaves_the_previous_fit(fit, case):
    estimator, X, y, X_test, method = FITS[fit]
    model = estimator().fit(X, y)
    before, expected = _fitted_state(model), getattr(model, method)(X_test)
    spoil, params, error = REFIT_FAILURES[case]
    with pytest.raises(error):
        model.set_params(**params).fit(*spoil(X, y))
    _assert_same_state(before, _fitted_state(model))
    np.testing.assert_array_equal(getattr(model, method)(X_test), expected)


def test_rvc_refit_with_a_single_class_keeps_the_fit():
    model = RVC().fit(X_CLS, Y_CLS)
    before, expected = _fitted_state(model), model.predict_proba(X_TEST_CLS)
    with pytest.raises(ValueError, match="only one class"):
        model.fit(X_CLS, np.ones(30))
    _assert_same_state(before, _fitted_state(model))
    np.testing.assert_array_equal(model.predict_proba(X_TEST_CLS), expected)


def test_refit_leaves_nothing_of_the_previous_fit():
    """A one-vs-rest fit followed by a binary one: no ``estimators_`` survives."""
    model = RVC().fit(X_CLS, np.arange(30) % 3)
    assert hasattr(model, "estimators_")
    model.fit(X_CLS, Y_CLS)
    assert not hasattr(model, "estimators_")
    np.testing.assert_array_equal(
        model.predict_proba(X_TEST_CLS), RVC().fit(X_CLS, Y_CLS).predict_proba(X_TEST_CLS)
    )
    scaled = RVR(optimize_scales=True).fit(X_REG, Y_REG)
    assert hasattr(scaled, "scales_fit_")
    scaled.set_params(optimize_scales=False).fit(X_REG, Y_REG)
    assert not hasattr(scaled, "scales_fit_")
    assert scaled.scales_ is None


# ---------------------------------------------------------------------------------------
# Regression: numerical edge cases under every solver
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("solver", RVR_SOLVERS)
def test_rvr_constant_target_is_the_bias(solver):
    """A constant target is fitted by the bias alone, with the noise at its floor."""
    model = _fit(RVR, solver, X_REG, np.full(25, 3.0), max_iter=5000)
    mean, _ = _usable_regressor(model, X_TEST_REG)
    np.testing.assert_allclose(mean, 3.0, rtol=1e-6)
    assert model.intercept_active_


@pytest.mark.parametrize("solver", RVR_SOLVERS)
def test_rvr_zero_target_prunes_everything(solver):
    with pytest.warns(EmptyModelWarning, match="every basis function was pruned"):
        model = _fit(RVR, solver, X_REG, np.zeros(25))
    mean, std = _usable_regressor(model, X_TEST_REG)
    np.testing.assert_array_equal(mean, 0.0)
    np.testing.assert_allclose(std, np.sqrt(model.noise_var_), rtol=1e-12)
    assert model.relevance_indices_.size == 0
    assert model.coef_.shape == (0,)


@INTERPOLATES
@pytest.mark.parametrize("solver", RVR_SOLVERS)
def test_rvr_two_samples(solver):
    model = _fit(RVR, solver, X_REG[[3, 20]], Y_REG[[3, 20]])
    _usable_regressor(model, X_TEST_REG)


@pytest.mark.parametrize("solver", RVR_SOLVERS)
def test_rvr_duplicate_rows(solver):
    """Every row twice: duplicated kernel columns, a singular Gram matrix."""
    X, y = np.vstack([X_REG, X_REG]), np.concatenate([Y_REG, Y_REG])
    model = _fit(RVR, solver, X, y)
    mean, _ = _usable_regressor(model, X_TEST_REG)
    # the noise is 0.1: the fit follows the sinc function
    assert np.max(np.abs(mean - np.sinc(X_TEST_REG[:, 0] / np.pi))) < 0.15


@pytest.mark.parametrize(
    "solver",
    [
        "mackay",
        "em",
        "sequential",
    ],
)
def test_rvr_noise_free_target(solver):
    """Noise-free data: the noise goes to its floor, ``A + beta Phi^T Phi`` is ill-conditioned."""
    y = np.sinc(X_REG[:, 0] / np.pi)
    model = _fit(RVR, solver, X_REG, y, gamma=0.25, max_iter=5000)
    mean, _ = _usable_regressor(model, X_TEST_REG)
    np.testing.assert_allclose(mean, np.sinc(X_TEST_REG[:, 0] / np.pi), atol=1e-3)


@pytest.mark.parametrize("scale", [1e-8, 1e8])
@pytest.mark.parametrize("solver", RVR_SOLVERS)
def test_rvr_scale_invariance(solver, scale):
    """Tipping (2001) Sec. 2.1: with a = b = c = d = 0 the model has no scale of its own.

    Scaling ``X`` and ``y`` by ``s`` with ``gamma="scale"`` (``1 / (n_features var X)``)
    leaves the kernel matrix unchanged, scales ``w`` by ``s``, ``alpha`` and ``beta`` by
    ``s^-2``; the starting values (``initial_alpha``, ``initial_noise_var``) and every
    convergence test (gradients in ``log alpha``, gains in nats) are scale-free, so the
    iterations are the same up to rounding. Tolerance 1e-6 relative: the rounding of the
    kernel matrix (~1e-16) amplified by the conditioning of the posterior precision over
    the iterations; measured differences are below 1e-9.
    """
    reference = _fit(RVR, solver, X_REG, Y_REG)
    scaled = _fit(RVR, solver, X_REG * scale, Y_REG * scale)
    mean, std = reference.predict(X_TEST_REG, return_std=True)
    mean_s, std_s = scaled.predict(X_TEST_REG * scale, return_std=True)
    np.testing.assert_array_equal(scaled.relevance_indices_, reference.relevance_indices_)
    np.testing.assert_allclose(mean_s / scale, mean, rtol=1e-6, atol=1e-6 * np.abs(mean).max())
    np.testing.assert_allclose(std_s / scale, std, rtol=1e-6)


@pytest.mark.parametrize("solver", RVR_SOLVERS)
def test_rvr_gamma_near_zero(solver):
    """gamma = 1e-12: every kernel column is 1 to within 1e-10, like the bias. The fit is
    the model with the bias alone (26 copies of one column predict as one column does;
    see the duplicate-column property), to 1e-6 relative."""
    model = _fit(RVR, solver, X_REG, Y_REG, gamma=1e-12)
    mean, _ = _usable_regressor(model, X_TEST_REG)
    bias_only = _fit_type2(np.ones((25, 1)), Y_REG, solver)
    # EM stops (gradient 1e-6 in log alpha, linear convergence) 5e-6 short of the optimum
    np.testing.assert_allclose(mean, bias_only.mu[0], rtol=1e-4 if solver == "em" else 1e-6)


@INTERPOLATES
@pytest.mark.parametrize("solver", RVR_SOLVERS)
def test_rvr_gamma_huge(solver):
    """gamma = 1e12: the identity kernel; away from the training inputs only the bias acts."""
    model = _fit(RVR, solver, X_REG, Y_REG, gamma=1e12)
    mean, _ = _usable_regressor(model, X_TEST_REG + 0.01)  # no test input is a training one
    np.testing.assert_allclose(mean, model.intercept_, rtol=1e-12)


@pytest.mark.parametrize(
    "convert",
    [
        lambda X: X.astype(np.float32),
        lambda X: np.round(X * 4).astype(np.int64),
        lambda X: X > 0,
        lambda X: X.astype(object),
        lambda X: X.tolist(),
    ],
    ids=["float32", "int64", "bool", "object", "list"],
)
def test_rvr_input_dtypes_are_computed_in_float64(convert):
    """The same fit as on the float64 array of the same values, bit for bit (the
    conversion happens in the validation, before any solver: MacKay's only)."""
    solver = "mackay"
    X = convert(X_REG)
    as_float = np.asarray(X, dtype=np.float64)
    if np.ptp(as_float) == 0:
        pytest.skip("constant inputs")
    model = _fit(RVR, solver, X, Y_REG.astype(np.float32))
    reference = _fit(RVR, solver, as_float, Y_REG.astype(np.float32).astype(np.float64))
    mean = model.predict(convert(X_TEST_REG))
    assert mean.dtype == np.float64
    np.testing.assert_array_equal(
        mean, reference.predict(np.asarray(convert(X_TEST_REG), dtype=np.float64))
    )


@pytest.mark.parametrize("solver", RVR_SOLVERS)
def test_rvr_max_iter_reached_warns_and_is_usable(solver):
    with pytest.warns(ConvergenceWarning, match="reached max_iter=2"):
        model = RVR(solver=solver, max_iter=2).fit(X_REG, Y_REG)
    _usable_regressor(model, X_TEST_REG)


# ---------------------------------------------------------------------------------------
# Classification: labels of any type, numerical edge cases
# ---------------------------------------------------------------------------------------

#: label sets in sorted order, so that label k stands for class code k
LABELS = {
    "int": np.array([3, 7]),
    "float": np.array([-1.0, 1.0]),
    "bool": np.array([False, True]),
    "str": np.array(["ham", "spam"]),
    "object_str": np.array(["ham", "spam"], dtype=object),
    "object_int": np.array([0, 1], dtype=object),
    "object_bool": np.array([False, True], dtype=object),
    "fraction": np.array([Fraction(1, 3), Fraction(1, 2)], dtype=object),
    "date": np.array([datetime.date(2001, 6, 1), datetime.date(2003, 1, 1)], dtype=object),
    "datetime64": np.array(["2001-06-01", "2003-01-01"], dtype="datetime64[D]"),
}


@pytest.fixture(scope="module", params=RVC_SOLVERS)
def coded_fit(request):
    """The fit on the integer codes 0 / 1 and 0 / 1 / 2, per solver."""
    solver = request.param
    return solver, {
        2: _fit(RVC, solver, X_CLS, Y_CLS),
        3: _fit(RVC, solver, X_CLS, np.arange(30) % 3),
    }


@pytest.mark.parametrize("kind", list(LABELS))
def test_rvc_labels_of_any_type(coded_fit, kind):
    """Labels are names for the classes: the fit is the one on the codes, renamed."""
    solver, fits = coded_fit
    labels = LABELS[kind]
    model = _fit(RVC, solver, X_CLS, labels[Y_CLS])
    np.testing.assert_array_equal(model.classes_, labels)
    np.testing.assert_array_equal(
        model.predict_proba(X_TEST_CLS), fits[2].predict_proba(X_TEST_CLS)
    )
    np.testing.assert_array_equal(model.predict(X_TEST_CLS), labels[fits[2].predict(X_TEST_CLS)])


@pytest.mark.parametrize("labels", [np.array(["b", "c", "a"]), np.array([2.0, 0.0, 1.0])])
def test_rvc_multiclass_labels(coded_fit, labels):
    solver, fits = coded_fit
    codes = np.arange(30) % 3
    model = _fit(RVC, solver, X_CLS, labels[codes])
    np.testing.assert_array_equal(model.classes_, np.sort(labels))
    # class k of the coded fit is label labels[k], at column argsort position
    order = np.argsort(labels)
    # the one-vs-rest normalisation sums the classes in another order: rounding only
    np.testing.assert_allclose(
        model.predict_proba(X_TEST_CLS), fits[3].predict_proba(X_TEST_CLS)[:, order], rtol=1e-12
    )


@pytest.mark.parametrize("solver", RVC_SOLVERS)
def test_rvc_two_samples_is_the_empty_model(solver):
    """Two points, one per class: no basis function has evidence; probability 1/2."""
    with pytest.warns(EmptyModelWarning, match="every basis function was pruned"):
        model = _fit(RVC, solver, X_CLS[:2], [0, 1])
    proba = _usable_classifier(model, X_TEST_CLS)
    np.testing.assert_array_equal(proba, 0.5)


@pytest.mark.parametrize("solver", RVC_SOLVERS)
def test_rvc_duplicate_rows(solver, coded_fit):
    X, y = np.vstack([X_CLS, X_CLS]), np.concatenate([Y_CLS, Y_CLS])
    model = _fit(RVC, solver, X, y)
    _usable_classifier(model, X_TEST_CLS)
    # agrees with the Bayes classifier of the generating model as often as the fit on
    # one copy does (0.70; measured 0.73 with MacKay)
    bayes = (X_CLS[:, 0] - 0.5 * X_CLS[:, 1] > 0).astype(int)
    assert np.mean(model.predict(X_CLS) == bayes) >= 0.7


@pytest.mark.parametrize("scale", [1e-8, 1e8])
@pytest.mark.parametrize("solver", RVC_SOLVERS)
def test_rvc_input_scale_invariance(solver, scale):
    """With ``gamma="scale"`` the kernel matrix does not change when X is scaled; the
    Laplace fit is then the same up to rounding (tolerance as for RVR)."""
    reference = _fit(RVC, solver, X_CLS, Y_CLS)
    scaled = _fit(RVC, solver, X_CLS * scale, Y_CLS)
    np.testing.assert_array_equal(scaled.relevance_indices_, reference.relevance_indices_)
    np.testing.assert_allclose(
        scaled.predict_proba(X_TEST_CLS * scale), reference.predict_proba(X_TEST_CLS), rtol=1e-6
    )


@pytest.mark.parametrize("solver", RVC_SOLVERS)
def test_rvc_gamma_near_zero(solver):
    """All kernel columns alike (constant): only a bias could act, and with 14 / 30 labels
    of class 1 the evidence keeps none: the empty model, probability 1/2 everywhere."""
    with pytest.warns(EmptyModelWarning, match="every basis function was pruned"):
        model = _fit(RVC, solver, X_CLS, Y_CLS, gamma=1e-12)
    np.testing.assert_array_equal(_usable_classifier(model, X_TEST_CLS), 0.5)


@pytest.mark.parametrize("solver", RVC_SOLVERS)
def test_rvc_gamma_huge(solver):
    """Identity kernel: away from the training inputs only the bias acts."""
    model = _fit(RVC, solver, X_CLS, Y_CLS, gamma=1e12)
    proba = _usable_classifier(model, X_TEST_CLS)
    assert np.ptp(proba[:, 1]) < 1e-12


@pytest.mark.parametrize("solver", RVC_SOLVERS)
def test_rvc_float32_is_computed_in_float64(solver):
    model = _fit(RVC, solver, X_CLS.astype(np.float32), Y_CLS)
    reference = _fit(RVC, solver, X_CLS.astype(np.float32).astype(np.float64), Y_CLS)
    np.testing.assert_array_equal(
        model.predict_proba(X_TEST_CLS.astype(np.float32)),
        reference.predict_proba(X_TEST_CLS.astype(np.float32).astype(np.float64)),
    )


@pytest.mark.parametrize("solver", RVC_SOLVERS)
def test_rvc_max_iter_reached_warns_and_is_usable(solver):
    with pytest.warns(ConvergenceWarning, match="reached max_iter=2"):
        model = RVC(solver=solver, max_iter=2).fit(X_CLS, Y_CLS)
    _usable_classifier(model, X_TEST_CLS)


def test_rvc_multinomial_empty_model_predicts_one_over_k():
    with pytest.warns(EmptyModelWarning, match="every basis function was pruned"):
        model = RVC(multi_class="multinomial").fit(X_CLS[:3], ["a", "b", "c"])
    np.testing.assert_allclose(_usable_classifier(model, X_TEST_CLS), 1.0 / 3.0, rtol=1e-12)


# ---------------------------------------------------------------------------------------
# fit_type2 on a design matrix
# ---------------------------------------------------------------------------------------

PHI = np.column_stack([RBF(0.5)(X_REG, X_REG), np.ones(25)])
PHI_TEST = np.column_stack([RBF(0.5)(X_TEST_REG, X_REG), np.ones(9)])

#: (Phi, t, options) -> (exception, message fragment)
BAD_TYPE2 = {
    "nan_in_Phi": (_with(PHI, (2, 3), np.nan), Y_REG, {}, ValueError, "Phi contains NaN"),
    "inf_in_t": (PHI, _with(Y_REG, 0, np.inf), {}, ValueError, "t contains NaN or infinite"),
    "no_rows": (PHI[:0], Y_REG[:0], {}, ValueError, "non-empty Phi, got shape"),
    "no_columns": (PHI[:, :0], Y_REG, {}, ValueError, "non-empty Phi, got shape"),
    "Phi_1d": (PHI[:, 0], Y_REG, {}, ValueError, "Phi with 2 dimensions, got 1"),
    "Phi_3d": (PHI[None], Y_REG, {}, ValueError, "Phi with 2 dimensions, got 3"),
    "t_too_short": (PHI, Y_REG[:-1], {}, ValueError, "t of length 25 .one per row., got 24"),
    "t_2_columns": (PHI, np.column_stack([Y_REG, Y_REG]), {}, ValueError, "1 dimension"),
    "Phi_complex": (PHI + 0j, Y_REG, {}, TypeError, "Phi must hold real numbers"),
    "Phi_strings": (PHI.astype(str), Y_REG, {}, TypeError, "Phi must hold real numbers"),
    "Phi_ragged": ([[1.0, 2.0], [3.0]], [1.0, 2.0], {}, ValueError, "could not convert"),
    "Phi_sparse": (scipy.sparse.csr_matrix(PHI), Y_REG, {}, TypeError, "dense array"),
    "t_strings": (PHI, Y_REG.astype(str), {}, TypeError, "t must hold real numbers"),
    "unknown_solver": (PHI, Y_REG, {"solver": "lbfgs"}, ValueError, "unknown solver"),
    "unknown_likelihood": (PHI, Y_REG, {"likelihood": "poisson"}, ValueError, "unknown likeli"),
    "bernoulli_not_01": (PHI, Y_REG, {"likelihood": "bernoulli"}, ValueError, "0 and 1"),
    "categorical_one_class": (
        PHI,
        np.zeros(25),
        {"likelihood": "categorical"},
        ValueError,
        "K >= 2 classes",
    ),
    "sequential_categorical": (
        PHI,
        np.arange(25) % 3,
        {"likelihood": "categorical", "solver": "sequential"},
        ValueError,
        "does not support likelihood='categorical'",
    ),
    "noise_var_bernoulli": (
        PHI,
        Y_REG > 0,
        {"likelihood": "bernoulli", "noise_var": 1.0},
        ValueError,
        "gaussian likelihood only",
    ),
    "noise_var_zero": (PHI, Y_REG, {"noise_var": 0.0}, ValueError, "noise_var must be None"),
    "tol_nan": (PHI, Y_REG, {"tol": np.nan}, ValueError, "tol must be a finite number"),
    "max_iter_negative": (PHI, Y_REG, {"max_iter": -3}, ValueError, "max_iter must be >= 1"),
    "d_negative": (PHI, Y_REG, {"d": -1.0}, ValueError, "d must be finite and >= 0"),
}


@pytest.mark.parametrize("case", list(BAD_TYPE2))
def test_fit_type2_bad_input(case):
    Phi, t, options, error, match = BAD_TYPE2[case]
    with pytest.raises(error, match=match):
        fit_type2(Phi, t, **options)


def _type2_prediction(fit, Phi_test):
    mean, var = fit.predict(Phi_test[:, fit.active])
    assert np.all(np.isfinite(mean))
    assert np.all(np.isfinite(var))
    return mean, var


@INTERPOLATES
@pytest.mark.parametrize("solver", RVR_SOLVERS)
def test_fit_type2_one_row(solver):
    fit = _fit_type2(PHI[:1], Y_REG[:1], solver)
    _type2_prediction(fit, PHI_TEST)


@pytest.mark.parametrize("solver", RVR_SOLVERS)
def test_fit_type2_zero_column_is_pruned(solver):
    Phi = np.column_stack([PHI, np.zeros(25)])
    fit = _fit_type2(Phi, Y_REG, solver)
    assert 25 + 1 not in fit.active
    if solver == "em":  # capped: the extra column changes the start, so the stop differs
        return
    reference = _fit_type2(PHI, Y_REG, solver)
    np.testing.assert_allclose(
        _type2_prediction(fit, np.column_stack([PHI_TEST, np.ones(9)]))[0],
        _type2_prediction(reference, PHI_TEST)[0],
        rtol=1e-6,
    )


@pytest.mark.parametrize("solver", RVR_SOLVERS)
def test_fit_type2_column_scaling_does_not_matter(solver):
    """With a = b = 0, scaling column j by c scales w_j by 1/c and alpha_j by c^-2: the
    evidence and the predictions do not change (1e-6 relative, see the RVR scale test)."""
    scales = np.logspace(-8, 8, PHI.shape[1])
    fit = _fit_type2(PHI * scales, Y_REG, solver)
    reference = _fit_type2(PHI, Y_REG, solver)
    np.testing.assert_array_equal(fit.active, reference.active)
    mean, var = _type2_prediction(fit, PHI_TEST * scales)
    mean_ref, var_ref = _type2_prediction(reference, PHI_TEST)
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(var, var_ref, rtol=1e-6)


@pytest.mark.parametrize("solver", RVC_SOLVERS)
def test_fit_type2_bernoulli_one_class_is_finite(solver):
    """All targets 1: the bias weight grows until its alpha stops it; still finite."""
    fit = _fit_type2(PHI, np.ones(25), solver, likelihood="bernoulli")
    mean, _ = _type2_prediction(fit, PHI_TEST)
    assert np.all(mean > 0)


# ---------------------------------------------------------------------------------------
# Factorisation failures: a documented jitter, else a ValueError, never a LinAlgError
# ---------------------------------------------------------------------------------------


def test_cholesky_adds_documented_jitter_to_a_singular_matrix():
    v = np.array([1.0, 2.0, -1.0])
    H = np.outer(v, v)  # rank one, positive semi-definite
    with pytest.raises(linalg.LinAlgError):
        linalg.cholesky(H, lower=True)
    L = _linalg.cholesky(H)
    # the first jitter step that works: eps * mean(diag H) on the diagonal
    jitter = L @ L.T - H
    assert np.allclose(jitter - np.diag(np.diag(jitter)), 0.0, atol=1e-12)
    eps = np.diag(jitter).mean() / np.diag(H).mean()
    assert min(abs(eps / step - 1.0) for step in _linalg.JITTER_STEPS[1:]) < 1e-3


@pytest.mark.parametrize(
    "H",
    [np.diag([1.0, -1.0]), np.array([[1.0, np.nan], [np.nan, 1.0]])],
    ids=["indefinite", "nan"],
)
def test_cholesky_failure_is_a_value_error(H):
    with pytest.raises(_linalg.NotPositiveDefiniteError, match=r"not positive definite|NaN"):
        _linalg.cholesky(H)
    assert issubclass(_linalg.NotPositiveDefiniteError, ValueError)
    assert not issubclass(_linalg.NotPositiveDefiniteError, linalg.LinAlgError)


# ---------------------------------------------------------------------------------------
# Bayesian fits: options and data are checked before any sampling starts
# ---------------------------------------------------------------------------------------

PHI_SMALL = np.random.default_rng(4).normal(size=(8, 2))
T_SMALL = PHI_SMALL @ np.array([1.0, 0.0]) + np.random.default_rng(5).normal(0, 0.1, 8)

BAD_MODELS = {
    "nan_in_Phi": (_with(PHI_SMALL, (0, 0), np.nan), T_SMALL, {}, ValueError, "NaN"),
    "inf_in_t": (PHI_SMALL, _with(T_SMALL, 1, np.inf), {}, ValueError, "NaN or infinite"),
    "empty": (PHI_SMALL[:0], T_SMALL[:0], {}, ValueError, "non-empty Phi"),
    "sparse": (scipy.sparse.csr_matrix(PHI_SMALL), T_SMALL, {}, TypeError, "dense array"),
    "t_too_short": (PHI_SMALL, T_SMALL[:5], {}, ValueError, "t of length 8"),
    "bernoulli_not_01": (PHI_SMALL, T_SMALL, {"likelihood": "bernoulli"}, ValueError, "0, 1"),
    "improper_alpha_prior": (PHI_SMALL, T_SMALL, {"a": 0.0}, ValueError, "improper Gamma"),
    "improper_noise_prior": (PHI_SMALL, T_SMALL, {"d": 0.0}, ValueError, "improper Gamma"),
}


@pytest.mark.parametrize("case", list(BAD_MODELS))
def test_build_model_bad_input(case):
    Phi, t, options, error, match = BAD_MODELS[case]
    prior = dict(PRIOR)
    if options.get("likelihood") == "bernoulli":
        del prior["c"], prior["d"]
    with pytest.raises(error, match=match):
        br.build_model(Phi, t, **{**prior, **options})


@pytest.fixture
def no_sampling(monkeypatch):
    """pm.sample and pm.fit replaced by a failure: errors must come before them."""

    def refuse(*args, **kwargs):
        raise AssertionError("sampling started before the options were checked")

    monkeypatch.setattr(pm, "sample", refuse)
    monkeypatch.setattr(pm, "fit", refuse)
    return br.build_model(PHI_SMALL, T_SMALL, **PRIOR)


BAD_SAMPLE = {
    "draws_zero": ({"draws": 0}, ValueError, "draws must be >= 1"),
    "chains_zero": ({"chains": 0}, ValueError, "chains must be >= 1"),
    "tune_negative": ({"tune": -1}, ValueError, "tune must be >= 0"),
    "cores_float": ({"cores": 1.5}, TypeError, "cores must be an integer"),
    "target_accept_above_1": ({"target_accept": 1.5}, ValueError, r"target_accept must be in"),
    "unknown_sampler": ({"nuts_sampler": "stan"}, ValueError, "unknown nuts_sampler"),
    "Phi_new_width": ({"Phi_new": np.ones((3, 5))}, ValueError, "Phi_new with 2 columns"),
    "Phi_new_nan": ({"Phi_new": np.full((3, 2), np.nan)}, ValueError, "Phi_new contains NaN"),
    "X_new_without_basis": ({"X_new": np.ones((3, 1))}, ValueError, "X_new needs a model"),
}


BAD_VI = {
    "n_zero": ({"n": 0}, ValueError, "n must be >= 1"),
    "draws_zero": ({"draws": 0}, ValueError, "draws must be >= 1"),
    "unknown_method": ({"method": "svgd"}, ValueError, "unknown VI method"),
    "Phi_new_width": ({"Phi_new": np.ones((3, 1))}, ValueError, "Phi_new with 2 columns"),
}


@pytest.mark.parametrize(
    ("function", "case"), [("sample", c) for c in BAD_SAMPLE] + [("fit_vi", c) for c in BAD_VI]
)
def test_options_checked_before_running(no_sampling, function, case):
    """``sample`` and ``fit_vi`` check their options before any sampling or fitting."""
    options, error, match = {"sample": BAD_SAMPLE, "fit_vi": BAD_VI}[function][case]
    with pytest.raises(error, match=match):
        getattr(br, function)(no_sampling, **options)


def test_sample_options_do_not_depend_on_a_wrapped_pm_sample():
    """The options ``sample`` passes on are those of PyMC's own ``pm.sample``, also when
    ``bayes_rvm.inference`` is first imported while ``pm.sample`` is wrapped (as in the
    tests above): a fresh interpreter, the wrapper in place at the first import."""
    code = (
        "import pymc as pm\n"
        "pm.sample = lambda *args, **kwargs: None\n"
        "from bayes_rvm import inference\n"
        "assert {'draws', 'compute_convergence_checks', 'nuts_sampler'}"
        " <= inference._SAMPLE_OPTIONS, sorted(inference._SAMPLE_OPTIONS)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_bayesian_fits_need_a_bayes_rvm_model(no_sampling):
    with pytest.raises(TypeError, match=r"expected a pymc\.Model returned by bayes_rvm"):
        br.sample(pm.Model())
    with pytest.raises(TypeError, match=r"expected a pymc\.Model returned by bayes_rvm"):
        br.fit_vi("model")


def test_to_inference_data_and_model_from_estimator_bad_input():
    fit = fit_type2(PHI_SMALL, T_SMALL)
    with pytest.raises(ValueError, match=r"design matrix of the fit \(2 columns\)"):
        br.to_inference_data(fit, PHI_SMALL[:, :1], T_SMALL)
    with pytest.raises(ValueError, match="t of length 8"):
        br.to_inference_data(fit, PHI_SMALL, T_SMALL[:3])
    with pytest.raises(TypeError, match="expected a Type2Result or a fitted RVR"):
        br.to_inference_data("fit", PHI_SMALL, T_SMALL)
    model = RVR().fit(X_REG, Y_REG)
    with pytest.raises(ValueError, match="the 25 training inputs"):
        br.model_from_estimator(model, X_REG[:10], Y_REG[:10], **PRIOR)
    with pytest.raises(ValueError, match="y contains NaN"):
        br.model_from_estimator(model, X_REG, _with(Y_REG, 0, np.nan), **PRIOR)
    classifier = RVC().fit(X_CLS, np.arange(30) % 3)
    with pytest.raises(ValueError, match="binary classification"):
        br.model_from_estimator(classifier, X_CLS, np.arange(30) % 3, a=2.0, b=0.5)


def test_sample_with_one_observation():
    """A single observation still gives a proper posterior (the prior is proper)."""
    model = br.build_model(PHI_SMALL[:1], T_SMALL[:1], **PRIOR)
    tree = br.sample(
        model, draws=50, tune=50, chains=1, random_seed=3, compute_convergence_checks=False
    )
    for name in ("alpha", "w", "beta"):
        assert np.all(np.isfinite(tree["posterior"][name].values)), name
    assert tree["log_likelihood"]["t"].shape == (1, 50, 1)
