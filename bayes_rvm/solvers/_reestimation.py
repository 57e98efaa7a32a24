"""The full-basis re-estimation loop shared by the MacKay and EM solvers (Gaussian noise).

Start with every column active, alternate the closed-form posterior (eq. 12-13) with
an update of ``alpha`` and ``beta``, and prune columns as they become irrelevant
(App. B.1). The update rules are what distinguishes the solvers; they live in
``mackay.py`` and ``em.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bayes_rvm import _linalg
from bayes_rvm.basis import Basis
from bayes_rvm.evidence import (
    delta_add,
    hyperprior_log_density,
    log_evidence_gaussian,
    sparsity_quality,
)
from bayes_rvm.posterior import gaussian_posterior
from bayes_rvm.solvers._base import (
    Prior,
    Type2Result,
    initial_alpha,
    initial_noise_var,
    noise_var_floor,
)

__all__ = ["EPS", "Rules", "State", "reestimate"]

#: Machine precision, the App. B.1 pruning threshold for gamma_i.
EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class State:
    """The posterior and its summaries at one ``(alpha, beta)``."""

    alpha: np.ndarray
    beta: float
    L: np.ndarray
    mu: np.ndarray
    sigma_diag: np.ndarray
    gamma: np.ndarray
    rss: float
    log_evidence: float

    @property
    def s(self) -> np.ndarray:
        """``s_i``, from ``Sigma_ii = 1 / (alpha_i + s_i)`` (Faul & Tipping 2002)."""
        return 1.0 / self.sigma_diag - self.alpha

    @property
    def q(self) -> np.ndarray:
        """``q_i``, from ``mu_i = q_i Sigma_ii`` (Faul & Tipping 2002)."""
        return self.mu / self.sigma_diag

    def gradient(self, prior: Prior, n: int, noise_learned: bool) -> float:
        """Largest absolute gradient of the objective w.r.t. ``log alpha_i`` and ``log beta``."""
        # Tipping (2001) eq. 42
        g_alpha = 0.5 * (1.0 - self.alpha * (self.mu**2 + self.sigma_diag))
        g_alpha += prior.a - prior.b * self.alpha
        largest = float(np.max(np.abs(g_alpha))) if g_alpha.size else 0.0
        if noise_learned:
            # Tipping (2001) eq. 45, times beta: d L / d log beta
            g_beta = 0.5 * (n - self.beta * self.rss - float(np.sum(self.gamma)))
            largest = max(largest, abs(g_beta + prior.c - prior.d * self.beta))
        return largest


@dataclass(frozen=True)
class Rules:
    """A solver's updates: ``alpha(state, alpha, prior)``, ``noise_var(state, beta, n, prior)``,
    and ``prune(state, alpha, prior) -> mask of columns to drop``."""

    name: str
    alpha: Callable[[State, np.ndarray, Prior], np.ndarray]
    noise_var: Callable[[State, float, int, Prior], float]
    prune: Callable[[State, np.ndarray, Prior], np.ndarray]


def reestimate(
    basis: Basis,
    t: np.ndarray,
    rules: Rules,
    *,
    prior: Prior,
    noise_var: float | None,
    max_iter: int,
    tol: float,
    verbose: bool = False,
) -> Type2Result:
    """Run the re-estimation loop to convergence or ``max_iter``.

    Converged when no column is pruned and every partial derivative of the objective
    with respect to ``log alpha_i`` (eq. 42) and ``log beta`` (eq. 45) is below ``tol`` in
    absolute value. The gradient, unlike the step size, also becomes small for an
    ``alpha_i`` that drifts slowly to infinity (its derivative is about
    ``(s_i - q_i^2) / (2 alpha_i)``). With the improper default prior, such columns
    (``q_i^2 <= s_i``) are then deleted: for each, ``alpha_i = inf`` maximises the objective
    given the rest, so the deletion is an exact coordinate-ascent step (Faul & Tipping 2002).
    """
    Phi = basis.toarray()
    n, n_basis = Phi.shape
    gram = Phi.T @ Phi
    phi_t = Phi.T @ t
    active = np.arange(n_basis)
    alpha = initial_alpha(np.diag(gram), t, n_basis)
    beta = 1.0 / (initial_noise_var(t) if noise_var is None else noise_var)
    floor = noise_var_floor(t)
    learn_noise = noise_var is None
    improper = prior.a == 0 and prior.b == 0

    def state_at(active, alpha, beta) -> State:
        L, mu = gaussian_posterior(gram[np.ix_(active, active)], phi_t[active], alpha, beta)
        sigma_diag = _linalg.inverse_diag(L)
        residual = t - Phi[:, active] @ mu
        rss = float(residual @ residual)
        log_ev = log_evidence_gaussian(L, mu, alpha, beta, rss, n) + hyperprior_log_density(
            alpha, beta if learn_noise else None, prior.a, prior.b, prior.c, prior.d
        )
        # Tipping (2001) eq. 17: gamma_i = 1 - alpha_i Sigma_ii
        return State(alpha, beta, L, mu, sigma_diag, 1.0 - alpha * sigma_diag, rss, log_ev)

    path: list[float] = []
    converged = False
    state = state_at(active, alpha, beta)
    for iteration in range(1, max_iter + 1):
        path.append(state.log_evidence)
        gradient = state.gradient(prior, n, learn_noise)
        if verbose and (iteration % 50 == 0 or iteration == 1):
            print(
                f"[{rules.name}] iter {iteration}: M={active.size} "
                f"log evidence={state.log_evidence:.6f} max gradient={gradient:.2e}"
            )
        with np.errstate(divide="ignore", invalid="ignore"):
            alpha_new = rules.alpha(state, alpha, prior)
            drop = rules.prune(state, alpha, prior) | ~np.isfinite(alpha_new) | (alpha_new <= 0)
        if not drop.any() and gradient < tol:
            converged = True
            break
        if learn_noise:
            beta = 1.0 / max(rules.noise_var(state, beta, n, prior), floor)
        active, alpha = active[~drop], alpha_new[~drop]
        state = state_at(active, alpha, beta)
    else:
        path.append(state.log_evidence)

    if improper:
        with np.errstate(divide="ignore", invalid="ignore"):
            drifting = state.q**2 <= state.s
        if drifting.any():
            active, alpha = active[~drifting], alpha[~drifting]
            state = state_at(active, alpha, beta)
            path.append(state.log_evidence)

    # App. B.1: would re-adding a pruned column raise the evidence?
    inactive = np.setdiff1d(np.arange(n_basis), active)
    cross = beta * gram[np.ix_(inactive, active)]
    S, Q = sparsity_quality(
        cross, beta * np.diag(gram)[inactive], beta * phi_t[inactive], state.L, state.mu
    )
    return Type2Result(
        likelihood="gaussian",
        solver=rules.name,
        n_basis=n_basis,
        active=active,
        alpha=alpha,
        beta=beta,
        mu=state.mu,
        precision_chol=state.L,
        log_evidence=state.log_evidence,
        log_evidence_path=np.array(path),
        n_iter=iteration,
        converged=converged,
        readd_gain=delta_add(S, Q),
        prior=prior,
        noise_fixed=noise_var is not None,
    )
