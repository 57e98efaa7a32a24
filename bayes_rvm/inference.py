"""MCMC, VI and evidence fits of the sparse Bayesian model as ArviZ ``DataTree`` objects.

Every fit returned here has the same layout, so that the three ways of fitting the model
line up in ArviZ:

- ``posterior``: ``alpha`` and ``w`` (dims ``chain, draw, basis``), ``beta`` (regression);
- ``log_likelihood``: ``t`` (``chain, draw, obs``), ``log p(t_n | w, beta)`` per draw;
- ``observed_data``: ``t``; ``constant_data``: ``Phi``;
- ``predictions`` (when new design rows are given): ``f = Phi_new w`` (the mean function,
  or the logit in classification) and ``t`` (a draw of a new target) per posterior draw,
  with ``predictions_constant_data`` holding ``Phi_new``;
- ``sample_stats``: the sampler's statistics (MCMC) or the VI loss history;
- root attributes ``fit`` (``"mcmc"``, ``"vi"``, ``"evidence"``), ``likelihood`` and
  ``parameterization``.

The posterior draws of ``w`` carry everything the predictions need, so predictions are
computed from them for every fit (including the collapsed model, whose ``t`` is the
marginal of eq. 34 and cannot give a posterior predictive through ``pm.set_data``).
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Mapping
from dataclasses import dataclass

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr
from scipy.special import log_expit, logsumexp

from bayes_rvm import _linalg
from bayes_rvm._validation import (
    check_design,
    check_open_unit,
    check_positive_int,
    check_target,
    lookup,
)
from bayes_rvm.posterior import gaussian_posterior
from bayes_rvm.pymc_model import build_model, model_spec
from bayes_rvm.solvers import Type2Result

__all__ = [
    "NUTS_SAMPLERS",
    "VI_METHODS",
    "Comparison",
    "compare",
    "fit_vi",
    "model_from_estimator",
    "sample",
    "to_inference_data",
]

#: ``nuts_sampler`` name -> the module it needs (``None``: part of PyMC).
NUTS_SAMPLERS = {"pymc": None, "nutpie": "nutpie", "numpyro": "numpyro"}

#: ``method`` names accepted by :func:`fit_vi`.
VI_METHODS = ("advi", "fullrank_advi")

#: ``basis`` options: every basis function, or the relevant ones of the evidence fit.
BASIS_CHOICES = ("relevant", "all")

LOG_2PI = float(np.log(2.0 * np.pi))


# ---------------------------------------------------------------------------------------
# Draws and per-draw quantities shared by every fit
# ---------------------------------------------------------------------------------------


def _numpy_rng(random_seed) -> np.random.Generator:
    """A generator for the draws made here, distinct from the sampler's own streams."""
    if isinstance(random_seed, np.random.Generator):
        return random_seed
    return np.random.default_rng(None if random_seed is None else [int(random_seed), 5])


def _gaussian_draws(mu: np.ndarray, L: np.ndarray, rng: np.random.Generator, n: int):
    """``n`` draws of ``N(mu, H^-1)`` with ``L`` the lower Cholesky factor of ``H``.

    ``w = mu + L^-T z`` with ``z ~ N(0, I)`` has covariance ``L^-T L^-1 = H^-1``.
    """
    z = rng.standard_normal((mu.size, n))
    return (mu[:, None] + _linalg.solve_lower(L, z, transpose=True)).T


def _exact_weights(alpha, beta, Phi, t, rng) -> np.ndarray:
    """One draw of ``w ~ p(w | alpha, beta, t)`` for each row of ``alpha`` (shape (S, M))."""
    gram, phi_t = Phi.T @ Phi, Phi.T @ t
    w = np.empty_like(alpha)
    for s in range(alpha.shape[0]):
        # Tipping (2001) eq. 12-13: the Gaussian posterior given the hyperparameters
        L, mu = gaussian_posterior(gram, phi_t, alpha[s], beta[s])
        w[s] = _gaussian_draws(mu, L, rng, 1)[0]
    return w


def _log_density(likelihood, f, t, beta) -> np.ndarray:
    """``log p(t_n | f_n, beta)`` for latent values ``f`` of shape (..., N)."""
    if likelihood == "bernoulli":
        # Tipping (2001) eq. 23: log sigmoid(f) for t = 1, log sigmoid(-f) for t = 0
        return np.where(t == 1, log_expit(f), log_expit(-f))
    beta = beta[..., None]
    # Tipping (2001) eq. 5: t_n ~ N(f_n, 1/beta)
    return 0.5 * (np.log(beta) - LOG_2PI - beta * (t - f) ** 2)


def _pointwise_log_likelihood(likelihood, Phi, t, w, beta) -> np.ndarray:
    """``log p(t_n | w, beta)`` for draws ``w`` of shape (..., M): shape (..., N)."""
    return _log_density(likelihood, w @ Phi.T, t, beta)


def _predictive_draws(likelihood, Phi_new, w, beta, rng) -> dict[str, np.ndarray]:
    """Mean function and a new target per draw, shapes (..., N_new)."""
    f = w @ Phi_new.T
    if likelihood == "bernoulli":
        return {"f": f, "t": (rng.random(f.shape) < np.exp(log_expit(f))).astype(np.int64)}
    return {"f": f, "t": f + rng.standard_normal(f.shape) / np.sqrt(beta[..., None])}


def _dataset(variables: Mapping, coords: Mapping, attrs: Mapping | None = None) -> xr.Dataset:
    """``{name: (dims, values)}`` -> Dataset with the coordinates each dimension needs."""
    used = {dim for dims, _ in variables.values() for dim in dims}
    return xr.Dataset(
        {name: (dims, np.asarray(values)) for name, (dims, values) in variables.items()},
        coords={dim: coords[dim] for dim in used if dim in coords},
        attrs=dict(attrs or {}),
    )


def _set_group(tree: xr.DataTree, name: str, dataset: xr.Dataset) -> None:
    tree[name] = xr.DataTree(dataset)


# ---------------------------------------------------------------------------------------
# MCMC and VI
# ---------------------------------------------------------------------------------------


def _training_data(model: pm.Model) -> tuple[np.ndarray, np.ndarray]:
    Phi = np.asarray(model["Phi"].get_value())
    t = np.asarray(model.rvs_to_values[model["t"]].data, dtype=np.float64)
    if Phi.shape[0] != t.size:
        raise ValueError(
            f"the model's Phi has {Phi.shape[0]} rows but t has {t.size} values: restore the "
            "training rows (pm.set_data) before fitting; pass new rows as Phi_new instead"
        )
    return Phi, t


def _new_design(spec, n_basis: int, X_new, Phi_new) -> np.ndarray | None:
    if X_new is not None and Phi_new is not None:
        raise ValueError("give new inputs as X_new or as design rows Phi_new, not both")
    if X_new is not None:
        if spec.design is None:
            raise ValueError(
                "X_new needs a model that knows its basis functions (model_from_estimator); "
                "for a model built from a design matrix, pass the design rows as Phi_new"
            )
        Phi_new = spec.design(X_new)
    if Phi_new is None:
        return None
    Phi_new = check_design(Phi_new, "Phi_new")
    if Phi_new.shape[1] != n_basis:
        raise ValueError(
            f"expected Phi_new with {n_basis} columns (the model's basis functions), got "
            f"shape {Phi_new.shape}"
        )
    return Phi_new


def _complete(tree, spec, Phi, t, Phi_new, rng, fit: str) -> xr.DataTree:
    """Add exact ``w`` draws (collapsed form), log likelihood, data and predictions."""
    posterior = tree["posterior"].to_dataset()
    coords = {name: posterior[name].values for name in ("chain", "draw", "basis")}
    coords["obs"] = (
        tree["observed_data"]["obs"].values
        if "observed_data" in tree.children
        else np.arange(Phi.shape[0])
    )
    if "w" not in posterior:  # the collapsed form: w | alpha, beta, t is Gaussian
        n_chain, n_draw = coords["chain"].size, coords["draw"].size
        alpha = posterior["alpha"].values.reshape(n_chain * n_draw, -1)
        beta = np.broadcast_to(posterior["beta"].values, (n_chain, n_draw)).reshape(-1)
        w = _exact_weights(alpha, beta, Phi, t, rng).reshape(n_chain, n_draw, -1)
        posterior["w"] = (("chain", "draw", "basis"), w)
        _set_group(tree, "posterior", posterior)
    _attach_data(tree, spec.likelihood, Phi, t, Phi_new, rng, coords)
    tree.attrs.update(fit=fit, likelihood=spec.likelihood, parameterization=spec.parameterization)
    return tree


def _attach_data(tree, likelihood, Phi, t, Phi_new, rng, coords) -> None:
    """log_likelihood, observed_data, constant_data and predictions from the posterior."""
    posterior = tree["posterior"]
    w = posterior["w"].values
    beta = None
    if likelihood != "bernoulli":
        beta = np.broadcast_to(posterior["beta"].values, w.shape[:2])
    loglik = _pointwise_log_likelihood(likelihood, Phi, t, w, beta)
    _set_group(tree, "log_likelihood", _dataset({"t": (("chain", "draw", "obs"), loglik)}, coords))
    observed = t.astype(np.int64) if likelihood == "bernoulli" else t
    _set_group(tree, "observed_data", _dataset({"t": (("obs",), observed)}, coords))
    _set_group(tree, "constant_data", _dataset({"Phi": (("obs", "basis"), Phi)}, coords))
    if Phi_new is not None:
        new_coords = {**coords, "obs": np.arange(Phi_new.shape[0])}
        draws = _predictive_draws(likelihood, Phi_new, w, beta, rng)
        dims = ("chain", "draw", "obs")
        _set_group(
            tree, "predictions", _dataset({k: (dims, v) for k, v in draws.items()}, new_coords)
        )
        _set_group(
            tree,
            "predictions_constant_data",
            _dataset({"Phi": (("obs", "basis"), Phi_new)}, new_coords),
        )


def sample(
    model: pm.Model,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    cores: int = 1,
    random_seed: int | None = None,
    nuts_sampler: str = "pymc",
    target_accept: float = 0.9,
    X_new=None,
    Phi_new=None,
    progressbar: bool = False,
    **sample_kwargs,
) -> xr.DataTree:
    """Sample the posterior of a :func:`~bayes_rvm.build_model` model with NUTS.

    Parameters
    ----------
    model : pymc.Model
        From :func:`~bayes_rvm.build_model` or :func:`model_from_estimator`.
    draws, tune, chains, cores : int
        Passed to ``pymc.sample``.
    random_seed : int, optional
        Seeds the sampler and the exact ``w`` / prediction draws made here.
    nuts_sampler : {"pymc", "nutpie", "numpyro"}
        NUTS implementation; nutpie and numpyro are the optional ``samplers`` extra.
    target_accept : float
        Step-size adaptation target; raise it (0.95-0.99) if divergences are reported.
    X_new : array, optional
        New inputs (models from :func:`model_from_estimator`) for the ``predictions`` group.
    Phi_new : array of shape (N_new, M), optional
        New design rows for the ``predictions`` group.
    progressbar : bool
    **sample_kwargs
        Further ``pymc.sample`` options.

    Returns
    -------
    xarray.DataTree
        The layout of the module notes. For the collapsed model ``w`` is drawn exactly from
        ``N(mu, Sigma)`` (Tipping 2001, eq. 12-13) at every posterior draw of
        ``(alpha, beta)``, which makes the joint draws exact posterior draws of ``w``.

    Raises
    ------
    ImportError
        When the requested sampler is not installed.
    ValueError, TypeError
        For invalid options (``draws``, ``chains``, ``cores`` < 1, ``tune`` < 0,
        ``target_accept`` outside (0, 1), an unknown sampler, ``Phi_new`` of the wrong
        width), before any sampling.
    """
    spec = model_spec(model)
    module = lookup(NUTS_SAMPLERS, nuts_sampler, "nuts_sampler")
    if module is not None and importlib.util.find_spec(module) is None:
        raise ImportError(
            f"nuts_sampler={nuts_sampler!r} needs the {module!r} package, which is not "
            "installed; install the optional extra (pip install 'bayes_rvm[samplers]') or use "
            "nuts_sampler='pymc'"
        )
    Phi, t = _training_data(model)
    Phi_new = _new_design(spec, Phi.shape[1], X_new, Phi_new)
    options = {
        "draws": check_positive_int(draws, "draws"),
        "tune": check_positive_int(tune, "tune", minimum=0),
        "chains": check_positive_int(chains, "chains"),
        "cores": check_positive_int(cores, "cores"),
        "target_accept": check_open_unit(target_accept, "target_accept"),
    }
    start = time.perf_counter()
    tree = pm.sample(
        **options,
        random_seed=random_seed,
        nuts_sampler=nuts_sampler,
        progressbar=progressbar,
        model=model,
        **sample_kwargs,
    )
    tree.attrs["wall_time"] = time.perf_counter() - start
    return _complete(tree, spec, Phi, t, Phi_new, _numpy_rng(random_seed), "mcmc")


def fit_vi(
    model: pm.Model,
    *,
    method: str = "advi",
    n: int = 20_000,
    draws: int = 1000,
    random_seed: int | None = None,
    X_new=None,
    Phi_new=None,
    progressbar: bool = False,
    **fit_kwargs,
) -> xr.DataTree:
    """Variational fit (ADVI or full-rank ADVI) of a :func:`~bayes_rvm.build_model` model.

    Parameters
    ----------
    model : pymc.Model
    method : {"advi", "fullrank_advi"}
        Mean-field or full-rank Gaussian approximation on the unconstrained scale
        (``log alpha``, ``log beta``, ``z`` / ``w``).
    n : int
        Optimisation steps (``pymc.fit``).
    draws : int
        Draws from the fitted approximation (one chain).
    random_seed : int, optional
    X_new, Phi_new : array, optional
        New inputs or design rows for the ``predictions`` group (see :func:`sample`).
    progressbar : bool
    **fit_kwargs
        Further ``pymc.fit`` options (e.g. ``obj_optimizer``).

    Returns
    -------
    xarray.DataTree
        The layout of the module notes; ``sample_stats["loss"]`` (dim ``iteration``) is the
        negative ELBO after every step. For the collapsed model the approximation covers
        ``(alpha, beta)`` and ``w`` is drawn exactly given each draw.

    Raises
    ------
    ValueError, TypeError
        For invalid options (``n`` or ``draws`` < 1, an unknown method, ``Phi_new`` of
        the wrong width), before the optimisation starts.
    """
    spec = model_spec(model)
    method = lookup(VI_METHODS, method, "VI method")
    Phi, t = _training_data(model)
    Phi_new = _new_design(spec, Phi.shape[1], X_new, Phi_new)
    n, draws = check_positive_int(n, "n"), check_positive_int(draws, "draws")
    start = time.perf_counter()
    approx = pm.fit(
        n=n,
        method=method,
        model=model,
        random_seed=random_seed,
        progressbar=progressbar,
        **fit_kwargs,
    )
    tree = approx.sample(draws, random_seed=random_seed)
    tree.attrs["wall_time"] = time.perf_counter() - start
    loss = np.asarray(approx.hist, dtype=np.float64)
    _set_group(
        tree,
        "sample_stats",
        xr.Dataset({"loss": (("iteration",), loss)}, coords={"iteration": np.arange(loss.size)}),
    )
    return _complete(tree, spec, Phi, t, Phi_new, _numpy_rng(random_seed), "vi")


# ---------------------------------------------------------------------------------------
# Evidence fits and fitted estimators
# ---------------------------------------------------------------------------------------


def _estimator_design(estimator, X, basis: str):
    """Training design matrix over the chosen columns, their names, and ``X_new -> rows``."""
    from sklearn.utils.validation import check_is_fitted, validate_data

    check_is_fitted(estimator)
    classes = getattr(estimator, "classes_", None)
    if classes is not None and len(classes) != 2:
        raise ValueError(
            f"full Bayes is implemented for binary classification; the estimator has "
            f"{len(classes)} classes"
        )
    X = validate_data(estimator, X, reset=False, dtype=np.float64)
    # the basis as fitted (kernel, learned scales, bias, extra columns), at the training X
    full = estimator.basis_.training_basis(X)
    active = estimator.result_.active
    columns = np.sort(active) if basis == "relevant" else np.arange(full.n_columns)
    names = np.asarray(full.column_names)[columns]

    def design(X_new):
        X_new = validate_data(estimator, X_new, reset=False, dtype=np.float64)
        return full.evaluate(X_new, columns)

    return full.columns(columns), names, columns, design


def _targets(estimator, y, n: int) -> np.ndarray:
    """Regression targets, or the 0/1 coding ``y == classes_[1]`` of a binary classifier."""
    classes = getattr(estimator, "classes_", None)
    if classes is None:
        return check_target(y, n, "y")
    y = np.asarray(y)
    if y.shape != (n,) or not np.all(np.isin(y, classes)):
        raise ValueError(f"expected y of length {n} with labels in {list(classes)}")
    return (y == classes[1]).astype(np.float64)


def model_from_estimator(
    estimator,
    X,
    y,
    *,
    basis: str = "relevant",
    a: float,
    b: float,
    c: float | None = None,
    d: float | None = None,
    parameterization: str = "noncentred",
) -> pm.Model:
    """The PyMC model over the basis of a fitted :class:`~bayes_rvm.RVR` (or RVC).

    Parameters
    ----------
    estimator : fitted RVR or RVC
    X, y : arrays
        The training data the estimator was fitted on.
    basis : {"relevant", "all"}
        Only the basis functions the evidence fit kept, or all of them.
    a, b, c, d : float
        Gamma hyperparameters (see :func:`~bayes_rvm.build_model`). With a noise variance
        fixed in the estimator (``noise_var=...``) the model fixes it too and ``c, d`` must
        be left unset.
    parameterization : {"noncentred", "centred", "collapsed"}

    Returns
    -------
    pymc.Model
        With ``basis`` coordinates named as the estimator's columns (``"k12"`` for the
        kernel centred on training input 12, ``"bias"``), and predictions from new inputs:
        ``sample(model, X_new=...)``.
    """
    basis = lookup(BASIS_CHOICES, basis, "basis")
    Phi, names, _, design = _estimator_design(estimator, X, basis)
    result = estimator.result_
    t = _targets(estimator, y, Phi.shape[0])
    return build_model(
        Phi,
        t,
        result.likelihood,
        a=a,
        b=b,
        c=c,
        d=d,
        noise_var=result.noise_var if result.noise_fixed else None,
        parameterization=parameterization,
        coords={"basis": names},
        design=design,
    )


def to_inference_data(
    fit,
    X,
    t,
    *,
    X_new=None,
    draws: int = 1000,
    random_seed: int | None = None,
    basis: str = "all",
) -> xr.DataTree:
    """The evidence (type-II) fit as a DataTree laid out like the MCMC and VI fits.

    ``alpha`` and ``beta`` are the point estimates repeated over the draws (the
    delta-function approximation of Tipping 2001, eq. 14); ``w`` holds exact draws from the
    Gaussian posterior ``N(mu, Sigma)`` (eq. 12-13; the Laplace approximation in
    classification, with no ``beta``).

    Parameters
    ----------
    fit : Type2Result or fitted RVR / RVC
    X : array
        For a ``Type2Result``, the design matrix it was fitted on (array or Basis); for an
        estimator, its training inputs.
    t : array
        The training targets (labels for a classifier).
    X_new : array, optional
        The new counterpart of ``X`` (design rows over all columns for a ``Type2Result``;
        inputs for an estimator), for the ``predictions`` group.
    draws : int
        Draws of ``w`` (one chain).
    random_seed : int, optional
    basis : {"all", "relevant"}
        ``"all"``: every column, the pruned ones with ``alpha = inf`` and ``w = 0`` (the
        limit the solver reached: their prior is a point mass at 0); ``"relevant"``: the
        active columns only (then comparable with a fit of
        ``model_from_estimator(..., basis="relevant")``).

    Returns
    -------
    xarray.DataTree
    """
    basis = lookup(BASIS_CHOICES, basis, "basis")
    if isinstance(fit, Type2Result):
        result = fit
        Phi = X.toarray() if hasattr(X, "toarray") else check_design(X)
        if Phi.shape[1] != result.n_basis:
            raise ValueError(
                f"expected the design matrix of the fit ({result.n_basis} columns), got shape "
                f"{Phi.shape}"
            )
        t = check_target(t, Phi.shape[0])
        names = np.arange(result.n_basis)
        columns = np.sort(result.active) if basis == "relevant" else names
        Phi = Phi[:, columns]
        Phi_new = None if X_new is None else check_design(X_new, "X_new")[:, columns]
        names = names[columns]
    elif isinstance(getattr(fit, "result_", None), Type2Result):
        result = fit.result_
        Phi, names, columns, design = _estimator_design(fit, X, basis)
        t = _targets(fit, t, Phi.shape[0])
        Phi_new = None if X_new is None else design(X_new)
    else:
        raise TypeError(f"expected a Type2Result or a fitted RVR / RVC, got {type(fit).__name__}")
    if result.likelihood not in ("gaussian", "bernoulli"):
        raise ValueError(
            f"to_inference_data handles the 'gaussian' and 'bernoulli' likelihoods; the fit "
            f"has likelihood={result.likelihood!r}"
        )
    rng = _numpy_rng(random_seed)
    draws = check_positive_int(draws, "draws")
    position = np.searchsorted(columns, result.active)
    alpha = np.full(columns.size, np.inf)
    alpha[position] = result.alpha
    w = np.zeros((draws, columns.size))
    w[:, position] = _gaussian_draws(result.mu, result.precision_chol, rng, draws)
    coords = {
        "chain": np.arange(1),
        "draw": np.arange(draws),
        "basis": names,
        "obs": np.arange(Phi.shape[0]),
    }
    variables = {
        "alpha": (("chain", "draw", "basis"), np.broadcast_to(alpha, (1, draws, alpha.size))),
        "w": (("chain", "draw", "basis"), w[None]),
    }
    if result.beta is not None:
        variables["beta"] = (("chain", "draw"), np.full((1, draws), result.beta))
    tree = xr.DataTree()
    _set_group(tree, "posterior", _dataset(variables, coords))
    _attach_data(tree, result.likelihood, Phi, t, Phi_new, rng, coords)
    tree.attrs.update(
        fit="evidence",
        likelihood=result.likelihood,
        parameterization="evidence",
        log_evidence=result.log_evidence,
    )
    return tree


# ---------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """Tables from :func:`compare` (tidy pandas DataFrames, one row per fit or per basis).

    Attributes
    ----------
    predictive : DataFrame
        Per fit: ``rmse`` of the predictive mean, ``mean_sd`` (predictive sd averaged over
        the test points), ``lpd`` (mean log predictive density) and ``coverage`` of the
        central predictive interval (regression); ``error_rate``, ``brier`` and ``lpd``
        (classification).
    basis : DataFrame
        Per fit and basis function: mean and sd of ``log alpha`` and ``w``, and the
        central interval of ``w``.
    diagnostics : DataFrame
        Per fit: divergences, largest ``r_hat``, smallest bulk and tail ESS over
        ``log alpha`` and ``log beta`` (NaN for fits that are not MCMC), the wall time of
        the fitting call (compilation included), PyMC's sampling time (tuning and draws)
        and the smallest bulk ESS per second of sampling time.
    """

    predictive: pd.DataFrame
    basis: pd.DataFrame
    diagnostics: pd.DataFrame


def _flat(dataarray: xr.DataArray) -> np.ndarray:
    """(chain, draw, ...) -> (draws, ...)."""
    values = dataarray.transpose("chain", "draw", ...).values
    return values.reshape(-1, *values.shape[2:])


def _predictive_row(tree, t_test, level: float) -> dict:
    if "predictions" not in tree.children:
        raise ValueError("every fit needs a predictions group: pass X_new / Phi_new when fitting")
    f = _flat(tree["predictions"]["f"])
    if f.shape[1] != t_test.size:
        raise ValueError(
            f"the predictions hold {f.shape[1]} test points but t_test has {t_test.size}"
        )
    if tree.attrs["likelihood"] == "bernoulli":
        log_p1 = logsumexp(log_expit(f), axis=0) - np.log(f.shape[0])
        log_p0 = logsumexp(log_expit(-f), axis=0) - np.log(f.shape[0])
        p = np.exp(log_p1)
        return {
            "error_rate": float(np.mean((p > 0.5) != (t_test == 1))),
            "brier": float(np.mean((p - t_test) ** 2)),
            "lpd": float(np.mean(np.where(t_test == 1, log_p1, log_p0))),
        }
    beta = _flat(tree["posterior"]["beta"])
    mean = f.mean(axis=0)
    sd = np.sqrt(f.var(axis=0) + np.mean(1.0 / beta))
    # log of the Monte Carlo mixture (1/S) sum_s N(t* | f_s, 1/beta_s)
    lpd = logsumexp(_log_density("gaussian", f, t_test, beta), axis=0) - np.log(f.shape[0])
    lower, upper = np.quantile(
        _flat(tree["predictions"]["t"]), [(1 - level) / 2, (1 + level) / 2], axis=0
    )
    return {
        "rmse": float(np.sqrt(np.mean((mean - t_test) ** 2))),
        "mean_sd": float(np.mean(sd)),
        "lpd": float(np.mean(lpd)),
        "coverage": float(np.mean((t_test >= lower) & (t_test <= upper))),
    }


def _basis_rows(name: str, tree, level: float) -> pd.DataFrame:
    posterior = tree["posterior"]
    log_alpha = _flat(np.log(posterior["alpha"]))
    w = _flat(posterior["w"])
    with np.errstate(invalid="ignore"):  # inf - inf for pruned columns of evidence fits
        log_alpha_sd = np.where(np.isinf(log_alpha[0]), 0.0, log_alpha.std(axis=0))
    lower, upper = np.quantile(w, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return pd.DataFrame(
        {
            "fit": name,
            "basis": posterior["basis"].values,
            "log_alpha_mean": log_alpha.mean(axis=0),
            "log_alpha_sd": log_alpha_sd,
            "w_mean": w.mean(axis=0),
            "w_sd": w.std(axis=0),
            "w_lower": lower,
            "w_upper": upper,
        }
    )


def _diagnostics_row(tree) -> dict:
    nan = float("nan")
    row = {
        "divergences": nan,
        "max_r_hat": nan,
        "min_ess_bulk": nan,
        "min_ess_tail": nan,
        "wall_time": tree.attrs.get("wall_time", nan),
        "sampling_time": nan,
        "ess_bulk_per_second": nan,
    }
    if tree.attrs.get("fit") != "mcmc":
        return row
    posterior = tree["posterior"]
    hyper = xr.Dataset({"log_alpha": np.log(posterior["alpha"])})
    if "beta" in posterior and float(np.ptp(posterior["beta"].values)) > 0.0:  # learned noise
        hyper["log_beta"] = np.log(posterior["beta"])
    r_hat = az.rhat(hyper)
    ess_bulk = az.ess(hyper, method="bulk")
    ess_tail = az.ess(hyper, method="tail")
    min_bulk = min(float(ess_bulk[v].min()) for v in hyper.data_vars)
    sampling_time = float(posterior.attrs.get("sampling_time", row["wall_time"]))
    row.update(
        divergences=int(tree["sample_stats"]["diverging"].sum()),
        max_r_hat=max(float(r_hat[v].max()) for v in hyper.data_vars),
        min_ess_bulk=min_bulk,
        min_ess_tail=min(float(ess_tail[v].min()) for v in hyper.data_vars),
        sampling_time=sampling_time,
        ess_bulk_per_second=min_bulk / sampling_time,
    )
    return row


def compare(fits: Mapping[str, xr.DataTree], t_test, *, interval: float = 0.95) -> Comparison:
    """Compare fits of the same model (evidence, MCMC, VI) on test data.

    Parameters
    ----------
    fits : mapping name -> DataTree
        From :func:`sample`, :func:`fit_vi`, :func:`to_inference_data`, each with
        ``predictions`` at the same test inputs.
    t_test : array
        Test targets (0/1 for classification).
    interval : float
        Level of the central predictive interval whose coverage is reported.

    Returns
    -------
    Comparison

    Notes
    -----
    The predictive distribution of every fit is the mixture over its draws: the
    predictive mean is ``mean_s f_s(x)``, its variance ``var_s f_s(x) + mean_s 1/beta_s``
    (eq. 22 when the draws come from the Gaussian posterior), and the log predictive
    density ``log (1/S) sum_s N(t | f_s(x), 1/beta_s)``. The interval is the central one
    of the draws of a new target.
    """
    if not fits:
        raise ValueError("expected at least one fit to compare")
    if not 0 < interval < 1:
        raise ValueError(f"interval must be in (0, 1), got {interval}")
    t_test = check_target(t_test, np.asarray(t_test).reshape(-1).size, "t_test")
    predictive, basis, diagnostics = [], [], []
    for name, tree in fits.items():
        if not isinstance(tree, xr.DataTree) or "posterior" not in tree.children:
            raise TypeError(f"fit {name!r} is not a DataTree with a posterior group")
        predictive.append({"fit": name, **_predictive_row(tree, t_test, interval)})
        basis.append(_basis_rows(name, tree, interval))
        diagnostics.append({"fit": name, **_diagnostics_row(tree)})
    return Comparison(
        predictive=pd.DataFrame(predictive).set_index("fit"),
        basis=pd.concat(basis, ignore_index=True),
        diagnostics=pd.DataFrame(diagnostics).set_index("fit"),
    )
