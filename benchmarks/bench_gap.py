"""How much do the error bars grow in a gap? The sd ratio against the gap width in length scales.

Run from the repository root (single-threaded BLAS):

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
    python benchmarks/bench_gap.py [--widths 0.5 1 2 3 4 6 8] [--length-scale 1.0] \\
    [--centre 4.0] [--seeds 5] [--out table.md]

Data: ``sinc(x)`` plus N(0, 0.1^2) noise, 100 training inputs uniform on [-10, 10] outside
the gap ``(centre - W/2, centre + W/2)`` (as ``sinc_gap`` of ``bench_coverage.py``, which
has ``W = 4`` around ``x = 4``); targets standardised with the training mean and sd.

The kernel width is held fixed so that the gap can be measured in kernel length scales:
every RVR uses ``exp(-(x - x')^2 / (2 l^2))`` (``gamma = 1 / (2 l^2)``) with
``l = --length-scale``, and the ratio is reported against ``W / l``. Rows:

- ``paper``: Tipping (2001) eq. 21-22 over the relevance vectors;
- ``augmented``: the RVM* (:func:`bayes_rvm.augmented.augmented_predictive`);
- ``GP, same l``: ``GaussianProcessRegressor`` with the RVR's kernel, length scale held at
  ``l``, signal variance and noise by the marginal likelihood: the GP that the RVM*
  stands in for;
- ``GP, own l``: the same with the length scale fitted too (3 restarts), as in
  ``bench_coverage.py``; its ``W / l`` in its own length scales is in the last column.

``gap x`` is the predictive sd at the gap centre over the median sd at the training inputs
(median over the seeds, minimum and maximum in brackets); ``ceiling`` is
``sqrt(var(t) beta)``, the ratio of the prior-plus-noise sd to the RVR's noise sd, which
no predictive of this model can exceed by much: a predictive reaches 2x in a gap only where
its posterior variance there is at least three times the noise variance.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from bayes_rvm import RVR

NOISE = 0.1
N_TRAIN = 100


def gap_data(rng, centre: float, width: float):
    """Noisy sinc on [-10, 10] with no training input in the gap; standardised targets."""
    x = rng.uniform(-10, 10, 10 * N_TRAIN)
    x = x[np.abs(x - centre) >= width / 2][:N_TRAIN]
    t = np.sinc(x / np.pi) + rng.normal(0, NOISE, x.size)
    return x[:, None], (t - t.mean()) / t.std()


def _ratio(sd_train, sd_centre) -> float:
    return float(sd_centre / np.median(sd_train))


def run(width: float, length_scale: float, centre: float, seed: int) -> dict:
    """sd ratios at the gap centre for one training set."""
    X, t = gap_data(np.random.default_rng([seed, round(100 * width)]), centre, width)
    X_centre = np.array([[centre]])
    rvr = RVR(gamma=1.0 / (2.0 * length_scale**2)).fit(X, t)
    row = {}
    for predictive in ("paper", "augmented"):
        sd_train = rvr.predict(X, return_std=True, predictive=predictive)[1]
        sd_centre = rvr.predict(X_centre, return_std=True, predictive=predictive)[1][0]
        row[predictive] = _ratio(sd_train, sd_centre)
    row["ceiling"] = float(np.sqrt(np.var(t) / rvr.noise_var_))
    for label, bounds, restarts in (("GP, same l", "fixed", 0), ("GP, own l", (1e-2, 1e2), 3)):
        kernel = ConstantKernel(1.0) * RBF(length_scale, bounds) + WhiteKernel(0.1)
        gp = GaussianProcessRegressor(kernel, n_restarts_optimizer=restarts, random_state=seed)
        gp.fit(X, t)
        sd_train = gp.predict(X, return_std=True)[1]
        row[label] = _ratio(sd_train, gp.predict(X_centre, return_std=True)[1][0])
        if restarts:
            row["own l"] = float(gp.kernel_.k1.k2.length_scale)
    return row


def _cell(values) -> str:
    values = np.asarray(values)
    if values.size == 1:
        return f"{values[0]:.2f}"
    return f"{np.median(values):.2f} [{values.min():.2f}, {values.max():.2f}]"


COLUMNS = ("paper", "augmented", "GP, same l", "GP, own l", "ceiling")


def table(results: dict, length_scale: float) -> str:
    lines = [
        "| W / l | W | " + " | ".join(COLUMNS) + " | W / own l |",
        "|---" * (len(COLUMNS) + 3) + "|",
    ]
    for width, rows in results.items():
        cells = [_cell([r[c] for r in rows]) for c in COLUMNS]
        own = _cell([width / r["own l"] for r in rows])
        lines.append(
            f"| {width / length_scale:.2f} | {width:g} | " + " | ".join(cells) + f" | {own} |"
        )
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--widths", type=float, nargs="+", default=[0.5, 1, 2, 3, 4, 6, 8])
    parser.add_argument("--length-scale", type=float, default=1.0)
    parser.add_argument("--centre", type=float, default=4.0)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args(argv)
    if np.any(np.abs(args.centre) + np.asarray(args.widths) / 2 > 10):
        parser.error("the gap must lie inside [-10, 10]")
    warnings.filterwarnings("ignore", module="sklearn.gaussian_process")
    results = {
        width: [run(width, args.length_scale, args.centre, seed) for seed in range(args.seeds)]
        for width in args.widths
    }
    text = table(results, args.length_scale)
    print(text)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")


if __name__ == "__main__":
    main()
