"""Reproduce the benchmark tables of Tipping (2001), Sec. 4.4 (protocols of App. E).

``python -m bayes_rvm reproduce [--rows ...] [--repeats N] [--first-repeat K] [--quick]
[--out DIR]``, or ``... reproduce --merge DIR [DIR ...] --out DIR``

Every row draws its training and test data as App. E describes, chooses the Gaussian
kernel width of the RVM, and the width, ``C`` (and ``epsilon``) of the scikit-learn SVM,
by 5-fold cross-validation on the training set, fits both on the whole training set and
records test error and number of vectors. The table shows our means beside the paper's
numbers and the paper's summary statistic, the *normalised mean*: for each row the RVM's
mean error (and vector count) divided by the SVM's, averaged over the rows.

Error units (the paper's columns)
---------------------------------
- Sinc rows: root-mean-square deviation from the noise-free sinc on 1000 equally spaced
  test inputs, multiplied by 10 (that is, in units of the noise level 0.1). The paper's
  column is not labelled; the factor is inferred from its numbers: the uniform-noise row
  has errors 0.57 times those of the Gaussian row, the ratio of the noise standard
  deviations (0.1 / sqrt(3) to 0.1), so the column is linear in the noise, an RMS and not
  an MSE (which would give a ratio of 1/3); and an RMS of 0.03 for a 7-vector fit to 100
  points with noise 0.1 is what our fits give, while 0.3 would be three times the noise.
- Friedman #1-#3: mean squared error against the noise-free function on 1000 test points.
- Boston: mean squared error on the 25 held-out (noisy) targets, in (1000 dollars)^2.
- Classification: test error in percent.

Training sets larger than ``Protocol.cv_train`` (USPS) are cross-validated on a random
subset of that size, and the chosen settings fitted on the whole set.

Preprocessing (not stated in the paper): inputs are standardised with the training set's
mean and standard deviation inside each fit (so a single kernel width suits inputs on
different scales, e.g. Friedman #2); the SVR's targets are standardised too, so that one
grid of ``C`` and ``epsilon`` fits every data set. The RVM is invariant to the target scale.
Ripley's row keeps the raw inputs and the paper's fixed width r = 0.5 (Sec. 4.2).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from sklearn.base import clone
from sklearn.compose import TransformedTargetRegressor
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.svm import SVC, SVR

import bayes_rvm
from bayes_rvm import datasets
from bayes_rvm._validation import lookup
from bayes_rvm.estimators import RVC, RVR
from bayes_rvm.solvers import InterpolationWarning

__all__ = [
    "PAPER_NORMALISED_MEANS",
    "PROTOCOLS",
    "ROWS",
    "Paper",
    "Protocol",
    "Row",
    "configure",
    "machine",
    "main",
    "merge_runs",
    "run",
    "run_rows",
    "write_results",
]

HELP = "run the benchmark tables of Tipping (2001) Sec. 4.4 and compare with the paper"


@dataclass(frozen=True)
class Paper:
    """The paper's numbers for a row (Tipping 2001, Sec. 4.2 / 4.4)."""

    svm_error: float
    rvm_error: float
    svm_vectors: float
    rvm_vectors: float
    in_mean: bool
    """Whether the paper's normalised mean includes the row."""
    source: str


#: The paper's normalised means over its full tables: (errors, vectors) of RVM / SVM.
PAPER_NORMALISED_MEANS = {"regression": (0.86, 0.15), "classification": (1.08, 0.17)}


@dataclass(frozen=True)
class Split:
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


@dataclass(frozen=True)
class Row:
    """One line of the table: data, protocol and the paper's numbers."""

    key: str
    title: str
    task: str  # "regression" or "classification"
    n_train: int
    d: int
    repeats: int
    unit: str
    paper: Paper
    draw: Callable[[np.random.Generator, Protocol], Split]
    error: Callable[[np.ndarray, np.ndarray], float]
    standardise: bool = True
    gamma: float | None = None
    """A fixed kernel width ``gamma = 1 / r^2`` (no cross-validation over it)."""
    multiclass: bool = False


@dataclass(frozen=True)
class Protocol:
    """Cross-validation grids and fit settings.

    ``gamma_factors`` multiply ``1 / d`` (inputs standardised, so ``gamma = 1 / d`` puts
    the kernel width at the typical distance between points); ``svm_epsilon`` is in units
    of the training targets' standard deviation.
    """

    name: str
    gamma_factors: tuple[float, ...]
    svm_C: tuple[float, ...]
    svm_epsilon: tuple[float, ...]
    folds: int = 5
    usps_train: int | None = None
    """Subsample the USPS training set to this many digits (None: all 7291)."""
    cv_train: int | None = 1000
    """Cross-validate on a random subset of this many training points when the training
    set is larger (USPS); the chosen model is then fitted on the whole training set.
    None: cross-validate on all of it."""
    rvm_max_iter: int | None = None
    """Iteration limit of the RVM solver (None: the solver's default)."""


PROTOCOLS = {
    "full": Protocol(
        name="full",
        gamma_factors=tuple(2.0**k for k in range(-8, 4)),
        svm_C=(1.0, 10.0, 100.0, 1000.0),
        svm_epsilon=(0.01, 0.1, 0.3),
    ),
    "quick": Protocol(
        name="quick",
        gamma_factors=(2.0**-4, 2.0**-2, 1.0, 4.0),
        svm_C=(1.0, 10.0, 100.0),
        svm_epsilon=(0.1, 0.3),
        usps_train=300,
    ),
}

#: Repetitions per row with ``--quick`` (the full protocol uses each row's ``repeats``).
QUICK_REPEATS = 1


# ---------------------------------------------------------------- errors


def _rms_times_10(f: np.ndarray, prediction: np.ndarray) -> float:
    return 10.0 * math.sqrt(float(np.mean((prediction - f) ** 2)))


def _mse(y: np.ndarray, prediction: np.ndarray) -> float:
    return float(np.mean((prediction - y) ** 2))


def _percent_wrong(y: np.ndarray, prediction: np.ndarray) -> float:
    return 100.0 * float(np.mean(prediction != y))


# ---------------------------------------------------------------- data draws


def _sinc(noise: str):
    def draw(rng, protocol):
        train = datasets.make_sinc(100, noise=noise, noise_level=0.1, random_state=rng)
        test = datasets.make_sinc(1000, noise_level=0.0)
        return Split(train.X, train.y, test.X, test.f)

    return draw


def _friedman(generator):
    def draw(rng, protocol):
        train = generator(240, random_state=rng)
        test = generator(1000, random_state=rng)
        return Split(train.X, train.y, test.X, test.f)

    return draw


def _boston(rng, protocol):
    data = datasets.load_boston()
    order = rng.permutation(data.y.shape[0])
    train, test = order[:481], order[481:]
    return Split(data.X[train], data.y[train], data.X[test], data.y[test])


def _ripley(rng, protocol):
    data = datasets.load_ripley()
    train = rng.choice(data.y_train.shape[0], 100, replace=False)
    return Split(data.X_train[train], data.y_train[train], data.X_test, data.y_test)


def _pima(rng, protocol):
    data = datasets.load_pima()
    return Split(data.X_train, data.y_train, data.X_test, data.y_test)


def _usps(rng, protocol):
    data = datasets.load_usps()
    X, y = data.X_train, data.y_train
    if protocol.usps_train is not None and protocol.usps_train < y.shape[0]:
        keep = np.sort(rng.choice(y.shape[0], protocol.usps_train, replace=False))
        X, y = X[keep], y[keep]
    return Split(X, y, data.X_test, data.y_test)


def _paper(svm_e, rvm_e, svm_v, rvm_v, in_mean=True, source="Sec. 4.4"):
    return Paper(svm_e, rvm_e, svm_v, rvm_v, in_mean, source)


#: The table, in the paper's order. Keys are the names ``--rows`` takes.
ROWS = {
    row.key: row
    for row in (
        Row("sinc-gaussian", "Sinc (Gaussian noise)", "regression", 100, 1, 100,
            "RMS x 10", _paper(0.378, 0.326, 45.2, 6.7), _sinc("gaussian"), _rms_times_10),
        Row("sinc-uniform", "Sinc (Uniform noise)", "regression", 100, 1, 100,
            "RMS x 10", _paper(0.215, 0.187, 44.3, 7.0), _sinc("uniform"), _rms_times_10),
        Row("friedman2", "Friedman #2", "regression", 240, 4, 100, "MSE",
            _paper(4140, 3505, 110.3, 6.9), _friedman(datasets.make_friedman2), _mse),
        Row("friedman3", "Friedman #3", "regression", 240, 4, 100, "MSE",
            _paper(0.0202, 0.0164, 106.5, 11.5), _friedman(datasets.make_friedman3), _mse),
        Row("boston", "Boston Housing", "regression", 481, 13, 100, "MSE",
            _paper(8.04, 7.46, 142.8, 39.0), _boston, _mse),
        Row("friedman1", "Friedman #1", "regression", 240, 10, 100, "MSE",
            _paper(2.92, 2.80, 116.6, 59.4, in_mean=False, source="Sec. 4.4.1, 2nd table"),
            _friedman(datasets.make_friedman1), _mse),
        Row("pima", "Pima Diabetes", "classification", 200, 7, 1, "% wrong",
            _paper(20.1, 19.6, 109, 4), _pima, _percent_wrong),
        Row("usps", "U.S.P.S.", "classification", 7291, 256, 1, "% wrong",
            _paper(4.4, 5.1, 2540, 316), _usps, _percent_wrong, standardise=False,
            multiclass=True),
        Row("ripley", "Ripley (r = 0.5)", "classification", 100, 2, 10, "% wrong",
            _paper(10.6, 9.3, 38, 4, in_mean=False, source="Sec. 4.2, one draw"),
            _ripley, _percent_wrong, standardise=False, gamma=4.0),
    )
}  # fmt: skip

ROW_GROUPS = {
    "all": tuple(ROWS),
    "regression": tuple(k for k, r in ROWS.items() if r.task == "regression"),
    "classification": tuple(k for k, r in ROWS.items() if r.task == "classification"),
}


# ---------------------------------------------------------------- models


def _scaler(row: Row):
    return StandardScaler() if row.standardise else FunctionTransformer()


def _gamma_grid(row: Row, protocol: Protocol) -> list[float]:
    if row.gamma is not None:
        return [row.gamma]
    return [factor / row.d for factor in protocol.gamma_factors]


def _cv(row: Row, rng: np.random.Generator, protocol: Protocol):
    seed = int(rng.integers(2**31 - 1))
    if row.task == "regression":
        return KFold(protocol.folds, shuffle=True, random_state=seed)
    return StratifiedKFold(protocol.folds, shuffle=True, random_state=seed)


def _svm_search(row: Row, protocol: Protocol, cv) -> GridSearchCV:
    gammas = _gamma_grid(row, protocol)
    if row.task == "regression":
        model = TransformedTargetRegressor(
            make_pipeline(_scaler(row), SVR(kernel="rbf")), transformer=StandardScaler()
        )
        grid = {
            "regressor__svr__gamma": gammas,
            "regressor__svr__C": list(protocol.svm_C),
            "regressor__svr__epsilon": list(protocol.svm_epsilon),
        }
        return GridSearchCV(model, grid, cv=cv, scoring="neg_mean_squared_error")
    svc = SVC(kernel="rbf")
    prefix = "svc__"
    if row.multiclass:  # ten one-vs-rest classifiers, the paper's USPS strategy
        svc, prefix = OneVsRestClassifier(svc), "onevsrestclassifier__estimator__"
    grid = {f"{prefix}gamma": gammas, f"{prefix}C": list(protocol.svm_C)}
    return GridSearchCV(make_pipeline(_scaler(row), svc), grid, cv=cv, scoring="accuracy")


def _rvm_search(row: Row, protocol: Protocol, cv) -> GridSearchCV:
    if row.task == "regression":
        estimator, scoring = (
            RVR(kernel="rbf", max_iter=protocol.rvm_max_iter),
            "neg_mean_squared_error",
        )
    else:
        # more than two classes: ten one-vs-rest classifiers, the paper's USPS strategy
        estimator, scoring = (
            RVC(kernel="rbf", max_iter=protocol.rvm_max_iter, multi_class="ovr"),
            "accuracy",
        )
    model = make_pipeline(_scaler(row), estimator)
    key = f"{model.steps[-1][0]}__gamma"
    return GridSearchCV(model, {key: _gamma_grid(row, protocol)}, cv=cv, scoring=scoring)


def _final(model):
    """The fitted SVM or RVM inside a fitted (target-transformed) pipeline."""
    if isinstance(model, TransformedTargetRegressor):
        model = model.regressor_
    return model.steps[-1][1]


def _n_vectors(model) -> int:
    """Support or relevance vectors; summed over the classifiers of a one-vs-rest model."""
    if isinstance(model, OneVsRestClassifier):
        return sum(_n_vectors(m) for m in model.estimators_)
    if hasattr(model, "support_"):
        return int(model.support_.shape[0])
    if isinstance(model, RVC):
        return int(model.n_relevance_)
    return int(model.relevance_indices_.shape[0])


def _converged(model: RVR | RVC) -> bool:
    """Whether the final RVM fit converged (every classifier of a one-vs-rest RVC)."""
    if hasattr(model, "estimators_"):
        return all(_converged(m) for m in model.estimators_)
    return bool(model.result_.converged)


def _fit(search: GridSearchCV, row: Row, split: Split, cv_subset=None) -> dict:
    """Grid search, then the best model on the whole training set (``cv_subset``: the
    training rows the grid search uses, all of them when ``None``)."""
    start = time.perf_counter()
    X, y = split.X_train, split.y_train
    rows = slice(None) if cv_subset is None else cv_subset
    with warnings.catch_warnings():
        # cross-validation fits may stop at the iteration limit, and points of the gamma
        # grid may interpolate their training folds: the held-out scores judge them
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", InterpolationWarning)
        search.set_params(refit=False).fit(X[rows], y[rows])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the convergence is recorded
        fitted = clone(search.estimator).set_params(**search.best_params_).fit(X, y)
    gamma = next(v for k, v in search.best_params_.items() if k.endswith("gamma"))
    model = _final(fitted)
    return {
        "error": row.error(split.y_test, fitted.predict(split.X_test)),
        "vectors": _n_vectors(model),
        "gamma": gamma,
        "params": search.best_params_,
        "model": model,
        "seconds": time.perf_counter() - start,
    }


# ---------------------------------------------------------------- running


@dataclass
class RowResult:
    row: Row
    repeats: int
    runs: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    def values(self, model: str, what: str) -> np.ndarray:
        return np.array([r[f"{model}_{what}"] for r in self.runs if f"{model}_{what}" in r])

    def mean(self, model: str, what: str) -> float:
        values = self.values(model, what)
        return float(values.mean()) if values.size else math.nan

    def sem(self, model: str, what: str) -> float:
        values = self.values(model, what)
        return float(values.std(ddof=1) / math.sqrt(values.size)) if values.size > 1 else math.nan


def _seed_sequence(seed: int, row: Row, repeat: int) -> np.random.SeedSequence:
    """Independent streams per row and repetition, stable when rows are added or skipped."""
    row_id = sum(ord(c) * 31**i for i, c in enumerate(row.key)) % (2**32)
    return np.random.SeedSequence(entropy=seed, spawn_key=(row_id, repeat))


def run_rows(
    keys,
    *,
    protocol: Protocol,
    repeats: int | None = None,
    seed: int = 0,
    first_repeat: int = 0,
    log=None,
    on_row_done: Callable[[list[RowResult]], None] | None = None,
) -> list[RowResult]:
    """Run the given rows; ``repeats`` overrides each row's paper repetitions.

    Repetitions are numbered from ``first_repeat`` and seeded by their number, so runs
    of disjoint ranges (in parallel processes, or later) merge into one
    (:func:`merge_runs`).

    Rows with a single fixed split (Pima, USPS) run once per repetition with fresh
    cross-validation folds. ``log`` (a file, default stderr) receives one progress line
    per repetition; ``on_row_done(results_so_far)`` is called after each row.
    """
    log = sys.stderr if log is None else log
    results = []
    for key in keys:
        row = ROWS[key]
        n_repeats = row.repeats if repeats is None else repeats
        result = RowResult(row, n_repeats)
        start = time.perf_counter()
        for repeat in range(first_repeat, first_repeat + n_repeats):
            rng = np.random.default_rng(_seed_sequence(seed, row, repeat))
            split = row.draw(rng, protocol)
            cv = _cv(row, rng, protocol)
            n_train = len(split.y_train)
            cv_subset = None
            if protocol.cv_train is not None and n_train > protocol.cv_train:
                cv_subset = np.sort(rng.choice(n_train, protocol.cv_train, replace=False))
            record = {"row": key, "repeat": repeat, "seed": seed, "n_train": n_train}
            svm = _fit(_svm_search(row, protocol, cv), row, split, cv_subset)
            record |= {
                "svm_error": svm["error"],
                "svm_vectors": svm["vectors"],
                "svm_params": svm["params"],
                "svm_seconds": svm["seconds"],
            }
            rvm = _fit(_rvm_search(row, protocol, cv), row, split, cv_subset)
            record |= {
                "rvm_error": rvm["error"],
                "rvm_vectors": rvm["vectors"],
                "rvm_gamma": rvm["gamma"],
                "rvm_converged": _converged(rvm["model"]),
                "rvm_seconds": rvm["seconds"],
            }
            line = (
                f"SVM {svm['error']:.4g} ({svm['vectors']})"
                f"  RVM {rvm['error']:.4g} ({rvm['vectors']}, gamma {rvm['gamma']:.3g})"
            )
            result.runs.append(record)
            elapsed = time.perf_counter() - start
            print(
                f"[{key} {repeat + 1}/{first_repeat + n_repeats}] {line}  {elapsed:.0f} s",
                file=log,
                flush=True,
            )
        result.seconds = time.perf_counter() - start
        results.append(result)
        if on_row_done is not None:
            on_row_done(results)
    return results


# ---------------------------------------------------------------- table


def _mean_ratio(pairs: list[tuple[float, float]]) -> float:
    """Mean of ``rvm / svm`` over rows; NaN when an SVM value is 0 (no ratio defined)."""
    return float(np.mean([rvm / svm if svm else math.nan for rvm, svm in pairs]))


def normalised_means(results: list[RowResult], task: str) -> dict | None:
    """RVM / SVM mean error and vectors, averaged over the rows the paper averages.

    Returns ours and the paper's over the same rows (None when no such row has both
    models), plus the paper's value over its complete table.
    """
    rows = [r for r in results if r.row.task == task and r.row.paper.in_mean and r.runs]
    if not rows:
        return None
    return {
        "rows": [r.row.key for r in rows],
        "error": _mean_ratio([(r.mean("rvm", "error"), r.mean("svm", "error")) for r in rows]),
        "vectors": _mean_ratio(
            [(r.mean("rvm", "vectors"), r.mean("svm", "vectors")) for r in rows]
        ),
        "paper_error": _mean_ratio([(r.row.paper.rvm_error, r.row.paper.svm_error) for r in rows]),
        "paper_vectors": _mean_ratio(
            [(r.row.paper.rvm_vectors, r.row.paper.svm_vectors) for r in rows]
        ),
        "paper_table": PAPER_NORMALISED_MEANS[task],
    }


COLUMNS = [
    "row", "data set", "N", "d", "repeats", "unit",
    "SVM error", "SVM error sem", "RVM error", "RVM error sem",
    "SVM vectors", "RVM vectors", "RVM fits at max_iter",
    "paper SVM error", "paper RVM error", "paper SVM vectors", "paper RVM vectors",
    "seconds",
]  # fmt: skip


def table_rows(results: list[RowResult]) -> list[dict]:
    """One dict per row with the :data:`COLUMNS`."""
    out = []
    for r in results:
        paper = r.row.paper
        not_converged = sum(run.get("rvm_converged") is False for run in r.runs)
        out.append(
            {
                "row": r.row.key,
                "data set": r.row.title,
                "N": r.runs[0]["n_train"] if r.runs else r.row.n_train,
                "d": r.row.d,
                "repeats": len(r.runs),
                "unit": r.row.unit,
                "SVM error": r.mean("svm", "error"),
                "SVM error sem": r.sem("svm", "error"),
                "RVM error": r.mean("rvm", "error"),
                "RVM error sem": r.sem("rvm", "error"),
                "SVM vectors": r.mean("svm", "vectors"),
                "RVM vectors": r.mean("rvm", "vectors"),
                "RVM fits at max_iter": not_converged,
                "paper SVM error": paper.svm_error,
                "paper RVM error": paper.rvm_error,
                "paper SVM vectors": paper.svm_vectors,
                "paper RVM vectors": paper.rvm_vectors,
                "seconds": r.seconds,
            }
        )
    return out


def _fmt(value, digits: int = 4) -> str:
    if isinstance(value, str):
        return value
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, int) or (float(value).is_integer() and abs(value) >= 10):
        return str(int(value))
    return f"{value:.{digits}g}"


def _with_sem(mean: float, sem: float) -> str:
    return _fmt(mean) if math.isnan(sem) else f"{_fmt(mean)} ± {_fmt(sem, 2)}"


def markdown(results: list[RowResult], header: str = "") -> str:
    """The table and the normalised means as Markdown."""
    lines = [header] if header else []
    lines += [
        "| Data set | N | d | reps | unit | SVM error | RVM error | SVM vectors | RVM vectors "
        "| paper SVM / RVM error | paper SVM / RVM vectors |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for t in table_rows(results):
        lines.append(
            f"| {t['data set']} | {t['N']} | {t['d']} | {t['repeats']} | {t['unit']} "
            f"| {_with_sem(t['SVM error'], t['SVM error sem'])} "
            f"| {_with_sem(t['RVM error'], t['RVM error sem'])} "
            f"| {_fmt(t['SVM vectors'])} | {_fmt(t['RVM vectors'])} "
            f"| {_fmt(t['paper SVM error'])} / {_fmt(t['paper RVM error'])} "
            f"| {_fmt(t['paper SVM vectors'])} / {_fmt(t['paper RVM vectors'])} |"
        )
    lines += ["", "Normalised means (RVM / SVM, averaged over rows; SVM = 1.00):", ""]
    lines += [
        "| task | rows | ours: errors | ours: vectors | paper, same rows: errors "
        "| paper, same rows: vectors | paper, full table: errors / vectors |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for task in ("regression", "classification"):
        m = normalised_means(results, task)
        if m is None:
            lines.append(f"| {task} | (no row with both models run) | - | - | - | - | - |")
            continue
        lines.append(
            f"| {task} | {', '.join(m['rows'])} | {m['error']:.2f} | {m['vectors']:.2f} "
            f"| {m['paper_error']:.2f} | {m['paper_vectors']:.2f} "
            f"| {m['paper_table'][0]:.2f} / {m['paper_table'][1]:.2f} |"
        )
    return "\n".join(lines) + "\n"


def write_outputs(
    results: list[RowResult], out: Path, header: str, command: str = ""
) -> dict[str, Path]:
    """``table.md``, ``table.csv`` (one line per row), ``runs.csv`` (one per fit pair) and
    ``results.json`` (the table in the result-file schema of :func:`write_results`)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out / "table.md", "csv": out / "table.csv", "runs": out / "runs.csv"}
    paths["markdown"].write_text(markdown(results, header))
    with paths["csv"].open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(table_rows(results))
    runs = [run for r in results for run in r.runs]
    fields = list(dict.fromkeys(k for run in runs for k in run))
    with paths["runs"].open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(runs)
    paths["results"] = write_results(out, name=out.name, command=command, **results_table(results))
    return paths


#: Columns of the reproduction's table on the results page.
PAGE_COLUMNS = [
    "data set", "N", "repeats", "unit", "SVM error", "RVM error", "SVM vectors",
    "RVM vectors", "paper error (SVM / RVM)", "paper vectors (SVM / RVM)",
]  # fmt: skip


def results_table(results: list[RowResult]) -> dict:
    """Title, rows, columns and notes of the reproduction for :func:`write_results`."""
    rows = []
    for t in table_rows(results):
        rows.append(
            t
            | {
                "SVM error": _with_sem(t["SVM error"], t["SVM error sem"]),
                "RVM error": _with_sem(t["RVM error"], t["RVM error sem"]),
                "SVM vectors": _fmt(t["SVM vectors"]),
                "RVM vectors": _fmt(t["RVM vectors"]),
                "paper error (SVM / RVM)": (
                    f"{_fmt(t['paper SVM error'])} / {_fmt(t['paper RVM error'])}"
                ),
                "paper vectors (SVM / RVM)": (
                    f"{_fmt(t['paper SVM vectors'])} / {_fmt(t['paper RVM vectors'])}"
                ),
            }
        )
    notes = [
        "Errors are means over the repetitions with their standard error; units as in the "
        "paper (`RMS x 10`: root-mean-square deviation from the noise-free sinc times 10; "
        "MSE: mean squared error; `% wrong`: test error in percent)."
    ]
    for task in ("regression", "classification"):
        m = normalised_means(results, task)
        if m is not None:
            notes.append(
                f"Normalised means ({task}, RVM / SVM averaged over "
                f"{', '.join(m['rows'])}): errors {m['error']:.2f}, vectors "
                f"{m['vectors']:.2f}; the paper over the same rows {m['paper_error']:.2f}, "
                f"{m['paper_vectors']:.2f} (its full table {m['paper_table'][0]:.2f}, "
                f"{m['paper_table'][1]:.2f})."
            )
    tasks = sorted({r.row.task for r in results})
    return {
        "title": f"Reproduction of Tipping (2001), Sec. 4.4: {' and '.join(tasks)}",
        "rows": rows,
        "columns": PAGE_COLUMNS,
        "notes": " ".join(notes),
    }


# ---------------------------------------------------------------- result files

#: Version of the result-file schema written by :func:`write_results`.
RESULTS_SCHEMA = 1


def machine() -> str:
    """One line on where a measurement ran: system, CPUs, load, Python, numpy, BLAS.

    The BLAS libraries and their thread counts come from ``threadpoolctl`` (after
    importing numpy, so its BLAS is loaded).
    """
    from threadpoolctl import threadpool_info

    blas = [
        f"{info.get('internal_api', info.get('prefix', '?'))} {info.get('version') or ''}"
        f" ({info.get('num_threads')} thread{'' if info.get('num_threads') == 1 else 's'})"
        for info in threadpool_info()
        if info.get("user_api") == "blas"
    ]
    load = f"load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    parts = [
        f"{platform.system()} {platform.machine()}",
        f"{os.cpu_count()} CPUs",
        load,
        f"Python {platform.python_version()}",
        f"numpy {np.__version__}",
        ", ".join(blas) or "BLAS unknown",
        f"bayes_rvm {bayes_rvm.__version__}",
    ]
    return ", ".join(p for p in parts if p)


def write_results(
    directory: Path | str,
    *,
    name: str,
    title: str,
    command: str,
    rows: list[dict],
    columns: list[str],
    notes: str = "",
    machine_line: str | None = None,
) -> Path:
    """Write ``results.json`` in ``directory``: one benchmark's table for the results page.

    The schema (version :data:`RESULTS_SCHEMA`): ``{"schema", "name", "title", "command",
    "machine", "columns", "rows", "notes"}``. ``rows`` are dicts holding at least the
    ``columns`` (numbers or text; ``None`` for a missing value); ``command`` is the exact
    command line that produced them, ``machine`` the line of :func:`machine` (or
    ``machine_line``), ``notes`` Markdown shown under the table (what the columns mean).
    ``scripts/benchmark_page.py`` renders every such file into the benchmark page.
    """
    missing = [(i, c) for i, row in enumerate(rows) for c in columns if c not in row]
    if missing:
        raise ValueError(f"every row needs every column; missing (row, column): {missing[:5]}")
    document = {
        "schema": RESULTS_SCHEMA,
        "name": name,
        "title": title,
        "command": command,
        "machine": machine() if machine_line is None else machine_line,
        "columns": list(columns),
        "rows": [{c: _json_value(row[c]) for c in row} for row in rows],
        "notes": notes,
    }
    path = Path(directory) / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    return path


def _json_value(value):
    """Floats to 6 significant digits, NaN to None (JSON has none), numpy to Python."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return None if math.isnan(value) else float(f"{value:.6g}")
    return value


def _parse(value: str):
    """A ``runs.csv`` field: int, float, bool, None (empty) or the text itself."""
    if value in ("True", "False"):
        return value == "True"
    if value == "":
        return None
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def merge_runs(directories) -> list[RowResult]:
    """The rows of several runs (their ``runs.csv``) as one result, in the table's order.

    Raises ``ValueError`` if a repetition of a row appears twice (same row, repetition and
    seed): the runs overlap instead of extending each other.
    """
    runs: dict[tuple, dict] = {}
    for directory in directories:
        path = Path(directory) / "runs.csv"
        with path.open(newline="") as handle:
            for record in csv.DictReader(handle):
                run = {k: _parse(v) for k, v in record.items()}
                key = (run["row"], run["repeat"], run["seed"])
                if key in runs:
                    raise ValueError(
                        f"repetition {run['repeat']} (seed {run['seed']}) of row "
                        f"{run['row']!r} appears twice (again in {path}): merge runs of "
                        "disjoint repetitions (--first-repeat)"
                    )
                runs[key] = run
    results = []
    for name, row in ROWS.items():
        rows = sorted((k for k in runs if k[0] == name), key=lambda k: (k[2], k[1]))
        if not rows:
            continue
        result = RowResult(row, len(rows), [runs[k] for k in rows])
        result.seconds = sum(
            (r.get("svm_seconds") or 0.0) + (r.get("rvm_seconds") or 0.0) for r in result.runs
        )
        results.append(result)
    return results


# ---------------------------------------------------------------- command line


def _row_keys(names: list[str]) -> list[str]:
    choices = {**ROW_GROUPS, **{key: (key,) for key in ROWS}}
    keys: list[str] = []
    for name in names:
        keys += lookup(choices, name, "row")
    return list(dict.fromkeys(keys))


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``reproduce`` options to a parser."""
    parser.add_argument(
        "--rows",
        nargs="+",
        default=["all"],
        metavar="ROW",
        help=f"rows or groups to run (default: all): {', '.join([*ROW_GROUPS, *ROWS])}",
    )
    parser.add_argument(
        "--repeats", type=int, default=None, help="repetitions per row (default: the paper's)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=(
            f"small grids, {QUICK_REPEATS} repetition{'' if QUICK_REPEATS == 1 else 's'}"
            " per row, USPS subsampled (a few minutes)"
        ),
    )
    parser.add_argument("--seed", type=int, default=0, help="base random seed (default 0)")
    parser.add_argument(
        "--first-repeat",
        type=int,
        default=0,
        help="number of the first repetition (default 0): run more repetitions later",
    )
    parser.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="merge the runs.csv of earlier runs into one table in --out (no fitting)",
    )
    parser.add_argument(
        "--usps-train",
        type=int,
        default=None,
        help="subsample the USPS training set to this many digits",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("reproduce-results"), help="output directory"
    )


def _command(args: argparse.Namespace) -> str:
    """The command line that reproduces a run (defaults spelled out)."""
    words = ["python -m bayes_rvm reproduce", "--rows", *args.rows]
    if args.quick:
        words.append("--quick")
    if args.repeats is not None:
        words += ["--repeats", str(args.repeats)]
    if args.usps_train is not None:
        words += ["--usps-train", str(args.usps_train)]
    if args.first_repeat:
        words += ["--first-repeat", str(args.first_repeat)]
    words += ["--seed", str(args.seed), "--out", str(args.out)]
    return " ".join(words)


def run(args: argparse.Namespace) -> int:
    """Run the ``reproduce`` command; returns the exit status."""
    if args.merge:
        results = merge_runs(args.merge)
        seconds = sum(r.seconds for r in results)
        sources = [
            (Path(d) / "table.md").read_text().splitlines()[0]
            if (Path(d) / "table.md").exists()
            else f"`{d}`"
            for d in args.merge
        ]
        header = (
            f"Merged ({sum(len(r.runs) for r in results)} repetitions, fit time {seconds:.0f} "
            "s, the sum over the runs' SVM and RVM searches) from:\n\n"
            + "".join(f"- {line}\n" for line in sources)
        )
        command = " ".join(
            [
                "python -m bayes_rvm reproduce --merge",
                *map(str, args.merge),
                "--out",
                str(args.out),
            ]
        )
        write_outputs(results, args.out, header, command)
        print(markdown(results, header))
        return 0
    if args.first_repeat < 0:
        raise ValueError(f"--first-repeat must be >= 0, got {args.first_repeat}")
    keys = _row_keys(args.rows)
    protocol = PROTOCOLS["quick" if args.quick else "full"]
    if args.usps_train is not None:
        protocol = replace(protocol, usps_train=args.usps_train)
    repeats = args.repeats
    if repeats is None and args.quick:
        repeats = QUICK_REPEATS
    if repeats is not None and repeats < 1:
        raise ValueError(f"--repeats must be >= 1, got {repeats}")
    start = time.perf_counter()

    def header(done: list[RowResult]) -> str:
        status = (
            "complete" if len(done) == len(keys) else f"partial, {len(done)} of {len(keys)} rows"
        )
        return (
            f"`{_command(args)}` ({status}): protocol "
            f"{protocol.name!r}, seed {args.seed}, repetitions "
            f"{'per row as in the paper' if repeats is None else repeats}, run time "
            f"{time.perf_counter() - start:.0f} s, bayes_rvm {bayes_rvm.__version__}.\n"
        )

    def save(done: list[RowResult]) -> None:
        write_outputs(done, args.out, header(done), _command(args))

    results = run_rows(
        keys,
        protocol=protocol,
        repeats=repeats,
        seed=args.seed,
        first_repeat=args.first_repeat,
        on_row_done=save,
    )
    print(markdown(results, header(results)))
    print(f"wrote table.md, table.csv, runs.csv and results.json in {args.out}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``bayes-rvm reproduce`` with the arguments ``argv`` (default: the command line's)."""
    from bayes_rvm.__main__ import main as command_line

    return command_line(["reproduce", *(sys.argv[1:] if argv is None else argv)])
