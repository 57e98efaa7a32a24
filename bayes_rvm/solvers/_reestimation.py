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

    L: np.ndarray
    mu: np.ndarray
    sigma_diag: np.ndarray
    gamma: np.ndarray
    rss: float
    log_evidence: float


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

    Converged when no column is pruned and ``max |delta log alpha|`` and
    ``|delta log beta|`` fall below ``tol``.
    """
    Phi = basis.toarray()
    n, n_basis = Phi.shape
    gram = Phi.T @ Phi
    phi_t = Phi.T @ t
    active = np.arange(n_basis)
    alpha = initial_alpha(np.diag(gram), t, n_basis)
    beta = 1.0 / (initial_noise_var(t) if noise_var is None else noise_var)
    floor = noise_var_floor(t)

    def state_at(active, alpha, beta) -> State:
        L, mu = gaussian_posterior(gram[np.ix_(active, active)], phi_t[active], alpha, beta)
        sigma_diag = _linalg.inverse_diag(L)
        residual = t - Phi[:, active] @ mu
        rss = float(residual @ residual)
        log_ev = log_evidence_gaussian(L, mu, alpha, beta, rss, n) + hyperprior_log_density(
            alpha, None if noise_var is not None else beta, prior.a, prior.b, prior.c, prior.d
        )
        # Tipping (2001) eq. 17: gamma_i = 1 - alpha_i Sigma_ii
        return State(L, mu, sigma_diag, 1.0 - alpha * sigma_diag, rss, log_ev)

    path: list[float] = []
    converged = False
    state = state_at(active, alpha, beta)
    for iteration in range(1, max_iter + 1):
        path.append(state.log_evidence)
        with np.errstate(divide="ignore", invalid="ignore"):
            alpha_new = rules.alpha(state, alpha, prior)
        beta_new = beta
        if noise_var is None:
            beta_new = 1.0 / max(rules.noise_var(state, beta, n, prior), floor)
        drop = rules.prune(state, alpha, prior) | ~np.isfinite(alpha_new) | (alpha_new <= 0)
        change = abs(np.log(beta_new / beta))
        if (~drop).any():
            change = max(change, float(np.max(np.abs(np.log(alpha_new[~drop] / alpha[~drop])))))
        if verbose and (iteration % 50 == 0 or iteration == 1):
            print(
                f"[{rules.name}] iter {iteration}: M={active.size} "
                f"log evidence={state.log_evidence:.6f} change={change:.2e}"
            )
        if not drop.any() and change < tol:
            converged = True
            break
        active, alpha, beta = active[~drop], alpha_new[~drop], beta_new
        state = state_at(active, alpha, beta)
    else:
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
