"""The full-basis re-estimation loop shared by the MacKay and EM solvers.

Start with every column active, alternate a posterior step with an update of ``alpha``
(and ``beta`` in regression), and prune columns as they become irrelevant (App. B.1).
The posterior step is the likelihood's: the closed-form Gaussian (eq. 12-13) in
regression, the Laplace approximation at the IRLS mode (Sec. 3, eq. 24-26) in
classification. The update rules are what distinguishes the solvers; they live in
``mackay.py`` and ``em.py``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from bayes_rvm import _blocks, _linalg, laplace
from bayes_rvm.basis import Basis
from bayes_rvm.evidence import (
    Prior,
    column_gain,
    delta_add_shared,
    posterior_sparsity_quality,
    shared_alpha_gain,
    sparsity_quality,
)
from bayes_rvm.posterior import fit_gaussian
from bayes_rvm.solvers._base import (
    TargetMoments,
    Type2Result,
    initial_alpha,
    initial_noise_var,
    noise_var_floor,
)
from bayes_rvm.solvers._schedule import Schedule

__all__ = [
    "ALPHA_MAX",
    "NEGLIGIBLE_GAMMA",
    "GaussianStep",
    "LaplaceStep",
    "Rules",
    "State",
    "reestimate",
    "unbounded_negligible",
]


@dataclass(frozen=True)
class State:
    """The (Gaussian or Laplace) weight posterior and its summaries at one ``alpha``.

    With ``K`` outputs sharing each ``alpha_m`` (softmax) ``mu`` and ``sigma_diag`` have
    shape ``(M, K)``, ``sigma_blocks`` holds the ``K x K`` diagonal blocks of ``Sigma``, and
    ``gamma_m = sum_k (1 - alpha_m Sigma_mk,mk)``. ``rss`` is ``None`` in classification.
    """

    alpha: np.ndarray
    beta: float | None
    L: np.ndarray
    mu: np.ndarray
    sigma_diag: np.ndarray
    gamma: np.ndarray
    rss: float | None
    log_evidence: float
    sigma_blocks: np.ndarray | None = None

    @property
    def n_outputs(self) -> int:
        return 1 if self.mu.ndim == 1 else self.mu.shape[1]

    @property
    def weight_sq(self) -> np.ndarray:
        """``sum_k mu_mk^2`` per basis function (``mu_m^2`` with one output)."""
        return self.mu**2 if self.mu.ndim == 1 else np.sum(self.mu**2, axis=1)

    @property
    def variance_sum(self) -> np.ndarray:
        """``sum_k Sigma_mk,mk`` per basis function (``Sigma_mm`` with one output)."""
        return self.sigma_diag if self.mu.ndim == 1 else np.sum(self.sigma_diag, axis=1)

    @property
    def residual_sq(self) -> float:
        """``||t - Phi mu||^2`` (regression: the posterior of a Gaussian likelihood)."""
        if self.rss is None:
            raise ValueError("a Laplace posterior (classification) has no residual noise")
        return self.rss

    @property
    def noise_precision(self) -> float:
        """``beta`` (regression: the posterior of a Gaussian likelihood)."""
        if self.beta is None:
            raise ValueError("a Laplace posterior (classification) has no noise precision")
        return self.beta

    @property
    def sigma(self) -> np.ndarray:
        """Posterior marginals per basis function: variances, or ``K x K`` blocks."""
        return self.sigma_diag if self.sigma_blocks is None else self.sigma_blocks

    def unbounded(self, candidates: np.ndarray | None = None) -> np.ndarray:
        """Columns for which ``alpha_i = inf`` maximises the objective given the rest.

        ``q_i^2 <= s_i`` (Faul & Tipping 2002, eq. 17 has no finite root); with ``K``
        outputs sharing ``alpha_i``, no finite ``alpha_i`` beats infinity
        (:func:`~bayes_rvm.evidence.shared_alpha_gain`). Only ``candidates`` (a mask) are
        examined when given.
        """
        mask = np.ones(self.alpha.shape, dtype=bool) if candidates is None else candidates
        with np.errstate(divide="ignore", invalid="ignore"):
            s, q = posterior_sparsity_quality(self.sigma, self.mu, self.alpha)
        if s.ndim == 1:
            return mask & (q**2 <= s)
        result = np.zeros(self.alpha.shape, dtype=bool)
        result[mask] = shared_alpha_gain(s[mask], q[mask] ** 2) <= 0.0
        return result

    def gradient(
        self, prior: Prior, n: int, noise_learned: bool, beta_max: float = np.inf
    ) -> float:
        """Largest absolute gradient of the objective w.r.t. ``log alpha_i`` and ``log beta``.

        ``beta_max`` is the bound the solver keeps ``beta`` below (the noise floor,
        :func:`~bayes_rvm.solvers._base.noise_var_floor`): at the bound, a derivative that
        points past it is the Karush-Kuhn-Tucker condition of the bounded problem, not a
        lack of convergence, and is left out.
        """
        # Tipping (2001) eq. 42 (Bishop 2006, eq. 7.115 in classification; K weights
        # sharing alpha_i: K in place of 1 and sums over the K weights)
        g_alpha = 0.5 * (self.n_outputs - self.alpha * (self.weight_sq + self.variance_sum))
        g_alpha += prior.a - prior.b * self.alpha
        largest = float(np.max(np.abs(g_alpha))) if g_alpha.size else 0.0
        if noise_learned:
            # Tipping (2001) eq. 45, times beta: d L / d log beta
            beta = self.noise_precision
            g_beta = 0.5 * (n - beta * self.residual_sq - float(np.sum(self.gamma)))
            g_beta += prior.c - prior.d * beta
            if not (beta >= beta_max and g_beta > 0):
                largest = max(largest, abs(g_beta))
        return largest


@dataclass(frozen=True)
class Rules:
    """A solver's updates: ``alpha(state, alpha, prior)``, ``noise_var(state, beta, n, prior)``,
    and ``prune(state, alpha, prior) -> mask of columns to drop``.

    ``stall_window``: if > 0, the run also stops (unconverged, ``stalled``) once the log
    evidence has gained less than ``min(tol, STALL_GAIN)`` nats over that many iterations
    without a column being pruned: for a solver whose steps shrink geometrically (EM) the
    gradient test may otherwise take ~1e5 iterations. (``STALL_GAIN`` keeps a loose ``tol``
    to the gradient test, which it meets first.)
    """

    name: str
    alpha: Callable[[State, np.ndarray, Prior], np.ndarray]
    noise_var: Callable[[State, float, int, Prior], float]
    prune: Callable[[State, np.ndarray, Prior], np.ndarray]
    stall_window: int = 0


class GaussianStep:
    """Closed-form Gaussian posterior (Tipping 2001, eq. 12-13) and the exact evidence.

    ``Phi`` and ``t`` are the data, or a reduced design ``[R; 0]`` and target ``[z; r]``
    of the same products (:meth:`~bayes_rvm.basis.Basis.reduce`) standing for ``n_rows``
    rows."""

    likelihood = "gaussian"

    def __init__(
        self,
        Phi: np.ndarray,
        t: np.ndarray,
        prior: Prior,
        noise_var: float | None,
        n_rows: int | None = None,
    ):
        self.Phi, self.t, self.prior, self.noise_var = Phi, t, prior, noise_var
        self.n_rows = t.size if n_rows is None else n_rows
        self.gram = Phi.T @ Phi
        self.phi_t = Phi.T @ t

    def initial_alpha(self) -> np.ndarray:
        return initial_alpha(np.diag(self.gram), self.t, self.Phi.shape[1])

    def state(self, active, alpha, beta, warm) -> State:
        fit = fit_gaussian(
            self.Phi[:, active],
            self.t,
            alpha,
            beta,
            gram=self.gram[np.ix_(active, active)],
            phi_t=self.phi_t[active],
            n_rows=self.n_rows,
        )
        sigma_diag = fit.sigma_diag
        log_ev = fit.log_evidence(self.prior, noise_learned=self.noise_var is None)
        # Tipping (2001) eq. 17: gamma_i = 1 - alpha_i Sigma_ii
        return State(
            alpha, beta, fit.L, fit.mu, sigma_diag, 1.0 - alpha * sigma_diag, fit.rss, log_ev
        )

    def prune(self, state: State, alpha: np.ndarray, alpha_new: np.ndarray) -> np.ndarray:
        """Regression prunes by the solver's rules alone."""
        return np.zeros(alpha.shape, dtype=bool)

    def start(self) -> np.ndarray:
        """Regression starts from the whole basis, and has nothing to add (:meth:`grow`)."""
        return np.arange(self.Phi.shape[1])

    def grow(self, active, state: State, tol: float) -> np.ndarray:
        return active[:0]

    def readd_gain(self, active, state: State, beta) -> np.ndarray:
        # App. B.1: would re-adding a pruned column raise the evidence?
        inactive = np.setdiff1d(np.arange(self.Phi.shape[1]), active)
        cross = beta * self.gram[np.ix_(inactive, active)]
        S, Q = sparsity_quality(
            cross,
            beta * np.diag(self.gram)[inactive],
            beta * self.phi_t[inactive],
            state.L,
            state.mu,
        )
        return column_gain(S, Q, np.full(S.shape, np.inf))[0]


class LaplaceStep:
    """Laplace posterior at the IRLS mode (Tipping 2001, Sec. 3), warm-started.

    ``link`` is a :class:`~bayes_rvm.laplace.Bernoulli` or
    :class:`~bayes_rvm.laplace.Categorical` likelihood holding the targets.
    """

    def __init__(self, Phi: np.ndarray, link, prior: Prior):
        self.Phi, self.link, self.prior = Phi, link, prior
        self.likelihood = link.name
        self.K = link.n_outputs
        n_basis = Phi.shape[1]
        # softmax: columns whose M K x M K Hessian one Newton step may factor
        limit = max(1, laplace.MAX_SOFTMAX_WEIGHTS // self.K)
        self.capacity = n_basis if self.K == 1 else min(n_basis, limit)

    def initial_alpha(self) -> np.ndarray:
        # prior variance of each latent function equal to 1 on average over the (weighted) rows
        (n, n_basis), weights = self.Phi.shape, self.link.weights
        norms = _blocks.weighted_sq_norms(self.Phi, weights)
        return initial_alpha(norms, np.ones(n), n_basis, weights)

    def start(self) -> np.ndarray:
        """The first active columns: all of them, or (a working set, when the whole basis
        has more softmax weights than one dense Hessian may hold) the columns whose
        addition to the empty model raises the evidence most."""
        if self.capacity == self.Phi.shape[1]:
            return np.arange(self.capacity)
        empty = np.arange(0)
        return self.grow(empty, self.state(empty, np.zeros(0), None, None), 0.0)

    def grow(self, active, state: State, tol: float) -> np.ndarray:
        """Working set (softmax over a large basis): the inactive columns whose addition
        raises the evidence by more than ``tol`` (Tipping & Faul 2003, eq. 27, K weights
        sharing alpha), best first, ``capacity // 16`` at a time, ``capacity`` in all."""
        n_basis = self.Phi.shape[1]
        room = min(self.capacity - active.size, max(1, self.capacity // 16))
        if self.capacity == n_basis:
            return active[:0]
        inactive = np.setdiff1d(np.arange(n_basis), active)
        gain = self.readd_gain(active, state, None)
        if room <= 0 and np.any(gain > tol):
            warnings.warn(
                f"the softmax working set is full ({active.size} basis functions x {self.K} "
                f"classes, a dense Hessian of {laplace.MAX_SOFTMAX_WEIGHTS} weights at most) "
                f"and {int(np.sum(gain > tol))} more would raise the evidence: the result is "
                "the optimum within it. Use one-vs-rest (RVC(multi_class='ovr'))",
                ConvergenceWarning,
                stacklevel=2,
            )
        best = np.argsort(-gain, kind="stable")[: max(room, 0)]
        return np.sort(inactive[best[gain[best] > tol]])

    def state(self, active, alpha, beta, warm) -> State:
        mode = laplace.posterior_mode(self.Phi[:, active], self.link, alpha, warm)
        log_ev = laplace.log_evidence_laplace(mode, alpha, self.prior.a, self.prior.b)
        M, K = active.size, self.K
        if K == 1:
            sigma_diag, blocks = _linalg.inverse_diag(mode.precision_chol), None
        else:
            Linv = _linalg.solve_lower(mode.precision_chol, np.eye(M * K)).reshape(M * K, M, K)
            # K x K diagonal blocks of Sigma = (Phi^T B Phi + A)^-1
            blocks = np.einsum("imk,iml->mkl", Linv, Linv)
            sigma_diag = np.diagonal(blocks, axis1=1, axis2=2)
        variance_sum = sigma_diag if K == 1 else np.sum(sigma_diag, axis=1)
        # Tipping (2001) eq. 17, summed over the K weights sharing alpha_m
        gamma = K - alpha * variance_sum
        return State(
            alpha, None, mode.precision_chol, mode.mu, sigma_diag, gamma, None, log_ev, blocks
        )

    def prune(self, state: State, alpha: np.ndarray, alpha_new: np.ndarray) -> np.ndarray:
        """Tipping (2001) App. B.1 for classification: delete weights with alpha > 1e12, or
        as soon as the step to alpha = inf is exact (MacKay's updates approach it only
        geometrically, with ratio s / q^2, slowly when q^2 ~ s)."""
        return (alpha_new > ALPHA_MAX) | unbounded_negligible(state, alpha, self.prior)

    def readd_gain(self, active, state: State, beta) -> np.ndarray:
        inactive = np.setdiff1d(np.arange(self.Phi.shape[1]), active)
        Phi_act = self.Phi[:, active]
        W, residual = self.link.irls(Phi_act @ state.mu)
        # blocks of inactive columns: the cross products are (block K) x (M K)
        block = max(1, _READD_BLOCK // max(1, self.K * self.K * active.size))
        gains = [np.zeros(0)]
        for i in range(0, inactive.size, block):
            columns = self.Phi[:, inactive[i : i + block]]
            gains.append(self._gain(columns, Phi_act, W, residual, state))
        return np.concatenate(gains)

    def _gain(self, Phi_in, Phi_act, W, residual, state: State) -> np.ndarray:
        """Evidence gain of adding each column of ``Phi_in`` to the active ``Phi_act``."""
        cross = laplace.weighted_cross(Phi_in, W, Phi_act)
        # phi_m^T B phi_m (K x K blocks)
        own = np.einsum("nm,nkj->mkj", Phi_in**2, W)
        # Bishop (2006) eq. 7.117 and Tipping & Faul (2003) eq. 25: at the mode
        # Q_m = phi_m^T B (t^ - Phi mu) = phi_m^T W (t - y)
        Q = Phi_in.T @ residual
        if self.K == 1:
            weighted_t = Q + cross @ state.mu
            S, Q = sparsity_quality(cross, own[:, 0, 0], weighted_t, state.L, state.mu)
            return column_gain(S, Q, np.full(S.shape, np.inf))[0]
        n_in, n_act, K = Phi_in.shape[1], Phi_act.shape[1], self.K
        Z = np.zeros((0, n_in, K))
        if n_act:
            Z = _linalg.solve_lower(state.L, cross.T).reshape(n_act * K, n_in, K)
        # Tipping & Faul (2003) eq. 24, K x K: phi^T B phi - phi^T B Phi Sigma Phi^T B phi
        S = own - np.einsum("imk,iml->mkl", Z, Z)
        return delta_add_shared(S, Q)


#: Floats of the inactive x active cross products :meth:`LaplaceStep.readd_gain` holds (64 MB).
_READD_BLOCK = 2**23

#: Classification: a weight is deleted once its alpha exceeds this (Tipping 2001, App. B.1).
ALPHA_MAX = 1e12

#: A column is a candidate for the coordinate step to alpha = inf once its gamma is below this.
NEGLIGIBLE_GAMMA = 1e-3


def unbounded_negligible(state: State, alpha: np.ndarray, prior: Prior) -> np.ndarray:
    """Columns whose evidence increases all the way to ``alpha_i = inf``, once negligible.

    True where ``gamma_i < NEGLIGIBLE_GAMMA`` (the weight's posterior is within 0.1% of its
    prior) and ``q_i^2 <= s_i`` (Faul & Tipping 2002, Sec. 3: eq. 17 has no finite root;
    with ``K`` outputs sharing ``alpha_i``: no finite ``alpha_i`` gives a higher evidence,
    :func:`~bayes_rvm.evidence.shared_alpha_gain`). Setting such an
    ``alpha_i`` to infinity is an exact coordinate-ascent step; waiting for a small
    ``gamma_i`` keeps it from being taken greedily before the other weights settle. With
    a proper Gamma prior (``a`` or ``b`` > 0) every optimum is finite: never.
    """
    if not prior.improper:
        return np.zeros(alpha.shape, dtype=bool)
    return state.unbounded(state.gamma < NEGLIGIBLE_GAMMA)


#: Largest gain (nats) over ``Rules.stall_window`` iterations that counts as a stall.
STALL_GAIN = 1e-6


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
    link=None,
    schedule: Schedule | None = None,
    targets: TargetMoments | None = None,
) -> Type2Result:
    """Run the re-estimation loop to convergence or ``max_iter``; the starting noise and
    its floor come from ``targets`` (the rows ``t`` stands for), or from ``t``.

    The posterior step is the likelihood's: the closed-form Gaussian (``link=None``,
    regression) or the Laplace approximation at the IRLS mode, warm-started from the
    previous mode (``link`` a classification likelihood holding the targets ``t``).

    The Gaussian step sees the data only through ``Phi^T Phi``, ``Phi^T t``, ``t^T t``
    and ``N`` (eq. 12-13, 36, 46): when ``schedule`` (default :class:`~._schedule.Schedule`)
    reduces a basis of this shape, the loop runs on the triangular factor of ``[Phi | t]``
    (:meth:`~bayes_rvm.basis.Basis.reduce`, on the workers for a dask basis).

    Converged when no column is pruned and every partial derivative of the objective
    with respect to ``log alpha_i`` (eq. 42) and ``log beta`` (eq. 45) is below ``tol`` in
    absolute value; a noise variance held at its floor (targets fitted to rounding, e.g.
    a constant target with the bias) counts as converged in ``beta`` when the evidence
    still asks for less noise. The gradient, unlike the step size, also becomes small for an
    ``alpha_i`` that drifts slowly to infinity (its derivative is about
    ``(s_i - q_i^2) / (2 alpha_i)``). With the improper default prior, such columns
    (``q_i^2 <= s_i``) are then deleted: for each, ``alpha_i = inf`` maximises the objective
    given the rest, so the deletion is an exact coordinate-ascent step (Faul & Tipping 2002).
    """
    n = basis.n_rows
    step: GaussianStep | LaplaceStep
    beta: float | None
    if link is None:
        if (Schedule() if schedule is None else schedule).reduces(basis.shape):
            factor = basis.reduce(t)
            step = GaussianStep(factor[:, :-1], factor[:, -1], prior, noise_var, n_rows=n)
        else:
            step = GaussianStep(basis.toarray(), t, prior, noise_var)
        learn_noise = noise_var is None
        targets = TargetMoments.of(t) if targets is None else targets
        beta = 1.0 / (initial_noise_var(targets) if noise_var is None else noise_var)
        floor = noise_var_floor(targets)
        beta_max = 1.0 / floor
    else:
        step = LaplaceStep(basis.toarray(), link, prior)
        learn_noise, beta, beta_max = False, None, np.inf
    n_basis = basis.n_columns
    start_alpha = step.initial_alpha()
    active = step.start()
    alpha = start_alpha[active]

    path: list[float] = []
    converged = stalled = False
    last_prune = 0
    state = step.state(active, alpha, beta, None)
    for iteration in range(1, max_iter + 1):
        path.append(state.log_evidence)
        window = rules.stall_window
        if (
            window
            and iteration - last_prune > window
            and path[-1] - path[-1 - window] < min(tol, STALL_GAIN)
        ):
            stalled = True
            break
        gradient = state.gradient(prior, n, learn_noise, beta_max)
        if verbose and (iteration % 50 == 0 or iteration == 1):
            print(
                f"[{rules.name}] iter {iteration}: M={active.size} "
                f"log evidence={state.log_evidence:.6f} max gradient={gradient:.2e}"
            )
        with np.errstate(divide="ignore", invalid="ignore"):
            alpha_new = rules.alpha(state, alpha, prior)
            drop = rules.prune(state, alpha, prior) | ~np.isfinite(alpha_new) | (alpha_new <= 0)
            drop |= step.prune(state, alpha, alpha_new)
        if not drop.any() and gradient < tol:
            # a working set (softmax over a large basis) grows while columns outside it
            # would raise the evidence: then the re-estimation goes on
            grown = step.grow(active, state, tol)
            if grown.size == 0:
                converged = True
                break
            order = np.argsort(np.concatenate([active, grown]))
            active = np.concatenate([active, grown])[order]
            alpha = np.concatenate([alpha, start_alpha[grown]])[order]
            warm = np.concatenate([state.mu, np.zeros((grown.size, *state.mu.shape[1:]))])
            state = step.state(active, alpha, beta, warm[order])
            continue
        if learn_noise:
            beta = 1.0 / max(rules.noise_var(state, state.noise_precision, n, prior), floor)
        if drop.any():
            last_prune = iteration
        active, alpha = active[~drop], alpha_new[~drop]
        state = step.state(active, alpha, beta, state.mu[~drop])
    else:
        path.append(state.log_evidence)

    if prior.improper:
        drifting = state.unbounded()
        if drifting.any():
            active, alpha = active[~drifting], alpha[~drifting]
            state = step.state(active, alpha, beta, state.mu[~drifting])
            path.append(state.log_evidence)

    return Type2Result(
        likelihood=step.likelihood,
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
        stalled=stalled,
        readd_gain=step.readd_gain(active, state, beta),
        prior=prior,
        noise_fixed=noise_var is not None,
    )
