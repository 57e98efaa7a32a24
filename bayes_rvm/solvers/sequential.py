"""Fast sequential type-II maximum likelihood (Tipping & Faul 2003; Faul & Tipping 2002).

The evidence as a function of one ``alpha_i`` with all other hyperparameters fixed is
``l(alpha_i) = 0.5 [log alpha_i - log(alpha_i + s_i) + q_i^2 / (alpha_i + s_i)]``
(Faul & Tipping 2002, eq. 15), maximised in closed form by ``alpha_i = s_i^2 / (q_i^2 - s_i)``
when ``q_i^2 > s_i`` and by ``alpha_i = inf`` otherwise (eq. 17; Bishop 2006, eq. 7.101).
The solver starts from the single column with the largest gain and takes one step at a
time: add an inactive column, re-estimate an active ``alpha``, or delete an active column,
the action with the largest increase of the log evidence (ties go to the lowest column
index). ``Sigma`` and ``mu`` follow each step by rank-one updates in ``O(M^2)`` and are
recomputed from a Cholesky factor every :data:`REFACTOR` steps; the ``s, q`` of an active
column come from them (``s = 1 / Sigma_jj - alpha_j``, ``q = mu_j / Sigma_jj``), those of
an inactive column about to be added from the factor. The ``S, Q`` of every candidate
change by a rank-one term per step, ``O(n_basis M)``: the terms of up to :data:`FLUSH`
steps are applied together by one matrix product, and always before an add is chosen
(the gains of the inactive columns are otherwise up to ``FLUSH`` steps old).

Gaussian likelihood with a learned noise on a basis of at most :attr:`Schedule.dense_bytes`
(``N n_basis`` doubles; 16 MB, N up to about 1400): the whole ascent runs in a compiled step loop
(:mod:`bayes_rvm.solvers._compiled`, :mod:`bayes_rvm.solvers._steps`) with a noise
continuation from below the optimum, two ascents and a final certificate on exact ``S,
Q`` (see :class:`Schedule`). The rest of this module is the path for larger bases and for
classification.

Most steps are the slow tail of coordinate ascent: on Friedman #1 (N=5000) 83 % of them
gained less than 0.01 nats. After :data:`POLISH_AFTER` re-estimates in a row, the active
``alpha`` whose own optimum is finite take joint damped Newton steps in ``log alpha``
(:meth:`_Workspace.newton`), which reach the optimum over the active set in a few
``O(M^3)`` iterations; a column whose own optimum becomes ``alpha = inf`` is left to the
greedy delete. That halved the steps on Friedman #1.

Why sequential solvers stall, and the noise schedule
----------------------------------------------------
On Friedman #1 (N=2000, RBF gamma=0.1) fastrvm and SparseBayes-style solvers stop with
about 45 relevance vectors at noise sd 1.6, hundreds of nats below the mode near the
true noise sd 1.0 (about 130 vectors) that full-basis MacKay from a weak prior finds.
What we measured (N=300, ``docs/benchmarks.md``):

- At a *fixed* noise sd at or below the optimum (1.51) the greedy path from one column
  reaches the good mode (about 38 vectors); at 1.65 and above it stops after 8 columns,
  190 nats lower. With broad kernel columns that are nearly collinear, the fit needs
  combinations of columns with large opposing weights; no *single* column adds evidence
  while the noise is high, so the greedy path is trapped. Neither the candidate order
  (adds first, deletions first) nor the convergence test changes that trap.
- So any schedule that lets the noise estimate rise above the optimum while the model is
  still small stalls: a start at ``0.1 var(t)`` (sd 1.6 here), or early noise updates
  from an under-fitted model (SparseBayes updates ``beta`` after 10 steps and every 5
  after), which inflate ``rss / (N - sum gamma)``.
- Loosening the schedule the other way, updating the noise before the ``alpha`` steps
  have converged, ended 40 to 60 nats lower at N=300 on an over-complete branch.

The schedule is therefore block coordinate ascent from the low-noise side: start at
noise variance :data:`START_NOISE` ``var(t)`` (the data are over-fitted, every candidate
that helps is added), run the ``alpha`` steps to convergence (no step gains more than
``tol``, confirmed on exact ``S, Q``), then re-estimate ``beta`` (Tipping 2001, eq. 46)
and repeat. The noise rises towards its optimum from below while the model sheds the
columns it no longer needs. Converged when the ``alpha`` steps have converged and the
noise update changed the log evidence by at most ``tol``. If the first noise update
more than halves the noise variance (:data:`RESTART_BELOW`; nearly noise-free targets),
the start was above the optimum and the run restarts from one column at
:data:`START_NOISE` times the new estimate. The price is steps: the ``alpha``
sub-problem at low noise has a long tail of small gains.

Classification (Bernoulli likelihood)
-------------------------------------
At the Laplace mode ``w*`` the evidence is that of a Gaussian model with noise
precisions ``B = diag(y (1 - y))`` and working target ``t^ = Phi w* + B^-1 (t - y)``
(Tipping & Faul 2003, Sec. 4): the same workspace runs with ``beta = 1`` on products
weighted by ``B`` (:class:`_Mode`). In regression the noise update waits until the
``alpha`` steps have converged; here that is unsafe, because the quadratic expansion
holds only near the mode: run to convergence from a stale mode, the steps on USPS
claimed hundreds of nats the Laplace evidence did not confirm (confidently misclassified
points have tiny ``B_n`` and huge working targets), and near the optimum the alternation
settled into a two-cycle. So the mode is found again (IRLS, warm-started, over the
active set) whenever the steps since the last mode would claim more than a trust radius
(:data:`MODE_GAIN`, adapted by the ratio of the confirmed to the claimed gain), and after
the steps converge; converged when no step gains ``tol`` right after a mode update. A
mode update re-weights the products of every column with the active ones (a pass over
the basis), so a basis of at most :data:`DENSE_BYTES` is held in memory as a matrix and
is not compressed.

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
numerical rank ~40) are compressed to rounding in one pass, and the run converges on
``B``. Otherwise the run first converges on the projected basis ``U U^T Phi~`` (a model
of its own, so the steps stay consistent). Then it switches to exact products (one pass
for the active columns, a refresh; the true columns if they were projected) and
continues with exact products, fetched by :class:`_CrossCache` :data:`PREFETCH` columns
per pass. After a compression exact to rounding the switch happens only if the log
evidence from the exact Gram matrix of the active columns differs from the compressed
one by more than ``tol``: nearly collinear columns can make rounding-level errors of
``B B_j`` matter.

References
----------
Tipping, M. E. and Faul, A. C. (2003). Fast marginal likelihood maximisation for sparse
Bayesian models. AISTATS.
Faul, A. C. and Tipping, M. E. (2002). Analysis of sparse Bayesian learning. NIPS 14.
Bishop, C. M. (2006). Pattern Recognition and Machine Learning, Sec. 7.2.2.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bayes_rvm import _linalg
from bayes_rvm.basis import Basis, as_basis
from bayes_rvm.evidence import (
    delta_add,
    delta_delete,
    delta_reestimate,
    hyperprior_log_density,
    log_evidence_gaussian,
    log_likelihood_alpha_i,
    optimal_alpha,
    posterior_sparsity_quality,
    sparsity_quality,
)
from bayes_rvm.laplace import Bernoulli, LaplaceMode, log_evidence_laplace, posterior_mode
from bayes_rvm.posterior import gaussian_posterior
from bayes_rvm.solvers._base import Prior, Type2Result, initial_noise_var, noise_var_floor
from bayes_rvm.solvers._compiled import Schedule, Status, ascend_dense

__all__ = [
    "CACHE_BYTES",
    "COMPRESSED_PREFETCH",
    "COMPRESS_BLOCK",
    "COMPRESS_BYTES",
    "COMPRESS_PASSES",
    "DENSE_BYTES",
    "EXACT_RESIDUAL",
    "FLUSH",
    "MODE_GAIN",
    "MODE_GAIN_MAX",
    "MODE_GAIN_MIN",
    "MODE_STALL",
    "NEWTON_DAMPING_MAX",
    "NEWTON_MAX",
    "NEWTON_STEPS",
    "POLISH_AFTER",
    "PREFETCH",
    "REFACTOR",
    "RESOLUTION",
    "RESTART_BELOW",
    "SPAN",
    "START_NOISE",
    "Schedule",
    "fit",
]

#: Columns whose products ``Phi^T phi_j`` one pass over the basis computes together.
PREFETCH = 64
#: Steps whose rank-one terms of the candidates' ``S, Q`` may be pending (applied
#: together by one ``n_basis x M x FLUSH`` matrix product, or earlier when an add is
#: about to be chosen). Staler gains change the greedy path: on Friedman #1 (N=300,
#: fixed noise sd 1.51, at the edge of the trap described above) 1 and 8 reached the
#: 32-37 column mode and 4, 16 and 32 stopped at 8-11 columns.
FLUSH = 8
#: Rank-one updates of ``Sigma`` and ``mu`` between two recomputations from a new factor.
REFACTOR = 32
#: Re-estimates in a row after which the active ``alpha`` take joint Newton steps
#: (:meth:`_Workspace.newton`) in place of the next re-estimate.
POLISH_AFTER = 32
#: Newton steps per polish, and the largest change of one ``log alpha`` per step.
NEWTON_STEPS = 30
NEWTON_MAX = 4.0
#: Damping beyond which a Newton step is abandoned (the steps are then far below
#: rounding of the evidence).
NEWTON_DAMPING_MAX = 1e12
#: Columns whose products with the compressed basis one request computes together.
COMPRESSED_PREFETCH = 16
#: Bytes the cache of fetched columns and cross products may hold (at least 2 PREFETCH).
CACHE_BYTES = 48 * 2**20
#: Columns added to the compressed basis per pass (:func:`_compress`).
COMPRESS_BLOCK = 128
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
#: Starting noise variance as a fraction of ``var(t)``: below the noise optimum on every
#: problem we measured, so the greedy path starts on the over-fitted side (see above).
START_NOISE = 0.01
#: The run restarts lower when its first noise update takes the noise variance below this
#: fraction of the start (clearly above the optimum: noise-free sinc went from sd 0.045
#: to 0.018); a small decrease (sd 0.108 -> 0.107 on pure-noise targets) means the start
#: was near the optimum, and restarting there would walk down to interpolation.
RESTART_BELOW = 0.5
#: A step is taken only if its gain exceeds ``RESOLUTION eps cond(H) (1 + gain)``: below,
#: the gains of an ill-conditioned active set are rounding (measured: relative errors of
#: 1e-3 at cond 2.5e11 on pure-noise targets), and the steps could go on forever.
RESOLUTION = 1.0
#: Classification: the trust region of the weighted problem. The mode is found again
#: before a step would take the gain the steps claim since the last mode beyond
#: ``radius`` nats (the quadratic expansion holds only near the mode); ``radius`` starts
#: at MODE_GAIN, doubles (up to MODE_GAIN_MAX) when the Laplace evidence gained more than
#: 3/4 of the claim and halves (down to MODE_GAIN_MIN) when it gained less than 1/4.
MODE_GAIN = 1.0
MODE_GAIN_MIN = 1e-3
MODE_GAIN_MAX = 10.0
#: Classification: a basis of at most this many bytes is held as a dense matrix. Every
#: mode update re-weights the products of every column with the active ones, a pass over
#: the whole basis; from memory that is a matrix product, while a kernel basis would
#: evaluate every kernel value again (USPS: 0.2 s against 1.3 s per pass).
DENSE_BYTES = 2**30
#: Classification: the run stops when this many mode updates in a row have not raised the
#: best Laplace evidence by ``tol``, and returns to the best model. Near the optimum a
#: marginal column can help at the mode without it and hurt at the mode with it (``B``
#: depends on ``alpha``, which the steps ignore): the steps then add and delete it in turn.
MODE_STALL = 10
#: Smallest positive float: ``1 - sum gamma`` guard in the noise update.
_EPS = float(np.finfo(np.float64).eps)


class _CrossCache:
    """Normalised columns ``phi_j`` and their products ``Phi^T W phi_j``, fetched in batches.

    ``W`` is the diagonal weight matrix of the problem: the identity in regression (the
    noise precision is applied by the workspace), ``diag(y (1 - y))`` at the current mode
    in classification (:meth:`reweight`). A request for a column that is not stored
    triggers one pass over the basis that also computes the products of the ``size - 1``
    best-ranked other candidates; columns that leave the active set are stored back,
    since they are often re-added. At most ``keep`` columns are kept (the oldest are
    dropped): :data:`CACHE_BYTES` worth, and never fewer than ``2 * size``.
    """

    def __init__(self, basis: Basis, scales: np.ndarray, size: int):
        self.basis = basis
        self.scales = scales
        self.size = size
        per_column = 8 * (basis.n_rows + basis.n_columns)
        self.keep = max(2 * size, CACHE_BYTES // per_column)
        self.store: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.passes = 0
        self.weights: np.ndarray | None = None

    def get(self, j: int, ranked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(phi_j, Phi^T W phi_j)`` (normalised); ``ranked`` orders the other candidates."""
        if j not in self.store:
            extra = [int(i) for i in ranked[: 2 * self.size] if i != j and i not in self.store]
            idx = np.array([j, *extra[: self.size - 1]], dtype=np.intp)
            columns, cross = self._fetch(idx)
            for k, i in enumerate(idx):
                self.put(int(i), columns[:, k], cross[:, k])
        column, cross = self.store.pop(j)
        return column, cross

    def _fetch(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Columns ``idx`` and their products with every column: one pass."""
        columns = self.basis.columns(idx) / self.scales[idx]
        weighted = columns if self.weights is None else self.weights[:, None] * columns
        self.passes += 1
        return columns, self.basis.transpose_dot(weighted) / self.scales[:, None]

    def put(self, j: int, column: np.ndarray, cross: np.ndarray) -> None:
        self.store[j] = (column, cross)
        while len(self.store) > self.keep:
            del self.store[next(iter(self.store))]

    def reweight(self, weights: np.ndarray) -> None:
        """New weights ``W``: the stored products are stale."""
        self.weights = weights
        self.store.clear()

    def weighted(self, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``Phi^T V`` and ``diag(Phi^T W Phi)`` (normalised) in one pass over the basis."""
        self.passes += 1
        products, norms = self.basis.transpose_dot_with_norms(V, weights=self.weights)
        return products / self.scales[:, None], norms / self.scales**2


class _CompressedCrosses(_CrossCache):
    """Products ``Phi^T W phi_j ~ B (U^T W U) B_j`` from the compressed basis of :func:`_compress`.

    With ``project=False`` (the compression is exact to rounding) the column itself is
    evaluated exactly (``N`` kernel values); otherwise it is the projected column
    ``U B_j``, so that the run works with the projected basis ``U U^T Phi~`` consistently.
    Both are products with ``B`` (``n_basis x rank``, 20 MB at N=5000 and rank 512); a
    request computes :data:`COMPRESSED_PREFETCH` best-ranked candidates in one matrix
    product and keeps them like :class:`_CrossCache`. On Friedman #1 (N=5000) 84 % of the
    added columns had been among the 16 best-ranked at an earlier add, but only about 3
    of each 16 were used before being dropped or made stale: the time was the same as
    one product per column (1.2 s against 1.3 s); the batches share the cache's code.
    """

    def __init__(
        self, basis: Basis, scales: np.ndarray, B: np.ndarray, U: np.ndarray, project: bool
    ):
        super().__init__(basis, scales, COMPRESSED_PREFETCH)
        self.B = B
        self.U = U
        self.project = project
        self.BG = B  # B (U^T W U): B itself for W = I

    def _fetch(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        B_idx = self.B[idx].T
        columns = self.U @ B_idx if self.project else self.basis.columns(idx) / self.scales[idx]
        return columns, self.BG @ B_idx

    def reweight(self, weights: np.ndarray) -> None:
        self.BG = self.B @ (self.U.T @ (weights[:, None] * self.U))
        self.store.clear()

    def weighted(self, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``Phi^T V ~ B U^T V`` and ``diag(Phi^T W Phi) ~ diag(B U^T W U B^T)``."""
        return self.B @ (self.U.T @ V), np.einsum("ij,ij->i", self.BG, self.B)


def _orthonormal_complement(U: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """An orthonormal basis of new directions of ``Y`` (orthogonal to the orthonormal ``U``).

    Gram-Schmidt against ``U`` twice, then QR; when columns of ``Y`` lie in the span of
    ``U`` to rounding, the QR factor normalises rounding noise and the orthogonality to
    ``U`` is lost by the inverse of the residual norm (nearly collinear linear-spline
    columns gave ``||U^T phi_j||^2 = 1 + 1e-6``, and products that broke the steps), so
    the result goes through the same two projections and QR once more.
    """
    for _ in range(2):
        for _ in range(2):
            Y = Y - U @ (U.T @ Y)
        Y, _ = np.linalg.qr(Y)
    return Y


def _compress(
    basis: Basis, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float, np.ndarray, np.ndarray]:
    """``B = Phi~^T U`` for an orthonormal ``U`` spanning the dominant normalised columns.

    Block-pivoted Gram-Schmidt: each pass takes the :data:`COMPRESS_BLOCK` columns with
    the largest residual ``||phi~_m - U U^T phi~_m||^2 = 1 - ||B_m||^2``, orthonormalises
    them against ``U`` (twice, for stability) and computes their products with every
    column in one pass over the basis. Then ``Phi~^T Phi~ = B B^T + R^T R`` with ``R`` the
    residual, so ``B B_j`` is ``Phi~^T phi~_j`` up to ``max residual``. Stops when the
    squared residual is below :data:`EXACT_RESIDUAL`, or after :data:`COMPRESS_PASSES`
    passes, or when :data:`COMPRESS_BYTES` is reached. The first block is spread evenly
    over the columns, and its pass also computes ``Phi^T t`` and the column norms (the
    normalisation). Returns ``B``, ``U``, the largest squared residual left,
    ``Phi~^T t`` and the squared column norms of ``Phi``.
    """
    n, n_basis = basis.shape
    cap = min(n_basis, n, COMPRESS_BYTES // (8 * (n + n_basis)))
    k = min(COMPRESS_BLOCK, cap)
    pick = np.linspace(0, n_basis - 1, k).astype(np.intp)
    Y = basis.columns(pick)
    norms = np.sqrt(np.einsum("ij,ij->j", Y, Y))
    Y, pick = Y[:, norms > 0] / norms[norms > 0], pick[norms > 0]
    U, _ = np.linalg.qr(Y)
    products, sq_norms = basis.transpose_dot_with_norms(np.column_stack([U, t]))
    scales = np.where(sq_norms > 0, np.sqrt(sq_norms), 1.0)
    B, phi_t = products[:, :-1] / scales[:, None], products[:, -1] / scales
    residual = np.maximum((sq_norms > 0) - np.einsum("ij,ij->i", B, B), 0.0)
    for _ in range(COMPRESS_PASSES - 1):
        if residual.max() <= EXACT_RESIDUAL or B.shape[1] >= cap:
            break
        pick = np.argsort(-residual, kind="stable")[: min(COMPRESS_BLOCK, cap - B.shape[1])]
        U_block = _orthonormal_complement(U, basis.columns(pick) / scales[pick])
        B_block = basis.transpose_dot(U_block) / scales[:, None]
        U = np.column_stack([U, U_block])
        B = np.column_stack([B, B_block])
        residual = np.maximum(residual - np.einsum("ij,ij->i", B_block, B_block), 0.0)
    return B, U, float(residual.max()), phi_t, sq_norms


class _Workspace:
    """Posterior over the active (normalised) columns and ``S, Q`` of every candidate.

    Positions ``0..M-1`` hold the active columns in no particular order; ``index[p]`` is
    the column at position ``p``. ``Sigma`` and ``mu`` (Tipping 2001, eq. 12-13) follow
    every step by the rank-one updates of Tipping & Faul (2003, appendix), ``O(M^2)``
    each, and are recomputed from the Cholesky factor ``L`` of ``Sigma^-1 = A + beta
    Phi_a^T Phi_a`` after :data:`REFACTOR` updates (and on a delete, a refresh or when an
    add needs the factor), so that rounding accumulates over at most that many steps.

    The ``S, Q`` of the ``n_basis`` candidates change by a rank-one term per step,
    ``S += a (beta C v)^2`` and ``Q += b (beta C v)`` with ``C = Phi^T Phi_a``: ``O(n_basis
    M)`` per step, more than the step itself. Those terms are kept pending (``v, a, b``)
    and applied together by :meth:`flush`, one matrix product for up to :data:`FLUSH`
    steps, when the candidates' gains are needed (see :meth:`_Run.ascend`): in the long
    runs of re-estimates of active ``alpha``, which need only ``Sigma`` and ``mu`` (``s =
    1 / Sigma_jj - alpha``, ``q = mu_j / Sigma_jj``), they are not.
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
        self.C = np.empty((n_basis, capacity))
        self.Phi = np.empty((t.size, capacity))
        self.L = np.zeros((0, 0))  # factor at the last refactor (M x M only then)
        self.Sigma = np.zeros((0, 0))
        self.mu = np.zeros(0)
        self.since_factor = 0
        # the pending rank-one terms of S, Q: S += (beta C V)^2 a, Q += (beta C V) b
        self.V = np.zeros((capacity, FLUSH))
        self.a = np.zeros(FLUSH)
        self.b = np.zeros(FLUSH)
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
        V = np.zeros((capacity, FLUSH))
        V[:M] = self.V[:M]
        self.V = V

    def _make_room(self) -> None:
        """Before a step: with :data:`FLUSH` terms pending, apply them; after
        :data:`REFACTOR` rank-one updates, remove the rounding of ``Sigma`` by a new
        factor."""
        if self.pending == FLUSH:
            self.flush()
        if self.since_factor >= REFACTOR:
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
            gain[SPAN * self.beta * self.unit >= self.S] = 0.0
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
        to cancellation than ``c^T Sigma c`` (with it, Friedman #1 N=2000 took another
        greedy path and ended 150 nats lower)."""
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

    def _alpha_objective(self, alpha: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """The part of the log evidence that depends on the active ``alpha`` (noise and
        active set fixed), with the factor of ``H`` and ``mu`` there.

        From Tipping (2001) eq. 36 with ``log|C| = -log|Sigma| - N log beta - log|A|``
        (eq. 38) and ``t^T C^-1 t = beta t^T t - b^T mu``, ``b = beta Phi_a^T t``:
        ``0.5 [sum log alpha - log|H| + b^T mu]`` plus terms free of ``alpha``.
        """
        L = _linalg.cholesky(self._precision(alpha))
        b = self.beta * self.phi_t[self.index[: self.M]]
        mu = _linalg.cho_solve(L, b)  # Tipping (2001) eq. 13
        # Tipping (2001) eq. 36 with eq. 38, alpha-dependent part
        value = 0.5 * (float(np.sum(np.log(alpha))) - _linalg.logdet(L) + float(b @ mu))
        return value, L, mu

    def _precision(self, alpha: np.ndarray) -> np.ndarray:
        """``Sigma^-1 = A + beta Phi_a^T Phi_a`` at the active ``alpha``."""
        M = self.M
        # Tipping (2001) eq. 12
        H = self.beta * self.C[self.index[:M], :M]
        H = 0.5 * (H + H.T)
        H[np.diag_indices_from(H)] += alpha
        return H

    def newton(self, free: np.ndarray, tol: float) -> float:
        """Maximise the log evidence over the ``alpha`` at positions ``free`` jointly
        (active set and noise fixed): damped Newton steps in ``log alpha``. Returns the
        gain (nats); ``Sigma, mu, L`` are current and ``S, Q`` refreshed afterwards.

        The gradient is ``0.5 (1 - alpha_i Sigma_ii - alpha_i mu_i^2)`` (Tipping 2001,
        eq. 16 and 17 in ``log alpha``); the Hessian ``0.5 [a_i a_j (Sigma_ij^2 + 2 mu_i
        mu_j Sigma_ij) - delta_ij a_i (Sigma_ii + mu_i^2)]`` follows from ``d Sigma /
        d alpha_j = -Sigma e_j e_j^T Sigma``. A step is kept only if the evidence rises;
        the damping ``lam`` grows until it does.
        """
        alpha = self.alpha[: self.M].copy()
        value, L, mu = self._alpha_objective(alpha)
        Sigma = _linalg.cho_solve(L, np.eye(self.M))
        start, lam = value, 0.0
        for _ in range(NEWTON_STEPS):
            # a column whose own optimum has become alpha = inf (q^2 <= s) leaves the
            # joint step: the greedy steps delete it (pushing its alpha up would only
            # make H ill-conditioned)
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
            accepted = False
            while not accepted and lam <= NEWTON_DAMPING_MAX:
                system = lam * np.eye(free.size) - curvature
                try:
                    factor = _linalg.cholesky(system, what="Newton system")
                except _linalg.NotPositiveDefiniteError:
                    lam = max(4.0 * lam, 1e-6)
                    continue
                step = np.clip(_linalg.cho_solve(factor, grad), -NEWTON_MAX, NEWTON_MAX)
                trial = alpha.copy()
                trial[free] *= np.exp(step)
                new_value, new_L, new_mu = self._alpha_objective(trial)
                accepted = new_value > value
                if not accepted:
                    lam = max(4.0 * lam, 1e-6)
            if not accepted:  # no step raises the evidence: at the optimum to rounding
                break
            gain = new_value - value
            alpha, value, L, mu = trial, new_value, new_L, new_mu
            Sigma = _linalg.cho_solve(L, np.eye(self.M))
            lam *= 0.25
            if gain <= tol:
                break
        self.alpha[: self.M] = alpha
        self.refresh(self.beta)
        return value - start

    def factor(self) -> None:
        """Refactor if ``Sigma`` moved since the last factor."""
        if self.since_factor:
            self.refactor()

    def refactor(self) -> None:
        """``L``, ``Sigma`` and ``mu`` from scratch (Tipping 2001, eq. 12-13)."""
        M = self.M
        self.L = _linalg.cholesky(self._precision(self.alpha[:M]))
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
        """Relative accuracy of a gain computed from ``Sigma``: ``RESOLUTION eps cond(H)``.

        ``cond(H)`` is estimated by ``(max diag L / min diag L)^2`` of the last factor, a
        lower bound.
        """
        if self.L.shape[0] == 0:
            return 0.0
        d = np.diag(self.L)
        return RESOLUTION * _EPS * float(d.max() / d.min()) ** 2

    def gamma(self) -> np.ndarray:
        """``gamma_i = 1 - alpha_i Sigma_ii`` (Tipping 2001, eq. 17)."""
        return 1.0 - self.alpha[: self.M] * np.diag(self.Sigma)

    def rss(self) -> float:
        residual = self.t - self.Phi[:, : self.M] @ self.mu
        return float(residual @ residual)


def _noise_update(ws: _Workspace, prior: Prior, floor: float) -> float:
    """Gaussian likelihood: the MacKay re-estimate of ``beta`` (Tipping 2001, eq. 46)."""
    # Tipping (2001) eq. 46
    denominator = max(ws.t.size - float(np.sum(ws.gamma())) + 2.0 * prior.c, _EPS)
    return 1.0 / max((ws.rss() + 2.0 * prior.d) / denominator, floor)


def _log_evidence(ws: _Workspace, prior: Prior, noise_fixed: bool) -> float:
    """Gaussian likelihood: eq. 36 from the current factor (normalised columns, ``a = b = 0``)."""
    alpha = ws.alpha[: ws.M]
    value = log_evidence_gaussian(ws.L, ws.mu, alpha, ws.beta, ws.rss(), ws.t.size)
    return value + hyperprior_log_density(
        alpha, None if noise_fixed else ws.beta, 0.0, 0.0, prior.c, prior.d
    )


def _exact_gain(alpha: float, s: float, q: float) -> tuple[float, float]:
    """Gain (nats) of the best action on one column from exact ``s, q``, and its ``alpha``.

    ``l(alpha~) - l(alpha)`` with ``l`` of Faul & Tipping (2002) eq. 15, ``l(inf) = 0`` and
    ``alpha~`` its maximiser (eq. 17).
    """
    alpha_new = float(optimal_alpha(np.array(s), np.array(q)))
    gain = 0.0 if np.isinf(alpha_new) else float(log_likelihood_alpha_i(alpha_new, s, q))
    if np.isfinite(alpha):
        gain -= float(log_likelihood_alpha_i(alpha, s, q))
    return gain, alpha_new


def _active_gains(ws: _Workspace) -> np.ndarray:
    """Gain (nats) of the best action on every active column, from ``Sigma, mu``.

    ``q^2 > s``: re-estimate; ``q^2 <= s``: delete (``alpha = inf``). ``s <= 0`` is
    rounding in an ill-conditioned active set: no action (gain 0).
    """
    alpha = ws.alpha[: ws.M]
    s, q = ws.own()
    # Faul & Tipping (2002) eq. 17 / Bishop (2006) eq. 7.101
    alpha_new = optimal_alpha(s, q)
    finite = np.isfinite(alpha_new)
    # Faul & Tipping (2002) eq. 21 inverted: S = alpha s / (alpha + s), Q likewise
    shrink = alpha / (alpha + s)
    S, Q = shrink * s, shrink * q
    with np.errstate(invalid="ignore", divide="ignore"):
        gain = np.where(
            finite,
            delta_reestimate(S, Q, alpha, np.where(finite, alpha_new, alpha)),
            delta_delete(S, Q, alpha),
        )
    return np.where(np.isfinite(gain) & (s > 0), gain, 0.0)


class _Run:
    """One sequential ascent: the workspace, where its columns come from, the step loop.

    ``position[j]`` is the workspace position of column ``j`` (``-1`` when inactive) and
    ``alpha_full[j]`` its (normalised) precision, ``inf`` when inactive. ``log_ev`` follows
    the objective through the steps (``path``); ``steps`` counts the steps and the outer
    updates (noise or mode), which :meth:`ascend` takes through an ``outer`` object.
    """

    def __init__(
        self,
        ws: _Workspace,
        cache,
        *,
        tol: float,
        max_iter: int,
        verbose: bool,
        polish: bool = False,
    ):
        n_basis = ws.phi_t.size
        self.ws = ws
        self.cache = cache
        self.tol = tol
        self.max_iter = max_iter
        self.verbose = verbose
        self.position = np.full(n_basis, -1, dtype=np.intp)
        self.alpha_full = np.full(n_basis, np.inf)
        self.log_ev = -np.inf
        self.path: list[float] = []
        self.steps = 0
        self.polish = polish  # joint Newton steps on the tail (regression only)

    def add(self, j: int, alpha_j: float, ranked: np.ndarray) -> None:
        column, cross = self.cache.get(j, ranked)
        self.position[j] = self.ws.M
        self.alpha_full[j] = alpha_j
        self.ws.add(j, alpha_j, column, cross)

    def delete(self, p: int) -> None:
        ws = self.ws
        j, column, cross = ws.delete(p)
        self.cache.put(j, column, cross)
        self.position[j] = -1
        self.alpha_full[j] = np.inf
        if p < ws.M:
            self.position[ws.index[p]] = p

    def ranking(self) -> np.ndarray:
        """The ``2 PREFETCH`` inactive candidates closest to being worth adding, by
        ``Q^2 / S`` (a column is added when it exceeds 1), best first."""
        ws = self.ws
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where((self.position < 0) & (ws.S > 0), ws.Q**2 / ws.S, -np.inf)
        top = min(2 * PREFETCH, ratio.size - 1)
        order = np.argpartition(-ratio, top)[:top]
        order = order[np.argsort(-ratio[order], kind="stable")]
        return order[np.isfinite(ratio[order])]

    def clear(self) -> None:
        """Delete every active column."""
        while self.ws.M:
            self.delete(self.ws.M - 1)

    def add_first(self, usable: np.ndarray) -> None:
        """Add the usable column with the largest gain to the empty model (Bishop 2006,
        Sec. 7.2.2 step 2); ``S, Q`` must be current."""
        ws = self.ws
        gain = ws.add_gain()
        first = int(np.argmax(np.where(usable, gain, -np.inf)))
        # Faul & Tipping (2002) eq. 17 (s = S, q = Q with no active column); with no
        # column supported, any finite start (deleted next)
        first_alpha = float(optimal_alpha(ws.S[first], ws.Q[first]))
        self.add(first, first_alpha if np.isfinite(first_alpha) else ws.S[first], self.ranking())

    def newton(self) -> float:
        """Joint Newton steps on the active ``alpha`` whose single-column optimum is
        finite; returns the gain."""
        ws = self.ws
        s, q = ws.own()
        free = np.flatnonzero((q**2 > s) & (s > 0))
        gain = ws.newton(free, self.tol)
        self.alpha_full[ws.index[: ws.M]] = ws.alpha[: ws.M]
        return gain

    def choose(self, unresolved: np.ndarray) -> tuple[float, int, int]:
        """The step with the largest gain: ``(gain, column, position)``, position ``-1`` for
        an add. Active columns are judged from ``Sigma, mu`` (current), inactive ones from
        ``S, Q`` as of the last flush; ties go to the lowest column index."""
        ws = self.ws
        add_gain = np.where(unresolved, 0.0, ws.add_gain())
        j = int(np.argmax(add_gain))
        best, position = float(add_gain[j]), -1
        if ws.M:
            active = ws.index[: ws.M]
            gain = np.where(unresolved[active], 0.0, _active_gains(ws))
            top = float(gain.max())
            if top >= best:
                tied = np.flatnonzero(gain == top)
                p = int(tied[np.argmin(active[tied])])
                if top > best or active[p] < j:
                    best, j, position = top, int(active[p]), p
        return best, j, position

    def ascend(self, outer, stale: bool) -> str:
        """Steps until no step gains more than ``tol`` with ``outer`` up to date.

        ``outer`` (``None``: nothing besides ``alpha`` is learned) has ``update(run)``,
        called when the ``alpha`` steps have converged and ``stale`` says that ``alpha``
        moved since its last update; it returns whether it changed the problem enough to
        look for steps again, or ``"above"`` (restart, see :class:`_Noise`). Returns
        ``"converged"``, ``"max_iter"`` or ``"above"``.

        The candidates' gains are brought up to date (:meth:`_Workspace.flush`) before an
        add is taken on them; while an active column offers more than every inactive one
        did at the last flush, the steps stay on the active set.
        """
        ws, tol = self.ws, self.tol
        n_basis = self.position.size
        fresh = True  # S, Q exact: no rank-one update since the last refresh
        unresolved = np.zeros(n_basis, dtype=bool)  # gains below rounding since the last step
        streak = 0  # re-estimates in a row
        while True:
            gain, j, p = self.choose(unresolved)
            if gain <= tol:
                if not fresh:  # confirm with exact S, Q before acting on "no step left"
                    ws.refresh(ws.beta)
                    fresh = True
                    continue
                if not stale:
                    return "converged"
                if self.steps == self.max_iter:
                    return "max_iter"
                self.steps += 1  # an outer update counts as an iteration
                # the alpha steps have converged: now (only now) update the rest
                status = outer.update(self)
                if isinstance(status, str):
                    return status
                unresolved[:] = False
                stale = status
                continue
            if p < 0 and ws.pending:  # the candidates' gains as of now, then look again
                ws.flush()
                continue
            s, q = ws.exact(j, p)
            if s <= SPAN * ws.beta * ws.unit[j]:
                # inactive: in the span of the active columns to rounding; active: s > 0
                # in exact arithmetic, so this is rounding at this conditioning
                unresolved[j] = True
                continue
            best, alpha_j = _exact_gain(self.alpha_full[j], s, q)
            if not best > tol:
                # the running S_j, Q_j had drifted: correct them and look elsewhere (the
                # round trip through S, Q can lose digits, so do not look here again
                # before the next step)
                if p < 0:
                    ws.set_exact(j, s, q)
                unresolved[j] = True
                continue
            if best <= ws.resolution() * (1.0 + best):
                unresolved[j] = True  # rounding at this conditioning: not a step, for now
                continue
            if self.steps == self.max_iter:
                return "max_iter"
            self.steps += 1
            if stale and outer.due(self, best):  # update first, then look again
                status = outer.update(self)
                if isinstance(status, str):
                    return status
                stale = status
                fresh = True
                unresolved[:] = False
                continue
            fresh = False
            unresolved[:] = False
            stale = outer is not None
            if p < 0:
                self.add(j, alpha_j, self.ranking())
                streak = 0
            elif np.isfinite(alpha_j) and self.polish and streak >= POLISH_AFTER:
                best = self.newton()
                fresh, streak = True, 0
            elif np.isfinite(alpha_j):
                ws.reestimate(p, alpha_j)
                self.alpha_full[j] = alpha_j
                streak += 1
            else:
                self.delete(p)
                streak = 0
            self.log_ev += best
            self.path.append(self.log_ev)
            if self.verbose and self.steps % 100 == 0:
                print(
                    f"[sequential] step {self.steps}: M={ws.M} log evidence="
                    f"{self.log_ev:.6f} best gain={best:.2e}"
                )


class _Noise:
    """Gaussian likelihood: the noise update between converged ``alpha`` sub-problems.

    With ``probe`` set, the first update of a run may answer ``"above"``: the noise
    variance fell below :data:`RESTART_BELOW` times the start, so the run started above
    the noise optimum and restarts lower (see the module notes).
    """

    def __init__(self, prior: Prior, floor: float, verbose: bool):
        self.prior = prior
        self.floor = floor
        self.verbose = verbose
        self.probe = True

    def due(self, run: _Run, gain: float) -> bool:
        """Never before the ``alpha`` steps have converged (see the module notes)."""
        return False

    def update(self, run: _Run) -> bool | str:
        ws = run.ws
        beta_new = _noise_update(ws, self.prior, self.floor)
        if self.probe and beta_new * RESTART_BELOW > ws.beta and ws.beta < 1.0 / self.floor:
            if self.verbose:
                print(
                    f"[sequential] started above the noise optimum (sd "
                    f"{ws.beta**-0.5:.4g} -> {beta_new**-0.5:.4g}): restarting lower"
                )
            ws.beta = beta_new  # the estimate the restart starts below
            return "above"
        self.probe = False
        ws.refresh(beta_new)
        log_ev = _log_evidence(ws, self.prior, noise_fixed=False)
        gain, run.log_ev = log_ev - run.log_ev, log_ev
        run.path.append(log_ev)
        if self.verbose:
            print(
                f"[sequential] noise update after step {run.steps}: M={ws.M} "
                f"sd={ws.beta**-0.5:.4g} gain={gain:.3g}"
            )
        return abs(gain) > run.tol


class _Mode:
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

    def __init__(self, link: Bernoulli, prior: Prior, verbose: bool):
        self.link = link
        self.prior = prior
        self.verbose = verbose
        self.restart()

    def restart(self) -> None:
        """Forget the trust region and the best model (on a new basis)."""
        self.anchor = -np.inf  # the log evidence at the last update
        self.radius = MODE_GAIN
        self.best = -np.inf  # the best log evidence at a mode, and its model
        self.best_model = (np.zeros(0, dtype=np.intp), np.zeros(0))
        self.stalled = 0  # updates since the best improved by tol

    def due(self, run: _Run, gain: float) -> bool:
        """Whether a step of ``gain`` would take the claimed gain since the last mode
        beyond ``radius`` nats: the mode is found first."""
        return run.log_ev + gain - self.anchor > self.radius

    def weigh(self, run: _Run, F: np.ndarray) -> None:
        """The weighted problem at latent values ``F = Phi_a mu`` (all of ``run.ws``)."""
        ws = run.ws
        # Tipping (2001) eq. 25: B = diag(w y (1 - y)), and the residual w (t - y)
        curvature, residual = self.link.irls(F)
        weights = curvature[:, 0, 0]
        M = ws.M
        run.cache.reweight(weights)
        # Tipping & Faul (2003) Sec. 4: B t^ = B F + (t - y)
        V = np.column_stack([weights[:, None] * ws.Phi[:, :M], weights * F + residual])
        products, ws.unit = run.cache.weighted(V)
        ws.C[:, :M] = products[:, :M]
        ws.phi_t = products[:, M]
        ws.refresh(1.0)

    def update(self, run: _Run) -> bool | str:
        ws = run.ws
        M = ws.M
        alpha = ws.alpha[:M].copy()
        Phi_a = ws.Phi[:, :M]
        mode = posterior_mode(Phi_a, self.link, alpha, ws.mu if ws.mu.size == M else None)
        self.weigh(run, Phi_a @ mode.mu)
        # Bishop (2006) eq. 7.114 with the Hessian at the mode
        log_ev = log_evidence_laplace(dataclasses.replace(mode, precision_chol=ws.L), alpha)
        claimed = run.log_ev - self.anchor
        if claimed > 0:
            # trust region: the ratio of the evidence gained to the gain the steps claimed
            ratio = (log_ev - self.anchor) / claimed
            if ratio > 0.75:
                self.radius = min(2.0 * self.radius, MODE_GAIN_MAX)
            elif ratio < 0.25:
                self.radius = max(0.5 * self.radius, MODE_GAIN_MIN)
        gain, run.log_ev = log_ev - run.log_ev, log_ev
        run.path.append(log_ev)
        self.anchor = log_ev
        if self.verbose:
            print(
                f"[sequential] mode update after step {run.steps}: M={M} IRLS steps "
                f"{mode.n_iter} change={gain:.3g}"
            )
        if log_ev > self.best + run.tol:
            self.best, self.best_model, self.stalled = log_ev, self.model(ws), 0
            return False
        self.stalled += 1
        return "stalled" if self.stalled == MODE_STALL else False

    @staticmethod
    def model(ws: _Workspace) -> tuple[np.ndarray, np.ndarray]:
        """The active columns and their precisions."""
        return ws.index[: ws.M].copy(), ws.alpha[: ws.M].copy()

    def restore_best(self, run: _Run) -> None:
        """Return to the model with the best Laplace evidence seen at a mode."""
        index, alpha = self.best_model
        run.clear()
        for j, alpha_j in zip(index, alpha, strict=True):
            run.add(int(j), float(alpha_j), np.zeros(0, dtype=np.intp))
        self.update(run)


def fit(
    basis: Basis,
    t: np.ndarray,
    *,
    prior: Prior,
    noise_var: float | None,
    max_iter: int,
    tol: float,
    verbose: bool = False,
    link: Bernoulli | None = None,
    schedule: Schedule | None = None,
) -> Type2Result:
    """Sequential add / re-estimate / delete; see :func:`bayes_rvm.fit_type2`.

    ``tol`` is in nats here: the fit has converged when no single action would raise the
    log evidence by more than ``tol`` and (noise learned) the noise update at that point
    raised it by less than ``tol``. ``max_iter`` counts add / re-estimate / delete steps
    and noise updates.

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
    if link is not None and not isinstance(link, Bernoulli):
        raise ValueError(
            "the sequential solver supports the gaussian and bernoulli likelihoods, got "
            f"{link.name!r}: use solver='mackay' or solver='em', or one-vs-rest"
        )
    n_basis = basis.n_columns
    schedule = Schedule() if schedule is None else schedule
    # The compiled loop learns the noise by continuation from below; with the noise held
    # fixed (low) its coordinate steps stop at poorer optima than the joint Newton steps of
    # the path below reach (sinc at sd 0.01: 258 nats lower; docs/benchmarks.md).
    small = 8 * basis.n_rows * n_basis <= schedule.dense_bytes
    if link is None and noise_var is None and small:
        return _fit_compiled(basis, t, prior, noise_var, max_iter, tol, verbose, schedule)
    dense = link is not None and 8 * basis.n_rows * n_basis <= DENSE_BYTES
    if dense:
        basis = as_basis(basis.toarray())
        products, sq_norms = basis.transpose_dot_with_norms(t[:, None])
        B, U, leftover = np.zeros((n_basis, 0)), np.zeros((t.size, 0)), 0.0
        phi_t = products[:, 0] / np.where(sq_norms > 0, np.sqrt(sq_norms), 1.0)
    else:
        B, U, leftover, phi_t, sq_norms = _compress(basis, t)
    usable = sq_norms > 0
    if not usable.any():
        raise ValueError("expected a design matrix with a nonzero column, got all zeros")
    scales = np.where(usable, np.sqrt(sq_norms), 1.0)
    unit = usable.astype(np.float64)
    exact_cache = _CrossCache(basis, scales, 1 if dense else min(PREFETCH, n_basis))
    approximate = B.shape[1] > 0 and leftover > EXACT_RESIDUAL
    if approximate:  # first run on the projected basis U U^T Phi~: a model of its own
        cache = _CompressedCrosses(basis, scales, B, U, project=True)
        start_phi_t, start_unit = B @ (U.T @ t), np.einsum("ij,ij->i", B, B)
    else:
        cache = exact_cache
        if B.shape[1]:
            cache = _CompressedCrosses(basis, scales, B, U, project=False)
        start_phi_t, start_unit = phi_t, unit
    options = {"tol": tol, "max_iter": max_iter, "verbose": verbose}

    if link is None:
        noise_fixed = noise_var is not None
        floor = noise_var_floor(t)
        beta = 1.0 / (noise_var if noise_fixed else initial_noise_var(t, START_NOISE))
        run = _Run(_Workspace(t, start_phi_t, start_unit, beta), cache, polish=True, **options)
        outer = None if noise_fixed else _Noise(prior, floor, verbose)
        _start_gaussian(run, beta, usable, prior, noise_fixed)
        status = run.ascend(outer, stale=outer is not None)
        # The schedule needs a start below the noise optimum. Noise-free or nearly
        # noise-free targets put the optimum below START_NOISE var(t): the first noise
        # update then lowers the noise by more than RESTART_BELOW, and the run restarts
        # from one column at START_NOISE times that estimate. Only the final run's
        # objective is recorded in the path.
        while status == "above":
            _start_gaussian(run, max(START_NOISE / run.ws.beta, floor) ** -1, usable, prior, False)
            outer.probe = True
            status = run.ascend(outer, stale=True)
    else:
        noise_fixed = True
        run = _Run(_Workspace(t, start_phi_t, start_unit, 1.0), cache, **options)
        outer = _Mode(link, prior, verbose)
        outer.weigh(run, np.zeros(t.size))  # the empty model: y = 1/2 everywhere
        run.add_first(usable)
        outer.update(run)
        run.path = [run.log_ev]
        status = run.ascend(outer, stale=False)
        if status == "stalled":
            outer.restore_best(run)
    ws = run.ws
    if approximate or (B.shape[1] and (link is not None or not _products_agree(run, tol))):
        # From the compressed products to exact ones: exact active columns (on the
        # projected basis) and their products (one pass), a refresh, and the remaining
        # steps with exact products. Also after a compression exact to rounding when
        # the exact Gram matrix of the active columns disagrees: nearly collinear
        # columns can make rounding-level errors of the products matter (a linear spline
        # kernel on shifted inputs ended 42,000 nats below the optimum without this).
        M = ws.M
        if approximate:
            ws.Phi[:, :M] = basis.columns(ws.index[:M]) / scales[ws.index[:M]]
        run.cache = exact_cache
        if link is None:
            ws.C[:, :M] = basis.transpose_dot(ws.Phi[:, :M]) / scales[:, None]
            ws.phi_t, ws.unit = phi_t, unit
            ws.refresh(ws.beta)
            run.log_ev = _log_evidence(ws, prior, noise_fixed)
            run.path.append(run.log_ev)
            if outer is not None:
                outer.probe = False
        else:
            outer.restart()
            outer.update(run)
        status = run.ascend(outer, stale=isinstance(outer, _Noise))
        if status == "stalled":
            outer.restore_best(run)
    if verbose:
        print(
            f"[sequential] {run.steps} steps, M={ws.M}, log evidence={run.log_ev:.6f}, "
            f"compressed rank {B.shape[1]} (residual {leftover:.1e}), exact passes "
            f"{exact_cache.passes}"
        )
    converged = status in ("converged", "stalled")
    return _result(basis, run, scales, prior, noise_fixed, converged, link)


def _fit_compiled(
    basis: Basis,
    t: np.ndarray,
    prior: Prior,
    noise_var: float | None,
    max_iter: int,
    tol: float,
    verbose: bool,
    schedule: Schedule,
) -> Type2Result:
    """Gaussian likelihood, basis in memory: the compiled ascent (:mod:`._compiled`)."""
    Phi = basis.toarray()
    sq_norms = np.einsum("ij,ij->j", Phi, Phi)
    usable = sq_norms > 0
    if not usable.any():
        raise ValueError("expected a design matrix with a nonzero column, got all zeros")
    scales = np.where(usable, np.sqrt(sq_norms), 1.0)
    B = np.ascontiguousarray((Phi / scales).T)
    ascent, status = ascend_dense(
        B, t, prior=prior, noise_var=noise_var, max_iter=max_iter, tol=tol, schedule=schedule
    )
    if status == Status.NOT_PD:
        raise np.linalg.LinAlgError(
            "the posterior precision of the sequential fit lost positive definiteness; "
            "use solver='mackay'"
        )
    index, alpha = ascent.model()
    order = np.argsort(index, kind="stable")
    active = index[order]
    scale = scales[active]
    # phi_j = scale_j phi~_j: alpha_j = scale_j^2 alpha~_j
    alpha = alpha[order] * scale**2
    Phi_a = Phi[:, active]
    beta = ascent.beta
    # Tipping (2001) eq. 12-13
    precision_chol, mu = gaussian_posterior(Phi_a.T @ Phi_a, Phi_a.T @ t, alpha, beta)
    residual = t - Phi_a @ mu
    noise_fixed = noise_var is not None
    log_ev = log_evidence_gaussian(
        precision_chol, mu, alpha, beta, float(residual @ residual), t.size
    ) + hyperprior_log_density(
        alpha, None if noise_fixed else beta, prior.a, prior.b, prior.c, prior.d
    )
    S, Q = ascent.readd_gain_inputs()
    inactive = np.setdiff1d(np.arange(basis.n_columns), active)
    if verbose:
        print(
            f"[sequential] {ascent.steps} steps, M={active.size}, noise sd "
            f"{beta**-0.5:.4g}, log evidence={log_ev:.6f} ({status.name.lower()})"
        )
    return Type2Result(
        likelihood="gaussian",
        solver="sequential",
        n_basis=basis.n_columns,
        active=active,
        alpha=alpha,
        beta=beta,
        mu=mu,
        precision_chol=precision_chol,
        log_evidence=log_ev,
        log_evidence_path=np.array([*ascent.recorded_path(), log_ev]),
        n_iter=ascent.steps,
        converged=status == Status.CONVERGED,
        # the gain of an add is invariant to the column scale
        readd_gain=delta_add(S[inactive], Q[inactive]),
        prior=prior,
        noise_fixed=noise_fixed,
    )


def _products_agree(run: _Run, tol: float) -> bool:
    """Whether the log evidence of the active columns from their exact Gram matrix
    (``O(N M^2)``) equals the one from the compressed products to ``tol`` nats."""
    ws = run.ws
    ws.refactor()  # the factor of the current Sigma^-1 (a max_iter stop can leave it older)
    M = ws.M
    alpha, Phi_a = ws.alpha[:M], ws.Phi[:, :M]
    L, mu = gaussian_posterior(Phi_a.T @ Phi_a, Phi_a.T @ ws.t, alpha, ws.beta)
    residual = ws.t - Phi_a @ mu
    n = ws.t.size
    exact = log_evidence_gaussian(L, mu, alpha, ws.beta, float(residual @ residual), n)
    compressed = log_evidence_gaussian(ws.L, ws.mu, alpha, ws.beta, ws.rss(), n)
    return abs(exact - compressed) <= tol


def _start_gaussian(
    run: _Run, beta: float, usable: np.ndarray, prior: Prior, noise_fixed: bool
) -> None:
    """Empty the model and start from the single column with the largest gain at noise
    precision ``beta`` (Bishop 2006, Sec. 7.2.2 step 2)."""
    run.clear()
    run.ws.refresh(beta)
    run.add_first(usable)
    run.ws.refresh(beta)
    run.log_ev = _log_evidence(run.ws, prior, noise_fixed)
    run.path = [run.log_ev]


def _result(
    basis: Basis,
    run: _Run,
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
    if link is None:
        residual = ws.t - F
        log_ev = log_evidence_gaussian(
            precision_chol, mu, alpha, ws.beta, float(residual @ residual), ws.t.size
        ) + hyperprior_log_density(
            alpha, None if noise_fixed else ws.beta, prior.a, prior.b, prior.c, prior.d
        )
    else:
        log_likelihood = link.log_likelihood(F)
        # Tipping (2001) eq. 24 at the mode
        log_joint = log_likelihood - 0.5 * float(np.sum(alpha * mu**2))
        mode = LaplaceMode(mu, precision_chol, log_likelihood, log_joint, link.mean(F), 0, True)
        log_ev = log_evidence_laplace(mode, alpha, prior.a, prior.b)
    inactive = np.setdiff1d(np.arange(basis.n_columns), active)
    return Type2Result(
        likelihood="gaussian" if link is None else link.name,
        solver="sequential",
        n_basis=basis.n_columns,
        active=active,
        alpha=alpha,
        beta=ws.beta if link is None else None,
        mu=mu,
        precision_chol=precision_chol,
        log_evidence=log_ev,
        log_evidence_path=np.array([*run.path, log_ev]),
        n_iter=run.steps,
        converged=converged,
        readd_gain=delta_add(ws.S[inactive], ws.Q[inactive]),
        prior=prior,
        noise_fixed=noise_fixed,
    )
