"""Work over a design matrix in blocks, for :mod:`bayes_rvm.basis`: threads, weighted
column norms, the QR folding of row blocks into a triangular factor, and the pass over a
symmetric kernel matrix that evaluates each pair of inputs once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from joblib import effective_n_jobs
from scipy.linalg import lapack
from threadpoolctl import threadpool_limits

__all__ = [
    "PASS_GROUPS",
    "fold_rows",
    "in_threads",
    "reduce_blocks",
    "square_pairs",
    "symmetric_matrix",
    "symmetric_pass",
    "weighted_sq_norms",
]

#: The square blocks of a pass over a symmetric kernel matrix are summed in this many
#: groups, the unit of its threads (:func:`symmetric_pass`): a pass in ``n_jobs`` threads
#: uses at most this many, and gives the bits of one thread.
PASS_GROUPS = 4

#: ``(I, J, K_IJ)``: the row slice, column slice and values of a square block.
Block = tuple[slice, slice, np.ndarray]


def weighted_sq_norms(Phi: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """``diag(Phi^T W Phi)`` for ``W = diag(weights)`` (the identity when ``None``).

    With weights and a C-ordered ``Phi``, one compiled pass over the rows
    (:func:`bayes_rvm._row_pass.row_weighted_sq_norms`); the three-operand ``einsum`` it
    replaces gives the same bits in 2.5 times the time."""
    if weights is None:
        return np.einsum("ij,ij->j", Phi, Phi)
    if Phi.flags.c_contiguous:
        from bayes_rvm._row_pass import row_weighted_sq_norms  # numba, on first use

        return row_weighted_sq_norms(Phi, weights)
    return np.einsum("ij,ij,i->j", Phi, Phi, weights)


def fold_rows(R: np.ndarray, rows: np.ndarray, triangular: bool = False) -> np.ndarray:
    """The upper-triangular factor of ``[R; rows]``: ``R'`` with ``R'^T R' = R^T R +
    rows^T rows``.

    One Householder QR of the stacked matrix that exploits the triangle of ``R`` (LAPACK
    ``dtpqrt``, ``2 n^2 m`` flops for ``m`` rows of ``n`` columns); ``Q`` is not formed.
    ``triangular``: ``rows`` is itself upper triangular and square (another factor), which
    LAPACK exploits too. ``R`` and ``rows`` may be overwritten; the strictly lower triangle
    of ``R`` is neither read nor written (zero stays zero).
    """
    n = R.shape[1]
    if rows.shape[0] == 0:
        return R
    R, _, _, info = lapack.dtpqrt(
        n if triangular else 0,
        min(64, n),
        np.asfortranarray(R),
        np.asfortranarray(rows),
        overwrite_a=1,
        overwrite_b=1,
    )
    if info != 0:  # only an invalid argument makes dtpqrt fail
        raise RuntimeError(f"LAPACK dtpqrt failed with info={info}")
    return R  # dtpqrt leaves the strictly lower triangle as it was


def reduce_blocks(blocks: Iterable[np.ndarray], n_columns: int) -> np.ndarray:
    """The upper-triangular factor of the row blocks stacked (each ``(rows, n_columns)``)."""
    R = np.zeros((n_columns, n_columns), order="F")
    for block in blocks:
        R = fold_rows(R, block)
    return R


def in_threads(work: Callable, tasks: list, n_jobs: int | None) -> list:
    """``[work(task) for task in tasks]``, in ``n_jobs`` threads (joblib's convention:
    ``None`` one, ``-1`` every core) of one BLAS thread each when there are several: for
    blocks of a basis, whose kernel evaluations and products release the GIL."""
    jobs = min(effective_n_jobs(n_jobs), len(tasks))
    if jobs <= 1:
        return [work(task) for task in tasks]
    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(work, tasks))


def square_pairs(n: int, side: int) -> Iterator[tuple[slice, slice]]:
    """``(I, J)`` for the square blocks ``I <= J`` of an ``n x n`` symmetric matrix, sides of
    ``side`` rows, in row-major order: each pair of rows once."""
    for i in range(0, n, side):
        for j in range(i, n, side):
            yield slice(i, min(i + side, n)), slice(j, min(j + side, n))


def symmetric_pass(
    blocks: Callable[[list], Iterable[Block]],
    pairs: list,
    V: np.ndarray | None,
    weights: np.ndarray | None,
    outs: tuple[np.ndarray | None, np.ndarray | None],
    n_jobs: int | None,
) -> None:
    """``K^T V`` and ``diag(K^T W K)`` of a symmetric ``K`` given by its square blocks
    ``K_IJ``, ``I <= J`` (``pairs``, from :func:`square_pairs`; ``blocks(pairs)`` evaluates
    them as they are reached), written into ``outs = (product, norms)`` (either ``None``:
    not computed).

    Each block serves the columns ``J`` (through its rows ``I``) and, off the diagonal, the
    columns ``I`` (rows ``J``), so a pass evaluates about half the matrix. The blocks (in
    row-major order) are dealt to :data:`PASS_GROUPS` groups in turn; each group sums its
    blocks into arrays of its own (the first into ``outs``), and the groups' sums are added
    in group order, whether the groups run one after another or in ``n_jobs`` threads: the
    same bits with any number of threads. With at most as many blocks as groups that is the
    sum in row-major order, and with one block the product of the whole matrix, to the last
    digit."""
    groups = [pairs[g::PASS_GROUPS] for g in range(min(PASS_GROUPS, len(pairs)))]
    for out in outs:
        if out is not None:
            out[...] = 0.0

    def accumulate(g: int) -> tuple:
        own = outs if g == 0 else tuple(out if out is None else np.zeros_like(out) for out in outs)
        own_product, own_norms = own
        for left, right, K in blocks(groups[g]):
            mirrored = left != right
            if own_product is not None and V is not None:
                own_product[right] += K.T @ V[left]
                if mirrored:
                    own_product[left] += K @ V[right]
            if own_norms is not None:
                own_norms[right] += weighted_sq_norms(
                    K, None if weights is None else weights[left]
                )
                if mirrored:
                    own_norms[left] += weighted_sq_norms(
                        K.T, None if weights is None else weights[right]
                    )
        return own

    def add(part: tuple) -> None:
        for out, summand in zip(outs, part, strict=True):
            if out is not None:
                out += summand

    if effective_n_jobs(n_jobs) > 1:
        for part in in_threads(accumulate, list(range(len(groups))), n_jobs)[1:]:
            add(part)
    else:  # one group's arrays at a time
        for g in range(len(groups)):
            part = accumulate(g)
            if g:
                add(part)


def symmetric_matrix(n: int, blocks: Iterable[Block], out: np.ndarray | None = None) -> np.ndarray:
    """The C-ordered, exactly symmetric ``n x n`` matrix of the square blocks ``I <= J`` of
    :func:`square_pairs`: each block written once and mirrored, a diagonal block's upper
    triangle mirrored into its lower one; written into ``out`` when given."""
    K = np.empty((n, n)) if out is None else out
    for left, right, block in blocks:
        if left == right:
            block = np.triu(block) + np.triu(block, 1).T
        else:
            K[right, left] = block.T
        K[left, right] = block
    return K
