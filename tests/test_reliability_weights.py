"""``sample_weight`` and ``class_weight``: a weight of 2 is the row repeated, a weight of 0
the row left out, in regression (noise precision ``beta w_n``) and classification
(``sum_n w_n log p(t_n | y_n)``)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import config_context
from sklearn.base import clone, is_classifier
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.class_weight import compute_class_weight, compute_sample_weight

from bayes_rvm import RVC, RVR, fit_type2
from bayes_rvm.datasets import make_sinc


@pytest.fixture(scope="module")
def sinc():
    data = make_sinc(40, noise_level=0.1, random_state=1)
    return data.X, data.y


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["sequential", "mackay", "em"])
def test_integer_weights_equal_repeated_rows(sinc, solver):
    X, y = sinc
    weights = np.random.default_rng(0).integers(0, 4, size=y.size)
    repeated = np.repeat(np.arange(y.size), weights)
    # a kernel centred on every repeated row is a duplicated column: use the precomputed
    # kernel of the distinct rows as the basis of both fits
    K = np.exp(-0.25 * (X - X.T) ** 2)
    Phi = np.column_stack([K, np.ones(y.size)])
    weighted = fit_type2(Phi, y, solver=solver, sample_weight=weights, tol=1e-9)
    copies = fit_type2(Phi[repeated], y[repeated], solver=solver, tol=1e-9)
    np.testing.assert_array_equal(weighted.active, copies.active)
    np.testing.assert_allclose(weighted.mu, copies.mu, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(weighted.alpha, copies.alpha, rtol=1e-5)
    assert weighted.beta == pytest.approx(copies.beta, rel=1e-6)
    assert weighted.log_evidence == pytest.approx(copies.log_evidence, abs=1e-6)


def test_rvr_sample_weight_of_two_is_a_duplicated_row(sinc):
    X, y = sinc
    weights = np.ones(y.size)
    weights[[3, 17]] = 2.0
    weighted = RVR(gamma=0.25, solver="mackay", tol=1e-9).fit(X, y, sample_weight=weights)
    # the duplicated rows as precomputed kernel columns over the distinct centres
    rows = np.r_[np.arange(y.size), 3, 17]
    K = np.exp(-0.25 * (X[rows] - X.T) ** 2)
    Phi = np.column_stack([K, np.ones(rows.size)])
    copies = fit_type2(Phi, y[rows], solver="mackay", tol=1e-9)
    np.testing.assert_array_equal(weighted.result_.active, copies.active)
    np.testing.assert_allclose(weighted.result_.mu, copies.mu, rtol=1e-6, atol=1e-9)
    assert weighted.log_evidence_ == pytest.approx(copies.log_evidence, abs=1e-6)


@pytest.mark.parametrize(
    ("model", "task"),
    [
        (RVR(solver="mackay", tol=1e-10, noise_var=0.01), "regression"),
        (RVC(tol=1e-10), "classification"),
    ],
)
def test_default_gamma_counts_weighted_rows(model, task):
    """gamma="scale" (the default) from the variance of the rows as weighted: a weight of 2
    fits as the row repeated, 0 as the row left out, on a fixed set of candidate centres.
    With the unweighted X.var() the two gammas differed (0.0825 against 0.0892 here).
    The regression fixes the noise: a learned noise starts from the weighted rows, not from
    the rows counted w_n times, and from there MacKay's updates reach another local
    maximum here (see test_default_centres_are_the_distinct_rows_of_positive_weight)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)) * [1.0, 3.0, 0.5] + [0.0, 2.0, -1.0]
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.normal(size=40)
    if task == "classification":
        y = (y > np.median(y)).astype(int)
    weights = np.ones(40)
    weights[[3, 17]] = 2.0
    weights[[5, 30]] = 0.0
    rows = np.repeat(np.arange(40), weights.astype(int))
    model = clone(model).set_params(centres=X[::3])
    weighted = clone(model).fit(X, y, sample_weight=weights)
    copies = clone(model).fit(X[rows], y[rows])
    assert weighted.kernel_.gamma == pytest.approx(copies.kernel_.gamma, rel=1e-12)
    predict = "predict" if task == "regression" else "predict_proba"
    np.testing.assert_allclose(
        getattr(weighted, predict)(X), getattr(copies, predict)(X), rtol=0, atol=1e-9
    )


@pytest.mark.parametrize(
    "weights", [np.full(40, -1.0), np.zeros(40), np.ones(5), np.full(40, np.nan)]
)
def test_invalid_sample_weight_is_named(sinc, weights):
    X, y = sinc
    with pytest.raises(ValueError, match="sample_weight"):
        RVR().fit(X, y, sample_weight=weights)


# --- classification: sum_n w_n log p(t_n | y_n) -------------------------------------------


@pytest.fixture(scope="module")
def blobs():
    """Three overlapping classes in 2-D, integer weights 0..3 and a fixed set of 12 kernel
    centres: repeating a row must not add a basis function, so both fits share the basis."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(45, 2)) + np.repeat([[0.0, 0.0], [1.5, 0.5], [0.0, 1.5]], 15, axis=0)
    y = np.repeat(np.array(["a", "b", "c"]), 15)
    weights = rng.integers(0, 4, size=y.size)
    return X, y, weights, X[::4]


def _assert_same_fit(weighted, copies):
    """Same active set, and the same weights, precisions and Laplace evidence.

    The two fits do the same arithmetic except the order of summation (``w_n x_n`` against
    ``x_n + x_n``): measured, they agree to ~1e-13 and take the same number of iterations.
    The tolerances leave four orders of magnitude for rounding; a weight that is ignored
    or wrong anywhere (curvature, gradient, evidence, scaling) moves these by O(1).
    """
    np.testing.assert_array_equal(weighted.active, copies.active)
    assert weighted.n_iter == copies.n_iter
    np.testing.assert_allclose(weighted.mu, copies.mu, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(weighted.alpha, copies.alpha, rtol=1e-9)
    assert weighted.log_evidence == pytest.approx(copies.log_evidence, rel=1e-12, abs=1e-9)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["sequential", "mackay", "em"])
def test_binary_rvc_integer_weights_equal_repeated_rows(blobs, solver):
    X, y, weights, centres = blobs
    y = np.where(y == "a", "a", "rest")
    repeated = np.repeat(np.arange(y.size), weights)
    model = RVC(gamma=0.5, centres=centres, solver=solver, tol=1e-9)
    weighted = clone(model).fit(X, y, sample_weight=weights)
    copies = clone(model).fit(X[repeated], y[repeated])
    _assert_same_fit(weighted.result_, copies.result_)
    np.testing.assert_allclose(weighted.predict_proba(X), copies.predict_proba(X), rtol=1e-9)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("multi_class", ["ovr", "multinomial"])
def test_multiclass_rvc_integer_weights_equal_repeated_rows(blobs, multi_class):
    X, y, weights, centres = blobs
    repeated = np.repeat(np.arange(y.size), weights)
    model = RVC(gamma=0.5, centres=centres, solver="mackay", tol=1e-9, multi_class=multi_class)
    weighted = clone(model).fit(X, y, sample_weight=weights)
    copies = clone(model).fit(X[repeated], y[repeated])
    if multi_class == "multinomial":
        _assert_same_fit(weighted.result_, copies.result_)
    else:
        for one, other in zip(weighted.estimators_, copies.estimators_, strict=True):
            _assert_same_fit(one.result_, other.result_)
    np.testing.assert_allclose(weighted.predict_proba(X), copies.predict_proba(X), rtol=1e-9)


@pytest.mark.parametrize("multi_class", ["ovr", "multinomial"])
def test_zero_weights_equal_dropped_rows(blobs, multi_class):
    X, y, weights, centres = blobs
    keep = weights > 0
    model = RVC(gamma=0.5, centres=centres, solver="mackay", multi_class=multi_class)
    weighted = clone(model).fit(X, y, sample_weight=keep.astype(float))
    dropped = clone(model).fit(X[keep], y[keep])
    np.testing.assert_allclose(weighted.predict_proba(X), dropped.predict_proba(X), rtol=1e-9)
    np.testing.assert_allclose(weighted.log_evidence_, dropped.log_evidence_, rtol=1e-12)


@pytest.mark.parametrize("multi_class", ["ovr", "multinomial"])
def test_balanced_class_weight_is_compute_sample_weight(blobs, multi_class):
    X, y, _, _ = blobs
    X, y = X[5:], y[5:]  # unbalanced: 10, 15 and 15 samples
    model = RVC(gamma=0.5, solver="mackay", multi_class=multi_class)
    balanced = clone(model).set_params(class_weight="balanced").fit(X, y)
    weighted = clone(model).fit(X, y, sample_weight=compute_sample_weight("balanced", y))
    np.testing.assert_allclose(balanced.predict_proba(X), weighted.predict_proba(X), rtol=1e-12)
    np.testing.assert_allclose(balanced.log_evidence_, weighted.log_evidence_, rtol=1e-12)


def test_class_weight_multiplies_sample_weight(blobs):
    """As scikit-learn's classifiers do: "balanced" counts the classes with the sample
    weights (compute_class_weight(..., sample_weight=)), and multiplies them; a dict gives
    the listed classes their weight and the others 1."""
    X, y, weights, _ = blobs
    sw = weights + 0.5
    balanced = compute_class_weight("balanced", classes=np.unique(y), y=y, sample_weight=sw)
    cases = [
        ("balanced", balanced[np.searchsorted(np.unique(y), y)] * sw),
        ({"b": 3.0, "c": 0.5}, np.select([y == "b", y == "c"], [3.0, 0.5], 1.0) * sw),
    ]
    for class_weight, expected in cases:
        model = RVC(gamma=0.5, class_weight=class_weight).fit(X, y, sample_weight=sw)
        reference = RVC(gamma=0.5).fit(X, y, sample_weight=expected)
        np.testing.assert_allclose(model.predict_proba(X), reference.predict_proba(X), rtol=1e-12)


@pytest.mark.parametrize(
    ("class_weight", "error", "match"),
    [
        ({"a": 1.0, "z": 2.0}, ValueError, r"class_weight has weights for \['z'\].*classes"),
        ({"a": -1.0}, ValueError, r"class_weight\['a'\] must be finite and >= 0"),
        ({"a": np.nan}, ValueError, r"class_weight\['a'\] must be finite"),
        ({"a": "x"}, TypeError, r"class_weight\['a'\] must be a real number"),
        ("balance", ValueError, "unknown class_weight 'balance'; expected one of: 'balanced'"),
        ([1.0, 2.0, 3.0], TypeError, "class_weight must be None, 'balanced' or a dict"),
        ({"a": 0.0, "b": 0.0, "c": 0.0}, ValueError, "every sample weight 0"),
    ],
)
def test_invalid_class_weight_is_named(blobs, class_weight, error, match):
    X, y, _, _ = blobs
    with pytest.raises(error, match=match):
        RVC(class_weight=class_weight).fit(X, y)


def test_balanced_needs_weight_in_every_class(blobs):
    X, y, _, _ = blobs
    with pytest.raises(ValueError, match=r"classes \['a'\] have total weight 0"):
        RVC(class_weight="balanced").fit(X, y, sample_weight=(y != "a").astype(float))


@pytest.mark.parametrize(
    "weights", [np.full(45, -1.0), np.zeros(45), np.ones(5), np.full(45, np.inf)]
)
def test_invalid_rvc_sample_weight_is_named(blobs, weights):
    X, y, _, _ = blobs
    with pytest.raises(ValueError, match="sample_weight"):
        RVC().fit(X, y, sample_weight=weights)


# --- the weights through scikit-learn's meta-estimators -------------------------------------


@pytest.fixture(scope="module", params=["RVR", "RVC"])
def weighted_problem(request, blobs, sinc):
    if request.param == "RVR":
        X, y = sinc
        return RVR(), X, y, 1 + np.arange(y.size) % 3
    X, y, weights, _ = blobs
    return RVC(solver="mackay"), X, y, weights


def test_pipeline_passes_sample_weight(weighted_problem):
    model, X, y, weights = weighted_problem
    pipe = make_pipeline(StandardScaler(), clone(model))
    step = pipe.steps[-1][0]
    pipe.fit(X, y, **{f"{step}__sample_weight": weights})
    direct = clone(model).fit(StandardScaler().fit_transform(X), y, sample_weight=weights)
    unweighted = make_pipeline(StandardScaler(), clone(model)).fit(X, y)
    np.testing.assert_array_equal(pipe[-1].log_evidence_, direct.log_evidence_)
    assert not np.allclose(unweighted[-1].log_evidence_, direct.log_evidence_)


def test_grid_search_routes_sample_weight_to_every_fold(weighted_problem):
    """With metadata routing, GridSearchCV passes each fold's rows of ``sample_weight`` to
    the fits and all of it to the refit (``set_fit_request``); the scores here are
    unweighted (``set_score_request(sample_weight=False)``)."""
    model, X, y, weights = weighted_problem
    cv = KFold(3, shuffle=True, random_state=0)
    with config_context(enable_metadata_routing=True):
        search = GridSearchCV(
            clone(model)
            .set_fit_request(sample_weight=True)
            .set_score_request(sample_weight=False),
            {"gamma": [0.1, 0.5]},
            cv=cv,
        ).fit(X, y, sample_weight=weights)
    train, test = next(cv.split(X, y))
    gamma = search.best_params_["gamma"]
    fold = clone(model).set_params(gamma=gamma).fit(X[train], y[train], weights[train])
    index = search.cv_results_["params"].index({"gamma": gamma})
    assert search.cv_results_["split0_test_score"][index] == fold.score(X[test], y[test])
    refit = clone(model).set_params(gamma=gamma).fit(X, y, sample_weight=weights)
    np.testing.assert_array_equal(search.best_estimator_.log_evidence_, refit.log_evidence_)


# --- the candidate centres of the default centres=None follow the weights ----------------


@pytest.fixture(scope="module")
def weighted_rows():
    """60 rows of a noisy sine, integer weights 0..3, and the same data as repeated rows
    (in another order, so that no fit can lean on the order of the rows)."""
    rng = np.random.default_rng(7)
    X = rng.uniform(-3, 3, size=(60, 2))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=60)
    weights = rng.integers(0, 4, size=60)
    repeated = rng.permutation(np.repeat(np.arange(60), weights))
    return X, y, weights, repeated


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(
    ("model", "n_classes"),
    [
        (RVR(gamma=0.5), None),
        (RVR(gamma=0.5, solver="mackay"), None),
        (RVC(gamma=0.5), 2),
        (RVC(gamma=0.5, multi_class="multinomial"), 3),
        (RVC(gamma=0.5, multi_class="ovr"), 3),
    ],
    ids=["rvr-sequential", "rvr-mackay", "rvc-binary", "rvc-multinomial", "rvc-ovr"],
)
def test_default_centres_are_the_distinct_rows_of_positive_weight(weighted_rows, model, n_classes):
    """With ``centres=None`` a weight of 0 leaves the row out also as a centre, and equal
    inputs (repeated rows) give one kernel function: the weighted fit and the fit of the
    repeated rows have the same basis, so the same predictions. Each input of a relevance
    vector is named by its first training row."""
    X, y, weights, repeated = weighted_rows
    if n_classes is not None:
        y = np.digitize(y, np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1]))
    weighted = clone(model).fit(X, y, sample_weight=weights)
    copies = clone(model).fit(X[repeated], y[repeated])
    predict = "predict_proba" if is_classifier(model) else "predict"
    np.testing.assert_allclose(
        getattr(weighted, predict)(X), getattr(copies, predict)(X), rtol=1e-6, atol=1e-9
    )
    assert np.all(weights[weighted.relevance_indices_] > 0)
    np.testing.assert_array_equal(weighted.relevance_vectors_, X[weighted.relevance_indices_])
    np.testing.assert_array_equal(
        copies.relevance_vectors_, X[repeated][copies.relevance_indices_]
    )
    # the first of each input's repeated rows
    first = {tuple(x): n for n, x in reversed(list(enumerate(X[repeated])))}
    assert copies.relevance_indices_.tolist() == [
        first[tuple(x)] for x in copies.relevance_vectors_
    ]
