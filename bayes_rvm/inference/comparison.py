"""Fits side by side: predictions, relevant sets, diagnostics (:func:`compare`)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr
from scipy.special import log_softmax, logsumexp

from bayes_rvm import _linalg
from bayes_rvm._validation import (
    check_target,
)
from bayes_rvm.inference._draws import (
    _flat,
    _log_density,
    _loo_gaussian,
    _numpy_rng,
)
from bayes_rvm.inference._graph import graph_draws, observed_is_binary
from bayes_rvm.inference.export import _Fitted, _fitted
from bayes_rvm.inference.prediction import _model_of, package_likelihood, predict
from bayes_rvm.posterior import gaussian_posterior, precision_factor


@dataclass(frozen=True)
class Comparison:
    """Tables from :func:`compare` (tidy pandas DataFrames, one row per fit or per basis).

    Attributes
    ----------
    predictive : DataFrame
        Per fit, on the test data: ``rmse`` of the predictive mean, ``mean_sd``
        (predictive sd averaged over the test points), ``lpd`` (mean log predictive
        density) and ``coverage`` of the central predictive interval (regression);
        ``error_rate``, ``brier`` and ``lpd`` (classification). On the training data:
        ``elpd_loo`` and its standard error ``elpd_loo_se`` (NaN where not available), and
        ``loo``, which says how it was computed.
    basis : DataFrame
        Per fit and basis function (and class): mean and sd of ``log alpha`` and ``w``, the
        central interval of ``w``, the posterior mean of the shrinkage factor
        ``gamma_i = 1 - alpha_i Sigma_ii`` (Tipping 2001, eq. 17: 1 for a weight the data
        determine, 0 for one the prior pins to zero) and ``p_relevant``, the posterior
        probability that ``gamma_i > 1/2`` (Gaussian likelihood; NaN otherwise).
    diagnostics : DataFrame
        Per fit: what kind of fit it is, divergences, largest ``r_hat``, smallest bulk and
        tail ESS over ``log alpha`` and ``log beta`` ("n/a" for fits whose draws are not
        Markov chains), the wall time of the fitting call (compilation included), PyMC's
        sampling time (tuning and draws) and the smallest bulk ESS per second of sampling
        time.
    """

    predictive: pd.DataFrame
    basis: pd.DataFrame
    diagnostics: pd.DataFrame


def _class_codes(tree, likelihood: str, t_test) -> np.ndarray:
    """Test labels as the codes of the tree's classes (labels of any type are accepted)."""
    labels = np.asarray(t_test).reshape(-1)
    if likelihood == "categorical":
        classes = tree["posterior"]["class"].values
    elif "classes" in tree.attrs:
        classes = np.asarray(tree.attrs["classes"])
    else:
        classes = np.array([0, 1])
    if labels.dtype.kind in "iuf" and classes.dtype.kind in "iuf":
        known = np.isin(labels, classes)
    else:
        labels, classes = labels.astype(str), classes.astype(str)
        known = np.isin(labels, classes)
    if not np.all(known):
        raise ValueError(
            f"expected test labels among the fit's classes {classes.tolist()}, got "
            f"{sorted(set(labels[~known].tolist()))}"
        )
    order = np.argsort(classes)
    return order[np.searchsorted(classes, labels, sorter=order)].astype(np.int64)


def _predictive_row(tree, likelihood: str, t_test, level: float) -> dict:
    f = _flat(tree["predictions"]["f"])
    if f.shape[1] != np.asarray(t_test).reshape(-1).size:
        raise ValueError(
            f"the predictions hold {f.shape[1]} test points but t_test has "
            f"{np.asarray(t_test).reshape(-1).size}"
        )
    n_draws = f.shape[0]
    if likelihood in ("bernoulli", "categorical"):
        codes = _class_codes(tree, likelihood, t_test)
        if likelihood == "bernoulli":
            f = np.stack([np.zeros_like(f), f], axis=-1)  # logits of classes 0 and 1
        log_p = logsumexp(log_softmax(f, axis=-1), axis=0) - np.log(n_draws)  # (N, K)
        p = np.exp(log_p)
        onehot = np.eye(p.shape[1])[codes]
        squared = (p - onehot) ** 2
        return {
            "error_rate": float(np.mean(np.argmax(p, axis=1) != codes)),
            # binary: mean (p_1 - t)^2; K classes: mean over points of the sum over classes
            "brier": float(
                np.mean(squared[:, 1] if likelihood == "bernoulli" else squared.sum(1))
            ),
            "lpd": float(np.mean(log_p[np.arange(codes.size), codes])),
        }
    t_test = check_target(t_test, f.shape[1], "t_test")
    posterior = tree["posterior"]
    beta = _flat(posterior["beta"])
    nu = _flat(posterior["nu"]) if "nu" in posterior else None
    t_new = _flat(tree["predictions"]["t"])
    mean = f.mean(axis=0)
    if likelihood == "gaussian":
        # the mixture variance: var_s f_s + mean_s 1/beta_s (Tipping 2001, eq. 22 per draw)
        sd = np.sqrt(f.var(axis=0) + np.mean(1.0 / beta))
    else:
        sd = t_new.std(axis=0)
    # log of the Monte Carlo mixture (1/S) sum_s p(t* | f_s, beta_s)
    lpd = logsumexp(_log_density(likelihood, f, t_test, beta, nu), axis=0) - np.log(n_draws)
    lower, upper = np.quantile(t_new, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return {
        "rmse": float(np.sqrt(np.mean((mean - t_test) ** 2))),
        "mean_sd": float(np.mean(sd)),
        "lpd": float(np.mean(lpd)),
        "coverage": float(np.mean((t_test >= lower) & (t_test <= upper))),
    }


def _exact_evidence_loo(tree) -> np.ndarray:
    """``log p(t_n | t_-n, alpha, beta)`` at the type-II estimates held by an evidence tree."""
    alpha = _flat(tree["posterior"]["alpha"])[0]
    beta = float(_flat(tree["posterior"]["beta"])[0])
    active = np.isfinite(alpha)  # pruned columns: alpha = inf, no part in the marginal
    Phi = tree["constant_data"]["Phi"].values[:, active]
    t = tree["observed_data"]["t"].values
    # Tipping (2001) eq. 12-13 over the active columns
    L, mu = gaussian_posterior(Phi.T @ Phi, Phi.T @ t, alpha[active], beta)
    return _loo_gaussian(Phi, t, mu, L, beta)


def _loo_row(tree) -> dict:
    """elpd_loo of a fit: PSIS-LOO of the draws, exact for evidence fits, else n/a."""
    row = {"elpd_loo": np.nan, "elpd_loo_se": np.nan, "loo": "n/a: no log_likelihood group"}
    if "log_likelihood" not in tree.children:
        return row
    if tree.attrs.get("fit") == "evidence":
        if tree.attrs.get("likelihood") != "gaussian":
            return {**row, "loo": "n/a: no exact leave-one-out form (classification)"}
        terms = _exact_evidence_loo(tree)
        return {
            "elpd_loo": float(terms.sum()),
            "elpd_loo_se": float(np.sqrt(terms.size * terms.var())),
            "loo": "exact, conditional on the type-II alpha, beta (optimistic)",
        }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = az.loo(tree)
    return {
        "elpd_loo": float(result.elpd),
        "elpd_loo_se": float(result.se),
        "loo": f"PSIS-LOO (max Pareto k {float(np.max(result.pareto_k)):.2f})",
    }


def _shrinkage(tree, fitted: _Fitted, max_draws: int = 200) -> np.ndarray | None:
    """``gamma_i = 1 - alpha_i Sigma_ii(alpha, beta)`` per draw (up to ``max_draws``)."""
    if fitted.likelihood != "gaussian":
        return None
    alpha = _flat(tree["posterior"]["alpha"])
    beta = _flat(tree["posterior"]["beta"]).reshape(-1)
    pick = np.unique(np.linspace(0, alpha.shape[0] - 1, min(max_draws, alpha.shape[0])).round())
    # draws that repeat (alpha, beta), e.g. every draw of an evidence fit, share one factor
    hyper, rows = np.unique(
        np.column_stack([alpha[pick.astype(int)], beta[pick.astype(int)]]),
        axis=0,
        return_inverse=True,
    )
    gram = fitted.Phi.T @ fitted.Phi
    distinct = np.zeros((hyper.shape[0], alpha.shape[1]))
    for row, (alpha_s, beta_s) in enumerate(zip(hyper[:, :-1], hyper[:, -1], strict=True)):
        active = np.isfinite(alpha_s)  # pruned columns of evidence fits: gamma = 0
        L = precision_factor(gram[np.ix_(active, active)], alpha_s[active], beta_s)
        # Tipping (2001) eq. 17: gamma_i = 1 - alpha_i Sigma_ii
        distinct[row, active] = 1.0 - alpha_s[active] * _linalg.inverse_diag(L)
    return distinct[rows.reshape(-1)]


def _basis_rows(name: str, tree, fitted: _Fitted | None, level: float) -> pd.DataFrame:
    """Per basis function: log alpha, w and (Gaussian likelihood of a model the package
    declared, ``fitted``) the shrinkage factors."""
    posterior = tree["posterior"]
    log_alpha = _flat(np.log(posterior["alpha"].transpose("chain", "draw", ...)))
    w = _flat(posterior["w"].transpose("chain", "draw", ...))
    with np.errstate(invalid="ignore"):  # inf - inf for pruned columns of evidence fits
        log_alpha_sd = np.where(np.isinf(log_alpha[0]), 0.0, log_alpha.std(axis=0))
    lower, upper = np.quantile(w, [(1 - level) / 2, (1 + level) / 2], axis=0)
    gamma = None if fitted is None else _shrinkage(tree, fitted)
    nan = np.full(w.shape[1:], np.nan)
    columns = {
        "log_alpha_mean": log_alpha.mean(axis=0),
        "log_alpha_sd": log_alpha_sd,
        "w_mean": w.mean(axis=0),
        "w_sd": w.std(axis=0),
        "w_lower": lower,
        "w_upper": upper,
        "shrinkage": nan if gamma is None else gamma.mean(axis=0),
        "p_relevant": nan if gamma is None else np.mean(gamma > 0.5, axis=0),
    }
    index = {"basis": posterior["basis"].values}
    if w.ndim == 3:  # categorical: basis x class
        grid = np.meshgrid(posterior["basis"].values, posterior["class"].values, indexing="ij")
        index = {"basis": grid[0].ravel(), "class": grid[1].ravel()}
        columns = {key: value.ravel() for key, value in columns.items()}
    return pd.DataFrame({"fit": name, **index, **columns})


def _diagnostics_row(tree) -> dict:
    nan = float("nan")
    row = {
        "kind": tree.attrs.get("fit", "mcmc"),
        "method": tree.attrs.get("method", "unknown"),
        "divergences": "n/a",
        "max_r_hat": "n/a",
        "min_ess_bulk": "n/a",
        "min_ess_tail": "n/a",
        "wall_time": tree.attrs.get("wall_time", nan),
        "sampling_time": nan,
        "ess_bulk_per_second": "n/a",
    }
    if row["kind"] != "mcmc":
        return row
    posterior = tree["posterior"]
    if "alpha" in posterior:
        hyper = xr.Dataset({"log_alpha": np.log(posterior["alpha"])})
        if "beta" in posterior and float(np.ptp(posterior["beta"].values)) > 0.0:  # learned
            hyper["log_beta"] = np.log(posterior["beta"])
    else:  # a model of your own: every posterior variable
        hyper = posterior.to_dataset()
    r_hat = az.rhat(hyper)
    ess_bulk = az.ess(hyper, method="bulk")
    ess_tail = az.ess(hyper, method="tail")
    min_bulk = min(float(ess_bulk[v].min()) for v in hyper.data_vars)
    sampling_time = float(posterior.attrs.get("sampling_time", row["wall_time"]))
    stats_group = tree["sample_stats"] if "sample_stats" in tree.children else {}
    row.update(
        divergences=int(stats_group["diverging"].sum()) if "diverging" in stats_group else nan,
        max_r_hat=max(float(r_hat[v].max()) for v in hyper.data_vars),
        min_ess_bulk=min_bulk,
        min_ess_tail=min(float(ess_tail[v].min()) for v in hyper.data_vars),
        sampling_time=sampling_time,
        ess_bulk_per_second=min_bulk / sampling_time,
    )
    return row


def _named_fits(fits) -> list[tuple[str, xr.DataTree, pm.Model | None]]:
    """``(name, tree, model)`` from a mapping or a list of trees or ``(tree, model)`` pairs."""
    if isinstance(fits, xr.DataTree) or not isinstance(fits, Mapping | Sequence):
        raise TypeError(
            "expected fits as a mapping name -> DataTree (or (DataTree, model)) or a list of "
            f"them, got {type(fits).__name__}"
        )
    items = fits.items() if isinstance(fits, Mapping) else enumerate(fits)
    out = []
    for name, entry in items:
        tree, model = entry if isinstance(entry, tuple) else (entry, None)
        if not isinstance(tree, xr.DataTree) or "posterior" not in tree.children:
            raise TypeError(
                f"fit {name!r}: expected a DataTree with a posterior group, got "
                f"{type(tree).__name__}"
            )
        if isinstance(name, int):
            method = tree.attrs.get("method")
            name = f"{name}" if method is None else f"{name}: {method}"
        out.append((str(name), tree, model))
    return out


def _prediction_inputs(tree) -> tuple[str, np.ndarray]:
    """The inputs (``X``) or design rows (``Phi``) a tree's predictions were made at."""
    data = (
        tree["predictions_constant_data"] if "predictions_constant_data" in tree.children else {}
    )
    for key in ("X", "Phi"):
        if key in data:
            return key, np.asarray(data[key].values)
    return "", np.empty(0)


def _check_same_inputs(named) -> None:
    """Refuse fits whose predictions were made at different points."""
    inputs = [(name, *_prediction_inputs(tree)) for name, tree, _ in named]
    kinds = {kind for _, kind, _ in inputs}
    if len(inputs) < 2:
        return
    if kinds == {"X"} or (kinds == {"Phi"} and len({v.shape for *_, v in inputs}) == 1):
        first_name, _, first = inputs[0]
        for name, _, values in inputs[1:]:
            if values.shape != first.shape or not np.allclose(values, first, rtol=1e-12, atol=0):
                raise ValueError(
                    f"fits {first_name!r} and {name!r} were predicted at different points "
                    f"({first.shape} and {values.shape}, or different values): compare them "
                    "at the same test points, e.g. compare(..., Phi_test=...) or X_test="
                )
        return
    raise ValueError(
        "the fits' predictions cannot be matched to the same test points (they hold design "
        f"rows over different basis sets, or no record of their inputs: {sorted(kinds)}): "
        "pass Phi_test or X_test so that compare predicts every fit at the same points"
    )


def compare(
    fits,
    t_test,
    *,
    Phi_test=None,
    X_test=None,
    data_test: Mapping | None = None,
    interval: float = 0.95,
    random_seed=None,
) -> Comparison:
    """Compare fits of the same data (evidence, MCMC, VI, or your own PyMC model).

    Parameters
    ----------
    fits : mapping name -> fit, or list of fits
        A fit is a DataTree from :func:`sample`, :func:`fit_vi` or
        :func:`to_inference_data`, or a pair ``(tree, model)``: ``pm.sample`` of any model
        with the model it is a fit of (its predictions then come from the model's own
        likelihood and mean, see :func:`predict`), or a fit of
        :func:`model_from_estimator` compared at ``X_test``. Without ``Phi_test`` /
        ``X_test`` each needs ``predictions`` at the same test points.
    t_test : array
        Test targets; for classification, labels of the fits' classes (strings are fine).
    Phi_test, X_test : array, optional
        Test design rows or inputs: predictions are made for every fit with
        :func:`predict` (replacing any ``predictions`` group).
    data_test : mapping, optional
        Further ``pm.Data`` values of your own models at the test points (see
        :func:`predict`'s ``data``).
    interval : float
        Level of the central predictive interval whose coverage is reported.
    random_seed : int, optional
        For the predictive draws made here.

    Returns
    -------
    Comparison

    Raises
    ------
    ValueError
        For fits whose predictions were made at different test points.

    Notes
    -----
    The predictive distribution of every fit is the mixture over its draws: the
    predictive mean is ``mean_s f_s(x)``, its variance ``var_s f_s(x) + mean_s 1/beta_s``
    (eq. 22 when the draws come from the Gaussian posterior), and the log predictive
    density ``log (1/S) sum_s p(t | f_s(x), beta_s)``. For your own model ``f_s`` is the
    mean of its observed variable given draw ``s``, the density is the model's own, and
    ``mean_sd`` and the interval come from the draws of a new target. LOO: PSIS-LOO
    (``az.loo``) for MCMC and VI fits, the exact Gaussian formula at the point estimates
    for evidence fits (conditional on them, hence optimistic).
    """
    named = _named_fits(fits)
    if not named:
        raise ValueError("expected at least one fit to compare")
    if not 0 < interval < 1:
        raise ValueError(f"interval must be in (0, 1), got {interval}")
    if Phi_test is None and X_test is None:
        for name, tree, _ in named:
            if "predictions" not in tree.children:
                raise ValueError(
                    f"fit {name!r} has no predictions group: pass Phi_test or X_test, or "
                    "X_new / Phi_new when fitting"
                )
        _check_same_inputs(named)
    predictive, basis, diagnostics = [], [], []
    for name, tree, model in named:
        try:
            model = _model_of(tree, model)
            known = package_likelihood(tree, model)
            if known is None:
                row = _graph_row(tree, model, Phi_test, data_test, t_test, interval, random_seed)
            else:
                if Phi_test is not None or X_test is not None:
                    tree = predict(
                        tree, Phi_new=Phi_test, X_new=X_test, random_seed=random_seed, model=model
                    )
                row = _predictive_row(tree, known[0], t_test, interval)
        except (TypeError, ValueError) as err:
            raise type(err)(f"fit {name!r}: {err}") from err
        predictive.append({"fit": name, **row, **_loo_row(tree)})
        if known is not None:
            basis.append(_basis_rows(name, tree, _fitted(tree, known[0]), interval))
        elif {"alpha", "w"} <= set(tree["posterior"].data_vars):  # an unnamed rvm_weights block
            basis.append(_basis_rows(name, tree, None, interval))
        diagnostics.append({"fit": name, **_diagnostics_row(tree)})
    return Comparison(
        predictive=pd.DataFrame(predictive).set_index("fit"),
        basis=pd.concat(basis, ignore_index=True) if basis else pd.DataFrame(),
        diagnostics=pd.DataFrame(diagnostics).set_index("fit"),
    )


def _graph_row(tree, model, Phi_test, data_test, t_test, level: float, random_seed) -> dict:
    """The predictive row of a fit of your own model, from the model's graph."""
    seed = _numpy_rng(random_seed).integers(2**31)
    t_test = np.asarray(t_test)
    _, _, arrays, _ = graph_draws(tree, model, Phi_test, data_test, t_test, seed)
    mean, draws, log_density = (
        arrays[key].reshape(-1, *arrays[key].shape[2:]) for key in ("mean", "draw", "log_density")
    )
    if mean.shape[1:] != t_test.shape:
        raise ValueError(
            f"the predictions hold {mean.shape[1:]} test points but t_test has shape "
            f"{t_test.shape}"
        )
    lpd = logsumexp(log_density, axis=0) - np.log(mean.shape[0])
    if observed_is_binary(model):
        p = mean.mean(axis=0)
        return {
            "error_rate": float(np.mean((p > 0.5) != (t_test == 1))),
            "brier": float(np.mean((p - t_test) ** 2)),
            "lpd": float(np.mean(lpd)),
        }
    lower, upper = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return {
        "rmse": float(np.sqrt(np.mean((mean.mean(axis=0) - t_test) ** 2))),
        "mean_sd": float(np.mean(draws.std(axis=0))),
        "lpd": float(np.mean(lpd)),
        "coverage": float(np.mean((t_test >= lower) & (t_test <= upper))),
    }
