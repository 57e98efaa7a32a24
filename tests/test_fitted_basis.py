"""The fitted basis: one object evaluates the design rows of every prediction route.

``predict``, ``design_matrix``, the evidence DataTree and the PyMC model of a fitted
estimator all use the basis as fitted (learned input scales, bias, extra columns), never
the constructor settings, which ``set_params`` may have changed since.
"""

from __future__ import annotations

import numpy as np
import pytest

import bayes_rvm as br
from bayes_rvm import RVC, RVR
from bayes_rvm.basis import DenseBasis, KernelBasis, PrecomputedBasis
from bayes_rvm.kernels import RBF


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.uniform(-3, 3, (60, 2))
    y = np.sinc(X[:, 0]) + rng.normal(0, 0.05, 60)
    X_new = rng.uniform(-3, 3, (15, 2))
    labels = (X[:, 0] + 0.3 * rng.normal(size=60) > 0).astype(int)
    return X, y, X_new, labels


@pytest.fixture(scope="module")
def scales_data():
    """One relevant input of two: the learned scales move far from the starting gamma."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-5, 5, (60, 2))
    y = np.sinc(X[:, 0] / np.pi) + rng.normal(0, 0.05, 60)
    return X, y, rng.uniform(-5, 5, (15, 2)), (y > 0.2).astype(int)


def test_rvr_scales_evidence_tree_predicts_like_the_estimator(scales_data):
    X, y, X_new, _ = scales_data
    model = RVR(gamma=0.1, optimize_scales=True).fit(X, y)
    assert not np.allclose(model.scales_, 0.1)  # the fitted kernel differs from gamma
    tree = br.to_inference_data(model, X, y, X_new=X_new, draws=5, random_seed=0)
    Phi_new = tree["predictions_constant_data"]["Phi"].values
    names = list(tree["posterior"]["basis"].values)
    position = [names.index(name) for name in model.active_names_]
    np.testing.assert_allclose(
        Phi_new[:, position] @ model.result_.mu, model.predict(X_new), rtol=1e-10, atol=1e-12
    )


def test_rvc_scales_evidence_tree_latent_like_the_estimator(scales_data):
    X, _, X_new, labels = scales_data
    model = RVC(gamma=0.1, optimize_scales=True).fit(X, labels)
    assert not np.allclose(model.scales_, 0.1)
    tree = br.to_inference_data(model, X, labels, X_new=X_new, draws=5, random_seed=0)
    Phi_new = tree["predictions_constant_data"]["Phi"].values
    names = list(tree["posterior"]["basis"].values)
    position = [names.index(name) for name in model.active_names_]
    np.testing.assert_allclose(
        Phi_new[:, position] @ model.result_.mu,
        model.decision_function(X_new),
        rtol=1e-10,
        atol=1e-12,
    )


def test_set_params_after_fit_does_not_change_the_pymc_model(data):
    X, y, _, _ = data
    model = RVR(gamma=0.5).fit(X, y)
    prior = {"a": 1.0, "b": 1.0, "c": 2.0, "d": 0.01}
    before = br.model_from_estimator(model, X, y, **prior)["Phi"].get_value()
    model.set_params(gamma=5.0)
    after = br.model_from_estimator(model, X, y, **prior)["Phi"].get_value()
    np.testing.assert_array_equal(after, before)
    # and the model's Phi is the estimator's design matrix (columns sorted by index)
    order = np.argsort(model.result_.active)
    np.testing.assert_allclose(after, model.design_matrix(X)[:, order], rtol=1e-12)


def test_set_params_bias_after_fit(data):
    X, y, X_new, _ = data
    y = y + 3.0  # an offset the bias column carries
    model = RVR(gamma=0.5, bias=True).fit(X, y)
    assert model.intercept_active_
    prediction = model.predict(X_new)
    model.set_params(bias=False)
    tree = br.to_inference_data(model, X, y, X_new=X_new, draws=5, random_seed=0)
    assert "bias" in list(tree["posterior"]["basis"].values)
    np.testing.assert_array_equal(model.predict(X_new), prediction)


@pytest.mark.parametrize(
    "params",
    [
        {"gamma": 0.5},
        {"gamma": 0.5, "bias": False},
        {"gamma": 0.5, "extra_columns": ["linear"], "solver": "mackay"},
        {"kernel": "linear_spline"},
    ],
)
def test_design_matrix_is_what_predict_uses(data, params):
    X, y, X_new, labels = data
    model = RVR(**params).fit(X, y)
    Phi = model.design_matrix(X_new)
    assert Phi.shape == (X_new.shape[0], model.alpha_.size)
    np.testing.assert_allclose(Phi @ model.result_.mu, model.predict(X_new), rtol=1e-12)
    # independent: the full training basis evaluated at the new inputs, active columns
    full = KernelBasis(
        X, model.kernel_, bias=params.get("bias", True), extra=params.get("extra_columns", ())
    )
    np.testing.assert_allclose(Phi, full.evaluate(X_new, model.result_.active), rtol=1e-12)
    classifier = RVC(**params).fit(X, labels)
    np.testing.assert_allclose(
        classifier.design_matrix(X_new) @ classifier.result_.mu,
        classifier.decision_function(X_new),
        rtol=1e-12,
    )


def test_design_matrix_precomputed_and_one_vs_rest(data):
    X, y, X_new, _ = data
    kernel = RBF(0.5)
    model = RVR(kernel="precomputed").fit(kernel(X, X), y)
    K_new = kernel(X_new, X)
    expected = np.column_stack([K_new, np.ones(len(X_new))])[:, model.result_.active]
    np.testing.assert_allclose(model.design_matrix(K_new), expected, rtol=1e-12)
    three = np.digitize(X[:, 0], [-1, 1])
    ovr = RVC(gamma=0.5).fit(X, three)
    with pytest.raises(ValueError, match=r"estimators_\[k\].design_matrix"):
        ovr.design_matrix(X_new)
    with pytest.raises(ValueError, match="expecting 2 features"):
        RVR(gamma=0.5).fit(X, y).design_matrix(X_new[:, :1])


def test_precomputed_basis_is_the_gram_matrix_with_a_bias_column(rng):
    K = rng.normal(size=(12, 12))
    dense = DenseBasis(np.column_stack([K, np.ones(12)]))
    basis = PrecomputedBasis(K)
    assert basis.column_names == [f"k{j}" for j in range(12)] + ["bias"]
    idx = [12, 3, 0, 7]
    np.testing.assert_array_equal(basis.columns(idx), dense.columns(idx))
    np.testing.assert_array_equal(basis.toarray(), dense.toarray())
    V = rng.normal(size=(12, 2))
    np.testing.assert_allclose(basis.transpose_dot(V), dense.transpose_dot(V), rtol=1e-12)
    np.testing.assert_allclose(basis.sq_norms(), dense.sq_norms(), rtol=1e-12)
    K_new = rng.normal(size=(4, 12))
    rows = np.column_stack([K_new, np.ones(4)])[:, idx]
    np.testing.assert_array_equal(basis.evaluate(K_new, idx), rows)
    np.testing.assert_array_equal(basis.restrict(idx).design(K_new), rows)
    assert PrecomputedBasis(K, bias=False).n_columns == 12


def test_restrict_evaluates_the_kept_columns_in_the_fit_order(rng):
    X = rng.normal(size=(20, 2))
    basis = KernelBasis(X, RBF([0.5, 2.0]), bias=True, extra=["linear", "quadratic"])
    active = np.array([24, 5, 20, 0, 25, 14])  # extra, kernel, bias, kernel, extra, kernel
    fitted = basis.restrict(active)
    X_new = rng.normal(size=(7, 2))
    np.testing.assert_allclose(fitted.design(X_new), basis.evaluate(X_new, active), rtol=1e-14)
    np.testing.assert_array_equal(fitted.relevance_indices, [5, 0, 14])
    assert fitted.column_names == [basis.column_names[j] for j in active]
    assert fitted.column_names[0] == "x1*x2" and fitted.column_names[2] == "bias"
    assert fitted.extra_names == ["x1", "x2", "x1*x1", "x1*x2", "x2*x2"]
    full = fitted.training_basis(X)
    np.testing.assert_array_equal(full.toarray(), basis.toarray())
    with pytest.raises(ValueError, match="expected the 20 training inputs"):
        fitted.training_basis(X[:5])


def test_one_default_solver_rule_for_both_estimators(data):
    X, y, _, labels = data
    assert RVR(gamma=0.5).fit(X, y).result_.solver == "sequential"
    assert RVC(gamma=0.5).fit(X, labels).result_.solver == "sequential"
    # a Gamma prior on alpha: the sequential solver needs a = b = 0, both switch to MacKay
    assert RVR(gamma=0.5, a=1e-3, b=1e-3).fit(X, y).result_.solver == "mackay"
    assert RVC(gamma=0.5, a=1e-3, b=1e-3).fit(X, labels).result_.solver == "mackay"
    # asked for explicitly, the sequential solver still refuses a proper prior
    for estimator, target in ((RVR, y), (RVC, labels)):
        with pytest.raises(ValueError, match="needs the improper prior"):
            estimator(solver="sequential", a=1.0).fit(X, target)


@pytest.mark.parametrize("estimator", [RVR, RVC])
def test_numpy_numbers_accepted_bool_rejected(data, estimator):
    X, y, _, labels = data
    target = y if estimator is RVR else labels
    model = estimator(
        gamma=np.float32(0.5),
        tol=np.float32(1e-4),
        max_iter=np.int64(500),
        a=np.int64(0),
        coef0=np.float64(1.0),
        degree=np.int32(3),
    )
    model.fit(X, target)
    assert model.result_.converged
    for name, value, fragment in [
        ("tol", True, r"tol must be a finite number > 0, got True \(bool\)"),
        ("max_iter", np.True_, r"max_iter must be an integer, got .*True"),
        ("a", False, "a must be a real number, got bool"),
        ("bias", 1, r"bias must be True or False, got 1 \(int\)"),
        ("coef0", "1", r"coef0 must be a real number, got '1' \(str\)"),
    ]:
        with pytest.raises(TypeError, match=fragment):
            estimator(**{name: value}).fit(X, target)
    with pytest.raises(ValueError, match="tol must be a finite number > 0, got -1"):
        estimator(tol=-1).fit(X, target)
    # every parameter has a constraint, and only parameters do
    assert set(estimator._parameter_constraints) == set(estimator().get_params())


def test_full_bayes_refuses_other_inputs_than_the_training_ones(data):
    """The fit's design is rebuilt from X: inputs of the training shape that are not the
    training inputs (here scaled by 100) would give another design, silently."""
    X, y, _, _ = data
    model = RVR(gamma=0.5).fit(X, y)
    with pytest.raises(ValueError, match="not the training inputs"):
        br.to_inference_data(model, X * 100.0, y, draws=5, random_seed=0)
    with pytest.raises(ValueError, match="not the training inputs"):
        br.model_from_estimator(model, X[::-1], y, a=2.0, b=1.0)
    assert br.to_inference_data(model, X, y, draws=5, random_seed=0) is not None
