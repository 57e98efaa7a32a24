"""The Gaussian posterior over the weights of the active basis functions, and predictions.

``Sigma = (A + beta Phi^T Phi)^-1`` and ``mu = beta Sigma Phi^T t`` (Tipping 2001,
eq. 12-13) are kept as the lower Cholesky factor ``L`` of ``Sigma^-1`` and ``mu``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bayes_rvm import _linalg
from bayes_rvm.evidence import Prior, log_evidence_gaussian

__all__ = [
    "GaussianFit",
    "fit_gaussian",
    "gaussian_posterior",
    "posterior_from_rows",
    "precision_factor",
    "predictive",
]


def precision_factor(gram: np.ndarray, alpha: np.ndarray, beta: float) -> np.ndarray:
    """Lower Cholesky factor of the posterior precision ``A + beta Phi^T Phi``, from
    ``gram = Phi^T Phi`` over the active columns and their precisions ``alpha``."""
    # Tipping (2001) eq. 12: Sigma^-1 = A + beta Phi^T Phi
    H = beta * gram
    H[np.diag_indices_from(H)] += alpha
    return _linalg.cholesky(H)


def gaussian_posterior(
    gram: np.ndarray, phi_t: np.ndarray, alpha: np.ndarray, beta: float
) -> tuple[np.ndarray, np.ndarray]:
    """Factor of the posterior precision and the posterior mean.

    Parameters
    ----------
    gram : ``Phi^T Phi`` over the active columns, shape ``(M, M)``
    phi_t : ``Phi^T t`` over the active columns
    alpha : active precisions, shape ``(M,)``
    beta : noise precision

    Returns
    -------
    L : lower Cholesky factor of ``Sigma^-1``
    mu : posterior mean
    """
    L = precision_factor(gram, alpha, beta)
    # Tipping (2001) eq. 13: mu = beta Sigma Phi^T t
    mu = _linalg.cho_solve(L, beta * phi_t)
    return L, mu


@dataclass(frozen=True)
class GaussianFit:
    """The Gaussian weight posterior at given ``alpha, beta``, and the evidence from it.

    Built by :func:`fit_gaussian`. Every solver that needs the posterior of a Gaussian
    likelihood (re-estimation, the sequential algorithm's checks, the input-scale
    gradient) takes it from here: eq. 12-13 for the factor and the mean, eq. 36 for the
    objective.

    Attributes
    ----------
    L : ndarray of shape (M, M)
        Lower Cholesky factor of ``Sigma^-1 = A + beta Phi^T Phi`` (eq. 12).
    mu : ndarray of shape (M,)
        Posterior mean ``beta Sigma Phi^T t`` (eq. 13).
    residual : ndarray of shape (N,)
        ``t - Phi mu``.
    alpha : ndarray of shape (M,)
    beta : float
    n_rows : int, optional
        ``N`` of the evidence when the rows of ``Phi`` stand for more rows: a reduced
        design ``[R; 0]`` with target ``[z; r]`` (:meth:`~bayes_rvm.basis.Basis.reduce`)
        has the residual norm of the ``N`` rows it reduces. ``residual.size`` if ``None``.
    """

    L: np.ndarray
    mu: np.ndarray
    residual: np.ndarray
    alpha: np.ndarray
    beta: float
    n_rows: int | None = None

    @property
    def rss(self) -> float:
        """``||t - Phi mu||^2``."""
        return float(self.residual @ self.residual)

    @property
    def sigma_diag(self) -> np.ndarray:
        """``diag(Sigma)`` by triangular solves."""
        return _linalg.inverse_diag(self.L)

    def log_marginal(self) -> float:
        """``log N(t | 0, beta^-1 I + Phi A^-1 Phi^T)`` (eq. 15 through eq. 38 and 41)."""
        return log_evidence_gaussian(self.L, self.mu, self.alpha, self.beta, self.rss, self.n)

    @property
    def n(self) -> int:
        return self.residual.size if self.n_rows is None else self.n_rows

    def log_evidence(self, prior: Prior, *, noise_learned: bool = True) -> float:
        """The objective of eq. 36: :meth:`log_marginal` plus the Gamma hyperprior terms
        (the noise term only when ``beta`` is learned)."""
        return self.log_marginal() + prior.log_density(
            self.alpha, self.beta if noise_learned else None
        )


def fit_gaussian(
    Phi: np.ndarray,
    t: np.ndarray,
    alpha: np.ndarray,
    beta: float,
    *,
    gram: np.ndarray | None = None,
    phi_t: np.ndarray | None = None,
    n_rows: int | None = None,
) -> GaussianFit:
    """The Gaussian posterior over the weights of the columns of ``Phi`` (Tipping 2001,
    eq. 12-13) and its residual.

    Parameters
    ----------
    Phi : array of shape (N, M)
        The active columns.
    t : array of shape (N,)
    alpha : array of shape (M,)
    beta : float
    gram, phi_t : arrays, optional
        ``Phi^T Phi`` and ``Phi^T t`` when the caller has them. Without them the factor
        and the mean come from the rows themselves (:func:`posterior_from_rows`), which
        keeps their accuracy where ``Phi^T Phi`` would not.
    n_rows : int, optional
        ``N`` when ``Phi`` and ``t`` are a reduced design and target (see
        :class:`GaussianFit`).

    Returns
    -------
    GaussianFit
    """
    if gram is None and phi_t is None:
        L, mu = posterior_from_rows(Phi, t, alpha, beta)
    else:
        gram = Phi.T @ Phi if gram is None else gram
        phi_t = Phi.T @ t if phi_t is None else phi_t
        L, mu = gaussian_posterior(gram, phi_t, alpha, beta)
    return GaussianFit(L, mu, t - Phi @ mu, alpha, beta, n_rows=n_rows)


def posterior_from_rows(
    Phi: np.ndarray, t: np.ndarray, alpha: np.ndarray, beta: float
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`gaussian_posterior` from the design rows, without forming ``Phi^T Phi``.

    ``mu`` minimises ``beta ||t - Phi w||^2 + w^T A w`` (Tipping 2001, eq. 12-13): the
    least-squares problem of ``X = [beta^1/2 Phi; A^1/2]`` and ``[beta^1/2 t; 0]``, with
    ``X^T X = A + beta Phi^T Phi``. The triangular ``R`` of ``X = Q R`` (positive
    diagonal) is ``L^T``, and ``mu = R^-1 Q^T [beta^1/2 t; 0]``. ``cond(X)`` is the square
    root of ``cond(A + beta Phi^T Phi)``: with nearly collinear columns whose ``1 / alpha``
    span many decades (a broad kernel) the factor keeps the digits that forming
    ``Phi^T Phi`` loses, and the log evidence from it with them.

    Returns
    -------
    L : lower Cholesky factor of ``Sigma^-1``
    mu : posterior mean
    """
    M = alpha.size
    if M == 0:
        return np.zeros((0, 0)), np.zeros(0)
    root = np.sqrt(beta)
    X = np.vstack([root * Phi, np.diag(np.sqrt(alpha))])
    rhs = np.concatenate([root * t, np.zeros(M)])
    # the last column of the R of [X | rhs] holds Q^T rhs over the first M rows
    R = np.linalg.qr(np.column_stack([X, rhs]), mode="r")[:M]
    signs = np.where(np.diag(R) < 0, -1.0, 1.0)  # R = diag(signs) L^T
    L = (R[:, :M] * signs[:, None]).T
    # Tipping (2001) eq. 13: mu = beta Sigma Phi^T t, here R mu = Q^T [beta^1/2 t; 0]
    mu = _linalg.solve_lower(L, R[:, M] * signs, transpose=True)
    return L, mu


def predictive(
    Phi_star: np.ndarray, mu: np.ndarray, L: np.ndarray, beta: float | None
) -> tuple[np.ndarray, np.ndarray]:
    """Predictive mean and variance at new design rows (active columns only).

    Returns ``(Phi_star mu, var)`` with ``var = 1/beta + phi_*^T Sigma phi_*``
    (Tipping 2001, eq. 21-22); for ``beta=None`` only the weight part
    ``phi_*^T Sigma phi_*`` (the variance of the latent function).
    """
    # Tipping (2001) eq. 21: y_* = mu^T phi(x_*)
    mean = Phi_star @ mu
    Z = _linalg.solve_lower(L, Phi_star.T) if L.size else np.zeros((0, Phi_star.shape[0]))
    # Tipping (2001) eq. 22: sigma_*^2 = sigma^2 + phi(x_*)^T Sigma phi(x_*)
    var = np.einsum("ij,ij->j", Z, Z)
    if beta is not None:
        var = var + 1.0 / beta
    return mean, var
