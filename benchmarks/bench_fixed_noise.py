"""Fits with the noise variance fixed: the sequential solver against MacKay's.

For each problem of the solver suite (``benchmarks/bench_sequential.py``, held in memory)
the noise variance is fixed at ``--factors`` times the one the default fit learns, and
``fit_type2(Phi, t, noise_var=...)`` runs with each solver on the kernel basis (RBF, bias
column). The table gives the fit time (median of ``--repeats``, in this process after a
warm-up fit), the relevance vectors, whether the solver reported convergence, and the
log evidence at the fixed noise: eq. 36 evaluated by this package's code at the returned
active set and ``alpha`` (the same evaluation for every solver and every version).

Only public API is used, so the same command compares versions of the package: run it
with ``PYTHONPATH`` at another checkout.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_fixed_noise.py
    PYTHONPATH=. python benchmarks/bench_fixed_noise.py --problems broad-sinc --factors 1
    PYTHONPATH=. python benchmarks/bench_fixed_noise.py --solvers sequential --n-starts 1 4
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_sequential import _evidence, make_problem  # noqa: E402

from bayes_rvm import RVR, fit_type2  # noqa: E402
from bayes_rvm.basis import KernelBasis  # noqa: E402
from bayes_rvm.kernels import RBF  # noqa: E402

PROBLEMS = (
    "sinc-100", "sinc-1000", "friedman1-240", "friedman1-1000",
    "diabetes-0.03", "diabetes-0.1", "boston-0.1", "broad-sinc",
)  # fmt: skip


def _fits(args: argparse.Namespace) -> list[tuple[str, dict]]:
    """The solvers and options of the table's rows."""
    rows = [("mackay", {"solver": "mackay"})] if "mackay" in args.solvers else []
    if "sequential" in args.solvers:
        for n in args.n_starts or [None]:
            options = {} if n is None else {"n_starts": n}
            rows.append(("sequential" if n is None else f"sequential n_starts={n}", options))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--factors", nargs="+", type=float, default=[0.5, 1.0, 2.0])
    parser.add_argument("--solvers", nargs="+", default=["sequential", "mackay"])
    parser.add_argument("--n-starts", nargs="+", type=int, help="sequential: these starts")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    warm_X, warm_y, _ = make_problem("sinc-30", 1)
    warm_Phi = KernelBasis(warm_X, RBF(0.25), bias=True).toarray()
    print("| problem | noise / learned | solver | fit s | RVs | converged | log evidence |")
    print("|---|---|---|---|---|---|---|")
    for problem in args.problems:
        X, y, gamma = make_problem(problem, 0)
        learned = float(RVR(gamma=gamma).fit(X, y).noise_var_)
        Phi = KernelBasis(X, RBF(gamma), bias=True).toarray()
        for factor in args.factors:
            noise_var = factor * learned
            for label, options in _fits(args):
                fit_type2(warm_Phi, warm_y, noise_var=0.01, **options)
                times = []
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    fit = fit_type2(Phi, y, noise_var=noise_var, **options)
                    times.append(time.perf_counter() - start)
                log_ev = _evidence(X, y, gamma, fit.active, fit.alpha, 1.0 / noise_var)
                print(
                    f"| {problem} | {factor:g} | {label} | {np.median(times):.3f} | "
                    f"{fit.active.size} | {fit.converged} | {log_ev:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
