"""Compiled factorisations of the sequential solver's step loop (:mod:`._steps`):
Cholesky factors, their rank-one updates, triangular inverses and triangular solves of
``H = A + beta Phi_a^T Phi_a``.

Below :data:`BLOCKED` active columns they are scalar loops; from there LAPACK's Cholesky
and blocked triangular products (BLAS-3).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from bayes_rvm._progress import announce_compilation

announce_compilation()

__all__ = [
    "BLOCKED",
    "add_block",
    "cholesky",
    "cholesky_lapack",
    "copy_block",
    "forward",
    "forward_rows",
    "lower_gram_blocked",
    "lower_inverse",
    "lower_inverse_blocked",
    "update_factor",
]

_jit = numba.njit(cache=True, nogil=True)


# numba compiles an array expression over a block of a larger array (``Sigma[:M, :M] -=
# T``) into a generic strided loop: 3.3 ns per element against 0.6 ns for the two loops
# below (550 x 550 of a 640 x 640 array), the same operations on every element.
@_jit
def add_block(out, values, sign):
    """``out[:m, :n] += sign values`` for ``values`` of shape ``(m, n)`` and ``sign`` of
    +1 or -1 (``x + (-v)`` is ``x - v`` to the bit)."""
    m, n = values.shape
    for a in range(m):
        for b in range(n):
            out[a, b] += sign * values[a, b]


@_jit
def copy_block(out, values, transpose):
    """``out[:m, :n] = values`` (``transpose``: ``values.T``, ``values`` of shape
    ``(n, m)``)."""
    if transpose:
        n, m = values.shape
        for a in range(m):
            for b in range(n):
                out[a, b] = values[b, a]
    else:
        m, n = values.shape
        for a in range(m):
            for b in range(n):
                out[a, b] = values[a, b]


@_jit
def cholesky(H, L):
    """Lower Cholesky factor of the SPD ``H`` into ``L``; False when not positive definite."""
    M = H.shape[0]
    for j in range(M):
        acc = H[j, j]
        for k in range(j):
            acc -= L[j, k] * L[j, k]
        if not acc > 0.0:
            return False
        d = math.sqrt(acc)
        L[j, j] = d
        for i in range(j + 1, M):
            acc = H[i, j]
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            L[i, j] = acc / d
        for i in range(j):
            L[i, j] = 0.0
    return True


# From this many active columns a factorisation takes LAPACK's Cholesky and blocked
# triangular products (BLAS-3); below, the scalar loops are as fast.
BLOCKED = 128
_BLOCK = 64  # block size of the triangular inverse and product


@_jit
def cholesky_lapack(H):
    """Lower Cholesky factor of the SPD ``H`` (LAPACK); an empty array when ``H`` is not
    positive definite."""
    try:
        return np.linalg.cholesky(H)
    except Exception:  # LinAlgError: not positive definite (or not finite)
        return np.zeros((0, 0))


@_jit
def lower_inverse(L):
    """``L^-1`` of a lower-triangular ``L``, row by row."""
    M = L.shape[0]
    Linv = np.zeros((M, M))
    for i in range(M):  # row i of L^-1: (e_i - L[i, :i] L^-1[:i]) / L_ii
        Linv[i, i] = 1.0
        for k in range(i):
            lik = L[i, k]
            if lik != 0.0:
                for j in range(k + 1):
                    Linv[i, j] -= lik * Linv[k, j]
        inverse = 1.0 / L[i, i]
        for j in range(i + 1):
            Linv[i, j] *= inverse
    return Linv


@_jit
def lower_inverse_blocked(L):
    """``L^-1`` of a lower-triangular ``L`` by blocks of rows: ``X_II = L_II^-1`` and
    ``X_I,:I = -X_II (L_I,:I X_:I,:I)``, the off-diagonal blocks by matrix products."""
    M = L.shape[0]
    X = np.zeros((M, M))
    for i0 in range(0, M, _BLOCK):
        i1 = min(i0 + _BLOCK, M)
        X[i0:i1, i0:i1] = lower_inverse(np.ascontiguousarray(L[i0:i1, i0:i1]))
        if i0:
            T = np.dot(np.ascontiguousarray(L[i0:i1, :i0]), np.ascontiguousarray(X[:i0, :i0]))
            copy_block(X[i0:i1, :i0], -np.dot(np.ascontiguousarray(X[i0:i1, i0:i1]), T), False)
    return X


@_jit
def lower_gram_blocked(X, out):
    """``out[:M, :M] = X^T X`` for a lower-triangular ``X``: block row ``K`` of ``X`` is
    zero right of its diagonal block, so it adds ``X_K,:k1^T X_K,:k1`` to the leading
    ``k1 x k1`` block only (a third of the full product's flops)."""
    M = X.shape[0]
    for a in range(M):  # a loop, not ``out[:M, :M] = 0.0``: see add_block
        for b in range(M):
            out[a, b] = 0.0
    for k0 in range(0, M, _BLOCK):
        k1 = min(k0 + _BLOCK, M)
        rows = np.ascontiguousarray(X[k0:k1, :k1])
        add_block(out, np.dot(np.ascontiguousarray(rows.T), rows), 1.0)


@_jit
def forward_rows(U, M, b, out):
    """``out[:M] = L^-1 b[:M]`` for ``L = U[:M, :M]^T`` (``U`` upper triangular) and the
    ``M x n`` right-hand sides ``b``, by forward substitution: block row ``K`` of the
    solution is ``L_KK^-1 (b_K - L_K,:K out_:K)``, the product by BLAS and the diagonal
    block a row of ``U`` at a time, along contiguous rows of ``b`` and ``out``."""
    n = b.shape[1]
    for k0 in range(0, M, _BLOCK):
        k1 = min(k0 + _BLOCK, M)
        acc = b[k0:k1].copy()
        if k0:
            # L_K,:K = U[:k0, K]^T
            acc -= np.dot(np.ascontiguousarray(U[:k0, k0:k1].T), out[:k0])
        for k in range(k0, k1):
            d = U[k, k]
            for m in range(n):
                out[k, m] = acc[k - k0, m] / d
            for a in range(k + 1, k1):
                u = U[k, a]
                if u != 0.0:
                    for m in range(n):
                        acc[a - k0, m] -= u * out[k, m]


@_jit
def forward(U, M, b, out):
    """``out[:M] = L^-1 b[:M]`` for ``L = U^T`` (``U`` upper triangular), a column of
    ``L`` (a row of ``U``) at a time; each ``out[a]`` takes the same operations in the
    same order as the inner-product form ``(b_a - sum_{k<a} L_ak out_k) / L_aa``."""
    acc = b[:M].copy()
    for k in range(M):
        out[k] = acc[k] / U[k, k]
        for a in range(k + 1, M):
            acc[a] -= U[k, a] * out[k]


@_jit
def update_factor(U, M, p, delta):
    """``L = U^T`` becomes the factor of ``L L^T + delta e_p e_p^T`` (the precision ``H``
    after ``alpha_p`` changes by ``delta``): a rank-one update (``delta > 0``) or
    downdate, in ``O((M - p)^2)`` on rows of ``U``; False when the downdate loses positive
    definiteness."""
    sign = 1.0 if delta > 0.0 else -1.0
    x = np.zeros(M)
    x[p] = math.sqrt(abs(delta))
    for k in range(p, M):
        lkk = U[k, k]
        r2 = lkk * lkk + sign * x[k] * x[k]
        if not r2 > 0.0:
            return False
        r = math.sqrt(r2)
        cos, sin = r / lkk, x[k] / lkk
        U[k, k] = r
        for i in range(k + 1, M):
            U[k, i] = (U[k, i] + sign * sin * x[i]) / cos
            x[i] = cos * x[i] - sin * U[k, i]
    return True
