"""The table's rows: the paper's numbers, the data draws of App. E, the error units and the
cross-validation protocols (the grids searched and the fit settings)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bayes_rvm import datasets


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
