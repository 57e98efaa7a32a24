"""MCMC, VI and evidence fits as DataTrees, predictions, leave-one-out terms and comparison.

Two small models are sampled once per session (collapsed and non-centred, chains=2,
cores=1) and shared by the tests; the long statistical checks are marked slow.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re

import arviz as az
import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import stats
from scipy.special import logsumexp

import bayes_rvm as br
from bayes_rvm.inference._draws import _exact_weights, _loo_gaussian, _numpy_rng
from bayes_rvm.posterior import gaussian_posterior
from bayes_rvm.solvers import Prior, Type2Result
from bayes_rvm.variational import fit_vb, lower_bound

PRIOR = {"a": 2.0, "b": 0.5, "c": 3.0, "d": 0.3}
SAMPLE = {"draws": 200, "tune": 300, "chains": 2, "cores": 1, "random_seed": 11}
QUIET = {"progressbar": False, "compute_convergence_checks": False}


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
def models(regression):
    Phi, t, _, _ = regression
    return {
        "collapsed": br.build_model(Phi, t, **PRIOR),
        "noncentred": br.build_model(Phi, t, parameterization="noncentred", **PRIOR),
    }


@pytest.fixture(scope="session")
def fits(regression, models):
    Phi, t, Phi_new, _ = regression
    out = {
        name: br.sample(model, Phi_new=Phi_new, nuts_sampler="pymc", **QUIET, **SAMPLE)
        for name, model in models.items()
    }
    out["advi"] = br.fit_vi(
        models["collapsed"],
        n=15_000,
        draws=400,
        random_seed=12,
        Phi_new=Phi_new,
        progressbar=False,
    )
    out["vb"] = br.fit_vi(
        models["collapsed"], method="vb", draws=400, random_seed=14, Phi_new=Phi_new
    )
    result = br.fit_type2(Phi, t, **PRIOR)
    out["evidence"] = br.to_inference_data(
        result, Phi, t, X_new=Phi_new, draws=400, random_seed=13
    )
    return out


GROUPS = {
    "posterior": {
        "alpha": ("chain", "draw", "basis"),
        "log_alpha": ("chain", "draw", "basis"),
        "w": ("chain", "draw", "basis"),
        "beta": ("chain", "draw"),
        "log_beta": ("chain", "draw"),
    },
    "log_likelihood": {"t": ("chain", "draw", "obs")},
    "observed_data": {"t": ("obs",)},
    "constant_data": {"Phi": ("obs", "basis")},
    "predictions": {"f": ("chain", "draw", "obs"), "t": ("chain", "draw", "obs")},
    "predictions_constant_data": {"Phi": ("obs", "basis")},
}


@pytest.mark.parametrize("name", ["collapsed", "noncentred", "advi", "vb", "evidence"])
def test_every_fit_has_the_same_layout(fits, regression, name):
    tree = fits[name]
    for group, variables in GROUPS.items():
        for variable, dims in variables.items():
            assert tree[group][variable].dims == dims, (group, variable)
    np.testing.assert_allclose(
        tree["posterior"]["log_alpha"], np.log(tree["posterior"]["alpha"]), rtol=1e-12
    )
    assert tree["posterior"].sizes["basis"] == 4
    assert tree["predictions"].sizes["obs"] == 6
    np.testing.assert_array_equal(tree["observed_data"]["t"], regression[1])
    np.testing.assert_array_equal(tree["predictions_constant_data"]["Phi"], regression[2])
    assert tree.attrs["likelihood"] == "gaussian"
    kinds = {"collapsed": "mcmc", "noncentred": "mcmc", "advi": "vi", "vb": "vi"}
    assert tree.attrs["fit"] == kinds.get(name, "evidence")
    assert tree.attrs["sampling_diagnostics"].startswith(
        "meaningful" if name in ("collapsed", "noncentred") else "n/a"
    )


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
    """log_likelihood and predictions are the stated functions of every draw: log p(t_n | w,
    beta) in weight space (the evidence fit included), the exact leave-one-out terms where w
    is integrated out."""
    Phi, t, Phi_new, _ = regression
    for name, tree in fits.items():
        w = tree["posterior"]["w"].values
        beta = tree["posterior"]["beta"].values
        loglik = tree["log_likelihood"]["t"].values
        if name in ("noncentred", "vb", "evidence"):
            expected = stats.norm.logpdf(t, w @ Phi.T, 1.0 / np.sqrt(beta)[..., None])
            np.testing.assert_allclose(loglik, expected, rtol=1e-12, atol=1e-14)
        else:
            assert tree["log_likelihood"].attrs["pointwise"].startswith("log p(t_n | t_-n"), name
            alpha = tree["posterior"]["alpha"].values
            for chain, draw in [(0, 0), (0, 7), (-1, -1)]:
                np.testing.assert_allclose(
                    loglik[chain, draw],
                    _brute_force_loo(Phi, t, alpha[chain, draw], beta[chain, draw]),
                    rtol=1e-10,
                )
        np.testing.assert_allclose(tree["predictions"]["f"].values, w @ Phi_new.T, rtol=1e-12)


def _brute_force_loo(Phi, t, alpha, beta):
    """log p(t_n | t_-n, alpha, beta) by refitting the weight posterior without row n and
    evaluating its predictive density (Tipping 2001, eq. 21-22) at row n."""
    active = np.isfinite(alpha)
    out = np.empty(t.size)
    for n in range(t.size):
        keep = np.arange(t.size) != n
        P = Phi[keep][:, active]
        H = np.diag(alpha[active]) + beta * P.T @ P
        mu = beta * np.linalg.solve(H, P.T @ t[keep])
        phi = Phi[n, active]
        var = 1.0 / beta + phi @ np.linalg.solve(H, phi)
        out[n] = stats.norm.logpdf(t[n], phi @ mu, np.sqrt(var))
    return out


def test_leave_one_out_terms_are_brute_force_refits(regression):
    """The closed form from C^-1 t and diag(C^-1) against N refits without each row."""
    Phi, t, _, _ = regression
    for alpha, beta in [(np.array([0.5, 20.0, 1.0, 300.0]), 9.0), (np.full(4, 1e-3), 0.5)]:
        L, mu = gaussian_posterior(Phi.T @ Phi, Phi.T @ t, alpha, beta)
        np.testing.assert_allclose(
            _loo_gaussian(Phi, t, mu, L, beta), _brute_force_loo(Phi, t, alpha, beta), rtol=1e-10
        )


def test_loo_of_every_fit(fits):
    """az.loo works on the collapsed fit; compare reports PSIS-LOO, or the exact sum labelled
    as conditional on the type-II estimates for the evidence fit."""
    loo = az.loo(fits["collapsed"])
    assert np.isfinite(loo.elpd) and loo.elpd < 0
    table = br.compare(fits, fits["evidence"]["predictions"]["f"].mean(("chain", "draw")).values)
    rows = table.predictive
    assert rows.loc["collapsed", "elpd_loo"] == pytest.approx(loo.elpd)
    assert rows.loc["collapsed", "loo"].startswith("PSIS-LOO")
    tree = fits["evidence"]
    alpha = tree["posterior"]["alpha"].values[0, 0]
    beta = float(tree["posterior"]["beta"].values[0, 0])
    Phi, t = tree["constant_data"]["Phi"].values, tree["observed_data"]["t"].values
    exact = _brute_force_loo(Phi, t, alpha, beta).sum()
    assert rows.loc["evidence", "elpd_loo"] == pytest.approx(exact, rel=1e-10)
    assert "conditional on the type-II" in rows.loc["evidence", "loo"]
    # the same data, so the elpd of every fit is close; the evidence fit's is the highest
    # in expectation (the hyperparameters were fitted to all the data)
    assert np.ptp(rows["elpd_loo"]) < 3.0


def test_arviz_loo_and_compare_on_the_evidence_tree(fits):
    """az.loo failed inside ArviZ ("All tail values are the same") on the evidence tree; its
    PSIS-LOO now estimates the exact leave-one-out sum given the type-II alpha, beta."""
    tree = fits["evidence"]
    loo = az.loo(tree)
    exact = br.compare({"evidence": tree}, np.zeros(6)).predictive.loc["evidence", "elpd_loo"]
    assert loo.elpd == pytest.approx(exact, abs=max(0.5, 2 * float(loo.se) / 10))
    assert float(np.max(loo.pareto_k)) < 0.7
    assert "type-II" in tree["log_likelihood"].attrs["pointwise"]
    table = az.compare({"evidence": tree, "collapsed": fits["collapsed"]})
    assert set(table.index) == {"evidence", "collapsed"}


@pytest.mark.filterwarnings("ignore:Estimated shape parameter of Pareto:UserWarning")
def test_predict_after_plain_pm_sample(models, regression):
    """pm.sample of the collapsed model holds no w (predict raised KeyError 'w'): predict
    with the model draws w exactly and adds the exact leave-one-out terms for az.loo."""
    Phi, t, Phi_new, _ = regression
    model = models["collapsed"]
    tree = pm.sample(
        draws=100,
        tune=200,
        chains=2,
        cores=1,
        random_seed=5,
        model=model,
        nuts_sampler="pymc",
        **QUIET,
    )
    with pytest.raises(ValueError, match=r"pass model=model"):
        br.predict(tree, Phi_new=Phi_new)
    out = br.predict(tree, Phi_new=Phi_new, model=model, random_seed=0)
    assert out["posterior"]["w"].shape == (2, 100, 4)
    assert out["predictions"]["f"].shape == (2, 100, 6)
    alpha = out["posterior"]["alpha"].values[1, 7]
    beta = float(out["posterior"]["beta"].values[1, 7])
    np.testing.assert_allclose(
        out["log_likelihood"]["t"].values[1, 7], _brute_force_loo(Phi, t, alpha, beta), rtol=1e-9
    )
    assert az.loo(out).n_data_points == t.size


def test_log_likelihood_matches_pymc(fits):
    """Our log_likelihood of the non-centred fit equals pm.compute_log_likelihood."""
    tree = fits["noncentred"]
    model_tree = xr.DataTree()
    model_tree["posterior"] = xr.DataTree(tree["posterior"].to_dataset())
    model = br.build_model(
        tree["constant_data"]["Phi"].values,
        tree["observed_data"]["t"].values,
        parameterization="noncentred",
        **PRIOR,
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
    for name in ("evidence",):
        assert diagnostics.loc[name, "max_r_hat"] == "n/a"
        assert diagnostics.loc[name, "min_ess_bulk"] == "n/a"
    # the collapsed (exact w) and non-centred posteriors of w agree
    basis = comparison.basis.set_index(["fit", "basis"])
    for column in (0, 2):
        a, b = basis.loc[("collapsed", column)], basis.loc[("noncentred", column)]
        assert abs(a["w_mean"] - b["w_mean"]) < 4 * a["w_sd"] / np.sqrt(100)


def test_exact_weight_draws_have_the_gaussian_posterior(regression):
    """Tipping (2001) eq. 12-13: draws at fixed (alpha, beta) have mean mu and covariance Sigma."""
    Phi, t, _, _ = regression
    alpha, beta, n = np.array([0.5, 20.0, 1.0, 300.0]), 9.0, 8000
    w, _ = _exact_weights(np.tile(alpha, (n, 1)), np.full(n, beta), Phi, t, _numpy_rng(1))
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


def test_compare_shrinkage_of_an_evidence_fit(regression):
    """The basis table's shrinkage is eq. 17's gamma_i = 1 - alpha_i Sigma_ii of the fit
    (every draw shares the type-II alpha, beta), and 0 for the pruned columns."""
    Phi, t, Phi_new, t_new = regression
    result = br.fit_type2(Phi, t)
    tree = br.to_inference_data(result, Phi, t, X_new=Phi_new, draws=50, random_seed=1)
    basis = br.compare({"evidence": tree}, t_new).basis.set_index("basis")
    np.testing.assert_allclose(basis.loc[result.active, "shrinkage"], result.gamma, rtol=1e-10)
    np.testing.assert_array_equal(basis.loc[result.inactive, "shrinkage"], 0.0)
    np.testing.assert_array_equal(basis.loc[result.active, "p_relevant"], result.gamma > 0.5)


def test_compare_tables(fits, regression):
    comparison = br.compare(fits, regression[3], interval=0.9)
    assert list(comparison.predictive.index) == list(fits)
    assert list(comparison.predictive.columns) == [
        "rmse",
        "mean_sd",
        "lpd",
        "coverage",
        "elpd_loo",
        "elpd_loo_se",
        "loo",
    ]
    assert comparison.basis.shape[0] == 4 * len(fits)
    assert comparison.diagnostics.loc["advi", "divergences"] == "n/a"
    assert comparison.diagnostics.loc["vb", "kind"] == "vi"
    evidence = fits["evidence"]
    f = evidence["predictions"]["f"].values[0]
    beta = float(evidence["posterior"]["beta"].values[0, 0])
    expected_sd = np.sqrt(f.var(axis=0) + 1.0 / beta).mean()
    assert comparison.predictive.loc["evidence", "mean_sd"] == pytest.approx(expected_sd)
    with pytest.raises(ValueError, match="no predictions group"):
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
    assert list(table.columns)[:3] == ["error_rate", "brier", "lpd"]
    assert table.loc["laplace", "loo"].startswith("n/a")
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


def test_sample_checks_every_option_before_compiling(models, regression, monkeypatch):
    """Options that used to crash only after a finished run now fail before any work."""

    def refuse(*args, **kwargs):
        raise AssertionError("pm.sample was called before the options were checked")

    monkeypatch.setattr(pm, "sample", refuse)
    model = models["collapsed"]
    cases = [
        ({"random_seed": [1, 2, 3], "chains": 2}, ValueError, "expected 2 seeds"),
        ({"random_seed": "seed"}, TypeError, "random_seed must be"),
        ({"var_names": ["alpha", "gamma"]}, ValueError, r"var_names \['gamma'\]"),
        ({"var_names": "alpha"}, TypeError, "list of variable names"),
        ({"return_inferencedata": False}, ValueError, "return_inferencedata=False"),
        ({"step": object(), "nuts_sampler": "numpyro"}, ValueError, "step= needs"),
        ({"progressbar": "yes"}, TypeError, "progressbar must be"),
        ({"max_tree_depth": 5}, TypeError, r"unexpected keyword arguments .*max_tree_depth"),
    ]
    for options, error, match in cases:
        with pytest.raises(error, match=match):
            br.sample(model, **options)


def test_sample_accepts_what_pm_sample_accepts(models):
    """Per-chain seeds (reproducible), var_names, a step method, max_treedepth."""
    model = models["collapsed"]
    options = {"draws": 20, "tune": 20, "chains": 2, "cores": 1, "nuts_sampler": "pymc", **QUIET}
    first = br.sample(model, random_seed=[5, 6], var_names=["alpha"], max_treedepth=6, **options)
    again = br.sample(model, random_seed=[5, 6], var_names=["alpha"], max_treedepth=6, **options)
    xr.testing.assert_equal(first["posterior"].to_dataset(), again["posterior"].to_dataset())
    assert set(first["posterior"].data_vars) == {"alpha", "w", "log_alpha", "log_beta"}
    with model:
        step = pm.Slice()
    sliced = br.sample(model, step=step, random_seed=1, **options)
    assert "accept" not in sliced["sample_stats"] and sliced["posterior"]["w"].shape == (2, 20, 4)


def test_sample_works_on_copies_of_a_model(models):
    """clone_model, pm.do and pm.observe keep the model description (refused before)."""
    from pymc.model.fgraph import clone_model

    model = models["collapsed"]
    options = {"draws": 20, "tune": 20, "chains": 1, "random_seed": 2, **QUIET}
    cloned = br.sample(clone_model(model), **options)
    assert cloned.attrs["parameterization"] == "collapsed"
    fixed = br.sample(pm.do(model, {"beta": 10.0}), **options)
    assert np.all(fixed["posterior"]["beta"].values == 10.0)
    observed = br.sample(pm.observe(model, {"alpha": np.ones(4)}), **options)
    assert np.all(observed["posterior"]["alpha"].values == 1.0)
    for tree in (cloned, fixed, observed):
        assert tree["posterior"]["w"].shape == (1, 20, 4)


def test_predict_from_any_fit(fits, regression):
    Phi, _, Phi_new, _ = regression
    tree = br.predict(fits["noncentred"], Phi_new=Phi_new[:3], random_seed=1)
    w = tree["posterior"]["w"].values
    np.testing.assert_allclose(tree["predictions"]["f"].values, w @ Phi_new[:3].T, rtol=1e-12)
    assert fits["noncentred"]["predictions"].sizes["obs"] == 6  # the input is not changed
    in_sample = br.predict(fits["vb"])
    np.testing.assert_array_equal(in_sample["predictions_constant_data"]["Phi"], Phi)
    # a collapsed fit without w (as pm.sample returns it): w is drawn through w | alpha, beta, t
    bare = fits["collapsed"].copy()
    bare["posterior"] = xr.DataTree(bare["posterior"].to_dataset().drop_vars("w"))
    drawn = br.predict(bare, Phi_new=Phi_new, random_seed=3)
    w_new = drawn["posterior"]["w"].values.reshape(-1, 4)
    w_old = fits["collapsed"]["posterior"]["w"].values.reshape(-1, 4)
    se = np.hypot(w_new.std(axis=0), w_old.std(axis=0)) / np.sqrt(w_new.shape[0])
    assert np.all(np.abs(w_new.mean(axis=0) - w_old.mean(axis=0)) < 4.5 * se)
    with pytest.raises(ValueError, match="pass the model the tree is a fit of"):
        br.predict(fits["vb"], X_new=Phi_new)
    with pytest.raises(ValueError, match="with 4 columns"):
        br.predict(fits["vb"], Phi_new=Phi_new[:, :2])


def test_compare_a_users_own_model(regression):
    """pm.sample of a model built with the block (hierarchical prior on the weight scale)."""
    Phi, t, Phi_new, t_new = regression
    with pm.Model(coords={"basis": np.arange(4), "obs": np.arange(40)}) as own:
        Phi_data = pm.Data("Phi", Phi, dims=("obs", "basis"))
        scale = pm.HalfNormal("scale", 2.0)
        w = br.rvm_weights(Phi_data, 2.0, 2.0 * scale**2)
        beta = pm.Gamma("beta", alpha=3.0, beta=np.float64(0.3))
        pm.Normal("t", mu=Phi_data @ w, sigma=1 / pm.math.sqrt(beta), observed=t, dims="obs")
        tree = pm.sample(200, tune=200, chains=1, random_seed=4, **QUIET)
    with pytest.raises(ValueError, match=r"pass model=model"):
        br.compare({"own": tree}, t_new, Phi_test=Phi_new, random_seed=1)
    table = br.compare({"own": (tree, own)}, t_new, Phi_test=Phi_new, random_seed=1)
    assert table.predictive.loc["own", "rmse"] < 0.6
    assert table.diagnostics.loc["own", "kind"] == "mcmc"
    basis = table.basis.set_index("basis")
    assert abs(basis.loc[0, "w_mean"] - 1.5) < 3 * basis.loc[0, "w_sd"]
    assert np.isnan(basis.loc[0, "shrinkage"])  # the likelihood is the model's own


def test_compare_accepts_string_labels():
    """A softmax fit with string class labels; and a Bernoulli tree with its classes."""
    rng = np.random.default_rng(2)
    Phi, Phi_test = rng.normal(size=(10, 2)), rng.normal(size=(5, 2))
    w = rng.normal(size=(1, 30, 2, 3))
    tree = az.from_dict(
        {"posterior": {"w": w, "alpha": np.ones((1, 30, 2, 3))}, "constant_data": {"Phi": Phi}},
        dims={"w": ["basis", "class"], "alpha": ["basis", "class"], "Phi": ["obs", "basis"]},
        coords={"class": ["dog", "cat", "eel"]},  # not sorted
    )
    tree.attrs.update(fit="mcmc", likelihood="categorical")  # as the package's fits say
    labels = np.array(["cat", "eel", "dog", "cat", "cat"])
    row = br.compare({"softmax": tree}, labels, Phi_test=Phi_test).predictive.loc["softmax"]
    logits = np.einsum("nm,sdmk->sdnk", Phi_test, w)[0]
    p = np.exp(logits - logsumexp(logits, axis=-1, keepdims=True)).mean(axis=0)
    codes = np.array([1, 2, 0, 1, 1])
    assert row["error_rate"] == pytest.approx(np.mean(p.argmax(axis=1) != codes))
    assert row["lpd"] == pytest.approx(np.mean(np.log(p[np.arange(5), codes])), rel=1e-10)
    with pytest.raises(ValueError, match=r"among the fit's classes \['dog', 'cat', 'eel'\]"):
        br.compare({"softmax": tree}, ["dog", "ant", "cat", "dog", "dog"], Phi_test=Phi_test)


def test_advi_warns_when_it_has_not_converged(models):
    """Started away from the posterior with a small learning rate, 1000 steps leave the loss
    falling (by about 140 +- 17 over the last 400 for seeds 0-3): a warning says so."""
    start = {"alpha_log__": np.full(4, 6.0), "beta_log__": 0.0}
    with pytest.warns(
        UserWarning, match=r"has not converged after 1000 of n=1000 steps.*method='vb'"
    ):
        br.fit_vi(
            models["collapsed"],
            n=1000,
            draws=10,
            random_seed=1,
            start=start,
            obj_optimizer=pm.adam(learning_rate=0.002),
            progressbar=False,
        )


def test_interrupted_runs_say_they_are_partial(models):
    """A KeyboardInterrupt (PyMC's documented way: raised in a callback) used to return a
    complete-looking tree (10 of 200 draws, 299 of 5,000 steps) with no warning."""
    calls = []

    def interrupt(trace, draw):
        calls.append(draw)
        if len(calls) == 320:  # the 20th draw after tuning of the first chain
            raise KeyboardInterrupt

    with pytest.warns(UserWarning, match=r"interrupted.*partial = 1"):
        tree = br.sample(models["collapsed"], callback=interrupt, **QUIET, **SAMPLE)
    assert tree.attrs["partial"] == 1
    assert tree["posterior"].sizes["chain"] * tree["posterior"].sizes["draw"] < 400

    def stop(approx, loss, i):
        if i == 300:
            raise KeyboardInterrupt

    with pytest.warns(UserWarning, match="interrupted") as record:
        tree = br.fit_vi(
            models["collapsed"],
            n=5000,
            draws=10,
            random_seed=1,
            callbacks=[stop],
            progressbar=False,
        )
    assert tree.attrs["partial"] == 1 and tree["sample_stats"].sizes["iteration"] < 5000
    assert any(re.search(r"\d+ of n=5000 optimisation steps", str(w.message)) for w in record)


def test_relevance_plots(fits, tmp_path):
    """The forest of log alpha across fits (pruned columns left out) and the PPC."""
    from bayes_rvm.plotting import plot_log_alpha, plot_ppc

    pc = plot_log_alpha({"vb": fits["vb"], "evidence": fits["evidence"]}, basis=[0, 2])
    pc.savefig(tmp_path / "forest.png")
    pc = plot_ppc(fits["collapsed"], num_samples=5, random_seed=1)
    pc.savefig(tmp_path / "ppc.png")
    assert (tmp_path / "forest.png").stat().st_size > 0 and (tmp_path / "ppc.png").exists()


def test_forest_of_fits_over_different_basis_sets(tmp_path):
    """An evidence fit over every basis function (pruned ones at alpha = inf) beside a fit
    over its relevant ones: shown over the functions some fit keeps. Aligning them left it
    to xarray's implicit outer join (a FutureWarning, an error here) and drew nothing."""
    import xarray as xr

    from bayes_rvm.plotting import plot_log_alpha

    rng = np.random.default_rng(3)
    everything = np.array([np.inf, 2.0, np.inf, 5.0])[None, None] * np.ones((1, 4, 1))
    evidence = xr.DataTree.from_dict(
        {"posterior": xr.Dataset({"alpha": (("chain", "draw", "basis"), everything)},
                                 coords={"basis": ["k0", "k1", "k2", "bias"]})}
    )  # fmt: skip
    draws = np.exp(rng.normal(size=(2, 50, 2)))
    relevant = xr.DataTree.from_dict(
        {"posterior": xr.Dataset({"alpha": (("chain", "draw", "basis"), draws)},
                                 coords={"basis": ["k1", "bias"]})}
    )  # fmt: skip
    pc = plot_log_alpha({"evidence": evidence, "mcmc": relevant})
    pc.savefig(tmp_path / "forest.png")
    labels = {str(text.get_text()) for ax in pc.viz["plot"].values.ravel()
              if hasattr(ax, "texts") for text in ax.texts}  # fmt: skip
    assert (tmp_path / "forest.png").stat().st_size > 0
    assert {"k1", "bias"} <= labels and not labels & {"k0", "k2"}


def _tiny_vb_problem(m: int):
    rng = np.random.default_rng(21)
    Phi = rng.normal(size=(8, m))
    t = Phi @ np.linspace(1.0, -0.5, m) + rng.normal(0, 0.3, 8)
    return Phi, t


def test_vb_bound_increases_and_its_fixed_point_is_stationary():
    """Each closed-form update maximises the bound over one factor: the path never falls, and
    at convergence no small change of any variational parameter raises the bound."""
    Phi, t = _tiny_vb_problem(2)
    result = fit_vb(Phi, t, **PRIOR, tol=1e-14, max_iter=5000)
    path = result.lower_bound_path
    assert result.converged and path.size > 3
    assert np.all(np.diff(path) >= -1e-12 * np.abs(path[1:]))
    L = result.precision_chol
    x0 = np.concatenate(
        [
            result.mu,
            L[np.tril_indices(2)],
            np.log(result.alpha_shape),
            np.log(result.alpha_rate),
            np.log([result.beta_shape, result.beta_rate]),
        ]
    )

    def bound(x):
        factor = np.zeros((2, 2))
        factor[np.tril_indices(2)] = x[2:5]
        shape, rate, beta = np.exp(x[5:7]), np.exp(x[7:9]), tuple(np.exp(x[9:11]))
        return lower_bound(Phi, t, x[:2], factor, shape, rate, beta, **PRIOR)

    h = 1e-5
    gradient = [(bound(x0 + h * e) - bound(x0 - h * e)) / (2 * h) for e in np.eye(x0.size)]
    np.testing.assert_allclose(gradient, 0.0, atol=1e-6)
    assert bound(x0) == pytest.approx(result.lower_bound, rel=1e-12)


def test_vb_bound_is_below_the_log_marginal_likelihood():
    """One basis function: log p(t) by quadrature over (log alpha, log beta), and the bound
    under it by the KL divergence of the mean-field approximation (small here)."""
    Phi, t = _tiny_vb_problem(1)
    phi = Phi[:, 0]
    u = np.linspace(-12.0, 12.0, 1201)
    log_alpha, log_beta = np.meshgrid(u, u, indexing="ij")
    alpha, beta = np.exp(log_alpha), np.exp(log_beta)
    n, pp, pt_ = t.size, phi @ phi, phi @ t
    # C = I/beta + phi phi^T/alpha: |C| and t^T C^-1 t in closed form (rank one)
    log_det = -n * log_beta + np.log1p(beta * pp / alpha)
    quad = beta * (t @ t) - beta**2 * pt_**2 / (alpha + beta * pp)
    log_joint = (
        -0.5 * (n * np.log(2 * np.pi) + log_det + quad)
        + stats.gamma.logpdf(alpha, PRIOR["a"], scale=1 / PRIOR["b"])
        + log_alpha
        + stats.gamma.logpdf(beta, PRIOR["c"], scale=1 / PRIOR["d"])
        + log_beta
    )
    step = u[1] - u[0]
    log_evidence = float(
        np.log(np.exp(log_joint - log_joint.max()).sum() * step**2) + log_joint.max()
    )
    result = fit_vb(Phi, t, **PRIOR, tol=1e-14, max_iter=5000)
    bound = result.lower_bound
    assert bound < log_evidence
    assert log_evidence - bound < 0.1  # 0.057 measured
    # the closed-form bound against a Monte Carlo estimate of E_q[log p(t, w, alpha, beta)
    # - log q(w, alpha, beta)] from scipy densities
    rng = np.random.default_rng(5)
    n_mc = 200_000
    sd_w = 1.0 / result.precision_chol[0, 0]
    w = rng.normal(result.mu[0], sd_w, n_mc)
    a_shape, a_rate = result.alpha_shape[0], result.alpha_rate[0]
    alpha = rng.gamma(a_shape, 1.0 / a_rate, n_mc)
    beta = rng.gamma(result.beta_shape, 1.0 / result.beta_rate, n_mc)
    log_joint = (
        stats.norm.logpdf(t[:, None], np.outer(phi, w), 1.0 / np.sqrt(beta)).sum(axis=0)
        + stats.norm.logpdf(w, 0.0, 1.0 / np.sqrt(alpha))
        + stats.gamma.logpdf(alpha, PRIOR["a"], scale=1.0 / PRIOR["b"])
        + stats.gamma.logpdf(beta, PRIOR["c"], scale=1.0 / PRIOR["d"])
    )
    log_q = (
        stats.norm.logpdf(w, result.mu[0], sd_w)
        + stats.gamma.logpdf(alpha, a_shape, scale=1.0 / a_rate)
        + stats.gamma.logpdf(beta, result.beta_shape, scale=1.0 / result.beta_rate)
    )
    terms = log_joint - log_q
    assert abs(terms.mean() - bound) < 4.0 * terms.std() / np.sqrt(n_mc)


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
@pytest.mark.filterwarnings("ignore:advi has not converged")
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


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["nutpie", "numpyro"])
def test_other_nuts_samplers_agree_with_pymc(models, fits, sampler):
    """The collapsed model (analytic gradient through an OpFromGraph) under nutpie's Numba
    and numpyro's JAX backends: the same posterior of log beta and w within MC error.
    nutpie, when installed, is also the default sampler (as in ``pm.sample``)."""
    if importlib.util.find_spec(sampler) is None:
        pytest.skip(f"{sampler} is not installed (optional extra 'samplers')")
    choice = {} if sampler == "nutpie" else {"nuts_sampler": sampler}
    tree = br.sample(models["collapsed"], **choice, **QUIET, **SAMPLE)
    assert tree.attrs["method"] == f"NUTS ({sampler})"
    reference = fits["collapsed"]["posterior"]
    for name in ("log_beta", "w"):
        ours, theirs = tree["posterior"][name], reference[name]
        se = np.hypot(
            az.mcse(tree["posterior"].to_dataset()[[name]])[name],
            az.mcse(reference.to_dataset()[[name]])[name],
        )
        difference = ours.mean(("chain", "draw")) - theirs.mean(("chain", "draw"))
        assert np.all(np.abs(difference) < 4.5 * se), name


def test_advi_on_the_weight_space_gaussian_model_warns(models):
    """ADVI's Gaussian on (w, log alpha) of the non-centred model is far off (predictive sd
    about 16 times MCMC's on sinc, benchmarks/bench_sampling.py --part vi): a warning says so
    and what to use instead; the collapsed model fits without it."""
    with pytest.warns(UserWarning, match=r"advi on the noncentred Gaussian model.*collapsed"):
        br.fit_vi(models["noncentred"], n=50, draws=10, random_seed=0, progressbar=False)
