"""MCMC, VI and evidence fits as DataTrees, and their comparison.

Two small models are sampled once per session (collapsed and non-centred, chains=2,
cores=1) and shared by the tests; the long statistical check is marked slow.
"""

from __future__ import annotations

import dataclasses
import importlib.util

import arviz as az
import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import stats

import bayes_rvm as br
from bayes_rvm.inference import _exact_weights, _numpy_rng
from bayes_rvm.solvers import Prior, Type2Result

PRIOR = {"a": 2.0, "b": 0.5, "c": 3.0, "d": 0.3}
SAMPLE = {"draws": 200, "tune": 300, "chains": 2, "cores": 1, "random_seed": 11}


@pytest.fixture(scope="session")
def regression():
    """Linear basis, 40 rows, 4 columns: two weights clearly relevant, two not."""
    rng = np.random.default_rng(3)
    Phi = rng.normal(size=(40, 4))
    w = np.array([1.5, 0.0, -1.0, 0.0])
    Phi_new = rng.normal(size=(6, 4))
    t = Phi @ w + rng.normal(0, 0.3, 40)
    t_new = Phi_new @ w + rng.normal(0, 0.3, 6)
    return Phi, t, Phi_new, t_new


@pytest.fixture(scope="session")
def fits(regression):
    Phi, t, Phi_new, _ = regression
    out = {}
    for parameterization in ("collapsed", "noncentred"):
        model = br.build_model(Phi, t, parameterization=parameterization, **PRIOR)
        out[parameterization] = br.sample(
            model, Phi_new=Phi_new, compute_convergence_checks=False, **SAMPLE
        )
    model = br.build_model(Phi, t, **PRIOR)
    out["advi"] = br.fit_vi(model, n=4000, draws=400, random_seed=12, Phi_new=Phi_new)
    result = br.fit_type2(Phi, t, **PRIOR)
    out["evidence"] = br.to_inference_data(
        result, Phi, t, X_new=Phi_new, draws=400, random_seed=13
    )
    return out


GROUPS = {
    "posterior": {"alpha": ("chain", "draw", "basis"), "w": ("chain", "draw", "basis")},
    "log_likelihood": {"t": ("chain", "draw", "obs")},
    "observed_data": {"t": ("obs",)},
    "constant_data": {"Phi": ("obs", "basis")},
    "predictions": {"f": ("chain", "draw", "obs"), "t": ("chain", "draw", "obs")},
    "predictions_constant_data": {"Phi": ("obs", "basis")},
}


@pytest.mark.parametrize("name", ["collapsed", "noncentred", "advi", "evidence"])
def test_every_fit_has_the_same_layout(fits, regression, name):
    tree = fits[name]
    for group, variables in GROUPS.items():
        for variable, dims in variables.items():
            assert tree[group][variable].dims == dims, (group, variable)
    assert tree["posterior"]["beta"].dims == ("chain", "draw")
    assert tree["posterior"].sizes["basis"] == 4
    assert tree["predictions"].sizes["obs"] == 6
    np.testing.assert_array_equal(tree["observed_data"]["t"], regression[1])
    np.testing.assert_array_equal(tree["predictions_constant_data"]["Phi"], regression[2])
    assert tree.attrs["likelihood"] == "gaussian"
    kinds = {"collapsed": "mcmc", "noncentred": "mcmc", "advi": "vi", "evidence": "evidence"}
    assert tree.attrs["fit"] == kinds[name]


def test_evidence_tree_lines_up_with_the_collapsed_fit(fits):
    evidence, mcmc = fits["evidence"], fits["collapsed"]
    assert set(evidence.children) == set(mcmc.children) - {"sample_stats"}
    for group in evidence.children:
        assert set(evidence[group].data_vars) == set(mcmc[group].data_vars), group
        for name in evidence[group].data_vars:
            assert evidence[group][name].dims == mcmc[group][name].dims, (group, name)
        for dim in set(evidence[group].dims) - {"chain", "draw"}:
            np.testing.assert_array_equal(evidence[group][dim], mcmc[group][dim])


def test_derived_groups_follow_the_draws(fits, regression):
    """log_likelihood and predictions are the stated functions of every draw of w, beta."""
    Phi, t, Phi_new, _ = regression
    for tree in fits.values():
        w = tree["posterior"]["w"].values
        beta = tree["posterior"]["beta"].values
        expected = stats.norm.logpdf(t, w @ Phi.T, 1.0 / np.sqrt(beta)[..., None])
        np.testing.assert_allclose(
            tree["log_likelihood"]["t"].values, expected, rtol=1e-12, atol=1e-14
        )
        np.testing.assert_allclose(tree["predictions"]["f"].values, w @ Phi_new.T, rtol=1e-12)


def test_log_likelihood_matches_pymc(fits):
    """Our log_likelihood of the non-centred fit equals pm.compute_log_likelihood."""
    tree = fits["noncentred"]
    model_tree = xr.DataTree()
    model_tree["posterior"] = xr.DataTree(tree["posterior"].to_dataset())
    model = br.build_model(
        tree["constant_data"]["Phi"].values, tree["observed_data"]["t"].values, **PRIOR
    )
    reference = pm.compute_log_likelihood(model_tree, model=model, progressbar=False)
    np.testing.assert_allclose(
        reference["log_likelihood"]["t"].values, tree["log_likelihood"]["t"].values, rtol=1e-10
    )


def test_mcmc_diagnostics_and_agreement(fits):
    comparison = br.compare(
        {k: fits[k] for k in ("collapsed", "noncentred", "evidence")},
        fits["evidence"]["predictions"]["f"].mean(("chain", "draw")).values,
    )
    diagnostics = comparison.diagnostics
    assert diagnostics.loc["collapsed", "divergences"] == 0
    assert diagnostics.loc["collapsed", "max_r_hat"] < 1.05
    assert np.isnan(diagnostics.loc["evidence", "max_r_hat"])
    # the collapsed (exact w) and non-centred posteriors of w agree
    basis = comparison.basis.set_index(["fit", "basis"])
    for column in (0, 2):
        a, b = basis.loc[("collapsed", column)], basis.loc[("noncentred", column)]
        assert abs(a["w_mean"] - b["w_mean"]) < 4 * a["w_sd"] / np.sqrt(100)


def test_exact_weight_draws_have_the_gaussian_posterior(regression):
    """Tipping (2001) eq. 12-13: draws at fixed (alpha, beta) have mean mu and covariance Sigma."""
    Phi, t, _, _ = regression
    alpha, beta, n = np.array([0.5, 20.0, 1.0, 300.0]), 9.0, 8000
    w = _exact_weights(np.tile(alpha, (n, 1)), np.full(n, beta), Phi, t, _numpy_rng(1))
    H = np.diag(alpha) + beta * Phi.T @ Phi
    mu = beta * np.linalg.solve(H, Phi.T @ t)
    # whitened by the factor of the precision, the draws are N(0, I)
    u = (w - mu) @ np.linalg.cholesky(H)
    assert np.all(np.abs(u.mean(axis=0)) < 4.5 / np.sqrt(n))
    np.testing.assert_allclose(np.cov(u.T), np.eye(4), atol=5 * np.sqrt(2 / n))


def test_evidence_tree_pruned_columns(regression):
    """basis='all': pruned columns at alpha = inf, w = 0; 'relevant': only the active ones."""
    Phi, t, Phi_new, _ = regression
    result = br.fit_type2(Phi, t)  # the paper's improper default prunes the two zero weights
    assert result.active.size < 4
    tree = br.to_inference_data(result, Phi, t, X_new=Phi_new, draws=3000, random_seed=1)
    alpha = tree["posterior"]["alpha"].values[0]
    w = tree["posterior"]["w"].values[0]
    pruned = result.inactive
    assert np.all(np.isinf(alpha[:, pruned]))
    assert np.all(w[:, pruned] == 0.0)
    np.testing.assert_array_equal(alpha[0, result.active], result.alpha)
    se = np.sqrt(np.diag(result.Sigma) / 3000)
    assert np.all(np.abs(w[:, result.active].mean(axis=0) - result.mu) < 4.5 * se)
    relevant = br.to_inference_data(result, Phi, t, draws=10, basis="relevant")
    np.testing.assert_array_equal(relevant["posterior"]["basis"], np.sort(result.active))
    assert "predictions" not in relevant.children
    assert tree.attrs["log_evidence"] == result.log_evidence


def test_compare_tables(fits, regression):
    comparison = br.compare(fits, regression[3], interval=0.9)
    assert list(comparison.predictive.index) == list(fits)
    assert list(comparison.predictive.columns) == ["rmse", "mean_sd", "lpd", "coverage"]
    assert comparison.basis.shape[0] == 4 * len(fits)
    assert np.isnan(comparison.diagnostics.loc["advi", "divergences"])
    evidence = fits["evidence"]
    f = evidence["predictions"]["f"].values[0]
    beta = float(evidence["posterior"]["beta"].values[0, 0])
    expected_sd = np.sqrt(f.var(axis=0) + 1.0 / beta).mean()
    assert comparison.predictive.loc["evidence", "mean_sd"] == pytest.approx(expected_sd)
    with pytest.raises(ValueError, match="predictions group"):
        br.compare({"x": br.to_inference_data(br.fit_type2(*regression[:2]), *regression[:2])}, [])
    with pytest.raises(ValueError, match="6 test points but t_test has 2"):
        br.compare(fits, [0.0, 1.0])


def test_bernoulli_evidence_tree():
    """A Laplace fit (likelihood 'bernoulli'): w ~ N(mu, Sigma), no beta, Bernoulli terms."""
    rng = np.random.default_rng(5)
    Phi, Phi_new = rng.normal(size=(25, 3)), rng.normal(size=(5, 3))
    t = (rng.random(25) < 0.5).astype(float)
    H = np.diag([1.0, 2.0, 3.0]) + Phi.T @ Phi / 4
    result = Type2Result(
        likelihood="bernoulli",
        solver="test",
        n_basis=3,
        active=np.arange(3),
        alpha=np.array([1.0, 2.0, 3.0]),
        beta=None,
        mu=np.array([0.5, -0.2, 0.1]),
        precision_chol=np.linalg.cholesky(H),
        log_evidence=-10.0,
        log_evidence_path=np.array([-10.0]),
        n_iter=1,
        converged=True,
        readd_gain=np.zeros(0),
        prior=Prior(),
    )
    tree = br.to_inference_data(result, Phi, t, X_new=Phi_new, draws=50, random_seed=0)
    assert "beta" not in tree["posterior"]
    w = tree["posterior"]["w"].values
    p = 1.0 / (1.0 + np.exp(-(w @ Phi.T)))
    np.testing.assert_allclose(
        tree["log_likelihood"]["t"].values, stats.bernoulli.logpmf(t, p), rtol=1e-10
    )
    assert set(np.unique(tree["predictions"]["t"])) <= {0, 1}
    table = br.compare({"laplace": tree}, (rng.random(5) < 0.5).astype(float)).predictive
    assert list(table.columns) == ["error_rate", "brier", "lpd"]
    softmax = dataclasses.replace(result, likelihood="categorical")
    with pytest.raises(ValueError, match="likelihood='categorical'"):
        br.to_inference_data(softmax, Phi, t)


def test_estimator_models_and_trees(sinc_data):
    X, y, _ = sinc_data
    X, y = X[::4], y[::4]
    estimator = br.RVR(gamma=0.25).fit(X, y)
    active = np.sort(estimator.result_.active)
    model = br.model_from_estimator(
        estimator, X, y, basis="relevant", parameterization="collapsed", **PRIOR
    )
    names = [f"k{j}" if j < X.shape[0] else "bias" for j in active]
    assert list(model.coords["basis"]) == names
    X_new = np.linspace(-9, 9, 7)[:, None]
    Phi_new = br.pymc_model.model_spec(model).design(X_new)
    mu = estimator.result_.mu[np.argsort(estimator.result_.active)]
    np.testing.assert_allclose(Phi_new @ mu, estimator.predict(X_new), rtol=1e-10)
    everything = br.model_from_estimator(estimator, X, y, basis="all", **PRIOR)
    assert everything.coords["basis"][-1] == "bias"
    assert len(everything.coords["basis"]) == 26
    tree = br.to_inference_data(estimator, X, y, X_new=X_new, draws=20, basis="relevant")
    assert list(tree["posterior"]["basis"].values) == names
    fixed = br.RVR(gamma=0.25, noise_var=0.01).fit(X, y)
    fixed_model = br.model_from_estimator(fixed, X, y, a=2.0, b=0.5)
    assert br.pymc_model.model_spec(fixed_model).noise_var == pytest.approx(0.01)
    with pytest.raises(ValueError, match="either noise_var"):
        br.model_from_estimator(fixed, X, y, **PRIOR)


def test_option_errors(regression):
    Phi, t, Phi_new, _ = regression
    model = br.build_model(Phi, t, **PRIOR)
    with pytest.raises(ValueError, match="'pymc', 'nutpie', 'numpyro'"):
        br.sample(model, nuts_sampler="stan")
    for sampler in ("nutpie", "numpyro"):
        if importlib.util.find_spec(sampler) is None:
            with pytest.raises(ImportError, match=r"bayes_rvm\[samplers\]"):
                br.sample(model, nuts_sampler=sampler)
    with pytest.raises(ValueError, match="'advi', 'fullrank_advi'"):
        br.fit_vi(model, method="svgd")
    with pytest.raises(ValueError, match="model_from_estimator"):
        br.sample(model, X_new=Phi_new)
    with pytest.raises(ValueError, match="with 4 columns"):
        br.sample(model, Phi_new=Phi_new[:, :2])
    with pytest.raises(TypeError, match="Type2Result or a fitted"):
        br.to_inference_data(object(), Phi, t)
    with pytest.raises(ValueError, match="'relevant', 'all'"):
        br.to_inference_data(br.fit_type2(Phi, t), Phi, t, basis="some")


@pytest.mark.slow
def test_evidence_and_mcmc_predictives_agree_on_a_well_determined_problem():
    """Many data and a strong proper prior: the delta-function approximation (eq. 14) is
    accurate, so the predictive means and sds agree within Monte Carlo error."""
    rng = np.random.default_rng(8)
    Phi = np.column_stack([np.ones(2000), rng.normal(size=(2000, 3))])
    t = Phi @ np.array([0.5, 1.0, -2.0, 0.7]) + rng.normal(0, 0.5, 2000)
    Phi_new = np.column_stack([np.ones(50), rng.normal(size=(50, 3))])
    prior = {"a": 50.0, "b": 50.0, "c": 50.0, "d": 50.0 * 0.25}
    model = br.build_model(Phi, t, parameterization="collapsed", **prior)
    mcmc = br.sample(model, draws=1500, tune=1000, chains=2, random_seed=3, Phi_new=Phi_new)
    evidence = br.to_inference_data(
        br.fit_type2(Phi, t, **prior), Phi, t, X_new=Phi_new, draws=3000, random_seed=4
    )
    f_mcmc = mcmc["predictions"]["f"].values.reshape(-1, 50)
    f_evidence = evidence["predictions"]["f"].values[0]
    # Monte Carlo standard errors: the MCMC mean's from its effective sample size, the
    # evidence mean's from its independent draws
    ess = az.ess(mcmc["predictions"].to_dataset())["f"].values
    se = np.hypot(f_mcmc.std(axis=0) / np.sqrt(ess), f_evidence.std(axis=0) / np.sqrt(3000))
    assert np.all(np.abs(f_mcmc.mean(axis=0) - f_evidence.mean(axis=0)) < 4 * se)
    np.testing.assert_allclose(f_mcmc.std(axis=0), f_evidence.std(axis=0), rtol=0.15)
    table = br.compare({"mcmc": mcmc, "evidence": evidence}, Phi_new @ [0.5, 1.0, -2.0, 0.7])
    assert table.diagnostics.loc["mcmc", "min_ess_bulk"] > 500
    assert table.diagnostics.loc["mcmc", "divergences"] == 0
    np.testing.assert_allclose(
        table.predictive.loc["mcmc", "mean_sd"], table.predictive.loc["evidence", "mean_sd"], 0.02
    )


@pytest.mark.slow
def test_bernoulli_mcmc_and_collapsed_vi():
    """The classification model samples and predicts; ADVI of the collapsed model adds w."""
    rng = np.random.default_rng(9)
    Phi = np.column_stack([np.ones(80), rng.normal(size=(80, 2))])
    p = 1.0 / (1.0 + np.exp(-(Phi @ [0.3, 3.0, -2.0])))
    t = (rng.random(80) < p).astype(float)
    Phi_new = np.column_stack([np.ones(200), rng.normal(size=(200, 2))])
    p_new = 1.0 / (1.0 + np.exp(-(Phi_new @ [0.3, 3.0, -2.0])))
    model = br.build_model(Phi, t, "bernoulli", a=2.0, b=0.5)
    fit = br.sample(model, draws=400, tune=400, chains=2, random_seed=2, Phi_new=Phi_new)
    assert "beta" not in fit["posterior"]
    table = br.compare({"mcmc": fit}, (rng.random(200) < p_new).astype(float))
    assert table.diagnostics.loc["mcmc", "max_r_hat"] < 1.02
    f = fit["predictions"]["f"].values.reshape(-1, 200)
    # the predictive probabilities track the true ones
    assert np.corrcoef(1.0 / (1.0 + np.exp(-f)).mean(axis=0), p_new)[0, 1] > 0.95

    Phi_r = np.column_stack([np.ones(60), rng.normal(size=(60, 2))])
    t_r = Phi_r @ [1.0, -1.0, 0.5] + rng.normal(0, 0.3, 60)
    collapsed = br.build_model(Phi_r, t_r, parameterization="collapsed", **PRIOR)
    vi = br.fit_vi(collapsed, n=5000, draws=300, random_seed=3)
    assert vi["posterior"]["w"].dims == ("chain", "draw", "basis")
    np.testing.assert_allclose(
        vi["posterior"]["w"].mean(("chain", "draw")), [1.0, -1.0, 0.5], atol=0.2
    )
