"""The variational RVM of Bishop and Tipping (2000): mean-field VB with closed-form updates.

For the Gaussian likelihood the posterior of ``(w, alpha, beta)`` is approximated by
``q(w) q(alpha) q(beta)``. Each factor's optimum given the others is a standard form, so
coordinate ascent needs no gradients and no step size:

- ``q(w) = N(mu, Sigma)`` with ``Sigma = (diag <alpha> + <beta> Phi^T Phi)^-1`` and
  ``mu = <beta> Sigma Phi^T t`` (the weight posterior of Tipping 2001, eq. 12-13, at the
  expected precisions);
- ``q(alpha_i) = Gamma(a + 1/2, b + <w_i^2> / 2)`` with ``<w_i^2> = mu_i^2 + Sigma_ii``;
- ``q(beta) = Gamma(c + N/2, d + <||t - Phi w||^2> / 2)`` with
  ``<||t - Phi w||^2> = ||t - Phi mu||^2 + tr(Phi^T Phi Sigma)``.

Each update maximises the lower bound on ``log p(t)`` over one factor, so the bound
never decreases; :func:`fit_vb` records it after every sweep.

References
----------
Bishop, C. M. and Tipping, M. E. (2000). Variational relevance vector machines. UAI.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import digamma, gammaln

from bayes_rvm import _linalg
from bayes_rvm.evidence import LOG_2PI
from bayes_rvm.posterior import gaussian_posterior

__all__ = ["VBResult", "fit_vb", "lower_bound"]


@dataclass(frozen=True)
class VBResult:
    """The factors of the variational posterior and the bound path.

    Attributes
    ----------
    mu : array (M,)
        Mean of ``q(w)``.
    precision_chol : array (M, M)
        Lower Cholesky factor of ``Sigma^-1``.
    alpha_shape, alpha_rate : array (M,)
        ``q(alpha_i) = Gamma(alpha_shape_i, alpha_rate_i)``.
    beta_shape, beta_rate : float or None
        ``q(beta)``; ``None`` when the noise precision is fixed (``beta_fixed``).
    beta_fixed : float or None
    lower_bound_path : array
        The lower bound on ``log p(t)`` after each sweep (non-decreasing).
    n_iter : int
    converged : bool
    """

    mu: np.ndarray
    precision_chol: np.ndarray
    alpha_shape: np.ndarray
    alpha_rate: np.ndarray
    beta_shape: float | None
    beta_rate: float | None
    beta_fixed: float | None
    lower_bound_path: np.ndarray
    n_iter: int
    converged: bool

    @property
    def lower_bound(self) -> float:
        return float(self.lower_bound_path[-1])


def _gamma_entropy(shape, rate):
    return shape - np.log(rate) + gammaln(shape) + (1.0 - shape) * digamma(shape)


def _expected_log_gamma_prior(mean, mean_log, shape, rate):
    """``E_q[log Gamma(x | shape, rate)]`` from ``E[x]`` and ``E[log x]``."""
    return shape * np.log(rate) - gammaln(shape) + (shape - 1.0) * mean_log - rate * mean


def _moments(Phi, t, mu, L) -> tuple[np.ndarray, float]:
    """``diag(Sigma)`` and ``E||t - Phi w||^2 = ||t - Phi mu||^2 + tr(Phi Sigma Phi^T)`` under
    ``q(w) = N(mu, (L L^T)^-1)``."""
    Z = _linalg.solve_lower(L, Phi.T)
    return _linalg.inverse_diag(L), float(np.sum((t - Phi @ mu) ** 2) + np.sum(Z**2))


def lower_bound(
    Phi, t, mu, precision_chol, alpha_shape, alpha_rate, beta_q, a, b, c=None, d=None
) -> float:
    """The variational lower bound ``E_q[log p(t, w, alpha, beta)] + H[q]``.

    Parameters
    ----------
    Phi, t : the data
    mu, precision_chol : ``q(w) = N(mu, (L L^T)^-1)``
    alpha_shape, alpha_rate : ``q(alpha)``
    beta_q : tuple ``(shape, rate)`` of ``q(beta)``, or a float (a fixed noise precision)
    a, b, c, d : the Gamma hyperparameters (``c, d`` unused for a fixed noise precision)
    """
    moments = _moments(Phi, t, mu, precision_chol)
    return _bound(Phi.shape[0], mu, precision_chol, moments, alpha_shape, alpha_rate, beta_q,
                  a, b, c, d)  # fmt: skip


def _bound(n, mu, L, moments, alpha_shape, alpha_rate, beta_q, a, b, c, d) -> float:
    """:func:`lower_bound` from the moments of ``q(w)`` (:func:`_moments`)."""
    m = mu.size
    sigma_diag, expected_rss = moments
    w2 = mu**2 + sigma_diag
    alpha_mean = alpha_shape / alpha_rate
    alpha_log = digamma(alpha_shape) - np.log(alpha_rate)
    if isinstance(beta_q, tuple):
        beta_shape, beta_rate = beta_q
        beta_mean, beta_log = beta_shape / beta_rate, digamma(beta_shape) - np.log(beta_rate)
        beta_terms = _expected_log_gamma_prior(beta_mean, beta_log, c, d) + _gamma_entropy(
            beta_shape, beta_rate
        )
    else:
        beta_mean, beta_log, beta_terms = float(beta_q), float(np.log(beta_q)), 0.0
    likelihood = 0.5 * n * (beta_log - LOG_2PI) - 0.5 * beta_mean * expected_rss
    weight_prior = 0.5 * np.sum(alpha_log - LOG_2PI - alpha_mean * w2)
    alpha_prior = np.sum(_expected_log_gamma_prior(alpha_mean, alpha_log, a, b))
    # entropy of N(mu, Sigma): M/2 (1 + log 2 pi) + 1/2 log|Sigma|, log|Sigma| = -log|L L^T|
    weight_entropy = 0.5 * m * (1.0 + LOG_2PI) - 0.5 * _linalg.logdet(L)
    alpha_entropy = np.sum(_gamma_entropy(alpha_shape, alpha_rate))
    return float(
        likelihood + weight_prior + alpha_prior + weight_entropy + alpha_entropy + beta_terms
    )


def fit_vb(
    Phi,
    t,
    *,
    a,
    b,
    c: float | None = None,
    d: float | None = None,
    noise_var: float | None = None,
    max_iter: int = 1000,
    tol: float = 1e-8,
) -> VBResult:
    """Coordinate ascent on the variational lower bound of the Gaussian RVM.

    Parameters
    ----------
    Phi : array (N, M)
    t : array (N,)
    a, b : float or array (M,)
        Proper Gamma prior on each ``alpha_i``.
    c, d : float, optional
        Proper Gamma prior on ``beta`` (learned noise).
    noise_var : float, optional
        A fixed noise variance instead (``c, d`` unset).
    max_iter : int
        Sweeps (each updates ``q(w)``, ``q(alpha)``, ``q(beta)`` once).
    tol : float
        Stop when the bound rises by less than ``tol * |bound|`` in a sweep.

    Returns
    -------
    VBResult
    """
    n, m = Phi.shape
    a = np.broadcast_to(np.asarray(a, dtype=np.float64), (m,))
    b = np.broadcast_to(np.asarray(b, dtype=np.float64), (m,))
    gram, phi_t = Phi.T @ Phi, Phi.T @ t
    alpha_shape = a + 0.5
    learned = noise_var is None
    beta_shape = c + 0.5 * n if learned else None
    # start from the prior means of alpha and a noise of a tenth of the target variance
    alpha_mean = a / b
    beta_mean = 10.0 / max(float(np.var(t)), 1e-12) if learned else 1.0 / noise_var
    beta_rate = None  # q(beta)'s rate, from the first sweep on when the noise is learned
    path = []
    converged = False
    for _ in range(max_iter):
        # q(w): the Gaussian posterior at the expected precisions (Tipping 2001, eq. 12-13)
        L, mu = gaussian_posterior(gram, phi_t, alpha_mean, beta_mean)
        moments = sigma_diag, expected_rss = _moments(Phi, t, mu, L)
        # q(alpha_i) = Gamma(a + 1/2, b + <w_i^2> / 2)
        alpha_rate = b + 0.5 * (mu**2 + sigma_diag)
        alpha_mean = alpha_shape / alpha_rate
        if learned:
            # q(beta) = Gamma(c + N/2, d + <||t - Phi w||^2> / 2)
            beta_rate = d + 0.5 * expected_rss
            beta_mean = beta_shape / beta_rate
        beta_q = (beta_shape, beta_rate) if learned else beta_mean
        path.append(_bound(n, mu, L, moments, alpha_shape, alpha_rate, beta_q, a, b, c, d))
        if len(path) > 1 and path[-1] - path[-2] <= tol * abs(path[-1]):
            converged = True
            break
    return VBResult(
        mu=mu,
        precision_chol=L,
        alpha_shape=alpha_shape,
        alpha_rate=alpha_rate,
        beta_shape=beta_shape,
        beta_rate=beta_rate,
        beta_fixed=None if learned else beta_mean,
        lower_bound_path=np.asarray(path),
        n_iter=len(path),
        converged=converged,
    )
