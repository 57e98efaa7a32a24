"""Relevance vector classification: solvers with the Laplace step, and the RVC estimator."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import solve_triangular
from scipy.special import expit, softmax
from sklearn.datasets import load_wine, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from bayes_rvm import RVC, RVR, datasets, fit_type2, laplace
from bayes_rvm._basis_views import ScaledBasis
from bayes_rvm.basis import KernelBasis, as_basis
from bayes_rvm.evidence import Prior, column_gain, delta_add, own_sparsity_quality
from bayes_rvm.kernels import RBF
from bayes_rvm.laplace import Bernoulli, log_evidence_laplace, posterior_mode
from bayes_rvm.solvers import sequential

#: The sequential solver's large path: a schedule that holds no basis for the compiled loop
#: (classification on it compresses the basis and re-weighs it by passes).
LARGE_PATH = sequential.Schedule(dense_bytes=0, mode_dense_bytes=0)


def _two_moons_like(rng, n):
    """Overlapping classes from a known logistic model in 2-D."""
    X = rng.uniform(-2, 2, size=(n, 2))
    p = expit(2.0 * np.sin(1.5 * X[:, 0]) - 1.5 * X[:, 1])
    return X, (rng.uniform(size=n) < p).astype(int), p


def _three_blobs(rng, n_per=15):
    centres = np.array([[0.0, 0.0], [2.5, 0.0], [1.25, 2.2]])
    y = np.repeat([0, 1, 2], n_per)
    return centres[y] + rng.normal(0, 0.8, size=(y.size, 2)), y


def _design(X, gamma=1.0):
    return np.column_stack([RBF(gamma)(X, X), np.ones(X.shape[0])])


def _linear_logistic(rng, n, n_classes):
    """Inputs 0-2 informative, 3-5 irrelevant, plus a bias column: a small ARD problem
    whose evidence has a single optimum (kernel designs can have several)."""
    X = rng.normal(size=(n, 6))
    scale = np.array([1.5, 1.0, 1.0, 0.0, 0.0, 0.0])
    if n_classes == 2:
        y = rng.uniform(size=n) < expit(X @ (scale * [1.0, -1.0, 0.8, 1, 1, 1]) + 0.3)
        return np.column_stack([X, np.ones(n)]), y.astype(int)
    F = X @ (rng.normal(size=(6, n_classes)) * scale[:, None])
    P = np.exp(F) / np.exp(F).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(n_classes, p=p) for p in P])
    return np.column_stack([X, np.ones(n)]), y


@pytest.fixture(scope="module")
def binary_fits():
    Phi, y = _linear_logistic(np.random.default_rng(5), 150, 2)
    return Phi, y, {s: fit_type2(Phi, y, "bernoulli", s) for s in ("mackay", "em", "sequential")}


def test_mackay_and_em_reach_the_same_laplace_evidence_optimum(binary_fits):
    _, _, fits = binary_fits
    mackay, em = fits["mackay"], fits["em"]
    assert mackay.converged
    assert em.converged
    np.testing.assert_array_equal(mackay.active, em.active)
    np.testing.assert_allclose(em.alpha, mackay.alpha, rtol=1e-4)
    np.testing.assert_allclose(em.mu, mackay.mu, rtol=1e-4, atol=1e-6)
    assert em.log_evidence == pytest.approx(mackay.log_evidence, abs=1e-6)
    assert mackay.likelihood == "bernoulli"
    assert mackay.beta is None
    assert mackay.noise_var is None
    # the irrelevant inputs (columns 3-5) are pruned, the informative ones kept
    assert {0, 1, 2} <= set(mackay.active.tolist())


def test_optimum_is_a_fixed_point_and_nothing_pruned_would_help(binary_fits):
    Phi, y, fits = binary_fits
    fit = fits["mackay"]
    # Tipping (2001) eq. 16 with the Laplace statistics: alpha = gamma / mu^2
    np.testing.assert_allclose(fit.alpha, fit.gamma / fit.mu**2, rtol=1e-5)
    # mu is the IRLS mode at the returned alpha
    mode = posterior_mode(Phi[:, fit.active], Bernoulli(y), fit.alpha)
    np.testing.assert_allclose(fit.mu, mode.mu, rtol=1e-10, atol=1e-12)
    # App. B.1: no pruned column would raise the (working-model) evidence
    assert fit.readd_gain.shape == (fit.n_basis - fit.active.size,)
    assert np.all(fit.readd_gain < 1e-6)
    assert np.all(np.isfinite(fit.log_evidence_path))


def test_sequential_reaches_the_mackay_optimum(binary_fits):
    """Tipping & Faul (2003) Sec. 4 on the Laplace posterior: the same fixed point.

    At the default tol (no single step gains 1e-6 nats) coordinate ascent stops short in
    flat directions: measured 2.2e-4 nats and 0.3% in alpha here. With tol=1e-10 the gap
    falls with it (measured 5e-6 nats), so it is the stopping rule, not another optimum.
    """
    Phi, y, fits = binary_fits
    mackay, sequential = fits["mackay"], fits["sequential"]
    assert sequential.converged
    assert sequential.solver == "sequential"
    assert sequential.likelihood == "bernoulli"
    assert sequential.beta is None
    np.testing.assert_array_equal(sequential.active, mackay.active)
    assert sequential.log_evidence == pytest.approx(mackay.log_evidence, abs=1e-3)
    np.testing.assert_allclose(sequential.alpha, mackay.alpha, rtol=1e-2)
    tight = fit_type2(Phi, y, "bernoulli", "sequential", tol=1e-10)
    assert tight.log_evidence == pytest.approx(mackay.log_evidence, abs=2e-5)
    np.testing.assert_allclose(tight.alpha, mackay.alpha, rtol=1e-3)
    # mu is the IRLS mode at the returned alpha, the factor that of its Hessian
    mode = posterior_mode(Phi[:, tight.active], Bernoulli(y), tight.alpha)
    np.testing.assert_allclose(tight.mu, mode.mu, rtol=1e-8)
    # every pruned column would lower the evidence (App. B.1)
    assert np.all(tight.readd_gain <= 1e-10)


def test_sequential_optimality_conditions_on_a_kernel_basis():
    """Ripley's data (100 of synth.tr, r = 0.5): each active alpha is the maximiser
    s^2 / (q^2 - s) of Faul & Tipping (2002) eq. 17 for the Laplace s, q at the mode,
    and no pruned column would raise the evidence by more than tol."""
    data = datasets.load_ripley()
    pick = np.random.default_rng(0).choice(250, 100, replace=False)
    basis = KernelBasis(data.X_train[pick], RBF(4.0))
    fit = fit_type2(basis, data.y_train[pick], "bernoulli", tol=1e-9)
    assert fit.solver == "sequential"
    assert fit.converged
    sigma_ii = np.diag(fit.Sigma)
    # Faul & Tipping (2002): Sigma_ii = 1 / (alpha_i + s_i), mu_i = q_i Sigma_ii
    s = 1.0 / sigma_ii - fit.alpha
    q = fit.mu / sigma_ii
    np.testing.assert_allclose(fit.alpha, s**2 / (q**2 - s), rtol=1e-3)
    assert np.all(fit.readd_gain <= 1e-9)
    mackay = fit_type2(basis, data.y_train[pick], "bernoulli", "mackay")
    np.testing.assert_array_equal(fit.active, mackay.active)
    assert fit.log_evidence == pytest.approx(mackay.log_evidence, abs=1e-4)


def test_sequential_classification_without_a_dense_basis():
    """On the large path (a basis over ``Schedule.mode_dense_bytes``) the basis is
    compressed and re-weighed by passes: certified at its mode, and the same optimum as
    the compiled loop's on ``Phi^T`` held, to the accuracy at which coordinate ascent
    stops in flat directions of the Laplace evidence."""
    data = datasets.load_ripley()
    pick = np.random.default_rng(0).choice(250, 100, replace=False)
    basis = KernelBasis(data.X_train[pick], RBF(4.0))
    y = data.y_train[pick].astype(float)
    options = {"prior": Prior(), "noise_var": None, "max_iter": 100_000, "tol": 1e-6}
    passes = sequential.fit(basis, y, link=Bernoulli(y), schedule=LARGE_PATH, **options)
    _assert_certified_at_its_mode(basis.toarray(), y, passes, 1e-6)
    compiled = sequential.fit(basis, y, link=Bernoulli(y), **options)
    _assert_certified_at_its_mode(basis.toarray(), y, compiled, 1e-6)
    np.testing.assert_array_equal(compiled.active, passes.active)
    assert compiled.log_evidence == pytest.approx(passes.log_evidence, abs=1e-3)


def test_classification_holds_a_basis_up_to_mode_dense_bytes():
    shape = (100, 8)  # 6,400 bytes of doubles
    assert sequential.Schedule(mode_dense_bytes=6400).mode_holds(shape)
    assert not sequential.Schedule(mode_dense_bytes=6399).mode_holds(shape)


def test_sequential_large_path_stops_a_cycle_at_its_best_model(rng):
    """A marginal column that helps at the mode without it and hurts at the mode with it
    (B depends on alpha, which the steps ignore) is added and deleted in turn on the large
    path: the run stops after mode_stall mode updates without progress, at the best model
    seen, here a local optimum 0.23 nats below MacKay's (another active set)."""
    X, y, _ = _two_moons_like(rng, 60)
    basis = KernelBasis(X, RBF(1.0))
    options = {"prior": Prior(), "noise_var": None, "max_iter": 100_000, "tol": 1e-6}
    t = y.astype(float)
    fit = sequential.fit(basis, t, link=Bernoulli(t), schedule=LARGE_PATH, **options)
    mackay = fit_type2(basis, y, "bernoulli", "mackay")
    assert fit.converged
    assert mackay.log_evidence - 0.5 < fit.log_evidence <= mackay.log_evidence
    mode = posterior_mode(basis.columns(fit.active), Bernoulli(y), fit.alpha)
    np.testing.assert_allclose(fit.mu, mode.mu, rtol=1e-6)


def test_sequential_classification_ends_where_the_weighted_problems_toggle():
    """make_classification (100 points, 4 features, seed 31), RBF 0.75: the weighted
    problem at one mode adds a column that the problem at the next mode deletes (``B``
    moves with ``alpha``, which each weighted problem holds constant), so the updates that
    hold ``B`` constant have no fixed point. The fit ends, converged, where every add,
    re-estimate or delete its weighted problem still proposes (four here) raises the
    Laplace evidence by at most ``tol`` when taken alone (the mode found again), above
    MacKay's fit (-20.85 against -21.30)."""
    X, y = make_classification(100, n_features=4, random_state=31)
    basis = KernelBasis(X, RBF(0.75))
    Phi, t = basis.toarray(), y.astype(float)
    fit = fit_type2(basis, y, "bernoulli", "sequential")
    assert fit.converged
    gain, new_alpha = _steps_at_its_mode(Phi, t, fit)
    proposed = np.flatnonzero(gain > 1e-6)
    assert proposed.size  # the draw is one where the weighted problems disagree
    for j in proposed:
        model = dict(zip(fit.active.tolist(), fit.alpha.tolist(), strict=True))
        if np.isinf(new_alpha[j]):
            del model[j]
        else:
            model[j] = new_alpha[j]
        active = np.array(sorted(model))
        alpha = np.array([model[k] for k in active])
        mode = posterior_mode(Phi[:, active], Bernoulli(t), alpha)
        assert log_evidence_laplace(mode, alpha) <= fit.log_evidence + 1e-6
    assert fit.log_evidence > fit_type2(basis, y, "bernoulli", "mackay").log_evidence


@pytest.mark.slow
def test_sequential_classification_trusts_the_weighted_steps_as_far_as_the_evidence_goes():
    """USPS, 800 digits, 5 against the rest, RBF 8/256: nearly separable, so the weighted
    problem at a mode claims far more than the Laplace evidence gains (``B = y (1 - y)``,
    near 0, moves with ``alpha``). Updates that solve it to the end at every mode hold
    ``B`` constant, as MacKay's do, and end near MacKay's fit (-75.9); within its trust
    region the fit reaches a model more than 10 nats higher (-40.8 on 29 columns)."""
    try:
        data = datasets.load_usps()
    except FileNotFoundError:
        pytest.skip("the USPS data are not installed")
    keep = np.sort(np.random.default_rng(0).choice(data.y_train.size, 1000, replace=False))
    X, digit = data.X_train[keep][:800], data.y_train[keep][:800]
    basis, t = KernelBasis(X, RBF(8 / 256)), (digit == 5).astype(float)
    fit = fit_type2(basis, t, "bernoulli", "sequential")
    mackay = fit_type2(basis, t, "bernoulli", "mackay")
    assert fit.converged
    assert fit.log_evidence > mackay.log_evidence + 10.0


def _steps_at_its_mode(Phi, t, fit):
    """The gain of every single add, re-estimate or delete, and its new ``alpha``, with
    ``S, Q`` of every column computed from scratch at the returned model's IRLS mode
    (Faul & Tipping 2002; noise precisions ``B = y (1 - y)`` and working target ``t^``,
    Tipping & Faul 2003, Sec. 4), after checking that the reported log evidence is the
    Laplace evidence there and the re-add gains reported are those of the pruned
    columns."""
    Phi_a = Phi[:, fit.active]
    mode = posterior_mode(Phi_a, Bernoulli(t), fit.alpha, fit.mu)
    assert fit.log_evidence == pytest.approx(log_evidence_laplace(mode, fit.alpha), abs=1e-8)
    B = mode.y * (1.0 - mode.y)
    target_B = B * (Phi_a @ mode.mu) + (t - mode.y)  # B t^
    cross = Phi.T @ (B[:, None] * Phi_a)
    Z = solve_triangular(mode.precision_chol, cross.T, lower=True)
    z = solve_triangular(mode.precision_chol, Phi_a.T @ target_B, lower=True)
    S = np.einsum("ij,ij,i->j", Phi, Phi, B) - np.sum(Z**2, axis=0)
    Q = Phi.T @ target_B - Z.T @ z
    inactive = np.setdiff1d(np.arange(Phi.shape[1]), fit.active)
    np.testing.assert_allclose(fit.readd_gain, delta_add(S[inactive], Q[inactive]), atol=1e-7)
    alpha = np.full(Phi.shape[1], np.inf)
    alpha[fit.active] = fit.alpha
    return column_gain(*own_sparsity_quality(S, Q, alpha), alpha)


def _assert_certified_at_its_mode(Phi, t, fit, tol):
    """Classification against its own Laplace evidence: converged, and at the returned
    model's mode no single add, re-estimate or delete gains more than ``tol``
    (:func:`_steps_at_its_mode`)."""
    assert fit.converged
    gain, _ = _steps_at_its_mode(Phi, t, fit)
    assert gain.max() <= tol


@pytest.mark.parametrize("schedule", [None, LARGE_PATH], ids=["compiled", "large path"])
def test_sequential_rvc_on_the_kernel_matrix_held_symmetric_is_the_matrix_fit(schedule):
    """A square kernel basis (every input a centre) with scaled columns is held as one
    symmetric kernel matrix, whose rows give ``Phi^T`` to the compiled loop and whose
    passes give the large path its products; the same scaled basis given as a matrix is
    held as it is. The products agree to rounding, so the fits take the same steps: the
    same fit to rounding, certified at its mode."""
    X, y, _ = _two_moons_like(np.random.default_rng(2), 300)
    basis = KernelBasis(X, RBF(1.0))
    Phi, t = basis.toarray(), y.astype(float)
    norms = np.linalg.norm(Phi, axis=0)
    options = {"prior": Prior(), "noise_var": None, "max_iter": 100_000, "tol": 1e-6}
    options["schedule"] = schedule
    kernel = sequential.fit(ScaledBasis(basis, norms), t, link=Bernoulli(t), **options)
    matrix = sequential.fit(as_basis(Phi / norms), t, link=Bernoulli(t), **options)
    np.testing.assert_array_equal(kernel.active, matrix.active)
    assert kernel.log_evidence == pytest.approx(matrix.log_evidence, rel=1e-12)
    np.testing.assert_allclose(kernel.alpha, matrix.alpha, rtol=1e-8)
    np.testing.assert_allclose(kernel.mu, matrix.mu, rtol=1e-8)
    _assert_certified_at_its_mode(Phi / norms, t, kernel, 1e-6)


@pytest.fixture(scope="module")
def softmax_problem():
    Phi, y = _linear_logistic(np.random.default_rng(5), 60, 3)
    return Phi, y, fit_type2(Phi, y, "categorical", "mackay")


def test_softmax_mackay_fixed_point_with_shared_alpha(softmax_problem):
    Phi, _, mackay = softmax_problem
    assert mackay.converged
    assert mackay.mu.shape == (mackay.active.size, 3)
    assert mackay.alpha.shape == (mackay.active.size,)
    assert mackay.precision_chol.shape == (3 * mackay.active.size,) * 2
    # shared-alpha fixed point: alpha_m = gamma_m / sum_k mu_mk^2, gamma_m <= K
    np.testing.assert_allclose(
        mackay.alpha, mackay.gamma / np.sum(mackay.mu**2, axis=1), rtol=1e-5
    )
    assert np.all(mackay.gamma <= 3.0)
    assert np.all(mackay.readd_gain < 1e-6)
    mean, var = mackay.predict(Phi[:5][:, mackay.active])
    assert mean.shape == var.shape == (5, 3)
    assert np.all(var > 0)


@pytest.mark.slow
def test_softmax_mackay_and_em_reach_the_same_optimum(softmax_problem):
    Phi, y, mackay = softmax_problem
    em = fit_type2(Phi, y, "categorical", "em")
    assert em.converged
    np.testing.assert_array_equal(mackay.active, em.active)
    np.testing.assert_allclose(em.alpha, mackay.alpha, rtol=1e-3)
    assert em.log_evidence == pytest.approx(mackay.log_evidence, abs=1e-5)


def test_rvc_binary_with_string_labels_and_consistent_outputs(rng):
    X, y01, _ = _two_moons_like(rng, 60)
    labels = np.array(["spam", "ham"])[y01]
    model = RVC(gamma=1.0).fit(X, labels)
    np.testing.assert_array_equal(model.classes_, ["ham", "spam"])
    f = model.decision_function(X)
    P = model.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_allclose(P[:, 1], expit(f), rtol=1e-12)
    np.testing.assert_array_equal(model.predict(X), model.classes_[(f > 0).astype(int)])
    np.testing.assert_allclose(np.exp(model.predict_log_proba(X)), P, rtol=1e-12)
    assert model.n_relevance_ == model.relevance_vectors_.shape[0] == model.coef_.size
    # moderated output: same labels, probabilities pulled towards 1/2
    labels_mode = model.predict(X)
    moderated = model.set_params(moderated=True)  # a prediction-time option: no refit
    Pm = moderated.predict_proba(X)
    np.testing.assert_array_equal(moderated.predict(X), labels_mode)
    assert np.all(np.abs(Pm[:, 1] - 0.5) <= np.abs(P[:, 1] - 0.5) + 1e-12)
    assert np.any(np.abs(Pm[:, 1] - 0.5) < np.abs(P[:, 1] - 0.5) - 1e-3)


def test_rvc_multiclass_ovr_and_multinomial(rng):
    X, y = _three_blobs(rng, n_per=12)
    labels = np.array(["a", "b", "c"])[y]
    ovr = RVC(gamma=0.5).fit(X, labels)
    assert len(ovr.estimators_) == 3
    assert ovr.n_relevance_ == sum(e.n_relevance_ for e in ovr.estimators_)
    multi = RVC(gamma=0.5, multi_class="multinomial").fit(X, labels)
    assert multi.coef_.shape == (multi.n_relevance_, 3)
    for model in (ovr, multi):
        P = model.predict_proba(X)
        np.testing.assert_allclose(P.sum(axis=1), 1.0)
        F = model.decision_function(X)
        assert F.shape == (X.shape[0], 3)
        np.testing.assert_array_equal(model.predict(X), model.classes_[np.argmax(F, axis=1)])
        assert np.mean(model.predict(X) == labels) > 0.85
    P_mode = multi.predict_proba(X)
    P_moderated = multi.set_params(moderated=True).predict_proba(X)
    assert np.all(P_moderated.max(axis=1) <= P_mode.max(axis=1) + 1e-12)


def _laplace_monte_carlo_log_loss(model, X, y, rng, draws=20_000):
    """Held-out log-loss of the class probabilities averaged over draws of the weights
    from the Laplace posterior, and its Monte Carlo standard error (delta method)."""
    result = model.result_
    Phi = model.design_matrix(X)
    M, K = result.mu.shape
    # w - mu = L^-T z has covariance (L L^T)^-1, the Laplace covariance
    W = solve_triangular(result.precision_chol.T, rng.standard_normal((M * K, draws)))
    latent = (Phi @ result.mu)[:, :, None] + np.einsum("im,mkd->ikd", Phi, W.reshape(M, K, draws))
    p_true = softmax(latent, axis=1)[np.arange(y.size), y]  # (n, draws)
    mean = p_true.mean(axis=1)
    # d log-loss / d mean_n = -1 / (n mean_n): the loss's spread over the draws
    per_draw = -(p_true / mean[:, None]).mean(axis=0)
    return float(-np.mean(np.log(mean))), float(per_draw.std() / np.sqrt(draws))


def _wine():
    X, y = load_wine(return_X_y=True)
    return X, y, 0.1


def _four_classes():
    X, y = make_classification(
        300, 6, n_informative=4, n_classes=4, n_clusters_per_class=1, random_state=0
    )
    return X, y, 0.1


@pytest.mark.parametrize("data", [_wine, _four_classes])
def test_moderated_multinomial_log_loss_is_the_monte_carlo_predictive(data, rng):
    """Standardised, 40 % held out, gamma 0.1: the moderated held-out log-loss against the
    Monte Carlo predictive over the same Laplace posterior (20,000 weight draws).

    Large latent variances (about 60 on wine), mostly common to the outputs: moderating each
    difference of two outputs by the probit approximation gave 0.196 on wine against a
    Monte Carlo 0.179 (standard error 0.0009). The moderated output must be within four
    standard errors; the Monte Carlo predictive is worse than the mode's 0.109 on wine: a
    property of the Laplace posterior, not of the integral.
    """
    X, y, gamma = data()
    X = StandardScaler().fit_transform(X)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.4, random_state=0, stratify=y
    )
    model = RVC(multi_class="multinomial", gamma=gamma, solver="mackay").fit(X_train, y_train)
    moderated = model.set_params(moderated=True).predict_proba(X_test)
    np.testing.assert_allclose(moderated.sum(axis=1), 1.0, rtol=1e-12)
    monte_carlo, se = _laplace_monte_carlo_log_loss(model, X_test, y_test, rng)
    assert log_loss(y_test, moderated) == pytest.approx(monte_carlo, abs=4 * se)


def test_moderated_applies_to_one_vs_rest_after_the_fit(rng):
    X, y = _three_blobs(rng, n_per=12)
    ovr = RVC(gamma=0.5).fit(X, y)
    P_mode = ovr.predict_proba(X)
    P_moderated = ovr.set_params(moderated=True).predict_proba(X)
    assert np.max(np.abs(P_moderated - P_mode)) > 1e-3
    np.testing.assert_allclose(P_moderated.sum(axis=1), 1.0)
    np.testing.assert_allclose(ovr.set_params(moderated=False).predict_proba(X), P_mode)


def test_bad_labels_and_options():
    X = np.arange(20.0).reshape(10, 2)
    with pytest.raises(ValueError, match="only one class"):
        RVC().fit(X, np.ones(10))
    with pytest.raises(ValueError, match="Unknown label type"):
        RVC().fit(X, np.linspace(0, 1, 10))
    with pytest.raises(ValueError, match="unknown multi_class 'ovo'; expected one of"):
        RVC(multi_class="ovo").fit(X, np.arange(10) % 3)
    with pytest.raises(ValueError, match="0 and 1"):
        fit_type2(X, np.arange(10) % 3, likelihood="bernoulli")
    with pytest.raises(ValueError, match="integer class codes"):
        fit_type2(X, np.linspace(0, 2, 10), likelihood="categorical")
    with pytest.raises(ValueError, match="gaussian likelihood only"):
        fit_type2(X, np.arange(10) % 2, likelihood="bernoulli", noise_var=0.1)
    with pytest.raises(ValueError, match="unknown likelihood"):
        fit_type2(X, np.arange(10) % 2, likelihood="poisson")


def test_regression_is_untouched_by_the_classification_step(sinc_data):
    """The Gaussian posterior step still gives MacKay's closed-form fixed point."""
    x, t, _ = sinc_data
    model = RVR(gamma=0.25, solver="mackay").fit(x, t)
    fit = model.result_
    # columns with alpha beyond 1e12 (App. B.1) carry no weight: their fixed point is
    # rounding, so the check is on the others
    kept = fit.alpha < 1e12
    assert kept.sum() >= 5
    np.testing.assert_allclose(fit.alpha[kept], (fit.gamma / fit.mu**2)[kept], rtol=1e-4)
    assert fit.beta is not None
    assert fit.likelihood == "gaussian"


@pytest.mark.slow
def test_predicted_probabilities_are_calibrated():
    """Binned reliability on data from a known logistic model, within sampling error.

    In each decile of predicted probability the observed frequency of class 1 must lie
    within 4 binomial standard errors of the mean predicted probability.
    """
    rng = np.random.default_rng(11)
    X, y, _ = _two_moons_like(rng, 300)
    model = RVC(gamma=1.0).fit(X, y)
    X_test, y_test, p_true = _two_moons_like(rng, 20000)
    p = model.predict_proba(X_test)[:, 1]
    edges = np.quantile(p, np.linspace(0, 1, 11))
    bins = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, 9)
    for b in range(10):
        inside = bins == b
        predicted = p[inside].mean()
        observed = y_test[inside].mean()
        se = np.sqrt(max(predicted * (1 - predicted), 1e-4) / inside.sum())
        # sampling error of the test labels plus the estimation error of a 300-point fit
        assert abs(observed - predicted) < 4 * se + 0.05, (b, predicted, observed)
    assert np.mean(np.abs(p - p_true)) < 0.08


def test_everything_pruned_predicts_one_half():
    """Balanced labels and a basis that carries no information: every column goes."""
    Phi = np.random.default_rng(0).normal(size=(30, 2)) * 1e-3
    t = np.arange(30) % 2
    with pytest.warns(UserWarning, match="every basis function was pruned"):
        fit = fit_type2(Phi, t, likelihood="bernoulli")
    assert fit.active.size == 0
    # log evidence of the empty model: N log(1/2)
    assert fit.log_evidence == pytest.approx(30 * np.log(0.5), rel=1e-12)
    mean, var = fit.predict(np.zeros((4, 0)))
    np.testing.assert_array_equal(mean, 0.0)
    np.testing.assert_array_equal(var, 0.0)


def test_softmax_working_set_reaches_the_whole_basis_optimum(monkeypatch):
    """A softmax over more weights than one dense Hessian may hold runs on a working set
    grown from the empty model by the columns that raise the evidence most. With the limit
    lowered to 18 weights (6 of 7 columns, 3 classes) on a problem with one optimum, it
    reaches the whole-basis optimum: the same relevant columns, weights and Laplace
    evidence, and no column outside would raise the evidence (the whole basis's
    optimality certificate)."""
    Phi, y = _linear_logistic(np.random.default_rng(7), 200, 3)
    whole = fit_type2(Phi, y, "categorical", solver="mackay", tol=1e-7)
    monkeypatch.setattr(laplace, "MAX_SOFTMAX_WEIGHTS", 18)
    working = fit_type2(Phi, y, "categorical", solver="mackay", tol=1e-7)
    np.testing.assert_array_equal(working.active, whole.active)
    np.testing.assert_allclose(working.mu, whole.mu, rtol=1e-4, atol=1e-5)
    assert working.log_evidence == pytest.approx(whole.log_evidence, abs=1e-6)
    assert np.max(working.readd_gain) <= 1e-7


def test_full_softmax_working_set_says_so(monkeypatch):
    rng = np.random.default_rng(1)
    X, y = _three_blobs(rng, n_per=30)
    monkeypatch.setattr(laplace, "MAX_SOFTMAX_WEIGHTS", 6)  # two columns of 3 classes
    with pytest.warns(ConvergenceWarning, match="softmax working set is full"):
        fit_type2(_design(X, gamma=0.5), y, "categorical", solver="mackay", tol=1e-6)


def test_softmax_fits_more_weights_than_one_dense_hessian_holds():
    """837 columns x 3 classes = 2,511 weights, above MAX_SOFTMAX_WEIGHTS (refused with a
    ValueError before the working set): a fit whose Hessian never spans the whole basis,
    at an optimum that no column outside its active set would improve."""
    rng = np.random.default_rng(3)
    Phi, y = _linear_logistic(rng, 150, 3)
    Phi = np.column_stack([Phi, rng.normal(size=(150, 830))])
    assert Phi.shape[1] * 3 > laplace.MAX_SOFTMAX_WEIGHTS
    fit = fit_type2(Phi, y, "categorical", solver="mackay", tol=1e-6)
    assert fit.converged
    assert fit.precision_chol.shape[0] <= laplace.MAX_SOFTMAX_WEIGHTS
    assert np.max(fit.readd_gain) <= 1e-6
    assert set(fit.active.tolist()) >= {0, 1, 2}  # the informative inputs
