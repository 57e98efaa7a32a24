"""The softmax RVC as the number of classes grows (N = 100 points, 2-D blobs).

Every Newton step of the multinomial fit factors the dense ``MK x MK`` Hessian of the
full basis (``M = N + 1`` basis functions, ``K`` classes), so time grows as ``K^3`` and
memory as ``K^2``. Above :data:`bayes_rvm.laplace.MAX_SOFTMAX_WEIGHTS` weights the fit
refuses with a ``ValueError`` at once (before: 50 classes took 319 s and 987 MB); the
one-vs-rest RVC handles any number of classes in time linear in ``K``.

Run (single-threaded BLAS, one process per size so the peak memory is that size's)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_many_classes.py
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from bayes_rvm import RVC  # noqa: E402
from bayes_rvm.laplace import MAX_SOFTMAX_WEIGHTS  # noqa: E402


def _blobs(n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=4.0, size=(k, 2))
    y = np.arange(n) % k
    return centres[y] + rng.normal(size=(n, 2)), y


def one(n: int, k: int, multi_class: str) -> None:
    """Fit once and print seconds, peak RSS (MB) and the outcome."""
    X, y = _blobs(n, k)
    start = time.perf_counter()
    try:
        RVC(multi_class=multi_class, solver="mackay", tol=1e-3).fit(X, y)
        outcome = "fitted"
    except ValueError as err:
        outcome = f"ValueError: {str(err)[:60]}..."
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{multi_class:12s} K={k:3d} MK={(n + 1) * k:6d} {seconds:8.2f} s "
        f"{peak:7.0f} MB  {outcome}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--classes", type=int, nargs="*", default=[5, 20, 50])
    parser.add_argument("--one", nargs=2, metavar=("K", "MULTI_CLASS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args.n, int(args.one[0]), args.one[1])
        return
    print(f"N = {args.n}, limit MK <= {MAX_SOFTMAX_WEIGHTS}")
    for k in args.classes:
        for multi_class in ("multinomial", "ovr"):
            command = [sys.executable, __file__, "--n", str(args.n), "--one", str(k), multi_class]
            subprocess.run(command, check=True)


if __name__ == "__main__":
    main()
