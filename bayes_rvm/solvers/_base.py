"""What every type-II solver shares: the hyperprior, the frozen results, starting values."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from bayes_rvm import _linalg
from bayes_rvm.evidence import Prior
from bayes_rvm.laplace import latent_variance
from bayes_rvm.posterior import predictive

if TYPE_CHECKING:
    from bayes_rvm.basis import KernelBasis
    from bayes_rvm.kernels import RBF

__all__ = [
    "EmptyModelWarning",
    "InterpolationWarning",
    "Prior",
    "ScalesFit",
    "TargetMoments",
    "Type2Result",
    "initial_alpha",
    "initial_noise_var",
    "noise_var_floor",
    "warn_empty_model",
    "warn_if_interpolating",
]


class EmptyModelWarning(UserWarning):
    """Every basis function was pruned: the fit is the empty model."""


def warn_empty_model(stacklevel: int = 2) -> None:
    """Say that the returned fit is the empty model and what it predicts."""
    warnings.warn(
        "every basis function was pruned: the data carry no evidence for any weight, and "
        "the fit predicts 0 (with the learned noise in regression, probability 1/K in "
        "classification)",
        EmptyModelWarning,
        stacklevel=stacklevel + 1,
    )


class InterpolationWarning(UserWarning):
    """The learned noise went to ~0 with about as many effective weights as data points:
    the model interpolates the training targets and its error bars are meaningless."""


#: Share of the ``N`` degrees of freedom (``sum gamma_i``) above which a regression fit
#: with learned noise is reported as interpolating.
INTERPOLATION_SHARE = 0.9


def warn_if_interpolating(result: Type2Result, n_rows: int, stacklevel: int = 2) -> None:
    """Warn when a regression fit with learned noise spends more than
    :data:`INTERPOLATION_SHARE` of the ``N`` degrees of freedom on its weights."""
    if result.beta is None or result.noise_fixed or result.active.size == 0:
        return
    spent = float(np.sum(result.gamma))
    if spent <= INTERPOLATION_SHARE * n_rows:
        return
    warnings.warn(
        f"the model interpolates the training data: its {result.active.size} basis functions "
        f"spend {spent:.1f} of the {n_rows} degrees of freedom (sum of gamma_i) and the "
        f"learned noise standard deviation is {result.beta**-0.5:.3g}, so predictive "
        "intervals are far too narrow. Use a wider kernel (smaller gamma), fix noise_var, "
        "or put a prior on the noise (c, d > 0)",
        InterpolationWarning,
        stacklevel=stacklevel + 1,
    )


def _frozen(array) -> np.ndarray:
    array = np.array(array, copy=True)
    array.setflags(write=False)
    return array


@dataclass(frozen=True)
class Type2Result:
    """A type-II maximum-likelihood fit: hyperparameters and the Gaussian weight posterior.

    Returned by :func:`~bayes_rvm.fit_type2` (every solver); frozen, with read-only arrays.

    Attributes
    ----------
    likelihood : str
        ``"gaussian"``, ``"bernoulli"``, ...
    solver : str
    n_basis : int
        Columns of the design matrix the solver was given.
    active : ndarray of int, shape (M,)
        Columns kept (the relevance vectors and other relevant basis functions).
    alpha : ndarray, shape (M,)
        Their precisions, aligned with ``active``. Pruned columns have ``alpha = inf``.
    beta : float or None
        Noise precision (regression); ``None`` for classification.
    mu : ndarray, shape (M,) or (M, K)
        Posterior mean of the active weights (the Laplace mode in classification); one
        column per class for the softmax (``"categorical"``) likelihood.
    precision_chol : ndarray, shape (M, M) or (M K, M K)
        Lower Cholesky factor of ``Sigma^-1 = A + Phi^T B Phi`` (softmax: index ``m K + k``).
    log_evidence : float
        Eq. 36 at the returned hyperparameters, with the Gaussian normalising constant and
        the Gamma hyperprior terms (Laplace approximation in classification).
    log_evidence_path : ndarray
        The objective after every iteration (the sequential solver: after every step and
        noise update, running values between refactorisations, as ``log_evidence_path_``
        of :class:`~bayes_rvm.RVR` describes).
    n_iter : int
    converged : bool
    readd_gain : ndarray, shape (n_basis - M,)
        For every pruned column (in the order of :attr:`inactive`), the increase of the log
        evidence if it were re-added at its optimal alpha (0 when ``q^2 <= s``): the App. B.1
        check, in nats.
    prior : Prior
    noise_fixed : bool
        Whether ``beta`` was given rather than learned.
    stalled : bool
        The run stopped before converging because the log evidence no longer increased
        (EM: a gain below ``min(tol, 1e-6)`` nats over its last 100 iterations).
    """

    likelihood: str
    solver: str
    n_basis: int
    active: np.ndarray
    alpha: np.ndarray
    beta: float | None
    mu: np.ndarray
    precision_chol: np.ndarray
    log_evidence: float
    log_evidence_path: np.ndarray
    n_iter: int
    converged: bool
    readd_gain: np.ndarray
    prior: Prior = field(default_factory=Prior)
    noise_fixed: bool = False
    stalled: bool = False

    def __post_init__(self):
        for name in ("active", "alpha", "mu", "precision_chol", "log_evidence_path", "readd_gain"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))

    @property
    def inactive(self) -> np.ndarray:
        """Pruned columns, ascending."""
        return np.setdiff1d(np.arange(self.n_basis), self.active)

    @property
    def Sigma(self) -> np.ndarray:
        """Posterior covariance ``(A + Phi^T B Phi)^-1``, from the factor by triangular solves."""
        L = self.precision_chol
        Linv = _linalg.solve_lower(L, np.eye(L.shape[0]))
        return Linv.T @ Linv

    @property
    def gamma(self) -> np.ndarray:
        """Well-determinedness ``1 - alpha_i Sigma_ii`` (Tipping 2001, eq. 17)."""
        variances = _linalg.inverse_diag(self.precision_chol)
        if self.mu.ndim == 1:
            return 1.0 - self.alpha * variances
        # K weights sharing alpha_m (softmax): sum_k (1 - alpha_m Sigma_mk,mk)
        return self.mu.shape[1] - self.alpha * variances.reshape(self.alpha.size, -1).sum(axis=1)

    @property
    def noise_var(self) -> float | None:
        return None if self.beta is None else 1.0 / self.beta

    def predict(self, Phi_active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predictive mean and variance (eq. 21-22) for design rows over the active columns.

        For classification the variance is that of the latent function (no noise term);
        with ``K`` softmax outputs both have shape ``(N*, K)``.
        """
        Phi_active = np.asarray(Phi_active, dtype=np.float64)
        if Phi_active.ndim != 2 or Phi_active.shape[1] != self.active.size:
            raise ValueError(
                f"expected design rows with {self.active.size} columns (the active ones), "
                f"got shape {Phi_active.shape}"
            )
        if self.mu.ndim == 2:
            K = self.mu.shape[1]
            return Phi_active @ self.mu, latent_variance(Phi_active, self.precision_chol, K)
        return predictive(Phi_active, self.mu, self.precision_chol, self.beta)


@dataclass(frozen=True)
class ScalesFit:
    """A type-II fit with the kernel input scales learned (the eta-RVM).

    Attributes
    ----------
    result : Type2Result
        The solver's fit of ``alpha`` and ``beta`` at the returned scales.
    kernel : RBF
        The kernel with the returned scales.
    basis : KernelBasis
        The training design matrix at the returned scales.
    scales : ndarray of shape (n_features,)
        The returned input scales ``eta``.
    initial_scales : ndarray of shape (n_features,)
    gradient : ndarray of shape (n_features,)
        ``dL / d log eta`` at the returned fit (``alpha``, ``beta`` held fixed).
    log_evidence_path : ndarray
        ``result.log_evidence`` after every alpha step: the first entry is at the starting
        scales, the maximum is the returned fit.
    scales_path : ndarray of shape (len(log_evidence_path), n_features)
        The scales of every alpha step.
    n_outer : int
        eta steps (alpha steps at new scales) of the ascent from the starting scales.
    n_probe : int
        Alpha steps spent on probes (one input's kernel widened or switched off) and on
        the ascents from them.
    converged : bool
        Whether the last ascent of :func:`fit_type2_scales` met its stopping rule before
        ``max_outer`` eta steps.
    """

    result: Type2Result
    kernel: RBF
    basis: KernelBasis
    scales: np.ndarray
    initial_scales: np.ndarray
    gradient: np.ndarray
    log_evidence_path: np.ndarray
    scales_path: np.ndarray
    n_outer: int
    n_probe: int
    converged: bool

    def __post_init__(self):
        for name in ("scales", "initial_scales", "gradient", "log_evidence_path", "scales_path"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))


def initial_alpha(
    sq_norms: np.ndarray, t: np.ndarray, n_active: int, weights: np.ndarray | None = None
) -> np.ndarray:
    """Starting precisions for which the prior function variance equals ``mean(t^2)``.

    ``alpha_i = M ||phi_i||^2 / (N mean(t^2))`` makes ``mean_n sum_i phi_i(x_n)^2 / alpha_i``
    equal ``mean(t^2)``; it is invariant to rescaling ``t`` or a column of ``Phi``. With
    row ``weights`` ``w_n`` (``sq_norms`` then ``sum_n w_n phi_i(x_n)^2``) the means are
    weighted and ``N`` is ``sum(w)``: the start of the rows repeated ``w_n`` times.
    """
    count: float
    if weights is None:
        count, power = t.size, float(np.mean(t**2)) or 1.0
    else:
        count = float(np.sum(weights))
        power = float(weights @ t**2) / count or 1.0
    return n_active * np.maximum(sq_norms, np.finfo(float).tiny) / (count * power)


@dataclass(frozen=True)
class TargetMoments:
    """Variance and mean square of the regression targets over the rows the data stand
    for, which set a solver's starting noise (:func:`initial_noise_var`) and its noise
    floor (:func:`noise_var_floor`).

    A reduced design's target ``[z; r]`` stands for the ``N`` rows it reduces, and a row
    of weight ``w_n`` (fitted as ``sqrt(w_n) t_n``) for ``w_n`` copies of ``t_n``, so that
    a weighted fit starts where the fit of the repeated rows starts.
    """

    variance: float
    mean_square: float

    @classmethod
    def of(cls, t: np.ndarray, weights: np.ndarray | None = None) -> TargetMoments:
        """The moments of ``t`` with each ``t_n`` counted ``weights[n]`` times."""
        if weights is None:
            return cls(float(np.var(t)), float(np.mean(t**2)))
        total = float(np.sum(weights))
        mean = float(weights @ t) / total
        variance = float(weights @ (t - mean) ** 2) / total
        return cls(variance, float(weights @ t**2) / total)


def initial_noise_var(targets: TargetMoments, fraction: float = 0.1) -> float:
    """Starting noise variance: ``fraction`` of the target variance (of ``mean(t^2)`` if
    the target is constant)."""
    spread = targets.variance or targets.mean_square or 1.0
    return fraction * spread


def noise_var_floor(targets: TargetMoments) -> float:
    """Smallest noise variance a solver will return: ``1e-12 * mean(t^2)``.

    Reached only when the data are fitted to machine precision (noise-free targets with
    the noise learned); it keeps ``A + beta Phi^T Phi`` factorable.
    """
    return 1e-12 * (targets.mean_square or 1.0)
