"""The Laplace approximation of the weight posterior in classification.

For fixed precisions ``alpha`` the posterior ``p(w | t, alpha)`` of a Bernoulli (logistic)
or categorical (softmax) model has no closed form. Its mode ``w*`` is found by Newton's
method (iteratively re-weighted least squares), and the posterior is replaced by the
Gaussian ``N(w*, Sigma)`` with ``Sigma^-1 = Phi^T B Phi + A`` (Tipping 2001, Sec. 3,
eq. 24-26; Bishop 2006, Sec. 7.2.3). The approximate log evidence follows from the same
quadratic expansion (Bishop 2006, eq. 7.114).

Multiclass (softmax). There are ``K`` weight vectors ``w_k``, stored as the columns of
an ``(M, K)`` array, and the precision ``alpha_m`` of basis function ``m`` is shared by its
``K`` weights ``w_m1 ... w_mK``. The flattened weight vector is ``w.ravel()`` (index
``m K + k``), and so is the ``MK x MK`` Hessian (Bishop 2006, eq. 7.120-7.122 with
eq. 4.110). Sharing makes basis functions relevant or irrelevant as a whole: a kernel
function pruned for some classes but kept for one still has to be evaluated at
prediction time, so only whole-row sparsity saves work, and ``M`` hyperparameters are
better determined by the data than ``M K``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, log_expit, log_softmax, logsumexp, ndtri, softmax
from scipy.stats import qmc

from bayes_rvm import _linalg
from bayes_rvm._validation import check_sample_weight
from bayes_rvm.evidence import hyperprior_log_density

__all__ = [
    "FLAT",
    "MAX_SOFTMAX_WEIGHTS",
    "SOFTMAX_QMC_POINTS",
    "Bernoulli",
    "Categorical",
    "LaplaceMode",
    "hessian_factor",
    "latent_covariance",
    "latent_variance",
    "log_class_proba",
    "log_evidence_laplace",
    "posterior_mode",
    "probit_scale",
    "weighted_cross",
]


#: Relative size of the Newton decrement below which :func:`posterior_mode` stops: a few
#: units of rounding of the objective.
FLAT = 8.0 * float(np.finfo(np.float64).eps)

#: Largest number of softmax weights ``M K`` (active basis functions times classes) of one
#: dense ``MK x MK`` Hessian (50 MB): the MacKay and EM solvers fit a softmax over a larger
#: basis on a working set of at most ``MAX_SOFTMAX_WEIGHTS // K`` columns, grown from the
#: empty model by the columns that raise the evidence most
#: (:class:`bayes_rvm.solvers._reestimation.LaplaceStep`).
MAX_SOFTMAX_WEIGHTS = 2500


class _WeightedRows:
    """Per-row likelihood weights ``w_n``: ``log p(t | F) = sum_n w_n log p(t_n | f_n)``.

    A weight of 2 counts the row twice (as the row repeated), a weight of 0 leaves it
    out; without weights every row counts once.
    """

    weights: np.ndarray | None

    def _set_weights(self, sample_weight, n_rows: int) -> None:
        self.weights = check_sample_weight(sample_weight, n_rows)

    def _weighted(self, per_row: np.ndarray) -> np.ndarray:
        """``w_n`` times each row of ``per_row`` (rows along the first axis)."""
        if self.weights is None:
            return per_row
        return self.weights.reshape((-1,) + (1,) * (per_row.ndim - 1)) * per_row


class Bernoulli(_WeightedRows):
    """Binary targets ``t_n in {0, 1}`` with ``P(t_n = 1) = sigmoid(phi_n^T w)`` (eq. 23).

    Parameters
    ----------
    t : array of shape (N,)
        Zeros and ones.
    sample_weight : array of shape (N,), optional
        Non-negative weight ``w_n`` of each row's log likelihood (see
        :func:`bayes_rvm.fit_type2`).
    """

    name = "bernoulli"
    n_outputs = 1

    def __init__(self, t, sample_weight=None):
        t = np.asarray(t, dtype=np.float64)
        if t.ndim != 1 or not np.all((t == 0.0) | (t == 1.0)):
            raise ValueError(
                "bernoulli targets must be a 1-D array of 0 and 1; got values "
                f"{np.unique(t)[:5].tolist()} with shape {t.shape}"
            )
        self.t = t
        self.target = t
        self._set_weights(sample_weight, t.size)

    def log_likelihood(self, F: np.ndarray) -> float:
        """``sum_n w_n [t_n log y_n + (1 - t_n) log(1 - y_n)]`` at latent values ``F``."""
        # Tipping (2001) eq. 24, data term, as t f - log(1 + e^f) (no overflow, no log 0)
        return float(np.sum(self._weighted(self.t * F - np.logaddexp(0.0, F))))

    def mean(self, F: np.ndarray) -> np.ndarray:
        """``y = sigmoid(F)``."""
        return expit(F)

    def irls(self, F: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The curvature ``B`` and the residual of the log likelihood at latent values ``F``.

        Returns ``B_n = w_n y_n (1 - y_n)`` as an ``(N, 1, 1)`` array (minus the second
        derivative in ``f_n``) and ``w_n (t_n - y_n)`` (the first derivative), computed
        from ``sigmoid(F)`` and ``sigmoid(-F)`` without cancellation.
        """
        lower, upper = expit(-F), expit(F)  # 1 - y and y
        # Tipping (2001) eq. 25: beta_n = sigma(y_n) [1 - sigma(y_n)], times w_n
        curvature = self._weighted(upper * lower)[:, None, None]
        return curvature, self._weighted(self.t * lower - (1.0 - self.t) * upper)


class Categorical(_WeightedRows):
    """``K``-class targets with ``P(t_n = k) = softmax(phi_n^T W)_k`` (Bishop 2006, eq. 7.121).

    Parameters
    ----------
    t : array of shape (N,)
        Integer class codes ``0 .. K-1``.
    n_classes : int, optional
        ``K``; by default ``max(t) + 1``. Must be at least 2.
    sample_weight : array of shape (N,), optional
        Non-negative weight ``w_n`` of each row's log likelihood.
    """

    name = "categorical"

    def __init__(self, t, n_classes: int | None = None, sample_weight=None):
        t = np.asarray(t)
        codes = t.astype(np.int64) if t.dtype.kind in "biuf" else None
        if t.ndim != 1 or codes is None or not np.all(codes == t) or np.any(codes < 0):
            raise ValueError(
                "categorical targets must be a 1-D array of integer class codes 0..K-1; got "
                f"dtype {t.dtype}, shape {t.shape}"
            )
        K = int(codes.max()) + 1 if n_classes is None else int(n_classes)
        if K < 2 or codes.max() >= K:
            raise ValueError(
                f"categorical targets need K >= 2 classes coded 0..K-1; got K={K} and codes "
                f"up to {int(codes.max())}"
            )
        self.n_outputs = K
        self.codes = codes
        # 1-of-K coding (Tipping 2001, eq. 28)
        self.target = np.zeros((t.size, K))
        self.target[np.arange(t.size), codes] = 1.0
        self._set_weights(sample_weight, t.size)

    def log_likelihood(self, F: np.ndarray) -> float:
        """``sum_n w_n sum_k t_nk log y_nk`` with ``log y`` computed as ``F - logsumexp(F)``."""
        # Bishop (2006) eq. 7.122 (its logarithm), stable log-softmax
        log_y = F - logsumexp(F, axis=1, keepdims=True)
        return float(np.sum(self._weighted(log_y[np.arange(F.shape[0]), self.codes])))

    def mean(self, F: np.ndarray) -> np.ndarray:
        """``y_nk = softmax(F_n)_k``."""
        # Bishop (2006) eq. 7.121
        return softmax(F, axis=1)

    def irls(self, F: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The curvature blocks ``B_n = w_n (diag(y_n) - y_n y_n^T)``, an ``(N, K, K)`` array,
        and the residual ``w_n (t_n - y_n)``, ``(N, K)``, at latent values ``F``."""
        y = self.mean(F)
        # Bishop (2006) eq. 4.110: y_nk (I_kj - y_nj), times w_n
        curvature = y[:, :, None] * (np.eye(self.n_outputs)[None] - y[:, None, :])
        return self._weighted(curvature), self._weighted(self.target - y)


def weighted_cross(Phi_a: np.ndarray, W: np.ndarray, Phi_b: np.ndarray) -> np.ndarray:
    """``sum_n (phi_a(x_n) phi_b(x_n)^T kron B_n)``, shape ``(M_a K, M_b K)``, index ``m K + k``.

    With ``Phi_a = Phi_b = Phi`` this is ``Phi^T B Phi``, the likelihood part of the
    Hessian (Tipping 2001, eq. 25; ``MK x MK`` for softmax, Bishop 2006, Sec. 7.2.3).

    Parameters
    ----------
    Phi_a : array of shape (N, M_a)
    W : array of shape (N, K, K)
        The curvature blocks ``B_n`` (symmetric).
    Phi_b : array of shape (N, M_b)
    """
    K = W.shape[1]
    if K == 1:
        return Phi_a.T @ (W[:, 0, 0][:, None] * Phi_b)
    out = np.empty((Phi_a.shape[1], K, Phi_b.shape[1], K))
    for k in range(K):
        for j in range(k, K):
            block = Phi_a.T @ (W[:, k, j][:, None] * Phi_b)
            out[:, k, :, j] = block
            out[:, j, :, k] = block
    return out.reshape(Phi_a.shape[1] * K, Phi_b.shape[1] * K)


@dataclass(frozen=True)
class LaplaceMode:
    """The Gaussian approximation ``N(mu, Sigma)`` of ``p(w | t, alpha)``.

    Attributes
    ----------
    mu : ndarray, shape (M,) or (M, K)
        The mode ``w*``.
    precision_chol : ndarray, shape (M K, M K)
        Lower Cholesky factor of ``Sigma^-1 = Phi^T B Phi + A`` at the mode.
    log_likelihood : float
        ``log P(t | w*)``.
    log_joint : float
        Eq. 24 at the mode: ``log P(t | w*) - w*^T A w* / 2``.
    y : ndarray, shape (N,) or (N, K)
        Fitted probabilities at the mode.
    n_iter : int
        Newton steps taken.
    converged : bool
    """

    mu: np.ndarray
    precision_chol: np.ndarray
    log_likelihood: float
    log_joint: float
    y: np.ndarray
    n_iter: int
    converged: bool


def _objective(Phi, link, prior_diag, w):
    F = Phi @ w
    data = link.log_likelihood(F)
    # Tipping (2001) eq. 24: log P(t | w) - w^T A w / 2
    return data - 0.5 * float(np.sum(prior_diag * w.ravel() ** 2)), data, F


def hessian_factor(Phi: np.ndarray, curvature: np.ndarray, prior_diag: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor of the Hessian ``Phi^T B Phi + A`` of the negative log
    posterior, from the curvature blocks ``B_n`` (``(N, K, K)``, :meth:`Bernoulli.irls`)
    and the prior precisions of the ``M K`` weights."""
    H = weighted_cross(Phi, curvature, Phi)
    # Tipping (2001) eq. 25: -grad grad log p = Phi^T B Phi + A
    H[np.diag_indices_from(H)] += prior_diag
    return _linalg.cholesky(H)


def posterior_mode(
    Phi: np.ndarray,
    link: Bernoulli | Categorical,
    alpha: np.ndarray,
    w0: np.ndarray | None = None,
    *,
    max_iter: int = 100,
    tol: float = 1e-9,
) -> LaplaceMode:
    """Mode of ``p(w | t, alpha)`` by Newton / IRLS, and the Laplace covariance there.

    Each step solves ``(Phi^T B Phi + A) delta = Phi^T (t - y) - A w`` by Cholesky and
    halves the step until eq. 24 does not decrease. The iteration stops once the Newton
    step is below ``tol (1 + max |w|)`` or the gain it promises is below rounding
    (:data:`FLAT`); that last step is still taken, so that the
    gradient at the returned mode is of the order of the step squared, and the Cholesky
    factor of the Hessian just before it is returned (one factorisation per step).

    Parameters
    ----------
    Phi : array of shape (N, M)
        Design matrix over the active basis functions.
    link : Bernoulli or Categorical
        The likelihood with its targets.
    alpha : array of shape (M,)
        Prior precisions (shared by the ``K`` weights of a basis function).
    w0 : array of shape (M,) or (M, K), optional
        Starting point (warm start); zeros by default.
    max_iter : int
    tol : float

    Returns
    -------
    LaplaceMode

    Examples
    --------
    >>> import numpy as np
    >>> from bayes_rvm.laplace import Bernoulli, posterior_mode
    >>> Phi = np.column_stack([np.linspace(-2, 2, 20), np.ones(20)])
    >>> t = (np.arange(20) % 3 != 0).astype(float)
    >>> mode = posterior_mode(Phi, Bernoulli(t), np.array([1.0, 1.0]))
    >>> grad = Phi.T @ (t - mode.y) - mode.mu
    >>> bool(np.max(np.abs(grad)) < 1e-10), mode.converged
    (True, True)
    """
    K = link.n_outputs
    M = Phi.shape[1]
    shape = (M,) if K == 1 else (M, K)
    prior_diag = np.repeat(np.asarray(alpha, dtype=np.float64), K)
    w = np.zeros(shape) if w0 is None else np.array(w0, dtype=np.float64).reshape(shape)
    f, data, F = _objective(Phi, link, prior_diag, w)
    converged = False
    n_iter = 0
    while n_iter < max_iter:
        n_iter += 1
        curvature, residual = link.irls(F)
        # Tipping (2001) eq. 24-25 / Bishop (2006) eq. 7.110: Phi^T W (t - y) - A w
        grad = (Phi.T @ residual).ravel() - prior_diag * w.ravel()
        L = hessian_factor(Phi, curvature, prior_diag)
        delta = _linalg.cho_solve(L, grad).reshape(shape)
        small = np.max(np.abs(delta), initial=0.0) <= tol * (1.0 + np.max(np.abs(w), initial=0.0))
        # Newton decrement grad^T H^-1 grad: twice the gain the step promises. Below
        # FLAT (1 + |f|) the objective cannot tell the step from rounding (flat directions
        # of a weakly penalised fit can still move the weights by more than tol), and the
        # quadratic model is exact: the step is the last.
        flat = float(grad @ delta.ravel()) <= FLAT * (1.0 + abs(f))
        if small or flat:
            # The last step is taken; the factor of the Hessian one step before it is
            # kept (relative change of order tol, or a change the objective cannot see).
            w = w + delta
            f, data, F = _objective(Phi, link, prior_diag, w)
            converged = True
            return LaplaceMode(w, L, data, f, link.mean(F), n_iter, converged)
        step = 1.0
        while True:
            f_new, data_new, F_new = _objective(Phi, link, prior_diag, w + step * delta)
            if f_new >= f or step < 1e-10:
                break
            step *= 0.5
        if f_new < f:
            # No ascent even along a tiny Newton step: the mode is found to rounding.
            converged = float(grad @ delta.ravel()) <= 1e-12 * (1.0 + abs(f))
            return LaplaceMode(w, L, data, f, link.mean(F), n_iter, converged)
        w, f, data, F = w + step * delta, f_new, data_new, F_new
    L = hessian_factor(Phi, link.irls(F)[0], prior_diag)
    return LaplaceMode(w, L, data, f, link.mean(F), n_iter, converged)


def log_evidence_laplace(mode: LaplaceMode, alpha: np.ndarray, a: float = 0.0, b: float = 0.0):
    """Laplace approximation of ``log P(t | alpha)`` plus the ``Gamma(a, b)`` hyperprior terms.

    ``log P(t | w*) + log N(w* | 0, A^-1) + (M K / 2) log 2 pi - log|Sigma^-1| / 2``
    (Bishop 2006, eq. 7.114), in which the ``2 pi`` factors cancel.
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    K = 1 if mode.mu.ndim == 1 else mode.mu.shape[1]
    weight_sq = mode.mu**2 if K == 1 else np.sum(mode.mu**2, axis=1)
    # Bishop (2006) eq. 7.114: p(t|w*) p(w*|alpha) (2 pi)^{MK/2} |Sigma|^{1/2}
    value = (
        mode.log_likelihood
        - 0.5 * float(np.sum(alpha * weight_sq))
        + 0.5 * K * float(np.sum(np.log(alpha)))
        - 0.5 * _linalg.logdet(mode.precision_chol)
    )
    return value + hyperprior_log_density(alpha, None, a, b, 0.0, 0.0)


def latent_covariance(Phi_star: np.ndarray, L: np.ndarray, n_outputs: int) -> np.ndarray:
    """Posterior covariance between the ``K`` latent outputs ``a_k(x) = phi(x)^T w_k``.

    ``Cov(a_k(x), a_j(x)) = phi(x)^T Sigma_kj phi(x)``, with ``Sigma_kj`` the ``(k, j)``
    blocks of the ``MK x MK`` Laplace covariance (weight index ``m K + k``).

    Parameters
    ----------
    Phi_star : array of shape (N*, M)
        Design rows over the active basis functions.
    L : lower Cholesky factor of the ``MK x MK`` posterior precision
    n_outputs : int
        ``K`` (1 for binary).

    Returns
    -------
    ndarray of shape (N*, K, K)
    """
    K = n_outputs
    n, M = Phi_star.shape
    if M == 0:
        return np.zeros((n, K, K))
    # Z_k = L^-1 R_k, with R_k holding Phi_star in the weight rows m K + k
    Z = np.zeros((K, M * K, n))
    for k in range(K):
        rows = np.zeros((n, M * K))
        rows[:, k::K] = Phi_star
        Z[k] = _linalg.solve_lower(L, rows.T)
    # Tipping (2001) eq. 22 without the noise, for each pair of outputs: phi^T Sigma_kj phi
    return np.einsum("kin,jin->nkj", Z, Z)


def latent_variance(Phi_star: np.ndarray, L: np.ndarray, n_outputs: int) -> np.ndarray:
    """Posterior variance of each latent output: the diagonal of :func:`latent_covariance`,
    of shape ``(N*,)`` for ``K = 1``, else ``(N*, K)``."""
    variance = np.einsum("nkk->nk", latent_covariance(Phi_star, L, n_outputs))
    return variance[:, 0] if n_outputs == 1 else variance


def probit_scale(variance: np.ndarray) -> np.ndarray:
    """``kappa(s^2) = (1 + pi s^2 / 8)^(-1/2)`` (MacKay 1992; Bishop 2006, eq. 4.154)."""
    return 1.0 / np.sqrt(1.0 + np.pi * np.asarray(variance) / 8.0)


#: Quasi-Monte Carlo points of the moderated softmax: scrambled Sobol points mapped to
#: normal deviates and their mirror images ``-z`` (``2 * 2**11`` draws), fixed, so that the
#: probabilities are a deterministic function of the latent mean and covariance.
SOFTMAX_QMC_POINTS = 2**11

#: Rows of the moderated softmax integrated at once: bounds the ``rows x draws x K`` array
#: to about 32 MB.
_QMC_BYTES = 32 * 2**20


@functools.lru_cache(maxsize=16)
def _normal_points(dim: int) -> np.ndarray:
    """``(2 SOFTMAX_QMC_POINTS, dim)`` standard normal quasi-random deviates, ``z`` and ``-z``
    (the mirror makes every odd moment of the draws exactly zero)."""
    sobol = qmc.Sobol(dim, scramble=True, rng=np.random.default_rng(20010601))
    u = sobol.random(SOFTMAX_QMC_POINTS)
    z = ndtri(np.clip(u, 0.5 / SOFTMAX_QMC_POINTS**2, 1.0 - 0.5 / SOFTMAX_QMC_POINTS**2))
    return np.concatenate([z, -z])


def _moderated_softmax(a: np.ndarray, S: np.ndarray) -> np.ndarray:
    """``log E[softmax(f)]`` for ``f ~ N(a_n, S_n)`` row by row, by quasi-Monte Carlo.

    The softmax depends on the outputs only through the differences ``d_k = f_k - f_K``
    (``k < K``): their mean is ``a_k - a_K`` and their covariance ``D = S_kj - S_kK - S_Kj
    + S_KK``, in which variance common to every output cancels exactly. Each draw is
    ``d = E[d] + D^(1/2) z`` with the symmetric square root (continuous in ``D``, also when
    ``D`` is singular) and ``z`` the fixed points of :func:`_normal_points`.
    """
    n, K = a.shape
    mean = a[:, :-1] - a[:, -1:]
    last = S[:, :-1, -1]
    D = S[:, :-1, :-1] - last[:, :, None] - last[:, None, :] + S[:, -1, -1][:, None, None]
    eigval, eigvec = np.linalg.eigh(0.5 * (D + np.swapaxes(D, 1, 2)))
    root = np.einsum("nij,nj,nkj->nik", eigvec, np.sqrt(np.maximum(eigval, 0.0)), eigvec)
    z = _normal_points(K - 1)
    out = np.empty((n, K))
    chunk = max(1, _QMC_BYTES // (8 * z.shape[0] * K))
    for start in range(0, n, chunk):
        rows = slice(start, start + chunk)
        draws = np.zeros((min(chunk, n - start), z.shape[0], K))
        draws[:, :, :-1] = mean[rows, None, :] + np.einsum("sj,nkj->nsk", z, root[rows])
        # log of the average of softmax over the draws, in logs (Bishop 2006, eq. 7.121)
        out[rows] = logsumexp(log_softmax(draws, axis=2), axis=1) - np.log(z.shape[0])
    return out


def log_class_proba(latent: np.ndarray, variance: np.ndarray | None = None) -> np.ndarray:
    """Log class probabilities from the latent outputs, optionally moderated.

    With ``variance=None``, the probabilities at the mode: ``sigmoid(a)`` for a binary model
    (``latent`` of shape ``(n,)``, columns ``[log P(0), log P(1)]``) or ``softmax(a)`` for
    ``K`` outputs (``latent`` of shape ``(n, K)``).

    With the spread of the latent outputs under the Laplace posterior, MacKay's moderated
    output: the probabilities averaged over that Gaussian.

    - Binary: ``variance`` of shape ``(n,)``; ``sigmoid(kappa(s^2) mu)``, the probit
      approximation (Bishop 2006, eq. 4.155).
    - ``K`` outputs: ``variance`` is the latent *covariance*, shape ``(n, K, K)``
      (:func:`latent_covariance`). ``E[softmax(f)]`` over ``f ~ N(a, S)`` has no closed
      form, and closed-form approximations that moderate each output or each difference
      of two outputs separately are off by several times the Monte Carlo error when the
      latent variance is large (a kernel model far from its relevance vectors). It is
      integrated by quasi-Monte Carlo over the ``K - 1`` differences of the outputs,
      with a fixed set of :data:`SOFTMAX_QMC_POINTS` scrambled Sobol points and their
      mirror images: deterministic, exact for variance common to every output (which
      the softmax ignores), normalised to sum to one, and within Monte Carlo error of
      averaging the softmax over draws of the weights (checked in the tests).
    """
    a = np.asarray(latent, dtype=np.float64)
    if a.ndim == 1:
        if variance is not None:
            # Bishop (2006) eq. 4.155: sigmoid(kappa(s^2) mu_a)
            a = probit_scale(variance) * a
        return np.column_stack([log_expit(-a), log_expit(a)])
    if variance is None:
        return log_softmax(a, axis=1)
    S = np.asarray(variance, dtype=np.float64)
    if S.shape != (*a.shape, a.shape[1]):
        raise ValueError(
            f"moderating {a.shape[1]} latent outputs needs their covariance of shape "
            f"{(*a.shape, a.shape[1])}; got {S.shape}"
        )
    log_p = _moderated_softmax(a, S)
    return log_p - logsumexp(log_p, axis=1, keepdims=True)
