"""Does every default fit end? The default evidence fit on every problem of the solver
suite and on held-out training splits of every data set of the held-out comparison.

A fit ends either at the sequential solver's certificate (no single add, re-estimate or
delete step and no noise update would raise the log evidence by more than ``tol``) or,
where it stops early, with a ``ConvergenceWarning`` that says why. This script counts
the fits of each data set that did not converge, with the largest number of steps any
fit took and the total fit time.

- Solver suite (``benchmarks/bench_sequential.py``): each problem at its own kernel width,
  drawn from ``--seeds`` (fixed data sets once).
- Held-out sets (``benchmarks/bench_heldout.py``, needs the ``data`` extra): ``--splits``
  70 % training splits, inputs standardised (regression targets too), ``RVR`` / ``RVC``
  with ``gamma="scale"`` and every width ``g / d`` of the evidence grid.
- USPS digits (when the data are installed, :func:`bayes_rvm.datasets.load_usps`; skipped
  with ``--no-usps``): 800 of the training digits, each digit against the rest, ``RVC``
  at the widths ``2^k / 256``, ``k = -8, ..., 3`` (the grid of the paper's USPS
  cross-validation): nearly separable classes at the narrow widths.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_termination.py --write
    PYTHONPATH=. python benchmarks/bench_termination.py --sets diabetes wine --no-suite
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
from sklearn.exceptions import ConvergenceWarning  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_heldout import CLASSIFICATION, GRID, REGRESSION, load, split  # noqa: E402
from bench_sequential import DRAWN, PROBLEMS, make_problem  # noqa: E402

from bayes_rvm import RVC, RVR  # noqa: E402
from bayes_rvm.datasets import load_usps  # noqa: E402

COLUMNS = ["data", "fits", "not converged", "most steps", "fit s"]


def _fit(model, X, y) -> tuple[bool, int, float]:
    """Whether the fit converged (no ConvergenceWarning), its steps and its time."""
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    elapsed = time.perf_counter() - start
    stopped = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return not stopped, int(np.max(model.n_iter_)), elapsed


def _row(name: str, fits: list[tuple[bool, int, float]]) -> dict:
    """The counts of one data set's (or one group's) fits."""
    return {
        "data": name,
        "fits": len(fits),
        "not converged": sum(not ok for ok, _, _ in fits),
        "most steps": max(steps for _, steps, _ in fits),
        "fit s": round(sum(seconds for _, _, seconds in fits), 2),
    }


def suite_fits(problems: list[str], seeds: list[int]) -> list[tuple[bool, int, float]]:
    """Every suite problem's default fits, a line printed per problem."""
    every = []
    for problem in problems:
        drawn = problem.partition("-")[0] in DRAWN
        fits = []
        for seed in seeds if drawn else seeds[:1]:
            X, y, gamma = make_problem(problem, seed)
            fits.append(_fit(RVR(gamma=gamma), X, y))
        print(_row(f"suite {problem}", fits), flush=True)
        every += fits
    return every


def heldout_fits(sets: list[str], splits: int) -> list[tuple[bool, int, float]]:
    """The default fits of every held-out set, a line printed per set."""
    every = []
    for name in sets:
        X_all, y_all = load(name)
        regression = name in REGRESSION
        fits = []
        for seed in range(splits):
            X, _, y, _ = split(X_all, y_all, regression, seed)
            gammas = ["scale"] + [g / X.shape[1] for g in GRID]
            for gamma in gammas:
                model = RVR(gamma=gamma) if regression else RVC(gamma=gamma)
                fits.append(_fit(model, X, y))
        print(_row(f"held-out {name}", fits), flush=True)
        every += fits
    return every


def usps_fits() -> list[tuple[bool, int, float]]:
    """Binary RVC fits on 800 USPS training digits (one per digit and width), a line
    printed per width; none when the data are not installed."""
    try:
        data = load_usps()
    except FileNotFoundError as err:
        print(f"USPS skipped: {err}", flush=True)
        return []
    keep = np.sort(np.random.default_rng(0).choice(data.y_train.size, 800, replace=False))
    X, digits = data.X_train[keep], data.y_train[keep]
    every = []
    for k in range(-8, 4):
        fits = [_fit(RVC(gamma=2.0**k / 256), X, digits == c) for c in range(10)]
        print(_row(f"USPS 2^{k}/256", fits), flush=True)
        every += fits
    return every


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--sets", nargs="+", default=list(REGRESSION + CLASSIFICATION))
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--no-suite", action="store_true")
    parser.add_argument("--no-usps", action="store_true")
    parser.add_argument("--write", action="store_true", help="write docs/results/termination")
    args = parser.parse_args()
    rows = []
    if not args.no_suite:
        suite = suite_fits(args.problems, args.seeds)
        rows.append(_row(f"solver suite: {len(args.problems)} problems", suite))
    if args.sets:
        rows.append(
            _row(f"held-out sets: {', '.join(args.sets)}", heldout_fits(args.sets, args.splits))
        )
    usps = [] if args.no_usps else usps_fits()
    if usps:
        rows.append(_row("USPS: 800 digits, each against the rest, 12 widths", usps))
    total = sum(row["not converged"] for row in rows)
    print(f"{sum(row['fits'] for row in rows)} fits, {total} not converged")
    if args.write:
        from _results import write_results

        write_results(
            "termination",
            command="PYTHONPATH=. python benchmarks/bench_termination.py --write",
            rows=rows,
            columns=COLUMNS,
            notes=(
                'Default fits (`RVR` / `RVC`, sequential solver). "not converged": fits '
                "that stopped with a `ConvergenceWarning` instead of the certificate; "
                '"most steps": the largest `n_iter_` of the group\'s fits; "fit s": their '
                "total wall time, single-threaded BLAS. The suite's random problems are "
                "drawn from seeds 0-2; each held-out set gives 3 training splits, each fitted "
                'at `gamma="scale"` and at the 5 widths of the evidence grid. USPS: 800 '
                "training digits, each digit against the rest at the widths 2^k / 256, k = -8 "
                "to 3."
            ),
            title="Termination of the default fits",
        )


if __name__ == "__main__":
    main()
