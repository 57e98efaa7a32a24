"""Sequential solver vs fastrvm and sklearn-rvm: fit time, peak memory, RMSE, evidence.

Every fit runs in a fresh subprocess with single-threaded BLAS; the packages alternate
within each repetition and the table reports the median over repetitions. Peak memory
is ``ru_maxrss`` (the resident-set high-water mark) after the fit minus its value just
before the fit (after imports, data generation and a warm-up of numpy/BLAS), so it
measures what the fit itself adds on top of the process. The log evidence of every fit
is evaluated with this package's code at the fit's final ``alpha`` and ``beta``
(``bayes_rvm.evidence.log_evidence_gaussian``); fastrvm does not expose the bias
``alpha``, so its evidence is reported as its own last ``scores_`` value plus the
``-N/2 log 2 pi`` constant that SparseBayes leaves out (marked with ``*``).

Usage (from the repository root)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \
        python benchmarks/bench_sequential.py --sizes 1000 2000 5000 --repeats 3
    python benchmarks/bench_sequential.py --memory 50000     # ours only, 1-D sinc

The peers are benchmark-only dependencies (``pip install bayes_rvm[bench]``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

PACKAGES = ("bayes_rvm", "fastrvm", "sklearn-rvm")
PROBLEMS = {"sinc": 0.25, "friedman1": 0.1}
N_TEST = 1000


def make_problem(name: str, n: int, seed: int):
    """Training data, test inputs and the true function on them."""
    import numpy as np
    from sklearn.datasets import make_friedman1

    if name == "sinc":
        rng = np.random.default_rng(seed)
        X = rng.uniform(-10, 10, (n, 1))
        y = np.sinc(X[:, 0] / np.pi) + rng.normal(0.0, 0.1, n)
        X_test = np.linspace(-10, 10, N_TEST)[:, None]
        return X, y, X_test, np.sinc(X_test[:, 0] / np.pi)
    X, y = make_friedman1(n_samples=n, n_features=10, noise=1.0, random_state=seed)
    X_test, f_test = make_friedman1(
        n_samples=N_TEST, n_features=10, noise=0.0, random_state=seed + 1000
    )
    return X, y, X_test, f_test


def _evidence(X, y, gamma, rv_index, bias, alpha, beta):
    """Eq. 36 of a fitted model by this package's evidence code (weight-space form)."""
    import numpy as np

    from bayes_rvm.basis import KernelBasis
    from bayes_rvm.evidence import log_evidence_gaussian
    from bayes_rvm.kernels import RBF
    from bayes_rvm.posterior import gaussian_posterior

    basis = KernelBasis(X, RBF(gamma), bias=True)
    columns = list(rv_index) + ([X.shape[0]] if bias else [])
    Phi = basis.columns(np.array(columns, dtype=np.intp))
    L, mu = gaussian_posterior(Phi.T @ Phi, Phi.T @ y, np.asarray(alpha, float), beta)
    rss = float(np.sum((y - Phi @ mu) ** 2))
    return log_evidence_gaussian(L, mu, np.asarray(alpha, float), beta, rss, y.size)


def worker(package: str, problem: str, n: int, seed: int) -> dict:
    """One fit; returns its measurements (runs in a fresh process)."""
    import resource

    import numpy as np

    gamma = PROBLEMS[problem]
    X, y, X_test, f_test = make_problem(problem, n, seed)
    if package == "bayes_rvm":
        from bayes_rvm import RVR

        model = RVR(kernel="rbf", gamma=gamma, solver="sequential")
    elif package == "fastrvm":
        from fastrvm import RVR

        model = RVR(kernel="rbf", gamma=gamma, fit_intercept=True)
    else:
        from sklearn_rvm import EMRVR

        model = EMRVR(kernel="rbf", gamma=gamma)
    np.linalg.cholesky(np.eye(64) + 1.0)  # load BLAS/LAPACK before the baseline
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    model.fit(X, y)
    elapsed = time.perf_counter() - start
    peak_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024.0
    rmse = float(np.sqrt(np.mean((model.predict(X_test) - f_test) ** 2)))
    if package == "bayes_rvm":
        n_rv = len(model.relevance_indices_)
        log_ev = float(model.log_evidence_)
        noise_sd = float(np.sqrt(model.noise_var_))
    elif package == "fastrvm":
        n_rv = int(model.n_relevance_)
        log_ev = float(model.scores_[-1]) - 0.5 * n * np.log(2 * np.pi)
        noise_sd = float(model.beta_**-0.5)
    else:
        n_rv = len(model.relevance_)
        bias = bool(model.bias_used) and len(model.alpha_) > n_rv
        alpha = np.r_[model.alpha_[1:], model.alpha_[0]] if bias else model.alpha_
        log_ev = _evidence(X, y, gamma, model.relevance_, bias, alpha, float(model.beta_))
        noise_sd = float(model.beta_**-0.5)
    return {
        "time": elapsed,
        "peak_mb": peak_mb,
        "rmse": rmse,
        "n_rv": n_rv,
        "log_evidence": log_ev,
        "noise_sd": noise_sd,
    }


def run(package: str, problem: str, n: int, seed: int, timeout: float) -> dict | None:
    command = [sys.executable, __file__, "--worker", package, problem, str(n), str(seed)]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": root}  # this checkout's bayes_rvm
    try:
        out = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, check=True, env=env
        ).stdout
    except subprocess.TimeoutExpired:
        return None
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 5000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--packages", nargs="+", default=list(PACKAGES))
    parser.add_argument(
        "--em-max-n", type=int, default=1000, help="largest N for sklearn-rvm (O(N^3) steps)"
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per fit")
    parser.add_argument("--memory", type=int, help="only: our peak memory on 1-D sinc of size N")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        package, problem, n, seed = args.worker
        print(json.dumps(worker(package, problem, int(n), int(seed))))
        return
    if args.memory:
        r = run("bayes_rvm", "sinc", args.memory, 0, args.timeout)
        print(f"bayes_rvm sinc N={args.memory}: {r}")
        return

    header = (
        f"| problem | N | package | fit time (s) | ratio to fastrvm | peak MB | RMSE | "
        f"RVs | noise sd | log evidence |\n|{'---|' * 10}"
    )
    print(header, flush=True)
    for problem in args.problems:
        for n in args.sizes:
            packages = [p for p in args.packages if not (p == "sklearn-rvm" and n > args.em_max_n)]
            results: dict[str, list[dict]] = {p: [] for p in packages}
            for _ in range(args.repeats):
                for package in packages:  # alternate the packages within a repetition
                    r = run(package, problem, n, 0, args.timeout)
                    if r is not None:
                        results[package].append(r)
            medians = {
                p: {k: sorted(x[k] for x in rs)[len(rs) // 2] for k in rs[0]}
                for p, rs in results.items()
                if rs
            }
            reference = medians.get("fastrvm", {}).get("time")
            for p in packages:
                if p not in medians:
                    print(f"| {problem} | {n} | {p} | > {args.timeout:.0f} (timeout) |||||||")
                    continue
                m = medians[p]
                ratio = f"{m['time'] / reference:.2f}" if reference else "n/a"
                star = "*" if p == "fastrvm" else ""
                print(
                    f"| {problem} | {n} | {p} | {m['time']:.2f} | {ratio} | "
                    f"{m['peak_mb']:.0f} | {m['rmse']:.4f} | {m['n_rv']} | "
                    f"{m['noise_sd']:.3f} | {m['log_evidence']:.1f}{star} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
