"""Large training sets: every input a centre, candidate subsets, and a dask cluster.

One case per run, so that ``/usr/bin/time -v`` reports the peak memory of that case
alone (the script prints its own peak RSS too, and with ``--case dask`` each worker's):

- ``rvr``: Friedman #1 (d = 10, unit noise), every training input a candidate centre
  (the paper's RVM), fitted by :class:`~bayes_rvm.RVR`; RMSE against the true function
  on 10,000 fresh inputs.
- ``rvc``: a two-class problem in two dimensions (the class is the sign of
  ``sin(2 x1) + x2`` plus logistic noise), every input a centre, :class:`~bayes_rvm.RVC`;
  test error on 10,000 fresh inputs.
- ``subset``: Friedman #1 with ``--centres`` candidate centres by k-means++.
- ``dask``: Friedman #1 as a dask array of ``--chunk-rows`` rows per chunk on a
  ``LocalCluster`` of ``--workers`` single-threaded worker processes, ``--centres``
  centres by k-means++ (on a sample of the rows).
- ``dask-pass``: the same cluster, data and centres, but no fit: ``--passes`` times the
  work of one column fetch as the sequential solver asks for it
  (``Schedule.prefetch`` columns gathered to the client, then their products with
  every column, ``Phi^T V``), to measure the cost of one pass where a whole fit would
  take too long; a fit costs about its number of passes times this
  (``docs/guide/scale.md``).
- ``dask-reduce``: the same cluster, data and basis as ``dask`` (the one ``RVR`` builds),
  and only the cluster's part of its fit: the reduction of ``[Phi | t]`` to its
  triangular factor (``DaskKernelBasis.reduce``), the target scaled to unit root mean
  square as the fit scales it. With ``--save-factor FILE`` it writes the
  factor and the scaled target to ``FILE`` (``.npz``), on which
  ``benchmarks/bench_reduced_solver.py --factor FILE`` runs the client's solver alone.

``--write`` puts the run's row in its case's table (:data:`TABLES`): ``rvr`` in
``docs/results/scale-working-set``, one row per seed, the table started anew when the
command (``--n``, ``--n-jobs``) differs from the one the file holds; ``subset`` in
``docs/results/scale-reduced``, one row per ``--n``, ``--centres``, ``--seed`` and
``--solver``, the table started anew when ``--n-jobs`` differs. A row run again replaces
the one it names; run the command once per row to fill the table.

``--n-jobs`` (``rvr``, ``subset``) gives the RVR's ``n_jobs``: threads for the passes over
the kernel, the working sets' Gram matrices and ``S, Q`` (one BLAS thread each).
``--solver`` (``rvr``, ``subset``, ``dask``) picks the RVR's type-II solver (default
``auto``, the sequential one), e.g. ``mackay``, which also runs on the reduced design.

Besides the wall-clock time of ``fit`` it counts the passes over the basis the solver
asked for (``Phi^T V`` with or without the column norms) and the column fetches, and
times the mean pass, so that a fit's cost can be read as passes times the cost of one
pass (``docs/guide/scale.md``); and it times the reductions of the basis to its
triangular factor (:meth:`~bayes_rvm.basis.Basis.reduce`), the bulk of a Gaussian fit's
cost when the basis has many more rows than columns.

Usage (from the repository root)::

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        /usr/bin/time -v python benchmarks/bench_scale.py --case rvr --n 20000
    ... --case rvc --n 20000
    ... --case subset --n 200000 --centres 2000
    ... --case dask --n 1000000 --centres 5000 --workers 2 --chunk-rows 50000
    ... --case dask-pass --n 1000000 --centres 5000 --workers 2 --chunk-rows 50000 --passes 1
    ... --case dask-reduce --n 1000000 --centres 5000 --workers 2 --chunk-rows 50000 \\
        --save-factor factor.npz
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from contextlib import contextmanager
from dataclasses import dataclass

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from bayes_rvm import RVC, RVR  # noqa: E402
from bayes_rvm.basis import KernelBasis, choose_centres  # noqa: E402
from bayes_rvm.datasets import _friedman1, make_friedman1  # noqa: E402

N_TEST = 10_000


@dataclass(frozen=True)
class Table:
    """The result file a case's ``--write`` fills: its name, its columns, the columns
    that name a row (a run replaces the row they name), its command, title and notes
    (formatted with the run's ``n``, ``jobs``, ``threads`` and ``summary``), and the fit
    time whose rows the summary counts (``None``: no summary)."""

    name: str
    columns: list[str]
    key: tuple[str, ...]
    command: str
    title: str
    notes: str
    within: float | None = None


_ENDING = (
    'RMSE against the true function on 10,000 fresh inputs; "peak RSS" of the process; '
    '"load": the one-minute load average at the start. {summary}'
)
TABLES = {
    "rvr": Table(
        "scale-working-set",
        ["seed", "fit", "passes (mean)", "kept", "log evidence", "RMSE", "peak RSS", "load"],
        ("seed",),
        "PYTHONPATH=. python benchmarks/bench_scale.py --case rvr --n {n} --seed S{jobs} "
        "--write   # S = 0, 1, ...",
        "Every input a centre: Friedman #1 with {n:,} points",
        "Friedman #1, N = {n:,}, every input a centre (the working-set fit), {threads}, one "
        'process at a time. "passes": passes over the kernel basis (mean seconds per pass); '
        '"kept": relevance vectors; ' + _ENDING,
        within=120.0,
    ),
    "subset": Table(
        "scale-reduced",
        [
            "N",
            "centres",
            "seed",
            "solver",
            "fit",
            "reduction",
            "kept",
            "log evidence",
            "RMSE",
            "peak RSS",
            "load",
        ],
        ("N", "centres", "seed", "solver"),
        "PYTHONPATH=. python benchmarks/bench_scale.py --case subset --n N --centres C "
        "--seed S [--solver mackay]{jobs} --write   # one run per row",
        "Many rows, fewer centres: the reduced design",
        "Friedman #1 with k-means++ centres, {threads}, one process at a time: the data "
        'reduced once to the triangular factor of the centres\' design ("reduction", '
        'part of "fit"), the solver run on it; "kept": relevance vectors; ' + _ENDING,
    ),
}


class _Counter:
    """Counts and times the passes and column fetches of every kernel basis class."""

    def __init__(self, *classes):
        self.passes = self.fetches = self.reductions = 0
        self.pass_seconds = self.reduce_seconds = 0.0
        for cls in classes:
            self._wrap(cls)

    def _timed(self, method, count: str, seconds: str):
        """``method`` counted in the attribute ``count`` and timed in ``seconds``."""
        counter = self

        def timed(basis, *args, **kwargs):
            start = time.perf_counter()
            out = method(basis, *args, **kwargs)
            setattr(counter, count, getattr(counter, count) + 1)
            setattr(counter, seconds, getattr(counter, seconds) + time.perf_counter() - start)
            return out

        return timed

    def _wrap(self, cls):
        fetch = cls.columns
        counter = self

        def counted_columns(basis, idx):
            counter.fetches += 1
            return fetch(basis, idx)

        cls._pass = self._timed(cls._pass, "passes", "pass_seconds")
        cls.reduce = self._timed(cls.reduce, "reductions", "reduce_seconds")
        cls.columns = counted_columns

    def report(self) -> str:
        mean = self.pass_seconds / max(1, self.passes)
        return (
            f"passes {self.passes} (mean {mean:.3f} s)  column fetches {self.fetches}  "
            f"reductions {self.reductions} ({self.reduce_seconds:.1f} s)"
        )


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _two_class(n: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(n, 2))
    latent = np.sin(2.0 * X[:, 0]) + X[:, 1]
    return X, (latent + rng.logistic(0.0, 0.2, n) > 0).astype(int), (latent > 0).astype(int)


def _fit(model, X, y, counter: _Counter) -> float:
    start = time.perf_counter()
    model.fit(X, y)
    seconds = time.perf_counter() - start
    print(
        f"fit {seconds:.1f} s  {counter.report()}  relevance {len(model.relevance_vectors_)}  "
        f"log evidence {np.round(model.log_evidence_, 3)}"
    )
    return seconds


def _friedman(n: int, seed: int):
    train = make_friedman1(n, random_state=seed)
    test = make_friedman1(N_TEST, random_state=seed + 1)
    return train, test


def run_rvr(args, counter) -> dict:
    """Fit and report; returns the run's row (every column of :data:`TABLES` but the peak
    memory and the load)."""
    train, test = _friedman(args.n, args.seed)
    centres = args.centres if args.case == "subset" else None
    model = RVR(centres=centres, random_state=args.seed, solver=args.solver, n_jobs=args.n_jobs)
    seconds = _fit(model, train.X, train.y, counter)
    rmse = np.sqrt(np.mean((model.predict(test.X) - test.f) ** 2))
    print(f"RMSE against the true function on {N_TEST} inputs: {rmse:.3f}")
    mean = counter.pass_seconds / max(1, counter.passes)
    return {
        "N": f"{args.n:,}",
        "centres": f"{args.centres:,}",
        "seed": args.seed,
        "solver": "sequential (default)" if args.solver == "auto" else args.solver,
        "fit": f"{seconds:.1f} s",
        "reduction": f"{counter.reduce_seconds:.1f} s",
        "passes (mean)": f"{counter.passes} ({mean:.2f} s)",
        "kept": len(model.relevance_vectors_),
        "log evidence": f"{model.log_evidence_:,.3f}",
        "RMSE": round(float(rmse), 3),
    }


def write_row(args, row: dict) -> None:
    """Put ``row`` in the table of ``args.case`` (:data:`TABLES`, the module docstring)."""
    from _results import RESULTS, write_results  # benchmarks/ is this script's folder

    table = TABLES[args.case]
    command = table.command.format(
        n=args.n, jobs=f" --n-jobs {args.n_jobs}" if args.n_jobs else ""
    )
    path = RESULTS / table.name / "results.json"
    named = tuple(row[column] for column in table.key)
    rows = []
    if path.exists():
        held = json.loads(path.read_text())
        if held["command"] == command:
            rows = [kept for kept in held["rows"] if tuple(kept[c] for c in table.key) != named]
    row = {column: row[column] for column in table.columns}
    rows = sorted([*rows, row], key=_order(table.key))
    fits = [float(kept["fit"].split()[0]) for kept in rows]
    summary = (
        ""
        if table.within is None
        else f"Median fit {np.median(fits):.1f} s, longest {max(fits):.1f} s; "
        f"{sum(fit <= table.within for fit in fits)} of the {len(fits)} within "
        f"{table.within:g} s."
    )
    threads = f"{args.n_jobs} fit threads" if args.n_jobs else "one fit thread"
    notes = table.notes.format(n=args.n, threads=threads, summary=summary).strip()
    title = table.title.format(n=args.n)
    written = write_results(table.name, command, rows, table.columns, notes, title=title)
    print(f"wrote {written}")


def _order(key: tuple[str, ...]):
    """Rows in the order of their naming columns, ``"20,000"`` as a number."""

    def value(cell):
        return int(cell.replace(",", "")) if isinstance(cell, str) and cell[:1].isdigit() else cell

    return lambda row: tuple(value(row[column]) for column in key)


def run_rvc(args, counter):
    X, y, _ = _two_class(args.n, args.seed)
    X_test, _, truth = _two_class(N_TEST, args.seed + 1)
    model = RVC()
    _fit(model, X, y, counter)
    error = np.mean(model.predict(X_test) != truth)
    print(f"error against the noise-free class on {N_TEST} inputs: {100 * error:.2f} %")


@contextmanager
def _dask_friedman(args):
    """A ``LocalCluster`` and Friedman #1 drawn on its workers: ``(client, X, y)``."""
    import dask.array as da
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        # the training set is drawn on the workers: the client never holds it
        rng = da.random.default_rng(args.seed)
        X = rng.uniform(0.0, 1.0, size=(args.n, 10), chunks=(args.chunk_rows, 10)).persist()
        noise = rng.normal(0.0, 1.0, size=args.n, chunks=args.chunk_rows)
        y = da.map_blocks(_friedman1, X, drop_axis=1, dtype=float) + noise
        yield client, X, y
        for worker, peak in sorted(client.run(_peak_rss_mb).items()):
            print(f"worker {worker}: peak RSS {peak:.0f} MB")


def run_dask(args, counter):
    from bayes_rvm.dask import DaskKernelBasis

    counter._wrap(DaskKernelBasis)
    test = make_friedman1(N_TEST, random_state=args.seed + 1)
    with _dask_friedman(args) as (client, X, y):
        model = RVR(centres=args.centres, random_state=args.seed, solver=args.solver)
        target = y.compute()
        worker_cpu = sum(client.run(_cpu_seconds).values())
        _fit(model, X, target, counter)
        worker_cpu = sum(client.run(_cpu_seconds).values()) - worker_cpu
        print(f"workers' CPU during the fit {worker_cpu:.1f} s")
    rmse = np.sqrt(np.mean((model.predict(test.X) - test.f) ** 2))
    print(f"RMSE against the true function on {N_TEST} inputs: {rmse:.3f}")


def run_dask_pass(args, counter):
    from bayes_rvm.dask import DaskKernelBasis
    from bayes_rvm.kernels import RBF
    from bayes_rvm.solvers.sequential import Schedule

    prefetch = Schedule().prefetch  # the columns the large path fetches at a time

    with _dask_friedman(args) as (client, X, _):
        # gamma="scale" for uniform inputs on [0, 1]^10: 1 / (10 var) = 1.2
        centres = choose_centres(X, args.centres, args.seed)
        basis = DaskKernelBasis(X, RBF(1.2), centres=centres)
        rng = np.random.default_rng(args.seed)
        for _ in range(args.passes):
            idx = rng.choice(basis.n_columns, prefetch, replace=False)
            worker_cpu = sum(client.run(_cpu_seconds).values())
            start = time.perf_counter()
            columns = basis.columns(idx)
            fetched = time.perf_counter() - start
            basis.transpose_dot(columns)
            seconds = time.perf_counter() - start
            worker_cpu = sum(client.run(_cpu_seconds).values()) - worker_cpu
            print(
                f"fetch of {prefetch} columns {fetched:.1f} s, with their products "
                f"{seconds:.1f} s (workers' CPU {worker_cpu:.1f} s)"
            )


def run_dask_reduce(args, counter):
    from bayes_rvm.solvers._fit import _robust_norm

    with _dask_friedman(args) as (client, X, y):
        target = y.compute()
        target = target / _robust_norm(target)  # the units the fit solves in
        # the basis the fit of --case dask builds: its gamma="scale" and k-means++ centres
        basis = RVR(centres=args.centres, random_state=args.seed)._build_basis(X)
        worker_cpu = sum(client.run(_cpu_seconds).values())
        start = time.perf_counter()
        factor = basis.reduce(target)
        seconds = time.perf_counter() - start
        worker_cpu = sum(client.run(_cpu_seconds).values()) - worker_cpu
        print(
            f"reduction to the {factor.shape[0]} x {factor.shape[1]} factor {seconds:.1f} s "
            f"(workers' CPU {worker_cpu:.1f} s)"
        )
    if args.save_factor:
        np.savez(args.save_factor, factor=factor, y=target)
        print(f"factor and scaled target saved to {args.save_factor}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--case",
        choices=["rvr", "rvc", "subset", "dask", "dask-pass", "dask-reduce"],
        required=True,
    )
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--centres", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunk-rows", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--passes", type=int, default=3, help="dask-pass: passes timed")
    parser.add_argument("--save-factor", help="dask-reduce: write the factor to this .npz")
    parser.add_argument(
        "--solver", default="auto", help="rvr, subset, dask: the RVR's type-II solver"
    )
    parser.add_argument(
        "--n-jobs", type=int, default=None, help="rvr, subset: threads for each pass"
    )
    parser.add_argument(
        "--write", action="store_true", help="rvr, subset: put the row in docs/results/"
    )
    args = parser.parse_args(argv)
    if args.write and args.case not in TABLES:
        parser.error(f"--write is for --case {' or '.join(TABLES)}, not --case {args.case}")
    load = os.getloadavg()[0]
    print(f"case {args.case}  n {args.n}  solver {args.solver}  load {load:.2f}")
    counter = _Counter(KernelBasis)
    cases = {"rvr": run_rvr, "subset": run_rvr, "rvc": run_rvc, "dask": run_dask}
    cases["dask-pass"], cases["dask-reduce"] = run_dask_pass, run_dask_reduce
    row = cases[args.case](args, counter)
    print(f"client peak RSS {_peak_rss_mb():.0f} MB")
    if args.write:
        write_row(args, {**row, "peak RSS": f"{_peak_rss_mb():,.0f} MB", "load": f"{load:.2f}"})


if __name__ == "__main__":
    main()
