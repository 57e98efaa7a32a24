"""Predictions of any fit at new design rows or inputs (:func:`predict`).

Where the predictions come from:

- a fit of a model that :func:`~bayes_rvm.build_model` declared (:func:`sample`,
  :func:`fit_vi`, :func:`to_inference_data`, or ``pm.sample`` of such a model with
  ``model=``): the package's closed forms for the likelihood the model records, through
  the posterior draws of ``w`` (drawn exactly from ``p(w | alpha, beta, t)`` first for the
  collapsed form);
- a fit of any other model (your own, with :func:`~bayes_rvm.rvm_weights`): the model's own
  graph, with ``model=`` (or inside ``with model:``): its observed variable, its
  distribution and every term of its mean, at the data set with ``pm.set_data``.

The likelihood is never guessed from variable names.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pymc as pm
import xarray as xr

from bayes_rvm._validation import check_design
from bayes_rvm.inference._draws import _dataset, _numpy_rng, _set_group
from bayes_rvm.inference._graph import graph_draws
from bayes_rvm.inference.export import _attach_predictions, _complete, _fitted, _record_inputs
from bayes_rvm.pymc_model import declared, model_spec

#: ``fit`` attribute of the trees that the package's own fitting functions return
PACKAGE_FITS = ("mcmc", "vi", "evidence")


def _check_new_design(design, n_basis: int, X_new, Phi_new) -> np.ndarray | None:
    if X_new is not None and Phi_new is not None:
        raise ValueError("give new inputs as X_new or as design rows Phi_new, not both")
    if X_new is not None:
        if design is None:
            raise ValueError(
                "X_new needs a model that holds the map from inputs to design rows "
                "(model_from_estimator, or build_model(..., design=...)), given as model=; "
                "otherwise pass the design rows as Phi_new"
            )
        Phi_new = design(X_new)
    if Phi_new is None:
        return None
    Phi_new = check_design(Phi_new, "Phi_new")
    if Phi_new.shape[1] != n_basis:
        raise ValueError(
            f"expected Phi_new with {n_basis} columns (the model's basis functions), got "
            f"shape {Phi_new.shape}"
        )
    return Phi_new


def _model_of(tree: xr.DataTree, model) -> pm.Model | None:
    """``model`` as given, else the model of an enclosing ``with model:`` block (for a fit
    of the package's own, only a model :func:`~bayes_rvm.build_model` declared), else None."""
    if model is not None:
        if not isinstance(model, pm.Model):
            raise TypeError(f"model must be a pymc.Model, got {type(model).__name__}")
        _check_observed(tree, model)
        return model
    context = pm.Model.get_context(error_if_none=False)
    if context is not None and tree.attrs.get("fit") in PACKAGE_FITS and declared(context) is None:
        return None
    return context


def _check_observed(tree: xr.DataTree, model: pm.Model) -> None:
    """Refuse a model whose observed data are not the tree's: it is not the model the
    tree is a fit of (or its data were set to other rows)."""
    if "observed_data" not in tree.children:
        return
    observed = tree["observed_data"]
    for rv in model.observed_RVs:
        if rv.name not in observed.data_vars:
            continue
        value = np.asarray(model.rvs_to_values[rv].eval())
        if value.shape != observed[rv.name].shape or not np.array_equal(
            value, observed[rv.name].values
        ):
            raise ValueError(
                f"the model's observed {rv.name!r} is not the tree's observed data: pass the "
                "model the tree is a fit of, with its training data (pm.set_data back to "
                "them if they were changed)"
            )


def package_likelihood(tree: xr.DataTree, model: pm.Model | None):
    """``(likelihood, design)`` when the package's closed forms apply, ``None`` when the
    model's own graph must be used."""
    if model is not None:
        if declared(model) is None:
            return None
        spec = model_spec(model)
        return spec.likelihood, spec.design
    if tree.attrs.get("fit") in PACKAGE_FITS and "likelihood" in tree.attrs:
        return str(tree.attrs["likelihood"]), None
    raise ValueError(
        "this DataTree does not say which model it is a fit of (a pm.sample result?): pass "
        "model=model (or call inside `with model:`), so that the predictions use the "
        "model's own likelihood and mean"
    )


def _graph_predictions(tree, model, Phi_new, data, random_seed) -> xr.DataTree:
    seed = _numpy_rng(random_seed).integers(2**31)
    name, dims, arrays, values = graph_draws(tree, model, Phi_new, data, seed=seed)
    out = tree.copy()
    coords = {
        dim: np.arange(size) for dim, size in zip(dims, arrays["draw"].shape[2:], strict=True)
    }
    variables = {
        "mean": (("chain", "draw", *dims), arrays["mean"]),
        name: (("chain", "draw", *dims), arrays["draw"]),
    }
    _set_group(out, "predictions", _dataset(variables, coords))
    constant = {
        key: (tuple(f"{key}_dim_{i}" for i in range(np.ndim(v))), v) for key, v in values.items()
    }
    _set_group(out, "predictions_constant_data", _dataset(constant, {}))
    out.attrs["predictions_from"] = "the model's graph"
    return out


def predict(
    tree: xr.DataTree,
    Phi_new=None,
    X_new=None,
    random_seed=None,
    *,
    model: pm.Model | None = None,
    data: Mapping | None = None,
) -> xr.DataTree:
    """Predictions of any fit, from the model it is a fit of.

    Parameters
    ----------
    tree : DataTree
        A fit from :func:`sample`, :func:`fit_vi` or :func:`to_inference_data`, or
        ``pm.sample`` of any model (then give ``model``).
    Phi_new : array of shape (N_new, M), optional
        New design rows; default: the training rows (the posterior predictive). For a
        model of your own, they replace the ``pm.Data`` design given to its
        :func:`~bayes_rvm.rvm_weights` block.
    X_new : array, optional
        New inputs, for a model that holds its basis functions
        (:func:`model_from_estimator`), given as ``model``: the map from inputs to design
        rows is held by the model, not by the tree (it is code, which a netCDF file cannot
        store), so a tree alone, also one loaded from disk, predicts at ``Phi_new`` only.
    random_seed : int, optional
    model : pymc.Model, optional
        The model the tree is a fit of; by default the model of an enclosing
        ``with model:`` block. Needed for ``pm.sample`` results and for ``X_new``.
    data : mapping, optional
        Further ``pm.Data`` values of your own model at the new points (such as a group
        index), set with ``pm.set_data`` on a copy of the model.

    Returns
    -------
    DataTree
        A copy of ``tree`` with ``predictions`` and ``predictions_constant_data``. For a
        model declared by :func:`~bayes_rvm.build_model`: ``f`` (mean function, or logits)
        and ``t`` (a new target) per draw, computed in closed form; where the posterior
        has no ``w`` (collapsed form), ``w`` is first drawn exactly from
        ``p(w | alpha, beta, t)`` (Tipping 2001, eq. 12-13). For any other model: the
        observed variable (under its own name) drawn from the model's distribution, and
        ``mean``, its mean given each draw.

    Raises
    ------
    ValueError
        When the tree does not say what model it is a fit of and no ``model`` is given;
        for ``X_new`` without a model, or with a model that holds no map from inputs to
        design rows.
    """
    model = _model_of(tree, model)
    if X_new is not None and model is None:
        raise ValueError(
            "X_new needs the map from inputs to design rows, which the model holds and a "
            "DataTree does not (the map is the fitted basis: kernel, centres, scales, code "
            "that a netCDF file cannot store): pass the model the tree is a fit of, "
            "predict(tree, X_new=..., model=model), or the design rows as Phi_new"
        )
    known = package_likelihood(tree, model)
    if known is None:
        if X_new is not None:
            raise ValueError(
                "this model holds no map from inputs to design rows (only models from "
                "build_model(..., design=...) or model_from_estimator do): pass the design "
                "rows as Phi_new, and other data of the model as data="
            )
        return _graph_predictions(tree, model, Phi_new, data, random_seed)
    if data:
        raise ValueError(
            "data= sets further pm.Data of a model of your own; this fit is of a model "
            "declared by build_model, whose only data are Phi (Phi_new / X_new)"
        )
    likelihood, design = known
    fitted = _fitted(tree, likelihood)
    Phi_new = _check_new_design(design, fitted.Phi.shape[1], X_new, Phi_new)
    if Phi_new is None:
        Phi_new = fitted.Phi
    rng = _numpy_rng(random_seed)
    out = tree.copy()
    if "w" not in out["posterior"]:
        if fitted.likelihood != "gaussian" or fitted.t is None:
            raise ValueError(
                "expected a posterior w, or alpha and beta of a Gaussian model with "
                "observed_data t"
            )
        out = _complete(out, fitted, {}, Phi_new, rng, {})
    else:
        _attach_predictions(out, fitted, Phi_new, rng)
    _record_inputs(out, X_new)
    return out
