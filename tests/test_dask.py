"""Fitting on a dask array: the same fit as in memory, computed by tasks on the workers."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from sklearn.base import clone

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from bayes_rvm import RVC, RVR  # noqa: E402
from bayes_rvm._basis_views import ScaledBasis  # noqa: E402
from bayes_rvm.basis import DenseBasis, KernelBasis  # noqa: E402
from bayes_rvm.dask import DaskKernelBasis  # noqa: E402
from bayes_rvm.kernels import RBF  # noqa: E402
from bayes_rvm.solvers import sequential  # noqa: E402


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X = rng.uniform(-10, 10, size=(240, 2))
    y = np.sinc(X[:, 0] / np.pi) * np.cos(X[:, 1] / 4) + rng.normal(0, 0.1, 240)
    return X, y, (y > 0.2).astype(int)


@pytest.fixture(scope="module")
def client():
    # a free dashboard port (None means 8787, which any running cluster may hold)
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    with distributed.Client(cluster) as client:
        yield client
    cluster.close()


def _held_by_the_workers(client, X, rows):
    """``X`` as a dask array whose chunks of ``rows`` rows are held by the two workers in
    turn, as data loaded on a cluster are."""
    workers = sorted(client.scheduler_info()["workers"])
    assert len(workers) == 2
    chunks = [
        da.from_delayed(
            client.scatter(X[start : start + rows], workers=[workers[k % 2]]),
            shape=X[start : start + rows].shape,
            dtype=X.dtype,
        )
        for k, start in enumerate(range(0, X.shape[0], rows))
    ]
    return da.concatenate(chunks)


def _ran_per_chunk(client, stream, name: str, n_chunks: int) -> None:
    """The tasks ``name`` of a fit ran on the cluster's workers, one per row chunk each
    time. Which worker runs a task is the scheduler's choice: with chunks this small it
    may run every task of a pass on one worker, so the test does not ask for both."""
    tasks = [task for task in stream.data if name in task["key"]]
    assert tasks, f"no {name} tasks ran"
    assert len(tasks) % n_chunks == 0, f"{len(tasks)} {name} tasks for {n_chunks} chunks"
    assert {task["worker"] for task in tasks} <= set(client.scheduler_info()["workers"])


def test_importing_the_package_does_not_import_dask():
    code = "import sys, bayes_rvm; assert 'dask' not in sys.modules, 'dask imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_passes_and_columns_equal_the_in_memory_basis(data):
    X, _, _ = data
    extra = ["linear"]
    local = KernelBasis(X, RBF(0.3), extra=extra)
    remote = DaskKernelBasis(da.from_array(X, chunks=(70, 1)), RBF(0.3), extra=extra)
    assert remote.shape == local.shape and remote.column_names == local.column_names
    V = np.random.default_rng(0).normal(size=(240, 3))
    weights = np.random.default_rng(1).uniform(size=240)
    for (a, b), (c, d) in [
        (remote.transpose_dot_with_norms(V), local.transpose_dot_with_norms(V)),
        (remote.transpose_dot_with_norms(V, weights), local.transpose_dot_with_norms(V, weights)),
    ]:
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(b, d, rtol=1e-12)
    np.testing.assert_allclose(remote.sq_norms(), local.sq_norms(), rtol=1e-12)
    idx = [0, 17, 240, 242]
    np.testing.assert_array_equal(remote.columns(idx), local.columns(idx))
    assert remote.columns([]).shape == local.columns([]).shape == (240, 0)
    np.testing.assert_allclose(remote.cross(idx), local.cross(idx), rtol=1e-12, atol=1e-12)
    # held in memory (a classification fit): the matrix gathered from the chunks
    scales = np.random.default_rng(2).uniform(0.5, 2.0, remote.n_columns)
    held = ScaledBasis(remote, scales).in_memory()
    assert isinstance(held, DenseBasis)
    np.testing.assert_allclose(
        held.toarray(), ScaledBasis(local, scales).in_memory().toarray(), rtol=1e-12
    )


def test_reduction_equals_the_in_memory_one(data):
    """The chunks' factors folded in a tree: the products of ``[D Phi | t]`` to rounding."""
    X, y, _ = data
    local = KernelBasis(X, RBF(0.3), centres=X[:30], extra=["linear"])
    remote = DaskKernelBasis(
        da.from_array(X, chunks=(50, 2)), RBF(0.3), centres=X[:30], extra=["linear"]
    )
    scale = np.random.default_rng(2).uniform(0.0, 2.0, 240)
    R = remote.reduce(y, scale)
    np.testing.assert_array_equal(np.tril(R, -1), 0.0)
    expected = local.reduce(y, scale)
    np.testing.assert_allclose(R.T @ R, expected.T @ expected, rtol=0, atol=1e-13 * 240)


@pytest.mark.parametrize(
    ("X", "error", "match"),
    [
        (np.array([[0.0, np.inf], [1.0, 2.0]]), ValueError, "NaN or infinite"),
        (np.array(["a", "b"]), TypeError, "numeric dask array"),
        (np.zeros(4), ValueError, "2 dimensions"),
    ],
)
def test_bad_dask_inputs_are_rejected_clearly(X, error, match):
    with pytest.raises(error, match=match):
        RVR().fit(da.from_array(X), np.zeros(len(X)))


def test_dask_fit_needs_matching_targets(data):
    X, y, _ = data
    with pytest.raises(ValueError, match="inconsistent numbers of samples: 240 and 239"):
        RVR().fit(da.from_array(X, chunks=(60, 2)), y[:-1])


def _check_same_fit(local, remote):
    np.testing.assert_array_equal(remote.result_.active, local.result_.active)
    np.testing.assert_allclose(remote.log_evidence_, local.log_evidence_, rtol=1e-8)
    np.testing.assert_allclose(remote.result_.mu, local.result_.mu, rtol=1e-6, atol=1e-9)


def test_rvr_on_the_default_scheduler_fits_like_in_memory(data):
    X, y, _ = data
    local = RVR(gamma=0.3, centres=50, random_state=1).fit(X, y)
    remote = RVR(gamma=0.3, centres=50, random_state=1).fit(da.from_array(X, chunks=(90, 2)), y)
    _check_same_fit(local, remote)
    np.testing.assert_array_equal(remote.basis_.centres, local.basis_.centres)


@pytest.fixture(scope="module")
def large_data():
    """Enough rows that the design (with 800 or more candidates) is over the sequential
    solver's in-memory size, so that the fit works through passes over the basis."""
    rng = np.random.default_rng(8)
    X = rng.uniform(-10, 10, size=(3000, 2))
    return X, np.sinc(X[:, 0] / np.pi) * np.cos(X[:, 1] / 4) + rng.normal(0, 0.1, 3000)


@pytest.mark.slow  # starts two worker processes
@pytest.mark.parametrize("centres", [None, 800])
def test_rvr_on_a_local_cluster_fits_like_in_memory(large_data, client, centres):
    X, y = large_data
    assert 8 * X.shape[0] * (centres or X.shape[0]) > sequential.Schedule().dense_bytes
    settings = {"gamma": 0.3, "centres": centres, "random_state": 0}
    local = RVR(**settings).fit(X, y)
    X_remote = _held_by_the_workers(client, X, 750)
    with distributed.get_task_stream(client) as stream:
        remote = RVR(**settings).fit(X_remote, y)
    # every input a centre: the working set, whose final joint Newton steps take the
    # weakly determined alphas to their optimum (without them, sums over chunks that
    # round otherwise left mu 2.5e-4 apart)
    _check_same_fit(local, remote)
    if centres is None:
        np.testing.assert_array_equal(remote.relevance_vectors_, local.relevance_vectors_)
    _ran_per_chunk(client, stream, "_chunk_pass", X_remote.numblocks[0])
    if centres is not None:  # N >= 2 (n + 1): the fit ran on the reduced design
        _ran_per_chunk(client, stream, "_chunk_reduce", X_remote.numblocks[0])
    np.testing.assert_allclose(remote.predict(X[:5]), local.predict(X[:5]), rtol=1e-6)


@pytest.mark.slow
def test_mackay_on_a_local_cluster_runs_on_the_reduced_design(large_data, client):
    """MacKay's re-estimation (EM's alike, ``tests/test_reduced.py``) sees the data only
    through the products: the workers reduce the data, and no column of the basis is
    gathered to the client."""
    X, y = large_data
    settings = {"gamma": 0.3, "centres": 800, "random_state": 0, "solver": "mackay"}
    local = RVR(**settings).fit(X, y)
    X_remote = _held_by_the_workers(client, X, 750)
    with distributed.get_task_stream(client) as stream:
        remote = RVR(**settings).fit(X_remote, y)
    _check_same_fit(local, remote)
    assert remote.result_.converged
    keys = [task["key"] for task in stream.data]
    _ran_per_chunk(client, stream, "_chunk_reduce", X_remote.numblocks[0])
    assert not any("_chunk_columns" in key for key in keys), "columns were gathered"


@pytest.mark.slow
def test_rvc_on_a_local_cluster_fits_like_in_memory(data, client):
    X, _, labels = data
    local = RVC(gamma=0.3).fit(X, labels)
    remote = RVC(gamma=0.3).fit(da.from_array(X, chunks=(60, 2)), labels)
    _check_same_fit(local, remote)


@pytest.mark.slow  # starts a cluster of its own, to close it
def test_augmented_predictive_outlives_the_cluster_and_pickling(data):
    """What the augmented predictive needs (the training inputs) is kept in memory, not
    as a collection persisted on workers that are gone after the fit."""
    import pickle

    X, y, _ = data
    local = RVR(gamma=0.3, centres=60, random_state=0, predictive="augmented").fit(X, y)
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    with distributed.Client(cluster):
        remote = RVR(gamma=0.3, centres=60, random_state=0, predictive="augmented")
        remote.fit(da.from_array(X, chunks=(80, 2)), y)
    cluster.close()
    expected = local.predict(X[:50], return_std=True)
    for model in (remote, pickle.loads(pickle.dumps(remote))):
        for got, want in zip(model.predict(X[:50], return_std=True), expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("model", [RVR(gamma=0.5), RVC(gamma=0.5)], ids=["rvr", "rvc"])
def test_weighted_dask_fit_is_the_fit_of_the_repeated_rows(model):
    """On a dask array too, a row of weight 0 is no candidate centre and a weight of k
    stands for the row repeated k times (one centre per distinct input)."""
    rng = np.random.default_rng(7)
    X = rng.uniform(-3, 3, size=(60, 2))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=60)
    if isinstance(model, RVC):
        y = (y > np.median(y)).astype(int)
    weights = rng.integers(0, 4, size=60)
    repeated = np.repeat(np.arange(60), weights)
    weighted = clone(model).fit(da.from_array(X, chunks=17), y, sample_weight=weights)
    copies = clone(model).fit(X[repeated], y[repeated])
    predict = "predict_proba" if isinstance(model, RVC) else "predict"
    np.testing.assert_allclose(
        getattr(weighted, predict)(X), getattr(copies, predict)(X), rtol=1e-6, atol=1e-9
    )
    assert np.all(weights[weighted.relevance_indices_] > 0)
