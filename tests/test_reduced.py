"""Gaussian fits on the triangular factor of ``[Phi | t]``: the reduction and the fit on it.

The Gaussian evidence, posterior and noise update see the data only through
``Phi^T Phi``, ``Phi^T t``, ``t^T t`` and ``N`` (Tipping 2001, eq. 12-13, 36, 46). The
reduction must reproduce those products to rounding, and a fit on the reduced design
must be the fit on the data.
"""

from __future__ import annotations

import numpy as np
import pytest

from bayes_rvm import basis as basis_module
from bayes_rvm.basis import DenseBasis, KernelBasis, RowWeightedBasis, ScaledBasis
from bayes_rvm.kernels import RBF
from bayes_rvm.posterior import fit_gaussian
from bayes_rvm.solvers import _compiled, em, mackay, sequential
from bayes_rvm.solvers._ascent import Stopping
from bayes_rvm.solvers._base import Prior, TargetMoments
from bayes_rvm.solvers._compiled import Schedule

# relative rounding of products of O(n) terms after one Householder QR of ~1000 rows
PRODUCTS = 1e-13
# evidence of the same model from two routes whose products agree to rounding
EVIDENCE = 1e-8


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
    """Random design with a few relevant columns: well conditioned, so that two routes
    whose products differ by rounding take the same steps."""
    rng = np.random.default_rng(seed)
    Phi = rng.normal(size=(n, m))
    w = np.zeros(m)
    w[rng.choice(m, 6, replace=False)] = rng.normal(0.0, 2.0, 6)
    return Phi, Phi @ w + rng.normal(0.0, noise, n) + 1.5


def _fit(basis, t, *, reduce: bool, noise_var=None):
    """The sequential fit of ``basis`` with or without the reduction (the same algorithm:
    the compiled path for a learned noise, the large path for a fixed one)."""
    schedule = sequential.Schedule(dense_bytes=0 if reduce else 2**40)
    return sequential.fit(
        basis, t, prior=Prior(), noise_var=noise_var, max_iter=10_000, tol=1e-6,
        schedule=schedule,
    )  # fmt: skip


def _least_squares_rss(Phi: np.ndarray, t: np.ndarray) -> float:
    residual = t - Phi @ np.linalg.lstsq(Phi, t, rcond=None)[0]
    return float(residual @ residual)


def _direct(basis, t, noise_var=None):
    """The fit of ``basis`` without the reduction, by the algorithm the reduced fit runs:
    with the noise learned, the compiled ascent started at the least-squares bound that
    the reduced design carries (:func:`bayes_rvm.solvers._compiled.ascend_dense`)."""
    if noise_var is not None:
        return _fit(basis, t, reduce=False, noise_var=noise_var)
    return sequential._fit_compiled(
        basis, t, Prior(), Stopping(10_000, 1e-6, False), sequential.Schedule(),
        TargetMoments.of(t), t, _least_squares_rss(basis.toarray(), t),
    )  # fmt: skip


def _assert_same_fit(reduced, direct):
    np.testing.assert_array_equal(reduced.active, direct.active)
    assert reduced.log_evidence == pytest.approx(direct.log_evidence, rel=EVIDENCE)
    np.testing.assert_allclose(reduced.alpha, direct.alpha, rtol=1e-6)
    np.testing.assert_allclose(reduced.mu, direct.mu, rtol=1e-7, atol=1e-9)
    assert reduced.beta == pytest.approx(direct.beta, rel=1e-8)


@pytest.mark.parametrize("noise_var", [None, 0.09])
def test_reduced_fit_is_the_direct_fit(noise_var, monkeypatch):
    Phi, t = _sparse_problem(4)
    basis = DenseBasis(Phi)
    calls = []
    reduce = DenseBasis.reduce
    monkeypatch.setattr(DenseBasis, "reduce", lambda *a: calls.append(1) or reduce(*a))
    direct = _direct(basis, t, noise_var)
    assert not calls
    reduced = _fit(basis, t, reduce=True, noise_var=noise_var)
    assert calls, "the fit did not run on the reduced design"
    _assert_same_fit(reduced, direct)
    assert direct.active.size >= 6 and reduced.converged
    # its evidence is that of the N rows (Tipping 2001, eq. 36), from the data themselves
    independent = fit_gaussian(Phi[:, reduced.active], t, reduced.alpha, reduced.beta)
    expected = independent.log_evidence(Prior(), noise_learned=noise_var is None)
    assert reduced.log_evidence == pytest.approx(expected, rel=1e-10)


def test_reduced_fit_starts_at_the_least_squares_bound(monkeypatch):
    """Every fixed point of eq. 46 has a noise variance of at least ``r^2 / N``, the
    least-squares residual of the whole basis per row, which the reduced design carries
    as its last entry. With many more rows than columns that bound is close to the
    optimum: the reduced fit starts there, runs one ascent (a second from the same start
    would repeat it; a reduced design runs no third or fourth), and reaches
    the direct fit, which starts lower and runs four."""
    Phi, t = _sparse_problem(8, n=4000, m=40, noise=3.0)
    starts = []
    init = _compiled.Ascent.__init__

    def recording(self, B, target, beta, **options):
        starts.append(1.0 / beta)
        init(self, B, target, beta, **options)

    monkeypatch.setattr(_compiled.Ascent, "__init__", recording)
    bound = _least_squares_rss(Phi, t) / t.size
    reduced = _fit(DenseBasis(Phi), t, reduce=True)
    assert starts == [pytest.approx(bound, rel=1e-10)]
    direct = _fit(DenseBasis(Phi), t, reduce=False)
    assert len(starts) == 5 and starts[1] < 0.1 * bound
    assert 1.0 / reduced.beta >= bound
    # the same optimum, each fit to its own tolerance: both certified (no action gains
    # more than tol, no re-estimate more than polish tol), so their log evidence agrees
    # to about M polish tol, and their predictions to sqrt(2 gain / beta) each
    np.testing.assert_array_equal(reduced.active, direct.active)
    gain = reduced.active.size * sequential.Schedule().polish * 1e-6
    assert reduced.log_evidence == pytest.approx(direct.log_evidence, abs=gain)
    assert reduced.beta == pytest.approx(direct.beta, rel=1e-6)
    predictions = [Phi[:, fit.active] @ fit.mu for fit in (reduced, direct)]
    np.testing.assert_allclose(*predictions, rtol=0, atol=2 * np.sqrt(2 * gain / reduced.beta))


def test_reduced_weighted_fit_is_the_direct_fit():
    Phi, t = _sparse_problem(5)
    weights = np.random.default_rng(6).uniform(0.2, 3.0, t.size)
    basis = RowWeightedBasis(DenseBasis(Phi), weights)
    target = np.sqrt(weights) * t
    _assert_same_fit(_fit(basis, target, reduce=True), _direct(basis, target))


@pytest.mark.parametrize("solver", [mackay, em])
@pytest.mark.parametrize("noise_var", [None, 0.09])
def test_reestimation_on_the_reduced_design_is_the_direct_fit(solver, noise_var, monkeypatch):
    """MacKay and EM re-estimate from the products too: on the reduced design they take
    the same iterations to the same fit, whose evidence is that of the N rows."""
    Phi, t = _sparse_problem(9)
    calls = []
    reduce = DenseBasis.reduce
    monkeypatch.setattr(DenseBasis, "reduce", lambda *a: calls.append(1) or reduce(*a))
    # EM's steps shrink near the optimum: a looser tolerance for it to converge
    tol = 1e-6 if solver is mackay else 1e-3
    options = {"prior": Prior(), "noise_var": noise_var, "max_iter": 20_000, "tol": tol}
    direct = solver.fit(DenseBasis(Phi), t, **options, schedule=Schedule(dense_bytes=2**40))
    assert not calls
    reduced = solver.fit(DenseBasis(Phi), t, **options, schedule=Schedule(dense_bytes=0))
    assert calls, "the fit did not run on the reduced design"
    _assert_same_fit(reduced, direct)
    assert reduced.n_iter == direct.n_iter
    assert reduced.converged and reduced.active.size >= 6
    independent = fit_gaussian(Phi[:, reduced.active], t, reduced.alpha, reduced.beta)
    expected = independent.log_evidence(Prior(), noise_learned=noise_var is None)
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
    direct = mackay.fit(basis, target, **options, schedule=Schedule(dense_bytes=2**40))
    reduced = mackay.fit(basis, target, **options, schedule=Schedule(dense_bytes=0))
    _assert_same_fit(reduced, direct)
    assert reduced.converged


def test_compiled_path_holds_a_basis_up_to_dense_bytes():
    shape = (100, 8)  # 6,400 bytes of doubles
    assert Schedule(dense_bytes=6400).holds(shape)
    assert not Schedule(dense_bytes=6399).holds(shape)


def test_reduction_is_taken_only_when_it_pays():
    tall = DenseBasis(np.ones((100, 8)))  # 6,400 bytes, a factor of 9^2 doubles
    assert Schedule(dense_bytes=6399).reduces(tall.shape)
    assert not Schedule(dense_bytes=6400).reduces(tall.shape)
    assert not Schedule(dense_bytes=0, reduced_bytes=8 * 80).reduces(tall.shape)
    square = DenseBasis(np.ones((17, 8)))  # fewer than twice as many rows as columns
    assert not Schedule(dense_bytes=0).reduces(square.shape)


def test_reduced_fit_on_the_large_path_learns_the_noise_of_the_n_rows(monkeypatch):
    """When the compiled loop gives up (it returns None on a loss of positive
    definiteness) the reduced design goes to the large path, whose noise update (eq. 46)
    must take N from the data, not from the n + 1 rows of the factor."""
    Phi, t = _sparse_problem(7)
    monkeypatch.setattr(sequential, "_fit_compiled", lambda *args: None)
    options = {"prior": Prior(), "noise_var": None, "max_iter": 10_000, "tol": 1e-6}
    reduced = sequential.fit(
        DenseBasis(Phi), t, **options, schedule=sequential.Schedule(dense_bytes=0)
    )
    direct = sequential.fit(
        DenseBasis(Phi), t, **options,
        schedule=sequential.Schedule(dense_bytes=0, reduced_bytes=0),
    )  # fmt: skip
    _assert_same_fit(reduced, direct)
    assert reduced.converged
