"""The eta-RVM: evidence gradient in the input scales, the scale search, extra columns."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import optimize
from sklearn.datasets import make_friedman1

from bayes_rvm import RVC, RVR, fit_type2, fit_type2_scales
from bayes_rvm.basis import KernelBasis
from bayes_rvm.evidence import log_evidence_dense
from bayes_rvm.kernels import RBF, Laplacian, Polynomial
from bayes_rvm.solvers import InterpolationWarning
from bayes_rvm.solvers.scales import (
    log_evidence_scale_gradient,
    log_evidence_scale_gradient_bernoulli,
)


def _sinc_plus_linear(n: int, seed: int):
    """Tipping (2001) Sec. 4.3: ``sinc(x1) + 0.1 x2`` with Gaussian noise of sd 0.1."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-10, 10, (n, 2))
    t = np.sinc(X[:, 0] / np.pi) + 0.1 * X[:, 1] + rng.normal(0, 0.1, n)
    return X, t


def _central_difference(function, x: np.ndarray, h: float) -> np.ndarray:
    out = np.empty(x.size)
    for k in range(x.size):
        step = np.zeros(x.size)
        step[k] = h
        out[k] = (function(x + step) - function(x - step)) / (2 * h)
    return out


@pytest.mark.parametrize("kernel_class", [RBF, Laplacian])
def test_kernel_log_scale_gradient_matches_finite_differences(rng, kernel_class):
    X, Y = rng.normal(size=(7, 3)), rng.normal(size=(5, 3))
    D = rng.normal(size=(7, 5))
    log_eta = np.log([0.3, 1.2, 0.05])
    gradient = kernel_class(np.exp(log_eta)).log_scale_gradient(X, Y, D)
    numeric = _central_difference(
        lambda z: float(np.sum(D * kernel_class(np.exp(z))(X, Y))), log_eta, 1e-6
    )
    np.testing.assert_allclose(gradient, numeric, rtol=1e-7)
    # A scalar gamma: the entries are the per-dimension derivatives at equal scales.
    np.testing.assert_allclose(
        kernel_class(0.4).log_scale_gradient(X, Y, D),
        kernel_class(np.full(3, 0.4)).log_scale_gradient(X, Y, D),
        rtol=1e-12,
    )


def test_kernel_log_scale_gradient_checks_shape(rng):
    with pytest.raises(ValueError, match=r"expected D of shape \(4, 3\)"):
        RBF(1.0).log_scale_gradient(rng.normal(size=(4, 2)), rng.normal(size=(3, 2)), np.ones(3))


@pytest.fixture(scope="module")
def gradient_problem():
    """A design with kernel, bias and extra columns active, and arbitrary alpha, beta."""
    X, t = _sinc_plus_linear(40, seed=3)
    basis = KernelBasis(X, RBF([0.2, 0.05]), extra=["linear", "quadratic"])
    active = np.array([0, 4, 9, 17, 23, 31, 40, 42, 44])  # 6 kernels, bias, x2, x1*x2
    alpha = np.random.default_rng(4).uniform(0.2, 5.0, active.size)
    return basis, t, active, alpha, 60.0


def test_evidence_value_equals_the_dense_marginal(gradient_problem):
    basis, t, active, alpha, beta = gradient_problem
    value, _ = log_evidence_scale_gradient(basis, t, active, alpha, beta)
    dense = log_evidence_dense(basis.columns(active), t, alpha, beta)
    assert value == pytest.approx(dense, rel=1e-11)


def test_scale_gradient_matches_central_differences(gradient_problem):
    basis, t, active, alpha, beta = gradient_problem
    log_eta = np.log(basis.kernel.gamma)
    _, gradient = log_evidence_scale_gradient(basis, t, active, alpha, beta)

    def log_evidence(z):
        moved = basis.with_kernel(RBF(np.exp(z)))
        return log_evidence_scale_gradient(moved, t, active, alpha, beta)[0]

    numeric = _central_difference(log_evidence, log_eta, 1e-5)
    # Central differences: truncation O(h^2 f''') ~ 1e-9 relative here, rounding ~1e-10.
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6)
    assert np.all(np.abs(gradient) > 1e-2)  # the check is not between two zeros


def test_scale_gradient_equals_the_dense_form_of_eq_54(gradient_problem):
    """D = (C^-1 t t^T C^-1 - C^-1) Phi A^-1 with the N x N covariance, then eq. 57."""
    basis, t, active, alpha, beta = gradient_problem
    Phi = basis.columns(active)
    C = np.eye(t.size) / beta + (Phi / alpha) @ Phi.T
    C_inv_t = np.linalg.solve(C, t)
    D = (np.outer(C_inv_t, C_inv_t) - np.linalg.solve(C, np.eye(t.size))) @ Phi / alpha
    eta = basis.kernel.gamma
    kernel_cols = active < basis.n_centres
    expected = np.empty(2)
    for k in range(2):
        sq = (basis.X[:, k, None] - basis.centres[active[kernel_cols], k][None, :]) ** 2
        # Tipping (2001) eq. 57, times eta_k
        expected[k] = -eta[k] * np.sum(D[:, kernel_cols] * Phi[:, kernel_cols] * sq)
    _, gradient = log_evidence_scale_gradient(basis, t, active, alpha, beta)
    np.testing.assert_allclose(gradient, expected, rtol=1e-8)


@pytest.fixture(scope="module")
def sinc_scales_fit():
    """RVR with learned scales and extra columns on the Sec. 4.3 problem (100 samples)."""
    X, t = _sinc_plus_linear(100, seed=0)
    model = RVR(gamma=1 / 9, optimize_scales=True, extra_columns=["linear", "quadratic"])
    return X, t, model.fit(X, t)


def test_extra_columns_keep_x2_and_prune_the_rest(sinc_scales_fit):
    _, _, model = sinc_scales_fit
    assert set(model.extra_coef_) == {"x1", "x2", "x1*x1", "x1*x2", "x2*x2"}
    assert model.extra_coef_["x2"] == pytest.approx(0.1, abs=0.015)
    assert [model.extra_coef_[name] for name in ("x1", "x1*x1", "x1*x2")] == [0.0, 0.0, 0.0]
    # Table 2 prunes x2^2 too; here it may keep a weight too small to matter: at most
    # half the noise sd (0.1) over the input range |x2| <= 10
    assert abs(model.extra_coef_["x2*x2"]) * 100 < 0.05
    assert "x2" in model.active_names_
    assert len(model.active_names_) == model.alpha_.size


def test_learned_scales_separate_the_relevant_input(sinc_scales_fit):
    _, _, model = sinc_scales_fit
    assert model.scales_.shape == (2,)
    assert model.scales_[0] > 10 * model.scales_[1]  # Table 2: eta_1 >> eta_2
    assert model.scales_fit_.converged
    np.testing.assert_allclose(model.kernel_.gamma, model.scales_)


def test_learned_scales_raise_the_evidence_from_the_start(sinc_scales_fit):
    X, t, model = sinc_scales_fit
    start = fit_type2(KernelBasis(X, RBF(1 / 9), extra=["linear", "quadratic"]), t)
    assert model.scales_fit_.log_evidence_path[0] == pytest.approx(start.log_evidence, abs=1e-9)
    assert model.log_evidence_ >= start.log_evidence
    assert model.log_evidence_ > start.log_evidence + 5.0  # the scales matter here


def test_predictions_use_the_learned_scales_and_extra_columns(sinc_scales_fit):
    _, _, model = sinc_scales_fit
    X_new = np.random.default_rng(5).uniform(-10, 10, (20, 2))
    fit = model.scales_fit_
    expected = fit.basis.evaluate(X_new, fit.result.active) @ fit.result.mu
    np.testing.assert_allclose(model.predict(X_new), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("solver", ["mackay", "em", "sequential"])
def test_scale_search_never_lowers_the_evidence(solver):
    # 60 points: with 40 the default fit at eta0 and tol 1e-2 interpolates (its log evidence
    # is higher at a noise sd of 5e-4 than at 0.12)
    rng = np.random.default_rng(11)
    X = rng.uniform(-4, 4, (60, 3))
    t = np.sin(X[:, 0]) + 0.2 * X[:, 1] + rng.normal(0, 0.1, 60)
    eta0 = np.array([0.5, 0.5, 0.5])
    start = fit_type2(KernelBasis(X, RBF(eta0)), t, solver=solver, tol=1e-2)
    fit = fit_type2_scales(X, t, RBF(eta0), solver=solver, tol=1e-2, probe_dimensions=False)
    assert fit.result.solver == solver
    assert fit.result.log_evidence >= start.log_evidence
    assert fit.log_evidence_path[0] == pytest.approx(start.log_evidence, abs=1e-9)
    assert fit.scales[2] < fit.scales[0]  # the irrelevant input gets a wider kernel


def test_scale_search_from_a_stationary_start_keeps_it():
    """At an evidence optimum in eta the search stops at once with the start's fit."""
    rng = np.random.default_rng(12)
    X = rng.uniform(-4, 4, (40, 2))
    t = np.sin(X[:, 0]) + rng.normal(0, 0.1, 40)
    options = {"tol": 1e-4, "probe_dimensions": False}
    first = fit_type2_scales(X, t, RBF([0.5, 0.5]), scale_gtol=1e-6, **options)
    again = fit_type2_scales(X, t, RBF(first.scales), scale_gtol=1.0, **options)
    assert again.n_outer == 0
    np.testing.assert_allclose(again.scales, first.scales)
    assert again.result.log_evidence == pytest.approx(first.result.log_evidence, abs=1e-6)


def test_n_starts_reaches_the_fits_of_the_scale_search():
    """``RVR(optimize_scales=True, n_starts=1)`` fits with one start: its result is the
    one-start fit at the learned scales (sinc, 100 points, where one start and four reach
    different optima at those scales: 82.21 and 82.35)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-10, 10, (100, 1))
    t = np.sinc(X[:, 0] / np.pi) + rng.normal(0, 0.1, 100)
    model = RVR(gamma=0.25, optimize_scales=True, n_starts=1).fit(X, t)
    basis = KernelBasis(X, RBF(model.scales_), bias=True)
    one = fit_type2(basis, t, n_starts=1)
    assert model.log_evidence_ == pytest.approx(one.log_evidence, rel=1e-10)
    assert fit_type2(basis, t).log_evidence > one.log_evidence + 0.1


def test_dimension_probe_crosses_the_valley_to_the_higher_mode():
    """An irrelevant input: gradient steps stall at a moderate eta_2; switching it off wins."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-5, 5, (60, 2))
    t = np.sinc(X[:, 0] / np.pi) + rng.normal(0, 0.05, 60)
    stalled = fit_type2_scales(X, t, RBF(0.1), probe_dimensions=False)
    probed = fit_type2_scales(X, t, RBF(0.1))
    assert stalled.converged
    assert probed.converged
    assert stalled.scales[1] > 0.01
    assert probed.scales[1] == pytest.approx(0.1 * 1e-6)  # the lower bound
    assert probed.n_probe >= 2
    assert probed.result.log_evidence > stalled.result.log_evidence + 5.0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"kernel": Polynomial(2)}, ValueError, "only for the Gaussian"),
        ({"likelihood": "categorical"}, ValueError, "supports likelihood 'gaussian'"),
        ({"scale_bounds": (2.0, 10.0)}, ValueError, "0 < low <= 1 <= high"),
        ({"scale_bounds": 3.0}, ValueError, "a pair"),
        ({"max_outer": 0}, ValueError, "max_outer must be >= 1"),
        ({"step_radius": -1.0}, ValueError, "step_radius must be a finite number > 0"),
        ({"probe_factor": 1.0}, ValueError, "probe_factor must be > 1"),
        ({"kernel": RBF([1.0, 1.0, 1.0])}, ValueError, "expected 2 starting scales"),
    ],
)
def test_scale_search_rejects_bad_options(kwargs, error, match):
    X, t = _sinc_plus_linear(10, seed=1)
    with pytest.raises(error, match=match):
        fit_type2_scales(X, t, **{"kernel": "rbf", **kwargs})


def test_estimator_rejects_scales_or_extras_without_inputs():
    X, t = _sinc_plus_linear(10, seed=1)
    gram = RBF(0.1)(X, X)
    with pytest.raises(ValueError, match="optimize_scales=True needs the inputs"):
        RVR(kernel="precomputed", optimize_scales=True).fit(gram, t)
    with pytest.raises(ValueError, match="extra_columns need the inputs"):
        RVR(kernel="precomputed", extra_columns=["linear"]).fit(gram, t)
    with pytest.raises(ValueError, match="only for the Gaussian"):
        RVR(kernel="linear_spline", optimize_scales=True).fit(X, t)


def test_estimator_without_scales_reports_extra_weights():
    X, t = _sinc_plus_linear(60, seed=2)
    model = RVR(gamma=0.2, extra_columns=[("x2 / 2", lambda X: X[:, 1] / 2)]).fit(X, t)
    assert model.scales_ is None
    assert set(model.extra_coef_) == {"x2 / 2"}
    basis = KernelBasis(X, RBF(0.2), extra=[("x2 / 2", lambda X: X[:, 1] / 2)])
    expected = fit_type2(basis, t)
    np.testing.assert_allclose(model.predict(X), basis.columns(expected.active) @ expected.mu)


def test_bernoulli_scale_gradient_matches_central_differences():
    """Laplace evidence of a classifier: the mode moves with eta and the gradient counts it."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(50, 2))
    t = (X[:, 0] ** 2 + 0.3 * rng.normal(size=50) > 0.8).astype(float)
    basis = KernelBasis(X, RBF([0.7, 0.3]), extra=["linear"])
    active = np.array([1, 5, 9, 20, 33, 50, 52])  # 5 kernels, bias, x2
    alpha = rng.uniform(0.1, 2.0, active.size)
    _, gradient = log_evidence_scale_gradient_bernoulli(basis, t, active, alpha)

    def log_evidence(z):
        moved = basis.with_kernel(RBF(np.exp(z)))
        return log_evidence_scale_gradient_bernoulli(moved, t, active, alpha)[0]

    numeric = _central_difference(log_evidence, np.log([0.7, 0.3]), 1e-5)
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6)
    assert np.all(np.abs(gradient) > 1e-2)  # the check is not between two zeros


def test_rvc_scales_never_lower_the_evidence_and_widen_the_irrelevant_input():
    rng = np.random.default_rng(7)
    X = rng.uniform(-3, 3, (60, 2))
    y = np.where(np.sin(X[:, 0]) + 0.2 * rng.normal(size=60) > 0, "b", "a")
    # MacKay: the sequential solver ends (evidence -9.60 against -9.57) with 2 vectors at
    # scales (4.6, 27), where the evidence is nearly flat in the scale of the second input
    options = {"gamma": 0.5, "extra_columns": ["linear"], "tol": 1e-3, "solver": "mackay"}
    start = RVC(**options).fit(X, y)
    model = RVC(**options, optimize_scales=True).fit(X, y)
    assert model.scales_fit_.result.likelihood == "bernoulli"
    assert model.scales_fit_.log_evidence_path[0] == pytest.approx(start.log_evidence_)
    assert model.log_evidence_ >= start.log_evidence_
    assert model.scales_[1] < model.scales_[0]
    assert set(model.extra_coef_) == {"x1", "x2"}
    assert np.mean(model.predict(X) == y) > 0.8


def _profile_log_evidence(X, t, log_eta: np.ndarray) -> float:
    """Eq. 36 at the type-II optimum (alpha, beta) for the scales ``exp(log_eta)``, found
    by MacKay's re-estimation (eq. 44, 46): a route independent of the scale search."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a trial scale may interpolate or stop early
        fit = fit_type2(KernelBasis(X, RBF(np.exp(log_eta))), t, solver="mackay", tol=1e-4)
    return fit.log_evidence


@pytest.mark.slow
def test_learned_scales_reach_the_best_profile_evidence():
    """The toy of Tipping (2001) Sec. 4.3 (100 points): the learned scales' log evidence is
    within 1 nat of the best that a direct maximisation of the profile evidence over
    ``log eta`` (Nelder-Mead from five starts) reaches. The profile evidence is multimodal
    in the scales; its highest mode found has x2 (which enters linearly) on a broad
    kernel, a scale far below that of x1. The profile evidence at the learned scales is at
    least the larger of MacKay's optimum there and the model's own (both are eq. 36 at
    some alpha, beta)."""
    X, t = _sinc_plus_linear(100, seed=0)
    model = RVR(gamma=0.1, optimize_scales=True).fit(X, t)
    best = -np.inf
    for start in [(0.1, 0.1), (0.03, 0.03), (0.3, 0.3), (0.3, 0.003), (1.0, 0.01)]:
        search = optimize.minimize(
            lambda z: -_profile_log_evidence(X, t, z),
            np.log(start),
            method="Nelder-Mead",
            options={"xatol": 1e-3, "fatol": 1e-4, "maxfev": 300},
        )
        best = max(best, -search.fun)
    learned = _profile_log_evidence(X, t, np.log(model.scales_))
    assert max(learned, model.log_evidence_) >= best - 1.0
    assert model.scales_[0] > 3.0 * model.scales_[1]


@pytest.mark.slow
def test_scale_search_does_not_move_to_an_interpolating_fit():
    """Friedman #1 with 80 points and unit noise: narrow kernels on ten inputs can fit the
    noise (its variance collapses) at a high evidence; the search ranks such fits below
    every fit that does not interpolate, so it returns one with a plausible noise level."""
    X, t = make_friedman1(80, noise=1.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InterpolationWarning)
        model = RVR(gamma=1.0, optimize_scales=True).fit(X, t)
    assert 0.5 < np.sqrt(model.noise_var_) < 2.0
    assert model.alpha_.size < 0.5 * X.shape[0]
