"""Full Bayes on noisy sinc: parameterisations x NUTS samplers, and evidence vs MCMC vs VI.

Run from the repository root (single-threaded BLAS, a stable PyTensor cache):

    PYTENSOR_FLAGS=base_compiledir=$HOME/.cache/bayes_rvm/pytensor OMP_NUM_THREADS=1 \\
    OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 python benchmarks/bench_sampling.py

Data: sinc(x) on 100 equally spaced points of [-10, 10] plus uniform noise on [-0.2, 0.2]
(Tipping 2001, Sec. 4.1); RBF basis with gamma = 0.25 plus a bias (M = 101). Test set: 1000
fresh noisy points. Prior: alpha_i ~ Gamma(2, 2 s^2) with s = sd(t) (weights of the size of
the targets), beta ~ Gamma(2, 2 sigma^2) with sigma = sd(t) / 2.

Table 1: for every parameterisation and installed NUTS sampler: divergences, max r_hat,
min bulk ESS over log alpha and log beta, the wall time of bayes_rvm.sample() (compilation,
tuning, draws, exact w draws, predictions) and PyMC's sampling time (tuning and draws), the
ESS per second of each, and the ratio of the collapsed form's ESS/s to the non-centred
form's (the reference, measured in the same run).
Table 2: predictive RMSE, mean predictive sd, mean log predictive density, 95% coverage
on the test set and elpd_loo on the training set, for the evidence fits and the full-Bayes
fits (MCMC with PyMC's NUTS, ADVI and full-rank ADVI of the collapsed model, and the
variational RVM ``fit_vi(method="vb")``).
Table 3: every VI fit against the collapsed MCMC fit: ratios of predictive RMSE and mean
predictive sd, the posterior mean of beta, and the wall time.
"""

from __future__ import annotations

import argparse
import importlib.util

import numpy as np

import bayes_rvm as br
from bayes_rvm.inference import NUTS_SAMPLERS
from bayes_rvm.kernels import RBF


def sinc_problem(n: int = 100, n_test: int = 1000, seed: int = 1):
    rng = np.random.default_rng(seed)
    x = np.linspace(-10, 10, n)[:, None]
    t = np.sinc(x[:, 0] / np.pi) + rng.uniform(-0.2, 0.2, n)
    x_test = rng.uniform(-10, 10, (n_test, 1))
    t_test = np.sinc(x_test[:, 0] / np.pi) + rng.uniform(-0.2, 0.2, n_test)
    kernel = RBF(0.25)

    def design(x_new):
        return np.column_stack([kernel(x_new, x), np.ones(x_new.shape[0])])

    return design(x), t, design(x_test), t_test


def prior_for(t):
    s = float(np.std(t))
    sigma = s / 2
    return {"a": 2.0, "b": 2.0 * s**2, "c": 2.0, "d": 2.0 * sigma**2}


def sampling_table(Phi, t, Phi_test, prior, args):
    samplers = [s for s, mod in NUTS_SAMPLERS.items() if not mod or importlib.util.find_spec(mod)]
    samplers = [s for s in samplers if s in args.samplers]
    missing = [s for s in NUTS_SAMPLERS if s not in samplers]
    rows, fits = [], {}
    for parameterization in args.forms:
        target_accept = args.target_accept
        if parameterization == "collapsed" and args.target_accept_collapsed is not None:
            target_accept = args.target_accept_collapsed
        for sampler in samplers:
            model = br.build_model(Phi, t, parameterization=parameterization, **prior)
            fit = br.sample(
                model,
                draws=args.draws,
                tune=args.tune,
                chains=args.chains,
                cores=1,
                random_seed=args.seed,
                nuts_sampler=sampler,
                target_accept=target_accept,
                compute_convergence_checks=False,
                progressbar=False,
                Phi_new=Phi_test,
            )
            stats = _diagnostics(fit)
            rows.append(
                {"form": parameterization, "accept": target_accept, "sampler": sampler, **stats}
            )
            fits[(parameterization, target_accept, sampler)] = fit
            print(_format_row(rows[-1]), flush=True)
    return rows, fits, missing


def _diagnostics(fit):
    import arviz as az
    import xarray as xr

    posterior = fit["posterior"]
    hyper = xr.Dataset(
        {"log_alpha": np.log(posterior["alpha"]), "log_beta": np.log(posterior["beta"])}
    )
    ess = az.ess(hyper, method="bulk")
    r_hat = az.rhat(hyper)
    min_ess = min(float(ess[v].min()) for v in hyper.data_vars)
    stats = fit["sample_stats"]
    # tuning + draws (PyMC's NUTS); nutpie and numpyro do not report it: their whole call
    sampling = float(posterior.attrs.get("sampling_time", np.nan))
    wall = fit.attrs["wall_time"]
    return {
        "divergences": int(stats["diverging"].sum()),
        "max_r_hat": max(float(r_hat[v].max()) for v in hyper.data_vars),
        "min_ess_bulk": min_ess,
        "wall_s": wall,
        "sampling_s": sampling,
        "ess_per_s_wall": min_ess / wall,
        "ess_per_s_sampling": min_ess / sampling,
        "mean_leapfrog": float(stats["n_steps"].mean()) if "n_steps" in stats else np.nan,
    }


HEADER = (
    "| form | target_accept | sampler | divergences | max r_hat | min bulk ESS | wall s "
    "| sampling s | ESS/s (wall) | ESS/s (sampling) | leapfrog/draw |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|"
)


def _format_row(row):
    return (
        f"| {row['form']} | {row['accept']} | {row['sampler']} | {row['divergences']} "
        f"| {row['max_r_hat']:.3f} "
        f"| {row['min_ess_bulk']:.0f} | {row['wall_s']:.1f} | {row['sampling_s']:.1f} "
        f"| {row['ess_per_s_wall']:.1f} | {row['ess_per_s_sampling']:.1f} "
        f"| {row['mean_leapfrog']:.0f} |"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=2001)
    parser.add_argument("--target-accept", type=float, default=0.95)
    parser.add_argument("--vi-steps", type=int, default=30_000)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument(
        "--target-accept-collapsed",
        type=float,
        default=None,
        help="target_accept of the collapsed form (default: --target-accept)",
    )
    parser.add_argument("--samplers", nargs="+", default=list(NUTS_SAMPLERS))
    parser.add_argument("--forms", nargs="+", default=["collapsed", "noncentred", "centred"])
    parser.add_argument("--no-ripley", action="store_true")
    args = parser.parse_args(argv)

    Phi, t, Phi_test, t_test = sinc_problem()
    prior = prior_for(t)
    print(f"noisy sinc N={Phi.shape[0]}, M={Phi.shape[1]}, prior {prior}\n")
    print(HEADER, flush=True)
    rows, fits, missing = sampling_table(Phi, t, Phi_test, prior, args)
    if missing:
        print(f"\nnot installed (optional extra 'samplers'): {', '.join(missing)}")
    for sampler in sorted({row["sampler"] for row in rows}):
        reference = next(
            (r for r in rows if r["sampler"] == sampler and r["form"] == "noncentred"), None
        )
        for row in rows:
            if reference is not None and row["sampler"] == sampler and row["form"] == "collapsed":
                ratios = ", ".join(
                    f"{row[key] / reference[key]:.2f} ({key})"
                    for key in ("ess_per_s_wall", "ess_per_s_sampling")
                )
                print(
                    f"{sampler}: collapsed (target_accept {row['accept']}) / non-centred "
                    f"(target_accept {reference['accept']}): {ratios}"
                )

    # Table 2: the headline comparison on test data
    comparison_fits = {}
    for name, prior_used in (("evidence (a=b=c=d=0)", None), ("evidence (same prior)", prior)):
        result = br.fit_type2(Phi, t, **(prior_used or {}))
        comparison_fits[name] = br.to_inference_data(
            result, Phi, t, X_new=Phi_test, draws=2 * args.draws, random_seed=args.seed
        )
    for (form, _, sampler), fit in fits.items():
        if sampler == "pymc" and form in ("collapsed", "noncentred"):
            comparison_fits[f"MCMC {form}"] = fit
    collapsed = br.build_model(Phi, t, **prior)
    vi_fits = {}
    for method in ("advi", "fullrank_advi", "vb"):
        name = f"{method} (collapsed)" if method != "vb" else "vb"
        vi_fits[name] = br.fit_vi(
            collapsed,
            method=method,
            n=args.vi_steps,
            draws=2 * args.draws,
            random_seed=args.seed,
            Phi_new=Phi_test,
            progressbar=False,
        )
        print(f"{name}: {vi_fits[name].attrs['wall_time']:.2f} s", flush=True)
    comparison_fits.update(vi_fits)
    table = br.compare(comparison_fits, t_test).predictive
    print(
        "\n| fit | RMSE | mean sd | log pred. density | 95% coverage | elpd_loo (train) |\n"
        "|---|---|---|---|---|---|"
    )
    for name, row in table.iterrows():
        print(
            f"| {name} | {row['rmse']:.4f} | {row['mean_sd']:.4f} | {row['lpd']:.4f} "
            f"| {row['coverage']:.3f} | {row['elpd_loo']:.1f} |"
        )
    reference = "MCMC collapsed" if "MCMC collapsed" in table.index else None
    if reference is not None:
        mcmc_beta = float(comparison_fits[reference]["posterior"]["beta"].mean())
        print(
            f"\nVI against {reference} (posterior mean of beta {mcmc_beta:.1f})\n\n"
            "| fit | RMSE / MCMC | mean sd / MCMC | mean beta | beta / MCMC | wall s |\n"
            "|---|---|---|---|---|---|"
        )
        for name, fit in vi_fits.items():
            beta = float(fit["posterior"]["beta"].mean())
            print(
                f"| {name} | {table.loc[name, 'rmse'] / table.loc[reference, 'rmse']:.3f} "
                f"| {table.loc[name, 'mean_sd'] / table.loc[reference, 'mean_sd']:.3f} "
                f"| {beta:.1f} | {beta / mcmc_beta:.3f} | {fit.attrs['wall_time']:.2f} |"
            )
    if not args.no_ripley:
        ripley_table(args)


def ripley_table(args):
    """Evidence (RVC, Laplace) vs MCMC vs ADVI on Ripley's data, over the relevance vectors."""
    if not hasattr(br, "RVC"):
        print("\nRipley: bayes_rvm.RVC is not available in this tree; skipped")
        return
    from bayes_rvm import datasets

    data = datasets.load_ripley()
    X, y, X_test = data.X_train, data.y_train, data.X_test
    rvc = br.RVC(kernel="rbf", gamma=4.0).fit(X, y)  # width 0.5 as in Tipping (2001)
    fits = {
        "evidence (Laplace)": br.to_inference_data(
            rvc, X, y, X_new=X_test, basis="relevant", draws=2 * args.draws, random_seed=1
        )
    }
    model = br.model_from_estimator(rvc, X, y, basis="relevant", a=2.0, b=2.0 * 3.0**2)
    fits["MCMC noncentred"] = br.sample(
        model,
        draws=args.draws,
        tune=args.tune,
        random_seed=args.seed,
        target_accept=args.target_accept,
        chains=args.chains,
        cores=1,
        X_new=X_test,
        compute_convergence_checks=False,
        progressbar=False,
    )
    for method in ("advi", "fullrank_advi"):
        try:
            fits[method.upper()] = br.fit_vi(
                model,
                method=method,
                n=args.vi_steps,
                draws=2 * args.draws,
                random_seed=1,
                X_new=X_test,
                progressbar=False,
            )
        except FloatingPointError as err:
            print(f"{method} on Ripley failed: {str(err).splitlines()[0]}")
    comparison = br.compare(fits, (data.y_test == rvc.classes_[1]).astype(float))
    print(
        f"\nRipley (N=250, test 1000): {rvc.relevance_indices_.size} relevance vectors, "
        f"prior a=2, b=18 on alpha\n\n| fit | error rate | Brier | log pred. density |\n"
        "|---|---|---|---|"
    )
    for name, row in comparison.predictive.iterrows():
        print(f"| {name} | {row['error_rate']:.3f} | {row['brier']:.4f} | {row['lpd']:.4f} |")
    print(comparison.diagnostics.to_string())


if __name__ == "__main__":
    main()
