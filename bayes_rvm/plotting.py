"""Plots of fitted models: fits with error bars and relevance vectors (matplotlib); log alpha
across fits and posterior predictive checks of DataTrees (ArviZ)."""

from __future__ import annotations

import numpy as np

__all__ = ["plot_log_alpha", "plot_ppc", "plot_regression_1d"]


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


def plot_log_alpha(fits, *, basis=None, **kwargs):
    """Forest plot of ``log alpha`` per basis function, one colour per fit.

    Parameters
    ----------
    fits : mapping name -> DataTree
        Fits with a posterior ``alpha`` (:func:`bayes_rvm.sample`, :func:`bayes_rvm.fit_vi`,
        :func:`bayes_rvm.to_inference_data`, or ``pm.sample`` of a model built with
        :func:`bayes_rvm.rvm_weights`). Pruned basis functions of evidence fits
        (``alpha = inf``) are left out of that fit's rows.
    basis : sequence, optional
        The basis functions to show (labels of the ``basis`` coordinate); default all.
    **kwargs
        Passed to ``arviz.plot_forest`` (e.g. ``ci_probs``). Each fit's draws are pooled
        over its chains and thinned evenly to the smallest number of draws among the fits,
        so that fits with different numbers of chains and draws line up.

    Returns
    -------
    arviz_plots.PlotCollection
    """
    import arviz as az
    import xarray as xr

    values = {}
    for name, tree in fits.items():
        log_alpha = np.log(tree["posterior"]["alpha"])
        values[name] = log_alpha.where(np.isfinite(log_alpha))
    if basis is None:
        # fits over different basis sets (the relevant ones of one fit, all of another)
        # are shown over the union of the basis functions some fit keeps
        kept = (
            v["basis"].values[v.notnull().any([d for d in v.dims if d != "basis"]).values]
            for v in values.values()
        )
        basis = list(dict.fromkeys(b for labels in kept for b in labels))
    # ArviZ lines the fits up draw by draw: pool each fit's chains (an evidence fit has one
    # chain, MCMC several) and thin evenly to the smallest number of draws among the fits
    pooled = {
        name: v.reindex(basis=list(basis)).stack(sample=("chain", "draw")).transpose("sample", ...)
        for name, v in values.items()
    }
    n_draws = min(v.sizes["sample"] for v in pooled.values())
    trees = {}
    for name, v in pooled.items():
        keep = np.round(np.linspace(0, v.sizes["sample"] - 1, n_draws)).astype(int)
        v = v.isel(sample=keep).drop_vars(["sample", "chain", "draw"]).rename(sample="draw")
        posterior = xr.Dataset({"log_alpha": v.expand_dims(chain=1)})
        trees[name] = xr.DataTree.from_dict({"posterior": posterior})
    kwargs.setdefault("combined", True)
    return az.plot_forest(trees, var_names=["log_alpha"], **kwargs)


def plot_ppc(tree, *, model=None, num_samples: int = 50, random_seed=None, **kwargs):
    """Posterior predictive check: replicated targets at the training rows against the data.

    The replicates come from :func:`bayes_rvm.predict` at the training rows: for a model
    that :func:`~bayes_rvm.build_model` declared, through ``w | alpha, beta, t``, so this is
    right for every form, the collapsed one included; for a model of your own (with
    ``model=``), from the model's graph: its observed variable, likelihood and every term
    of its mean.

    Parameters
    ----------
    tree : DataTree
        A fit with an ``observed_data`` group: from :func:`bayes_rvm.sample`,
        :func:`bayes_rvm.fit_vi` or :func:`bayes_rvm.to_inference_data`, or ``pm.sample``
        of any model (then give ``model``).
    model : pymc.Model, optional
        The model the tree is a fit of, as for :func:`bayes_rvm.predict` (by default the
        model of an enclosing ``with model:`` block); its data must be the training data.
    num_samples : int
        Replicated data sets drawn in the plot.
    random_seed : int, optional
    **kwargs
        Passed to ``arviz.plot_ppc_dist``.

    Returns
    -------
    arviz_plots.PlotCollection

    Raises
    ------
    ValueError
        When the replicates do not line up with the observed data (the model's data were
        set to other rows), or the tree has no ``observed_data``.
    """
    import arviz as az
    import xarray as xr

    from bayes_rvm.inference import predict

    if "observed_data" not in tree.children:
        raise ValueError("expected a fit with an observed_data group (the data to check)")
    predictions = predict(tree, random_seed=random_seed, model=model)["predictions"]
    observed = tree["observed_data"].to_dataset()
    names = [name for name in predictions.data_vars if name in observed]
    if len(names) != 1:
        raise ValueError(
            f"expected one observed variable among the predictions {list(predictions.data_vars)}"
            f", got the observed data {list(observed.data_vars)}"
        )
    name = names[0]
    draws = predictions[name].transpose("chain", "draw", ...)
    if draws.shape[2:] != observed[name].shape:
        raise ValueError(
            f"the replicates of {name!r} have shape {draws.shape[2:]} but the observed data "
            f"{observed[name].shape}: restore the model's training data (pm.set_data) "
            "before the check"
        )
    replicates = xr.Dataset(
        {name: (("chain", "draw", *observed[name].dims), draws.values)},
        coords={**observed[name].coords, "chain": draws["chain"], "draw": draws["draw"]},
    )
    plot_tree = xr.DataTree.from_dict(
        {"posterior_predictive": replicates, "observed_data": observed[[name]]}
    )
    return az.plot_ppc_dist(plot_tree, var_names=[name], num_samples=num_samples, **kwargs)
