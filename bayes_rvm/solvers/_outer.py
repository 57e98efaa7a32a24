"""The outer loops of the sequential solver's large path: the noise update (Gaussian
likelihood) and the Laplace mode (Bernoulli likelihood), between converged ``alpha`` steps."""

from __future__ import annotations

import dataclasses

import numpy as np

from bayes_rvm.evidence import Prior, noise_variance
from bayes_rvm.laplace import Bernoulli, hessian_factor, log_evidence_laplace, posterior_mode
from bayes_rvm.solvers._ascent import Ascent, Outcome
from bayes_rvm.solvers._schedule import Schedule
from bayes_rvm.solvers._workspace import Workspace

__all__ = ["ModeLoop", "NoiseLoop", "gaussian_log_evidence"]


def gaussian_log_evidence(ws: Workspace, prior: Prior, noise_fixed: bool) -> float:
    """Gaussian likelihood: eq. 36 from the current factor (normalised columns, ``a = b = 0``)."""
    return ws.posterior().log_evidence(prior, noise_learned=not noise_fixed)


class NoiseLoop:
    """Gaussian likelihood: the noise update between converged ``alpha`` sub-problems.

    With ``probe`` set, the first update of a run may answer ``ABOVE``: the noise
    variance fell below ``restart_below`` times the start, so the run started above the
    noise optimum and restarts lower, below :attr:`estimate` (the precision it found).
    """

    def __init__(self, prior: Prior, floor: float, schedule: Schedule, verbose: bool):
        self.prior = prior
        self.floor = floor
        self.restart_below = schedule.restart_below
        self.verbose = verbose
        self.probe = True
        self.estimate = np.nan

    def due(self, run: Ascent, gain: float) -> bool:
        """Never before the ``alpha`` steps have converged."""
        return False

    def update(self, run: Ascent) -> Outcome:
        """Re-estimate ``beta`` (Tipping 2001, eq. 46, above the floor) and refresh."""
        ws = run.ws
        rss = ws.posterior().rss
        # Tipping (2001) eq. 46
        variance = noise_variance(rss, float(np.sum(ws.gamma())), ws.n_rows, self.prior)
        beta_new = 1.0 / max(variance, self.floor)
        if self.probe and beta_new * self.restart_below > ws.beta and ws.beta < 1.0 / self.floor:
            if self.verbose:
                print(
                    f"[sequential] started above the noise optimum (sd "
                    f"{ws.beta**-0.5:.4g} -> {beta_new**-0.5:.4g}): restarting lower"
                )
            self.estimate = beta_new  # the restart starts below it
            return Outcome.ABOVE
        self.probe = False
        ws.refresh(beta_new)
        log_ev = gaussian_log_evidence(ws, self.prior, noise_fixed=False)
        gain = run.record(log_ev)
        if self.verbose:
            print(
                f"[sequential] noise update after step {run.steps}: M={ws.M} "
                f"sd={ws.beta**-0.5:.4g} gain={gain:.3g}"
            )
        return Outcome.MOVED if abs(gain) > run.tol else Outcome.SETTLED


class ModeLoop:
    """Bernoulli likelihood: the Laplace mode and the weighted problem around it.

    At the mode ``w*`` of ``p(w | t, alpha)`` the Laplace evidence is that of a Gaussian
    model with noise precisions ``B = diag(y (1 - y))`` and the working target
    ``t^ = Phi w* + B^-1 (t - y)`` (Tipping & Faul 2003, Sec. 4; Tipping 2001, eq. 26).
    The workspace runs on that problem with ``beta = 1`` and products weighted by ``B``:
    ``C = Phi^T B Phi_a``, ``diag(Phi^T B Phi)`` and ``Phi^T B t^ = Phi^T (B F + t - y)``
    (``F = Phi w*``, so ``B^-1`` is never formed). :meth:`update`, the step that regression
    spends on the noise, finds the mode again by IRLS (warm-started) over the active set
    and rebuilds the weighted problem there. At a fixed point the steps and the mode
    agree: the conditions ``alpha_i = s_i^2 / (q_i^2 - s_i)`` hold with ``s, q`` of the
    Laplace posterior, the fixed point of MacKay's and EM's classification updates, which
    likewise treat ``B`` as constant in ``alpha``. Between updates the path follows the
    weighted Gaussian objective; each update resets it to the Laplace evidence (Bishop
    2006, eq. 7.114), so the path need not increase across updates.
    """

    def __init__(self, link: Bernoulli, prior: Prior, schedule: Schedule, verbose: bool):
        self.link = link
        self.prior = prior
        self.schedule = schedule
        self.verbose = verbose
        self.restart()

    def restart(self) -> None:
        """Forget the trust region, the best model and the weights (on a new basis)."""
        self.anchor = -np.inf  # the log evidence at the last update
        self.radius = self.schedule.mode_gain
        self.best = -np.inf  # the best log evidence at a mode, and its model
        self.best_model = (np.zeros(0, dtype=np.intp), np.zeros(0))
        self.stalled = 0  # updates since the best improved by tol

    def due(self, run: Ascent, gain: float) -> bool:
        """Whether a step of ``gain`` would take the claimed gain since the last mode
        beyond ``radius`` nats: the mode is found first."""
        return run.log_ev + gain - self.anchor > self.radius

    def weigh(self, run: Ascent, F: np.ndarray) -> np.ndarray:
        """The weighted problem at latent values ``F = Phi_a mu`` (all of ``run.ws``).
        Returns the weights ``B`` at ``F``."""
        ws = run.ws
        # Tipping (2001) eq. 25: B = diag(w y (1 - y)), and the residual w (t - y)
        curvature, residual = self.link.irls(F)
        weights = curvature[:, 0, 0]
        # Tipping & Faul (2003) Sec. 4: B t^ = B F + (t - y)
        target = weights * F + residual
        M = ws.M
        run.cache.reweight(weights)
        V = np.column_stack([weights[:, None] * ws.Phi[:, :M], target])
        products, unit = run.cache.weighted(V)
        ws.rebase(products[:, :M], products[:, M], unit, 1.0)
        return weights

    def update(self, run: Ascent) -> Outcome:
        """Find the mode again (IRLS over the active set) and weigh the problem there."""
        ws = run.ws
        M = ws.M
        alpha = ws.alpha[:M].copy()
        Phi_a = ws.Phi[:, :M]
        mode = posterior_mode(Phi_a, self.link, alpha, ws.mu if ws.mu.size == M else None)
        F = Phi_a @ mode.mu
        weights = self.weigh(run, F)
        # Bishop (2006) eq. 7.114 with the Hessian at the mode (Tipping 2001, eq. 25)
        chol = hessian_factor(Phi_a, weights[:, None, None], alpha)
        log_ev = log_evidence_laplace(dataclasses.replace(mode, precision_chol=chol), alpha)
        claimed = run.log_ev - self.anchor
        if claimed > 0:
            # trust region: the ratio of the evidence gained to the gain the steps claimed
            self.radius = self.schedule.mode_radius(self.radius, (log_ev - self.anchor) / claimed)
        gain = run.record(log_ev)
        self.anchor = log_ev
        if self.verbose:
            print(
                f"[sequential] mode update after step {run.steps}: M={M} IRLS steps "
                f"{mode.n_iter} change={gain:.3g}"
            )
        if log_ev > self.best + run.tol:
            self.best, self.best_model, self.stalled = log_ev, self.model(ws), 0
            return Outcome.SETTLED
        self.stalled += 1
        return Outcome.STALLED if self.stalled == self.schedule.mode_stall else Outcome.SETTLED

    def ascend(self, run: Ascent, stale: bool) -> Outcome:
        """The ascent until no step gains more than ``tol`` on the products weighed at the
        final mode (or it stalls: then at the best model seen)."""
        status = run.ascend(self, stale)
        if status is Outcome.STALLED:
            self.restore_best(run)
        return status

    @staticmethod
    def model(ws: Workspace) -> tuple[np.ndarray, np.ndarray]:
        """The active columns and their precisions."""
        return ws.index[: ws.M].copy(), ws.alpha[: ws.M].copy()

    def restore_best(self, run: Ascent) -> None:
        """Return to the model with the best Laplace evidence seen at a mode."""
        index, alpha = self.best_model
        run.clear()
        for j, alpha_j in zip(index, alpha, strict=True):
            run.add(int(j), float(alpha_j), np.zeros(0, dtype=np.intp))
        self.update(run)
