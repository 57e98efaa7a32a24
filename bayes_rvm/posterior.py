"""The Gaussian posterior over the weights of the active basis functions, and predictions.

``Sigma = (A + beta Phi^T Phi)^-1`` and ``mu = beta Sigma Phi^T t`` (Tipping 2001,
eq. 12-13) are kept as the lower Cholesky factor ``L`` of ``Sigma^-1`` and ``mu``.
"""

from __future__ import annotations

import numpy as np

from bayes_rvm import _linalg

__all__ = ["gaussian_posterior", "predictive"]


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
    # Tipping (2001) eq. 12: Sigma^-1 = A + beta Phi^T Phi
    H = beta * gram
    H[np.diag_indices_from(H)] += alpha
    L = _linalg.cholesky(H)
    # Tipping (2001) eq. 13: mu = beta Sigma Phi^T t
    mu = _linalg.cho_solve(L, beta * phi_t)
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
