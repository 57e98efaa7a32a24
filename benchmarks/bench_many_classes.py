"""Softmax (multinomial) RVC against one-vs-rest on scikit-learn's digits, 10 classes.

``N`` digits (default 1,000, scaled to [0, 1]) train both models with the same solver
("mackay"), kernel (RBF, ``gamma="scale"``) and ``tol``; the other digits are held out.
Over ``MAX_SOFTMAX_WEIGHTS`` weights (``N + 1`` basis functions times 10 classes) the
softmax fit runs on a working set of at most ``MAX_SOFTMAX_WEIGHTS // 10`` basis
functions, so its Hessian stays at that size whatever ``N``.

Each fit runs in its own process, so that its peak memory is its own; the two alternate
``--repeats`` times and the medians are printed with the load average measured first.

Run (single-threaded BLAS)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_many_classes.py --n 1000
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

from bayes_rvm import RVC  # noqa: E402
from bayes_rvm.laplace import MAX_SOFTMAX_WEIGHTS  # noqa: E402


def one(n: int, multi_class: str, tol: float) -> None:
    """Fit once; print a JSON line: accuracy, wall and CPU seconds, peak RSS (MB)."""
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    order = np.random.default_rng(0).permutation(y.size)
    train, test = order[:n], order[n:]
    wall, cpu = time.perf_counter(), time.process_time()
    model = RVC(multi_class=multi_class, solver="mackay", tol=tol).fit(X[train], y[train])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    row = {
        "accuracy": float(np.mean(model.predict(X[test]) == y[test])),
        "n_test": int(test.size),
        "wall": wall,
        "cpu": cpu,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "n_relevance": int(model.n_relevance_),
    }
    print(json.dumps(row))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--one", metavar="MULTI_CLASS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args.n, args.one, args.tol)
        return
    print(f"load average {os.getloadavg()[0]:.1f}; N = {args.n} training digits, 10 classes")
    print(f"softmax working set: at most {MAX_SOFTMAX_WEIGHTS // 10} basis functions")
    rows: dict[str, list[dict]] = {"multinomial": [], "ovr": []}
    for _ in range(args.repeats):
        for multi_class in rows:
            command = [sys.executable, __file__, "--n", str(args.n), "--tol", str(args.tol)]
            out = subprocess.run(
                [*command, "--one", multi_class], check=True, capture_output=True, text=True
            ).stdout
            rows[multi_class].append(json.loads(out.strip().splitlines()[-1]))
    print("multi_class   accuracy  relevance  wall s   CPU s  peak MB")
    for multi_class, runs in rows.items():
        median = {key: float(np.median([run[key] for run in runs])) for key in runs[0]}
        print(
            f"{multi_class:12s} {median['accuracy']:8.4f} {median['n_relevance']:10.0f} "
            f"{median['wall']:7.1f} {median['cpu']:7.1f} {median['peak_mb']:8.0f}"
            f"   (held out: {runs[0]['n_test']})"
        )


if __name__ == "__main__":
    main()
