"""Compiled passes over the rows of a matrix held in memory (numba).

Imported on first use (:func:`bayes_rvm._blocks.weighted_sq_norms`), so that importing the
package does not import numba.
"""

from __future__ import annotations

import numba
import numpy as np

from bayes_rvm._progress import announce_compilation

announce_compilation()

__all__ = ["row_weighted_sq_norms"]


@numba.njit(cache=True, nogil=True)
def row_weighted_sq_norms(Phi, weights):
    """``sum_i (Phi_ij Phi_ij) w_i`` for every ``j``, accumulated row by row in the order
    and with the products of ``np.einsum("ij,ij,i->j", ...)`` on a C-ordered ``Phi``."""
    n_rows, n_columns = Phi.shape
    out = np.zeros(n_columns)
    for i in range(n_rows):
        w = weights[i]
        for j in range(n_columns):
            out[j] += (Phi[i, j] * Phi[i, j]) * w
    return out
