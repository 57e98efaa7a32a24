"""Joint Newton steps on the active ``alpha`` of a Gaussian fit (active set and noise fixed).

Both sequential paths take them when single-column re-estimates of many coupled ``alpha``
would converge slowly: the large path (:class:`~._workspace.Workspace`) after a run of
re-estimates, the compiled path (:class:`~._compiled.Ascent`) likewise on large active sets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bayes_rvm import _linalg
from bayes_rvm.evidence import posterior_sparsity_quality

__all__ = ["NewtonSettings", "alpha_objective", "joint_newton"]


@dataclass(frozen=True)
class NewtonSettings:
    """The joint Newton steps of both sequential paths (``Schedule.newton``,
    ``Schedule.newton``).

    Attributes
    ----------
    steps : int
        Newton steps per call.
    max_step : float
        The largest change of one ``log alpha`` per step.
    damping_max : float
        Damping beyond which a step is abandoned (the steps are then far below rounding of
        the evidence).
    """

    steps: int = 30
    max_step: float = 4.0
    damping_max: float = 1e12


def alpha_objective(
    G: np.ndarray, b: np.ndarray, alpha: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray]:
    """The part of the log evidence that depends on the active ``alpha``, with the factor
    of ``H = A + G`` and ``mu`` there; ``G = beta Phi_a^T Phi_a``, ``b = beta Phi_a^T t``.

    From Tipping (2001) eq. 36 with ``log|C| = -log|Sigma| - N log beta - log|A|``
    (eq. 38) and ``t^T C^-1 t = beta t^T t - b^T mu``: ``0.5 [sum log alpha - log|H| +
    b^T mu]`` plus terms free of ``alpha``.
    """
    H = G.copy()
    H[np.diag_indices_from(H)] += alpha  # Tipping (2001) eq. 12
    L = _linalg.cholesky(H)
    mu = _linalg.cho_solve(L, b)  # Tipping (2001) eq. 13
    # Tipping (2001) eq. 36 with eq. 38, alpha-dependent part
    value = 0.5 * (float(np.sum(np.log(alpha))) - _linalg.logdet(L) + float(b @ mu))
    return value, L, mu


def joint_newton(
    G: np.ndarray,
    b: np.ndarray,
    alpha: np.ndarray,
    free: np.ndarray,
    tol: float,
    settings: NewtonSettings,
) -> tuple[np.ndarray, float]:
    """Maximise :func:`alpha_objective` over the ``alpha`` at positions ``free`` jointly:
    damped Newton steps in ``log alpha``. Returns the new ``alpha`` and the gain (nats).

    The gradient is ``0.5 (1 - alpha_i Sigma_ii - alpha_i mu_i^2)`` (Tipping 2001, eq. 16
    and 17 in ``log alpha``); the Hessian ``0.5 [a_i a_j (Sigma_ij^2 + 2 mu_i mu_j
    Sigma_ij) - delta_ij a_i (Sigma_ii + mu_i^2)]`` follows from ``d Sigma / d alpha_j =
    -Sigma e_j e_j^T Sigma``. A step is kept only if the objective rises; the damping
    ``lam`` grows until it does (up to ``settings.damping_max``); so does a step at which
    ``H`` is not positive definite to rounding. At most ``settings.steps`` steps, each
    ``log alpha_i`` moving by at most ``settings.max_step``; the steps stop once one gains
    at most ``tol``, or once the quadratic model gives the next at most ``tol``.
    """
    alpha = alpha.copy()
    value, L, mu = alpha_objective(G, b, alpha)
    Sigma = _linalg.cho_solve(L, np.eye(alpha.size))
    start, lam = value, 0.0
    for _ in range(settings.steps):
        # a column whose own optimum has become alpha = inf (q^2 <= s) leaves the joint
        # step: the greedy steps delete it (pushing its alpha up would only make H
        # ill-conditioned)
        s, q = posterior_sparsity_quality(np.diag(Sigma), mu, alpha)
        free = free[(q[free] ** 2 > s[free]) & (s[free] > 0)]
        if not free.size:
            break
        a, d, m = alpha[free], np.diag(Sigma)[free], mu[free]
        # Tipping (2001) eq. 16-17: d L / d log alpha_i = (gamma_i - alpha_i mu_i^2) / 2
        grad = 0.5 * (1.0 - a * d - a * m**2)
        block = Sigma[np.ix_(free, free)]
        curvature = 0.5 * np.outer(a, a) * (block**2 + 2.0 * np.outer(m, m) * block)
        curvature[np.diag_indices_from(curvature)] -= 0.5 * a * (d + m**2)
        accepted = optimal = False
        while not accepted and lam <= settings.damping_max:
            system = lam * np.eye(free.size) - curvature
            try:
                factor = _linalg.cholesky(system, what="Newton system")
            except _linalg.NotPositiveDefiniteError:
                lam = max(4.0 * lam, 1e-6)
                continue
            newton = _linalg.cho_solve(factor, grad)
            # the gain the quadratic model gives the step before it is clipped (for lam = 0
            # half the Newton decrement), smaller for every larger lam: at most tol, no
            # step at this damping or more gains more than tol by the model (at lam = 0:
            # the optimum to tol; lam > 0 only where less damping failed), and the
            # evaluations would only test the objective's rounding
            optimal = float(grad @ newton + 0.5 * newton @ (curvature @ newton)) <= tol
            if optimal:
                break
            limit = settings.max_step
            step = np.clip(newton, -limit, limit)
            trial = alpha.copy()
            trial[free] *= np.exp(step)
            try:
                new_value, new_L, new_mu = alpha_objective(G, b, trial)
            except _linalg.NotPositiveDefiniteError:  # H lost definiteness to rounding
                new_value = -np.inf
            accepted = new_value > value
            if not accepted:
                lam = max(4.0 * lam, 1e-6)
        if optimal or not accepted:  # no step raises the evidence: at the optimum
            break
        gain = new_value - value
        alpha, value, L, mu = trial, new_value, new_L, new_mu
        Sigma = _linalg.cho_solve(L, np.eye(alpha.size))
        lam *= 0.25
        if gain <= tol:
            break
    return alpha, value - start
