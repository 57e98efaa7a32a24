"""The evidence and the one-basis-function analysis against dense N x N computations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from bayes_rvm.evidence import (
    Prior,
    column_gain,
    delta_add,
    delta_delete,
    delta_reestimate,
    hyperprior_log_density,
    log_evidence_dense,
    log_evidence_gaussian,
    log_likelihood_alpha_i,
    noise_variance,
    optimal_alpha,
    own_sparsity_quality,
    sparsity_quality,
)
from bayes_rvm.posterior import fit_gaussian, gaussian_posterior


@pytest.fixture
def problem(rng):
    N, M = 40, 12
    Phi = rng.normal(size=(N, M))
    t = Phi[:, :3] @ np.array([1.0, -2.0, 0.5]) + rng.normal(0, 0.3, N)
    alpha = rng.uniform(0.1, 5.0, M)
    return Phi, t, alpha, 1 / 0.3**2


def weight_space_evidence(Phi, t, alpha, beta):
    L, mu = gaussian_posterior(Phi.T @ Phi, Phi.T @ t, alpha, beta)
    r = t - Phi @ mu
    return log_evidence_gaussian(L, mu, alpha, beta, float(r @ r), t.size)


def dense_C(Phi, alpha, beta):
    return np.eye(Phi.shape[0]) / beta + (Phi / alpha) @ Phi.T


def test_weight_space_evidence_equals_dense(problem):
    Phi, t, alpha, beta = problem
    expected = stats.multivariate_normal(np.zeros(t.size), dense_C(Phi, alpha, beta)).logpdf(t)
    assert log_evidence_dense(Phi, t, alpha, beta) == pytest.approx(expected, rel=1e-11)
    assert weight_space_evidence(Phi, t, alpha, beta) == pytest.approx(expected, rel=1e-11)


def test_hyperprior_matches_scipy_on_log_scale(rng):
    alpha, beta = rng.uniform(0.1, 3, 5), 2.5
    a, b, c, d = 2.0, 0.7, 1.5, 0.2
    # p(log x) = x p(x)
    expected = np.sum(stats.gamma(a, scale=1 / b).logpdf(alpha) + np.log(alpha))
    expected += stats.gamma(c, scale=1 / d).logpdf(beta) + np.log(beta)
    assert hyperprior_log_density(alpha, beta, a, b, c, d) == pytest.approx(expected, rel=1e-12)
    assert hyperprior_log_density(alpha, beta, 0, 0, 0, 0) == 0.0
    assert hyperprior_log_density(alpha, None, 0, 0, 3, 3) == 0.0


def test_sparsity_quality_equals_dense(problem):
    Phi, t, alpha, beta = problem
    active, _cand = np.arange(6), np.arange(12)
    Pa = Phi[:, active]
    L, mu = gaussian_posterior(Pa.T @ Pa, Pa.T @ t, alpha[active], beta)
    S, Q = sparsity_quality(beta * Phi.T @ Pa, beta * np.sum(Phi**2, 0), beta * Phi.T @ t, L, mu)
    Cinv = np.linalg.inv(dense_C(Pa, alpha[active], beta))
    np.testing.assert_allclose(S, np.einsum("ij,ik,kj->j", Phi, Cinv, Phi), rtol=1e-9)
    np.testing.assert_allclose(Q, Phi.T @ Cinv @ t, rtol=1e-9)
    # s, q: the column's own term removed from C
    alpha_all = np.full(12, np.inf)
    alpha_all[active] = alpha[active]
    s, q = own_sparsity_quality(S, Q, alpha_all)
    for i in active:
        rest = np.setdiff1d(active, [i])
        Cinv_i = np.linalg.inv(dense_C(Phi[:, rest], alpha[rest], beta))
        assert s[i] == pytest.approx(Phi[:, i] @ Cinv_i @ Phi[:, i], rel=1e-8)
        assert q[i] == pytest.approx(Phi[:, i] @ Cinv_i @ t, rel=1e-8)
    np.testing.assert_array_equal(s[6:], S[6:])


def test_optimal_alpha_maximises_the_evidence_in_one_alpha(problem):
    Phi, t, alpha, beta = problem
    rest = np.arange(1, 12)
    Cinv = np.linalg.inv(dense_C(Phi[:, rest], alpha[rest], beta))
    s, q = Phi[:, 0] @ Cinv @ Phi[:, 0], Phi[:, 0] @ Cinv @ t
    best = optimal_alpha(np.array([s]), np.array([q]))[0]
    assert np.isfinite(best)

    def full(a0):
        return log_evidence_dense(Phi, t, np.r_[a0, alpha[rest]], beta)

    for factor in (0.9, 1.1):
        assert full(best) > full(best * factor)
    # l(alpha_i) is the alpha_i-dependent part of the evidence (Faul & Tipping eq. 15)
    assert full(2 * best) - full(best) == pytest.approx(
        log_likelihood_alpha_i(2 * best, s, q) - log_likelihood_alpha_i(best, s, q), rel=1e-8
    )
    assert optimal_alpha(np.array([2.0]), np.array([1.0]))[0] == np.inf


def test_deltas_equal_differences_of_dense_evidence(problem):
    Phi, t, alpha, beta = problem
    active = np.arange(5)
    Pa = Phi[:, active]
    L, mu = gaussian_posterior(Pa.T @ Pa, Pa.T @ t, alpha[active], beta)
    S, Q = sparsity_quality(beta * Phi.T @ Pa, beta * np.sum(Phi**2, 0), beta * Phi.T @ t, L, mu)
    base = log_evidence_dense(Pa, t, alpha[active], beta)
    alpha_all = np.r_[alpha[active], np.full(7, np.inf)]
    s, q = own_sparsity_quality(S, Q, alpha_all)
    new = optimal_alpha(s, q)
    # add an inactive column with theta > 0
    j = next(j for j in range(5, 12) if np.isfinite(new[j]))
    added = log_evidence_dense(Phi[:, [*active, j]], t, np.r_[alpha[active], new[j]], beta)
    assert delta_add(S[j : j + 1], Q[j : j + 1])[0] == pytest.approx(added - base, rel=1e-8)
    # re-estimate and delete an active column
    i = 0
    moved = alpha[active].copy()
    moved[i] = 3.7
    assert delta_reestimate(S[[i]], Q[[i]], alpha[[i]], np.array([3.7]))[0] == pytest.approx(
        log_evidence_dense(Pa, t, moved, beta) - base, rel=1e-8
    )
    deleted = log_evidence_dense(Pa[:, 1:], t, alpha[active][1:], beta)
    assert delta_delete(S[[i]], Q[[i]], alpha[[i]])[0] == pytest.approx(deleted - base, rel=1e-8)


def test_gaussian_fit_objective_equals_dense_evidence_plus_hyperprior(problem):
    """The shared posterior object: eq. 36 from the factor against the N x N form."""
    Phi, t, alpha, beta = problem
    prior = Prior(2.0, 0.7, 1.5, 0.2)
    fit = fit_gaussian(Phi, t, alpha, beta)
    dense = log_evidence_dense(Phi, t, alpha, beta)
    hyper = hyperprior_log_density(alpha, beta, 2.0, 0.7, 1.5, 0.2)
    assert fit.log_marginal() == pytest.approx(dense, rel=1e-11)
    assert fit.log_evidence(prior) == pytest.approx(dense + hyper, rel=1e-11)
    no_noise = hyperprior_log_density(alpha, None, 2.0, 0.7, 0, 0)
    assert fit.log_evidence(prior, noise_learned=False) == pytest.approx(
        dense + no_noise, rel=1e-11
    )
    # mean and residual against a dense solve of eq. 13
    H = np.diag(alpha) + beta * Phi.T @ Phi
    mu = np.linalg.solve(H, beta * Phi.T @ t)
    np.testing.assert_allclose(fit.mu, mu, rtol=1e-10)
    np.testing.assert_allclose(fit.residual, t - Phi @ mu, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fit.sigma_diag, np.diag(np.linalg.inv(H)), rtol=1e-10)


def test_posterior_from_rows_agrees_with_the_products_route(problem):
    """The two routes to eq. 12-13: the rows (QR of ``[beta^1/2 Phi; A^1/2]``) and the
    products ``Phi^T Phi``, ``Phi^T t``, on a well-conditioned design; no column: empty."""
    Phi, t, alpha, beta = problem
    rows = fit_gaussian(Phi, t, alpha, beta)
    products = fit_gaussian(Phi, t, alpha, beta, gram=Phi.T @ Phi, phi_t=Phi.T @ t)
    np.testing.assert_allclose(rows.L, products.L, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(rows.mu, products.mu, rtol=1e-10)
    assert rows.log_marginal() == pytest.approx(products.log_marginal(), rel=1e-12)
    empty = fit_gaussian(Phi[:, :0], t, alpha[:0], beta)
    assert empty.L.shape == (0, 0) and empty.mu.shape == (0,)
    assert empty.log_marginal() == pytest.approx(
        log_evidence_dense(Phi[:, :0], t, alpha[:0], beta)
    )


def test_noise_variance_is_the_stationary_point_of_the_evidence(problem):
    """Eq. 46 is the fixed point of d(eq. 36)/d beta = 0 at fixed gamma: with the prior's
    c, d terms, the derivative of the dense evidence vanishes at it to first order."""
    Phi, t, alpha, _ = problem
    prior = Prior(0, 0, 1.5, 0.2)
    beta = 5.0
    for _ in range(200):  # iterate eq. 46 to its fixed point
        fit = fit_gaussian(Phi, t, alpha, beta)
        gamma_sum = float(np.sum(1.0 - alpha * fit.sigma_diag))
        beta = 1.0 / noise_variance(fit.rss, gamma_sum, t.size, prior)

    def objective(log_beta):
        b = np.exp(log_beta)
        return log_evidence_dense(Phi, t, alpha, b) + hyperprior_log_density(
            alpha, b, 0, 0, 1.5, 0.2
        )

    h = 1e-5
    slope = (objective(np.log(beta) + h) - objective(np.log(beta) - h)) / (2 * h)
    assert abs(slope) < 1e-6
    # the denominator is kept positive when every degree of freedom goes to the weights
    assert noise_variance(1.0, t.size + 1.0, t.size, Prior()) > 0


def test_column_gain_matches_brute_force_refits(problem):
    """The best action's gain on each column equals the change of the dense evidence
    when that column's alpha alone moves to the returned value (inf: deleted / absent)."""
    Phi, t, alpha, beta = problem
    alpha = alpha.copy()
    alpha[[2, 5, 8]] = np.inf  # inactive columns
    active = np.isfinite(alpha)

    def evidence(a):
        keep = np.isfinite(a)
        return log_evidence_dense(Phi[:, keep], t, a[keep], beta)

    cross = beta * Phi.T @ Phi[:, active]
    L, mu = gaussian_posterior(
        Phi[:, active].T @ Phi[:, active], Phi[:, active].T @ t, alpha[active], beta
    )
    S, Q = sparsity_quality(cross, beta * np.sum(Phi**2, axis=0), beta * Phi.T @ t, L, mu)
    s, q = own_sparsity_quality(S, Q, alpha)
    gain, alpha_new = column_gain(s, q, alpha)
    base = evidence(alpha)
    for m in range(alpha.size):
        moved = alpha.copy()
        moved[m] = alpha_new[m]
        assert gain[m] == pytest.approx(evidence(moved) - base, abs=1e-9)
        assert gain[m] >= 0
    # every kind of action occurs in this problem
    kinds = {(bool(a), bool(b)) for a, b in zip(active, np.isfinite(alpha_new), strict=True)}
    assert {(True, True), (True, False), (False, True)} <= kinds
