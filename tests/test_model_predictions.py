"""Predictions come from the model itself: its own design, likelihood and every term of
its mean; composable blocks; comparisons at the same test points.

One model of a user's own (an RVM block, a random intercept per group, Student-t noise
with a ``sigma``) is sampled once per session with ``pm.sample``; the other checks need no
sampling (evidence trees, the closed-form variational fit, prior draws as a posterior).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from pymc.model.fgraph import clone_model

import bayes_rvm as br
from bayes_rvm import rvm_weights

W = np.array([1.5, 0.0, -1.0, 0.0])
U = np.array([-1.0, 0.5, 2.0])


@pytest.fixture(scope="session")
def grouped():
    """40 rows, 4 linear basis columns, 3 groups with their own intercepts."""
    rng = np.random.default_rng(5)
    Phi, group = rng.normal(size=(40, 4)), rng.integers(0, 3, 40)
    Phi_new, group_new = rng.normal(size=(6, 4)), np.array([0, 1, 2, 2, 1, 0])
    t = Phi @ W + U[group] + 0.2 * rng.standard_t(4, 40)
    t_new = Phi_new @ W + U[group_new] + 0.2 * rng.standard_t(4, 6)
    return Phi, group, t, Phi_new, group_new, t_new


def _own_model(Phi, group, t) -> pm.Model:
    with pm.Model(coords={"obs": np.arange(t.size)}) as model:
        design = pm.Data("design", Phi, dims=("obs", "basis"))
        index = pm.Data("group", group, dims="obs")
        w = rvm_weights(design, 2.0, 0.5)
        u = pm.Normal("u", 0.0, 2.0, shape=3)
        sigma = pm.HalfNormal("sigma", 1.0)
        mu = design @ w + u[index]
        pm.StudentT("y", nu=4, mu=mu, sigma=sigma, observed=t, shape=design.shape[0], dims="obs")
    return model


@pytest.fixture(scope="session")
def own_fit(grouped):
    Phi, group, t, *_ = grouped
    model = _own_model(Phi, group, t)
    with model:
        tree = pm.sample(
            draws=150,
            tune=300,
            chains=2,
            cores=1,
            random_seed=3,
            progressbar=False,
            nuts_sampler="pymc",
            compute_convergence_checks=False,
        )
    return model, tree


def _hand_mean(tree, Phi_new, group_new):
    """``Phi_new w_s + u_s[group]`` per draw, computed from the posterior draws."""
    posterior = tree["posterior"]
    w = posterior["w"].transpose("chain", "draw", ...).values
    u = posterior["u"].transpose("chain", "draw", ...).values
    return w @ Phi_new.T + u[..., group_new]


def test_predict_uses_the_models_likelihood_and_every_term(own_fit, grouped):
    """A Student-t likelihood with ``sigma`` (no ``beta``) was taken as Bernoulli (0/1
    draws), and the random intercept was dropped; now both come from the model's graph."""
    model, tree = own_fit
    _, _, _, Phi_new, group_new, _ = grouped
    out = br.predict(tree, Phi_new=Phi_new, random_seed=1, model=model, data={"group": group_new})
    predictions = out["predictions"]
    np.testing.assert_allclose(
        predictions["mean"].transpose("chain", "draw", ...).values,
        _hand_mean(tree, Phi_new, group_new),
        rtol=1e-10,
        atol=1e-10,
    )
    draws = predictions["y"].values
    assert draws.shape == (2, 150, 6)
    assert not np.all(np.isin(draws, [0, 1]))
    # Student-t noise around the mean: heavier tails than the mean's own spread
    residual = draws - predictions["mean"].values
    assert 0.05 < float(np.median(np.abs(residual))) < 1.0
    # the model given as a context works the same way
    with model:
        again = br.predict(tree, Phi_new=Phi_new, random_seed=1, data={"group": group_new})
    np.testing.assert_array_equal(again["predictions"]["mean"], predictions["mean"])


def test_predict_without_the_model_says_what_to_do(own_fit):
    _, tree = own_fit
    with pytest.raises(ValueError, match=r"pass model=model"):
        br.predict(tree)


def test_predict_refuses_a_model_whose_data_are_not_the_trees(own_fit, grouped):
    """A model with other observed targets is not the model the tree is a fit of: its
    predictions would silently belong to another fit."""
    _, tree = own_fit
    Phi, group, t, *_ = grouped
    other = _own_model(Phi, group, t + 1.0)
    with pytest.raises(ValueError, match="not the tree's observed data"):
        br.predict(tree, model=other)


def test_predict_refuses_inputs_for_a_model_without_a_design_map(own_fit, grouped):
    model, tree = own_fit
    with pytest.raises(ValueError, match=r"no map from inputs to design rows.*Phi_new"):
        br.predict(tree, X_new=grouped[3], model=model)


def test_compare_uses_the_models_real_predictive(own_fit, grouped):
    """compare's RMSE is that of the model's own predictive mean (intercepts included)."""
    model, tree = own_fit
    _, _, _, Phi_new, group_new, t_new = grouped
    table = br.compare(
        [(tree, model)], t_new, Phi_test=Phi_new, data_test={"group": group_new}, random_seed=0
    ).predictive
    mean = _hand_mean(tree, Phi_new, group_new).mean(axis=(0, 1))
    assert table["rmse"].iloc[0] == pytest.approx(np.sqrt(np.mean((mean - t_new) ** 2)), rel=1e-9)
    assert table["rmse"].iloc[0] < 0.4  # the intercepts are 0.5-2 away from 0
    # lpd: the model's own Student-t density, mixed over the draws
    from scipy import stats
    from scipy.special import logsumexp

    hand = _hand_mean(tree, Phi_new, group_new).reshape(-1, 6)
    sigma = tree["posterior"]["sigma"].values.reshape(-1, 1)
    log_p = stats.t.logpdf(t_new, 4, loc=hand, scale=sigma)
    lpd = np.mean(logsumexp(log_p, axis=0) - np.log(hand.shape[0]))
    assert table["lpd"].iloc[0] == pytest.approx(lpd, rel=1e-7)  # PyTensor vs SciPy log-gamma


def test_gaussian_likelihood_with_sigma_is_not_taken_as_bernoulli(grouped):
    """A Gaussian with ``sigma``: the predictive draws scatter around Phi w by sigma."""
    Phi, _, t, Phi_new, _, _ = grouped
    with pm.Model() as model:
        design = pm.Data("Phi", Phi)
        w = rvm_weights(design, 2.0, 0.5)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("t", mu=design @ w, sigma=sigma, observed=t, shape=design.shape[0])
        prior = pm.sample_prior_predictive(draws=50, random_seed=4)
    tree = xr.DataTree.from_dict({"posterior": prior["prior"].to_dataset()})
    out = br.predict(tree, Phi_new=Phi_new, random_seed=2, model=model)
    w = prior["prior"]["w"].transpose("chain", "draw", ...).values
    np.testing.assert_allclose(out["predictions"]["mean"].values, w @ Phi_new.T, rtol=1e-10)
    draws = out["predictions"]["t"].values
    assert not np.all(np.isin(draws, [0, 1]))


# ---------------------------------------------------------------------------------------
# The design travels with the model
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mirrored():
    """Two RVRs whose training designs are bitwise equal: inputs negated, same targets."""
    x = np.linspace(-3, 3, 30)[:, None]
    t = np.sin(x[:, 0]) + np.random.default_rng(2).normal(0, 0.05, 30)
    fits = []
    for X in (x, -x):
        estimator = br.RVR(gamma=0.5).fit(X, t)
        model = br.model_from_estimator(estimator, X, t, a=2.0, b=0.5, c=2.0, d=0.005)
        fits.append((estimator, X, t, model))
    assert np.array_equal(fits[0][3]["Phi"].get_value(), fits[1][3]["Phi"].get_value())
    return fits


def test_each_model_predicts_with_its_own_centres(mirrored):
    """The design was looked up by the contents of Phi: model A predicted with B's centres
    (f about 0 instead of sin(1))."""
    X_new = np.array([[1.0], [2.0]])
    for estimator, _, _, model in mirrored:
        tree = br.fit_vi(model, method="vb", draws=200, random_seed=0)
        out = br.predict(tree, X_new=X_new, random_seed=0, model=model)
        f = out["predictions"]["f"].mean(("chain", "draw")).values
        np.testing.assert_allclose(f, estimator.predict(X_new), atol=0.05)
    assert abs(float(np.sin(1.0))) > 0.8  # the two models' answers differ by 1.6


def test_a_tree_alone_says_to_pass_its_model_for_inputs(mirrored, tmp_path):
    """The map from inputs to design rows is the model's (code, not data): a tree of a
    model_from_estimator fit, in memory or loaded from netCDF, predicts at X_new only with
    its model, and says so; with it, the loaded tree predicts as the estimator."""
    estimator, _, _, model = mirrored[0]
    tree = br.fit_vi(model, method="vb", draws=200, random_seed=0)
    X_new = np.array([[1.0], [2.0]])
    tree.to_netcdf(tmp_path / "fit.nc")
    loaded = xr.open_datatree(tmp_path / "fit.nc").load()
    for fit in (tree, loaded):
        with pytest.raises(ValueError, match=r"pass the model the tree is a fit of"):
            br.predict(fit, X_new=X_new)
    f = br.predict(loaded, X_new=X_new, model=model, random_seed=0)["predictions"]["f"]
    np.testing.assert_allclose(f.mean(("chain", "draw")), estimator.predict(X_new), atol=0.05)


def test_design_survives_many_models_and_set_data(mirrored):
    """After 33 further models, and after pm.set_data, the model keeps its design."""
    estimator, X, t, model = mirrored[0]
    for _ in range(33):
        br.model_from_estimator(estimator, X + 0.0, t, a=2.0, b=0.5, c=2.0, d=0.005)
    tree = br.fit_vi(model, method="vb", draws=100, random_seed=0)
    Phi = model["Phi"].get_value()
    with model:
        pm.set_data({"Phi": Phi[::-1].copy()})
    X_new = np.array([[1.0]])
    out = br.predict(tree, X_new=X_new, random_seed=0, model=model)
    assert float(out["predictions"]["f"].mean()) == pytest.approx(
        float(estimator.predict(X_new)[0]), abs=0.05
    )
    for copy in (pm.do(model, {"beta": 400.0}), pm.model.fgraph.clone_model(model)):
        rows = br.pymc_model.model_spec(copy).design(X_new)
        np.testing.assert_array_equal(rows, br.pymc_model.model_spec(model).design(X_new))


# ---------------------------------------------------------------------------------------
# compare: the same test points, lists and mappings
# ---------------------------------------------------------------------------------------


def test_compare_refuses_fits_predicted_at_different_points():
    rng = np.random.default_rng(0)
    Phi, Phi_a, Phi_b = rng.normal(size=(30, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    t = Phi @ [1.0, 0.0, -1.0] + 0.1 * rng.normal(size=30)
    fit = br.fit_type2(Phi, t, solver="mackay")
    a = br.to_inference_data(fit, Phi, t, X_new=Phi_a, draws=50, random_seed=0)
    b = br.to_inference_data(fit, Phi, t, X_new=Phi_b, draws=50, random_seed=0)
    t_test = Phi_a @ [1.0, 0.0, -1.0]
    with pytest.raises(ValueError, match=r"predicted at different points"):
        br.compare({"a": a, "b": b}, t_test)
    table = br.compare([a, a], t_test).predictive  # a list is accepted
    assert len(table) == 2 and table["rmse"].iloc[0] == table["rmse"].iloc[1]
    table = br.compare([a, b], t_test, Phi_test=Phi_a).predictive  # re-predicted: fine
    assert table["rmse"].iloc[0] == pytest.approx(table["rmse"].iloc[1], rel=0.2)


# ---------------------------------------------------------------------------------------
# Composable blocks, checked at declaration
# ---------------------------------------------------------------------------------------


def test_two_named_blocks_in_one_model():
    rng = np.random.default_rng(1)
    Phi_a, Phi_b = rng.normal(size=(20, 3)), rng.normal(size=(20, 2))
    with pm.Model() as model:
        w_a = rvm_weights(Phi_a, 2.0, 0.5, name="trend", dims="trend_basis")
        w_b = rvm_weights(Phi_b, 2.0, 0.5, name="season", dims="season_basis")
        pm.Normal("t", mu=Phi_a @ w_a + Phi_b @ w_b, sigma=0.1, observed=np.zeros(20))
    assert {"trend_alpha", "trend_w", "season_alpha", "season_w"} <= set(model.named_vars)
    assert model.named_vars_to_dims["season_w"] == ("season_basis",)


def test_sample_refuses_a_model_it_did_not_declare_before_sampling(monkeypatch):
    """A user's rvm_weights model, or a look-alike with Phi, alpha and t, was sampled and then
    crashed (the run lost): now refused before any draw, saying what to do."""

    def refuse(*args, **kwargs):
        raise AssertionError("sampled")

    monkeypatch.setattr(pm, "sample", refuse)
    monkeypatch.setattr(pm, "fit", refuse)
    rng = np.random.default_rng(1)
    Phi = rng.normal(size=(20, 3))
    with pm.Model() as look_alike:
        design = pm.Data("Phi", Phi)
        w = rvm_weights(design, 2.0, 0.5)
        pm.Normal("t", mu=design @ w, sigma=0.1, observed=np.zeros(20), shape=20)
    for fit in (br.sample, br.fit_vi):
        with pytest.raises(TypeError, match=r"did not declare.*pm\.sample\(model=model\)"):
            fit(look_alike)


def test_block_inputs_are_checked_at_declaration():
    Phi = np.ones((10, 3))
    message = r"'basis' has 2 labels but Phi has 3 columns"
    with pm.Model(coords={"basis": ["a", "b"]}), pytest.raises(ValueError, match=message):
        rvm_weights(Phi, 2.0, 0.5)
    with pm.Model():
        with pytest.raises(ValueError, match=r"2 dimensions"):
            rvm_weights(np.ones((2, 3, 4)), 2.0, 0.5)
        with pytest.raises(ValueError, match=r"expected b to be a number or an array of shape"):
            rvm_weights(Phi, 2.0, np.ones(4))


def test_posterior_predictive_check_of_a_users_model(own_fit, grouped):
    """plot_ppc of a pm.sample fit of a user's model (model=): the replicates are the
    model's own observed variable, drawn from its Student-t likelihood around its mean
    (random intercept included), at the training rows; with the model's data set to
    other rows the check is refused."""
    from bayes_rvm.plotting import plot_ppc

    model, tree = own_fit
    Phi, group, t, Phi_new, group_new, _ = grouped
    pc = plot_ppc(tree, model=model, num_samples=5, random_seed=1)
    shown = pc.data["y"]
    assert shown.sizes == {"obs": t.size, "sample": 5}
    draws = br.predict(tree, model=model, random_seed=1)["predictions"]["y"]
    hand = _hand_mean(tree, Phi, group)
    chains, draws_shown = shown["chain"].values, shown["draw"].values
    for chain, draw, values in zip(chains, draws_shown, shown.T.values, strict=True):
        np.testing.assert_array_equal(values, draws.sel(chain=chain, draw=draw).values)
        residual = values - hand[chain, draw]  # Student-t noise of scale sigma ~ 0.2
        assert abs(float(np.mean(residual))) < 0.15 and 0.05 < np.median(np.abs(residual)) < 1
    moved = clone_model(model)
    with moved:
        pm.set_data({"design": Phi_new, "group": group_new}, coords={"obs": np.arange(6)})
    with pytest.raises(ValueError, match=r"restore the model's training data"):
        plot_ppc(tree, model=moved)
