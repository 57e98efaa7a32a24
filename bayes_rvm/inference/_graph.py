"""Predictions of a model that :func:`~bayes_rvm.build_model` did not declare, from its graph.

The observed variable, its distribution and every term of its mean are the model's own:
the model is copied (``clone_model``), its data are set at the new points
(``pm.set_data``), and one compiled function of the free variables gives, per posterior
draw, the mean of the observed variable (:func:`pymc.distributions.moments.mean` of its
distribution), a draw of it, and its log density at given test targets (``pm.logp``).
Nothing is read from variable names but the data the caller names.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pymc as pm
from pymc.distributions.moments import mean as distribution_mean
from pymc.model.fgraph import clone_model
from pymc.pytensorf import compile as compile_pymc
from pytensor.tensor.random.basic import BernoulliRV

from bayes_rvm.inference._draws import _flat
from bayes_rvm.pymc_model import BLOCK_DESIGN


def observed_variable(model: pm.Model):
    """The model's one observed variable (refused when it has none or several)."""
    observed = list(model.observed_RVs)
    if len(observed) != 1:
        raise ValueError(
            f"expected a model with one observed variable to predict, got "
            f"{[rv.name for rv in observed]}"
        )
    return observed[0]


def observed_is_binary(model: pm.Model) -> bool:
    """Whether the model's observed variable is Bernoulli (read from its distribution)."""
    return isinstance(observed_variable(model).owner.op, BernoulliRV)


def _new_data(model: pm.Model, Phi_new, data) -> dict[str, np.ndarray]:
    """The ``pm.set_data`` values: ``data`` and ``Phi_new`` for the RVM block's design."""
    values = {name: np.asarray(value) for name, value in dict(data or {}).items()}
    unknown = [name for name in values if name not in model.named_vars]
    if unknown:
        raise ValueError(
            f"data {unknown} are not variables of the model; expected pm.Data names among "
            f"{sorted(v.name for v in model.data_vars)}"
        )
    if Phi_new is not None:
        blocks = [v.name for v in model.data_vars if getattr(v.tag, BLOCK_DESIGN, False)]
        if len(blocks) != 1:
            raise ValueError(
                "Phi_new replaces the pm.Data design of the model's rvm_weights block; this "
                f"model has {len(blocks)} such designs ({blocks}): pass each as data={{name: "
                "rows}} instead (declare the design with pm.Data to make it replaceable)"
            )
        values[blocks[0]] = np.asarray(Phi_new, dtype=np.float64)
    return values


def _resize_coords(model: pm.Model, values: Mapping) -> dict:
    """New labels ``0..n-1`` for the first dim of every data variable whose length changes."""
    coords = {}
    for name, value in values.items():
        dims = model.named_vars_to_dims.get(name)
        if dims and dims[0] in model.coords and len(model.coords[dims[0]]) != len(value):
            coords[dims[0]] = np.arange(len(value))
    return coords


def graph_draws(tree, model: pm.Model, Phi_new=None, data=None, t_value=None, seed=None):
    """Per posterior draw of ``tree``: mean and a draw of the observed variable at the new
    data, and its log density at ``t_value`` when given.

    Returns ``(name, dims, arrays)`` with ``arrays`` the dict ``mean``, ``draw`` (and
    ``log_density``), each of shape ``(chain, draw, ...)``, and ``values`` the data set.
    """
    copy = clone_model(model)
    values = _new_data(copy, Phi_new, data)
    if values:
        with copy:
            pm.set_data(values, coords=_resize_coords(copy, values))
    observed = observed_variable(copy)
    posterior = tree["posterior"]
    missing = [rv.name for rv in copy.free_RVs if rv.name not in posterior]
    if missing:
        raise ValueError(
            f"the tree's posterior has no draws of the model's free variables {missing}: "
            "pass the model the tree was sampled from"
        )
    outputs = [distribution_mean(observed), observed]
    inputs = list(copy.free_RVs)
    if t_value is not None:
        value = observed.type()
        outputs.append(pm.logp(observed, value))
        inputs.append(value)
    function = compile_pymc(inputs, outputs, random_seed=seed, on_unused_input="ignore")
    n_chain, n_draw = posterior.sizes["chain"], posterior.sizes["draw"]
    draws = [_flat(posterior[rv.name]) for rv in copy.free_RVs]
    extra = [] if t_value is None else [np.asarray(t_value, dtype=observed.dtype)]
    results = [function(*(d[s] for d in draws), *extra) for s in range(n_chain * n_draw)]
    arrays = {
        key: np.stack([r[i] for r in results]).reshape(n_chain, n_draw, *results[0][i].shape)
        for i, key in enumerate(("mean", "draw", "log_density")[: len(outputs)])
    }
    dims = copy.named_vars_to_dims.get(observed.name) or tuple(
        f"{observed.name}_dim_{i}" for i in range(observed.ndim)
    )
    return observed.name, tuple(dims), arrays, values
