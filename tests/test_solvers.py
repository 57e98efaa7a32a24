"""Type-II solvers (MacKay, EM): optimality, agreement, fixed noise, priors, input errors."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from bayes_rvm import fit_type2
from bayes_rvm.basis import KernelBasis
from bayes_rvm.evidence import (
    hyperprior_log_density,
    log_evidence_dense,
    optimal_alpha,
    own_sparsity_quality,
)
from bayes_rvm.kernels import RBF, LinearSpline


def small_sinc(n=30, seed=1, noise=0.1):
    x = np.linspace(-10, 10, n)[:, None]
    t = np.sinc(x[:, 0] / np.pi) + np.random.default_rng(seed).normal(0, noise, n)
    return KernelBasis(x, RBF(0.25)).toarray(), t


def dense_S_Q(Phi, t, fit):
    """S, Q of every column from the N x N marginal covariance C (no solver code)."""
    Pa = Phi[:, fit.active]
    C = np.eye(len(t)) / fit.beta + (Pa / fit.alpha) @ Pa.T
    Cinv = np.linalg.inv(C)
    return np.einsum("ij,ik,kj->j", Phi, Cinv, Phi), Phi.T @ Cinv @ t


@pytest.fixture(scope="module")
def sinc_fits():
    Phi, t = small_sinc()
    return Phi, t, {s: fit_type2(Phi, t, solver=s) for s in ("mackay", "em")}


@pytest.mark.parametrize("solver", ["mackay", "em"])
def test_log_evidence_equals_dense_evaluation(sinc_fits, solver):
    Phi, t, fits = sinc_fits
    fit = fits[solver]
    dense = log_evidence_dense(Phi[:, fit.active], t, fit.alpha, fit.beta)
    assert fit.converged
    assert fit.log_evidence == pytest.approx(dense, rel=1e-9)
    assert fit.log_evidence_path[-1] == fit.log_evidence


def test_mackay_and_em_reach_the_same_optimum(sinc_fits):
    _, _, fits = sinc_fits
    np.testing.assert_array_equal(fits["mackay"].active, fits["em"].active)
    assert fits["mackay"].log_evidence == pytest.approx(fits["em"].log_evidence, abs=1e-3)
    np.testing.assert_allclose(fits["mackay"].mu, fits["em"].mu, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("solver", ["mackay", "em"])
def test_optimality_conditions(sinc_fits, solver):
    """Faul & Tipping (2002): active alpha_i = s^2 / (q^2 - s); pruned q^2 <= s or tiny gain."""
    Phi, t, fits = sinc_fits
    fit = fits[solver]
    S, Q = dense_S_Q(Phi, t, fit)
    alpha_all = np.full(Phi.shape[1], np.inf)
    alpha_all[fit.active] = fit.alpha
    s, q = own_sparsity_quality(S, Q, alpha_all)
    np.testing.assert_allclose(optimal_alpha(s, q)[fit.active], fit.alpha, rtol=1e-3)
    inactive = fit.inactive
    theta = q[inactive] ** 2 - s[inactive]
    # readd_gain is the App. B.1 check; MacKay may prune a little early, by < 0.1 nat
    assert np.all((theta <= 0) | (fit.readd_gain < 0.1))
    assert fit.readd_gain.max() < 0.1


def test_em_never_decreases_the_evidence(sinc_fits):
    path = sinc_fits[2]["em"].log_evidence_path
    assert np.all(np.diff(path) >= -1e-9 * np.abs(path[1:]))


def test_fixed_noise_fig1():
    """Tipping (2001) Fig. 1: noise-free sinc, linear spline kernel, noise fixed at 0.01."""
    x = np.linspace(-10, 10, 100)[:, None]
    f = np.sinc(x[:, 0] / np.pi)
    B = KernelBasis(x, LinearSpline())
    fit = fit_type2(B, f, solver="mackay", noise_var=0.01**2)
    assert fit.noise_fixed and fit.beta == pytest.approx(1e4)
    mean, _ = fit.predict(B.columns(fit.active))
    # paper: 9 relevance vectors, maximum error 0.0070
    assert 7 <= fit.active.size <= 12
    assert np.max(np.abs(mean - f)) < 0.01


@pytest.mark.parametrize("solver", ["mackay", "em"])
def test_proper_prior_optimum_is_stationary(solver):
    """With a, b, c, d > 0 the objective (eq. 36 with prior terms) is stationary at the fit."""
    Phi, t = small_sinc(n=20, seed=3)
    prior = {"a": 1.5, "b": 1e-3, "c": 1.0, "d": 1e-3}
    fit = fit_type2(Phi, t, solver=solver, tol=1e-9, **prior)
    assert fit.active.size == Phi.shape[1]  # a proper prior keeps every alpha finite

    def objective(log_alpha, log_beta):
        alpha, beta = np.exp(log_alpha), np.exp(log_beta)
        return log_evidence_dense(Phi, t, alpha, beta) + hyperprior_log_density(
            alpha, beta, *prior.values()
        )

    la, lb = np.log(fit.alpha), np.log(fit.beta)
    assert objective(la, lb) == pytest.approx(fit.log_evidence, rel=1e-9)
    h = 1e-5
    for i in range(0, Phi.shape[1], 5):
        e = np.zeros_like(la)
        e[i] = h
        assert (objective(la + e, lb) - objective(la - e, lb)) / (2 * h) == pytest.approx(
            0, abs=1e-5
        )
    assert (objective(la, lb + h) - objective(la, lb - h)) / (2 * h) == pytest.approx(0, abs=1e-5)


def test_max_iter_warns_and_returns_a_usable_fit():
    Phi, t = small_sinc()
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        fit = fit_type2(Phi, t, solver="mackay", max_iter=3)
    assert not fit.converged and fit.n_iter == 3
    mean, var = fit.predict(Phi[:, fit.active])
    assert np.all(np.isfinite(mean)) and np.all(var > 0)


def test_result_is_frozen(sinc_fits):
    fit = sinc_fits[2]["mackay"]
    with pytest.raises(ValueError, match="read-only"):
        fit.alpha[0] = 1.0
    with pytest.raises(AttributeError):
        fit.beta = 2.0
    np.testing.assert_allclose(
        fit.Sigma @ (fit.precision_chol @ fit.precision_chol.T), np.eye(fit.active.size), atol=1e-8
    )


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"Phi": np.ones((3, 2)), "t": np.ones(4)}, ValueError, "length 3"),
        ({"Phi": np.ones(3), "t": np.ones(3)}, ValueError, "2 dimensions"),
        ({"Phi": np.ones((0, 2)), "t": np.ones(0)}, ValueError, "non-empty"),
        ({"Phi": [[1.0, np.nan]], "t": [1.0]}, ValueError, "NaN"),
        ({"Phi": [[1.0, 2.0]], "t": [np.inf]}, ValueError, "NaN or infinite"),
        ({"Phi": [["a", "b"]], "t": [1.0]}, TypeError, "real numbers"),
        ({"noise_var": -1.0}, ValueError, "noise_var"),
        ({"noise_var": "small"}, TypeError, "noise_var"),
        ({"a": -1.0}, ValueError, "a must be finite and >= 0"),
        ({"solver": "newton"}, ValueError, "expected one of: 'auto', 'mackay', 'em'"),
        ({"likelihood": "poisson"}, ValueError, "unknown likelihood"),
        ({"max_iter": 0}, ValueError, "max_iter"),
        ({"tol": -1.0}, ValueError, "tol"),
    ],
)
def test_bad_input(kwargs, error, match):
    args = {"Phi": np.eye(3), "t": np.ones(3), **kwargs}
    with pytest.raises(error, match=match):
        fit_type2(args.pop("Phi"), args.pop("t"), **args)
