"""The Laplace approximation in classification (bayes_rvm.laplace), checked independently."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, optimize
from scipy.linalg import solve_triangular
from scipy.special import expit, softmax
from scipy.stats import norm

from bayes_rvm import _linalg
from bayes_rvm.evidence import (
    delta_add,
    delta_add_shared,
    posterior_sparsity_quality,
)
from bayes_rvm.laplace import (
    Bernoulli,
    Categorical,
    latent_covariance,
    latent_variance,
    log_class_proba,
    log_evidence_laplace,
    posterior_mode,
)


def _binary_problem(rng, n=40, m=6):
    Phi = np.column_stack([rng.normal(size=(n, m - 1)), np.ones(n)])
    w_true = rng.normal(size=m)
    t = (rng.uniform(size=n) < expit(Phi @ w_true)).astype(float)
    alpha = rng.uniform(0.2, 3.0, size=m)
    return Phi, t, alpha


def _softmax_problem(rng, n=45, m=5, k=3):
    Phi = np.column_stack([rng.normal(size=(n, m - 1)), np.ones(n)])
    F = Phi @ rng.normal(size=(m, k))
    P = np.exp(F - F.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    t = np.array([rng.choice(k, p=p) for p in P])
    t[:k] = np.arange(k)  # every class present
    alpha = rng.uniform(0.2, 3.0, size=m)
    return Phi, t, alpha


def _random_chol(rng, size):
    """Lower Cholesky factor of a random well-conditioned precision matrix."""
    G = rng.normal(size=(size, size))
    return np.linalg.cholesky(G @ G.T + size * np.eye(size))


def _log_joint_bernoulli(w, Phi, t, alpha):
    """Eq. 24 written out naively (fine for moderate latent values)."""
    y = expit(Phi @ w)
    return float(np.sum(t * np.log(y) + (1 - t) * np.log(1 - y)) - 0.5 * np.sum(alpha * w**2))


def _log_joint_softmax(w_flat, Phi, t, alpha, k):
    W = w_flat.reshape(-1, k)
    F = Phi @ W
    P = np.exp(F) / np.exp(F).sum(axis=1, keepdims=True)
    return float(np.sum(np.log(P[np.arange(t.size), t])) - 0.5 * np.sum(alpha[:, None] * W**2))


def _fd_gradient(f, x, h=1e-5):
    g = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def _fd_hessian(grad, x, h=1e-5):
    H = np.empty((x.size, x.size))
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        H[:, i] = (grad(x + e) - grad(x - e)) / (2 * h)
    return 0.5 * (H + H.T)


def test_bernoulli_mode_gradient_zero_and_hessian_matches_finite_differences(rng):
    Phi, t, alpha = _binary_problem(rng)
    mode = posterior_mode(Phi, Bernoulli(t), alpha)
    assert mode.converged

    def grad(w):  # Tipping (2001) eq. 24 differentiated once
        return Phi.T @ (t - expit(Phi @ w)) - alpha * w

    assert np.max(np.abs(grad(mode.mu))) < 1e-8
    # the analytic gradient is itself that of eq. 24 (central differences, O(h^2) error)
    w_any = rng.normal(size=alpha.size)
    numeric = _fd_gradient(lambda w: _log_joint_bernoulli(w, Phi, t, alpha), w_any)
    np.testing.assert_allclose(grad(w_any), numeric, rtol=1e-6, atol=1e-6)
    # Laplace precision Phi^T B Phi + A (eq. 25) against minus the numerical Hessian
    H = mode.precision_chol @ mode.precision_chol.T
    np.testing.assert_allclose(H, -_fd_hessian(grad, mode.mu), rtol=1e-6, atol=1e-7)
    assert mode.log_joint == pytest.approx(_log_joint_bernoulli(mode.mu, Phi, t, alpha), rel=1e-12)


def test_softmax_mode_gradient_zero_and_hessian_matches_finite_differences(rng):
    Phi, t, alpha = _softmax_problem(rng)
    k = 3
    link = Categorical(t)
    mode = posterior_mode(Phi, link, alpha)
    assert mode.converged
    assert mode.mu.shape == (Phi.shape[1], k)

    def objective(w_flat):
        return _log_joint_softmax(w_flat, Phi, t, alpha, k)

    def grad(w_flat):  # Bishop (2006) eq. 4.109 with the prior
        W = w_flat.reshape(-1, k)
        F = Phi @ W
        P = np.exp(F) / np.exp(F).sum(axis=1, keepdims=True)
        return (Phi.T @ (link.target - P) - alpha[:, None] * W).ravel()

    assert np.max(np.abs(grad(mode.mu.ravel()))) < 1e-8
    w_any = rng.normal(size=alpha.size * k)
    np.testing.assert_allclose(grad(w_any), _fd_gradient(objective, w_any), rtol=1e-6, atol=1e-6)
    H = mode.precision_chol @ mode.precision_chol.T
    np.testing.assert_allclose(H, -_fd_hessian(grad, mode.mu.ravel()), rtol=1e-6, atol=1e-7)
    assert mode.log_joint == pytest.approx(objective(mode.mu.ravel()), rel=1e-12)


def test_mode_agrees_with_scipy_and_survives_a_bad_start(rng):
    """Step halving: from a start far away (overflowing exp) the same mode is reached."""
    Phi, t, alpha = _binary_problem(rng)
    reference = optimize.minimize(
        lambda w: -_log_joint_bernoulli(w, Phi, t, alpha),
        np.zeros(alpha.size),
        jac=lambda w: -(Phi.T @ (t - expit(Phi @ w)) - alpha * w),
        method="BFGS",
        options={"gtol": 1e-10},
    ).x
    cold = posterior_mode(Phi, Bernoulli(t), alpha)
    far = posterior_mode(Phi, Bernoulli(t), alpha, w0=200.0 * rng.normal(size=alpha.size))
    np.testing.assert_allclose(cold.mu, reference, atol=1e-6)
    np.testing.assert_allclose(far.mu, cold.mu, atol=1e-9)
    assert far.converged
    # a warm start at the mode needs one step
    warm = posterior_mode(Phi, Bernoulli(t), alpha, w0=cold.mu)
    assert warm.n_iter == 1


def test_log_likelihoods_are_stable_for_huge_latent_values():
    t = np.array([1.0, 0.0, 1.0, 0.0])
    F = np.array([800.0, -800.0, -800.0, 800.0])
    # log sigmoid(800) = 0, log sigmoid(-800) = -800
    assert Bernoulli(t).log_likelihood(F) == pytest.approx(-1600.0, rel=1e-15)
    F3 = np.array([[1000.0, 0.0, -1000.0], [0.0, 0.0, 0.0]])
    value = Categorical(np.array([2, 1]), n_classes=3).log_likelihood(F3)
    assert value == pytest.approx(-2000.0 - np.log(3.0), rel=1e-15)


def test_laplace_evidence_matches_a_direct_computation(rng):
    """Bishop (2006) eq. 7.114 term by term with scipy densities and a numerical Hessian."""
    Phi, t, alpha = _binary_problem(rng)
    mode = posterior_mode(Phi, Bernoulli(t), alpha)

    def grad(w):
        return Phi.T @ (t - expit(Phi @ w)) - alpha * w

    H = -_fd_hessian(grad, mode.mu)
    expected = (
        np.sum(t * np.log(expit(Phi @ mode.mu)) + (1 - t) * np.log(expit(-(Phi @ mode.mu))))
        + np.sum(norm.logpdf(mode.mu, scale=1.0 / np.sqrt(alpha)))
        + 0.5 * alpha.size * np.log(2 * np.pi)
        - 0.5 * np.linalg.slogdet(H)[1]
    )
    assert log_evidence_laplace(mode, alpha) == pytest.approx(expected, abs=1e-6)
    # proper Gamma(a, b) prior on every alpha adds sum log p(log alpha)
    a, b = 2.0, 0.5
    from scipy.stats import gamma as gamma_dist

    prior_terms = np.sum(gamma_dist.logpdf(alpha, a, scale=1 / b) + np.log(alpha))
    assert log_evidence_laplace(mode, alpha, a, b) == pytest.approx(
        expected + prior_terms, abs=1e-6
    )


def test_softmax_laplace_evidence_matches_a_direct_computation(rng):
    Phi, t, alpha = _softmax_problem(rng)
    k = 3
    link = Categorical(t)
    mode = posterior_mode(Phi, link, alpha)

    def grad(w_flat):
        W = w_flat.reshape(-1, k)
        F = Phi @ W
        P = np.exp(F) / np.exp(F).sum(axis=1, keepdims=True)
        return (Phi.T @ (link.target - P) - alpha[:, None] * W).ravel()

    H = -_fd_hessian(grad, mode.mu.ravel())
    F = Phi @ mode.mu
    P = np.exp(F) / np.exp(F).sum(axis=1, keepdims=True)
    expected = (
        np.sum(np.log(P[np.arange(t.size), t]))
        + np.sum(norm.logpdf(mode.mu, scale=1.0 / np.sqrt(alpha)[:, None]))
        + 0.5 * mode.mu.size * np.log(2 * np.pi)
        - 0.5 * np.linalg.slogdet(H)[1]
    )
    assert log_evidence_laplace(mode, alpha) == pytest.approx(expected, abs=1e-6)


def test_moderated_output_approximates_the_gaussian_integral():
    """Probit approximation (Bishop 2006, eq. 4.155) against quadrature: within 0.02."""
    for mean, var in [(0.0, 4.0), (1.5, 0.3), (-2.0, 10.0), (3.0, 25.0)]:
        exact = integrate.quad(
            lambda a, mean=mean, var=var: expit(a) * norm.pdf(a, mean, np.sqrt(var)),
            -np.inf,
            np.inf,
        )[0]
        moderated = np.exp(log_class_proba(np.array([mean]), np.array([var])))[0, 1]
        assert moderated == pytest.approx(exact, abs=0.02)
    assert np.exp(log_class_proba(np.array([1.3]), np.array([0.0])))[0, 1] == pytest.approx(
        expit(1.3), rel=1e-15
    )
    covariance = 50.0 * np.eye(3)[None]
    P = np.exp(log_class_proba(np.array([[2.0, 0.0, -1.0]]), covariance))
    assert P.sum() == pytest.approx(1.0)
    assert P.max() < expit(2.0)
    with pytest.raises(ValueError, match=r"covariance of shape \(1, 3, 3\)"):
        log_class_proba(np.array([[2.0, 0.0, -1.0]]), np.array([[50.0, 50.0, 50.0]]))


def test_latent_covariance_and_variance_are_quadratic_forms_of_sigma(rng):
    Phi, t, alpha = _softmax_problem(rng)
    mode = posterior_mode(Phi, Categorical(t), alpha)
    L = mode.precision_chol
    Sigma = np.linalg.inv(L @ L.T)  # test only: independent of the triangular solves
    Phi_star = rng.normal(size=(7, Phi.shape[1]))
    got = latent_covariance(Phi_star, L, 3)
    for k in range(3):
        for j in range(3):
            block = Sigma[k::3, j::3]
            expected = np.einsum("ij,jk,ik->i", Phi_star, block, Phi_star)
            np.testing.assert_allclose(got[:, k, j], expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.einsum("nkk->nk", got), latent_variance(Phi_star, L, 3))


def test_moderated_softmax_follows_monte_carlo_over_the_laplace_posterior(rng):
    """The moderated softmax against 40,000 draws of the weights from N(mu, H^-1).

    A weakly determined 3-class fit (latent variances about 17, most of it common to the
    three outputs, which the softmax ignores). Every probability must be within four Monte
    Carlo standard errors (below 0.0025 each); moderating each difference of two outputs
    by the probit approximation was off by 0.026, each output by its own variance by 0.34,
    the modal softmax by 0.17.
    """
    Phi, t, alpha = _softmax_problem(rng)
    K, M = 3, Phi.shape[1]
    mode = posterior_mode(Phi, Categorical(t), 0.05 * alpha)
    Phi_star = np.column_stack([rng.normal(size=(200, M - 1)), np.ones(200)])
    mean = Phi_star @ mode.mu
    covariance = latent_covariance(Phi_star, mode.precision_chol, K)
    moderated = np.exp(log_class_proba(mean, covariance))
    draws = 40_000
    # w - mu = L^-T z has covariance (L L^T)^-1 = H^-1
    W = solve_triangular(mode.precision_chol.T, rng.standard_normal((M * K, draws)))
    latent = mean[:, :, None] + np.einsum("im,mkd->ikd", Phi_star, W.reshape(M, K, draws))
    P = softmax(latent, axis=1)
    monte_carlo, se = P.mean(axis=2), P.std(axis=2) / np.sqrt(draws)
    np.testing.assert_allclose(moderated.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(np.abs(moderated - monte_carlo) <= 4 * se + 1e-4)


def test_moderated_softmax_ignores_common_variance_and_reduces_to_binary(rng):
    mean = rng.normal(size=(6, 3))
    covariance = latent_covariance(rng.normal(size=(6, 4)), _random_chol(rng, 12), 3)
    shifted = covariance + 1e3  # a variance shared by every output: the softmax ignores it
    np.testing.assert_allclose(
        log_class_proba(mean, shifted), log_class_proba(mean, covariance), rtol=1e-9
    )
    # K = 2: the softmax of (a_0, a_1) is the sigmoid of d = a_1 - a_0, integrated over
    # N(E[d], Var[d]) by quadrature
    pair = mean[:, :2]
    cov2 = covariance[:, :2, :2]
    diff_var = cov2[:, 0, 0] + cov2[:, 1, 1] - 2.0 * cov2[:, 0, 1]
    exact = [
        integrate.quad(lambda d, m=m, s=s: expit(d) * norm.pdf(d, m, s), -np.inf, np.inf)[0]
        for m, s in zip(pair[:, 1] - pair[:, 0], np.sqrt(diff_var), strict=True)
    ]
    np.testing.assert_allclose(np.exp(log_class_proba(pair, cov2))[:, 1], exact, atol=1e-4)


def test_block_sparsity_quality_reduces_to_the_scalar_case(rng):
    sigma = rng.uniform(0.1, 1.0, size=6)
    mu = rng.normal(size=6)
    alpha = rng.uniform(0.5, 2.0, size=6)
    s1, q1 = posterior_sparsity_quality(sigma, mu, alpha)
    s2, q2 = posterior_sparsity_quality(sigma[:, None, None], mu[:, None], alpha)
    np.testing.assert_allclose(s2[:, 0], s1, rtol=1e-12)
    np.testing.assert_allclose(np.abs(q2[:, 0]), np.abs(q1), rtol=1e-12)
    S = rng.uniform(0.1, 2.0, size=8)
    Q = rng.normal(scale=2.0, size=8)
    np.testing.assert_allclose(
        delta_add_shared(S[:, None, None], Q[:, None]), delta_add(S, Q), rtol=1e-6, atol=1e-10
    )


def test_bad_targets_are_rejected():
    with pytest.raises(ValueError, match="0 and 1"):
        Bernoulli(np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="integer class codes"):
        Categorical(np.array([0.0, 1.5, 2.0]))
    with pytest.raises(ValueError, match="K >= 2"):
        Categorical(np.zeros(5, dtype=int))
    with pytest.raises(ValueError, match="integer class codes"):
        Categorical(np.array([0, -1, 1]))


def test_precision_factor_is_lower_triangular_cholesky(rng):
    Phi, t, alpha = _binary_problem(rng)
    mode = posterior_mode(Phi, Bernoulli(t), alpha)
    y = mode.y
    H = Phi.T @ ((y * (1 - y))[:, None] * Phi) + np.diag(alpha)
    np.testing.assert_allclose(mode.precision_chol, _linalg.cholesky(H), rtol=1e-10)
    assert np.allclose(np.triu(mode.precision_chol, 1), 0.0)
