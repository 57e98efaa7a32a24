"""The RVM beside the models a user would try instead: SVR, a Gaussian process and
scikit-learn's ARDRegression, and the three type-II solvers beside each other.

Sections (``--only``, comma-separated; all by default):

- ``sinc``: noisy sinc, 100 inputs uniform on [-10, 10] with no data in the gap (1, 5),
  noise sd 0.1. Test regions: the data (|x| <= 10 outside the gap), the gap, and away
  from the data (10 < |x| <= 15), noise-free test points 0.005 apart. Tipping (2001), App. D.1:
  with a local kernel the RVM's error bars shrink to the noise level away from its
  relevance vectors, where a GP's return to the prior.
- ``boston``: Boston housing (needs the ``data`` extra), 10 random splits of 405 / 101,
  inputs and targets standardised on the training part.
- ``solvers``: the three solvers of ``RVR`` on the paper's noisy sinc (N = 100, RBF
  gamma = 0.25 plus a bias, data seeds 0-4): iterations, relevance vectors, final log
  evidence and fit time.
- ``width``: the same sinc data (seed 0) fitted with ever narrower kernels, noise learned:
  the log evidence rewards interpolation once each basis function can fit one point.

Models (same RBF kernel ``exp(-gamma |x - x'|^2)`` where there is one):

- ``RVR``: this package, default (sequential) solver; ``gamma`` fixed at 0.25 on sinc
  (the paper's), by 5-fold CV on Boston.
- ``SVR``: scikit-learn, ``C``, ``epsilon`` (and ``gamma`` on Boston) by 5-fold CV.
- ``GP``: scikit-learn ``GaussianProcessRegressor``, constant * RBF + white noise, all
  hyperparameters by its marginal likelihood (3 restarts).
- ``ARD``: scikit-learn ``ARDRegression`` on the RVR's design matrix (an RBF column at
  every training input plus a bias): the same model, fitted by scikit-learn's solver.

Reported: RMSE against the noise-free function (sinc) or the test targets (Boston); the
mean predictive sd (noise included); the coverage of the central 95 % predictive interval
(on sinc the exact probability that a new noisy target falls inside it, from the true
function and noise; on Boston the fraction of test targets inside); the mean log
predictive density (Boston); the number of vectors (RVR relevance vectors, SVR support
vectors, ARD non-zero weights; the GP keeps all N); fit and predict times (median of 3,
models alternating, single-threaded BLAS). SVR has no predictive distribution: its
interval columns are blank.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_models.py [--only sinc,boston,solvers,width]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
from scipy.stats import norm  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.gaussian_process import GaussianProcessRegressor  # noqa: E402
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel  # noqa: E402
from sklearn.linear_model import ARDRegression  # noqa: E402
from sklearn.metrics.pairwise import rbf_kernel  # noqa: E402
from sklearn.model_selection import GridSearchCV, KFold  # noqa: E402
from sklearn.svm import SVR  # noqa: E402

from bayes_rvm import RVR  # noqa: E402

NOISE = 0.1
GAP = (1.0, 5.0)
Z95 = norm.ppf(0.975)


class _ARD:
    """ARDRegression on an RBF design (kernel columns at the training inputs, plus a bias)."""

    def __init__(self, gamma: float):
        self.gamma = gamma

    def _design(self, X):
        return rbf_kernel(X, self.X_, gamma=self.gamma)

    def fit(self, X, y):
        self.X_ = X
        self.model_ = ARDRegression(fit_intercept=True).fit(self._design(X), y)
        return self

    def predict(self, X, return_std=False):
        return self.model_.predict(self._design(X), return_std=return_std)

    @property
    def n_vectors(self) -> int:
        return int(np.count_nonzero(self.model_.coef_))


def _gp():
    kernel = ConstantKernel(1.0) * RBF(1.0) + WhiteKernel(0.1)
    return GaussianProcessRegressor(kernel, n_restarts_optimizer=3, random_state=0)


def _svr(gammas, cv) -> GridSearchCV:
    grid = {"C": [0.1, 1, 10, 100], "epsilon": [0.01, 0.05, 0.1, 0.3], "gamma": gammas}
    return GridSearchCV(SVR(kernel="rbf"), grid, cv=cv, scoring="neg_mean_squared_error")


def _n_vectors(name: str, model) -> int:
    if name == "RVR":
        return len(model.relevance_indices_)
    if name == "SVR":
        return len(model.best_estimator_.support_)
    if name == "ARD":
        return model.n_vectors
    return model.X_train_.shape[0]


def _settings(name: str, model) -> str:
    """The hyperparameters a model chose for itself."""
    if name == "SVR":
        return ", ".join(f"{k} = {v:g}" for k, v in model.best_params_.items())
    if name == "GP":
        return str(model.kernel_)
    if name == "RVR":
        return f"noise sd {model.noise_var_**0.5:.3f}"
    return f"noise sd {model.model_.alpha_**-0.5:.3f}"


def _timed(make, X, y, X_test, repeats):
    """Median fit and predict times of ``repeats`` fits; the last model and predictions."""
    fits, predicts = [], []
    for _ in range(repeats):
        model = make()
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X, y)
        fits.append(time.perf_counter() - start)
        start = time.perf_counter()
        if isinstance(model, GridSearchCV):
            mean, std = model.predict(X_test), None
        else:
            mean, std = model.predict(X_test, return_std=True)
        predicts.append(time.perf_counter() - start)
    return model, mean, std, float(np.median(fits)), float(np.median(predicts))


def _models(gamma_rvr, svr_gammas, cv):
    return {
        "RVR": lambda: RVR(kernel="rbf", gamma=gamma_rvr),
        "SVR": lambda: _svr(svr_gammas, cv),
        "GP": _gp,
        "ARD": lambda: _ARD(gamma_rvr),
    }


def sinc(repeats: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(-10, 10, 400)
    x = x[(x <= GAP[0]) | (x >= GAP[1])][:100]
    X = x[:, None]
    y = np.sinc(x / np.pi) + rng.normal(0, NOISE, x.size)
    grid = np.linspace(-15, 15, 6001)
    inside = (np.abs(grid) <= 10) & ((grid <= GAP[0]) | (grid >= GAP[1]))
    regions = {
        "data": grid[inside],
        "gap": grid[(grid > GAP[0]) & (grid < GAP[1])],
        "away": grid[np.abs(grid) > 10],
    }
    X_test = np.concatenate(list(regions.values()))[:, None]
    f_test = np.sinc(X_test[:, 0] / np.pi)
    print(f"## sinc with a gap: N = {x.size}, no inputs in {GAP}, noise sd {NOISE}\n")
    cv = KFold(5, shuffle=True, random_state=0)
    cost = ["| model | vectors | fit (s) | predict (s) | settings |", "|---|---|---|---|---|"]
    quality = ["| model | region | RMSE | mean sd | 95 % coverage |", "|---|---|---|---|---|"]
    for name, make in _models(0.25, [0.25], cv).items():
        model, mean, std, fit_s, pred_s = _timed(make, X, y, X_test, repeats)
        cost.append(
            f"| {name} | {_n_vectors(name, model)} | {fit_s:.3f} | {pred_s:.4f} "
            f"| {_settings(name, model)} |"
        )
        start = 0
        for region, xs in regions.items():
            part = slice(start, start + xs.size)
            start += xs.size
            err = mean[part] - f_test[part]
            cells = [name, region, f"{np.sqrt(np.mean(err**2)):.4f}"]
            if std is None:
                cells += ["", ""]
            else:
                s = std[part]
                # P(|y - mean| < z s) for a new target y ~ N(f, NOISE^2)
                cover = norm.cdf((Z95 * s - err) / NOISE) - norm.cdf((-Z95 * s - err) / NOISE)
                cells += [f"{np.mean(s):.3f}", f"{100 * np.mean(cover):.1f} %"]
            quality.append("| " + " | ".join(cells) + " |")
    print("\n".join(cost) + "\n\n" + "\n".join(quality) + "\n")


def boston(repeats: int, splits: int) -> None:
    from bayes_rvm.datasets import load_boston

    data = load_boston()
    X_all, y_all = data.X, data.y
    gammas = [2.0**k / X_all.shape[1] for k in range(-4, 2)]
    rows: dict[str, list] = {}
    for split in range(splits):
        rng = np.random.default_rng(split)
        order = rng.permutation(len(y_all))
        train, test = order[:405], order[405:]
        mu_x, sd_x = X_all[train].mean(0), X_all[train].std(0)
        mu_y, sd_y = y_all[train].mean(), y_all[train].std()
        X, X_test = (X_all[train] - mu_x) / sd_x, (X_all[test] - mu_x) / sd_x
        y, y_test = (y_all[train] - mu_y) / sd_y, y_all[test]
        cv = KFold(5, shuffle=True, random_state=split)
        search = GridSearchCV(
            RVR(kernel="rbf"), {"gamma": gammas}, cv=cv, scoring="neg_mean_squared_error"
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            gamma = search.fit(X, y).best_params_["gamma"]
        for name, make in _models(gamma, gammas, cv).items():
            model, mean, std, fit_s, pred_s = _timed(make, X, y, X_test, repeats)
            mean = mu_y + sd_y * mean
            row = {
                "rmse": np.sqrt(np.mean((mean - y_test) ** 2)),
                "vectors": _n_vectors(name, model),
                "fit": fit_s,
                "predict": pred_s,
            }
            if std is not None:
                std = sd_y * std
                row["sd"] = np.mean(std)
                row["cover"] = 100 * np.mean(np.abs(y_test - mean) <= Z95 * std)
                row["lpd"] = np.mean(norm.logpdf(y_test, mean, std))
            rows.setdefault(name, []).append(row)
    print(f"## Boston housing: {splits} random splits 405 / 101, mean (sd) over splits\n")
    print(
        "| model | RMSE (k$) | mean sd (k$) | 95 % coverage | log density | vectors "
        "| fit (s) | predict (s) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, runs in rows.items():

        def cell(key, fmt, runs=runs):
            if key not in runs[0]:
                return ""
            values = np.array([r[key] for r in runs], dtype=float)
            return f"{values.mean():{fmt}} ({values.std():{fmt}})"

        cells = [
            name,
            cell("rmse", ".2f"),
            cell("sd", ".2f"),
            cell("cover", ".1f"),
            cell("lpd", ".2f"),
            cell("vectors", ".0f"),
            cell("fit", ".2f"),
            cell("predict", ".4f"),
        ]
        print("| " + " | ".join(cells) + " |")
    print()


def solvers(repeats: int) -> None:
    print("## The three solvers on noisy sinc (N = 100, RBF gamma = 0.25 plus a bias)\n")
    print("| data seed | solver | iterations | relevance vectors | log evidence | fit (s) |")
    print("|---|---|---|---|---|---|")
    X = np.linspace(-10, 10, 100)[:, None]
    for seed in range(5):
        y = np.sinc(X[:, 0] / np.pi) + np.random.default_rng(seed).normal(0, NOISE, 100)
        for solver in ("sequential", "mackay", "em"):
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    model = RVR(kernel="rbf", gamma=0.25, solver=solver).fit(X, y)
                times.append(time.perf_counter() - start)
            print(
                f"| {seed} | {solver} | {model.n_iter_} | {len(model.relevance_indices_)} "
                f"| {model.log_evidence_:.3f} | {np.median(times):.3f} |"
            )
    print()


def width() -> None:
    print("## Narrow kernels on noisy sinc (N = 100, data seed 0, noise sd 0.1)\n")
    print("| gamma | solver | relevance vectors | noise sd | log evidence |")
    print("|---|---|---|---|---|")
    X = np.linspace(-10, 10, 100)[:, None]
    y = np.sinc(X[:, 0] / np.pi) + np.random.default_rng(0).normal(0, NOISE, 100)
    for gamma in (0.25, 4.0, 25.0, 100.0):
        for solver in ("sequential", "mackay"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model = RVR(kernel="rbf", gamma=gamma, solver=solver).fit(X, y)
            print(
                f"| {gamma:g} | {solver} | {len(model.relevance_indices_)} "
                f"| {model.noise_var_**0.5:.2g} | {model.log_evidence_:.2f} |"
            )
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="sinc,boston,solvers,width")
    parser.add_argument("--repeats", type=int, default=3, help="fits per model for the times")
    parser.add_argument("--splits", type=int, default=10, help="Boston train/test splits")
    args = parser.parse_args()
    sections = args.only.split(",")
    if "sinc" in sections:
        sinc(args.repeats)
    if "boston" in sections:
        boston(args.repeats, args.splits)
    if "solvers" in sections:
        solvers(args.repeats)
    if "width" in sections:
        width()


if __name__ == "__main__":
    main()
