"""Gaussian fits on the triangular factor of ``[Phi | t]``: the reduction and the fit on it.

The Gaussian evidence, posterior and noise update see the data only through
``Phi^T Phi``, ``Phi^T t``, ``t^T t`` and ``N`` (Tipping 2001, eq. 12-13, 36, 46). The
reduction must reproduce those products to rounding, and a fit on the reduced design
must be a fit of the data: certified and of the evidence of the ``N`` rows (recomputed
here from the data), at the optimum of the basis held as it is. Only public names
choose the route (``sequential.Schedule``); nothing here depends on how the solver
schedules its steps.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import cholesky, solve_triangular

from bayes_rvm import basis as basis_module
from bayes_rvm._basis_views import RowWeightedBasis, ScaledBasis
from bayes_rvm.basis import DenseBasis, KernelBasis
from bayes_rvm.evidence import LOG_2PI, Prior, column_gain, own_sparsity_quality
from bayes_rvm.kernels import RBF
from bayes_rvm.solvers import em, mackay, sequential

# relative rounding of products of O(n) terms after one Householder QR of ~1000 rows
PRODUCTS = 1e-13
# evidence of the same model from two routes whose products agree to rounding
EVIDENCE = 1e-8
#: The sequential solver's convergence threshold (nats) in the fits below.
TOL = 1e-6
#: Schedules that take the basis as it is, and its reduced design (``dense_bytes`` of the
#: public schedule chooses the route).
HELD = sequential.Schedule(dense_bytes=2**40)
REDUCED = sequential.Schedule(dense_bytes=0)


def _products(A: np.ndarray) -> np.ndarray:
    return A.T @ A


def _assert_same_products(R: np.ndarray, A: np.ndarray) -> None:
    """``R^T R = A^T A`` (the Gram matrix of ``[Phi | t]``: ``G``, ``h``, ``t^T t``) to
    rounding, ``R`` upper triangular."""
    assert R.shape == (A.shape[1], A.shape[1])
    np.testing.assert_array_equal(np.tril(R, -1), 0.0)
    expected = _products(A)
    scale = np.max(np.abs(expected))
    np.testing.assert_allclose(_products(R), expected, rtol=0, atol=PRODUCTS * scale)


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 64 rows, so that a reduction folds many blocks."""
    monkeypatch.setattr(basis_module, "REDUCE_ROWS", 64)
    monkeypatch.setattr(basis_module, "BLOCK_BYTES", 1)


def _inputs(n: int = 900, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3.0, 3.0, size=(n, 2))
    return X, np.sin(X[:, 0]) * X[:, 1] + rng.normal(0.0, 0.1, n)


def test_kernel_basis_reduction_reproduces_the_products(small_blocks):
    X, t = _inputs()
    basis = KernelBasis(X, RBF(0.7), centres=X[:40], extra=["linear"])
    R = basis.reduce(t)
    A = np.column_stack([basis.toarray(), t])
    _assert_same_products(R, A)
    # the same factor from the in-memory matrix (the generic row blocks)
    np.testing.assert_allclose(
        np.abs(DenseBasis(basis.toarray()).reduce(t)), np.abs(R), atol=1e-12
    )


def test_weighted_and_scaled_reductions_reproduce_their_products(small_blocks):
    X, t = _inputs(seed=1)
    rng = np.random.default_rng(2)
    weights = rng.uniform(0.0, 3.0, X.shape[0])
    weights[:7] = 0.0
    scales = rng.uniform(0.5, 4.0, 41)
    kernel = KernelBasis(X, RBF(0.7), centres=X[:40])
    stacked = ScaledBasis(RowWeightedBasis(kernel, weights), scales)
    root = np.sqrt(weights)
    R = stacked.reduce(root * t)
    _assert_same_products(
        R, np.column_stack([root[:, None] * kernel.toarray() / scales, root * t])
    )


def test_rank_deficient_design_keeps_its_products(small_blocks):
    """Repeated and zero columns: no Gram matrix is squared, nothing breaks."""
    X, t = _inputs(seed=3)
    Phi = KernelBasis(X, RBF(0.7), centres=X[:10]).toarray()
    Phi = np.column_stack([Phi, Phi[:, :3], np.zeros(X.shape[0])])
    R = DenseBasis(Phi).reduce(t)
    _assert_same_products(R, np.column_stack([Phi, t]))
    assert R[-2, -2] == 0.0  # the zero column


@pytest.mark.parametrize(("t", "row_scale"), [(np.zeros(5), None), (np.zeros(6), np.ones(3))])
def test_reduce_rejects_vectors_of_another_length(t, row_scale):
    basis = DenseBasis(np.ones((6, 2)))
    with pytest.raises(ValueError, match=r"expected .* of shape \(6,\), one entry per row"):
        basis.reduce(t, row_scale)


def _sparse_problem(seed: int, n: int = 1500, m: int = 60, noise: float = 0.3):
    """Random design with a few relevant columns. Its columns are nearly orthogonal (``N``
    Gaussian entries each, ``N >> M``: correlations about ``N^-1/2``), so the evidence's
    coordinates (each ``log alpha_i`` and ``log beta``) barely couple."""
    rng = np.random.default_rng(seed)
    Phi = rng.normal(size=(n, m))
    w = np.zeros(m)
    w[rng.choice(m, 6, replace=False)] = rng.normal(0.0, 2.0, 6)
    return Phi, Phi @ w + rng.normal(0.0, noise, n) + 1.5


def _fit(basis, t, *, reduce: bool, noise_var=None):
    """The sequential fit of ``basis`` on its reduced design or on the basis as it is."""
    return sequential.fit(
        basis, t, prior=Prior(), noise_var=noise_var, max_iter=10_000, tol=TOL,
        schedule=REDUCED if reduce else HELD,
    )  # fmt: skip


@pytest.fixture
def reductions(monkeypatch):
    """The number of :meth:`DenseBasis.reduce` calls: whether a fit took the reduced
    design."""
    calls = []
    reduce = DenseBasis.reduce
    monkeypatch.setattr(DenseBasis, "reduce", lambda *a: calls.append(1) or reduce(*a))
    return calls


# Independent recomputation on the N rows (Tipping 2001; Faul & Tipping 2002): Cholesky
# factors, triangular solves and an SVD, nothing of the solver.


def _evidence_in_beta(Phi_a: np.ndarray, t: np.ndarray, alpha: np.ndarray):
    """Eq. 36 (``a = b = c = d = 0``) at ``alpha`` as a function of ``beta``.

    From the SVD ``Phi_a A^-1/2 = P diag(d) V^T``: ``C = beta^-1 I + P diag(d^2) P^T``,
    so ``log|C| = -N log beta + sum log(1 + beta d^2)`` and ``t^T C^-1 t = beta (||t||^2
    - ||P^T t||^2) + sum beta (P^T t)^2 / (1 + beta d^2)``: no ``N x N`` matrix, and no
    cancellation between two evaluations at nearby ``beta``."""
    P, d, _ = np.linalg.svd(Phi_a / np.sqrt(alpha), full_matrices=False)
    p = P.T @ t
    outside = float(t @ t - p @ p)

    def log_evidence(beta: float) -> float:
        shrink = 1.0 + beta * d * d
        log_det = -t.size * np.log(beta) + np.sum(np.log(shrink))
        quad = beta * (outside + np.sum(p * p / shrink))
        return float(-0.5 * (t.size * LOG_2PI + log_det + quad))

    return log_evidence


def _assert_certified(Phi: np.ndarray, t: np.ndarray, fit) -> None:
    """The optimality certificate on the ``N`` rows: from ``S, Q`` of every column
    computed afresh at the fit's hyperparameters, no single add, re-estimate or delete
    gains more than ``TOL`` (Faul & Tipping 2002, eq. 15-17), nor (noise learned) the
    noise update of eq. 46; and the reported log evidence is eq. 36 of those rows."""
    assert fit.converged
    Phi_a, alpha, beta = Phi[:, fit.active], fit.alpha, fit.beta
    # Tipping (2001) eq. 12-13: H = A + beta Phi_a^T Phi_a = L L^T, mu = beta H^-1 Phi_a^T t
    L = cholesky(np.diag(alpha) + beta * Phi_a.T @ Phi_a, lower=True)
    Z = solve_triangular(L, Phi_a.T @ Phi, lower=True)
    z = solve_triangular(L, Phi_a.T @ t, lower=True)
    # Tipping & Faul (2003) eq. 24-25 with C^-1 by Woodbury
    S = beta * np.einsum("ij,ij->j", Phi, Phi) - beta**2 * np.einsum("ij,ij->j", Z, Z)
    Q = beta * (Phi.T @ t) - beta**2 * (Z.T @ z)
    all_alpha = np.full(Phi.shape[1], np.inf)
    all_alpha[fit.active] = alpha
    gain, _ = column_gain(*own_sparsity_quality(S, Q, all_alpha), all_alpha)
    assert gain.max() <= TOL
    log_evidence = _evidence_in_beta(Phi_a, t, alpha)
    assert fit.log_evidence == pytest.approx(log_evidence(beta), rel=1e-10)
    if fit.noise_fixed:
        return
    L_inv = solve_triangular(L, np.eye(alpha.size), lower=True)
    gamma = 1.0 - alpha * np.einsum("ij,ij->j", L_inv, L_inv)  # eq. 39
    residual = t - Phi_a @ (beta * (L_inv.T @ z))
    beta_new = (t.size - gamma.sum()) / float(residual @ residual)  # eq. 46
    assert log_evidence(beta_new) - log_evidence(beta) <= TOL


def _assert_same_optimum(fit, other, Phi: np.ndarray) -> None:
    """Two fits of one problem, each certified at ``TOL``: on a design whose coordinates
    barely couple the gap to the optimum is about the sum of the single-coordinate gains,
    at most ``G = (M + 1) TOL`` for each fit. So the log evidence agrees to ``2 G``; the
    fitted values to ``sqrt(2 G / beta)`` each in norm (a change ``dF`` costs ``beta
    ||dF||^2 / 2`` nats of fit); and ``log beta``, whose curvature at the optimum is about
    ``(N - sum gamma) / 2 >= (N - M) / 2``, to ``sqrt(4 G / (N - M))`` each."""
    np.testing.assert_array_equal(fit.active, other.active)
    n, M = Phi.shape[0], fit.active.size
    gap = (M + 1) * TOL
    assert fit.log_evidence == pytest.approx(other.log_evidence, abs=2 * gap)
    fitted = Phi[:, fit.active] @ fit.mu - Phi[:, other.active] @ other.mu
    assert np.linalg.norm(fitted) <= 2 * np.sqrt(2 * gap / min(fit.beta, other.beta))
    assert np.log(fit.beta / other.beta) == pytest.approx(0.0, abs=2 * np.sqrt(4 * gap / (n - M)))


@pytest.mark.parametrize("noise_var", [None, 0.09])
def test_reduced_fit_is_the_fit_on_the_n_rows(noise_var, reductions):
    """The reduced design ``[R; 0]``, ``[z; r]`` counted as ``N`` rows: the fit is certified
    on the data themselves, and it reaches the optimum of the basis held as it is."""
    Phi, t = _sparse_problem(4)
    held = _fit(DenseBasis(Phi), t, reduce=False, noise_var=noise_var)
    assert not reductions
    reduced = _fit(DenseBasis(Phi), t, reduce=True, noise_var=noise_var)
    assert reductions, "the fit did not run on the reduced design"
    assert reduced.active.size >= 6
    _assert_certified(Phi, t, reduced)
    _assert_certified(Phi, t, held)
    _assert_same_optimum(reduced, held, Phi)


def test_reduced_fit_at_high_noise_reaches_the_held_optimum(reductions):
    """Many more rows than columns and a large noise, so that the least-squares bound on
    the noise variance of every fixed point of eq. 46 (``r^2 / N``, which the reduced
    design carries as its last entry) lies close to the optimum: the reduced fit reaches
    the held fit's optimum, certified on the ``N`` rows, with a noise variance above
    that bound."""
    Phi, t = _sparse_problem(8, n=4000, m=40, noise=3.0)
    reduced = _fit(DenseBasis(Phi), t, reduce=True)
    assert reductions, "the fit did not run on the reduced design"
    held = _fit(DenseBasis(Phi), t, reduce=False)
    _assert_certified(Phi, t, reduced)
    _assert_certified(Phi, t, held)
    _assert_same_optimum(reduced, held, Phi)
    residual = t - Phi @ np.linalg.lstsq(Phi, t, rcond=None)[0]
    assert 1.0 / reduced.beta >= float(residual @ residual) / t.size


def test_reduced_weighted_fit_is_the_fit_on_the_n_rows(reductions):
    """Rows of weight ``w_n``: the problem ``sqrt(w) Phi``, ``sqrt(w) t``, reduced, is
    certified on its ``N`` rows and reaches the optimum of the weighted basis held as it
    is."""
    Phi, t = _sparse_problem(5)
    weights = np.random.default_rng(6).uniform(0.2, 3.0, t.size)
    basis = RowWeightedBasis(DenseBasis(Phi), weights)
    root = np.sqrt(weights)
    reduced = _fit(basis, root * t, reduce=True)
    assert reductions, "the fit did not run on the reduced design"
    held = _fit(basis, root * t, reduce=False)
    _assert_certified(root[:, None] * Phi, root * t, reduced)
    _assert_certified(root[:, None] * Phi, root * t, held)
    _assert_same_optimum(reduced, held, root[:, None] * Phi)


def _assert_same_fit(reduced, direct):
    """MacKay and EM re-estimate every hyperparameter from ``Phi^T Phi``, ``Phi^T t``,
    ``t^T t`` and ``N``: on products equal to rounding they take the same iterations, so
    their results agree to rounding amplified by the iterations."""
    np.testing.assert_array_equal(reduced.active, direct.active)
    assert reduced.log_evidence == pytest.approx(direct.log_evidence, rel=EVIDENCE)
    np.testing.assert_allclose(reduced.alpha, direct.alpha, rtol=1e-6)
    np.testing.assert_allclose(reduced.mu, direct.mu, rtol=1e-7, atol=1e-9)
    assert reduced.beta == pytest.approx(direct.beta, rel=1e-8)


@pytest.mark.parametrize("solver", [mackay, em])
@pytest.mark.parametrize("noise_var", [None, 0.09])
def test_reestimation_on_the_reduced_design_is_the_direct_fit(solver, noise_var, reductions):
    """MacKay and EM re-estimate from the products too: on the reduced design they reach
    the same fit, whose evidence is that of the N rows."""
    Phi, t = _sparse_problem(9)
    # EM's steps shrink near the optimum: a looser tolerance for it to converge
    tol = 1e-6 if solver is mackay else 1e-3
    options = {"prior": Prior(), "noise_var": noise_var, "max_iter": 20_000, "tol": tol}
    direct = solver.fit(DenseBasis(Phi), t, **options, schedule=HELD)
    assert not reductions
    reduced = solver.fit(DenseBasis(Phi), t, **options, schedule=REDUCED)
    assert reductions, "the fit did not run on the reduced design"
    _assert_same_fit(reduced, direct)
    assert reduced.converged and reduced.active.size >= 6
    expected = _evidence_in_beta(Phi[:, reduced.active], t, reduced.alpha)(reduced.beta)
    assert reduced.log_evidence == pytest.approx(expected, rel=1e-10)


def test_weighted_reestimation_on_the_reduced_design_is_the_direct_fit():
    """Rows of weight ``w_n`` and the reduction both stand for other rows: MacKay on the
    reduced weighted design is its direct fit."""
    Phi, t = _sparse_problem(10)
    weights = np.random.default_rng(11).uniform(0.2, 3.0, t.size)
    basis = RowWeightedBasis(DenseBasis(Phi), weights)
    target = np.sqrt(weights) * t
    prior = Prior(c=0.5 * (weights.sum() - t.size))  # as fit_type2 counts sum(w) rows
    options = {"prior": prior, "noise_var": None, "max_iter": 5000, "tol": 1e-6}
    direct = mackay.fit(basis, target, **options, schedule=HELD)
    reduced = mackay.fit(basis, target, **options, schedule=REDUCED)
    _assert_same_fit(reduced, direct)
    assert reduced.converged


def test_compiled_path_holds_a_basis_up_to_dense_bytes():
    shape = (100, 8)  # 6,400 bytes of doubles
    assert sequential.Schedule(dense_bytes=6400).holds(shape)
    assert not sequential.Schedule(dense_bytes=6399).holds(shape)


def test_reduction_is_taken_only_when_it_pays():
    tall = DenseBasis(np.ones((100, 8)))  # 6,400 bytes, a factor of 9^2 doubles
    assert sequential.Schedule(dense_bytes=6399).reduces(tall.shape)
    assert not sequential.Schedule(dense_bytes=6400).reduces(tall.shape)
    assert not sequential.Schedule(dense_bytes=0, reduced_bytes=8 * 80).reduces(tall.shape)
    square = DenseBasis(np.ones((17, 8)))  # fewer than twice as many rows as columns
    assert not sequential.Schedule(dense_bytes=0).reduces(square.shape)
