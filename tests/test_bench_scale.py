"""The reduced design that benchmarks/bench_scale.py saves for the solver benchmark."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from bayes_rvm import RVR
from bayes_rvm.basis import KernelBasis, choose_centres
from bayes_rvm.evidence import Prior
from bayes_rvm.kernels import RBF
from bayes_rvm.solvers._compiled import Schedule, ascend_dense
from bayes_rvm.solvers._fit import _robust_norm

pytest.importorskip("distributed")
cloudpickle = pytest.importorskip("cloudpickle")


def _script(load_script, name: str):
    module = load_script(f"benchmarks/{name}.py")
    # the workers cannot import the script: its functions travel by value
    cloudpickle.register_pickle_by_value(module)
    return module


@pytest.mark.slow
def test_saved_factor_is_the_reduced_design_of_the_dask_fit(tmp_path, load_script):
    bench_scale = _script(load_script, "bench_scale")
    bench_solver = _script(load_script, "bench_reduced_solver")
    n, centres, path = 3000, 60, tmp_path / "factor.npz"
    bench_scale.main(
        ["--case", "dask-reduce", "--n", str(n), "--centres", str(centres), "--workers", "2",
         "--chunk-rows", "1000", "--save-factor", str(path)]
    )  # fmt: skip
    with np.load(path) as saved:
        factor, target = saved["factor"], saved["y"]
    # the same data, centres and fit, on the cluster the benchmark's dask case builds
    args = argparse.Namespace(n=n, workers=2, chunk_rows=1000, seed=0)
    with bench_scale._dask_friedman(args) as (_, X, y):
        chosen = choose_centres(X, centres, 0)
        t = y.compute()
        fit = RVR(centres=centres, random_state=0).fit(X, t)
        X = X.compute()
    scale = _robust_norm(t)  # the units fit_type2 solves in
    np.testing.assert_array_equal(target, t / scale)
    # R^T R of the saved factor is the Gram matrix of [Phi | t / scale] with the fit's
    # gamma ("scale") and centres, to the rounding of the two reductions
    model = RVR(centres=centres, random_state=0)
    Phi = KernelBasis(X, RBF(model._resolve_gamma(X)), centres=chosen).toarray()
    design = np.c_[Phi, target]
    gram = design.T @ design
    assert np.abs(factor.T @ factor - gram).max() <= 1e-12 * np.abs(gram).max()
    # the solver benchmark on the saved factor reaches the fit's optimum: eq. 36 of the
    # scaled target is that of t plus N log(scale) (the Jacobian)
    B, z, full_t, rss = bench_solver.design_of(factor, target)
    ascent, _ = ascend_dense(
        B, z, prior=Prior(), max_iter=10**6, tol=1e-6, schedule=Schedule(), full_t=full_t,
        least_squares_rss=rss,
    )  # fmt: skip
    expected = fit.log_evidence_ + n * np.log(scale)
    assert ascent.log_evidence == pytest.approx(expected, rel=1e-8)


@pytest.mark.slow
def test_dask_pass_case_times_one_fetch_of_the_large_paths_columns(load_script, capsys):
    """``--case dask-pass`` fetches as many columns as the large path fetches at a time
    (``LargeSchedule.prefetch``) and times them with their products."""
    from bayes_rvm.solvers.sequential import LargeSchedule

    bench_scale = _script(load_script, "bench_scale")
    bench_scale.main(
        ["--case", "dask-pass", "--n", "3000", "--centres", "200", "--workers", "2",
         "--chunk-rows", "1000", "--passes", "1"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert f"fetch of {LargeSchedule().prefetch} columns" in out
    assert "with their products" in out
