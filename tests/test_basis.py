"""The lazy design matrix equals the dense one, block by block."""

from __future__ import annotations

import numpy as np
import pytest

from bayes_rvm.basis import DenseBasis, ExtraColumns, KernelBasis, ScaledBasis, as_basis
from bayes_rvm.kernels import RBF


@pytest.fixture
def basis(rng):
    X = rng.normal(size=(23, 2))
    B = KernelBasis(X, RBF(0.4), extra=["linear", ("cube", lambda Z: Z[:, 0] ** 3)])
    B._block = 4  # force several blocks
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
    """Basis.toarray of a wrapped basis (column scales, row weights) in blocks of a few
    columns equals the dense matrix: every block lands in its own columns."""
    from bayes_rvm import basis as basis_module
    from bayes_rvm.basis import RowWeightedBasis

    B, dense = basis
    monkeypatch.setattr(basis_module, "BLOCK_BYTES", 8 * 23 * 3)  # blocks of 3 columns
    scales = rng.uniform(0.5, 2.0, dense.shape[1])
    weights = rng.uniform(0.0, 2.0, 23)
    np.testing.assert_allclose(ScaledBasis(B, scales).toarray(), dense / scales, rtol=1e-14)
    weighted = RowWeightedBasis(B, weights).toarray()
    np.testing.assert_allclose(weighted, np.sqrt(weights)[:, None] * dense, rtol=1e-14)
