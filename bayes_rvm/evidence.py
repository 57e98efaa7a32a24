"""The log marginal likelihood ("evidence") of the RVM and its one-basis-function analysis.

Notation (Tipping 2001; Faul & Tipping 2002; Tipping & Faul 2003):

- ``C = beta^-1 I + Phi A^-1 Phi^T`` the marginal covariance of the targets (eq. 15, 34);
- ``S_m = phi_m^T C^-1 phi_m`` the *sparsity* and ``Q_m = phi_m^T C^-1 t`` the *quality*
  of basis function ``m``, computed with ``C`` of the current active set;
- ``s_m, q_m`` the same with ``phi_m`` itself left out of ``C`` (equal to ``S_m, Q_m``
  for an inactive ``m``).

The objective is eq. 36 with the normalising constant of the Gaussian kept, and with
the Gamma hyperpriors on the log scale (eq. 35: ``p(log alpha) = alpha p(alpha)``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import gammaln

from bayes_rvm import _linalg
from bayes_rvm._validation import check_nonnegative

__all__ = [
    "LOG_2PI",
    "Prior",
    "column_gain",
    "delta_add",
    "delta_add_shared",
    "delta_delete",
    "delta_reestimate",
    "hyperprior_log_density",
    "log_evidence_dense",
    "log_evidence_gaussian",
    "log_evidence_terms",
    "log_likelihood_alpha_i",
    "noise_variance",
    "noise_variance_cd",
    "optimal_alpha",
    "own_sparsity_quality",
    "posterior_sparsity_quality",
    "shared_alpha_gain",
    "sparsity_quality",
]

#: ``log(2 pi)``, the normalising constant of every Gaussian log density in the package.
LOG_2PI = float(np.log(2.0 * np.pi))

#: Machine precision: the App. B.1 pruning threshold for ``gamma_i`` and the smallest
#: denominator of the noise re-estimate (eq. 46).
EPS = float(np.finfo(np.float64).eps)

#: ``|s| <= FLAT_DIRECTION_RTOL * alpha`` is rounding of ``1 / lambda - alpha`` (a flat
#: direction of the likelihood), in :func:`posterior_sparsity_quality`.
FLAT_DIRECTION_RTOL = 1e-8


def _log_gamma_on_log_scale(x: np.ndarray, shape: float, rate: float) -> float:
    """``sum log p(log x)`` for ``x ~ Gamma(shape, rate)``, with its normaliser when proper.

    With ``shape = rate = 0`` (the paper's default, uniform on ``log x``) the term is 0.
    """
    x = np.asarray(x, dtype=np.float64)
    # Tipping (2001) eq. 36: a log alpha_i - b alpha_i (on the log scale, eq. 35)
    value = shape * float(np.sum(np.log(x))) - rate * float(np.sum(x))
    if shape > 0 and rate > 0:
        value += x.size * (shape * np.log(rate) - gammaln(shape))
    return value


def hyperprior_log_density(alpha, beta, a: float, b: float, c: float, d: float) -> float:
    """``sum_i log p(log alpha_i) + log p(log beta)`` for the Gamma hyperpriors of eq. 36.

    The normalising constants ``a log b - log Gamma(a)`` are included when a prior is
    proper, so that the value equals PyMC's log density of the same model; they vanish
    for the improper default ``a = b = 0``. ``beta=None`` (classification) omits the noise.
    """
    value = _log_gamma_on_log_scale(alpha, a, b)
    if beta is not None:
        value += _log_gamma_on_log_scale(np.array([beta]), c, d)
    return value


@dataclass(frozen=True)
class Prior:
    """Gamma hyperpriors: ``alpha_i ~ Gamma(a, b)``, ``beta ~ Gamma(c, d)`` (rate form).

    ``a = b = c = d = 0`` (the default) is the paper's uniform prior on the log scale.
    """

    a: float = 0.0
    b: float = 0.0
    c: float = 0.0
    d: float = 0.0

    def __post_init__(self):
        for name in ("a", "b", "c", "d"):
            object.__setattr__(self, name, check_nonnegative(getattr(self, name), name))

    @property
    def improper(self) -> bool:
        """Whether the prior on ``alpha`` is the paper's improper ``a = b = 0``."""
        return self.a == 0 and self.b == 0

    def with_noise_shape(self, c: float) -> Prior:
        """The same prior with the noise shape ``c`` replaced, unchecked: ``c`` may be
        negative. Sample weights enter the noise updates (eq. 46, 50) as ``N + 2c`` with
        ``N`` the weight total; a negative shift of ``c`` stands for weights below 1."""
        prior = dataclasses.replace(self)
        object.__setattr__(prior, "c", float(c))
        return prior

    def log_density(self, alpha, beta: float | None) -> float:
        """The hyperprior terms of eq. 36 (:func:`hyperprior_log_density`); ``beta=None``
        leaves the noise term out (classification, or a noise variance held fixed)."""
        return hyperprior_log_density(alpha, beta, self.a, self.b, self.c, self.d)


def noise_variance(rss: float, gamma_sum: float, n: int, prior: Prior) -> float:
    """MacKay's re-estimate of the noise variance ``sigma^2 = 1 / beta``.

    ``(||t - Phi mu||^2 + 2d) / (N - sum_i gamma_i + 2c)`` (Tipping 2001, eq. 46), with
    the denominator kept above machine precision (``sum gamma -> N``: every degree of
    freedom spent on the weights).
    """
    return noise_variance_cd(rss, gamma_sum, n, prior.c, prior.d)


def noise_variance_cd(rss: float, gamma_sum: float, n: int, c: float, d: float) -> float:
    """:func:`noise_variance` with the noise hyperprior's ``c, d`` as numbers: scalar
    arithmetic only, so that the compiled sequential loop compiles this same function."""
    # Tipping (2001) eq. 46
    denominator = n - gamma_sum + 2.0 * c
    return (rss + 2.0 * d) / max(denominator, EPS)


def log_evidence_gaussian(
    L: np.ndarray, mu: np.ndarray, alpha: np.ndarray, beta: float, rss: float, n: int
) -> float:
    """``log N(t | 0, C)`` from the Cholesky factor of the posterior precision.

    Parameters
    ----------
    L : lower Cholesky factor of ``H = A + beta Phi^T Phi`` over the active set
    mu : posterior mean ``beta H^-1 Phi^T t``
    alpha : active precisions
    beta : noise precision
    rss : ``||t - Phi mu||^2``
    n : number of targets
    """
    return log_evidence_terms(
        _linalg.logdet(L), float(np.sum(np.log(alpha))), float(np.sum(alpha * mu**2)), beta, rss, n
    )


def log_evidence_terms(
    logdet_H: float, log_alpha_sum: float, weight_quad: float, beta: float, rss: float, n: int
) -> float:
    """Eq. 36 from its sums: ``log|H|``, ``sum log alpha``, ``mu^T A mu`` and ``rss``.

    Scalar arithmetic only, so that the compiled sequential loop compiles this same
    function (:func:`log_evidence_gaussian` forms the sums from a factor).
    """
    # Tipping (2001) eq. 38: log|C| = -log|Sigma| - N log beta - log|A|
    log_det_C = logdet_H - n * np.log(beta) - log_alpha_sum
    # Tipping (2001) eq. 41: t^T C^-1 t = beta ||t - Phi mu||^2 + mu^T A mu
    quad = beta * rss + weight_quad
    return -0.5 * (n * LOG_2PI + log_det_C + quad)


def log_evidence_dense(Phi: np.ndarray, t: np.ndarray, alpha: np.ndarray, beta: float) -> float:
    """``log N(t | 0, beta^-1 I + Phi A^-1 Phi^T)`` by an ``N x N`` Cholesky (eq. 15).

    The direct Gaussian-process form, independent of the weight-space route of
    :func:`log_evidence_gaussian`; meant for checks and small problems.
    """
    # Tipping (2001) eq. 15 / 34: C = beta^-1 I + Phi A^-1 Phi^T
    C = np.eye(Phi.shape[0]) / beta + (Phi / alpha) @ Phi.T
    L = _linalg.cholesky(C, what="marginal covariance")
    z = _linalg.solve_lower(L, t)
    return -0.5 * (t.size * LOG_2PI + _linalg.logdet(L) + float(z @ z))


def sparsity_quality(
    cross: np.ndarray,
    weighted_sq_norms: np.ndarray,
    weighted_t: np.ndarray,
    L: np.ndarray,
    mu: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``S_m`` and ``Q_m`` for candidate columns, from the active-set posterior.

    With noise weights ``B`` (``beta I`` in regression, the Laplace ``diag(y(1-y))`` in
    classification) and the active columns ``Phi``:

    Parameters
    ----------
    cross : ``phi_m^T B Phi``, shape ``(n_candidates, n_active)``
    weighted_sq_norms : ``phi_m^T B phi_m``
    weighted_t : ``phi_m^T B t`` (``t`` the working target in classification)
    L : lower Cholesky factor of ``Sigma^-1 = A + Phi^T B Phi``
    mu : posterior mean ``Sigma Phi^T B t``
    """
    Z = _linalg.solve_lower(L, cross.T) if L.size else np.zeros((0, cross.shape[0]))
    # Tipping & Faul (2003) eq. 24: S_m = phi^T B phi - phi^T B Phi Sigma Phi^T B phi
    S = weighted_sq_norms - np.einsum("ij,ij->j", Z, Z)
    # Tipping & Faul (2003) eq. 25: Q_m = phi^T B t - phi^T B Phi Sigma Phi^T B t
    Q = weighted_t - cross @ mu
    return S, Q


def own_sparsity_quality(
    S: np.ndarray, Q: np.ndarray, alpha: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``s_m, q_m`` for active columns: their own contribution removed from ``C``.

    ``alpha`` is ``inf`` for inactive columns, where ``s = S`` and ``q = Q``.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        # Faul & Tipping (2002) eq. 21 / Tipping & Faul (2003) eq. 23
        factor = np.where(np.isinf(alpha), 1.0, alpha / (alpha - S))
    return factor * S, factor * Q


def posterior_sparsity_quality(
    sigma: np.ndarray, mu: np.ndarray, alpha: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``s_m, q_m`` of active columns recovered from their own posterior marginals.

    One output: ``Sigma_mm = 1 / (alpha_m + s_m)`` and ``mu_m = q_m Sigma_mm`` (Faul &
    Tipping 2002, Sec. 3), so ``s = 1 / Sigma_mm - alpha`` and ``q = mu / Sigma_mm``.

    ``K`` outputs sharing ``alpha_m`` (softmax): the ``K x K`` block
    ``Sigma_m = (alpha_m I + S_m)^-1`` and ``mu_m = Sigma_m q_m``. In the eigenbasis
    ``Sigma_m = V diag(lambda) V^T`` the evidence in ``alpha_m`` is a sum of ``K``
    one-output terms (Faul & Tipping 2002, eq. 15) with ``s_j = 1 / lambda_j - alpha_m``
    and ``q_j = (V^T mu_m)_j / lambda_j``.

    Parameters
    ----------
    sigma : array of shape (M,) (variances) or (M, K, K) (diagonal blocks of ``Sigma``)
    mu : array of shape (M,) or (M, K)
    alpha : array of shape (M,)

    Returns
    -------
    s, q : arrays of shape (M,) or (M, K)
    """
    if sigma.ndim == 1:
        # Faul & Tipping (2002): Sigma_ii = 1 / (alpha_i + s_i), mu_i = q_i Sigma_ii
        return 1.0 / sigma - alpha, mu / sigma
    lam, V = np.linalg.eigh(sigma)
    s = 1.0 / lam - alpha[:, None]
    q = np.einsum("mkj,mk->mj", V, mu) / lam
    # Directions in which the likelihood is flat (softmax: the same constant added to all
    # K weights) have s = q = 0 exactly; rounding of 1/lambda - alpha is set back to 0.
    flat = np.abs(s) <= FLAT_DIRECTION_RTOL * alpha[:, None]
    return np.where(flat, 0.0, s), np.where(flat, 0.0, q)


def optimal_alpha(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Maximiser of the evidence in ``alpha_m`` alone: ``s^2 / (q^2 - s)``, or ``inf``.

    Faul & Tipping (2002) eq. 17: finite exactly when ``q^2 > s``.
    """
    theta = q**2 - s
    with np.errstate(divide="ignore"):
        return np.where(theta > 0, s**2 / np.where(theta > 0, theta, 1.0), np.inf)


def log_likelihood_alpha_i(alpha_i, s: float, q: float):
    """``l(alpha_i)``: the part of the log evidence that depends on one ``alpha_i``.

    Faul & Tipping (2002) eq. 15: ``0.5 [log alpha - log(alpha + s) + q^2 / (alpha + s)]``.
    Numbers or arrays; the compiled sequential loop compiles this same function.
    """
    # Faul & Tipping (2002) eq. 15
    return 0.5 * (np.log(alpha_i) - np.log(alpha_i + s) + q * q / (alpha_i + s))


def delta_add(S: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Gain in log evidence (nats) from adding an inactive column at its optimal alpha.

    ``0.5 [(Q^2 - S)/S + log(S / Q^2)]`` where ``Q^2 > S``, else ``0`` (Tipping & Faul 2003).
    """
    Q2 = Q**2
    ok = (Q2 > S) & (S > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = 0.5 * ((Q2 - S) / S + np.log(S / Q2))
    return np.where(ok, gain, 0.0)


def delta_add_shared(S: np.ndarray, Q: np.ndarray, alpha_max: float = 1e12) -> np.ndarray:
    """Gain from adding an inactive column whose ``K`` weights share one ``alpha``.

    ``S`` holds the ``K x K`` sparsity matrices ``Phi_m^T C^-1 Phi_m`` and ``Q`` the
    quality vectors; in the eigenbasis of ``S_m`` the evidence in ``alpha`` is a sum of
    one-output terms, maximised by :func:`shared_alpha_gain`. With ``K = 1`` this is
    :func:`delta_add`.

    Parameters
    ----------
    S : array of shape (n, K, K)
    Q : array of shape (n, K)
    alpha_max : float

    Returns
    -------
    ndarray of shape (n,), nats
    """
    s, V = np.linalg.eigh(S)
    q = np.einsum("mkj,mk->mj", V, Q)
    return shared_alpha_gain(s, q**2, alpha_max)


def shared_alpha_gain(s: np.ndarray, q2: np.ndarray, alpha_max: float = 1e12) -> np.ndarray:
    """``max_alpha l(alpha) - l(inf)`` for ``K`` outputs sharing one ``alpha``.

    In the eigenbasis of the ``K x K`` sparsity matrix the evidence in ``alpha`` is a sum
    of one-output terms ``l_j(alpha) - l_j(inf) = 0.5 [log(alpha / (alpha + s_j)) +
    q_j^2 / (alpha + s_j)]`` (Faul & Tipping 2002, eq. 15). There is no closed form for
    ``K > 1``: the maximum over ``log alpha`` up to ``alpha_max`` (the App. B.1 pruning
    threshold) is found by a bounded Brent search. The sum need not be unimodal, so the
    value is a lower bound on the best gain. ``0`` when the evidence increases all the
    way to ``alpha = inf`` (for instance when every ``q_j^2 <= s_j``).

    Parameters
    ----------
    s, q2 : arrays of shape (n, K)
        ``s_j`` and ``q_j^2`` in the eigendirections.
    alpha_max : float

    Returns
    -------
    ndarray of shape (n,), nats
    """
    gains = np.zeros(s.shape[0])
    for m in np.flatnonzero(np.any((q2 > s) & (s > 0), axis=1)):
        sm, qm = np.maximum(s[m], 0.0), q2[m]

        def negative_gain(log_alpha, sm=sm, qm=qm):
            alpha = np.exp(log_alpha)
            # Faul & Tipping (2002) eq. 15, relative to alpha = inf
            return -0.5 * float(np.sum(-np.log1p(sm / alpha) + qm / (alpha + sm)))

        positive = (qm > sm) & (sm > 0)
        # Below the smallest one-output optimum s^2 / (q^2 - s) (eq. 17) every term
        # increases, so the maximum of the sum lies above it.
        lower = np.log(np.min(sm[positive] ** 2 / (qm[positive] - sm[positive])))
        upper = np.log(alpha_max)
        if lower >= upper:
            continue
        best = minimize_scalar(negative_gain, bounds=(lower, upper), method="bounded")
        gains[m] = max(0.0, -float(best.fun), -negative_gain(lower))
    return gains


def delta_reestimate(
    S: np.ndarray, Q: np.ndarray, alpha: np.ndarray, alpha_new: np.ndarray
) -> np.ndarray:
    """Gain from moving an active column's ``alpha`` to a finite ``alpha_new``."""
    delta = 1.0 / alpha_new - 1.0 / alpha
    # Tipping & Faul (2003): 2 dL = Q^2 / (S + 1/delta) - log(1 + S delta)
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = 0.5 * (Q**2 * delta / (S * delta + 1.0) - np.log1p(S * delta))
    return np.where(delta == 0.0, 0.0, gain)


def delta_delete(S: np.ndarray, Q: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Gain from deleting an active column (its ``alpha`` to infinity)."""
    # Tipping & Faul (2003): 2 dL = Q^2 / (S - alpha) - log(1 - S / alpha)
    return 0.5 * (Q**2 / (S - alpha) - np.log1p(-S / alpha))


def column_gain(s: np.ndarray, q: np.ndarray, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gain (nats) of the best action on each column, and the ``alpha`` it moves to.

    From the column's own ``s, q`` (:func:`own_sparsity_quality`; ``s = S``, ``q = Q``
    for an inactive column, ``alpha = inf``) the evidence as a function of its ``alpha``
    alone is maximised at :func:`optimal_alpha` (Faul & Tipping 2002, eq. 17). The action
    is the one that moves it there: add (inactive, ``q^2 > s``), re-estimate (active,
    ``q^2 > s``), delete (active, ``q^2 <= s``), or none (inactive, ``q^2 <= s``: gain 0).
    The gains are those of Tipping & Faul (2003), :func:`delta_add`,
    :func:`delta_reestimate` and :func:`delta_delete`, written with ``S, Q`` of the
    current model (eq. 21 inverted). ``s <= 0`` (rounding in an ill-conditioned active
    set) and non-finite gains count as no action.

    Parameters
    ----------
    s, q : arrays of shape (n,)
    alpha : array of shape (n,)
        Current precisions, ``inf`` for inactive columns.

    Returns
    -------
    gain : ndarray of shape (n,), nats (>= 0 up to rounding)
    alpha_new : ndarray of shape (n,), ``inf`` for deletion or no action
    """
    s, q, alpha = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (s, q, alpha)))
    alpha_new = optimal_alpha(s, q)
    finite_new = np.isfinite(alpha_new)
    active = np.isfinite(alpha)
    with np.errstate(invalid="ignore", divide="ignore"):
        # Faul & Tipping (2002) eq. 21 inverted: S = alpha s / (alpha + s), Q likewise
        shrink = np.where(active, alpha / (alpha + s), 1.0)
        S, Q = shrink * s, shrink * q
        gain = np.where(
            active,
            np.where(
                finite_new,
                delta_reestimate(S, Q, alpha, np.where(finite_new, alpha_new, alpha)),
                delta_delete(S, Q, alpha),
            ),
            delta_add(S, Q),
        )
    gain = np.where(np.isfinite(gain) & (s > 0), gain, 0.0)
    return gain, alpha_new
