"""Every benchmark script runs end to end at a small size.

The scripts import the package's internals (schedules, solver modules, dataset loaders),
and a benchmark that no longer runs is found only when someone needs its numbers. Each
runs here in its own process, as from the command line, at a size that takes seconds;
the runs with tests of their own (the suite, the coverage study, and the ``dask-reduce``
and ``dask-pass`` cases of ``bench_scale.py``) are not repeated.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow

SMALL_RUNS = {
    "classification": ["bench_classification.py", "--only", "ripley", "--draws", "1"],
    "fixed-noise": [
        "bench_fixed_noise.py",
        "--problems",
        "sinc-100",
        "--factors",
        "1",
        "--repeats",
        "1",
    ],
    "gap": ["bench_gap.py", "--seeds", "1"],
    "many-classes": ["bench_many_classes.py", "--n", "150", "--tol", "1e-2"],
    "models": ["bench_models.py", "--only", "solvers", "--repeats", "1"],
    "scales": ["bench_scales.py", "--sinc-seeds", "1", "--friedman-reps", "1"],
    "reduced-solver": ["bench_reduced_solver.py", "--n", "2000", "--centres", "100"],
    "sampling": [
        "bench_sampling.py",
        "--part",
        "sampling",
        "--data",
        "sinc",
        "--samplers",
        "pymc",
        "--seeds",
        "1",
        "--draws",
        "30",
        "--tune",
        "30",
        "--chains",
        "1",
    ],
    "termination": [
        "bench_termination.py",
        "--problems",
        "sinc-100",
        "--seeds",
        "0",
        "--sets",
        "diabetes",
        "--splits",
        "1",
        "--no-usps",
    ],
    "scale-rvr": ["bench_scale.py", "--case", "rvr", "--n", "600"],
    "scale-rvc": ["bench_scale.py", "--case", "rvc", "--n", "600"],
    "scale-subset": ["bench_scale.py", "--case", "subset", "--n", "600", "--centres", "100"],
    "scale-dask": [
        "bench_scale.py",
        "--case",
        "dask",
        "--n",
        "3000",
        "--centres",
        "100",
        "--workers",
        "2",
        "--chunk-rows",
        "1000",
    ],
}


@pytest.mark.parametrize("run", SMALL_RUNS.values(), ids=SMALL_RUNS.keys())
def test_benchmark_script_runs(run):
    script, *args = run
    if "dask" in args:
        pytest.importorskip("distributed")  # the dask extra
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), f"{script} printed nothing"
