"""The sequential solver's result: the posterior at the final hyperparameters, in the
data's units, with its log evidence and the re-add gains of the pruned columns."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from bayes_rvm.basis import Basis
from bayes_rvm.evidence import delta_add
from bayes_rvm.laplace import Bernoulli, LaplaceMode, log_evidence_laplace
from bayes_rvm.posterior import GaussianFit, fit_gaussian, gaussian_posterior
from bayes_rvm.solvers._ascent import Ascent
from bayes_rvm.solvers._base import Prior, Type2Result

__all__ = ["End", "assemble", "gaussian_result", "workspace_result"]


@dataclass(frozen=True)
class End:
    """How an ascent ended: the ``S, Q`` of every column, the log evidence path, the steps
    taken and whether it converged."""

    S: np.ndarray
    Q: np.ndarray
    path: Iterable[float]
    n_iter: int
    converged: bool


def gaussian_result(
    Phi_a: np.ndarray,
    t: np.ndarray,
    active: np.ndarray,
    alpha: np.ndarray,
    beta: float,
    prior: Prior,
    end: End,
    n_rows: int,
    noise_fixed: bool = False,
) -> Type2Result:
    """The result of a Gaussian fit from the active columns ``Phi_a`` (of ``t``'s rows,
    which stand for ``n_rows``) and their precisions in the data's units."""
    # Tipping (2001) eq. 12-13
    posterior = fit_gaussian(Phi_a, t, alpha, beta, n_rows=n_rows)
    F = t - posterior.residual
    return assemble(
        posterior.L, posterior.mu, F, t, active, alpha, beta, prior, None, noise_fixed, end,
        n_rows,
    )  # fmt: skip


def workspace_result(
    basis: Basis,
    run: Ascent,
    scales: np.ndarray,
    prior: Prior,
    noise_fixed: bool,
    converged: bool,
    link: Bernoulli | None,
) -> Type2Result:
    """Undo the column normalisation and assemble the result from a fresh factor."""
    ws = run.ws
    ws.refresh(ws.beta)  # exact S, Q for the re-add gains
    M = ws.M
    order = np.argsort(ws.index[:M], kind="stable")
    active = ws.index[:M][order]
    scale = scales[active]
    # phi_j = scale_j phi~_j: alpha_j = scale_j^2 alpha~_j, mu_j = mu~_j / scale_j
    alpha = ws.alpha[:M][order] * scale**2
    gram = ws.C[active][:, order] * np.outer(scale, scale)  # Phi_a^T Phi_a or Phi_a^T B Phi_a
    # Tipping (2001) eq. 12-13 (classification: eq. 26 with B at the mode, one Newton step
    # from it)
    precision_chol, mu = gaussian_posterior(
        0.5 * (gram + gram.T), ws.phi_t[active] * scale, alpha, ws.beta
    )
    F = ws.Phi[:, :M][:, order] @ (mu * scale)
    end = End(ws.S, ws.Q, run.path, run.steps, converged)
    return assemble(
        precision_chol, mu, F, ws.t, active, alpha, ws.beta, prior, link, noise_fixed, end,
        ws.n_rows,
    )  # fmt: skip


def assemble(
    precision_chol: np.ndarray,
    mu: np.ndarray,
    F: np.ndarray,
    t: np.ndarray,
    active: np.ndarray,
    alpha: np.ndarray,
    beta: float,
    prior: Prior,
    link: Bernoulli | None,
    noise_fixed: bool,
    end: End,
    n_rows: int,
) -> Type2Result:
    """The result at the final posterior (factor, mean, latent values ``F = Phi_a mu``):
    its log evidence (eq. 36 with ``N = n_rows``, or the Laplace evidence at the mode) and
    the gains of re-adding the inactive columns from the ``S, Q`` of every column."""
    if link is None:
        posterior = GaussianFit(precision_chol, mu, t - F, alpha, beta, n_rows=n_rows)
        log_ev = posterior.log_evidence(prior, noise_learned=not noise_fixed)
    else:
        log_likelihood = link.log_likelihood(F)
        # Tipping (2001) eq. 24 at the mode
        log_joint = log_likelihood - 0.5 * float(np.sum(alpha * mu**2))
        mode = LaplaceMode(mu, precision_chol, log_likelihood, log_joint, link.mean(F), 0, True)
        log_ev = log_evidence_laplace(mode, alpha, prior.a, prior.b)
    n_basis = end.S.size
    inactive = np.setdiff1d(np.arange(n_basis), active)
    return Type2Result(
        likelihood="gaussian" if link is None else link.name,
        solver="sequential",
        n_basis=n_basis,
        active=active,
        alpha=alpha,
        beta=beta if link is None else None,
        mu=mu,
        precision_chol=precision_chol,
        log_evidence=log_ev,
        log_evidence_path=np.array([*end.path, log_ev]),
        n_iter=end.n_iter,
        converged=end.converged,
        # the gain of an add is invariant to the column scale
        readd_gain=delta_add(end.S[inactive], end.Q[inactive]),
        prior=prior,
        noise_fixed=noise_fixed,
    )
