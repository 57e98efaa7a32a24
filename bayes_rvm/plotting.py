"""Plots of fitted models with matplotlib: fits with error bars and relevance vectors."""

from __future__ import annotations

import numpy as np

__all__ = ["plot_regression_1d"]


def plot_regression_1d(model, X, y, *, truth=None, ax=None, n_grid: int = 400, title=None):
    """A 1-D regression fit: data, predictive mean +- 2 sd, truth, relevance vectors circled.

    Parameters
    ----------
    model : fitted RVR
    X, y : training inputs (n, 1) and targets
    truth : callable, optional
        The noise-free function, drawn in grey.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt

    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] != 1:
        raise ValueError(f"expected X of shape (n, 1), got {X.shape}")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    grid = np.linspace(X.min(), X.max(), n_grid)[:, None]
    mean, std = model.predict(grid, return_std=True)
    ax.fill_between(
        grid[:, 0], mean - 2 * std, mean + 2 * std, color="C0", alpha=0.2, label="mean ± 2 sd"
    )
    if truth is not None:
        ax.plot(grid[:, 0], truth(grid[:, 0]), color="0.5", lw=1, label="truth")
    ax.plot(grid[:, 0], mean, color="C0", lw=1.5, label="RVM mean")
    ax.plot(X[:, 0], y, ".", color="k", ms=3, label="data")
    idx = model.relevance_indices_
    ax.plot(
        X[idx, 0],
        np.asarray(y)[idx],
        "o",
        mfc="none",
        mec="C3",
        ms=9,
        label=f"{idx.size} relevance vectors",
    )
    ax.legend(loc="upper right", fontsize=7)
    if title:
        ax.set_title(title, fontsize=9)
    return ax
