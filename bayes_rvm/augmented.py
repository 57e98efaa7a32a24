"""The augmented predictive of the RVM (the RVM*, Rasmussen & Quiñonero-Candela 2005).

With localised basis functions the RVM's predictive variance (Tipping 2001, eq. 22) falls
back to the noise level away from the relevance vectors: a sparse model has no basis
function there, so it is sure the function is zero. The RVM* adds, at each test input
``x*``, one more basis function centred on it, keeps the fitted ``alpha`` and ``beta`` of the
others, and predicts from the Gaussian posterior over the augmented weights ``[w, w*]``.
Near the data the new weight is pinned down by the training targets and little changes;
far from it the new weight keeps its prior, and the error bars grow back to the prior
variance of the new function.
"""

from __future__ import annotations

import numpy as np

from bayes_rvm import _linalg

__all__ = ["augmented_predictive", "default_alpha_star"]


def augmented_predictive(
    Phi: np.ndarray,
    t: np.ndarray,
    mu: np.ndarray,
    L: np.ndarray,
    beta: float,
    Phi_star: np.ndarray,
    K_star: np.ndarray,
    k_self: np.ndarray,
    alpha_star: float | np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Predictive mean and variance with one basis function added at each test input.

    Parameters
    ----------
    Phi : ndarray of shape (N, M)
        Training design matrix over the active basis functions.
    t : ndarray of shape (N,)
        Training targets.
    mu : ndarray of shape (M,)
        Posterior mean of the active weights (Tipping 2001, eq. 13).
    L : ndarray of shape (M, M)
        Lower Cholesky factor of ``Sigma^-1 = A + beta Phi^T Phi`` (eq. 12).
    beta : float
        Noise precision.
    Phi_star : ndarray of shape (T, M)
        Design rows of the test inputs over the active basis functions.
    K_star : ndarray of shape (N, T)
        Column ``j`` holds the new basis function of test input ``j`` at the training
        inputs, ``phi*_j(x_n)`` (for a kernel basis ``k(x_n, x*_j)``).
    k_self : ndarray of shape (T,)
        The new basis function at its own test input, ``phi*_j(x*_j)``.
    alpha_star : float or ndarray of shape (T,)
        Prior precision of each new weight (positive; ``inf`` gives back eq. 21-22).

    Returns
    -------
    mean : ndarray of shape (T,)
    var : ndarray of shape (T,)
        Predictive variance of a new target, the noise ``1/beta`` included.

    Notes
    -----
    Append to the active design the column ``k = phi*(x_n)`` with weight
    ``w* ~ N(0, 1/alpha*)``; every other ``alpha_i`` and ``beta`` stay fixed. The posterior
    precision of ``[w, w*]`` (Tipping 2001, eq. 12, with the extra column) is the fitted one
    bordered by one row and column, and so is its Cholesky factor::

        H+ = [[Sigma^-1,        beta Phi^T k      ],   = L+ L+^T,
              [beta k^T Phi,    alpha* + beta k^T k]]

        L+ = [[L,   0],                                                          (A1)
              [l^T, d]],   l = beta L^-1 Phi^T k,   d^2 = alpha* + S*,

    where ``S* = beta k^T k - l^T l = beta k^T k - beta^2 k^T Phi Sigma Phi^T k >= 0`` is
    the sparsity factor of the new column (Faul & Tipping 2002).                   (A2)

    Solving ``H+ mu+ = beta [Phi^T t; k^T t]`` (eq. 13) by block elimination gives the new
    weight's mean ``mu* = Q* / (alpha* + S*)`` with the quality factor
    ``Q* = beta k^T (t - Phi mu)``; the old weights move to
    ``mu - beta Sigma Phi^T k mu*``.                                                (A3)

    At the test input the augmented design row is ``[phi_*, c]``, ``phi_*`` the row of
    ``Phi_star`` and ``c = phi*(x*)``. With ``z = L^-1 phi_*``,
    ``L+^-1 [phi_*; c] = [z; e* / d]`` where
    ``e* = c - l^T z = c - beta k^T Phi Sigma phi_*``.                              (A4)

    Eq. 21-22 of the augmented model then read::

        y*        = phi_*^T mu + e* Q* / (alpha* + S*)                              (A5)
        sigma*^2  = 1/beta + phi_*^T Sigma phi_* + e*^2 / (alpha* + S*)             (A6)

    the RVM's predictive plus one term from the new weight. Far from the data ``k`` and
    ``phi_*`` vanish, so ``S*, Q* -> 0``, ``e* -> c`` and the variance tends to
    ``1/beta + c^2 / alpha*``. The extra term is small where the active basis already
    predicts the new function's value at ``x*`` from its values at the training inputs
    (``e*`` small), or where the data pin the new weight down (``S*`` large:
    ``S* = k^T C^-1 k`` with ``C = beta^-1 I + Phi A^-1 Phi^T`` is large when many training
    inputs lie under the new function and the active basis does not already account for
    it there).

    Cost per test input: ``O(N M)`` for ``Phi^T k``, ``O(M^2)`` for the two triangular
    solves, ``O(N)`` for ``k^T k`` and ``k^T (t - Phi mu)``; nothing is refactored (the
    fit's factor ``L`` is bordered by one row, A1). The ``N x T`` block ``K_star`` is the
    caller's memory: predict in blocks of test inputs.

    References
    ----------
    C. E. Rasmussen and J. Quiñonero-Candela (2005). Healing the relevance vector machine
    through augmentation. ICML.
    """
    alpha_star = np.broadcast_to(np.asarray(alpha_star, dtype=np.float64), k_self.shape)
    if np.any(np.isnan(alpha_star)) or np.any(alpha_star <= 0):
        raise ValueError("alpha_star must be positive (inf switches the augmentation off)")
    # Tipping (2001) eq. 21-22 over the fitted basis: z = L^-1 phi_*
    mean = Phi_star @ mu
    Z = _linalg.solve_lower(L, Phi_star.T)
    # (A1): l = beta L^-1 Phi^T k, one column per test input
    G = _linalg.solve_lower(L, beta * (Phi.T @ K_star))
    # (A2): S_* = beta k^T k - l^T l (>= 0; rounding can take it below 0 for a new column
    # inside the span of the active ones, where it is 0)
    S = np.maximum(beta * np.einsum("ij,ij->j", K_star, K_star) - np.einsum("ij,ij->j", G, G), 0)
    # (A3): Q_* = beta k^T (t - Phi mu)
    Q = beta * (K_star.T @ (t - Phi @ mu))
    # (A4): e_* = c - l^T z
    e = k_self - np.einsum("ij,ij->j", G, Z)
    denominator = alpha_star + S
    # (A5) and (A6)
    mean = mean + e * Q / denominator
    var = 1.0 / beta + np.einsum("ij,ij->j", Z, Z) + e**2 / denominator
    return mean, var


def default_alpha_star(t: np.ndarray, beta: float, k_self: np.ndarray) -> np.ndarray:
    """Prior precision of the added weights: the GP's signal variance, from the fit.

    The training targets say nothing about a weight centred where there are no data, so
    ``alpha*`` is set, not learned. It is chosen so that the augmented model has, at each
    test input, the prior variance of the Gaussian process that the RVM stands in for.

    Derivation. The RVM is a Gaussian process with the covariance function
    ``Q_RVM(x, x') = sum_i alpha_i^-1 phi_i(x) phi_i(x')`` (Tipping 2001, eq. 59), which
    vanishes away from the relevance vectors. A GP with a stationary covariance of prior
    variance ``Q(x, x) = theta_1`` and noise ``sigma^2`` predicts, far from the data,
    ``sigma_*^2 = sigma^2 + theta_1`` (eq. 60); the RVM gives ``sigma^2`` (eq. 61). Far from
    the data the augmented predictive (:func:`augmented_predictive`, A6) is
    ``1/beta + phi_*^T Sigma phi_* + c^2 / alpha*`` (``S*, Q* -> 0``, ``e* -> c``), the
    middle term being what remains of eq. 22 (the bias weight's variance). Eq. 60 holds if the
    new weight gives the new function the GP's prior variance at its centre,
    ``c^2 / alpha* = theta_1``. Under that GP each training target has variance
    ``theta_1 + sigma^2`` (the diagonal of eq. 58), so with the fitted noise the moment
    estimate is ``theta_1 = var(t) - 1/beta`` (the sample mean removed, as the bias weight
    removes it):

    ``alpha* = c^2 / max(var(t) - 1/beta, 0)``, ``c = phi*(x*)`` (``k_self``).

    Far from the data the predictive variance is then ``var(t)`` plus the bias weight's
    variance. When the fit calls everything noise (``1/beta >= var(t)``) ``alpha* = inf``:
    no augmentation. The choice is invariant to rescaling the targets. It is derived here,
    not taken from Rasmussen & Quiñonero-Candela (2005).

    The RVM's own prior variance (eq. 59) is no estimate of ``theta_1``: at the evidence
    maximum overlapping kernels get small ``alpha_i`` and weights that cancel, so its mean
    over the training inputs, ``tr(Phi A^-1 Phi^T) / N``, ranged from 1.3 to 1.7e6 on
    standardised targets (``var(t) = 1``) on eight splits of four of the data sets of
    ``benchmarks/bench_coverage.py``.

    ``alpha*`` sets the growth far out, not in a gap: where the new function reaches
    training inputs (``S*`` large, A2) the data determine its weight and the added variance
    ``e*^2 / (alpha* + S*)`` is below ``e*^2 / S*`` whatever ``alpha*`` is. In a gap
    narrower than about three kernel length scales that cap, not ``alpha*``, sets the
    growth (``benchmarks/bench_gap.py``).

    Parameters
    ----------
    t : ndarray of shape (N,)
        Training targets.
    beta : float
        Fitted noise precision.
    k_self : ndarray of shape (T,)
        The new basis functions at their own centres.

    Returns
    -------
    ndarray of shape (T,)
        ``alpha*`` for each test input (``inf`` where there is no signal).
    """
    signal = float(np.var(t)) - 1.0 / beta
    if signal <= 0.0:
        return np.full(k_self.shape, np.inf)
    return k_self**2 / signal
