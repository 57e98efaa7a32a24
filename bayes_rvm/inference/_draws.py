"""Draws and per-draw quantities shared by every fit: Gaussian weight draws, exact
leave-one-out terms, pointwise log densities, predictive draws, and Dataset helpers."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr
from scipy import stats
from scipy.special import log_expit, log_softmax

from bayes_rvm import _linalg
from bayes_rvm._collapsed import loo_terms
from bayes_rvm.evidence import LOG_2PI
from bayes_rvm.posterior import gaussian_posterior
from bayes_rvm.posterior import predictive as gaussian_predictive

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
    """``log p(t_n | t_-n)`` of the Gaussian marginal (:func:`bayes_rvm._collapsed.loo_terms`)
    from the weight posterior: ``Phi``, ``mu`` and ``L`` (the factor of ``Sigma^-1``) over
    the active columns."""
    mean, weight_var = gaussian_predictive(Phi, mu, L, None)  # Phi mu, phi_n^T Sigma phi_n
    # 1 / var(t_n | t_-n) = beta - beta^2 phi_n^T Sigma phi_n > 0 on the design of the fit
    outside = beta * weight_var >= 1.0
    if np.any(outside):
        raise ValueError(
            "the leave-one-out terms need the design rows of the training inputs: "
            f"{int(np.sum(outside))} of {outside.size} rows give a non-positive leave-one-out "
            "precision, so Phi (or X) is not the one the fit was made on"
        )
    return loo_terms(t - mean, weight_var, beta)


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
