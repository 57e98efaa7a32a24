"""MCMC, VI and evidence fits of the sparse Bayesian model as ArviZ ``DataTree`` objects.

Every fit returned here has the same layout, so that the ways of fitting the model line
up in ArviZ:

- ``posterior``: ``alpha``, ``log_alpha`` and ``w`` (dims ``chain, draw, basis``; plus
  ``class`` for the categorical likelihood), ``beta`` and ``log_beta`` (regression);
- ``log_likelihood``: ``t`` (``chain, draw, obs``), pointwise terms for ``az.loo``: in the
  weight-space forms ``log p(t_n | w, beta)``; in the collapsed form and the evidence fit
  the exact leave-one-out conditionals ``log p(t_n | t_-n, alpha, beta)`` of the Gaussian
  marginal (the group's ``pointwise`` attribute says which);
- ``observed_data``: ``t``; ``constant_data``: ``Phi``;
- ``predictions`` (when new design rows are given, or from :func:`predict`):
  ``f = Phi_new w`` (the mean function, or the logits in classification) and ``t`` (a draw
  of a new target) per posterior draw, with ``predictions_constant_data`` holding
  ``Phi_new``;
- ``sample_stats``: the sampler's statistics (MCMC) or ``loss``, the negative lower bound
  per iteration (VI);
- root attributes ``fit`` (``"mcmc"``, ``"vi"``, ``"evidence"``), ``method``,
  ``likelihood``, ``parameterization`` and ``sampling_diagnostics`` (whether r_hat, ESS
  and MCSE mean anything for these draws).

The posterior draws of ``w`` carry everything the predictions need, so predictions are
computed from them for every fit; for the collapsed model ``w`` is drawn exactly from
``p(w | alpha, beta, t)`` at every draw of the hyperparameters.
"""

from __future__ import annotations

import importlib.util
import inspect
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr
from pymc.sampling import mcmc as pm_mcmc
from pymc.variational.callbacks import CheckParametersConvergence
from scipy import stats
from scipy.special import log_expit, log_softmax, logsumexp

from bayes_rvm import _linalg
from bayes_rvm._progress import interactive
from bayes_rvm._validation import (
    check_design,
    check_open_unit,
    check_positive_int,
    check_target,
    lookup,
)
from bayes_rvm.evidence import LOG_2PI
from bayes_rvm.likelihoods import LIKELIHOODS, get_likelihood
from bayes_rvm.posterior import gaussian_posterior, precision_factor
from bayes_rvm.posterior import predictive as gaussian_predictive
from bayes_rvm.pymc_model import (
    _GRAM_MISMATCH,
    build_model,
    find_design,
    gram_matches,
    model_spec,
)
from bayes_rvm.solvers import Type2Result
from bayes_rvm.variational import fit_vb

__all__ = [
    "NUTS_SAMPLERS",
    "VI_METHODS",
    "Comparison",
    "compare",
    "fit_vi",
    "model_from_estimator",
    "predict",
    "sample",
    "to_inference_data",
]

#: ``nuts_sampler`` name -> the module it needs (``None``: part of PyMC).
NUTS_SAMPLERS = {"pymc": None, "nutpie": "nutpie", "numpyro": "numpyro"}

#: ``method`` names accepted by :func:`fit_vi`.
VI_METHODS = ("advi", "fullrank_advi", "vb")

#: ``basis`` options: every basis function, or the relevant ones of the evidence fit.
BASIS_CHOICES = ("relevant", "all")


#: ``sampling_diagnostics`` attribute of fits whose draws are not Markov chains.
_INDEPENDENT_DRAWS = (
    "n/a: independent draws from a fitted distribution, not Markov chains; r_hat, ESS and "
    "MCSE of these draws say nothing about the fit"
)


# ---------------------------------------------------------------------------------------
# Draws and per-draw quantities shared by every fit
# ---------------------------------------------------------------------------------------


def _numpy_rng(random_seed) -> np.random.Generator:
    """A generator for the draws made here, distinct from the sampler's own streams."""
    if isinstance(random_seed, np.random.Generator):
        return random_seed
    if random_seed is None:
        return np.random.default_rng()
    seeds = [int(s) for s in np.atleast_1d(random_seed)]
    return np.random.default_rng([*seeds, 5])


def _gaussian_draws(mu: np.ndarray, L: np.ndarray, rng: np.random.Generator, n: int):
    """``n`` draws of ``N(mu, H^-1)`` with ``L`` the lower Cholesky factor of ``H``.

    ``w = mu + L^-T z`` with ``z ~ N(0, I)`` has covariance ``L^-T L^-1 = H^-1``.
    """
    z = rng.standard_normal((mu.size, n))
    return (mu[:, None] + _linalg.solve_lower(L, z, transpose=True)).T


def _loo_gaussian(Phi, t, mu, L, beta) -> np.ndarray:
    """``log p(t_n | t_-n)`` for ``t ~ N(0, C)``, ``C = beta^-1 I + Phi A^-1 Phi^T``.

    With ``g = diag(C^-1)`` and ``c = C^-1 t``: ``t_n | t_-n ~ N(t_n - c_n / g_n, 1 / g_n)``
    (Sundararajan and Keerthi 2001; Bürkner, Gabry and Vehtari 2021). By Woodbury,
    ``C^-1 = beta I - beta^2 Phi Sigma Phi^T``, so ``c = beta (t - Phi mu)`` and
    ``g_n = beta - beta^2 phi_n^T Sigma phi_n``: no ``N x N`` matrix. ``Phi``, ``mu`` and
    ``L`` (the factor of ``Sigma^-1``) are over the active columns.
    """
    mean, weight_var = gaussian_predictive(Phi, mu, L, None)  # Phi mu, phi_n^T Sigma phi_n
    g = beta - beta**2 * weight_var
    c = beta * (t - mean)
    return 0.5 * (np.log(g) - LOG_2PI - c**2 / g)


def _exact_weights(alpha, beta, Phi, t, rng) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``alpha`` (shape (S, M)): one draw of ``w ~ p(w | alpha, beta, t)`` and
    the leave-one-out terms ``log p(t_n | t_-n, alpha, beta)`` (shape (S, N))."""
    gram, phi_t = Phi.T @ Phi, Phi.T @ t
    w = np.empty_like(alpha)
    loo = np.empty((alpha.shape[0], Phi.shape[0]))
    for s in range(alpha.shape[0]):
        # Tipping (2001) eq. 12-13: the Gaussian posterior given the hyperparameters
        L, mu = gaussian_posterior(gram, phi_t, alpha[s], beta[s])
        w[s] = _gaussian_draws(mu, L, rng, 1)[0]
        loo[s] = _loo_gaussian(Phi, t, mu, L, beta[s])
    return w, loo


def _log_density(likelihood, f, t, beta=None, nu=None) -> np.ndarray:
    """``log p(t_n | f_n, ...)`` for latent values ``f`` of shape (..., N) ((..., N, K))."""
    if likelihood == "bernoulli":
        # Tipping (2001) eq. 23: log sigmoid(f) for t = 1, log sigmoid(-f) for t = 0
        return np.where(t == 1, log_expit(f), log_expit(-f))
    if likelihood == "categorical":
        # Bishop (2006) eq. 7.120: log softmax_k(f) at the observed class k = t_n
        log_p = log_softmax(f, axis=-1)
        return np.take_along_axis(log_p, np.broadcast_to(t, f.shape[:-1])[..., None], -1)[..., 0]
    beta = beta[..., None]
    if likelihood == "student_t":
        nu = nu[..., None]
        return stats.t.logpdf(t, nu, loc=f, scale=1.0 / np.sqrt(beta))
    # Tipping (2001) eq. 5: t_n ~ N(f_n, 1/beta)
    return 0.5 * (np.log(beta) - LOG_2PI - beta * (t - f) ** 2)


def _predictive_draws(likelihood, Phi_new, w, beta, nu, rng) -> dict[str, np.ndarray]:
    """Mean function (logits) and a new target per draw, shapes (..., N_new) ((..., K))."""
    if likelihood == "categorical":
        f = np.einsum("nm,...mk->...nk", Phi_new, w)
        gumbel = -np.log(-np.log(rng.random(f.shape)))
        return {"f": f, "t": np.argmax(f + gumbel, axis=-1)}
    f = w @ Phi_new.T
    if likelihood == "bernoulli":
        return {"f": f, "t": (rng.random(f.shape) < np.exp(log_expit(f))).astype(np.int64)}
    scale = 1.0 / np.sqrt(beta[..., None])
    if likelihood == "student_t":
        return {"f": f, "t": f + scale * rng.standard_t(nu[..., None], f.shape)}
    return {"f": f, "t": f + scale * rng.standard_normal(f.shape)}


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


def _flat(dataarray: xr.DataArray) -> np.ndarray:
    """(chain, draw, ...) -> (draws, ...)."""
    values = dataarray.transpose("chain", "draw", ...).values
    return values.reshape(-1, *values.shape[2:])


# ---------------------------------------------------------------------------------------
# What a fit's tree is: likelihood, data, draws
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Fitted:
    """The pieces of a tree the derived groups are computed from."""

    likelihood: str
    Phi: np.ndarray
    t: np.ndarray
    coords: dict


def _infer_likelihood(tree: xr.DataTree) -> str:
    """The likelihood of a tree: its ``likelihood`` attribute, else read from its variables."""
    likelihood = tree.attrs.get("likelihood")
    if likelihood is not None:
        return str(likelihood)
    posterior = tree["posterior"]
    if "class" in posterior["w"].dims:
        return "categorical"
    if "beta" in posterior:
        return "student_t" if "nu" in posterior else "gaussian"
    return "bernoulli"


def _fitted(tree: xr.DataTree, likelihood: str | None = None) -> _Fitted:
    """Training data and coordinates of a tree with posterior ``w`` and ``constant_data``."""
    if not isinstance(tree, xr.DataTree) or "posterior" not in tree.children:
        raise TypeError(f"expected a DataTree with a posterior group, got {type(tree).__name__}")
    posterior = tree["posterior"]
    if "constant_data" not in tree.children or "Phi" not in tree["constant_data"]:
        raise ValueError(
            "expected the design matrix in the tree's constant_data group as 'Phi' (declare it "
            'with pm.Data("Phi", Phi, dims=("obs", "basis")))'
        )
    Phi = tree["constant_data"]["Phi"].values
    t = tree["observed_data"]["t"].values if "observed_data" in tree.children else None
    coords = {dim: posterior[dim].values for dim in posterior.dims}
    coords["obs"] = tree["constant_data"]["obs"].values
    return _Fitted(likelihood or _infer_likelihood(tree), Phi, t, coords)


def _per_draw(posterior: xr.Dataset, name: str, shape) -> np.ndarray | None:
    if name not in posterior:
        return None
    return np.broadcast_to(posterior[name].values, shape)


def _complete(
    tree, fitted: _Fitted, fixed, Phi_new, rng, attrs, loo=None, pointwise=None
) -> xr.DataTree:
    """Add exact ``w`` draws (collapsed form), log alpha / log beta, log likelihood, data and
    predictions to a tree holding the posterior of ``alpha`` (and ``beta``).

    ``fixed``: values of ``alpha`` / ``beta`` that the model holds fixed (``pm.do``,
    ``pm.observe``, a fixed noise), repeated over the draws. ``loo`` and ``pointwise``:
    leave-one-out terms given by the caller (evidence fits).
    """
    posterior = tree["posterior"].to_dataset()
    n_chain, n_draw = posterior.sizes["chain"], posterior.sizes["draw"]
    for name, value in fixed.items():
        if name not in posterior:
            dims = ("chain", "draw", *(("basis",) if np.ndim(value) else ()))
            posterior[name] = (dims, np.broadcast_to(value, (n_chain, n_draw, *np.shape(value))))
    if "w" not in posterior:  # the collapsed form: w | alpha, beta, t is Gaussian
        alpha = posterior["alpha"].values.reshape(n_chain * n_draw, -1)
        beta = np.broadcast_to(posterior["beta"].values, (n_chain, n_draw)).reshape(-1)
        w, loo = _exact_weights(alpha, beta, fitted.Phi, fitted.t, rng)
        posterior["w"] = (("chain", "draw", "basis"), w.reshape(n_chain, n_draw, -1))
        loo = loo.reshape(n_chain, n_draw, -1)
    for name in ("alpha", "beta"):
        if name in posterior and f"log_{name}" not in posterior:
            posterior[f"log_{name}"] = np.log(posterior[name])
    _set_group(tree, "posterior", posterior)
    _attach_data(tree, fitted, loo, pointwise)
    if Phi_new is not None:
        _attach_predictions(tree, fitted, Phi_new, rng)
    tree.attrs.update(attrs)
    return tree


def _attach_data(tree, fitted: _Fitted, loo=None, pointwise=None) -> None:
    """log_likelihood, observed_data and constant_data from the posterior.

    ``loo`` (chain, draw, obs): the exact leave-one-out conditionals of a Gaussian
    marginal, stored instead of ``log p(t_n | w, beta)``.
    """
    coords = fitted.coords
    dims = ("chain", "draw", "obs")
    if loo is None:
        posterior = tree["posterior"]
        w = posterior["w"].transpose("chain", "draw", ...).values
        shape = w.shape[:2]
        beta, nu = _per_draw(posterior, "beta", shape), _per_draw(posterior, "nu", shape)
        if fitted.likelihood == "categorical":
            f = np.einsum("nm,...mk->...nk", fitted.Phi, w)
        else:
            f = w @ fitted.Phi.T
        loglik = _log_density(fitted.likelihood, f, fitted.t, beta, nu)
        pointwise = "log p(t_n | w, beta): the likelihood of each observation given each draw"
    else:
        loglik = loo
        pointwise = pointwise or (
            "log p(t_n | t_-n, alpha, beta): exact leave-one-out conditionals of the Gaussian "
            "marginal (w integrated out) at each draw of alpha, beta"
        )
    _set_group(
        tree,
        "log_likelihood",
        _dataset({"t": (dims, loglik)}, coords, {"pointwise": pointwise}),
    )
    classification = fitted.likelihood in ("bernoulli", "categorical")
    observed = fitted.t.astype(np.int64) if classification else fitted.t
    _set_group(tree, "observed_data", _dataset({"t": (("obs",), observed)}, coords))
    _set_group(tree, "constant_data", _dataset({"Phi": (("obs", "basis"), fitted.Phi)}, coords))


def _attach_predictions(tree, fitted: _Fitted, Phi_new, rng) -> None:
    posterior = tree["posterior"]
    w = posterior["w"].transpose("chain", "draw", ...).values
    shape = w.shape[:2]
    beta, nu = _per_draw(posterior, "beta", shape), _per_draw(posterior, "nu", shape)
    draws = _predictive_draws(fitted.likelihood, Phi_new, w, beta, nu, rng)
    new_coords = {**fitted.coords, "obs": np.arange(Phi_new.shape[0])}
    f_dims = ("chain", "draw", "obs") + (("class",) if draws["f"].ndim == 4 else ())
    variables = {"f": (f_dims, draws["f"]), "t": (("chain", "draw", "obs"), draws["t"])}
    _set_group(tree, "predictions", _dataset(variables, new_coords))
    _set_group(
        tree,
        "predictions_constant_data",
        _dataset({"Phi": (("obs", "basis"), Phi_new)}, new_coords),
    )


def _check_new_design(design, n_basis: int, X_new, Phi_new) -> np.ndarray | None:
    if X_new is not None and Phi_new is not None:
        raise ValueError("give new inputs as X_new or as design rows Phi_new, not both")
    if X_new is not None:
        if design is None:
            raise ValueError(
                "X_new needs a model that knows its basis functions (model_from_estimator, "
                "or build_model(..., design=...)); for a model built from a design matrix, "
                "pass the design rows as Phi_new"
            )
        Phi_new = design(X_new)
    if Phi_new is None:
        return None
    Phi_new = check_design(Phi_new, "Phi_new")
    if Phi_new.shape[1] != n_basis:
        raise ValueError(
            f"expected Phi_new with {n_basis} columns (the model's basis functions), got "
            f"shape {Phi_new.shape}"
        )
    return Phi_new


def predict(tree: xr.DataTree, Phi_new=None, X_new=None, random_seed=None) -> xr.DataTree:
    """Predictions of any fit, drawn through ``w | alpha, beta, t``.

    Parameters
    ----------
    tree : DataTree
        A fit from :func:`sample`, :func:`fit_vi` or :func:`to_inference_data`, or any
        tree with a posterior ``w`` (or ``alpha`` and ``beta`` of a collapsed Gaussian
        model) and the design matrix ``Phi`` in ``constant_data``, such as
        ``pm.sample`` of your own model built with :func:`~bayes_rvm.rvm_weights`.
    Phi_new : array of shape (N_new, M), optional
        New design rows; default: the training rows (the posterior predictive).
    X_new : array, optional
        New inputs, for fits of a model that knows its basis functions
        (:func:`model_from_estimator`).
    random_seed : int, optional

    Returns
    -------
    DataTree
        A copy of ``tree`` with ``predictions`` (``f`` and a new ``t`` per draw) and
        ``predictions_constant_data``. Where the posterior has no ``w`` (collapsed Gaussian
        model sampled with ``pm.sample``), ``w`` is first drawn exactly from
        ``p(w | alpha, beta, t)`` (Tipping 2001, eq. 12-13) and added to it.
    """
    fitted = _fitted(tree)
    design = None if X_new is None else find_design(fitted.Phi)
    Phi_new = _check_new_design(design, fitted.Phi.shape[1], X_new, Phi_new)
    if Phi_new is None:
        Phi_new = fitted.Phi
    rng = _numpy_rng(random_seed)
    out = tree.copy()
    if "w" not in out["posterior"]:
        if fitted.likelihood != "gaussian" or fitted.t is None:
            raise ValueError(
                "expected a posterior w, or alpha and beta of a Gaussian model with "
                "observed_data t"
            )
        return _complete(out, fitted, {}, Phi_new, rng, {})
    _attach_predictions(out, fitted, Phi_new, rng)
    return out


# ---------------------------------------------------------------------------------------
# MCMC and VI
# ---------------------------------------------------------------------------------------


def _training_data(model: pm.Model) -> tuple[np.ndarray, np.ndarray]:
    Phi = np.asarray(model["Phi"].get_value())
    t = np.asarray(model.rvs_to_values[model["t"]].data)
    if Phi.shape[0] != t.size:
        raise ValueError(
            f"the model's Phi has {Phi.shape[0]} rows but t has {t.size} values: restore the "
            "training rows (pm.set_data) before fitting; pass new rows as Phi_new instead"
        )
    return Phi, t


def _fitted_model(model, spec) -> _Fitted:
    Phi, t = _training_data(model)
    if spec.parameterization == "collapsed" and not gram_matches(Phi, model["gram"].get_value()):
        raise ValueError(_GRAM_MISMATCH)
    coords = {name: np.asarray(values) for name, values in model.coords.items()}
    return _Fitted(spec.likelihood, Phi, t, coords)


def _fixed_values(model) -> dict[str, np.ndarray]:
    """``alpha`` and ``beta`` where the model holds them fixed: observed (``pm.observe``),
    intervened on (``pm.do``) or a fixed noise (``noise_var``)."""
    fixed = {}
    for name in ("alpha", "beta"):
        if name not in model.named_vars:
            continue
        variable = model[name]
        if variable in model.observed_RVs:
            fixed[name] = np.asarray(model.rvs_to_values[variable].data, dtype=np.float64)
        elif variable not in model.free_RVs:
            fixed[name] = np.asarray(variable.eval(), dtype=np.float64)
    return fixed


def _fit_attrs(spec, fit: str, method: str, diagnostics: str) -> dict:
    return {
        "fit": fit,
        "method": method,
        "likelihood": spec.likelihood,
        "parameterization": spec.parameterization,
        "sampling_diagnostics": diagnostics,
    }


def _check_progressbar(progressbar):
    if progressbar is None:
        return interactive()
    if not isinstance(progressbar, bool):
        raise TypeError(f"progressbar must be True, False or None, got {progressbar!r}")
    return progressbar


def _check_seed(random_seed, chains: int):
    """``None``, an int, a Generator, or one int per chain (as ``pm.sample`` accepts)."""
    if random_seed is None or isinstance(random_seed, np.random.Generator):
        return random_seed
    seeds = np.atleast_1d(np.asarray(random_seed, dtype=object))
    if seeds.ndim != 1 or not all(
        isinstance(s, int | np.integer) and not isinstance(s, bool) and s >= 0 for s in seeds
    ):
        raise TypeError(
            "random_seed must be None, a non-negative int, a numpy Generator or a sequence of "
            f"non-negative ints (one per chain), got {random_seed!r}"
        )
    if np.ndim(random_seed) == 0:
        return int(random_seed)
    if seeds.size != chains:
        raise ValueError(f"expected {chains} seeds (one per chain), got {seeds.size}")
    return [int(s) for s in seeds]


def _check_var_names(model, var_names):
    if var_names is None:
        return None
    if isinstance(var_names, str) or not isinstance(var_names, Sequence):
        raise TypeError(f"var_names must be a list of variable names, got {var_names!r}")
    unknown = [name for name in var_names if name not in model.named_vars]
    if unknown:
        raise ValueError(
            f"var_names {unknown} are not variables of the model; expected some of "
            f"{sorted(model.named_vars)}"
        )
    return list(var_names)


#: keyword arguments of pm.sample and of its NUTS step, which **sample_kwargs may hold
#: (read from the module that defines pm.sample: the name ``pm.sample`` may be wrapped
#: when this module is first imported)
_SAMPLE_OPTIONS = frozenset(inspect.signature(pm_mcmc.sample).parameters) | frozenset(
    inspect.signature(pm.NUTS.__init__).parameters
)
#: options of sample() itself, or set by it
_OWN_OPTIONS = frozenset({"model", "return_inferencedata", "kwargs", "self", "vars"})


def _check_sample_kwargs(sample_kwargs) -> None:
    unknown = sorted(set(sample_kwargs) - (_SAMPLE_OPTIONS - _OWN_OPTIONS))
    if unknown:
        raise TypeError(f"unexpected keyword arguments for pymc.sample: {unknown}")


def sample(
    model: pm.Model,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    cores: int | None = None,
    random_seed=None,
    nuts_sampler: str = "pymc",
    target_accept: float = 0.9,
    var_names: Sequence[str] | None = None,
    step=None,
    X_new=None,
    Phi_new=None,
    progressbar: bool | None = None,
    return_inferencedata: bool = True,
    **sample_kwargs,
) -> xr.DataTree:
    """Sample the posterior of a :func:`~bayes_rvm.build_model` model with NUTS.

    Every option is checked before anything is compiled or sampled.

    Parameters
    ----------
    model : pymc.Model
        From :func:`~bayes_rvm.build_model` or :func:`model_from_estimator`, or a copy of
        one made by ``clone_model``, ``pm.do`` or ``pm.observe``.
    draws, tune, chains : int
        As ``pymc.sample`` (4 chains by default).
    cores : int, optional
        Parallel chains (PyMC's default when ``None``).
    random_seed : int, Generator or sequence of int, optional
        Seeds the sampler (one int per chain is accepted) and the exact ``w`` and
        prediction draws made here.
    nuts_sampler : {"pymc", "nutpie", "numpyro"}
        NUTS implementation; nutpie and numpyro are the optional ``samplers`` extra.
    target_accept : float
        Step-size adaptation target; raise it (0.95-0.99) if divergences are reported.
    var_names : list of str, optional
        Posterior variables to keep (``w``, ``log_alpha`` and ``log_beta`` are derived
        and kept in any case).
    step : PyMC step method, optional
        With ``nuts_sampler="pymc"`` only.
    X_new : array, optional
        New inputs (models from :func:`model_from_estimator`) for the ``predictions`` group.
    Phi_new : array of shape (N_new, M), optional
        New design rows for the ``predictions`` group.
    progressbar : bool, optional
        Default: on in a terminal or a notebook.
    return_inferencedata : bool
        Must be True: the fit is a DataTree (use ``pm.sample`` itself for a MultiTrace).
    **sample_kwargs
        Further ``pymc.sample`` (or NUTS) options.

    Returns
    -------
    xarray.DataTree
        The layout of the module notes. For the collapsed model ``w`` is drawn exactly from
        ``N(mu, Sigma)`` (Tipping 2001, eq. 12-13) at every posterior draw of
        ``(alpha, beta)``, which makes the joint draws exact posterior draws of ``w``, and
        ``log_likelihood`` holds the exact leave-one-out conditionals, so ``az.loo`` works.

    Raises
    ------
    ImportError
        When the requested sampler is not installed.
    ValueError, TypeError
        For an invalid option, before any compilation or sampling.
    """
    spec = model_spec(model)
    module = lookup(NUTS_SAMPLERS, nuts_sampler, "nuts_sampler")
    if return_inferencedata is not True:
        raise ValueError(
            "bayes_rvm.sample returns a DataTree (return_inferencedata=True); for a "
            "MultiTrace call pm.sample(model=model, return_inferencedata=False)"
        )
    if step is not None and nuts_sampler != "pymc":
        raise ValueError(f"step= needs nuts_sampler='pymc', got nuts_sampler={nuts_sampler!r}")
    if module is not None and importlib.util.find_spec(module) is None:
        raise ImportError(
            f"nuts_sampler={nuts_sampler!r} needs the {module!r} package, which is not "
            "installed; install the optional extra (pip install 'bayes_rvm[samplers]') or use "
            "nuts_sampler='pymc'"
        )
    _check_sample_kwargs(sample_kwargs)
    fitted = _fitted_model(model, spec)
    Phi_new = _check_new_design(spec.design, fitted.Phi.shape[1], X_new, Phi_new)
    chains = check_positive_int(chains, "chains")
    options = {
        "draws": check_positive_int(draws, "draws"),
        "tune": check_positive_int(tune, "tune", minimum=0),
        "chains": chains,
        "cores": None if cores is None else check_positive_int(cores, "cores"),
        "target_accept": check_open_unit(target_accept, "target_accept"),
        "random_seed": _check_seed(random_seed, chains),
        "progressbar": _check_progressbar(progressbar),
    }
    if step is not None:  # PyMC passes target_accept to NUTS only
        del options["target_accept"]
    keep = _check_var_names(model, var_names)
    if keep is not None:
        needed = [name for name in ("alpha", "beta", "w", "nu") if name in model.named_vars]
        options["var_names"] = sorted(set(keep) | set(needed))
    start = time.perf_counter()
    with warnings.catch_warnings():
        # JAX drops the collapsed model's check of Phi against gram, made above already
        warnings.filterwarnings("ignore", message="Skipping CheckAndRaise", category=UserWarning)
        tree = pm.sample(
            **options, nuts_sampler=nuts_sampler, step=step, model=model, **sample_kwargs
        )
    wall_time = time.perf_counter() - start
    attrs = _fit_attrs(spec, "mcmc", f"NUTS ({nuts_sampler})", "meaningful: Markov chains")
    rng = _numpy_rng(random_seed)
    tree = _complete(tree, fitted, _fixed_values(model), Phi_new, rng, attrs)
    tree.attrs["wall_time"] = wall_time
    if keep is not None:
        posterior = tree["posterior"].to_dataset()
        derived = {"w", "log_alpha", "log_beta"}
        kept = [name for name in posterior if name in set(keep) | derived]
        _set_group(tree, "posterior", posterior[kept])
    return tree


def _vb_tree(spec, fitted: _Fitted, n: int, draws: int, rng) -> tuple[xr.DataTree, np.ndarray]:
    """The analytic variational RVM (Bishop and Tipping 2000) as a one-chain tree."""
    if spec.likelihood != "gaussian":
        raise ValueError(
            f"method='vb' is the variational RVM of the Gaussian likelihood; the model has "
            f"likelihood={spec.likelihood!r}: use method='advi' or 'fullrank_advi'"
        )
    if spec.a is None or spec.b is None or (spec.noise_var is None and spec.c is None):
        raise ValueError(
            "method='vb' needs constant Gamma hyperparameters a, b (and c, d or a fixed "
            "noise); this model's prior is hierarchical: use method='advi'"
        )
    result = fit_vb(
        fitted.Phi,
        fitted.t,
        a=spec.a,
        b=spec.b,
        c=spec.c,
        d=spec.d,
        noise_var=spec.noise_var,
        max_iter=n,
    )
    if not result.converged:
        warnings.warn(
            f"method='vb' stopped after {n} sweeps before the lower bound settled; increase n",
            UserWarning,
            stacklevel=3,
        )
    m = fitted.Phi.shape[1]
    alpha = rng.gamma(result.alpha_shape, 1.0 / result.alpha_rate, (draws, m))
    w = _gaussian_draws(result.mu, result.precision_chol, rng, draws)
    variables = {
        "alpha": (("chain", "draw", "basis"), alpha[None]),
        "w": (("chain", "draw", "basis"), w[None]),
    }
    if result.beta_shape is not None:
        beta = rng.gamma(result.beta_shape, 1.0 / result.beta_rate, draws)
        variables["beta"] = (("chain", "draw"), beta[None])
    coords = {**fitted.coords, "chain": np.arange(1), "draw": np.arange(draws)}
    tree = xr.DataTree()
    _set_group(tree, "posterior", _dataset(variables, coords))
    return tree, -result.lower_bound_path


def _loss_trend(loss: np.ndarray) -> tuple[float, float]:
    """The fall of a least-squares line through ``loss`` over its span, and its standard error."""
    x = np.arange(loss.size) - (loss.size - 1) / 2.0
    slope = float(x @ (loss - loss.mean()) / (x @ x))
    residual = loss - loss.mean() - slope * x
    se = float(np.sqrt(residual @ residual / (loss.size - 2) / (x @ x)))
    return -slope * loss.size, se * loss.size


def _advi_tree(model, method, n, draws, random_seed, progressbar, tolerance, fit_kwargs):
    """ADVI with PyMC's parameter-convergence callback; a warning when it never fires."""
    check = CheckParametersConvergence(
        every=max(n // 50, 100), tolerance=tolerance, diff="absolute"
    )
    callbacks = [*fit_kwargs.pop("callbacks", []), check]
    approx = pm.fit(
        n=n,
        method=method,
        model=model,
        random_seed=random_seed,
        progressbar=progressbar,
        callbacks=callbacks,
        **fit_kwargs,
    )
    loss = np.asarray(approx.hist, dtype=np.float64)
    if loss.size >= n:  # the parameters never settled: is the loss still falling?
        falling, noise = _loss_trend(loss[-max(2 * n // 5, 20) :])
        if not np.isfinite(falling) or falling > 3.0 * noise:
            warnings.warn(
                f"{method} has not converged after n={n} steps: the loss fell by "
                f"{falling:.3g} (+- {noise:.2g}) over the last {2 * n // 5} steps and "
                f"its parameters still moved by more than tolerance={tolerance:g}. Increase n, "
                "lower the learning rate (obj_optimizer), or use method='vb' (closed-form "
                "updates) for the Gaussian likelihood.",
                UserWarning,
                stacklevel=3,
            )
    tree = approx.sample(draws, random_seed=random_seed)
    return tree, loss


def fit_vi(
    model: pm.Model,
    *,
    method: str = "advi",
    n: int = 20_000,
    draws: int = 1000,
    random_seed: int | None = None,
    X_new=None,
    Phi_new=None,
    progressbar: bool | None = None,
    tolerance: float = 1e-2,
    **fit_kwargs,
) -> xr.DataTree:
    """Variational fit of a :func:`~bayes_rvm.build_model` model.

    Parameters
    ----------
    model : pymc.Model
    method : {"advi", "fullrank_advi", "vb"}
        ``"advi"`` / ``"fullrank_advi"``: mean-field or full-rank Gaussian approximation
        on the unconstrained scale (``log alpha``, ``log beta``, and ``z`` / ``w`` unless
        the model is collapsed, whose ``w`` is then drawn exactly given each draw).
        ``"vb"``: the variational RVM of Bishop and Tipping (2000) for the Gaussian
        likelihood, ``q(w) q(alpha) q(beta)`` with closed-form updates
        (:mod:`bayes_rvm.variational`); fast, and its lower bound never decreases.
    n : int
        Optimisation steps (``pymc.fit``), or the most sweeps of ``"vb"``.
    draws : int
        Draws from the fitted approximation (one chain).
    random_seed : int, optional
    X_new, Phi_new : array, optional
        New inputs or design rows for the ``predictions`` group (see :func:`sample`).
    progressbar : bool, optional
        Default: on in a terminal or a notebook (ADVI).
    tolerance : float
        ADVI stops early once the largest change of its parameters over ``n / 50`` steps
        (at least 100) is below ``tolerance``
        (``pymc.variational.callbacks.CheckParametersConvergence``). When that never
        happens and the loss is still falling over the last 40 % of the steps (by more
        than three standard errors of a straight-line fit), a ``UserWarning`` says so and
        what to do.
    **fit_kwargs
        Further ``pymc.fit`` options (e.g. ``obj_optimizer``, ``callbacks``).

    Returns
    -------
    xarray.DataTree
        The layout of the module notes; ``sample_stats["loss"]`` (dim ``iteration``) is
        the negative lower bound (ELBO) after every step or sweep.

    Raises
    ------
    ValueError, TypeError
        For invalid options, before the optimisation starts.
    """
    spec = model_spec(model)
    method = lookup(VI_METHODS, method, "VI method")
    fitted = _fitted_model(model, spec)
    Phi_new = _check_new_design(spec.design, fitted.Phi.shape[1], X_new, Phi_new)
    n, draws = check_positive_int(n, "n"), check_positive_int(draws, "draws")
    progressbar = _check_progressbar(progressbar)
    if not (isinstance(tolerance, float | int) and tolerance > 0):
        raise ValueError(f"tolerance must be a number > 0, got {tolerance!r}")
    random_seed = _check_seed(random_seed, 1)
    if method == "vb" and fit_kwargs:
        raise TypeError(f"method='vb' takes no pymc.fit options, got {sorted(fit_kwargs)}")
    rng = _numpy_rng(random_seed)
    start = time.perf_counter()
    if method == "vb":
        tree, loss = _vb_tree(spec, fitted, n, draws, rng)
        names = {"vb": "variational RVM (Bishop and Tipping 2000)"}
    else:
        tree, loss = _advi_tree(
            model, method, n, draws, random_seed, progressbar, tolerance, dict(fit_kwargs)
        )
        names = {"advi": "ADVI (mean-field)", "fullrank_advi": "ADVI (full-rank)"}
    wall_time = time.perf_counter() - start
    _set_group(
        tree,
        "sample_stats",
        xr.Dataset({"loss": (("iteration",), loss)}, coords={"iteration": np.arange(loss.size)}),
    )
    attrs = _fit_attrs(spec, "vi", names[method], _INDEPENDENT_DRAWS)
    tree = _complete(tree, fitted, _fixed_values(model), Phi_new, rng, attrs)
    tree.attrs["wall_time"] = wall_time
    return tree


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
    if basis == "relevant" and active.size == 0:
        raise ValueError(
            "the evidence fit kept no basis function (every alpha_i went to infinity), so "
            "there is no relevant basis to build on; use basis='all' for every basis function"
        )
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
    parameterization: str | None = None,
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
    parameterization : {"collapsed", "noncentred", "centred"}, optional
        Default ``"collapsed"`` for regression, ``"noncentred"`` for classification.

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
    classification, with no ``beta``). The draws are independent, not Markov chains: the
    attribute ``sampling_diagnostics`` says so, and :func:`compare` reports r_hat and ESS
    as "n/a". In regression ``log_likelihood`` holds the exact leave-one-out conditionals
    ``log p(t_n | t_-n)`` at the type-II estimates: ``az.loo`` of this tree is conditional on
    hyperparameters that were fitted on all the data, so it is optimistic next to the LOO of
    a full-Bayes fit.

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
        # a sparse design is densified first, then checked like any other
        Phi = check_design(X.toarray() if hasattr(X, "toarray") else X)
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
    if not get_likelihood(result.likelihood).datatree:
        able = [name for name, entry in LIKELIHOODS.items() if entry.datatree]
        raise ValueError(
            f"to_inference_data handles the likelihoods {able}; the fit has "
            f"likelihood={result.likelihood!r}"
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
    fitted = _Fitted(result.likelihood, Phi, t, coords)
    loo = pointwise = None
    if result.likelihood == "gaussian":
        row = _loo_gaussian(Phi[:, position], t, result.mu, result.precision_chol, result.beta)
        loo = np.broadcast_to(row, (1, draws, row.size))
        pointwise = (
            "log p(t_n | t_-n, alpha, beta) at the type-II estimates of alpha, beta: exact "
            "leave-one-out conditionals, conditional on hyperparameters fitted on all the data"
        )
    tree = _complete(
        tree,
        fitted,
        {},
        Phi_new,
        rng,
        {
            "fit": "evidence",
            "method": f"type-II maximum likelihood ({result.solver})",
            "likelihood": result.likelihood,
            "parameterization": "evidence",
            "sampling_diagnostics": _INDEPENDENT_DRAWS,
            "log_evidence": result.log_evidence,
        },
        loo=loo,
        pointwise=pointwise,
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


def _loo_row(tree) -> dict:
    """elpd_loo of a fit: PSIS-LOO of the draws, exact for evidence fits, else n/a."""
    row = {"elpd_loo": np.nan, "elpd_loo_se": np.nan, "loo": "n/a: no log_likelihood group"}
    if "log_likelihood" not in tree.children:
        return row
    if tree.attrs.get("fit") == "evidence":
        terms = _flat(tree["log_likelihood"]["t"])[0]
        if tree.attrs.get("likelihood") != "gaussian":
            return {**row, "loo": "n/a: no exact leave-one-out form (classification)"}
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


def _basis_rows(name: str, tree, fitted: _Fitted, level: float) -> pd.DataFrame:
    posterior = tree["posterior"]
    log_alpha = _flat(np.log(posterior["alpha"].transpose("chain", "draw", ...)))
    w = _flat(posterior["w"].transpose("chain", "draw", ...))
    with np.errstate(invalid="ignore"):  # inf - inf for pruned columns of evidence fits
        log_alpha_sd = np.where(np.isinf(log_alpha[0]), 0.0, log_alpha.std(axis=0))
    lower, upper = np.quantile(w, [(1 - level) / 2, (1 + level) / 2], axis=0)
    gamma = _shrinkage(tree, fitted)
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
    hyper = xr.Dataset({"log_alpha": np.log(posterior["alpha"])})
    if "beta" in posterior and float(np.ptp(posterior["beta"].values)) > 0.0:  # learned noise
        hyper["log_beta"] = np.log(posterior["beta"])
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


def compare(
    fits: Mapping[str, xr.DataTree],
    t_test,
    *,
    Phi_test=None,
    X_test=None,
    interval: float = 0.95,
    random_seed=None,
) -> Comparison:
    """Compare fits of the same model (evidence, MCMC, VI, or your own PyMC model).

    Parameters
    ----------
    fits : mapping name -> DataTree
        From :func:`sample`, :func:`fit_vi`, :func:`to_inference_data`, or any DataTree
        with a posterior ``w`` and the design ``Phi`` in ``constant_data`` (``pm.sample`` of
        a model built with :func:`~bayes_rvm.rvm_weights`). Each needs ``predictions`` at
        the test points, or ``Phi_test`` / ``X_test`` to make them (:func:`predict`).
    t_test : array
        Test targets; for classification, labels of the fits' classes (strings are fine).
    Phi_test, X_test : array, optional
        Test design rows or inputs: predictions are made for every fit with
        :func:`predict` (replacing any ``predictions`` group).
    interval : float
        Level of the central predictive interval whose coverage is reported.
    random_seed : int, optional
        For the predictive draws made here.

    Returns
    -------
    Comparison

    Notes
    -----
    The predictive distribution of every fit is the mixture over its draws: the
    predictive mean is ``mean_s f_s(x)``, its variance ``var_s f_s(x) + mean_s 1/beta_s``
    (eq. 22 when the draws come from the Gaussian posterior), and the log predictive
    density ``log (1/S) sum_s p(t | f_s(x), beta_s)``. The interval is the central one of
    the draws of a new target. LOO: PSIS-LOO (``az.loo``) for MCMC and VI fits, the exact
    Gaussian formula at the point estimates for evidence fits (conditional on them, hence
    optimistic).
    """
    if not fits:
        raise ValueError("expected at least one fit to compare")
    if not 0 < interval < 1:
        raise ValueError(f"interval must be in (0, 1), got {interval}")
    predictive, basis, diagnostics = [], [], []
    for name, tree in fits.items():
        try:
            fitted = _fitted(tree)
        except (TypeError, ValueError) as err:
            raise type(err)(f"fit {name!r}: {err}") from err
        if Phi_test is not None or X_test is not None:
            tree = predict(tree, Phi_new=Phi_test, X_new=X_test, random_seed=random_seed)
        elif "predictions" not in tree.children:
            raise ValueError(
                f"fit {name!r} has no predictions group: pass Phi_test or X_test, or "
                "X_new / Phi_new when fitting"
            )
        row = _predictive_row(tree, fitted.likelihood, t_test, interval)
        predictive.append({"fit": name, **row, **_loo_row(tree)})
        basis.append(_basis_rows(name, tree, fitted, interval))
        diagnostics.append({"fit": name, **_diagnostics_row(tree)})
    return Comparison(
        predictive=pd.DataFrame(predictive).set_index("fit"),
        basis=pd.concat(basis, ignore_index=True),
        diagnostics=pd.DataFrame(diagnostics).set_index("fit"),
    )
