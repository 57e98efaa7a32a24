"""Persistence: pickle / joblib round trips of fitted estimators, netCDF of ArviZ trees.

Every fitted estimator variant must predict bit for bit the same after a round trip
(``np.array_equal``): the fitted state is plain arrays, frozen dataclasses and kernel
objects, so nothing is recomputed differently after loading. The DataTrees of the
evidence, MCMC and VI fits must hold equal values after a write / read through netCDF
(engine ``h5netcdf``, in the ``test`` extra).
"""

from __future__ import annotations

import pickle

import joblib
import numpy as np
import pytest
import xarray as xr

import bayes_rvm as br
from bayes_rvm import RVC, RVR
from bayes_rvm.kernels import RBF

rng = np.random.default_rng(8)
X_REG = np.linspace(-5.0, 5.0, 30)[:, None]
Y_REG = np.sinc(X_REG[:, 0] / np.pi) + rng.normal(0.0, 0.1, 30)
X_CLS = rng.normal(size=(36, 2))
Y_CLS = np.where(X_CLS[:, 0] + 0.5 * rng.normal(size=36) > 0, "yes", "no")
Y_3 = np.array(["a", "b", "c"])[np.argmax(X_CLS @ rng.normal(size=(2, 3)), axis=1)]
X_NEW_REG = np.linspace(-6.0, 6.0, 11)[:, None]
X_NEW_CLS = rng.normal(size=(9, 2))


def _log1p_abs(X):
    """An extra basis column (module level, so that it pickles)."""
    return np.log1p(np.abs(X[:, 0]))


#: name -> (estimator, X, y, prediction methods)
VARIANTS = {
    "rvr_mackay": (RVR(), X_REG, Y_REG),
    "rvr_em": (RVR(solver="em", tol=1e-2), X_REG, Y_REG),
    "rvr_sequential": (RVR(solver="sequential"), X_REG, Y_REG),
    "rvr_optimize_scales": (RVR(optimize_scales=True), X_REG, Y_REG),
    "rvr_extra_columns": (
        RVR(extra_columns=["linear", "quadratic", ("log1p_abs", _log1p_abs)]),
        X_REG,
        Y_REG,
    ),
    "rvr_kernel_object": (RVR(kernel=RBF(0.3)), X_REG, Y_REG),
    "rvr_fixed_noise": (RVR(noise_var=0.01), X_REG, Y_REG),
    "rvc_binary": (RVC(), X_CLS, Y_CLS),
    "rvc_moderated": (RVC(moderated=True), X_CLS, Y_CLS),
    "rvc_ovr": (RVC(), X_CLS, Y_3),
    "rvc_multinomial": (RVC(multi_class="multinomial"), X_CLS, Y_3),
    "rvc_optimize_scales": (RVC(optimize_scales=True), X_CLS, Y_CLS),
    "rvc_extra_columns": (RVC(extra_columns=["linear"]), X_CLS, Y_CLS),
}


@pytest.fixture(scope="module")
def fitted():
    return {name: estimator.fit(X, y) for name, (estimator, X, y) in VARIANTS.items()}


def _predictions(model):
    if isinstance(model, RVR):
        mean, std = model.predict(X_NEW_REG, return_std=True)
        return {"mean": mean, "std": std}
    return {
        "predict": model.predict(X_NEW_CLS),
        "proba": model.predict_proba(X_NEW_CLS),
        "log_proba": model.predict_log_proba(X_NEW_CLS),
        "decision": model.decision_function(X_NEW_CLS),
    }


def _pickle(model, tmp_path):
    return pickle.loads(pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL))


def _joblib(model, tmp_path):
    path = tmp_path / "model.joblib"
    joblib.dump(model, path)
    return joblib.load(path)


@pytest.mark.parametrize("round_trip", [_pickle, _joblib], ids=["pickle", "joblib"])
@pytest.mark.parametrize("name", list(VARIANTS))
def test_round_trip_predicts_identically(fitted, name, round_trip, tmp_path):
    model = fitted[name]
    loaded = round_trip(model, tmp_path)
    expected, got = _predictions(model), _predictions(loaded)
    for key, value in expected.items():
        assert got[key].dtype == value.dtype, key
        assert np.array_equal(got[key], value), key
    for attribute in ("alpha_", "relevance_indices_", "log_evidence_", "n_iter_"):
        if hasattr(model, attribute):
            assert np.array_equal(getattr(loaded, attribute), getattr(model, attribute))
    assert loaded.get_params().keys() == model.get_params().keys()


def test_loaded_model_refits_like_a_fresh_one(fitted, tmp_path):
    """A loaded estimator is a complete estimator: refitting it gives the fresh fit."""
    loaded = _joblib(fitted["rvr_mackay"], tmp_path)
    loaded.fit(X_REG[::2], Y_REG[::2])
    fresh = RVR().fit(X_REG[::2], Y_REG[::2])
    assert np.array_equal(loaded.predict(X_NEW_REG), fresh.predict(X_NEW_REG))


def test_callable_kernel_that_cannot_pickle_says_so():
    model = RVR(kernel=lambda A, B: RBF(0.3)(A, B)).fit(X_REG, Y_REG)
    with pytest.raises((pickle.PicklingError, AttributeError), match="lambda"):
        pickle.dumps(model)


# ---------------------------------------------------------------------------------------
# netCDF round trips of the ArviZ DataTrees
# ---------------------------------------------------------------------------------------

PRIOR = {"a": 2.0, "b": 0.5, "c": 3.0, "d": 0.3}


def _assert_same_tree(tree, loaded):
    assert set(loaded.children) == set(tree.children)
    for group in tree.children:
        original, reread = tree[group].to_dataset(), loaded[group].to_dataset()
        assert set(reread.data_vars) == set(original.data_vars), group
        for name, variable in original.data_vars.items():
            assert reread[name].dims == variable.dims, (group, name)
            np.testing.assert_array_equal(reread[name].values, variable.values, err_msg=name)
        for dim in original.dims:
            if dim in original.coords:
                np.testing.assert_array_equal(reread[dim].values, original[dim].values)
    for key in ("fit", "likelihood", "parameterization"):
        assert loaded.attrs[key] == tree.attrs[key]


def _netcdf_round_trip(tree, tmp_path):
    path = tmp_path / "fit.nc"
    tree.to_netcdf(path, engine="h5netcdf")
    with xr.open_datatree(path, engine="h5netcdf") as loaded:
        return loaded.load()


@pytest.mark.parametrize("basis", ["all", "relevant"])
def test_evidence_tree_netcdf_round_trip(fitted, basis, tmp_path):
    """Pruned columns have alpha = inf in the "all" tree: stored and read back as inf."""
    tree = br.to_inference_data(
        fitted["rvr_mackay"], X_REG, Y_REG, X_new=X_NEW_REG, draws=40, random_seed=1, basis=basis
    )
    loaded = _netcdf_round_trip(tree, tmp_path)
    _assert_same_tree(tree, loaded)
    assert loaded.attrs["log_evidence"] == tree.attrs["log_evidence"]
    if basis == "all":
        assert np.isinf(loaded["posterior"]["alpha"].values).any()


def test_classifier_evidence_tree_netcdf_round_trip(fitted, tmp_path):
    tree = br.to_inference_data(fitted["rvc_binary"], X_CLS, Y_CLS, draws=40, random_seed=2)
    _assert_same_tree(tree, _netcdf_round_trip(tree, tmp_path))


@pytest.fixture(scope="module")
def tiny_model():
    Phi = np.random.default_rng(4).normal(size=(12, 3))
    t = Phi @ np.array([1.0, 0.0, -0.5]) + np.random.default_rng(5).normal(0.0, 0.2, 12)
    return br.build_model(Phi, t, **PRIOR), Phi[:4]


def test_mcmc_tree_netcdf_round_trip(tiny_model, tmp_path):
    model, Phi_new = tiny_model
    tree = br.sample(
        model,
        draws=50,
        tune=50,
        chains=1,
        random_seed=6,
        Phi_new=Phi_new,
        nuts_sampler="pymc",  # nutpie's divergence messages (None) come back as NaN
        compute_convergence_checks=False,
    )
    loaded = _netcdf_round_trip(tree, tmp_path)
    _assert_same_tree(tree, loaded)
    assert loaded["sample_stats"]["diverging"].dtype == tree["sample_stats"]["diverging"].dtype


def test_vi_tree_netcdf_round_trip(tiny_model, tmp_path):
    model, Phi_new = tiny_model
    tree = br.fit_vi(model, n=200, draws=50, random_seed=7, Phi_new=Phi_new)
    _assert_same_tree(tree, _netcdf_round_trip(tree, tmp_path))
