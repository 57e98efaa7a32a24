"""Kernel overflow and input validation: every case ends in a clear error naming the cause.

The kernel output is checked in one place (where the basis evaluates the kernel columns),
so an overflow is reported as an overflow of the kernel, not as a failing Cholesky
factorisation or a NaN in a design matrix the user never passed.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from bayes_rvm import RVC, RVR
from bayes_rvm._validation import check_class_labels
from bayes_rvm.datasets import make_sinc
from bayes_rvm.kernels import RBF
from bayes_rvm.solvers import EmptyModelWarning


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    return X, X[:, 0] + 0.1 * rng.normal(size=30)


@pytest.mark.parametrize(
    ("options", "scale", "match"),
    [
        ({"kernel": "poly", "gamma": 1e200}, 1.0, r"kernel Polynomial.* overflowed"),
        ({"kernel": "linear"}, 1e200, r"kernel Linear\(\) overflowed"),
        ({"kernel": "linear_spline"}, 1e120, r"kernel LinearSpline\(\) overflowed"),
        ({"kernel": "poly", "degree": 50, "gamma": 1.0}, 1e10, r"kernel Polynomial.* overflowed"),
        ({}, 1e200, r"gamma='scale' .* outside the float range"),
    ],
)
def test_kernel_overflow_is_named(data, options, scale, match):
    X, y = data
    for estimator, target in ((RVR, y), (RVC, (y > 0).astype(int))):
        with pytest.raises(ValueError, match=match):
            estimator(solver="mackay", **options).fit(X * scale, target)


def test_gamma_scale_at_float_max_is_not_silently_one(data):
    X, y = data
    X = np.vstack([X, [[np.finfo(float).max, -np.finfo(float).max]]])
    with pytest.raises(ValueError, match="outside the float range"):
        RVR().fit(X, np.r_[y, 0.0])


def test_gamma_scale_is_not_needed_by_kernels_without_gamma(data):
    """A linear spline on tiny inputs: gamma='scale' would be out of range, but unused."""
    X, y = data
    with warnings.catch_warnings():  # the spline is ~1 everywhere: nothing to learn
        warnings.simplefilter("ignore", EmptyModelWarning)
        model = RVR(kernel="linear_spline", solver="mackay").fit(X * 1e-160, y)
    assert np.all(np.isfinite(model.predict(X * 1e-160)))


@pytest.mark.parametrize("coef0", [np.inf, np.nan])
def test_coef0_must_be_finite(data, coef0):
    X, y = data
    with pytest.raises(ValueError, match="coef0 must be a finite number"):
        RVR(kernel="poly", coef0=coef0).fit(X, y)


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"gamma": None}, TypeError, "gamma must be a positive number or array, got None"),
        ({"kernel": RBF}, TypeError, r"got the class RBF: pass an instance such as RBF\(\)"),
        ({"extra_columns": 5}, TypeError, r"extra_columns must be a sequence .* got 5"),
        ({"extra_columns": {"linear": None}}, TypeError, "extra_columns must be a sequence"),
        (
            {"extra_columns": ["linear", ("x1", lambda X: X[:, 0] ** 2)]},
            ValueError,
            r"names must be unique .*\['x1'\]",
        ),
        (
            {"extra_columns": [("bias", lambda X: X[:, 0] ** 2)]},
            ValueError,
            r"differ from 'bias'",
        ),
        (
            {"extra_columns": [("f", lambda X: X[:5, 0])]},
            ValueError,
            r"extra column 'f' must return shape \(30,\) .* got shape \(5,\)",
        ),
        (
            {"extra_columns": [("f", lambda X: X[:, 0] + 1j)]},
            TypeError,
            "extra column 'f' returned complex values",
        ),
        ({"kernel": lambda A, B: A @ B.T + 1j}, TypeError, "returned complex values"),
    ],
)
def test_invalid_options_are_named(data, options, error, match):
    X, y = data
    with pytest.raises(error, match=match):
        RVR(**options).fit(X, y)


def test_labels_without_a_total_order_are_rejected():
    labels = np.array([frozenset({i % 3}) for i in range(30)], dtype=object)
    with pytest.raises(TypeError, match="totally ordered"):
        check_class_labels(labels)


def test_missing_labels_are_named(data):
    pd = pytest.importorskip("pandas")
    X, _ = data
    labels = pd.array(["a", "b"] * 14 + [pd.NA, "a"], dtype="string")
    with pytest.raises(ValueError, match=r"must not be missing.*first at position 28"):
        RVC().fit(X, labels)
    with pytest.raises(ValueError, match="must not be missing"):
        RVC().fit(X, ["a", "b"] * 14 + [None, "a"])


def test_make_sinc_needs_a_finite_width():
    with pytest.raises(ValueError, match="finite width"):
        make_sinc(10, x_range=(-1e308, 1e308))


def test_softmax_beyond_its_size_refuses_and_points_to_ovr():
    """50 classes on 100 points: 5050 softmax weights, a 204 MB Hessian per Newton step."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(100, 2)), np.arange(100) % 50
    with pytest.raises(ValueError, match=r"101 basis functions x 50 classes = 5050.*'ovr'"):
        RVC(multi_class="multinomial").fit(X, y)
