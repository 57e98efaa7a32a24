"""The hierarchical sparse Bayesian model (Tipping 2001, eq. 4-6) declared in PyMC.

:func:`rvm_weights` is the RVM prior as a block to use inside any ``pm.Model``: it
declares ``alpha`` (with ``log_alpha``) and returns the weights ``w``. :func:`build_model`
composes it with a likelihood (:data:`LIKELIHOODS`) and never samples: fitting is
:mod:`bayes_rvm.inference`. Three parameterisations of the same joint density are offered
(:data:`PARAMETERIZATIONS`):

``"centred"``
    ``w_i ~ N(0, 1/alpha_i)`` sampled directly. The posterior of ``(log alpha_i, w_i)``
    is a funnel: as ``alpha_i`` grows, ``w_i`` is squeezed towards 0, and NUTS diverges
    in the neck.
``"noncentred"``
    ``z_i ~ N(0, 1)``, ``w_i = z_i / sqrt(alpha_i)`` (a deterministic). The prior funnel
    is removed; the likelihood can bring some of it back for well-determined weights.
``"collapsed"`` (Gaussian likelihood only; the default there)
    ``w`` is integrated out: ``t ~ N(0, C)`` with ``C = beta^-1 I + Phi A^-1 Phi^T``
    (eq. 15, 34), so only ``log alpha`` and ``log beta`` are sampled; the fit then draws
    ``w`` exactly from ``p(w | alpha, beta, t)`` (eq. 12-13) for every posterior draw.
    The observed ``t``'s pointwise log density is the ``N`` exact leave-one-out
    conditionals ``log p(t_n | t_-n, alpha, beta)``, and the potential ``t_coupling``
    completes their sum to ``log N(t | 0, C)`` (see :func:`build_model`).

What the model needs to predict travels with it
-----------------------------------------------
:func:`build_model` declares the design matrix as ``pm.Data("Phi")`` and records on that
variable (its PyTensor ``tag``) the likelihood it declared and, when given, the map
``design: X_new -> Phi_new`` of the fitted basis (:func:`bayes_rvm.model_from_estimator`
passes the estimator's own basis: kernel and centres, learned scales, bias and extra
columns). PyTensor copies a variable's tag with the variable, so the record survives
``pymc.model.fgraph.clone_model``, ``pm.do``, ``pm.observe`` and ``pm.set_data`` (which
changes the value, not the variable); every model has its own ``Phi`` variable, so two
models never share a design, however equal their training matrices. Any basis the
estimators accept, a callable kernel included, maps new inputs this way. A model that
:func:`build_model` did not declare (your own model with :func:`rvm_weights`) holds no
such map: predict it at new design rows (``Phi_new``) and, for other data of its own,
:func:`bayes_rvm.predict`'s ``data``; the likelihood and every term of its mean then come
from its graph. The rest of the description (:class:`ModelSpec`, :func:`model_spec`: the
parameterisation and the priors) is read from the variables ``alpha``, ``beta``, ``z`` /
``w`` and the observed ``t``.

Choosing the hyperprior
-----------------------
The paper's default ``a = b = c = d = 0`` (uniform on ``log alpha``) is fine for the
type-II point estimate but makes the posterior improper: when ``alpha_i -> inf`` the
likelihood tends to the finite value it has without basis function ``i``, so the
posterior mass over ``log alpha_i`` is infinite. MCMC and VI need proper Gamma priors.
``alpha_i ~ Gamma(a, b)`` has mean ``a / b``; ``b = a s^2`` gives prior precision
``1 / s^2``, i.e. weights of typical size ``s``. ``a`` about 2 keeps the prior broad on the
log scale (sd of ``log alpha`` about 0.8) while bounding it away from the improper limit;
larger ``a`` concentrates it. The same for the noise: ``beta ~ Gamma(c, d)`` with
``d = c sigma^2`` for a guessed noise sd ``sigma``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.pytensorf import constant_fold
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Variable
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.basic import BernoulliRV, CategoricalRV, NormalRV, StudentTRV
from pytensor.tensor.random.op import RandomVariable

from bayes_rvm._collapsed import COLLAPSED_CLASS, collapsed_likelihood
from bayes_rvm._validation import (
    check_design,
    check_noise_var,
    check_nonnegative,
    check_target,
    lookup,
)
from bayes_rvm.likelihoods import LIKELIHOODS as _REGISTRY

__all__ = [
    "LIKELIHOODS",
    "PARAMETERIZATIONS",
    "ModelSpec",
    "build_model",
    "model_spec",
    "rvm_weights",
]

#: Likelihood names accepted by :func:`build_model`: the entries of the likelihood registry
#: (:mod:`bayes_rvm.likelihoods`) that have a PyMC term.
LIKELIHOODS = tuple(name for name, entry in _REGISTRY.items() if entry.pymc)

#: Parameterisation names: the weight-space forms of :func:`rvm_weights` and the
#: collapsed (Gaussian) form of :func:`build_model`.
PARAMETERIZATIONS = ("noncentred", "centred", "collapsed")

#: Likelihoods with a noise precision ``beta``.
_NOISY = ("gaussian", "student_t")


@dataclass(frozen=True)
class ModelSpec:
    """What :mod:`bayes_rvm.inference` knows about a model, read from its variables.

    Attributes
    ----------
    likelihood : str
        One of :data:`LIKELIHOODS`.
    parameterization : str
        One of :data:`PARAMETERIZATIONS`.
    a, b, c, d : float, array or None
        The Gamma hyperparameters when they are constants of the model (``None`` when they
        are random, as in a hierarchical prior, and ``c, d`` for a model without a learned
        noise precision).
    noise_var : float or None
        The fixed noise variance (``beta`` a constant, also after ``pm.do``), ``None``
        when ``beta`` is learned or absent.
    design : callable or None
        Maps new inputs ``X`` to design rows over the model's columns: known for models
        built with ``design=`` (such as :func:`bayes_rvm.inference.model_from_estimator`),
        held by the model itself (see the module notes), ``None`` otherwise.
    """

    likelihood: str
    parameterization: str
    a: float | np.ndarray | None
    b: float | np.ndarray | None
    c: float | None
    d: float | None
    noise_var: float | None
    design: Callable[[np.ndarray], np.ndarray] | None = None


#: attribute of the ``pm.Data("Phi")`` variable's ``tag`` where :func:`build_model` records
#: what it declared. PyTensor copies a variable's tag with the variable, so the record
#: survives ``clone_model``, ``pm.do``, ``pm.observe`` and ``pm.set_data`` (which keeps the
#: variable and changes its value); each model's ``Phi`` is its own variable.
_RECORD = "bayes_rvm"

#: tag attribute that :func:`rvm_weights` sets on a ``pm.Data`` design it is given: the
#: data that ``Phi_new`` replaces in :func:`bayes_rvm.predict` of a model of your own
BLOCK_DESIGN = "bayes_rvm_block"


@dataclass(frozen=True)
class _Declared:
    """What :func:`build_model` records on the ``Phi`` of the model it declares."""

    likelihood: str
    design: Callable[[np.ndarray], np.ndarray] | None


def declared(model: pm.Model) -> _Declared | None:
    """The record :func:`build_model` left on the model's ``Phi``; ``None`` for other models."""
    Phi = model.named_vars.get("Phi") if isinstance(model, pm.Model) else None
    return None if Phi is None else getattr(Phi.tag, _RECORD, None)


def model_design(model: pm.Model) -> Callable[[np.ndarray], np.ndarray] | None:
    """``X_new -> design rows`` held by a model built with ``design=``, else ``None``."""
    record = declared(model)
    return None if record is None else record.design


# ---------------------------------------------------------------------------------------
# The model description, read from the graph
# ---------------------------------------------------------------------------------------


def _constant(variable) -> float | np.ndarray | None:
    """The value of a graph that depends on no random variable (``None`` if it does).

    Shared variables count as constants: ``pm.do`` turns an intervened variable into one.
    Folded by graph rewriting, without compiling a function.
    """
    if isinstance(variable, SharedVariable):
        value = variable.get_value()
    elif any(
        node.owner is not None and isinstance(node.owner.op, RandomVariable)
        for node in ancestors([variable])
    ):
        return None
    else:
        (value,) = constant_fold([variable], raise_not_constant=False)
        if isinstance(value, Variable):
            return None
    value = np.asarray(value, dtype=np.float64)
    if np.all(value == value.flat[0]):
        return float(value.flat[0])
    return value


def _likelihood_of(op) -> str | None:
    if type(op).__name__ == COLLAPSED_CLASS or isinstance(op, NormalRV):
        return "gaussian"
    for kind, name in (
        (StudentTRV, "student_t"),
        (BernoulliRV, "bernoulli"),
        (CategoricalRV, "categorical"),
    ):
        if isinstance(op, kind):
            return name
    return None


def _describe(model) -> str:
    if not isinstance(model, pm.Model):
        return f"a {type(model).__name__}"
    return "a pymc.Model that build_model did not declare"


def model_spec(model: pm.Model) -> ModelSpec:
    """The :class:`ModelSpec` of a model declared by :func:`build_model`.

    The likelihood and the design are the record :func:`build_model` left on the model's
    ``Phi`` (checked against the distribution of the observed ``t`` in the graph); the
    priors are read from the variables ``alpha`` and ``beta``. Copies made by
    ``clone_model``, ``pm.do`` or ``pm.observe`` keep both.

    Raises
    ------
    TypeError
        When ``model`` is not a ``pymc.Model`` declared by :func:`build_model`.
    """
    record = declared(model)
    if record is None:
        raise TypeError(
            f"expected a pymc.Model returned by bayes_rvm.build_model (or "
            f"model_from_estimator), got {_describe(model)}. For a model of your own (built "
            "with bayes_rvm.rvm_weights), sample it with pm.sample(model=model) and predict "
            "with bayes_rvm.predict(tree, model=model), which uses the model's own likelihood"
        )
    names = model.named_vars
    t = names.get("t")
    likelihood = None if t is None or t.owner is None else _likelihood_of(t.owner.op)
    if likelihood != record.likelihood or t not in model.observed_RVs:
        raise TypeError(
            f"expected the observed 't' that build_model declared (likelihood "
            f"{record.likelihood!r}); this copy of the model has "
            f"{'no observed t' if t not in model.observed_RVs else repr(likelihood)}: "
            "sample it with pm.sample and predict with bayes_rvm.predict(tree, model=model)"
        )
    names = model.named_vars
    if type(t.owner.op).__name__ == COLLAPSED_CLASS:
        parameterization = "collapsed"
    elif "z" in names:
        parameterization = "noncentred"
    else:
        parameterization = "centred"
    alpha = model["alpha"]
    a = b = None
    if alpha in model.free_RVs and alpha.owner is not None:
        # PyTensor's Gamma takes (shape, scale): the rate b is 1 / scale
        a, scale = (_constant(v) for v in alpha.owner.inputs[-2:])
        b = None if scale is None else 1.0 / scale
    c = d = noise_var = None
    if "beta" in names:
        beta = model["beta"]
        if beta in model.free_RVs:
            c, scale = (_constant(v) for v in beta.owner.inputs[-2:])
            d = None if scale is None else 1.0 / scale
        else:
            value = _constant(beta)
            noise_var = None if value is None else 1.0 / float(value)
    return ModelSpec(likelihood, parameterization, a, b, c, d, noise_var, record.design)


# ---------------------------------------------------------------------------------------
# The RVM prior as a block
# ---------------------------------------------------------------------------------------


def _check_proper(shape, rate, names: str, what: str, example: str) -> None:
    if np.any(np.asarray(shape) == 0.0) or np.any(np.asarray(rate) == 0.0):
        raise ValueError(
            f"{names} = {np.min(shape):g}, {np.min(rate):g} is an improper Gamma hyperprior on "
            f"{what}: its density does not integrate to one, and with it the posterior is "
            f"improper (the likelihood stays finite as {what} -> 0 or infinity, so the "
            "posterior mass is infinite). Type-II maximum likelihood copes with that "
            "(fit_type2, RVR), but MCMC and VI need a proper prior: both values > 0, e.g. "
            f"{example}."
        )


def _hyperparameter(value, name: str):
    """A PyMC/PyTensor variable as given, or a float / array checked to be finite and >= 0."""
    if isinstance(value, Variable):
        return value
    if np.ndim(value) == 0:
        return np.float64(check_nonnegative(value, name))
    array = np.asarray(value)
    if array.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a real number, an array or a PyMC variable, got {array}")
    array = array.astype(np.float64)
    if not np.all(np.isfinite(array)) or np.any(array < 0):
        raise ValueError(f"{name} must be finite and >= 0 everywhere, got {array}")
    return array


def _weight_prior(a, b):
    """``a, b`` checked: PyMC variables as given, numbers finite and > 0."""
    a, b = _hyperparameter(a, "a"), _hyperparameter(b, "b")
    if not isinstance(a, Variable) and not isinstance(b, Variable):
        _check_proper(a, b, "a, b", "each alpha_i", "a = 2, b = 2 s**2 for weights of size s")
    return a, b


def _declare_alpha(a, b, dims, prefix: str = ""):
    """``alpha ~ Gamma(a, b)`` and the deterministic ``log_alpha`` over ``dims``."""
    a, b = _weight_prior(a, b)
    # Tipping (2001) eq. 6 with the Gamma hyperprior of eq. 35 (sampled on the log scale)
    alpha = pm.Gamma(f"{prefix}alpha", alpha=a, beta=b, dims=dims)
    pm.Deterministic(f"{prefix}log_alpha", pt.log(alpha), dims=dims)
    return alpha


def _dims_tuple(dims) -> tuple[str, ...]:
    return (dims,) if isinstance(dims, str) else tuple(dims)


def _check_block_design(Phi, model: pm.Model, dims: tuple[str, ...]) -> None:
    """``Phi`` must be a matrix with one column per label of ``dims[0]`` (made if missing)."""
    Phi_tensor = Phi if isinstance(Phi, Variable) else pt.as_tensor(check_design(Phi))
    if Phi_tensor.ndim != 2:
        raise ValueError(
            f"expected Phi with 2 dimensions (rows, basis functions), got {Phi_tensor.ndim}"
        )
    n_basis = int(Phi_tensor.shape[1].eval())
    if dims[0] in model.dim_lengths:
        known = int(model.dim_lengths[dims[0]].eval())
        if known != n_basis:
            raise ValueError(
                f"the model's coordinate {dims[0]!r} has {known} labels but Phi has {n_basis} "
                "columns (one per basis function): give the block a dims name of its own"
            )
    else:
        model.add_coord(dims[0], np.arange(n_basis))


def _check_prior_shape(value, name: str, shape: tuple[int, ...], dims) -> None:
    if isinstance(value, Variable):
        return
    try:
        np.broadcast_shapes(np.shape(value), shape)
    except ValueError:
        raise ValueError(
            f"expected {name} to be a number or an array of shape {shape} (dims {dims}), got "
            f"shape {np.shape(value)}"
        ) from None


def rvm_weights(
    Phi, a, b, *, parameterization: str = "noncentred", dims="basis", name: str | None = None
):
    """Declare the RVM prior on the weights inside the current ``pm.Model``; return ``w``.

    ``alpha ~ Gamma(a, b)`` over ``dims`` (Tipping 2001, eq. 6 with the hyperprior of
    eq. 35), ``log_alpha = log(alpha)`` as a deterministic, and ``w ~ N(0, 1/alpha)``
    (eq. 5), centred or non-centred.

    Parameters
    ----------
    Phi : array or PyTensor variable of shape (N, M)
        The design matrix; its number of columns sizes the ``"basis"`` dimension when the
        model has no such coordinate yet.
    a, b : float, array or PyMC variable
        Shape and rate of the Gamma prior on each ``alpha``. Floats and arrays must be
        > 0 (a proper prior). PyMC variables give a hierarchical prior, e.g.
        ``b = pm.LogNormal("b", 0, 1)``.
    parameterization : {"noncentred", "centred"}
        ``"noncentred"`` declares ``z ~ N(0, 1)`` and the deterministic
        ``w = z / sqrt(alpha)``; ``"centred"`` declares ``w`` itself.
    dims : str or tuple of str
        Dims of ``alpha`` and ``w``: ``"basis"``, or e.g. ``("basis", "class")`` for one
        weight per basis function and class. The first is the basis: its coordinate must
        have one label per column of ``Phi`` (it is created when missing).
    name : str, optional
        Prefix of the block's variables (``f"{name}_alpha"``, ``f"{name}_w"``, ...), so that
        several blocks live in one model (give each its own ``dims``); default: no prefix.

    Returns
    -------
    TensorVariable
        ``w``.

    Examples
    --------
    A hierarchical prior on the scale of the weights, with a Student-t likelihood:

    >>> import numpy as np, pymc as pm
    >>> from bayes_rvm import rvm_weights
    >>> Phi = np.random.default_rng(0).normal(size=(20, 3))
    >>> with pm.Model(coords={"basis": ["x0", "x1", "x2"]}) as model:
    ...     scale = pm.HalfNormal("scale", 1.0)
    ...     w = rvm_weights(Phi, 2.0, 2.0 * scale**2)
    ...     t = pm.StudentT("t", nu=4, mu=Phi @ w, sigma=0.1, observed=Phi @ [1.0, 0, -1.0])
    >>> sorted(model.named_vars)
    ['alpha', 'log_alpha', 'scale', 't', 'w', 'z']
    """
    if parameterization not in ("noncentred", "centred"):
        raise ValueError(
            f"unknown parameterization {parameterization!r} for rvm_weights; expected "
            "'noncentred' or 'centred' (the collapsed form integrates w out and is a "
            "likelihood of build_model)"
        )
    if name is not None and (not isinstance(name, str) or not name):
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    prefix = "" if name is None else f"{name}_"
    model = pm.modelcontext(None)
    dims = _dims_tuple(dims)
    _check_block_design(Phi, model, dims)
    unknown = [dim for dim in dims[1:] if dim not in model.dim_lengths]
    if unknown:
        raise ValueError(f"dims {unknown} need coordinates in the model (pm.Model(coords=...))")
    shape = tuple(int(model.dim_lengths[dim].eval()) for dim in dims)
    _check_prior_shape(a, "a", shape, dims)
    _check_prior_shape(b, "b", shape, dims)
    if isinstance(Phi, SharedVariable):  # the design that predict's Phi_new replaces
        setattr(Phi.tag, BLOCK_DESIGN, True)
    alpha = _declare_alpha(a, b, dims, prefix)
    if parameterization == "centred":
        # Tipping (2001) eq. 5: p(w | alpha) = prod_i N(w_i | 0, alpha_i^-1)
        return pm.Normal(f"{prefix}w", mu=0.0, sigma=1.0 / pt.sqrt(alpha), dims=dims)
    z = pm.Normal(f"{prefix}z", mu=0.0, sigma=1.0, dims=dims)
    # Tipping (2001) eq. 5, non-centred: w_i = z_i / sqrt(alpha_i) ~ N(0, alpha_i^-1)
    return pm.Deterministic(f"{prefix}w", z / pt.sqrt(alpha), dims=dims)


# ---------------------------------------------------------------------------------------
# Likelihoods given w
# ---------------------------------------------------------------------------------------


def _noise_sigma(beta):
    return 1.0 / pt.sqrt(beta)


def _gaussian(Phi, w, beta, nu, t) -> None:
    # Tipping (2001) eq. 5: t ~ N(Phi w, beta^-1 I)
    sigma = _noise_sigma(beta)
    pm.Normal("t", mu=Phi @ w, sigma=sigma, observed=t, shape=Phi.shape[0], dims="obs")


def _student_t(Phi, w, beta, nu, t) -> None:
    # robust regression: t_n ~ StudentT(nu, phi_n^T w, beta^-1/2)
    sigma = _noise_sigma(beta)
    pm.StudentT("t", nu=nu, mu=Phi @ w, sigma=sigma, observed=t, shape=Phi.shape[0], dims="obs")


def _bernoulli(Phi, w, beta, nu, t) -> None:
    # Tipping (2001) eq. 23: P(t = 1 | w) = sigmoid(phi(x)^T w)
    pm.Bernoulli("t", logit_p=Phi @ w, observed=t, shape=Phi.shape[0], dims="obs")


def _categorical(Phi, w, beta, nu, t) -> None:
    # Bishop (2006) eq. 7.120-7.121 (RVM multiclass): P(t = k | w) = softmax_k(Phi w)
    pm.Categorical("t", logit_p=Phi @ w, observed=t, shape=Phi.shape[0], dims="obs")


_LIKELIHOOD_TERMS = {
    "gaussian": _gaussian,
    "student_t": _student_t,
    "bernoulli": _bernoulli,
    "categorical": _categorical,
}


def _coords(coords, n_obs: int, n_basis: int, classes) -> dict:
    out = {"obs": np.arange(n_obs), "basis": np.arange(n_basis)}
    if classes is not None:
        out["class"] = np.asarray(classes)
    for name, values in dict(coords or {}).items():
        if name not in out:
            raise ValueError(f"unknown coordinate {name!r}; expected one of {sorted(out)}")
        values = np.asarray(values)
        if values.shape != out[name].shape:
            raise ValueError(
                f"coords[{name!r}] must have length {out[name].size}, got shape {values.shape}"
            )
        out[name] = values
    return out


def _check_targets(likelihood: str, t, n_rows: int):
    """Targets as the likelihood needs them, and the class labels (classification)."""
    if likelihood == "categorical":
        labels = np.asarray(t)
        if labels.ndim == 2 and labels.shape[1] == 1:
            labels = labels[:, 0]
        if labels.shape != (n_rows,):
            raise ValueError(f"expected t of length {n_rows} (one per row), got {labels.shape}")
        classes, codes = np.unique(labels, return_inverse=True)
        if classes.size < 2:
            raise ValueError(f"likelihood='categorical' needs at least 2 classes, got {classes}")
        return codes.astype(np.int64), classes
    t = check_target(t, n_rows)
    if likelihood == "bernoulli":
        if not np.all((t == 0) | (t == 1)):
            raise ValueError("likelihood='bernoulli' needs targets t in {0, 1}")
        return t.astype(np.int64), None
    return t, None


def _noise_options(likelihood, c, d, noise_var, nu):
    """Checked ``c, d, noise_var, nu`` for the likelihood."""
    if likelihood not in _NOISY:
        if any(v is not None for v in (c, d, noise_var)):
            raise ValueError(
                f"likelihood={likelihood!r} has no noise precision: leave c, d and noise_var unset"
            )
    elif noise_var is not None:
        if c is not None or d is not None:
            raise ValueError("give either noise_var (fixed beta) or c, d (its prior), not both")
        noise_var = check_noise_var(noise_var)
    else:
        if c is None or d is None:
            raise ValueError(
                f"likelihood={likelihood!r} with a learned noise needs the Gamma(c, d) prior on "
                "beta: give c and d (e.g. c = 2, d = 2 sigma**2 for a noise sd sigma), or "
                "noise_var"
            )
        c, d = check_nonnegative(c, "c"), check_nonnegative(d, "d")
        _check_proper(c, d, "c, d", "beta", "c = 2, d = 2 sigma**2 for a noise sd sigma")
    if nu is not None:
        if likelihood != "student_t":
            raise ValueError(f"nu is the degrees of freedom of 'student_t'; got {likelihood=!r}")
        nu = check_nonnegative(nu, "nu")
        if nu == 0.0:
            raise ValueError("nu must be > 0")
    return c, d, noise_var, nu


def build_model(
    Phi,
    t,
    likelihood: str = "gaussian",
    *,
    a,
    b,
    c: float | None = None,
    d: float | None = None,
    noise_var: float | None = None,
    nu: float | None = None,
    parameterization: str | None = None,
    coords: Mapping | None = None,
    design: Callable[[np.ndarray], np.ndarray] | None = None,
) -> pm.Model:
    """Declare the sparse Bayesian model of Tipping (2001) as a ``pymc.Model``.

    :func:`rvm_weights` (``alpha_i ~ Gamma(a, b)``, ``w_i | alpha_i ~ N(0, 1/alpha_i)``)
    composed with a likelihood: ``t ~ N(Phi w, 1/beta)``, ``StudentT(nu, Phi w,
    beta^-1/2)``, ``Bernoulli(sigmoid(Phi w))`` or ``Categorical(softmax(Phi w))``, with
    ``beta ~ Gamma(c, d)``.

    Parameters
    ----------
    Phi : array of shape (N, M)
        Design matrix; registered as ``pm.Data("Phi")`` with dims ``("obs", "basis")``.
    t : array of shape (N,)
        Targets: real numbers (``"gaussian"``, ``"student_t"``), 0/1 (``"bernoulli"``) or
        class labels of any type (``"categorical"``; coordinate ``"class"``).
    likelihood : {"gaussian", "student_t", "bernoulli", "categorical"}
    a, b : float, array or PyMC variable
        Shape and rate of the Gamma prior on every ``alpha_i`` (see :func:`rvm_weights`);
        numbers must be > 0 (see the module notes: ``a`` about 2 and ``b = a s^2`` for a
        weight scale ``s``).
    c, d : float, optional
        Shape and rate of the Gamma prior on ``beta``; required (> 0) for ``"gaussian"``
        and ``"student_t"`` unless ``noise_var`` is given, not allowed otherwise.
    noise_var : float, optional
        Fix the noise variance: ``beta = 1 / noise_var`` becomes a deterministic.
    nu : float, optional
        Degrees of freedom of ``"student_t"``; by default learned, ``nu ~ Gamma(2, 0.1)``
        (Juárez and Steel 2010).
    parameterization : {"collapsed", "noncentred", "centred"}, optional
        See the module notes. Default ``"collapsed"`` for ``"gaussian"``, ``"noncentred"``
        otherwise.
    coords : mapping, optional
        Labels for the ``"obs"`` and ``"basis"`` dimensions (default ``0..N-1``, ``0..M-1``).
    design : callable, optional
        ``X_new -> design rows`` over the model's columns, for predictions from inputs
        (:func:`bayes_rvm.sample` and :func:`bayes_rvm.predict` with ``X_new``). Held by
        this model alone (see the module notes).

    Returns
    -------
    pymc.Model
        Free variables ``alpha`` (and ``beta``; ``z`` in the non-centred form, ``w`` in the
        centred form; ``nu`` for a learned Student-t), the deterministics ``log_alpha``,
        ``log_beta`` and ``w`` (non-centred), the observed ``t`` (and, collapsed, the
        potential ``t_coupling``). Its description is :func:`model_spec`.

    Raises
    ------
    ValueError
        For an improper prior (``a`` or ``b`` = 0, ``c`` or ``d`` = 0), an unknown option,
        or inconsistent shapes.

    Notes
    -----
    Tipping (2001) eq. 4-6 and 34. In the collapsed form the model's log density is
    ``log N(t | 0, C)`` (eq. 15), evaluated through the Cholesky factor of the ``M x M``
    matrix ``A + beta Phi^T Phi`` (eq. 38, 41), with ``Phi^T Phi`` the
    ``pm.Data("gram")``; it checks that ``gram`` still matches ``Phi`` and refuses to
    evaluate after ``pm.set_data`` changed one without the other. It is declared as two
    terms: the observed ``t``'s pointwise log density, the ``N`` exact leave-one-out
    conditionals ``log p(t_n | t_-n, alpha, beta)`` of the marginal, and the potential
    ``t_coupling = log N(t | 0, C) - sum_n log p(t_n | t_-n, alpha, beta)``. So
    ``pm.compute_log_likelihood`` gives one term per observation and ``az.loo`` scores the
    ``N`` observations, while NUTS and ADVI see the exact marginal and its gradient (the
    leave-one-out terms carry no gradient and cancel from the compiled log density).
    The draws of ``t`` given ``(alpha, beta)`` are those of the marginal,
    ``t = Phi w + e`` with ``w ~ N(0, A^-1)``: ``pm.sample_prior_predictive`` gives the
    prior predictive, and ``pm.sample_posterior_predictive`` replicates the training
    targets from the marginal at each posterior draw of ``(alpha, beta)`` (a check of the
    marginal model, as for ``pm.gp.Marginal``). Both warn that potentials are ignored in
    forward sampling; ``t_coupling`` is part of the likelihood of the observed ``t``,
    which those draws follow exactly, so the warning does not apply here. Predictions at
    new rows given the data go through ``w | alpha, beta, t``: :func:`bayes_rvm.predict`
    (``model=model`` after ``pm.sample``).

    Examples
    --------
    >>> import numpy as np
    >>> from bayes_rvm import build_model
    >>> Phi = np.random.default_rng(0).normal(size=(20, 3))
    >>> model = build_model(Phi, Phi @ [1.0, 0.0, -1.0], a=2.0, b=2.0, c=2.0, d=0.02)
    >>> sorted(model.named_vars)
    ['Phi', 'alpha', 'beta', 'gram', 'log_alpha', 'log_beta', 't', 't_coupling']
    """
    likelihood = lookup(LIKELIHOODS, likelihood, "likelihood")
    if parameterization is None:
        parameterization = "collapsed" if likelihood == "gaussian" else "noncentred"
    parameterization = lookup(PARAMETERIZATIONS, parameterization, "parameterization")
    if parameterization == "collapsed" and likelihood != "gaussian":
        raise ValueError(
            f"parameterization='collapsed' integrates w out in closed form, which needs the "
            f"Gaussian likelihood; got likelihood={likelihood!r}. Use 'noncentred' instead."
        )
    Phi = check_design(Phi)
    t, classes = _check_targets(likelihood, t, Phi.shape[0])
    c, d, noise_var, nu = _noise_options(likelihood, c, d, noise_var, nu)
    a, b = _weight_prior(a, b)
    if design is not None and not callable(design):
        raise TypeError(f"design must be a callable X_new -> rows, got {type(design)}")

    dims = ("basis", "class") if likelihood == "categorical" else "basis"
    with pm.Model(coords=_coords(coords, *Phi.shape, classes)) as model:
        Phi_data = pm.Data("Phi", Phi, dims=("obs", "basis"))
        setattr(Phi_data.tag, _RECORD, _Declared(likelihood, design))
        beta = None
        if likelihood in _NOISY:
            if noise_var is not None:
                beta = pm.Deterministic("beta", pt.constant(np.float64(1.0 / noise_var)))
            else:
                # Tipping (2001) eq. 35: beta ~ Gamma(c, d)
                beta = pm.Gamma("beta", alpha=np.float64(c), beta=np.float64(d))
            pm.Deterministic("log_beta", pt.log(beta))
        if parameterization == "collapsed":
            alpha = _declare_alpha(a, b, "basis")
            collapsed_likelihood(Phi_data, alpha, beta, t)
            return model
        w = rvm_weights(Phi_data, a, b, parameterization=parameterization, dims=dims)
        if likelihood == "student_t":
            nu = pm.Gamma("nu", alpha=2.0, beta=0.1) if nu is None else np.float64(nu)
        _LIKELIHOOD_TERMS[likelihood](Phi_data, w, beta, nu, t)
    return model
