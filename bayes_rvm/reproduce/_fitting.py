"""Fitting a row: the SVM's and the RVM's grid searches, the final fits and their error and
vector counts, over the repetitions of each row (:func:`run_rows`)."""

from __future__ import annotations

import math
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import clone
from sklearn.compose import TransformedTargetRegressor
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.svm import SVC, SVR

from bayes_rvm.estimators import RVC, RVR
from bayes_rvm.reproduce._rows import ROWS, Protocol, Row, Split
from bayes_rvm.solvers import InterpolationWarning

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
