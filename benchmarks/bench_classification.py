"""Relevance vector classification on the paper's benchmarks, beside an SVM fitted here.

Tipping (2001): Ripley's synthetic data (Sec. 4.2, Gaussian kernel r = 0.5: RVM 9.3 %
error with 4 vectors on 100 of the 250 training points, SVM 10.6 % with 38), Pima
diabetes (Sec. 4.4.2: RVM 19.6 % with 4 vectors, SVM 20.1 % with 109) and USPS digits
(ten one-vs-rest classifiers: RVM 5.1 % with 316 vectors in total, SVM 4.4 % with 2540).

The reference measured in the same run is scikit-learn's SVC with the same kernel and
``C`` chosen by 5-fold cross-validation on the training set (as in the paper). Times
are wall-clock seconds (and the process CPU seconds) with single-threaded BLAS; the RVC
times include nothing but ``fit``; the SVC times include its cross-validation.

Usage (from the repository root)::

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        python benchmarks/bench_classification.py [--only ripley,pima,usps] [--draws 10] \\
        [--usps-n 7291] [--usps-jobs 2] [--multinomial] [--write]

``--write`` writes the table of the chosen rows (``ripley``, ``pima``, ``usps``) to
``docs/results/bench-classification``, with the command that produced it.

``--only heldout`` fits RVC at every width of the held-out comparison's grid on its
classification sets and prints the log evidence beside the test error (only public API:
run it with ``PYTHONPATH`` at another checkout to compare versions).

The times follow a warm-up fit (the compiled solver loaded). The RVC rows use the
default solver (sequential, Tipping & Faul 2003) unless the row names another.
``--usps-n`` fits USPS on the first ``n`` training images (the test set is always the
full 2007). ``--usps-jobs`` fits the ten one-vs-rest classifiers in that
many processes (``RVC(n_jobs=...)``; their CPU seconds and memory are then not in the
``cpu`` column and the peak RSS, which count this process only). ``--multinomial``
adds the softmax RVC, whose only solvers are the full-basis MacKay and EM: its Laplace
step factors the ``NK x NK`` Hessian of the whole basis (``K = 10``), so it is feasible
only for small ``n`` (the script refuses ``n > 1500``; at ``n = 7291`` the Hessian alone
would take 42 GB).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
from sklearn.model_selection import GridSearchCV, StratifiedKFold  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from bayes_rvm import RVC  # noqa: E402
from bayes_rvm.datasets import load_pima, load_ripley, load_usps  # noqa: E402
from bayes_rvm.laplace import MAX_SOFTMAX_WEIGHTS  # noqa: E402

C_GRID = 2.0 ** np.arange(-3, 11, 2)
#: Largest USPS training set for the softmax RVC (10 classes, n + 1 basis functions):
#: the size fit_type2 accepts (:data:`bayes_rvm.laplace.MAX_SOFTMAX_WEIGHTS`).
MULTINOMIAL_MAX_N = MAX_SOFTMAX_WEIGHTS // 10 - 1


def _svm(X, y, X_test, y_test, gamma, seed=0):
    """SVC with C by 5-fold CV: (test error, number of support vectors, seconds)."""
    start, cpu = time.perf_counter(), time.process_time()
    search = GridSearchCV(
        SVC(kernel="rbf", gamma=gamma),
        {"C": C_GRID},
        cv=StratifiedKFold(5, shuffle=True, random_state=seed),
    ).fit(X, y)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    svc = search.best_estimator_
    _CPU.append(cpu)
    return float(np.mean(svc.predict(X_test) != y_test)), int(svc.n_support_.sum()), seconds


def _rvc(X, y, X_test, y_test, **options):
    """RVC: (test error, relevance vectors, seconds, model)."""
    start, cpu = time.perf_counter(), time.process_time()
    model = RVC(kernel="rbf", **options).fit(X, y)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    _CPU.append(cpu)
    return float(np.mean(model.predict(X_test) != y_test)), model.n_relevance_, seconds, model


#: CPU seconds of the fits, in order (the machine may be shared: wall time can be longer).
_CPU: list[float] = []
#: The rows of the result file (``--write``), in order, and its columns.
_TABLE: list[dict] = []
COLUMNS = ["data", "model", "test error", "vectors", "fit time", "paper"]
_GROUPS: set[str] = set()


def _record(data, model, error, vectors, seconds, paper=""):
    """A row of the result file; ``data`` names the group on its first row only."""
    first = data not in _GROUPS
    _GROUPS.add(data)
    _TABLE.append({
        "data": data if first else "", "model": model, "test error": error,
        "vectors": vectors, "fit time": f"{seconds:.2f} s", "paper": paper,
    })  # fmt: skip


def _row(name, err, vectors, seconds, paper="", data=""):
    print(
        f"  {name:<34} {100 * err:7.2f} % {vectors:>9} {seconds:9.2f} s "
        f"(cpu {_CPU[-1]:7.2f} s)   {paper}"
    )
    _record(data, name, f"{100 * err:.2f} %", vectors, seconds, paper)


def _header(title):
    print(f"\n{title}")
    print(f"  {'model':<34} {'error':>9} {'vectors':>9} {'fit time':>11}   paper")


def ripley(draws: int) -> None:
    data = load_ripley()
    gamma = 4.0  # Tipping (2001) eq. 30 with r = 0.5: exp(-|x - x'|^2 / r^2)
    _header("Ripley synthetic data, Gaussian kernel r = 0.5 (gamma = 4), 1000 test points")
    results = []
    for draw in range(draws):
        idx = np.random.default_rng(draw).choice(250, size=100, replace=False)
        X, y = data.X_train[idx], data.y_train[idx]
        rvc = _rvc(X, y, data.X_test, data.y_test, gamma=gamma)
        svm = _svm(X, y, data.X_test, data.y_test, gamma, seed=draw)
        results.append((*rvc[:3], *svm))
    r = np.array(results)
    mean, sd = r.mean(axis=0), r.std(axis=0, ddof=1) if draws > 1 else np.zeros(6)
    print(f"  100 of the 250 training points, {draws} random draws: mean (sd)")
    draws_data = f"Ripley, 100 of 250, {draws} draws (mean, sd)"
    for k, (name, paper) in enumerate(
        [
            ("RVC (sequential)", "RVM 9.3 %, 4 (one draw)"),
            ("SVC (C by 5-fold CV)", "SVM 10.6 %, 38"),
        ]
    ):
        error = f"{100 * mean[3 * k]:.2f} % ({100 * sd[3 * k]:.2f})"
        vectors = f"{mean[3 * k + 1]:.1f} ({sd[3 * k + 1]:.1f})"
        print(
            f"  {name:<34} {error:>15} {vectors:>11} {mean[3 * k + 2]:6.2f} "
            f"({sd[3 * k + 2]:.2f}) s   {paper}"
        )
        _record(draws_data, name, error, vectors, mean[3 * k + 2], paper)
    print(
        f"  ratios RVC / SVC: error {mean[0] / mean[3]:.2f}, vectors {mean[1] / mean[4]:.3f} "
        f"(paper 0.88, 0.105)"
    )
    print("  all 250 training points")
    for solver in ("sequential", "mackay", "em"):
        err, n_rv, sec, _ = _rvc(
            data.X_train, data.y_train, data.X_test, data.y_test, gamma=gamma, solver=solver
        )
        _row(f"RVC ({solver})", err, n_rv, sec, data="Ripley, all 250")
    svm = _svm(data.X_train, data.y_train, data.X_test, data.y_test, gamma)
    _row("SVC (C by 5-fold CV)", *svm, data="Ripley, all 250")


def pima() -> None:
    data = load_pima()
    mean, sd = data.X_train.mean(axis=0), data.X_train.std(axis=0)
    X, X_test = (data.X_train - mean) / sd, (data.X_test - mean) / sd
    y, y_test = data.y_train, data.y_test
    d = X.shape[1]
    grid = 2.0 ** np.arange(-6, 3) / d
    start = time.perf_counter()
    folds = StratifiedKFold(5, shuffle=True, random_state=0)
    cv_error = []
    for gamma in grid:
        errors = [_rvc(X[tr], y[tr], X[va], y[va], gamma=gamma)[0] for tr, va in folds.split(X, y)]
        cv_error.append(np.mean(errors))
    cv_seconds = time.perf_counter() - start
    best = float(grid[int(np.argmin(cv_error))])
    _header(
        f"Pima diabetes (200 / 332), inputs standardised, Gaussian kernel gamma by 5-fold CV "
        f"over {len(grid)} values ({cv_seconds:.1f} s): gamma = {best:.4g} (= {best * d:g} / d)"
    )
    err, n_rv, sec, _ = _rvc(X, y, X_test, y_test, gamma=best)
    data = f"Pima (200 / 332), gamma = {best * d:g} / d by 5-fold CV"
    _row("RVC (sequential)", err, n_rv, sec, "RVM 19.6 %, 4", data=data)
    svm = _svm(X, y, X_test, y_test, best)
    _row("SVC (same gamma, C by 5-fold CV)", *svm, "SVM 20.1 %, 109", data=data)
    print(f"  ratios RVC / SVC: error {err / svm[0]:.2f}, vectors {n_rv / svm[1]:.3f}")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def usps(n_train: int | None, multinomial: bool, n_jobs: int | None = None) -> None:
    data = load_usps()
    n = data.X_train.shape[0] if n_train is None else n_train
    X, y = data.X_train[:n], data.y_train[:n]
    gamma = 1.0 / 128.0  # exp(-|x - x'|^2 / (0.5 d)), d = 256 (Schölkopf et al. 1999)
    _header(
        f"USPS digits, {n} training / {data.X_test.shape[0]} test images, Gaussian kernel "
        f"gamma = 1/128"
    )
    rss_before = _peak_rss_mb()
    err, n_rv, sec, model = _rvc(X, y, data.X_test, data.y_test, gamma=gamma, n_jobs=n_jobs)
    name = "RVC (sequential) one-vs-rest, 10" + (f", {n_jobs} jobs" if n_jobs else "")
    group = f"USPS ({n} / {data.X_test.shape[0]}), gamma = 1/128 fixed"
    _row(name, err, n_rv, sec, "RVM 5.1 %, 316 (N = 7291)", data=group)
    print(
        f"  vectors per classifier: {[e.n_relevance_ for e in model.estimators_]}; "
        f"peak RSS {_peak_rss_mb():.0f} MB (before: {rss_before:.0f} MB)"
    )
    if multinomial and n > MULTINOMIAL_MAX_N:
        print(
            f"  RVC multinomial: not run at n = {n}. MacKay and EM factor the "
            f"{10 * (n + 1)} x {10 * (n + 1)} Hessian of the full basis "
            f"({8 * (10 * (n + 1)) ** 2 / 1e9:.0f} GB) at every Laplace step."
        )
    elif multinomial:
        err, n_rv, sec, _ = _rvc(
            X, y, data.X_test, data.y_test, gamma=gamma, multi_class="multinomial"
        )
        _row("RVC multinomial (softmax)", err, n_rv, sec, data=group)
        print(f"  peak RSS {_peak_rss_mb():.0f} MB")
    svm = _svm(X, y, data.X_test, data.y_test, gamma)
    _row("SVC (same gamma, C by 5-fold CV)", *svm, "SVM 4.4 %, 2540 (N = 7291)", data=group)


def heldout() -> None:
    """RVC at every width of the held-out comparison's evidence grid on the first training
    split of each of its classification sets (``benchmarks/bench_heldout.py``, the
    ``data`` extra): the log evidence (summed over one-vs-rest classifiers) next to the
    test error, so that versions of the package can be compared on the same fits."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_heldout import CLASSIFICATION, GRID, load, split

    print(f"\nheld-out sets, first split\n  {'set, gamma x d':<20} {'log evidence':>13} "
          f"{'error':>9} {'vectors':>8} {'fit time':>10}")  # fmt: skip
    for name in CLASSIFICATION:
        X, X_test, y, y_test = split(*load(name), False, 0)
        for g in GRID:
            err, vectors, seconds, model = _rvc(X, y, X_test, y_test, gamma=g / X.shape[1])
            log_ev = float(np.sum(model.log_evidence_))
            print(f"  {f'{name} {g:g}':<20} {log_ev:13.3f} {100 * err:7.2f} % {vectors:>8} "
                  f"{seconds:8.3f} s")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--only", default="ripley,pima", help="comma-separated: ripley,pima,usps,heldout"
    )
    parser.add_argument("--draws", type=int, default=10, help="Ripley 100-point draws")
    parser.add_argument("--usps-n", type=int, default=None, help="USPS training images used")
    parser.add_argument("--usps-jobs", type=int, default=None, help="RVC n_jobs on USPS")
    parser.add_argument("--multinomial", action="store_true", help="also the softmax RVC on USPS")
    parser.add_argument(
        "--write", action="store_true", help="write docs/results/bench-classification"
    )
    args = parser.parse_args(argv)
    chosen = set(args.only.split(","))
    if args.write and "heldout" in chosen:
        parser.error("--write writes the ripley, pima and usps rows; run heldout without it")
    _TABLE.clear()
    _GROUPS.clear()
    # a warm-up fit: the sequential solver's compiled loop is loaded (or compiled, once
    # per installation) on the first fit of a process, not inside a timed one
    rng = np.random.default_rng(0)
    RVC(kernel="rbf").fit(rng.normal(size=(30, 2)), np.arange(30) % 2)
    if "ripley" in chosen:
        ripley(args.draws)
    if "pima" in chosen:
        pima()
    if "usps" in chosen:
        usps(args.usps_n, args.multinomial, args.usps_jobs)
    if "heldout" in chosen:
        heldout()
    if args.write:
        _write(argv if argv is not None else sys.argv[1:])


def _write(argv: list[str]) -> None:
    """The rows of this run to ``docs/results/bench-classification``."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _results import write_results

    command = " ".join(["PYTHONPATH=. python benchmarks/bench_classification.py", *argv])
    notes = (
        "RVC with its default sequential solver; the SVM is scikit-learn's SVC with the "
        "same kernel and `C` by 5-fold cross-validation (its time includes the "
        "cross-validation). Ripley's kernel is the paper's (r = 0.5). USPS fixes gamma = "
        "1/128 to measure time and memory; the paper's protocol, with the width "
        "cross-validated, is the reproduction table above. Peak resident memory of the "
        f"command's process: {_peak_rss_mb() / 1024:.2f} GB."
    )
    title = "Classification: Ripley, Pima and USPS"
    path = write_results("bench-classification", command, _TABLE, COLUMNS, notes, title=title)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
