"""The lazy design matrix equals the dense one, block by block."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from bayes_rvm._basis_views import RowWeightedBasis, ScaledBasis
from bayes_rvm._blocks import weighted_sq_norms
from bayes_rvm.basis import DenseBasis, ExtraColumns, KernelBasis, as_basis
from bayes_rvm.kernels import RBF, CallableKernel, Laplacian, Linear, LinearSpline, Polynomial


@pytest.fixture(params=["symmetric", "columns"])
def basis(rng, request):
    """A kernel basis in several blocks: square blocks of a symmetric kernel matrix, or
    (a wrapped function, not known to be symmetric) blocks of columns."""
    X = rng.normal(size=(23, 2))
    kernel = RBF(0.4) if request.param == "symmetric" else CallableKernel(RBF(0.4))
    B = KernelBasis(X, kernel, extra=["linear", ("cube", lambda Z: Z[:, 0] ** 3)])
    B._block = B._square = 4  # force several blocks, the last one ragged
    dense = np.column_stack([RBF(0.4)(X, X), np.ones(23), X, X[:, 0] ** 3])
    return B, dense


def test_layout_and_names(basis):
    B, dense = basis
    assert B.shape == dense.shape
    assert B.column_names[-4:] == ["bias", "x1", "x2", "cube"]
    np.testing.assert_allclose(B.toarray(), dense, rtol=1e-14)


def test_blocked_products_equal_dense(basis, rng):
    B, dense = basis
    V = rng.normal(size=(23, 3))
    np.testing.assert_allclose(B.transpose_dot(V), dense.T @ V, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(B.transpose_dot(V[:, 0]), dense.T @ V[:, 0], atol=1e-12)
    np.testing.assert_allclose(B.sq_norms(), np.sum(dense**2, axis=0), rtol=1e-12)
    product, norms = B.transpose_dot_with_norms(V)  # one pass, both results
    np.testing.assert_allclose(product, dense.T @ V, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(norms, np.sum(dense**2, axis=0), rtol=1e-12)
    idx = [3, 23, 25, 0]
    np.testing.assert_allclose(B.cross(idx), dense.T @ dense[:, idx], rtol=1e-12, atol=1e-12)
    # weighted norms diag(Phi^T W Phi), as the classification solver's mode updates use
    w = rng.uniform(0.0, 0.25, size=23)
    for b in (B, DenseBasis(dense)):
        product, norms = b.transpose_dot_with_norms(V, weights=w)
        np.testing.assert_allclose(product, dense.T @ V, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(norms, np.diag(dense.T @ (w[:, None] * dense)), rtol=1e-12)


@pytest.mark.parametrize(
    "kernel", [RBF(0.4), RBF([0.2, 1.5]), Laplacian(0.3), LinearSpline(), Polynomial(2), Linear()]
)
def test_kernels_said_to_be_symmetric_are(kernel, rng):
    """A pass evaluates each pair of inputs once when the kernel says k(x, y) = k(y, x)."""
    assert kernel.symmetric
    X, Y = rng.normal(size=(7, 2)), rng.normal(size=(5, 2))
    np.testing.assert_allclose(kernel(X, Y), kernel(Y, X).T, rtol=1e-14)


def test_a_basis_function_not_symmetric_gets_its_own_columns(rng):
    """centres = inputs, but phi_j(x) = k(x, x_j) is not k(x_j, x): the pass must not
    take the symmetric blocks."""
    X = rng.normal(size=(23, 2))
    kernel = CallableKernel(
        lambda A, C: np.exp(-((A[:, None, 0] - C[None, :, 0]) ** 2)) * (2 + A[:, 1:2])
    )
    B = KernelBasis(X, kernel, bias=False)
    B._block = B._square = 4
    dense = kernel(X, X)
    V = rng.normal(size=(23, 2))
    product, norms = B.transpose_dot_with_norms(V)
    np.testing.assert_allclose(product, dense.T @ V, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(norms, np.sum(dense**2, axis=0), rtol=1e-12)


@pytest.mark.parametrize("jobs", [2, 3])
def test_passes_in_threads(basis, rng, jobs, monkeypatch):
    """With ``n_jobs`` the blocks of a pass are evaluated and multiplied in a pool of that
    many threads, never in the calling one: the products and norms of one thread to the
    last bit, over column blocks (each writes rows of its own) and over square blocks
    (21 of them, summed in ``PASS_GROUPS`` groups whichever thread runs them)."""
    import copy
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from bayes_rvm import _blocks

    B, dense = basis
    threaded = copy.copy(B)
    threaded.n_jobs = jobs
    pools, seen = [], set()

    class Recording(ThreadPoolExecutor):
        def __init__(self, workers):
            pools.append(workers)
            super().__init__(workers)

    def kernel(X, centres):
        seen.add(threading.get_ident())
        return KernelBasis._kernel(threaded, X, centres)

    monkeypatch.setattr(_blocks, "ThreadPoolExecutor", Recording)
    threaded._kernel = kernel
    V, w = rng.normal(size=(23, 3)), rng.uniform(0.0, 0.25, size=23)
    product, norms = threaded.transpose_dot_with_norms(V, weights=w)
    assert pools == [jobs] and seen and threading.get_ident() not in seen
    np.testing.assert_allclose(product, dense.T @ V, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(norms, np.diag(dense.T @ (w[:, None] * dense)), rtol=1e-12)
    alone = B.transpose_dot_with_norms(V, weights=w)
    again = threaded.transpose_dot_with_norms(V, weights=w)
    for value, one, repeat in zip((product, norms), alone, again, strict=True):
        np.testing.assert_array_equal(value, repeat)
        np.testing.assert_array_equal(value, one)
    np.testing.assert_allclose(threaded.sq_norms(), np.sum(dense**2, axis=0), rtol=1e-12)


def test_evaluate_new_inputs(basis, rng):
    B, _ = basis
    Xn = rng.normal(size=(4, 2))
    idx = np.array([0, 5, 23, 24, 26])
    expected = np.column_stack([RBF(0.4)(Xn, B.X[[0, 5]]), np.ones(4), Xn[:, 0], Xn[:, 0] ** 3])
    np.testing.assert_allclose(B.evaluate(Xn, idx), expected, rtol=1e-13)
    np.testing.assert_allclose(B.evaluate(B.X, idx), B.columns(idx), rtol=1e-13)


def test_quadratic_terms():
    X = np.array([[1.0, 2.0], [3.0, -1.0]])
    values, names = ExtraColumns(["quadratic"]).evaluate(X)
    assert names == ["x1*x1", "x1*x2", "x2*x2"]
    np.testing.assert_allclose(values, [[1, 2, 4], [9, -3, 1]])


def test_dense_basis_and_errors(rng):
    Phi = rng.normal(size=(5, 3))
    B = as_basis(Phi)
    assert isinstance(B, DenseBasis)
    assert as_basis(B) is B
    np.testing.assert_allclose(B.cross([2]), Phi.T @ Phi[:, [2]])
    with pytest.raises(ValueError, match="NaN"):
        as_basis(np.array([[np.nan]]))
    with pytest.raises(ValueError, match="2 dimensions"):
        as_basis(np.ones(3))
    with pytest.raises(IndexError):
        KernelBasis(Phi, RBF(1.0)).columns([9])
    with pytest.raises(ValueError, match="unknown extra column"):
        ExtraColumns(["cubic"])
    with pytest.raises(TypeError, match="extra column"):
        ExtraColumns([42])


def test_scaled_basis_with_known_norms_needs_no_norm_pass(rng):
    """Given the wrapped basis's squared norms, a scaled basis returns the norms a pass
    would compute (to the bit) and never asks the wrapped basis for them again."""
    lazy = KernelBasis(rng.normal(size=(30, 2)), RBF(0.5))
    scales = np.sqrt(lazy.sq_norms())
    V = rng.normal(size=(30, 3))
    products, norms = ScaledBasis(lazy, scales).transpose_dot_with_norms(V)

    class NoNorms(KernelBasis):
        def transpose_dot_with_norms(self, V, weights=None):
            raise AssertionError("a second pass for the column norms")

        def sq_norms(self):
            raise AssertionError("a second pass for the column norms")

    known = ScaledBasis(NoNorms(lazy.X, RBF(0.5)), scales, lazy.sq_norms())
    known_products, known_norms = known.transpose_dot_with_norms(V)
    np.testing.assert_array_equal(known_products, products)
    np.testing.assert_array_equal(known_norms, norms)
    np.testing.assert_array_equal(known.sq_norms(), norms)


def test_wrapped_basis_fills_its_matrix_in_column_blocks(basis, rng, monkeypatch):
    """Basis.toarray of a wrapped basis (row weights, column scales on top of them) in
    blocks of a few columns equals the dense matrix: every block lands in its own
    columns."""
    from bayes_rvm import basis as basis_module

    B, dense = basis
    monkeypatch.setattr(basis_module, "BLOCK_BYTES", 8 * 23 * 3)  # blocks of 3 columns
    scales = rng.uniform(0.5, 2.0, dense.shape[1])
    weights = rng.uniform(0.0, 2.0, 23)
    weighted = RowWeightedBasis(B, weights)
    expected = np.sqrt(weights)[:, None] * dense
    np.testing.assert_allclose(weighted.toarray(), expected, rtol=1e-14)
    np.testing.assert_allclose(
        ScaledBasis(weighted, scales).toarray(), expected / scales, rtol=1e-14
    )


def test_scaled_kernel_basis_is_its_matrix_divided_in_place(basis, rng):
    """A kernel basis divides its own fresh matrix by the scales (one array, its kernel
    blocks as they come), every call a new array, so that a caller may change it."""
    B, dense = basis
    scales = rng.uniform(0.5, 2.0, dense.shape[1])
    scaled = ScaledBasis(B, scales)
    first = scaled.toarray()
    np.testing.assert_allclose(first, dense / scales, rtol=1e-14)
    first[:] = 0.0
    np.testing.assert_allclose(scaled.toarray(), dense / scales, rtol=1e-14)


@pytest.mark.parametrize("solver", ["sequential", "mackay"])
def test_a_small_kernel_basis_is_evaluated_once_per_fit(solver, monkeypatch, counting_rbf):
    """fit_type2 on a kernel basis of at most BLOCK_BYTES evaluates its matrix once: the
    column norms, the scaled matrix and the solver's products all come from it, and the
    fit is the fit of that matrix given as an array. A larger basis stays lazy (here: the
    norms' pass over half the square blocks, then the matrix)."""
    from bayes_rvm import basis as basis_module
    from bayes_rvm import fit_type2

    X = np.linspace(-10, 10, 60)[:, None]
    t = np.sinc(X[:, 0] / np.pi) + np.random.default_rng(3).normal(0.0, 0.1, 60)
    fit = fit_type2(KernelBasis(X, counting_rbf(0.25)), t, solver=solver)
    assert counting_rbf.evaluated == 60 * 60
    given = fit_type2(KernelBasis(X, RBF(0.25)).toarray(), t, solver=solver)
    assert fit.log_evidence == given.log_evidence
    np.testing.assert_array_equal(fit.active, given.active)
    assert isinstance(KernelBasis(X, RBF(0.25)).evaluated(), DenseBasis)

    monkeypatch.setattr(basis_module, "BLOCK_BYTES", 8 * 60 * 30)
    lazy = KernelBasis(X, counting_rbf(0.25))
    assert lazy.evaluated() is lazy
    counting_rbf.evaluated = 0
    fit_lazy = fit_type2(lazy, t, solver=solver)
    assert counting_rbf.evaluated > 60 * 60
    np.testing.assert_allclose(fit_lazy.log_evidence, fit.log_evidence, rtol=1e-9)


def test_dense_scaled_array_is_a_new_array(rng):
    Phi = rng.normal(size=(7, 3))
    scales = np.array([1.0, 2.0, 4.0])
    scaled = DenseBasis(Phi).scaled_array(scales)
    np.testing.assert_array_equal(scaled, Phi / scales)
    scaled[:] = 0.0
    assert np.all(Phi != 0.0)


def test_importing_the_package_does_not_import_numba():
    """The compiled loops and row passes import numba on their first use."""
    code = "import sys, bayes_rvm; assert 'numba' not in sys.modules, 'numba imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("shape", [(1, 1), (0, 3), (3, 0), (37, 5), (300, 211), (1000, 3)])
def test_weighted_sq_norms_are_the_diagonal_of_the_weighted_gram_matrix(shape, rng):
    """The compiled pass over a C-ordered matrix: the diagonal of ``Phi^T W Phi``, and the
    bits of the ``einsum`` it stands for (the fits' rounding does not depend on the
    layout of the design); other layouts and no weights take ``einsum`` itself."""
    Phi = rng.standard_normal(shape) * rng.exponential(size=shape[1])
    weights = rng.random(shape[0])
    norms = weighted_sq_norms(Phi, weights)
    np.testing.assert_allclose(norms, np.diag(Phi.T @ (weights[:, None] * Phi)), rtol=1e-13)
    np.testing.assert_array_equal(norms, np.einsum("ij,ij,i->j", Phi, Phi, weights))
    np.testing.assert_allclose(weighted_sq_norms(np.asfortranarray(Phi), weights), norms)
    np.testing.assert_allclose(weighted_sq_norms(Phi, None), np.sum(Phi**2, axis=0))


def test_the_transpose_of_a_square_symmetric_kernel_basis_is_its_kernel_matrix(rng):
    """The classification path's ``Phi^T`` of the RVM's square basis, written straight
    from the kernel blocks (here 4 x 4 of them) and scaled in place: C-ordered, its kernel
    part exactly symmetric before the scaling (each block mirrored), and the scaled
    matrix's transpose to rounding; held in memory, the scaled basis is that matrix.
    Other bases are held as their matrix."""
    X = rng.normal(size=(70, 3))
    basis = KernelBasis(X, RBF(0.4), extra=["linear"])
    basis._square = 20  # square blocks of 20 x 20
    scales = rng.uniform(0.5, 2.0, basis.n_columns)
    transposed = ScaledBasis(basis, scales).transposed()
    assert transposed.flags.c_contiguous
    K = ScaledBasis(basis, np.ones(basis.n_columns)).transposed()[:70]
    np.testing.assert_array_equal(K, K.T)
    np.testing.assert_array_equal(transposed[:70], K / scales[:70, None])
    Phi = basis.toarray() / scales
    np.testing.assert_allclose(transposed, Phi.T, rtol=1e-14)
    held = ScaledBasis(basis, scales).in_memory()
    assert isinstance(held, DenseBasis)
    np.testing.assert_allclose(held.toarray(), Phi, rtol=1e-14)
    # not square, or a kernel not said to be symmetric: the scaled matrix itself
    for other in (
        KernelBasis(X, RBF(0.4), centres=X[:30]),
        KernelBasis(X, CallableKernel(lambda A, B: A @ B.T)),
    ):
        in_memory = ScaledBasis(other, np.full(other.n_columns, 2.0)).in_memory()
        assert isinstance(in_memory, DenseBasis)
        np.testing.assert_array_equal(in_memory.toarray(), other.toarray() / 2.0)
        assert in_memory.transposed().flags.c_contiguous
        np.testing.assert_array_equal(in_memory.transposed(), other.toarray().T / 2.0)
        scaled = ScaledBasis(other, np.full(other.n_columns, 2.0)).transposed()
        np.testing.assert_array_equal(scaled, other.toarray().T / 2.0)


def test_a_wrapping_basis_takes_the_threads_of_the_wrapped_one(rng):
    """``fit_type2`` hands the solvers a ``ScaledBasis`` (of a ``RowWeightedBasis`` with
    sample weights): the working set reads ``n_jobs`` from it."""
    B = KernelBasis(rng.normal(size=(9, 2)), RBF(0.5), n_jobs=2)
    weighted = RowWeightedBasis(B, np.ones(9))
    assert weighted.n_jobs == 2
    assert ScaledBasis(weighted, np.ones(B.n_columns)).n_jobs == 2
    assert ScaledBasis(KernelBasis(B.X, RBF(0.5)), np.ones(B.n_columns)).n_jobs is None
