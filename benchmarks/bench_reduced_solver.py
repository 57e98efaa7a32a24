"""The compiled sequential loop on a reduced design, with schedule variants side by side.

A Gaussian fit with many more rows than candidate centres runs the compiled loop on the
triangular factor of ``[Phi | t]`` (``Basis.reduce``); with thousands of centres the
loop keeps hundreds to thousands of them, and its own work is the cost of the fit. This
script reduces Friedman #1 (``make_friedman1``, d = 10, unit noise, RBF ``gamma =
1 / (d var(X))``, k-means++ centres) once per seed and runs the loop's two ascents
(``_compiled.ascend_dense``, as ``sequential.fit`` does) under each schedule variant in
turn, so that the variants of one seed are measured in the same process, one after the
other. It prints, per seed and variant, the time of the ascents, their steps, the kept
functions and the log evidence (Tipping 2001, eq. 36).

Usage (from the repository root; a variant is ``default``, comma-separated
``field=value`` overrides of ``Schedule``, or ``no-bound``: the default schedule with
its starting noise not raised to the least-squares bound of ``ascend_dense``)::

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python \\
        benchmarks/bench_reduced_solver.py --n 20000 --centres 2000 --seeds 1 2 \\
        --variants default newton_min=1000000 newton_min=1000000,defer=0

``--factor FILE`` runs the variants on a factor saved by ``benchmarks/bench_scale.py
--case dask-reduce --save-factor FILE`` instead (the Dask fit's reduced design, whose
reduction alone takes the cluster many minutes), and ``--max-steps`` stops each ascent
after that many steps, to measure how far it gets::

    python benchmarks/bench_reduced_solver.py --factor factor.npz --max-steps 5000
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from bayes_rvm.basis import KernelBasis, choose_centres  # noqa: E402
from bayes_rvm.datasets import make_friedman1  # noqa: E402
from bayes_rvm.evidence import Prior  # noqa: E402
from bayes_rvm.kernels import RBF  # noqa: E402
from bayes_rvm.solvers._base import TargetMoments  # noqa: E402
from bayes_rvm.solvers._compiled import ascend_dense  # noqa: E402
from bayes_rvm.solvers._schedule import Schedule  # noqa: E402


def schedule_of(variant: str) -> Schedule:
    """``default`` (or ``no-bound``), or ``field=value,...`` overrides of the default
    :class:`Schedule`."""
    schedule = Schedule()
    if variant in ("default", "no-bound"):
        return schedule
    for item in variant.split(","):
        field, _, value = item.partition("=")
        kind = type(getattr(schedule, field))
        schedule = dataclasses.replace(schedule, **{field: kind(float(value))})
    return schedule


def reduced_design(n: int, centres: int, seed: int):
    """``B = Phi~^T`` of the reduced design (normalised columns), its target, ``t`` and
    the least-squares residual ``r^2`` (the last entry of the target, squared)."""
    data = make_friedman1(n, random_state=seed)
    X = data.X
    chosen = choose_centres(X, centres, seed)
    basis = KernelBasis(X, RBF(1.0 / (X.shape[1] * X.var())), centres=chosen)
    return design_of(basis.reduce(data.y), data.y)


def design_of(factor: np.ndarray, y: np.ndarray):
    """:func:`reduced_design` of the factor of ``[Phi | y]``."""
    Phi = factor[:, :-1]
    scales = np.sqrt(np.einsum("ij,ij->j", Phi, Phi))
    return np.ascontiguousarray((Phi / scales).T), factor[:, -1], y, factor[-1, -1] ** 2


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--centres", type=int, default=2000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--variants", nargs="+", default=["default"])
    parser.add_argument("--factor", help="a saved factor (bench_scale.py --save-factor)")
    parser.add_argument("--max-steps", type=int, default=10**7)
    args = parser.parse_args(argv)
    if args.factor:
        with np.load(args.factor) as saved:
            factor, y = saved["factor"], saved["y"]
        print(f"{args.factor}  N {y.size}  columns {factor.shape[1] - 1}", end="  ")
        designs = [("saved", design_of(factor, y))]
        del factor
    else:
        print(f"N {args.n}  centres {args.centres}", end="  ")
        # one seed's design at a time: each takes (centres + 1)^2 doubles
        designs = ((seed, reduced_design(args.n, args.centres, seed)) for seed in args.seeds)
    print(f"load {os.getloadavg()[0]:.2f}")
    for seed, (B, t, y, least_squares_rss) in designs:
        for variant in args.variants:
            start = time.perf_counter()
            ascent, status = ascend_dense(
                B, t, prior=Prior(), max_iter=args.max_steps, tol=1e-6,
                schedule=schedule_of(variant),
                full_t=y, least_squares_rss=0.0 if variant == "no-bound" else least_squares_rss,
                targets=TargetMoments.of(y),
            )  # fmt: skip
            seconds = time.perf_counter() - start
            print(
                f"seed {seed}  {variant:<32} {status.name.lower():<9} {seconds:7.1f} s  "
                f"steps {ascent.steps:6d}  kept {ascent.M:5d}  "
                f"log evidence {ascent.log_evidence:.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
