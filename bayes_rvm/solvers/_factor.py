"""Compiled linear algebra of the sequential solver's step loop (:mod:`._steps`): the
Cholesky factor of ``H = A + beta Phi_a^T Phi_a``, its rank-one updates, the inverse from
it, triangular solves and matrix products.

The factor is held as ``U = L^T`` in C order (upper triangular, ``U^T U = H``), which is
the lower factor ``L`` in the column-major order of LAPACK: the factorisation, the inverse,
the solves and the products are LAPACK's and BLAS's (SciPy's ``cython_lapack`` and
``cython_blas``) called on the arrays in place, without numba's checks and copies around
``np.dot`` and ``np.linalg``. Their addresses are registered with LLVM under names of
this module, so that numba's cache holds calls by name, resolved when it is loaded (a
call through a ``ctypes`` pointer would put the address in the code and disable the
cache).
"""

from __future__ import annotations

import math
from typing import Any

import llvmlite.binding as llvm  # type: ignore[import-untyped]
import numba
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import get_cython_function_address, intrinsic

from bayes_rvm._progress import announce_compilation

announce_compilation()

__all__ = [
    "cholesky",
    "combine_rows",
    "copy_block",
    "copy_row",
    "forward",
    "forward_rows",
    "gemm",
    "inverse",
    "product",
    "solve",
    "update_factor",
]

_jit = numba.njit(cache=True, nogil=True)
# A function called from one place is compiled into its caller (numba's IR inlining):
# numba optimises and emits machine code for a compiled function together with all it
# calls, for each compiled caller and for the function on its own.
_inline = numba.njit(inline="always")


def _bind(library: str, name: str, n_args: int) -> Any:
    """SciPy's ``cython_<library>.<name>`` as a numba function of ``n_args`` pointers (the
    Fortran convention: every argument by reference), callable from compiled code only
    (a ``types.ExternalFunction``)."""
    symbol = f"bayes_rvm_{name}"
    llvm.add_symbol(symbol, get_cython_function_address(f"scipy.linalg.cython_{library}", name))
    return types.ExternalFunction(symbol, types.void(*[types.voidptr] * n_args))


_dpotrf = _bind("lapack", "dpotrf", 5)  # uplo, n, a, lda, info
_dpotri = _bind("lapack", "dpotri", 5)  # uplo, n, a, lda, info
_dpotrs = _bind("lapack", "dpotrs", 8)  # uplo, n, nrhs, a, lda, b, ldb, info
_dtrsm = _bind("blas", "dtrsm", 11)  # side, uplo, transa, diag, m, n, alpha, a, lda, b, ldb
_dtrsv = _bind("blas", "dtrsv", 8)  # uplo, trans, diag, n, a, lda, x, incx
_dgemv = _bind("blas", "dgemv", 11)  # trans, m, n, alpha, a, lda, x, incx, beta, y, incy
# transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc
_dgemm = _bind("blas", "dgemm", 13)

# The character arguments: LAPACK's lower triangle is the upper one of a C-ordered array
_LOWER, _NOT, _TRANSPOSE, _RIGHT = (ord(flag) for flag in "LNTR")


def _by_reference(kind: types.Type):
    """A numba intrinsic that passes a scalar as a Fortran argument of type ``kind``: a
    pointer to a stack slot of the calling function holding the converted value."""

    @intrinsic
    def reference(typingctx, value):
        def codegen(context, builder, signature, args):
            converted = context.cast(builder, args[0], signature.args[0], kind)
            slot = cgutils.alloca_once_value(builder, converted)
            return builder.bitcast(slot, cgutils.voidptr_t)

        return types.voidptr(value), codegen

    return reference


_char = _by_reference(types.uint8)  # CHARACTER
_int = _by_reference(types.int32)  # INTEGER (SciPy's interface: 32 bits)
_real = _by_reference(types.float64)  # DOUBLE PRECISION


@_jit
def copy_block(out, values):
    """``out[:m, :n] = values`` for ``values`` of shape ``(m, n)``."""
    m, n = values.shape
    for a in range(m):
        for b in range(n):
            out[a, b] = values[a, b]


@_jit
def copy_row(out, values):
    """``out[:n] = values`` for ``values`` of size ``n`` (a loop: a slice assignment from
    an array compiles numba's shape-mismatch message, string formatting included)."""
    for a in range(values.size):
        out[a] = values[a]


@_jit
def combine_rows(A, M, x, out):
    """``out = x[:M] A[:M]``, the first ``M`` rows of ``A`` (C order) weighted by ``x`` and
    summed: ``A[:M]^T x`` (BLAS ``dgemv``)."""
    n = A.shape[1]
    out[:] = 0.0  # BLAS leaves out as it was when M is 0
    _dgemv(
        _char(_NOT), _int(n), _int(M), _real(1.0), A.ctypes,
        _int(max(n, 1)), x.ctypes, _int(1), _real(0.0), out.ctypes,
        _int(1),
    )  # fmt: skip


@_jit
def product(A, x, out):
    """``out = A x`` for ``A`` in C order (BLAS ``dgemv``)."""
    rows, n = A.shape
    out[:] = 0.0
    _dgemv(
        _char(_TRANSPOSE), _int(n), _int(rows), _real(1.0),
        A.ctypes, _int(max(n, 1)), x.ctypes, _int(1), _real(0.0),
        out.ctypes, _int(1),
    )  # fmt: skip


@_inline
def gemm(transpose_b, m, n, k, alpha, A, lda, B, ldb, beta, out, ldc):
    """``out = alpha A op(B) + beta out`` in BLAS's column-major terms (``dgemm``): ``A`` is
    ``m x k`` with leading dimension ``lda``, ``op(B)`` is ``B`` (``k x n``) or, with
    ``transpose_b``, ``B^T`` (``B`` ``n x k``); a C-ordered array is the transpose of the
    matrix BLAS sees."""
    _dgemm(
        _char(_NOT), _char(_TRANSPOSE if transpose_b else _NOT), _int(m),
        _int(n), _int(k), _real(alpha), A.ctypes, _int(lda),
        B.ctypes, _int(ldb), _real(beta), out.ctypes, _int(ldc),
    )  # fmt: skip


@_inline
def cholesky(H):
    """``H`` (C order, symmetric) becomes ``U`` in place, upper triangular with ``U^T U =
    H`` (LAPACK ``dpotrf``); False when ``H`` is not positive definite (``info > 0``, a
    pivot not positive) or not finite (a pivot not finite: OpenBLAS's ``dpotrf`` takes
    the square root of a NaN pivot and reports success)."""
    M = H.shape[0]
    info = np.zeros(1, dtype=np.int32)
    _dpotrf(_char(_LOWER), _int(M), H.ctypes, _int(max(M, 1)), info.ctypes)
    finite = True
    for a in range(M):  # dpotrf leaves the other triangle as it was
        for b in range(a):
            H[a, b] = 0.0
        finite = finite and math.isfinite(H[a, a])
    return info[0] == 0 and finite


@_inline
def inverse(U):
    """``U`` (a factor of :func:`cholesky`) becomes ``H^-1 = U^-1 U^-T`` in place: the
    triangular inverse of the factor and its product with its transpose (LAPACK
    ``dpotri``), one triangle mirrored into the other."""
    M = U.shape[0]
    # info (not read) is 0: the diagonal of a factor from cholesky is positive
    _dpotri(_char(_LOWER), _int(M), U.ctypes, _int(max(M, 1)), _int(0))
    for a in range(M):
        for b in range(a):
            U[a, b] = U[b, a]


@_inline
def solve(U, b):
    """``b[:M] = H^-1 b[:M]`` for the factor ``U`` (``M x M``) of ``H``: two triangular
    solves (LAPACK ``dpotrs``)."""
    M = U.shape[0]
    ld = max(M, 1)
    # info (not read) is 0: the arguments are valid
    _dpotrs(_char(_LOWER), _int(M), _int(1), U.ctypes, _int(ld), b.ctypes, _int(ld), _int(0))


@_inline
def forward_rows(U, M, b):
    """``b = L^-1 b`` for ``L = U[:M, :M]^T`` and the ``M x n`` right-hand sides ``b`` (C
    order): in the column-major order of BLAS, ``b^T`` solved against ``L^T`` from the
    right (``dtrsm``)."""
    n = b.shape[1]
    _dtrsm(
        _char(_RIGHT), _char(_LOWER), _char(_TRANSPOSE),
        _char(_NOT), _int(n), _int(M), _real(1.0), U.ctypes,
        _int(U.shape[1]), b.ctypes, _int(max(n, 1)),
    )  # fmt: skip


@_jit
def forward(U, M, b):
    """``b[:M] = L^-1 b[:M]`` for ``L = U[:M, :M]^T`` (BLAS ``dtrsv``)."""
    _dtrsv(
        _char(_LOWER), _char(_NOT), _char(_NOT), _int(M),
        U.ctypes, _int(U.shape[1]), b.ctypes, _int(1),
    )  # fmt: skip


@_inline
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
