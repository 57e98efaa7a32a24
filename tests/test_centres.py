"""Candidate centres and prediction in blocks of rows."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.cluster import kmeans_plusplus

from bayes_rvm import RVC, RVR, fit_type2
from bayes_rvm import basis as basis_module
from bayes_rvm.basis import FittedBasis
from bayes_rvm.kernels import RBF


@pytest.fixture
def data(rng):
    X = rng.uniform(-10, 10, size=(120, 1))
    y = np.sinc(X[:, 0] / np.pi) + rng.normal(0, 0.1, 120)
    return X, y, (y > 0.2).astype(int)


@pytest.mark.parametrize("estimator", [RVR, RVC])
def test_centres_equal_to_the_inputs_reproduce_the_default_fit(data, estimator, monkeypatch):
    X, y, labels = data
    # passes over the basis in several blocks (square ones: the kernel matrix is symmetric)
    monkeypatch.setattr(basis_module, "BLOCK_BYTES", 8 * 40**2)
    target = y if estimator is RVR else labels
    default = estimator(gamma=0.25).fit(X, target)
    given = estimator(gamma=0.25, centres=X.copy()).fit(X, target)
    np.testing.assert_array_equal(given.relevance_indices_, default.relevance_indices_)
    np.testing.assert_array_equal(given.relevance_vectors_, default.relevance_vectors_)
    assert given.log_evidence_ == default.log_evidence_
    np.testing.assert_array_equal(given.result_.mu, default.result_.mu)
    assert default.basis_.centres is None
    np.testing.assert_array_equal(given.basis_.centres, X)


def test_given_centres_fit_like_fit_type2_on_the_explicit_design(data, rng):
    X, y, _ = data
    centres = rng.uniform(-10, 10, size=(30, 1))
    model = RVR(gamma=0.25, centres=centres).fit(X, y)
    Phi = np.column_stack([RBF(0.25)(X, centres), np.ones(len(X))])
    reference = fit_type2(Phi, y)
    np.testing.assert_array_equal(model.result_.active, reference.active)
    np.testing.assert_allclose(model.log_evidence_, reference.log_evidence, rtol=1e-12)
    # the fits scale the columns by their norms, computed blockwise from the kernel here and
    # from the dense matrix there: the last bits differ, and cond(H) carries that to the
    # weights (4e-10 relative measured)
    np.testing.assert_allclose(model.result_.mu, reference.mu, rtol=1e-8, atol=1e-12)
    kept = reference.active[reference.active < 30]
    np.testing.assert_array_equal(model.relevance_vectors_, centres[kept])
    X_new = rng.uniform(-10, 10, size=(7, 1))
    Phi_new = np.column_stack([RBF(0.25)(X_new, centres), np.ones(7)])[:, reference.active]
    np.testing.assert_allclose(model.predict(X_new), Phi_new @ reference.mu, rtol=1e-8)
    full = model.basis_.training_basis(X)
    np.testing.assert_allclose(full.toarray(), Phi, rtol=1e-14)


def test_kmeans_plusplus_centres_are_reproducible(data):
    X, y, _ = data
    first = RVR(gamma=0.25, centres=25, random_state=3).fit(X, y)
    again = RVR(gamma=0.25, centres=25, random_state=3).fit(X, y)
    other = RVR(gamma=0.25, centres=25, random_state=4).fit(X, y)
    expected, _ = kmeans_plusplus(X, 25, random_state=np.random.RandomState(3))
    np.testing.assert_array_equal(first.basis_.centres, expected)
    np.testing.assert_array_equal(again.basis_.centres, expected)
    assert not np.array_equal(other.basis_.centres, expected)
    assert first.log_evidence_ == again.log_evidence_
    assert first.relevance_vectors_.shape[0] <= 25


def test_one_vs_rest_classifiers_share_the_centres(rng):
    X = rng.normal(size=(90, 2))
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    model = RVC(gamma=0.5, centres=20, random_state=0).fit(X, y)
    centres = model.estimators_[0].basis_.centres
    for estimator in model.estimators_[1:]:
        np.testing.assert_array_equal(estimator.basis_.centres, centres)
    np.testing.assert_array_equal(model.relevance_vectors_, centres[model.relevance_indices_])


@pytest.mark.parametrize(
    ("centres", "error", "match"),
    [
        (121, ValueError, "between 1 and the number of training inputs, 120"),
        (0, ValueError, ">= 1"),
        (2.5, TypeError, "a number of centres or an array of centres, got 2.5"),
        (True, TypeError, "a number of centres or an array of centres, got True"),
        (np.zeros((5, 2)), ValueError, "centres with 1 features like X"),
        (np.array([[0.0], [np.nan]]), ValueError, "centres contains NaN"),
        (np.zeros((0, 1)), ValueError, "non-empty centres"),
    ],
)
def test_bad_centres_are_rejected_clearly(data, centres, error, match):
    X, y, _ = data
    with pytest.raises(error, match=match):
        RVR(gamma=0.25, centres=centres).fit(X, y)


def test_centres_do_not_combine_with_precomputed_or_scales(data):
    X, y, _ = data
    with pytest.raises(ValueError, match="do not apply to kernel='precomputed'"):
        RVR(kernel="precomputed", centres=5).fit(RBF(0.25)(X, X), y)
    with pytest.raises(ValueError, match="use centres=None"):
        RVR(optimize_scales=True, centres=5).fit(X, y)


@pytest.fixture
def tiny_blocks(monkeypatch):
    """Blocks of 3 design rows for a fit of ``n_columns`` columns; records block sizes."""
    sizes: list[int] = []
    design = FittedBasis.design

    def recording(self, X):
        sizes.append(len(X))
        return design(self, X)

    def use(n_columns):
        monkeypatch.setattr(basis_module, "BLOCK_BYTES", 8 * 3 * n_columns)
        monkeypatch.setattr(FittedBasis, "design", recording)
        return sizes

    return use


def test_rvr_predicts_in_blocks_of_rows(data, rng, tiny_blocks):
    X, y, _ = data
    model = RVR(gamma=0.25).fit(X, y)
    X_new = rng.uniform(-10, 10, size=(20, 1))
    mean, var = model.result_.predict(model.basis_.design(X_new))
    sizes = tiny_blocks(model.alpha_.size)
    chunked_mean, chunked_std = model.predict(X_new, return_std=True)
    assert sizes == [3] * 6 + [2]
    np.testing.assert_allclose(chunked_mean, mean, rtol=1e-14)
    np.testing.assert_allclose(chunked_std, np.sqrt(var), rtol=1e-14)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_rvc_predicts_in_blocks_of_rows(rng, tiny_blocks, n_classes):
    X = rng.normal(size=(60, 2))
    y = np.digitize(X[:, 0] + X[:, 1], [-0.5, 0.5][: n_classes - 1])
    model = RVC(gamma=0.5, moderated=True, multi_class="multinomial", solver="mackay")
    model.fit(X, y)
    X_new = rng.normal(size=(10, 2))
    proba, latent = model.predict_proba(X_new), model.decision_function(X_new)
    sizes = tiny_blocks(model.alpha_.size)
    np.testing.assert_allclose(model.predict_proba(X_new), proba, rtol=1e-13)
    np.testing.assert_allclose(model.decision_function(X_new), latent, rtol=1e-13)
    assert sizes == [3, 3, 3, 1] * 2


def test_one_vs_rest_predicts_in_blocks_of_rows(rng, tiny_blocks):
    X = rng.normal(size=(60, 2))
    y = np.digitize(X[:, 0] + X[:, 1], [-0.5, 0.5])
    model = RVC(gamma=0.5, moderated=True).fit(X, y)
    X_new = rng.normal(size=(10, 2))
    proba = model.predict_proba(X_new)
    sizes = tiny_blocks(max(e.alpha_.size for e in model.estimators_))
    np.testing.assert_allclose(model.predict_proba(X_new), proba, rtol=1e-13)
    assert sum(sizes) == 3 * 10 and len(sizes) > 3  # several blocks per classifier
