"""Fits as ArviZ ``DataTree`` objects: the groups derived from a posterior, and the
evidence (type-II) fit laid out like the MCMC and VI fits (:func:`to_inference_data`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from bayes_rvm._validation import (
    check_design,
    check_positive_int,
    check_target,
    lookup,
)
from bayes_rvm.inference._draws import (
    _INDEPENDENT_DRAWS,
    _dataset,
    _exact_weights,
    _gaussian_draws,
    _log_density,
    _numpy_rng,
    _predictive_draws,
    _set_group,
)
from bayes_rvm.inference.estimator import BASIS_CHOICES, _estimator_design, _targets
from bayes_rvm.likelihoods import LIKELIHOODS, get_likelihood
from bayes_rvm.solvers import Type2Result

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


def _fitted(tree: xr.DataTree, likelihood: str) -> _Fitted:
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
    return _Fitted(likelihood, Phi, t, coords)


def _per_draw(posterior: xr.Dataset, name: str, shape) -> np.ndarray | None:
    if name not in posterior:
        return None
    return np.broadcast_to(posterior[name].values, shape)


def _complete(tree, fitted: _Fitted, fixed, Phi_new, rng, attrs, pointwise=None) -> xr.DataTree:
    """Add exact ``w`` draws (collapsed form), log alpha / log beta, log likelihood, data and
    predictions to a tree holding the posterior of ``alpha`` (and ``beta``).

    ``fixed``: values of ``alpha`` / ``beta`` that the model holds fixed (``pm.do``,
    ``pm.observe``, a fixed noise), repeated over the draws. ``pointwise``: what the
    log-likelihood terms are, when the caller says more than the default (evidence fits).
    In the collapsed form the terms are the exact leave-one-out conditionals.
    """
    loo = None
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
        pointwise = pointwise or (
            "log p(t_n | w, beta): the likelihood of each observation given each draw"
        )
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


def _record_inputs(tree: xr.DataTree, X_new) -> None:
    """Keep the inputs the predictions were made at (so that :func:`compare` can match them)."""
    if X_new is None or "predictions_constant_data" not in tree.children:
        return
    data = tree["predictions_constant_data"].to_dataset()
    X_new = np.asarray(X_new)
    dims = ("obs", *(f"X_dim_{i}" for i in range(1, X_new.ndim)))
    data["X"] = (dims, X_new)
    _set_group(tree, "predictions_constant_data", data)


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
    as "n/a". ``log_likelihood`` holds ``log p(t_n | w, beta)`` at each draw of ``w``:
    ``az.loo`` and ``az.compare`` of this tree estimate the leave-one-out predictive given the
    type-II ``alpha`` and ``beta``, which were fitted on all the data, so they are optimistic
    next to the LOO of a full-Bayes fit; :func:`compare` reports the exact leave-one-out
    conditionals ``log p(t_n | t_-n)`` of the Gaussian marginal in closed form.

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
    # the likelihood of each row given each draw of w ~ N(mu, Sigma): az.loo then estimates
    # the leave-one-out conditionals given the type-II alpha, beta (compare: exactly)
    pointwise = (
        "log p(t_n | w, beta) at draws of w from the posterior given the type-II estimates of "
        "alpha, beta: PSIS-LOO (az.loo) of these terms is conditional on hyperparameters "
        "fitted on all the data (optimistic); bayes_rvm.compare reports it in closed form"
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
        pointwise=pointwise,
    )
    _record_inputs(tree, X_new if not isinstance(fit, Type2Result) else None)
    return tree
