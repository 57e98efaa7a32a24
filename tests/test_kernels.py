"""Kernels against their formulas, written out independently here."""

from __future__ import annotations

import numpy as np
import pytest

from bayes_rvm.kernels import (
    RBF,
    CallableKernel,
    Laplacian,
    Linear,
    LinearSpline,
    Polynomial,
    get_kernel,
)

KERNELS = [
    RBF(0.7),
    RBF(np.array([0.5, 2.0, 0.1])),
    Laplacian(0.3),
    LinearSpline(),
    Polynomial(2, 0.5, 1.0),
    Linear(),
]


@pytest.fixture
def points(rng):
    return rng.normal(size=(7, 3)), rng.normal(size=(5, 3))


def test_rbf_matches_elementwise_formula(points):
    X, Y = points
    eta = np.array([0.5, 2.0, 0.1])
    expected = np.array([[np.exp(-np.sum(eta * (x - y) ** 2)) for y in Y] for x in X])
    np.testing.assert_allclose(RBF(eta)(X, Y), expected, rtol=1e-13)
    expected_iso = np.array([[np.exp(-0.7 * np.sum((x - y) ** 2)) for y in Y] for x in X])
    np.testing.assert_allclose(RBF(0.7)(X, Y), expected_iso, rtol=1e-13)


def test_rbf_is_at_most_one_where_the_expansion_rounds_above_zero(rng):
    """Far from the origin ``2 x.y - |x|^2 - |y|^2`` loses its digits and rounds above 0
    for some nearby pairs; the kernel caps the exponent at 0."""
    X = 30.0 + 1e-3 * rng.normal(size=(200, 5))
    K = RBF(1.0)(X, X)
    assert K.max() <= 1.0
    np.testing.assert_allclose(K, RBF(1.0)(X - 30.0, X - 30.0), rtol=0, atol=1e-10)


def test_laplacian_matches_elementwise_formula(points):
    X, Y = points
    expected = np.array([[np.exp(-0.3 * np.sum(np.abs(x - y))) for y in Y] for x in X])
    np.testing.assert_allclose(Laplacian(0.3)(X, Y), expected, rtol=1e-13)


def test_linear_spline_eq29_by_hand():
    # x_m = 1, x_n = 2: 1 + 2 + 2*1 - (3/2)*1 + 1/3
    assert LinearSpline()(np.array([[1.0]]), np.array([[2.0]]))[0, 0] == pytest.approx(
        1 + 2 + 2 - 1.5 + 1 / 3, rel=1e-14
    )
    # product over dimensions
    K2 = LinearSpline()(np.array([[1.0, 0.5]]), np.array([[2.0, 3.0]]))[0, 0]
    k_second = 1 + 1.5 + 1.5 * 0.5 - 3.5 / 2 * 0.25 + 0.125 / 3
    assert pytest.approx((1 + 2 + 2 - 1.5 + 1 / 3) * k_second, rel=1e-14) == K2


def test_polynomial_and_linear(points):
    X, Y = points
    np.testing.assert_allclose(Polynomial(2, 0.5, 1.0)(X, Y), (0.5 * X @ Y.T + 1.0) ** 2)
    # one scale per input: (sum_k gamma_k x_k y_k + coef0)^degree, entry by entry
    gamma = np.linspace(0.2, 1.0, X.shape[1])
    expected = [[(np.sum(gamma * x * y) + 1.0) ** 2 for y in Y] for x in X]
    np.testing.assert_allclose(Polynomial(2, gamma, 1.0)(X, Y), expected, rtol=1e-13)
    on_diagonal = [(np.sum(gamma * x * x) + 1.0) ** 2 for x in X]
    np.testing.assert_allclose(Polynomial(2, gamma, 1.0).diag(X), on_diagonal, rtol=1e-13)
    with pytest.raises(ValueError, match="expected 2 features"):
        Polynomial(2, [1.0, 2.0])(X, Y)
    np.testing.assert_allclose(Linear()(X, Y), X @ Y.T)


@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
def test_diag_is_the_gram_diagonal(kernel, points):
    X, _ = points
    np.testing.assert_allclose(kernel.diag(X), np.diag(kernel(X, X)), rtol=1e-12)


def test_callable_kernel_is_checked(points):
    X, Y = points
    K = CallableKernel(lambda A, B: A @ B.T)
    np.testing.assert_allclose(K(X, Y), X @ Y.T)
    np.testing.assert_allclose(K.diag(X), np.sum(X**2, axis=1))
    with pytest.raises(ValueError, match="returned shape"):
        CallableKernel(lambda A, B: A @ A.T)(X, Y)
    with pytest.raises(ValueError, match="NaN"):
        CallableKernel(lambda A, B: np.full((len(A), len(B)), np.nan))(X, Y)


def test_get_kernel_table():
    assert isinstance(get_kernel("rbf", 2.0), RBF)
    assert isinstance(get_kernel(lambda A, B: A @ B.T), CallableKernel)
    k = Linear()
    assert get_kernel(k) is k
    with pytest.raises(ValueError, match=r"expected one of: .*linear_spline"):
        get_kernel("gaussian")
    with pytest.raises(TypeError, match="kernel must be"):
        get_kernel(3)


@pytest.mark.parametrize("gamma", [0.0, -1.0, np.inf, np.array([1.0, -1.0]), np.ones((2, 2))])
def test_bad_scales(gamma):
    with pytest.raises(ValueError, match="gamma"):
        RBF(gamma)


def test_mismatched_features():
    with pytest.raises(ValueError, match="same number of features"):
        RBF(1.0)(np.ones((2, 3)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="one per scale"):
        RBF(np.ones(2))(np.ones((2, 3)), np.ones((2, 3)))


@pytest.mark.parametrize("offset", [1e4, 1e7, 1.7e9])
def test_rbf_is_translation_invariant_far_from_the_origin(rng, offset):
    """Inputs on a grid that ``x + offset`` holds exactly: the Gram matrix of the shifted
    inputs is the elementwise formula of the unshifted ones."""
    X = np.round(rng.normal(size=(40, 3)) * 512) / 512
    Y = np.round(rng.normal(size=(9, 3)) * 512) / 512
    eta = np.array([0.5, 2.0, 0.1])
    expected = np.exp(-np.sum(eta * (X[:, None, :] - Y[None, :, :]) ** 2, axis=2))
    np.testing.assert_allclose(RBF(eta)(X + offset, Y + offset), expected, rtol=1e-13)
    np.testing.assert_allclose(RBF(eta)(X + offset), RBF(eta)(X), rtol=1e-13)
