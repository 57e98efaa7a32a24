"""The hierarchical sparse Bayesian model (Tipping 2001, eq. 4-6) declared in PyMC.

:func:`build_model` declares the model and never samples: fitting is
:mod:`bayes_rvm.inference`. Three parameterisations of the same joint density are
offered (:data:`PARAMETERIZATIONS`):

``"centred"``
    ``w_i ~ N(0, 1/alpha_i)`` sampled directly. The posterior of ``(log alpha_i, w_i)``
    is a funnel: as ``alpha_i`` grows, ``w_i`` is squeezed towards 0, and NUTS diverges
    in the neck.
``"noncentred"``
    ``z_i ~ N(0, 1)``, ``w_i = z_i / sqrt(alpha_i)`` (a deterministic). The prior funnel
    is removed; the likelihood can bring some of it back for well-determined weights.
``"collapsed"`` (Gaussian likelihood only)
    ``w`` is integrated out: ``t ~ N(0, C)`` with ``C = beta^-1 I + Phi A^-1 Phi^T``
    (eq. 15, 34), so only ``log alpha`` and ``log beta`` are sampled; the fit then draws
    ``w`` exactly from ``p(w | alpha, beta, t)`` (eq. 12-13) for every posterior draw.

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
from pytensor.compile.builders import OpFromGraph
from pytensor.gradient import DisconnectedType

from bayes_rvm._validation import check_design, check_noise_var, check_nonnegative, check_target

__all__ = ["LIKELIHOODS", "PARAMETERIZATIONS", "ModelSpec", "build_model", "model_spec"]

LOG_2PI = np.float64(np.log(2.0 * np.pi))


@dataclass(frozen=True)
class ModelSpec:
    """What :mod:`bayes_rvm.inference` needs to know about a model from :func:`build_model`.

    Attributes
    ----------
    likelihood : str
    parameterization : str
    a, b, c, d : float or None
        The Gamma hyperparameters (``c, d`` are ``None`` for classification or a fixed noise).
    noise_var : float or None
        The fixed noise variance, ``None`` when ``beta`` is learned.
    design : callable or None
        Maps new inputs ``X`` to design rows over the model's columns (set for models
        built from a fitted estimator, see :func:`bayes_rvm.inference.model_from_estimator`).
    """

    likelihood: str
    parameterization: str
    a: float
    b: float
    c: float | None
    d: float | None
    noise_var: float | None
    design: Callable[[np.ndarray], np.ndarray] | None = None


#: Attribute of the returned ``pm.Model`` that holds its :class:`ModelSpec`.
_SPEC_ATTRIBUTE = "bayes_rvm_spec"


def model_spec(model: pm.Model) -> ModelSpec:
    """The :class:`ModelSpec` of a model returned by :func:`build_model`."""
    spec = getattr(model, _SPEC_ATTRIBUTE, None)
    if not isinstance(spec, ModelSpec):
        raise TypeError(
            f"expected a pymc.Model returned by bayes_rvm.build_model, got {type(model).__name__}"
            " without the bayes_rvm model description"
        )
    return spec


def _check_proper(shape: float, rate: float, names: str, what: str, example: str) -> None:
    if shape == 0.0 or rate == 0.0:
        raise ValueError(
            f"{names} = {shape:g}, {rate:g} is an improper Gamma hyperprior on {what}: its "
            "density does not integrate to one, and with it the posterior is improper "
            f"(the likelihood stays finite as {what} -> 0 or infinity, so the posterior mass "
            "is infinite). Type-II maximum likelihood copes with that (fit_type2, RVR), but "
            f"MCMC and VI need a proper prior: both values > 0, e.g. {example}."
        )


def _gaussian_likelihood(Phi, w, beta, t, n_obs) -> None:
    # Tipping (2001) eq. 5: t ~ N(Phi w, beta^-1 I)
    pm.Normal("t", mu=Phi @ w, sigma=1.0 / pt.sqrt(beta), observed=t, shape=n_obs, dims="obs")


def _bernoulli_likelihood(Phi, w, beta, t, n_obs) -> None:
    # Tipping (2001) eq. 23: P(t = 1 | w) = sigmoid(phi(x)^T w)
    pm.Bernoulli("t", logit_p=Phi @ w, observed=t, shape=n_obs, dims="obs")


_LIKELIHOOD_TERMS = {"gaussian": _gaussian_likelihood, "bernoulli": _bernoulli_likelihood}

#: Likelihood names accepted by :func:`build_model`.
LIKELIHOODS = tuple(_LIKELIHOOD_TERMS)


def _declare_centred(Phi, alpha, beta, t, likelihood: str) -> None:
    # Tipping (2001) eq. 5: p(w | alpha) = prod_i N(w_i | 0, alpha_i^-1)
    w = pm.Normal("w", mu=0.0, sigma=1.0 / pt.sqrt(alpha), dims="basis")
    _LIKELIHOOD_TERMS[likelihood](Phi, w, beta, t, Phi.shape[0])


def _declare_noncentred(Phi, alpha, beta, t, likelihood: str) -> None:
    z = pm.Normal("z", mu=0.0, sigma=1.0, dims="basis")
    # Tipping (2001) eq. 5, non-centred: w_i = z_i / sqrt(alpha_i) ~ N(0, alpha_i^-1)
    w = pm.Deterministic("w", z / pt.sqrt(alpha), dims="basis")
    _LIKELIHOOD_TERMS[likelihood](Phi, w, beta, t, Phi.shape[0])


def _collapsed_terms(value, alpha, beta, Phi, gram):
    """Cholesky factor of the posterior precision, posterior mean and residual sum of squares."""
    # Tipping (2001) eq. 12: Sigma^-1 = A + beta Phi^T Phi
    L = pt.linalg.cholesky(pt.diag(alpha) + beta * gram)
    # Tipping (2001) eq. 13: mu = beta Sigma Phi^T t
    u = pt.linalg.solve_triangular(L, Phi.T @ value, lower=True)
    mu = beta * pt.linalg.solve_triangular(L.T, u, lower=False)
    rss = pt.sum((value - Phi @ mu) ** 2)
    return L, mu, rss


def _collapsed_value(value, alpha, beta, Phi, gram):
    """``log N(t | 0, beta^-1 I + Phi A^-1 Phi^T)`` through the ``M x M`` posterior precision.

    The weight-space route of :func:`bayes_rvm.evidence.log_evidence_gaussian`: one
    Cholesky factor of ``H = A + beta Phi^T Phi`` (``gram`` is ``Phi^T Phi`` of the
    training rows, precomputed), no ``N x N`` matrix.
    """
    L, mu, rss = _collapsed_terms(value, alpha, beta, Phi, gram)
    n = value.shape[0]
    # Tipping (2001) eq. 38: log|C| = -log|Sigma| - N log beta - log|A|
    log_det_C = 2.0 * pt.sum(pt.log(pt.diag(L))) - n * pt.log(beta) - pt.sum(pt.log(alpha))
    # Tipping (2001) eq. 41: t^T C^-1 t = beta ||t - Phi mu||^2 + mu^T A mu
    quad = beta * rss + pt.sum(alpha * mu**2)
    return -0.5 * (n * LOG_2PI + log_det_C + quad)


def _collapsed_pullback(inputs, outputs, cotangents):
    """Analytic gradient of the log evidence in ``alpha`` and ``beta``.

    Needs only ``diag(Sigma)`` (column norms of ``L^-1``): about three times cheaper than
    differentiating through the Cholesky factorisation. The data inputs get no gradient.
    """
    value, alpha, beta, Phi, gram = inputs
    (cotangent,) = cotangents
    L, mu, rss = _collapsed_terms(value, alpha, beta, Phi, gram)
    L_inv = pt.linalg.solve_triangular(L, pt.eye(alpha.shape[0]), lower=True)
    sigma_diag = pt.sum(L_inv**2, axis=0)
    n = value.shape[0]
    # Tipping (2001) eq. 42 without the hyperprior terms, divided by alpha_i (d / d alpha_i)
    d_alpha = 0.5 * (1.0 / alpha - sigma_diag - mu**2)
    # Tipping (2001) eq. 45 without the hyperprior terms (d / d beta), with
    # beta tr(Sigma Phi^T Phi) = sum_i gamma_i = sum_i (1 - alpha_i Sigma_ii) (eq. 17, 46)
    d_beta = 0.5 * (n / beta - rss - pt.sum(1.0 - alpha * sigma_diag) / beta)
    no_gradient = DisconnectedType()
    return [no_gradient(), cotangent * d_alpha, cotangent * d_beta, no_gradient(), no_gradient()]


def _collapsed_op() -> OpFromGraph:
    inputs = [pt.dvector("t"), pt.dvector("alpha"), pt.dscalar("beta")]
    inputs += [pt.dmatrix("Phi"), pt.dmatrix("gram")]
    return OpFromGraph(
        inputs,
        [_collapsed_value(*inputs)],
        pullback=_collapsed_pullback,
        connection_pattern=[[False], [True], [True], [False], [False]],
        inline=True,
        name="collapsed_log_evidence",
    )


def _collapsed_logp(value, alpha, beta, Phi, gram):
    """Log density of the marginal ``t`` (eq. 34), with the analytic gradient attached."""
    return _collapsed_op()(value, alpha, beta, Phi, gram)


def _collapsed_draw(alpha, beta, Phi, gram, size):
    """Generative form of the marginal (prior predictive draws): w ~ N(0, A^-1), then t.

    ``t`` is one vector (no batch dimensions), so ``size`` is empty and unused.
    """
    w = pm.Normal.dist(mu=0.0, sigma=1.0 / pt.sqrt(alpha))
    return pm.Normal.dist(mu=Phi @ w, sigma=1.0 / pt.sqrt(beta))


def _declare_collapsed(Phi, alpha, beta, t, likelihood: str) -> None:
    if likelihood != "gaussian":
        raise ValueError(
            f"parameterization='collapsed' integrates w out in closed form, which needs the "
            f"Gaussian likelihood; got likelihood={likelihood!r}. Use 'noncentred' instead."
        )
    model = pm.modelcontext(None)
    model.add_coord("basis_", model.coords["basis"])
    gram = pm.Data("gram", Phi.get_value().T @ Phi.get_value(), dims=("basis", "basis_"))
    # Tipping (2001) eq. 34: t ~ N(0, beta^-1 I + Phi A^-1 Phi^T)
    pm.CustomDist(
        "t",
        alpha,
        beta,
        Phi,
        gram,
        logp=_collapsed_logp,
        dist=_collapsed_draw,
        ndim_supp=1,
        ndims_params=[1, 0, 2, 2],
        observed=t,
        shape=Phi.shape[0],
        dims="obs",
    )


#: parameterization name -> function declaring w and the likelihood.
PARAMETERIZATIONS: dict[str, Callable] = {
    "noncentred": _declare_noncentred,
    "centred": _declare_centred,
    "collapsed": _declare_collapsed,
}


def _lookup(table, name, what: str):
    if not isinstance(name, str) or name not in table:
        valid = ", ".join(repr(k) for k in table)
        raise ValueError(f"unknown {what} {name!r}; expected one of: {valid}")
    return table[name] if isinstance(table, Mapping) else name


def _coords(coords, n_obs: int, n_basis: int) -> dict:
    out = {"obs": np.arange(n_obs), "basis": np.arange(n_basis)}
    for name, values in dict(coords or {}).items():
        if name not in out:
            raise ValueError(f"unknown coordinate {name!r}; expected 'obs' or 'basis'")
        values = np.asarray(values)
        if values.shape != out[name].shape:
            raise ValueError(
                f"coords[{name!r}] must have length {out[name].size}, got shape {values.shape}"
            )
        out[name] = values
    return out


def build_model(
    Phi,
    t,
    likelihood: str = "gaussian",
    *,
    a: float,
    b: float,
    c: float | None = None,
    d: float | None = None,
    noise_var: float | None = None,
    parameterization: str = "noncentred",
    coords: Mapping | None = None,
    design: Callable[[np.ndarray], np.ndarray] | None = None,
) -> pm.Model:
    """Declare the sparse Bayesian model of Tipping (2001) as a ``pymc.Model``.

    ``alpha_i ~ Gamma(a, b)``, ``w_i | alpha_i ~ N(0, 1/alpha_i)``, ``beta ~ Gamma(c, d)``,
    ``t ~ N(Phi w, 1/beta)`` (regression) or ``t ~ Bernoulli(sigmoid(Phi w))``.

    Parameters
    ----------
    Phi : array of shape (N, M)
        Design matrix; registered as ``pm.Data("Phi")`` with dims ``("obs", "basis")``.
    t : array of shape (N,)
        Targets (0/1 for ``"bernoulli"``).
    likelihood : {"gaussian", "bernoulli"}
    a, b : float
        Shape and rate of the Gamma prior on every ``alpha_i``; both must be > 0 (see the
        module notes: ``a`` about 2 and ``b = a s^2`` for a weight scale ``s``).
    c, d : float, optional
        Shape and rate of the Gamma prior on ``beta``; required (> 0) for the Gaussian
        likelihood unless ``noise_var`` is given, not allowed otherwise.
    noise_var : float, optional
        Fix the noise variance: ``beta = 1 / noise_var`` becomes a deterministic.
    parameterization : {"noncentred", "centred", "collapsed"}
        See the module notes.
    coords : mapping, optional
        Labels for the ``"obs"`` and ``"basis"`` dimensions (default ``0..N-1``, ``0..M-1``).
    design : callable, optional
        ``X_new -> design rows`` over the model's columns, kept for predictions from
        inputs (:func:`bayes_rvm.sample` with ``X_new``).

    Returns
    -------
    pymc.Model
        Free variables ``alpha`` (and ``beta``; ``z`` in the non-centred form, ``w`` in the
        centred form), the deterministic ``w`` (non-centred), the observed ``t``. Its
        description is in :func:`model_spec`.

    Raises
    ------
    ValueError
        For an improper prior (``a`` or ``b`` = 0, ``c`` or ``d`` = 0), an unknown option,
        or inconsistent shapes.

    Notes
    -----
    Tipping (2001) eq. 4-6 and 34. In the collapsed form the observed ``t`` has the log
    density ``log N(t | 0, C)`` (eq. 15), evaluated through the Cholesky factor of the
    ``M x M`` matrix ``A + beta Phi^T Phi`` (eq. 38, 41); its Gram matrix ``Phi^T Phi`` is
    the ``pm.Data("gram")`` of the training rows, so new rows set with ``pm.set_data``
    serve predictions in the other forms only (:func:`bayes_rvm.sample` predicts for every
    form from the posterior draws of ``w``).

    Examples
    --------
    >>> import numpy as np
    >>> from bayes_rvm import build_model
    >>> Phi = np.random.default_rng(0).normal(size=(20, 3))
    >>> model = build_model(Phi, Phi @ [1.0, 0.0, -1.0], a=2.0, b=2.0, c=2.0, d=0.02)
    >>> sorted(model.named_vars)
    ['Phi', 'alpha', 'beta', 't', 'w', 'z']
    """
    likelihood = _lookup(LIKELIHOODS, likelihood, "likelihood")
    declare = _lookup(PARAMETERIZATIONS, parameterization, "parameterization")
    Phi = check_design(Phi)
    t = check_target(t, Phi.shape[0])
    a, b = check_nonnegative(a, "a"), check_nonnegative(b, "b")
    _check_proper(a, b, "a, b", "each alpha_i", "a = 2, b = 2 s**2 for weights of size s")
    noise_var = check_noise_var(noise_var)
    if likelihood == "bernoulli":
        if not np.all((t == 0) | (t == 1)):
            raise ValueError("likelihood='bernoulli' needs targets t in {0, 1}")
        if c is not None or d is not None or noise_var is not None:
            raise ValueError(
                "likelihood='bernoulli' has no noise precision: leave c, d and noise_var unset"
            )
    elif noise_var is not None:
        if c is not None or d is not None:
            raise ValueError("give either noise_var (fixed beta) or c, d (its prior), not both")
    else:
        if c is None or d is None:
            raise ValueError(
                "likelihood='gaussian' with a learned noise needs the Gamma(c, d) prior on beta:"
                " give c and d (e.g. c = 2, d = 2 sigma**2 for a noise sd sigma), or noise_var"
            )
        c, d = check_nonnegative(c, "c"), check_nonnegative(d, "d")
        _check_proper(c, d, "c, d", "beta", "c = 2, d = 2 sigma**2 for a noise sd sigma")
    spec = ModelSpec(likelihood, parameterization, a, b, c, d, noise_var, design)

    with pm.Model(coords=_coords(coords, *Phi.shape)) as model:
        Phi_data = pm.Data("Phi", Phi, dims=("obs", "basis"))
        # Tipping (2001) eq. 6 with the Gamma hyperprior of eq. 35 (log-transformed by PyMC)
        # (hyperparameters as float64: PyTensor would store a Python float such as 0.5 as a
        # float32 constant and take its log in single precision)
        alpha = pm.Gamma("alpha", alpha=np.float64(a), beta=np.float64(b), dims="basis")
        if likelihood == "bernoulli":
            beta = None
        elif noise_var is not None:
            beta = pm.Deterministic("beta", pt.constant(np.float64(1.0 / noise_var)))
        else:
            # Tipping (2001) eq. 35: beta ~ Gamma(c, d)
            beta = pm.Gamma("beta", alpha=np.float64(c), beta=np.float64(d))
        declare(Phi_data, alpha, beta, t, likelihood)
    setattr(model, _SPEC_ATTRIBUTE, spec)
    return model
