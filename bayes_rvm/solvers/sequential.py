"""Fast sequential type-II maximum likelihood (Tipping & Faul 2003; Faul & Tipping 2002).

The evidence as a function of one ``alpha_i`` with all other hyperparameters fixed is
``l(alpha_i) = 0.5 [log alpha_i - log(alpha_i + s_i) + q_i^2 / (alpha_i + s_i)]``
(Faul & Tipping 2002, eq. 15), maximised in closed form by ``alpha_i = s_i^2 / (q_i^2 - s_i)``
when ``q_i^2 > s_i`` and by ``alpha_i = inf`` otherwise (eq. 17; Bishop 2006, eq. 7.101).
The solver starts from the single column with the largest gain and takes one step at a
time: add an inactive column, re-estimate an active ``alpha``, or delete an active column,
always the action with the largest increase of the log evidence (ties go to the lowest
column index). The posterior and ``S, Q`` of every candidate follow each step by rank-one
(Sherman-Morrison) updates in ``O(n_basis M)``; only a noise update refreshes them from a
new Cholesky factor.

Noise schedule and convergence rule
-----------------------------------
A sequential run can end at a stationary point of the ``alpha`` sub-problem at a noise
level that is not a stationary point of the evidence: with a large noise the data support
few basis functions, every remaining ``q_i^2 - s_i`` is negative, the ``alpha`` loop
settles within a handful of steps, and a termination test that looks at the ``alpha``
updates alone (no add / delete pending, ``max |delta log alpha|`` small) stops there
even though the noise estimate has not moved from its start (a fraction of ``var(t)``).
This solver therefore

- re-estimates ``beta`` (Tipping 2001, eq. 46) whenever the ``alpha`` steps have
  converged at the current noise, and every :data:`BETA_EVERY` steps besides;
- declares convergence only when *every* candidate's possible gain (add, re-estimate,
  delete) is below ``tol`` nats *and* the noise update made at that point changed the
  log evidence by less than ``tol``; otherwise the new ``beta`` opens new candidates
  (``q_i^2 > s_i`` again) and the steps continue.

The evidence is multimodal in ``alpha``: a greedy path of single steps can end at a
different local optimum than the full-basis MacKay / EM iterations, and which one depends
on the path (noise schedule, candidate order). Measured here (``docs/benchmarks.md``):
a few nats below our MacKay solver on Friedman #1 at N=300, 1000 and 2000 and on small
1-D sinc samples, while both stop near noise sd 1.6 where sklearn-rvm's full-basis EM
finds a mode with noise sd 1.0 and ~100 nats more at N=1000; at N=5000 this solver
reaches that low-noise mode (sd 1.02). The schedule above avoids the high-noise stall
(an early noise update from a still under-fitted model inflates the noise, after which no
candidate has ``q^2 > s``), but it does not make the greedy path global.

Likelihood-specific parts
-------------------------
Only :class:`_Workspace` knows the noise weights, and it knows them as one scalar
``beta`` (``B = beta I``) and the target ``t``; :func:`_noise_update` and
:func:`_log_evidence` are the Gaussian noise re-estimate and objective. A Bernoulli
likelihood replaces ``beta I`` by ``B = diag(y (1 - y))`` and ``t`` by the working target
``Phi mu + B^-1 (t - y)`` at the Laplace mode: every product ``beta * C`` and
``beta * phi_t`` of :meth:`_Workspace.refresh` and the rank-one updates become
``Phi^T B Phi`` and ``Phi^T B t`` (the shared :func:`~bayes_rvm.evidence.sparsity_quality`
already takes them weighted), and the mode search replaces the noise update as the step
that forces a refresh.

Memory and cross products
-------------------------
The state is ``O(N M + n_basis M)``: the active columns ``Phi_a`` (``N x M``) and their
cross products with every candidate ``C = Phi^T Phi_a`` (``n_basis x M``). Columns are
normalised to unit length for stability (the scaling is undone on the reported ``mu``,
``alpha`` and factor; with the paper's ``a = b = 0`` the evidence is invariant to it).

``Phi^T phi_j`` of a column about to be added needs a pass over the whole basis (``N
n_basis`` kernel values); a :class:`~bayes_rvm.basis.KernelBasis` evaluates passes in
blocks of kernel columns and never forms the ``N x N`` matrix. To need few passes,
:func:`_compress` first builds ``B = Phi~^T U`` for an orthonormal ``U`` spanning the
dominant columns (block-pivoted Gram-Schmidt, one pass per :data:`COMPRESS_BLOCK`
columns, at most :data:`COMPRESS_PASSES` passes and :data:`COMPRESS_BYTES`), so that
``Phi~^T phi~_j = B B_j`` without a pass. Smooth kernels in few dimensions (1-D sinc:
numerical rank ~40) are compressed to rounding in one pass and the whole run uses ``B``.
Otherwise the run first converges on the projected basis ``U U^T Phi~`` (a model of its
own, so the steps stay consistent), then switches to the true basis (one pass for the
exact products of the active columns, a refresh) and continues with exact products,
fetched by :class:`_CrossCache` :data:`PREFETCH` columns per pass.

References
----------
Tipping, M. E. and Faul, A. C. (2003). Fast marginal likelihood maximisation for sparse
Bayesian models. AISTATS.
Faul, A. C. and Tipping, M. E. (2002). Analysis of sparse Bayesian learning. NIPS 14.
Bishop, C. M. (2006). Pattern Recognition and Machine Learning, Sec. 7.2.2.
"""

from __future__ import annotations

import numpy as np

from bayes_rvm import _linalg
from bayes_rvm.basis import Basis
from bayes_rvm.evidence import (
    delta_add,
    delta_delete,
    delta_reestimate,
    hyperprior_log_density,
    log_evidence_gaussian,
    optimal_alpha,
    own_sparsity_quality,
    sparsity_quality,
)
from bayes_rvm.solvers._base import Prior, Type2Result, initial_noise_var, noise_var_floor

__all__ = [
    "BETA_EVERY",
    "CACHE_BYTES",
    "COMPRESS_BLOCK",
    "COMPRESS_BYTES",
    "COMPRESS_PASSES",
    "EXACT_RESIDUAL",
    "PREFETCH",
    "SPAN",
    "fit",
]

#: Columns whose products ``Phi^T phi_j`` one pass over the basis computes together.
PREFETCH = 64
#: Bytes the cache of fetched columns and cross products may hold (at least 2 PREFETCH).
CACHE_BYTES = 48 * 2**20
#: Columns added to the compressed basis per pass (:func:`_compress`).
COMPRESS_BLOCK = 64
#: Largest number of passes the compression may take.
COMPRESS_PASSES = 4
#: Bytes the compressed basis ``B`` (and its orthonormal ``U``) may take.
COMPRESS_BYTES = 96 * 2**20
#: Squared relative residual below which the compressed cross products are exact
#: (their error, at most the residual, is then at the level of rounding).
EXACT_RESIDUAL = 1e-14
#: An inactive column with ``S_m <= SPAN * beta ||phi_m||^2`` lies in the span of the active
#: columns to rounding: its ``S, Q`` are cancellation noise and it is not added.
SPAN = 1e-10
#: Steps between two noise re-estimates while the ``alpha`` steps have not converged.
BETA_EVERY = 8
#: Smallest positive float: ``1 - sum gamma`` guard in the noise update.
_EPS = float(np.finfo(np.float64).eps)


class _CrossCache:
    """Normalised columns ``phi_j`` and their products ``Phi^T phi_j``, fetched in batches.

    A request for a column that is not stored triggers one pass over the basis that also
    computes the products of the ``size - 1`` best-ranked other candidates; columns that
    leave the active set are stored back, since they are often re-added. At most
    ``keep`` columns are kept (the oldest are dropped): :data:`CACHE_BYTES` worth, and
    never fewer than ``2 * size``.
    """

    def __init__(self, basis: Basis, scales: np.ndarray, size: int):
        self.basis = basis
        self.scales = scales
        self.size = size
        per_column = 8 * (basis.n_rows + basis.n_columns)
        self.keep = max(2 * size, CACHE_BYTES // per_column)
        self.store: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.passes = 0

    def get(self, j: int, ranked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(phi_j, Phi^T phi_j)`` (normalised); ``ranked`` orders the other candidates."""
        if j not in self.store:
            extra = [int(i) for i in ranked[: 2 * self.size] if i != j and i not in self.store]
            idx = np.array([j, *extra[: self.size - 1]], dtype=np.intp)
            columns = self.basis.columns(idx) / self.scales[idx]
            cross = self.basis.transpose_dot(columns) / self.scales[:, None]
            self.passes += 1
            for k, i in enumerate(idx):
                self.put(int(i), columns[:, k], cross[:, k])
        column, cross = self.store.pop(j)
        return column, cross

    def put(self, j: int, column: np.ndarray, cross: np.ndarray) -> None:
        self.store[j] = (column, cross)
        while len(self.store) > self.keep:
            del self.store[next(iter(self.store))]


class _CompressedCrosses:
    """Cross products ``Phi^T phi_j ~ B B_j`` from the compressed basis of :func:`_compress`.

    With ``U=None`` (the compression is exact to rounding) the column itself is evaluated
    exactly (``N`` kernel values); otherwise it is the projected column ``U B_j``, so that
    the run works with the projected basis ``U U^T Phi~`` consistently. Same interface as
    :class:`_CrossCache`.
    """

    def __init__(self, basis: Basis, scales: np.ndarray, B: np.ndarray, U: np.ndarray | None):
        self.basis = basis
        self.scales = scales
        self.B = B
        self.U = U

    def get(self, j: int, ranked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.U is None:
            column = self.basis.columns(np.array([j]))[:, 0] / self.scales[j]
        else:
            column = self.U @ self.B[j]
        return column, self.B @ self.B[j]

    def put(self, j: int, column: np.ndarray, cross: np.ndarray) -> None:
        """Nothing to keep: products are recomputed from ``B``."""


def _compress(
    basis: Basis, scales: np.ndarray, usable: np.ndarray, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """``B = Phi~^T U`` for an orthonormal ``U`` spanning the dominant normalised columns.

    Block-pivoted Gram-Schmidt: each pass takes the :data:`COMPRESS_BLOCK` columns with
    the largest residual ``||phi~_m - U U^T phi~_m||^2 = 1 - ||B_m||^2``, orthonormalises
    them against ``U`` (twice, for stability) and computes their products with every
    column in one pass over the basis. Then ``Phi~^T Phi~ = B B^T + R^T R`` with ``R`` the
    residual, so ``B B_j`` is ``Phi~^T phi~_j`` up to ``max residual``. Stops when the
    squared residual is below :data:`EXACT_RESIDUAL`, or after :data:`COMPRESS_PASSES`
    passes, or when :data:`COMPRESS_BYTES` is reached. The first block is spread evenly
    over the columns, and its pass also computes ``Phi~^T t``. Returns ``B``, ``U``, the
    largest squared residual left, and ``Phi~^T t``.
    """
    n, n_basis = basis.shape
    cap = min(n_basis, n, COMPRESS_BYTES // (8 * (n + n_basis)))
    residual = usable.astype(np.float64)
    U = np.empty((n, 0))
    B = np.empty((n_basis, 0))
    phi_t = None
    for _ in range(COMPRESS_PASSES if cap > 0 else 0):
        if residual.max() <= EXACT_RESIDUAL or B.shape[1] >= cap:
            break
        k = min(COMPRESS_BLOCK, cap - B.shape[1])
        if phi_t is None:
            pick = np.flatnonzero(usable)
            pick = pick[np.linspace(0, pick.size - 1, min(k, pick.size)).astype(np.intp)]
        else:
            pick = np.argsort(-residual, kind="stable")[:k]
        Y = basis.columns(pick) / scales[pick]
        for _ in range(2):
            Y -= U @ (U.T @ Y)
        U_block, _ = np.linalg.qr(Y)
        if phi_t is None:
            products = basis.transpose_dot(np.column_stack([U_block, t])) / scales[:, None]
            B_block, phi_t = products[:, :-1], products[:, -1]
        else:
            B_block = basis.transpose_dot(U_block) / scales[:, None]
        U = np.column_stack([U, U_block])
        B = np.column_stack([B, B_block])
        residual = np.maximum(residual - np.einsum("ij,ij->i", B_block, B_block), 0.0)
    if phi_t is None:
        phi_t = basis.transpose_dot(t) / scales
    return B, U, float(residual.max()), phi_t


class _Workspace:
    """Posterior over the active (normalised) columns and ``S, Q`` of every candidate.

    Positions ``0..M-1`` hold the active columns in no particular order; ``index[p]`` is
    the column at position ``p``. ``Sigma`` is refreshed from a Cholesky factor of
    ``Sigma^-1`` (:meth:`refresh`) and between refreshes follows the rank-one updates of
    each step; it is never obtained by inverting a matrix.
    """

    def __init__(self, t: np.ndarray, phi_t: np.ndarray, unit: np.ndarray, beta: float):
        n_basis = phi_t.size
        self.t = t
        self.phi_t = phi_t
        self.unit = unit  # phi_m^T phi_m of the normalised columns (1, or 0 for a zero column)
        self.beta = beta
        self.M = 0
        capacity = 16
        self.index = np.empty(capacity, dtype=np.intp)
        self.alpha = np.empty(capacity)
        self.mu = np.empty(capacity)
        self.Sigma = np.empty((capacity, capacity))
        self.C = np.empty((n_basis, capacity))
        self.Phi = np.empty((t.size, capacity))
        # Faul & Tipping (2002): with no active column C = beta^-1 I, S = beta phi^T phi
        self.S = beta * self.unit
        self.Q = beta * phi_t

    def _grow(self) -> None:
        capacity = 2 * self.index.size
        M = self.M
        for name in ("index", "alpha", "mu"):
            new = np.empty(capacity, dtype=getattr(self, name).dtype)
            new[:M] = getattr(self, name)[:M]
            setattr(self, name, new)
        for name in ("C", "Phi"):
            old = getattr(self, name)
            new = np.empty((old.shape[0], capacity))
            new[:, :M] = old[:, :M]
            setattr(self, name, new)
        Sigma = np.empty((capacity, capacity))
        Sigma[:M, :M] = self.Sigma[:M, :M]
        self.Sigma = Sigma

    def add(self, j: int, alpha_j: float, column: np.ndarray, cross: np.ndarray) -> None:
        """Make column ``j`` active with precision ``alpha_j``."""
        if self.index.size == self.M:
            self._grow()
        M, beta = self.M, self.beta
        C, Sigma = self.C[:, :M], self.Sigma[:M, :M]
        # v = Sigma Phi_a^T B phi_j
        v = Sigma @ (beta * self.C[j, :M])
        # Tipping & Faul (2003), appendix: Sigma_jj = 1 / (alpha_j + S_j), mu_j = Sigma_jj Q_j
        sigma_jj = 1.0 / (alpha_j + self.S[j])
        mu_j = sigma_jj * self.Q[j]
        # e_m = phi_m^T B phi_j - phi_m^T B Phi Sigma Phi^T B phi_j
        e = beta * cross - beta * (C @ v)
        Sigma += sigma_jj * np.outer(v, v)
        self.Sigma[:M, M] = self.Sigma[M, :M] = -sigma_jj * v
        self.Sigma[M, M] = sigma_jj
        self.mu[:M] -= mu_j * v
        self.mu[M] = mu_j
        self.S -= sigma_jj * e**2
        self.Q -= mu_j * e
        self.index[M], self.alpha[M] = j, alpha_j
        self.C[:, M] = cross
        self.Phi[:, M] = column
        self.M = M + 1

    def _downdate(self, p: int, kappa: float) -> None:
        """``Sigma^-1 += (1/kappa - Sigma_pp)^-1 e_p e_p^T`` by Sherman-Morrison."""
        M = self.M
        sigma_p = self.Sigma[:M, p].copy()
        mu_p = self.mu[p]
        x = self.beta * (self.C[:, :M] @ sigma_p)
        # Tipping & Faul (2003), appendix: S_m += kappa (phi_m^T B Phi Sigma_p)^2 etc.
        self.S += kappa * x**2
        self.Q += kappa * mu_p * x
        self.Sigma[:M, :M] -= kappa * np.outer(sigma_p, sigma_p)
        self.mu[:M] -= kappa * mu_p * sigma_p

    def reestimate(self, p: int, alpha_new: float) -> None:
        """Set the precision at position ``p`` to the finite ``alpha_new``."""
        delta = alpha_new - self.alpha[p]
        # Tipping & Faul (2003), appendix: kappa = 1 / (Sigma_jj + 1 / (alpha~ - alpha))
        self._downdate(p, 1.0 / (self.Sigma[p, p] + 1.0 / delta))
        self.alpha[p] = alpha_new

    def delete(self, p: int) -> tuple[int, np.ndarray, np.ndarray]:
        """Remove position ``p``; returns its column index, column and cross products."""
        # alpha -> inf: kappa = 1 / Sigma_jj
        self._downdate(p, 1.0 / self.Sigma[p, p])
        j, column, cross = int(self.index[p]), self.Phi[:, p].copy(), self.C[:, p].copy()
        last = self.M - 1
        if p != last:  # move the last position into the hole
            for name in ("index", "alpha", "mu"):
                getattr(self, name)[p] = getattr(self, name)[last]
            self.C[:, p] = self.C[:, last]
            self.Phi[:, p] = self.Phi[:, last]
            self.Sigma[p, :] = self.Sigma[last, :]
            self.Sigma[:, p] = self.Sigma[:, last]
            self.Sigma[p, p] = self.Sigma[last, last]
        self.M = last
        return j, column, cross

    def factor(self) -> np.ndarray:
        """Lower Cholesky factor of ``Sigma^-1 = A + B Phi_a^T Phi_a`` from scratch."""
        M = self.M
        # Tipping (2001) eq. 12
        H = self.beta * self.C[self.index[:M], :M]
        H = 0.5 * (H + H.T)
        H[np.diag_indices_from(H)] += self.alpha[:M]
        return _linalg.cholesky(H)

    def refresh(self, beta: float) -> np.ndarray:
        """Recompute ``Sigma, mu, S, Q`` at noise precision ``beta``; returns the factor."""
        self.beta = beta
        M = self.M
        L = self.factor()
        if M:
            # Tipping (2001) eq. 13: mu = beta Sigma Phi^T t
            self.mu[:M] = _linalg.cho_solve(L, beta * self.phi_t[self.index[:M]])
            Linv = _linalg.solve_lower(L, np.eye(M))
            self.Sigma[:M, :M] = Linv.T @ Linv
        self.S, self.Q = sparsity_quality(
            beta * self.C[:, :M], beta * self.unit, beta * self.phi_t, L, self.mu[:M]
        )
        return L

    def rss(self) -> float:
        residual = self.t - self.Phi[:, : self.M] @ self.mu[: self.M]
        return float(residual @ residual)


def _noise_update(ws: _Workspace, prior: Prior, floor: float) -> float:
    """Gaussian likelihood: the MacKay re-estimate of ``beta`` (Tipping 2001, eq. 46)."""
    M = ws.M
    # Tipping (2001) eq. 17: gamma_i = 1 - alpha_i Sigma_ii
    gamma = 1.0 - ws.alpha[:M] * np.diag(ws.Sigma)[:M]
    # Tipping (2001) eq. 46
    denominator = max(ws.t.size - float(np.sum(gamma)) + 2.0 * prior.c, _EPS)
    return 1.0 / max((ws.rss() + 2.0 * prior.d) / denominator, floor)


def _log_evidence(ws: _Workspace, L: np.ndarray, prior: Prior, noise_fixed: bool) -> float:
    """Gaussian likelihood: eq. 36 from a fresh factor (normalised columns, ``a = b = 0``)."""
    M = ws.M
    value = log_evidence_gaussian(L, ws.mu[:M], ws.alpha[:M], ws.beta, ws.rss(), ws.t.size)
    return value + hyperprior_log_density(
        ws.alpha[:M], None if noise_fixed else ws.beta, 0.0, 0.0, prior.c, prior.d
    )


def _candidate_gains(
    ws: _Workspace, position: np.ndarray, alpha_full: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Gain (nats) of the best action on every column, and the ``alpha`` it would set.

    Active with ``q^2 > s``: re-estimate; active with ``q^2 <= s``: delete (``inf``);
    inactive with ``q^2 > s``: add; otherwise no action (gain 0).
    """
    s, q = own_sparsity_quality(ws.S, ws.Q, alpha_full)
    # Faul & Tipping (2002) eq. 17 / Bishop (2006) eq. 7.101
    alpha_new = optimal_alpha(s, q)
    gain = delta_add(ws.S, ws.Q)
    gain[SPAN * ws.beta * ws.unit >= ws.S] = 0.0
    active = ws.index[: ws.M]
    S, Q, alpha = ws.S[active], ws.Q[active], ws.alpha[: ws.M]
    finite = np.isfinite(alpha_new[active])
    with np.errstate(invalid="ignore", divide="ignore"):
        gain[active] = np.where(
            finite,
            delta_reestimate(S, Q, alpha, np.where(finite, alpha_new[active], alpha)),
            delta_delete(S, Q, alpha),
        )
    # S_m >= alpha_m for an active column is rounding in an ill-conditioned basis: no step
    return np.where(np.isfinite(gain), gain, 0.0), alpha_new


def fit(
    basis: Basis,
    t: np.ndarray,
    *,
    prior: Prior,
    noise_var: float | None,
    max_iter: int,
    tol: float,
    verbose: bool = False,
) -> Type2Result:
    """Sequential add / re-estimate / delete; see :func:`bayes_rvm.fit_type2`.

    ``tol`` is in nats here: the fit has converged when no single action would raise the
    log evidence by more than ``tol`` and (noise learned) the noise update at that point
    raised it by less than ``tol``. ``max_iter`` counts add / re-estimate / delete steps.

    Notes
    -----
    Only the paper's improper hyperprior on ``alpha`` (``a = b = 0``) is supported: the
    closed-form ``alpha_i = s_i^2 / (q_i^2 - s_i)`` is the maximiser of the evidence alone.
    The noise hyperprior ``Gamma(c, d)`` enters eq. 46 and the objective.

    Examples
    --------
    >>> import numpy as np
    >>> from bayes_rvm import fit_type2
    >>> from bayes_rvm.basis import KernelBasis
    >>> from bayes_rvm.kernels import RBF
    >>> x = np.linspace(-10, 10, 80)[:, None]
    >>> t = np.sinc(x[:, 0] / np.pi) + np.random.default_rng(0).normal(0, 0.1, 80)
    >>> fit = fit_type2(KernelBasis(x, RBF(0.25)), t, solver="sequential")
    >>> fit.converged, bool(fit.active.size < 15), bool(abs(fit.noise_var**0.5 - 0.1) < 0.03)
    (True, True, True)
    """
    if prior.a != 0.0 or prior.b != 0.0:
        raise ValueError(
            "the sequential solver needs the improper prior a = b = 0 on alpha (its "
            f"closed-form update maximises the evidence alone); got a={prior.a}, "
            f"b={prior.b}: use solver='mackay' or solver='em' for a Gamma prior on alpha"
        )
    n_basis = basis.n_columns
    noise_fixed = noise_var is not None
    floor = noise_var_floor(t)
    beta = 1.0 / (noise_var if noise_fixed else initial_noise_var(t))

    sq_norms = basis.sq_norms()
    usable = sq_norms > 0
    if not usable.any():
        raise ValueError("expected a design matrix with a nonzero column, got all zeros")
    scales = np.where(usable, np.sqrt(sq_norms), 1.0)
    B, U, leftover, phi_t = _compress(basis, scales, usable, t)
    unit = usable.astype(np.float64)
    exact_cache = _CrossCache(basis, scales, min(PREFETCH, n_basis))
    approximate = B.shape[1] > 0 and leftover > EXACT_RESIDUAL
    if approximate:  # first run on the projected basis U U^T Phi~: a model of its own
        cache = _CompressedCrosses(basis, scales, B, U)
        ws = _Workspace(t, B @ (U.T @ t), np.einsum("ij,ij->i", B, B), beta)
    else:
        cache = _CompressedCrosses(basis, scales, B, None) if B.shape[1] else exact_cache
        ws = _Workspace(t, phi_t, unit, beta)
    position = np.full(n_basis, -1, dtype=np.intp)
    alpha_full = np.full(n_basis, np.inf)

    def do_add(j: int, alpha_j: float, ranked: np.ndarray) -> None:
        column, cross = cache.get(j, ranked)
        position[j] = ws.M
        alpha_full[j] = alpha_j
        ws.add(j, alpha_j, column, cross)

    def do_delete(p: int) -> None:
        j, column, cross = ws.delete(p)
        cache.put(j, column, cross)
        position[j] = -1
        alpha_full[j] = np.inf
        if p < ws.M:
            position[ws.index[p]] = p

    def ranking(gain: np.ndarray) -> np.ndarray:
        inactive_gain = np.where(position < 0, gain, 0.0)
        order = np.argsort(-inactive_gain, kind="stable")
        return order[inactive_gain[order] > 0]

    # Start from the single column with the largest gain (Bishop 2006, Sec. 7.2.2 step 2).
    gain, alpha_new = _candidate_gains(ws, position, alpha_full)
    first = int(np.argmax(np.where(usable, gain, -np.inf)))
    # with no column supported at the initial noise, any finite start (deleted next)
    first_alpha = alpha_new[first] if np.isfinite(alpha_new[first]) else ws.S[first]
    do_add(first, float(first_alpha), ranking(gain))
    L = ws.refresh(beta)
    log_ev = _log_evidence(ws, L, prior, noise_fixed)
    path = [log_ev]
    steps = 0

    def ascend() -> bool:
        """Steps to convergence (True) or to ``max_iter`` (False) with the current cache."""
        nonlocal log_ev, steps
        since_noise = 0
        while True:
            gain, alpha_new = _candidate_gains(ws, position, alpha_full)
            j = int(np.argmax(gain))
            best = float(gain[j])
            alpha_settled = best <= tol
            if not noise_fixed and (alpha_settled or since_noise >= BETA_EVERY):
                since_noise = 0
                L = ws.refresh(_noise_update(ws, prior, floor))
                new_log_ev = _log_evidence(ws, L, prior, noise_fixed)
                noise_gain, log_ev = new_log_ev - log_ev, new_log_ev
                path.append(log_ev)
                if alpha_settled and abs(noise_gain) <= tol:
                    return True
                continue
            if alpha_settled:
                return True
            if steps == max_iter:
                return False
            steps += 1
            since_noise += 1
            if position[j] < 0:
                do_add(j, float(alpha_new[j]), ranking(gain))
            elif np.isfinite(alpha_new[j]):
                ws.reestimate(int(position[j]), float(alpha_new[j]))
                alpha_full[j] = alpha_new[j]
            else:
                do_delete(int(position[j]))
            log_ev += best
            path.append(log_ev)
            if verbose and steps % 100 == 0:
                print(
                    f"[sequential] step {steps}: M={ws.M} log evidence={log_ev:.6f} "
                    f"best gain={best:.2e} noise sd={ws.beta**-0.5:.4g}"
                )

    converged = ascend()
    if approximate:
        # From the projected basis to the true one: exact active columns and their
        # products (one pass), a refresh, and the remaining steps with exact products.
        M = ws.M
        ws.Phi[:, :M] = basis.columns(ws.index[:M]) / scales[ws.index[:M]]
        ws.C[:, :M] = basis.transpose_dot(ws.Phi[:, :M]) / scales[:, None]
        ws.phi_t, ws.unit = phi_t, unit
        cache = exact_cache
        L = ws.refresh(ws.beta)
        log_ev = _log_evidence(ws, L, prior, noise_fixed)
        path.append(log_ev)
        converged = ascend()
    if verbose:
        print(
            f"[sequential] {steps} steps, M={ws.M}, log evidence={log_ev:.6f}, compressed "
            f"rank {B.shape[1]} (residual {leftover:.1e}), exact passes {exact_cache.passes}"
        )

    return _result(basis, ws, scales, prior, noise_fixed, path, steps, converged)


def _result(
    basis: Basis,
    ws: _Workspace,
    scales: np.ndarray,
    prior: Prior,
    noise_fixed: bool,
    path: list[float],
    steps: int,
    converged: bool,
) -> Type2Result:
    """Undo the column normalisation and assemble the result from a fresh factor."""
    ws.refresh(ws.beta)  # exact S, Q for the re-add gains
    M = ws.M
    order = np.argsort(ws.index[:M], kind="stable")
    active = ws.index[:M][order]
    scale = scales[active]
    # phi_j = scale_j phi~_j: alpha_j = scale_j^2 alpha~_j, mu_j = mu~_j / scale_j
    alpha = ws.alpha[:M][order] * scale**2
    gram = ws.C[active][:, order] * np.outer(scale, scale)
    H = ws.beta * 0.5 * (gram + gram.T)
    # Tipping (2001) eq. 12
    H[np.diag_indices_from(H)] += alpha
    precision_chol = _linalg.cholesky(H)
    # Tipping (2001) eq. 13
    mu = _linalg.cho_solve(precision_chol, ws.beta * ws.phi_t[active] * scale)
    residual = ws.t - ws.Phi[:, :M][:, order] @ (mu * scale)
    log_ev = log_evidence_gaussian(
        precision_chol, mu, alpha, ws.beta, float(residual @ residual), ws.t.size
    ) + hyperprior_log_density(
        alpha, None if noise_fixed else ws.beta, prior.a, prior.b, prior.c, prior.d
    )
    inactive = np.setdiff1d(np.arange(basis.n_columns), active)
    return Type2Result(
        likelihood="gaussian",
        solver="sequential",
        n_basis=basis.n_columns,
        active=active,
        alpha=alpha,
        beta=ws.beta,
        mu=mu,
        precision_chol=precision_chol,
        log_evidence=log_ev,
        log_evidence_path=np.array([*path, log_ev]),
        n_iter=steps,
        converged=converged,
        readd_gain=delta_add(ws.S[inactive], ws.Q[inactive]),
        prior=prior,
        noise_fixed=noise_fixed,
    )
