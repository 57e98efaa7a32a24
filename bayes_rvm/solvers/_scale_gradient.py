"""The gradient of the log evidence in the kernel's log input scales (Tipping 2001, App. C).

Over the active columns only, without ``N x N`` matrices: ``D = dL / dPhi = beta [(t -
Phi mu) mu^T - Phi Sigma]`` (eq. 55), then the chain rule through the kernel (eq. 57),
``dL / d log eta_k = sum_nm D_nm dPhi_nm / d log eta_k``
(:meth:`bayes_rvm.kernels.RBF.log_scale_gradient`). The classification form differentiates
the Laplace evidence at the mode. :mod:`bayes_rvm.solvers.scales` searches the scales with
these gradients.
"""

from __future__ import annotations

import numpy as np

from bayes_rvm import _linalg, laplace
from bayes_rvm.basis import KernelBasis
from bayes_rvm.kernels import RBF
from bayes_rvm.posterior import fit_gaussian

__all__ = [
    "check_scalable",
    "log_evidence_scale_gradient",
    "log_evidence_scale_gradient_bernoulli",
]


def log_evidence_scale_gradient(
    basis: KernelBasis, t: np.ndarray, active, alpha: np.ndarray, beta: float
) -> tuple[float, np.ndarray]:
    """Log marginal likelihood and its gradient in the log input scales (Gaussian noise).

    Parameters
    ----------
    basis : KernelBasis
        Design matrix whose kernel has per-dimension scales (:class:`~bayes_rvm.kernels.RBF`
        or :class:`~bayes_rvm.kernels.Laplacian`).
    t : array of shape (N,)
    active : array of int
        Columns with finite ``alpha`` (the others have ``alpha = inf``: no influence).
    alpha : array
        Their precisions.
    beta : float
        Noise precision.

    Returns
    -------
    log_marginal : float
        ``log N(t | 0, beta^-1 I + Phi A^-1 Phi^T)`` (eq. 15, without hyperprior terms,
        which do not depend on the scales).
    gradient : ndarray of shape (n_features,)
        ``dL / d log eta_k``.

    Notes
    -----
    With ``mu``, ``Sigma`` the posterior over the active weights (eq. 12-13),
    ``D = dL / dPhi = beta [(t - Phi mu) mu^T - Phi Sigma]`` (Tipping 2001, eq. 55, equal
    to eq. 54). Only kernel columns depend on the scales; eq. 57 contracts ``D`` with
    ``dPhi / d log eta_k``. Cost ``O(N M d + M^3)``; no ``N x N`` matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from bayes_rvm.basis import KernelBasis
    >>> from bayes_rvm.kernels import RBF
    >>> X = np.random.default_rng(0).uniform(-1, 1, (30, 2))
    >>> t = np.sin(3 * X[:, 0])
    >>> basis = KernelBasis(X, RBF([1.0, 1.0]))
    >>> value, grad = log_evidence_scale_gradient(basis, t, [0, 5, 30], np.ones(3), 100.0)
    >>> grad.shape
    (2,)
    """
    kernel = check_scalable(basis.kernel)
    active = np.asarray(active, dtype=np.intp)
    alpha = np.asarray(alpha, dtype=np.float64)
    Phi = basis.columns(active)
    fit = fit_gaussian(Phi, t, alpha, beta)
    # Phi Sigma by a Cholesky solve: Sigma = (A + beta Phi^T Phi)^-1 (eq. 12)
    Phi_Sigma = _linalg.cho_solve(fit.L, Phi.T).T if active.size else Phi
    # Tipping (2001) eq. 55: D = beta [(t - y) mu^T - Phi Sigma]
    D = beta * (np.outer(fit.residual, fit.mu) - Phi_Sigma)
    is_kernel = active < basis.n_centres
    # Tipping (2001) eq. 53 and 57: the bias and extra columns do not depend on eta
    gradient = kernel.log_scale_gradient(
        basis.X, basis.centres[active[is_kernel]], D[:, is_kernel]
    )
    return fit.log_marginal(), gradient


def log_evidence_scale_gradient_bernoulli(
    basis: KernelBasis, t: np.ndarray, active, alpha: np.ndarray, beta=None
) -> tuple[float, np.ndarray]:
    """Laplace log evidence of a Bernoulli model and its gradient in the log input scales.

    Parameters
    ----------
    basis, active, alpha
        As in :func:`log_evidence_scale_gradient`.
    t : array of shape (N,)
        Targets in {0, 1}.
    beta : None
        Unused (classification has no noise precision); accepted for a common signature.

    Returns
    -------
    log_evidence : float
        Laplace approximation (Tipping 2001, eq. 24-26; Bishop 2006, eq. 7.114), without
        hyperprior terms.
    gradient : ndarray of shape (n_features,)

    Notes
    -----
    The approximation is ``E = psi(w*) + sum log alpha / 2 - log|H| / 2`` with
    ``psi(w) = log P(t | w) - w^T A w / 2`` maximal at ``w*``, ``H = Phi^T B Phi + A``,
    ``B = diag(y (1 - y))`` and ``y = sigmoid(Phi w*)``. Its total derivative in ``Phi``
    counts the moving mode: with ``Sigma = H^-1``, ``s_n = (Phi Sigma Phi^T)_nn``,
    ``u = s * y (1 - y) (1 - 2 y)`` and ``v = Sigma Phi^T u``,

    ``D = (t - y) w*^T - B Phi Sigma - [u w*^T + (t - y) v^T - B Phi v w*^T] / 2``.

    The first term is the envelope derivative of ``psi`` (eq. 54-55's counterpart), the
    second the explicit derivative of ``log|H|``, the bracket the change of ``B`` through
    ``y``, both directly and through ``dw* = Sigma [dPhi^T (t - y) - Phi^T B dPhi w*]``
    (implicit differentiation of ``grad psi(w*) = 0``).
    """
    kernel = check_scalable(basis.kernel)
    active = np.asarray(active, dtype=np.intp)
    alpha = np.asarray(alpha, dtype=np.float64)
    Phi = basis.columns(active)
    mode = laplace.posterior_mode(Phi, laplace.Bernoulli(t), alpha)
    value = laplace.log_evidence_laplace(mode, alpha)
    w, y = mode.mu, mode.y
    b = y * (1.0 - y)
    Phi_Sigma = _linalg.cho_solve(mode.precision_chol, Phi.T).T
    s = np.einsum("nm,nm->n", Phi_Sigma, Phi)
    u = s * b * (1.0 - 2.0 * y)
    v = Phi_Sigma.T @ u
    r = t - y
    D = (
        np.outer(r, w)
        - b[:, None] * Phi_Sigma
        - 0.5 * (np.outer(u, w) + np.outer(r, v) - np.outer(b * (Phi @ v), w))
    )
    is_kernel = active < basis.n_centres
    gradient = kernel.log_scale_gradient(
        basis.X, basis.centres[active[is_kernel]], D[:, is_kernel]
    )
    return value, gradient


def check_scalable(kernel) -> RBF:
    if not isinstance(kernel, RBF):
        raise ValueError(
            "input scales can be learned only for the Gaussian ('rbf') or Laplacian kernel "
            f"(one scale eta_k per input dimension); got {kernel!r}"
        )
    return kernel
