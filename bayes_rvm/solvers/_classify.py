"""Binary classification on the compiled step loop: one weighted Gaussian problem per
Laplace mode.

At the mode ``w*`` of ``p(w | t, alpha)`` the Laplace evidence is that of a Gaussian model
with noise precisions ``B = diag(y (1 - y))`` (times the rows' weights) and the working
target ``t^ = Phi w* + B^-1 (t - y)`` (Tipping & Faul 2003, Sec. 4; Tipping 2001, eq.
25-26). With the rows scaled by ``B^1/2`` that is a Gaussian problem at unit noise
precision: design ``B^1/2 Phi`` and target ``B^1/2 t^ = B^-1/2 (B F + t - y)``
(``F = Phi w*``), whose products ``Phi^T B Phi`` and ``Phi^T (B F + t - y)`` never form
``B^-1``. The compiled loop (:class:`~bayes_rvm.solvers._compiled.Ascent`, noise fixed)
solves it to the certificate; the mode is then found again (IRLS over the active set,
warm-started) and the next problem starts from the model the last one reached. The fit
has converged when the problem weighed at the final mode needs no step: no single add,
re-estimate or delete gains more than ``tol`` there. That is the fixed point of MacKay's
and EM's classification updates, which likewise hold ``B`` constant in ``alpha``; the
Laplace evidence need not rise from one mode to the next on the way (Bishop 2006, eq.
7.114 moves with ``B``).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bayes_rvm.laplace import (
    Bernoulli,
    LaplaceMode,
    hessian_factor,
    log_evidence_laplace,
    posterior_mode,
)
from bayes_rvm.solvers._assemble import End, assemble
from bayes_rvm.solvers._base import Prior, TargetMoments, Type2Result
from bayes_rvm.solvers._compiled import Ascent, Status
from bayes_rvm.solvers._schedule import Schedule

__all__ = ["fit_bernoulli"]


def _weighted_problem(
    Phi: np.ndarray, link: Bernoulli, F: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Gaussian problem at latent values ``F``: ``B = Phi~^T`` of the row-scaled design
    (normalised columns), its target, and the column norms."""
    curvature, residual = link.irls(F)
    root = np.sqrt(curvature[:, 0, 0])  # Tipping (2001) eq. 25: B = diag(w y (1 - y))
    # Tipping & Faul (2003) Sec. 4: B t^ = B F + (t - y), scaled by B^-1/2
    target = np.divide(root**2 * F + residual, root, out=np.zeros_like(F), where=root > 0)
    design = root[:, None] * Phi
    sq_norms = np.einsum("ij,ij->j", design, design)
    scales = np.where(sq_norms > 0, np.sqrt(sq_norms), 1.0)
    return np.ascontiguousarray((design / scales).T), target, scales


def fit_bernoulli(
    Phi: np.ndarray,
    link: Bernoulli,
    *,
    prior: Prior,
    tol: float,
    max_iter: int,
    schedule: Schedule,
    verbose: bool = False,
) -> Type2Result | None:
    """The sequential fit of a Bernoulli likelihood on the basis ``Phi`` held in memory
    (module notes); ``None`` when a posterior precision lost positive definiteness.
    ``max_iter`` bounds the steps of all the weighted problems together."""
    N = Phi.shape[0]
    options = {
        "prior": prior, "tol": tol, "schedule": schedule,
        "targets": TargetMoments.of(np.ones(N)),  # unit noise: the floor is never reached
    }  # fmt: skip
    active, alpha = np.zeros(0, dtype=np.intp), np.zeros(0)
    mode, chol, F = _mode(Phi, link, active, alpha, None)  # the empty model: y = 1/2
    path: list[float] = []
    steps = 0
    while True:
        B, target, scales = _weighted_problem(Phi, link, F)
        budget = max_iter - steps
        if active.size:
            ascent = Ascent.resume(
                B, target, active, alpha / scales[active] ** 2, 1.0, learn_noise=False,
                max_iter=budget, **options,
            )  # fmt: skip
        else:
            ascent = Ascent(B, target, 1.0, learn_noise=False, max_iter=budget, **options)
        status = ascent.run()
        if status == Status.NOT_PD:
            return None
        steps += ascent.steps
        converged = status == Status.CONVERGED and ascent.steps == 0
        if converged or status != Status.CONVERGED:
            break  # the certificate at the current mode, or max_iter
        index, alpha_unit = ascent.model()
        order = np.argsort(index, kind="stable")
        same = np.array_equal(index[order], active)
        active = index[order]
        alpha = alpha_unit[order] * scales[active] ** 2  # phi~_j = phi_j / scale_j
        mode, chol, F = _mode(Phi, link, active, alpha, mode.mu if same else None)
        # Bishop (2006) eq. 7.114 at the new mode
        path.append(log_evidence_laplace(mode, alpha))
        if verbose:
            print(
                f"[sequential] mode update after {steps} steps: M={active.size}, Laplace "
                f"log evidence={path[-1]:.6f}"
            )
    S, Q = ascent.readd_gain_inputs()
    end = End(S, Q, path[:-1], steps, converged)
    return assemble(chol, mode.mu, F, link.t, active, alpha, 1.0, prior, link, True, end, N)


def _mode(
    Phi: np.ndarray,
    link: Bernoulli,
    active: np.ndarray,
    alpha: np.ndarray,
    w0: np.ndarray | None,
) -> tuple[LaplaceMode, np.ndarray, np.ndarray]:
    """The mode of ``p(w | t, alpha)`` on the columns ``active`` (IRLS from ``w0``), the
    factor of the Hessian there and the latent values ``F = Phi_a w*``."""
    Phi_a = Phi[:, active]
    mode = posterior_mode(Phi_a, link, alpha, w0)
    F = Phi_a @ mode.mu
    # Tipping (2001) eq. 25: the Hessian Phi^T B Phi + A at the mode
    chol = hessian_factor(Phi_a, link.irls(F)[0], alpha)
    return dataclasses.replace(mode, precision_chol=chol), chol, F
