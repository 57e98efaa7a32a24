"""The RVR estimator: scikit-learn contract, Gaussian-process form, paper examples, errors."""

from __future__ import annotations

import numpy as np
import pytest

from bayes_rvm import RVR
from bayes_rvm.kernels import RBF


@pytest.fixture(scope="module")
def fitted():
    x = np.linspace(-10, 10, 60)[:, None]
    y = np.sinc(x[:, 0] / np.pi) + np.random.default_rng(5).normal(0, 0.1, 60)
    return RVR(kernel="rbf", gamma=0.25).fit(x, y), x, y


def test_predictive_equals_gaussian_process_form(fitted):
    """Tipping (2001) App. D.1: the RVM is a GP with covariance sum_i phi_i phi_i^T / alpha_i."""
    model, x, y = fitted
    xs = np.linspace(-12, 12, 17)[:, None]
    kernel = RBF(0.25)

    def features(z):  # active basis functions only
        cols = [kernel(z, model.relevance_vectors_)]
        if model.intercept_active_:
            cols.append(np.ones((len(z), 1)))
        return np.column_stack(cols)

    def cov(z1, z2):  # eq. 59
        return (features(z1) / model.alpha_) @ features(z2).T

    C = cov(x, x) + model.noise_var_ * np.eye(len(x))
    mean_gp = cov(xs, x) @ np.linalg.solve(C, y)
    var_gp = (
        model.noise_var_
        + np.diag(cov(xs, xs))
        - np.einsum("ij,ji->i", cov(xs, x), np.linalg.solve(C, cov(x, xs)))
    )
    mean, std = model.predict(xs, return_std=True)
    np.testing.assert_allclose(mean, mean_gp, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(std**2, var_gp, rtol=1e-8)


def test_fitted_attributes(fitted):
    model, x, _y = fitted
    m = len(model.relevance_indices_)
    assert 3 <= m <= 15
    np.testing.assert_array_equal(model.relevance_vectors_, x[model.relevance_indices_])
    assert model.alpha_.shape == (m + model.intercept_active_,)
    assert model.sigma_.shape == (model.alpha_.size,) * 2
    assert 0.05 < np.sqrt(model.noise_var_) < 0.2
    assert model.log_evidence_ == model.log_evidence_path_[-1]
    # the mean is the weighted sum of the relevance-vector kernels plus the bias
    xs = np.array([[0.3], [4.0]])
    manual = RBF(0.25)(xs, model.relevance_vectors_) @ model.coef_ + model.intercept_
    np.testing.assert_allclose(model.predict(xs), manual, rtol=1e-12)


def test_std_includes_noise_and_weight_uncertainty(fitted):
    model, _, _ = fitted
    _, std = model.predict(np.array([[0.0], [100.0]]), return_std=True)
    assert std[0] ** 2 > 1.01 * model.noise_var_
    # far from the data only the bias weight's uncertainty is left
    bias_var = model.sigma_[-1, -1] if model.intercept_active_ else 0.0
    assert std[1] ** 2 == pytest.approx(model.noise_var_ + bias_var, rel=1e-9)


def test_precomputed_kernel_equals_rbf(fitted):
    model, x, y = fitted
    K = RBF(0.25)(x, x)
    pre = RVR(kernel="precomputed").fit(K, y)
    np.testing.assert_array_equal(pre.relevance_indices_, model.relevance_indices_)
    xs = np.linspace(-5, 5, 7)[:, None]
    np.testing.assert_allclose(
        pre.predict(RBF(0.25)(xs, x)), model.predict(xs), rtol=1e-10, atol=1e-12
    )
    with pytest.raises(ValueError, match="square training Gram matrix"):
        RVR(kernel="precomputed").fit(K[:, :10], y)
    with pytest.raises(ValueError, match="expecting 60 features"):
        pre.predict(K[:, :10])


def test_callable_kernel_and_no_bias(fitted):
    _, x, y = fitted
    model = RVR(kernel=lambda A, B: RBF(0.25)(A, B), bias=False).fit(x, y)
    assert model.intercept_ == 0.0 and not model.intercept_active_
    assert model.alpha_.size == model.relevance_indices_.size


@pytest.mark.parametrize(
    ("X", "y", "params", "match"),
    [
        (np.ones((3, 1)), np.ones(4), {}, "inconsistent numbers of samples"),
        (np.full((3, 1), np.nan), np.ones(3), {}, "NaN"),
        (np.ones((3, 1)), [1.0, np.inf, 0.0], {}, "infinity"),
        (np.ones((1, 1)), np.ones(1), {}, "at least 2 samples"),
        (np.ones((0, 1)), np.ones(0), {}, "0 sample"),
        (np.ones((3, 1)), np.ones(3), {"noise_var": -0.1}, "noise_var"),
        (np.ones((3, 1)), np.ones(3), {"kernel": "gauss"}, "expected one of"),
        (np.ones((3, 1)), np.ones(3), {"gamma": "wide"}, "gamma must be"),
        (np.ones((3, 1)), np.ones(3), {"solver": "fast"}, "unknown solver"),
    ],
)
def test_bad_input(X, y, params, match):
    with pytest.raises(ValueError, match=match):
        RVR(**params).fit(X, y)
