"""The sequential solver's workspace: the posterior over the active columns and the
``S, Q`` of every candidate, changed only through its methods."""

from __future__ import annotations

import numpy as np

from bayes_rvm import _linalg
from bayes_rvm.evidence import (
    EPS,
    delta_add,
    posterior_sparsity_quality,
    sparsity_quality,
)
from bayes_rvm.posterior import GaussianFit
from bayes_rvm.solvers._newton import joint_newton
from bayes_rvm.solvers._schedule import Schedule

__all__ = ["Workspace"]


class Workspace:
    """Posterior over the active (normalised) columns and ``S, Q`` of every candidate.

    Positions ``0..M-1`` hold the active columns in no particular order; ``index[p]`` is
    the column at position ``p``. ``Sigma`` and ``mu`` (Tipping 2001, eq. 12-13) follow
    every step by the rank-one updates of Tipping & Faul (2003, appendix), ``O(M^2)``
    each, and are recomputed from the Cholesky factor ``L`` of ``Sigma^-1 = A + beta
    Phi_a^T Phi_a`` after ``schedule.large_refactor`` updates (and on a delete, a refresh or
    when an add needs the factor), so that rounding accumulates over at most that many
    steps.

    The ``S, Q`` of the ``n_basis`` candidates change by a rank-one term per step,
    ``S += a (beta C v)^2`` and ``Q += b (beta C v)`` with ``C = Phi^T Phi_a``: ``O(n_basis
    M)`` per step, more than the step itself. Those terms are kept pending (``v, a, b``)
    and applied together by :meth:`flush`, one matrix product for up to ``schedule.flush``
    steps, when the candidates' gains are needed: in the long runs of re-estimates of
    active ``alpha``, which need only ``Sigma`` and ``mu`` (``s = 1 / Sigma_jj - alpha``,
    ``q = mu_j / Sigma_jj``), they are not.
    """

    def __init__(
        self,
        t: np.ndarray,
        phi_t: np.ndarray,
        unit: np.ndarray,
        beta: float,
        schedule: Schedule | None = None,
        n_rows: int | None = None,
    ):
        self.schedule = Schedule() if schedule is None else schedule
        #: ``N`` of the evidence: ``t.size``, or the number of rows a reduced design
        #: ``[R; 0]`` with target ``[z; r]`` stands for
        self.n_rows = t.size if n_rows is None else n_rows
        flush = self.schedule.flush
        n_basis = phi_t.size
        self.t = t
        self.phi_t = phi_t
        self.unit = unit  # phi_m^T phi_m of the normalised columns (1, or 0 for a zero column)
        self.beta = beta
        self.M = 0
        capacity = 16
        self.index = np.empty(capacity, dtype=np.intp)
        self.alpha = np.empty(capacity)
        self.C = np.empty((n_basis, capacity))
        self.Phi = np.empty((t.size, capacity))
        self.L = np.zeros((0, 0))  # factor at the last refactor (M x M only then)
        self.Sigma = np.zeros((0, 0))
        self.mu = np.zeros(0)
        self.since_factor = 0
        # the pending rank-one terms of S, Q: S += (beta C V)^2 a, Q += (beta C V) b
        self.V = np.zeros((capacity, flush))
        self.a = np.zeros(flush)
        self.b = np.zeros(flush)
        self.pending = 0
        # Faul & Tipping (2002): with no active column C = beta^-1 I, S = beta phi^T phi
        self.S = beta * self.unit
        self.Q = beta * phi_t
        self._add_gain: np.ndarray | None = None

    def _grow(self) -> None:
        capacity = 2 * self.index.size
        M = self.M
        for name in ("index", "alpha"):
            new = np.empty(capacity, dtype=getattr(self, name).dtype)
            new[:M] = getattr(self, name)[:M]
            setattr(self, name, new)
        for name in ("C", "Phi"):
            old = getattr(self, name)
            new = np.empty((old.shape[0], capacity))
            new[:, :M] = old[:, :M]
            setattr(self, name, new)
        V = np.zeros((capacity, self.schedule.flush))
        V[:M] = self.V[:M]
        self.V = V

    def _make_room(self) -> None:
        """Before a step: with ``schedule.flush`` terms pending, apply them; after
        ``schedule.large_refactor`` rank-one updates, remove the rounding of ``Sigma`` by a new
        factor."""
        if self.pending == self.schedule.flush:
            self.flush()
        if self.since_factor >= self.schedule.large_refactor:
            self.refactor()

    def _push(self, v: np.ndarray, a: float, b: float) -> None:
        """A pending rank-one term of ``S, Q`` (``v`` over the current positions)."""
        k = self.pending
        self.V[:, k] = 0.0
        self.V[: v.size, k] = v
        self.a[k], self.b[k] = a, b
        self.pending = k + 1

    def flush(self) -> None:
        """Apply the pending terms to ``S, Q``."""
        k = self.pending
        if k:
            X = self.beta * (self.C[:, : self.M] @ self.V[: self.M, :k])
            # Tipping & Faul (2003), appendix: S_m += kappa (phi_m^T B Phi Sigma_j)^2 etc.
            self.S += (X * X) @ self.a[:k]
            self.Q += X @ self.b[:k]
            self.pending = 0
            self._add_gain = None

    def add_gain(self) -> np.ndarray:
        """Gain (nats) of adding each column from ``S, Q`` as of the last :meth:`flush`
        (``0`` for active columns, columns in the span of the active ones, no gain)."""
        if self._add_gain is None:
            gain = delta_add(self.S, self.Q)
            gain[self.schedule.span * self.beta * self.unit >= self.S] = 0.0
            gain[self.index[: self.M]] = 0.0
            self._add_gain = gain
        return self._add_gain

    def own(self) -> tuple[np.ndarray, np.ndarray]:
        """``s, q`` of the active columns from ``Sigma, mu`` (Faul & Tipping 2002)."""
        return posterior_sparsity_quality(np.diag(self.Sigma), self.mu, self.alpha[: self.M])

    def exact(self, j: int, p: int) -> tuple[float, float]:
        """``s_j, q_j`` of column ``j`` (at position ``p``, or ``-1`` if inactive): active
        from ``Sigma, mu`` (Faul & Tipping 2002), inactive by :meth:`_inactive`."""
        if p >= 0:
            sigma_pp = self.Sigma[p, p]
            return 1.0 / sigma_pp - self.alpha[p], self.mu[p] / sigma_pp
        _, S, Q = self._inactive(j)
        return S, Q

    def _inactive(self, j: int) -> tuple[np.ndarray, float, float]:
        """``l = L^-1 beta c``, ``S_j = beta phi_j^T phi_j - ||l||^2`` and ``Q_j = beta
        (phi_j^T t - c^T mu)`` of an inactive column, ``c = Phi_a^T phi_j`` (Tipping & Faul
        2003, eq. 24-25), from a current factor: the sum of squares loses fewer digits
        to cancellation than ``c^T Sigma c``."""
        self.factor()
        c = self.C[j, : self.M]
        l = _linalg.solve_lower(self.L, self.beta * c)
        S = self.beta * self.unit[j] - float(l @ l)
        return l, S, self.beta * (self.phi_t[j] - float(c @ self.mu))

    def set_exact(self, j: int, s: float, q: float) -> None:
        """Replace the ``S_j, Q_j`` of an inactive column by the values of :meth:`exact`
        (valid with no term pending)."""
        self.S[j], self.Q[j] = s, q
        if self._add_gain is not None:
            self._add_gain[j] = 0.0

    def add(self, j: int, alpha_j: float, column: np.ndarray, cross: np.ndarray) -> None:
        """Make column ``j`` active with precision ``alpha_j`` (its ``C`` row is current)."""
        if self.index.size == self.M:
            self._grow()
        self._make_room()
        M = self.M
        l, S_j, Q_j = self._inactive(j)
        w = _linalg.solve_lower(self.L, l, transpose=True)  # beta Sigma c
        # Tipping & Faul (2003), appendix: Sigma_jj = 1 / (alpha_j + S_j), mu_j = Sigma_jj Q_j
        sigma_jj = 1.0 / (alpha_j + S_j)
        mu_j = sigma_jj * Q_j
        Sigma = np.empty((M + 1, M + 1))
        Sigma[:M, :M] = self.Sigma + sigma_jj * np.outer(w, w)
        Sigma[M, :M] = Sigma[:M, M] = -sigma_jj * w
        Sigma[M, M] = sigma_jj
        self.Sigma = Sigma
        self.mu = np.append(self.mu - mu_j * w, mu_j)
        self.since_factor += 1
        self.index[M], self.alpha[M] = j, alpha_j
        self.C[:, M] = cross
        self.Phi[:, M] = column
        self.M = M + 1
        # e_m = beta phi_m^T phi_j - beta^2 phi_m^T Phi Sigma Phi^T phi_j = beta C_m [-w; 1]
        self._push(np.append(-w, 1.0), -sigma_jj, -sigma_jj * Q_j)
        if self._add_gain is not None:
            self._add_gain[j] = 0.0

    def _downdate(self, p: int, inverse_delta: float) -> None:
        """``Sigma, mu`` and a pending ``S, Q`` term after ``alpha_p += delta``
        (``inverse_delta = 1 / delta``; 0 deletes)."""
        self._make_room()
        sigma_p = self.Sigma[:, p].copy()
        # Tipping & Faul (2003), appendix: kappa = 1 / (Sigma_jj + 1 / (alpha~ - alpha)),
        # 1 / Sigma_jj for alpha~ = inf
        kappa = 1.0 / (sigma_p[p] + inverse_delta)
        mu_p = self.mu[p]
        self.Sigma -= kappa * np.outer(sigma_p, sigma_p)
        self.mu = self.mu - (kappa * mu_p) * sigma_p
        self.since_factor += 1
        # Tipping & Faul (2003), appendix: S_m += kappa (phi_m^T B Phi Sigma_p)^2 etc.
        self._push(sigma_p, kappa, kappa * mu_p)

    def reestimate(self, p: int, alpha_new: float) -> None:
        """Set the precision at position ``p`` to the finite ``alpha_new``."""
        self._downdate(p, 1.0 / (alpha_new - self.alpha[p]))
        self.alpha[p] = alpha_new

    def delete(self, p: int) -> tuple[int, np.ndarray, np.ndarray]:
        """Remove position ``p``; returns its column index, column and cross products."""
        self._downdate(p, 0.0)
        self.flush()  # the pending terms refer to the positions, which move now
        j, column, cross = int(self.index[p]), self.Phi[:, p].copy(), self.C[:, p].copy()
        last = self.M - 1
        if p != last:  # move the last position into the hole
            self.index[p], self.alpha[p] = self.index[last], self.alpha[last]
            self.C[:, p] = self.C[:, last]
            self.Phi[:, p] = self.Phi[:, last]
        self.M = last
        self.refactor()
        return j, column, cross

    def _gram(self) -> np.ndarray:
        """``beta Phi_a^T Phi_a`` of the active columns (Tipping 2001, eq. 12 less ``A``)."""
        M = self.M
        G = self.beta * self.C[self.index[:M], :M]
        return 0.5 * (G + G.T)

    def newton(self, free: np.ndarray, tol: float) -> float:
        """Maximise the log evidence over the ``alpha`` at positions ``free`` jointly
        (active set and noise fixed) by :func:`~._newton.joint_newton`. Returns the gain
        (nats); ``Sigma, mu, L`` are current and ``S, Q`` refreshed afterwards."""
        b = self.beta * self.phi_t[self.index[: self.M]]
        alpha, gain = joint_newton(
            self._gram(), b, self.alpha[: self.M], free, tol, self.schedule.newton
        )
        self.alpha[: self.M] = alpha
        self.refresh(self.beta)
        return gain

    def factor(self) -> None:
        """Refactor if ``Sigma`` moved since the last factor."""
        if self.since_factor:
            self.refactor()

    def refactor(self) -> None:
        """``L``, ``Sigma`` and ``mu`` from scratch (Tipping 2001, eq. 12-13)."""
        M = self.M
        H = self._gram()
        H[np.diag_indices_from(H)] += self.alpha[:M]  # Tipping (2001) eq. 12
        self.L = _linalg.cholesky(H)
        self.Sigma = _linalg.cho_solve(self.L, np.eye(M))
        self.since_factor = 0
        # Tipping (2001) eq. 13, by solves (more accurate than the product with Sigma)
        self.mu = _linalg.cho_solve(self.L, self.beta * self.phi_t[self.index[:M]])

    def refresh(self, beta: float) -> None:
        """Recompute ``L, Sigma, mu, S, Q`` at noise precision ``beta`` (nothing pending)."""
        self.beta = beta
        self.refactor()
        self.S, self.Q = sparsity_quality(
            beta * self.C[:, : self.M], beta * self.unit, beta * self.phi_t, self.L, self.mu
        )
        self.pending = 0
        self._add_gain = None

    def resolution(self) -> float:
        """Relative accuracy of a gain computed from ``Sigma``: ``resolution eps cond(H)``.

        ``cond(H)`` is estimated by ``(max diag L / min diag L)^2`` of the last factor, a
        lower bound.
        """
        if self.L.shape[0] == 0:
            return 0.0
        d = np.diag(self.L)
        return self.schedule.resolution * EPS * float(d.max() / d.min()) ** 2

    def gamma(self) -> np.ndarray:
        """``gamma_i = 1 - alpha_i Sigma_ii`` (Tipping 2001, eq. 17)."""
        return 1.0 - self.alpha[: self.M] * np.diag(self.Sigma)

    def in_span(self, j: int, s: float) -> bool:
        """Whether an ``s_j`` this small is rounding: an inactive column in the span of the
        active ones, or an active one at this conditioning (``s > 0`` in exact arithmetic)."""
        return s <= self.schedule.span * self.beta * self.unit[j]

    def posterior(self) -> GaussianFit:
        """The Gaussian posterior from the last factor and the current ``mu`` (eq. 12-13)."""
        M = self.M
        residual = self.t - self.Phi[:, :M] @ self.mu
        return GaussianFit(
            self.L, self.mu, residual, self.alpha[:M].copy(), self.beta, n_rows=self.n_rows
        )

    def set_columns(self, columns: np.ndarray) -> None:
        """New values of the active columns (``N x M``, the same columns of another basis:
        the exact ones of a projected basis); :meth:`rebase` brings the products along."""
        self.Phi[:, : self.M] = columns

    def rebase(self, cross: np.ndarray, phi_t: np.ndarray, unit: np.ndarray, beta: float) -> None:
        """The same active set on new products: ``C = Phi^T W Phi_a`` (``cross``, ``n_basis
        x M``), ``Phi^T W t`` (``phi_t``) and ``diag(Phi^T W Phi)`` (``unit``); then
        :meth:`refresh` at noise precision ``beta``."""
        M = self.M
        self.C[:, :M] = cross
        self.phi_t, self.unit = phi_t, unit
        self.refresh(beta)
