"""The PyMC declaration of the model: log densities against independent formulas, errors.

The log densities are compiled in PyTensor's FAST_COMPILE mode (no Numba compilation):
the graph is the one NUTS uses, and the check stays quick on a cold cache.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytest
from pymc.model.fgraph import clone_model
from scipy import stats
from scipy.linalg import cho_factor, cho_solve, solve_triangular

import bayes_rvm as br
from bayes_rvm import build_model, rvm_weights
from bayes_rvm._collapsed import gram_matches
from bayes_rvm.evidence import hyperprior_log_density, log_evidence_dense, log_evidence_gaussian
from bayes_rvm.posterior import gaussian_posterior
from bayes_rvm.pymc_model import PARAMETERIZATIONS, model_spec

PRIOR = {"a": 2.0, "b": 0.5, "c": 3.0, "d": 0.3}


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(7)
    Phi = rng.normal(size=(30, 6))
    t = Phi @ np.array([1.0, 0.0, -1.0, 0.5, 0.0, 0.2]) + rng.normal(0, 0.3, 30)
    return Phi, t


def _logp(model, point):
    return float(model.compile_logp(jacobian=True, mode="FAST_COMPILE")(point))


def _log_gamma_on_log_scale(x, shape, rate):
    """log p(log x) for x ~ Gamma(shape, rate): the density of x times the Jacobian x."""
    return np.sum(stats.gamma.logpdf(x, shape, scale=1.0 / rate) + np.log(x))


def test_collapsed_logp_is_the_log_evidence_with_hyperprior(problem):
    """Tipping (2001) eq. 36 with normalisers: the weight-space route and the N x N route."""
    Phi, t = problem
    model = build_model(Phi, t, parameterization="collapsed", **PRIOR)
    assert {rv.name for rv in model.free_RVs} == {"alpha", "beta"}
    logp = model.compile_logp(jacobian=True, mode="FAST_COMPILE")
    rng = np.random.default_rng(1)
    for alpha, beta in [
        (rng.gamma(2.0, 1.0, 6), 7.0),
        (np.array([1e-3, 1e3, 0.5, 2.0, 1e2, 30.0]), 0.2),
        (np.full(6, 40.0), 50.0),
    ]:
        L, mu = gaussian_posterior(Phi.T @ Phi, Phi.T @ t, alpha, beta)
        rss = float(np.sum((t - Phi @ mu) ** 2))
        expected = log_evidence_gaussian(L, mu, alpha, beta, rss, t.size)
        assert expected == pytest.approx(log_evidence_dense(Phi, t, alpha, beta), abs=1e-8)
        expected += hyperprior_log_density(alpha, beta, **PRIOR)
        value = logp({"alpha_log__": np.log(alpha), "beta_log__": np.log(beta)})
        assert value == pytest.approx(expected, abs=1e-8)


def test_collapsed_gradient_is_the_derivative_of_the_log_density(problem):
    """The analytic gradient (eq. 42, 45) against central differences of the log density."""
    Phi, t = problem
    model = build_model(Phi, t, parameterization="collapsed", **PRIOR)
    logp = model.compile_logp(jacobian=True, mode="FAST_COMPILE")
    dlogp = model.compile_dlogp(jacobian=True, mode="FAST_COMPILE")
    rng = np.random.default_rng(6)
    x = np.concatenate([np.log(rng.gamma(2.0, 1.0, 6)), [np.log(4.0)]])
    names = [var.name for var in model.value_vars]
    sizes = {"alpha_log__": 6, "beta_log__": 1}
    offsets = np.cumsum([0] + [sizes[name] for name in names])

    def point(y):
        return {
            name: y[o : o + sizes[name]] if sizes[name] > 1 else y[o]
            for name, o in zip(names, offsets[:-1], strict=True)
        }

    gradient = dlogp(point(x))
    h = 1e-5
    numeric = [(logp(point(x + h * e)) - logp(point(x - h * e))) / (2 * h) for e in np.eye(x.size)]
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-7)


def _marginal_covariance(Phi, alpha, beta):
    """C = beta^-1 I + Phi A^-1 Phi^T (Tipping 2001, eq. 34), formed as an N x N matrix."""
    return np.eye(Phi.shape[0]) / beta + (Phi / alpha) @ Phi.T


def _marginal_logp_and_gradient(Phi, t, alpha, beta):
    """log N(t | 0, C) plus the Gamma hyperpriors on the log scale (SciPy), and its gradient
    in (log alpha, log beta) from the N x N covariance: with u = C^-1 t,
    d/d alpha_i = -(alpha_i^-2 / 2) ((phi_i^T u)^2 - phi_i^T C^-1 phi_i) and
    d/d beta = -(beta^-2 / 2) (u^T u - tr C^-1), by Cholesky solves."""
    C = _marginal_covariance(Phi, alpha, beta)
    value = stats.multivariate_normal(np.zeros(t.size), C).logpdf(t)
    value += _log_gamma_on_log_scale(alpha, PRIOR["a"], PRIOR["b"])
    value += _log_gamma_on_log_scale(beta, PRIOR["c"], PRIOR["d"])
    factor = cho_factor(C, lower=True)
    u = cho_solve(factor, t)
    C_inv_Phi = cho_solve(factor, Phi)
    L_inv = solve_triangular(factor[0], np.eye(t.size), lower=True)
    d_alpha = -0.5 / alpha**2 * ((Phi.T @ u) ** 2 - np.sum(Phi * C_inv_Phi, axis=0))
    d_beta = -0.5 / beta**2 * (u @ u - np.sum(L_inv**2))
    # on the log scale: times x, plus d/d log x of log Gamma(x | a, b) + log x = a - b x
    g_alpha = alpha * d_alpha + PRIOR["a"] - PRIOR["b"] * alpha
    g_beta = beta * d_beta + PRIOR["c"] - PRIOR["d"] * beta
    return value, {"alpha_log__": g_alpha, "beta_log__": g_beta}


def _conditional_loo(Phi, t, alpha, beta):
    """log p(t_n | t_-n) from the N x N covariance: the Gaussian conditional of row n given
    the others, C_nn - C_n,-n C_-n,-n^-1 C_-n,n and its mean, by a Cholesky solve per row."""
    C = _marginal_covariance(Phi, alpha, beta)
    out = np.empty(t.size)
    for n in range(t.size):
        rest = np.arange(t.size) != n
        factor = cho_factor(C[np.ix_(rest, rest)], lower=True)
        mean = C[n, rest] @ cho_solve(factor, t[rest])
        var = C[n, n] - C[n, rest] @ cho_solve(factor, C[rest, n])
        out[n] = stats.norm.logpdf(t[n], mean, np.sqrt(var))
    return out


POINTS = [
    (np.array([0.7, 3.0, 1.5, 0.2, 9.0, 2.0]), 7.0),
    (np.array([1e-3, 1e3, 0.5, 2.0, 1e2, 30.0]), 0.2),
    (np.full(6, 40.0), 50.0),
]


@pytest.mark.parametrize("mode", ["FAST_RUN", "FAST_COMPILE"])
def test_collapsed_model_is_the_marginal_with_pointwise_loo_terms(problem, mode):
    """The observed t's log density is N terms, the exact leave-one-out conditionals (it was
    one joint term, so az.loo scored one point); with the potential t_coupling the model's
    log density and its gradient are still those of the marginal Gaussian (SciPy and the
    N x N covariance), with graph rewriting (FAST_RUN, as NUTS) and without (FAST_COMPILE)."""
    Phi, t = problem
    model = build_model(Phi, t, **PRIOR)
    logp = model.compile_logp(jacobian=True, mode=mode)
    dlogp = model.compile_dlogp(jacobian=True, mode=mode)
    pointwise = model.compile_fn(
        model.logp(vars=[model["t"]], sum=False)[0], point_fn=True, mode=mode
    )
    for alpha, beta in POINTS:
        point = {"alpha_log__": np.log(alpha), "beta_log__": np.log(beta)}
        expected, gradient = _marginal_logp_and_gradient(Phi, t, alpha, beta)
        assert logp(point) == pytest.approx(expected, rel=1e-12, abs=1e-11)
        gradient = np.concatenate([np.atleast_1d(gradient[v.name]) for v in model.value_vars])
        np.testing.assert_allclose(dlogp(point), gradient, rtol=1e-11, atol=1e-11)
        terms = pointwise(point)
        assert terms.shape == (t.size,)
        np.testing.assert_allclose(terms, _conditional_loo(Phi, t, alpha, beta), rtol=1e-11)


@pytest.fixture(scope="module")
def plain_fit(problem):
    """The collapsed model sampled with pm.sample itself (no bayes_rvm.sample)."""
    Phi, t = problem
    model = build_model(Phi, t, **PRIOR)
    tree = pm.sample(
        draws=150,
        tune=200,
        chains=2,
        cores=1,
        random_seed=3,
        model=model,
        nuts_sampler="pymc",
        progressbar=False,
        compute_convergence_checks=False,
    )
    return model, tree


# PyMC warns of any potential in forward sampling; see test_collapsed_model_with_pymc_tools
@pytest.mark.filterwarnings("ignore:The effect of Potentials:UserWarning")
@pytest.mark.filterwarnings("ignore:Numba will use object mode:UserWarning")
def test_pm_compute_log_likelihood_gives_the_loo_terms(problem, plain_fit):
    """pm.sample + pm.compute_log_likelihood gave one joint term per draw, and az.loo then
    scored one data point: now N terms, each the exact leave-one-out conditional at its
    draw (N x N covariance), equal to those bayes_rvm.predict adds; az.loo scores N points,
    and the posterior predictive draws the N targets."""
    Phi, t = problem
    model, tree = plain_fit
    log_lik = pm.compute_log_likelihood(
        tree, model=model, extend_inferencedata=False, progressbar=False
    )["t"]
    assert log_lik.dims == ("chain", "draw", "obs") and log_lik.shape == (2, 150, t.size)
    alpha, beta = tree["posterior"]["alpha"].values, tree["posterior"]["beta"].values
    for chain, draw in [(0, 0), (0, 77), (1, 149)]:
        expected = _conditional_loo(Phi, t, alpha[chain, draw], beta[chain, draw])
        np.testing.assert_allclose(log_lik.values[chain, draw], expected, rtol=1e-10)
    ours = br.predict(tree, model=model, random_seed=0)["log_likelihood"]["t"]
    np.testing.assert_allclose(log_lik.values, ours.values, rtol=1e-10)
    with_terms = tree.copy()
    with_terms["log_likelihood"] = log_lik.to_dataset()
    assert az.loo(with_terms).n_data_points == t.size
    replicates = pm.sample_posterior_predictive(tree, model=model, progressbar=False)
    assert replicates["posterior_predictive"]["t"].shape == (2, 150, t.size)


@pytest.mark.parametrize("parameterization", ["noncentred", "centred"])
def test_weight_space_logp_matches_scipy(problem, parameterization):
    Phi, t = problem
    model = build_model(Phi, t, parameterization=parameterization, **PRIOR)
    rng = np.random.default_rng(2)
    alpha, beta, u = rng.gamma(2.0, 1.0, 6), 5.0, rng.normal(size=6)
    # the free weight variable is z (w = z / sqrt(alpha)) or w itself
    w = u / np.sqrt(alpha) if parameterization == "noncentred" else u
    weight_prior = (
        stats.norm.logpdf(u).sum()
        if parameterization == "noncentred"
        else stats.norm.logpdf(w, 0.0, 1.0 / np.sqrt(alpha)).sum()
    )
    expected = (
        _log_gamma_on_log_scale(alpha, PRIOR["a"], PRIOR["b"])
        + _log_gamma_on_log_scale(beta, PRIOR["c"], PRIOR["d"])
        + weight_prior
        + stats.norm.logpdf(t, Phi @ w, 1.0 / np.sqrt(beta)).sum()
    )
    name = "z" if parameterization == "noncentred" else "w"
    point = {"alpha_log__": np.log(alpha), "beta_log__": np.log(beta), name: u}
    assert _logp(model, point) == pytest.approx(expected, abs=1e-8)


def test_bernoulli_logp_matches_scipy(problem):
    Phi, _ = problem
    rng = np.random.default_rng(3)
    t = (rng.random(Phi.shape[0]) < 0.5).astype(float)
    model = build_model(Phi, t, "bernoulli", a=2.0, b=0.5)
    assert "beta" not in model.named_vars
    alpha, z = rng.gamma(2.0, 1.0, 6), rng.normal(size=6)
    p = 1.0 / (1.0 + np.exp(-Phi @ (z / np.sqrt(alpha))))
    expected = (
        _log_gamma_on_log_scale(alpha, 2.0, 0.5)
        + stats.norm.logpdf(z).sum()
        + stats.bernoulli.logpmf(t, p).sum()
    )
    assert _logp(model, {"alpha_log__": np.log(alpha), "z": z}) == pytest.approx(expected, 1e-10)


def test_fixed_noise_makes_beta_a_constant(problem):
    Phi, t = problem
    model = build_model(Phi, t, a=2.0, b=0.5, noise_var=0.25, parameterization="noncentred")
    assert {rv.name for rv in model.free_RVs} == {"alpha", "z"}
    assert float(pm.draw(model["beta"])) == 4.0
    assert model_spec(model).noise_var == 0.25


def test_names_dims_and_coords(problem):
    Phi, t = problem
    names = [f"phi{j}" for j in range(6)]
    model = build_model(Phi, t, coords={"basis": names}, parameterization="noncentred", **PRIOR)
    assert list(model.coords["basis"]) == names
    assert model.named_vars_to_dims["w"] == ("basis",)
    assert model.named_vars_to_dims["log_alpha"] == ("basis",)
    assert model.named_vars_to_dims["t"] == ("obs",)
    assert model.named_vars_to_dims["Phi"] == ("obs", "basis")
    assert model_spec(model).parameterization == "noncentred"
    with pytest.raises(ValueError, match="length 6"):
        build_model(Phi, t, coords={"basis": names[:3]}, **PRIOR)
    with pytest.raises(ValueError, match="unknown coordinate"):
        build_model(Phi, t, coords={"rows": np.arange(30)}, **PRIOR)


def test_set_data_predicts_at_new_rows(problem):
    """pm.set_data + sample_posterior_predictive draws t_new ~ N(Phi_new w, 1/beta)."""
    Phi, t = problem
    model = build_model(Phi, t, parameterization="noncentred", **PRIOR)
    rng = np.random.default_rng(4)
    n_draws = 2000
    alpha = rng.gamma(2.0, 1.0, (1, n_draws, 6))
    z = rng.normal(size=(1, n_draws, 6))
    beta = rng.gamma(3.0, 1.0, (1, n_draws)) + 1.0
    posterior = az.from_dict(
        {"posterior": {"alpha": alpha, "z": z, "beta": beta, "w": z / np.sqrt(alpha)}},
        dims={"alpha": ["basis"], "z": ["basis"], "w": ["basis"]},
        coords={"basis": np.arange(6)},
    )
    Phi_new = rng.normal(size=(4, 6))
    with model:
        pm.set_data({"Phi": Phi_new}, coords={"obs": np.arange(4)})
        tree = pm.sample_posterior_predictive(
            posterior, var_names=["t"], predictions=True, random_seed=5, progressbar=False
        )
    t_new = tree["predictions"]["t"].values[0]
    assert t_new.shape == (n_draws, 4)
    standardised = (t_new - (z[0] / np.sqrt(alpha[0])) @ Phi_new.T) * np.sqrt(beta[0])[:, None]
    # N(0, 1) per draw: mean within 4 standard errors, variance within 10%
    assert np.abs(standardised.mean(axis=0)).max() < 4.0 / np.sqrt(n_draws)
    assert np.allclose(standardised.var(axis=0), 1.0, atol=0.1)


@pytest.mark.parametrize(
    ("prior", "message"),
    [
        ({"a": 0.0, "b": 0.0, "c": 2.0, "d": 0.5}, r"a, b = 0, 0 is an improper"),
        ({"a": 2.0, "b": 0.0, "c": 2.0, "d": 0.5}, r"e\.g\. a = 2, b = 2 s\*\*2"),
        ({"a": 2.0, "b": 1.0, "c": 0.0, "d": 0.0}, r"c, d = 0, 0 is an improper Gamma"),
        ({"a": 2.0, "b": 1.0}, "needs the Gamma\\(c, d\\) prior on beta"),
    ],
)
def test_improper_or_missing_prior_is_refused(problem, prior, message):
    Phi, t = problem
    with pytest.raises(ValueError, match=message):
        build_model(Phi, t, **prior)


def test_option_errors(problem):
    Phi, t = problem
    with pytest.raises(ValueError, match="'noncentred', 'centred', 'collapsed'"):
        build_model(Phi, t, parameterization="non-centered", **PRIOR)
    assert set(PARAMETERIZATIONS) == {"noncentred", "centred", "collapsed"}
    with pytest.raises(ValueError, match="unknown likelihood 'poisson'"):
        build_model(Phi, t, "poisson", **PRIOR)
    with pytest.raises(ValueError, match="degrees of freedom of 'student_t'"):
        build_model(Phi, t, nu=3.0, **PRIOR)
    with pytest.raises(ValueError, match="at least 2 classes"):
        build_model(Phi, np.zeros(30), "categorical", a=2.0, b=1.0)
    with pytest.raises(ValueError, match="'noncentred' or 'centred'"), pm.Model():
        rvm_weights(Phi, 2.0, 1.0, parameterization="collapsed")
    with pytest.raises(ValueError, match="improper Gamma"), pm.Model():
        rvm_weights(Phi, [2.0] * 6, np.r_[1.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    labels = (t > 0).astype(float)
    with pytest.raises(ValueError, match="needs the Gaussian likelihood"):
        build_model(Phi, labels, "bernoulli", a=2.0, b=1.0, parameterization="collapsed")
    with pytest.raises(ValueError, match="no noise precision"):
        build_model(Phi, labels, "bernoulli", **PRIOR)
    with pytest.raises(ValueError, match="targets t in"):
        build_model(Phi, t, "bernoulli", a=2.0, b=1.0)
    with pytest.raises(ValueError, match="not both"):
        build_model(Phi, t, noise_var=0.1, **PRIOR)
    with pytest.raises(ValueError, match="length 30"):
        build_model(Phi, t[:10], **PRIOR)
    with pytest.raises(TypeError, match=r"bayes_rvm\.build_model"):
        model_spec(pm.Model())
    with pm.Model(coords={"basis": range(6)}) as own:
        rvm_weights(Phi, 2.0, 1.0)
    with pytest.raises(
        TypeError, match=r"did not declare.*bayes_rvm\.predict\(tree, model=model\)"
    ):
        model_spec(own)


def test_defaults_and_derived_variables(problem):
    """Collapsed by default for the Gaussian likelihood, log_alpha / log_beta declared."""
    Phi, t = problem
    model = build_model(Phi, t, **PRIOR)
    assert model_spec(model).parameterization == "collapsed"
    assert {rv.name for rv in model.free_RVs} == {"alpha", "beta"}
    alpha, beta = np.arange(1.0, 7.0), 3.0
    log_alpha = model["log_alpha"].eval({model["alpha"]: alpha})
    np.testing.assert_allclose(log_alpha, np.log(alpha), rtol=1e-14)
    assert float(model["log_beta"].eval({model["beta"]: beta})) == pytest.approx(np.log(beta))
    labels = (t > 0).astype(float)
    assert model_spec(build_model(Phi, labels, "bernoulli", a=2.0, b=1.0)).parameterization == (
        "noncentred"
    )


def test_collapsed_model_refuses_a_stale_gram(problem):
    """pm.set_data of Phi alone would leave Phi^T Phi stale (the log density was -766725
    against -90.9 for a fresh model): it is refused; Phi and gram set together are used."""
    Phi, t = problem
    Phi2 = np.random.default_rng(9).normal(size=Phi.shape)
    model = build_model(Phi, t, **PRIOR)
    point = {"alpha_log__": np.log(np.linspace(0.5, 3.0, 6)), "beta_log__": np.log(4.0)}
    logp = model.compile_logp(jacobian=True, mode="FAST_COMPILE")
    with model:
        pm.set_data({"Phi": Phi2})
    with pytest.raises(AssertionError, match="no longer matches its Gram matrix"):
        logp(point)
    with pytest.raises(ValueError, match="no longer matches its Gram matrix"):
        br.sample(model, draws=10, tune=10, chains=1)
    with model:
        pm.set_data({"Phi": Phi2, "gram": Phi2.T @ Phi2})
    assert logp(point) == pytest.approx(_logp(build_model(Phi2, t, **PRIOR), point), abs=1e-9)
    assert gram_matches(Phi2, Phi2.T @ Phi2) and not gram_matches(Phi2, Phi.T @ Phi)


@pytest.mark.filterwarnings("ignore:Numba will use object mode:UserWarning")
# PyMC warns of any potential in forward sampling; t_coupling is a likelihood term (a
# function of the observed t), which the marginal draws of t account for exactly
@pytest.mark.filterwarnings("ignore:The effect of Potentials:UserWarning")
def test_collapsed_model_with_pymc_tools(problem):
    """The model graph (pm.model_to_mermaid: the shape inference of pm.model_to_graphviz,
    without the graphviz package) and sample_prior_predictive work on the collapsed model
    (both were refused), and the marginal draws given (alpha, beta) have the covariance
    C = I / beta + Phi A^-1 Phi^T of Tipping (2001) eq. 34."""
    Phi, t = problem
    model = build_model(Phi, t, **PRIOR)
    graph = pm.model_to_mermaid(model)
    assert "alpha" in graph and "RVMCollapsedGaussian" in graph and "t_coupling" in graph
    alpha, beta = np.array([1.0, 4.0, 0.5, 2.0, 8.0, 1.0]), 4.0
    fixed = pm.do(model, {"alpha": alpha, "beta": beta})
    draws = pm.sample_prior_predictive(draws=4000, model=fixed, random_seed=1)
    t_draws = draws["prior_predictive"]["t"].values.reshape(4000, -1)
    C = np.eye(Phi.shape[0]) / beta + (Phi / alpha) @ Phi.T
    # Monte Carlo: sd of a sample covariance entry is about sqrt((C_ij^2 + C_ii C_jj) / S)
    tolerance = 5 * np.sqrt((C**2 + np.outer(np.diag(C), np.diag(C))) / 4000)
    assert np.all(np.abs(np.cov(t_draws.T) - C) < tolerance)
    assert np.all(np.abs(t_draws.mean(axis=0)) < 5 * np.sqrt(np.diag(C) / 4000))


@pytest.mark.parametrize("parameterization", ["collapsed", "noncentred", "centred"])
def test_model_description_survives_copies(problem, parameterization):
    """clone_model, pm.do and pm.observe keep what bayes_rvm reads from the model."""
    Phi, t = problem
    model = build_model(
        Phi,
        t,
        parameterization=parameterization,
        design=lambda X: X,
        a=2.0,
        b=[0.5] * 6,
        c=3.0,
        d=0.3,
    )
    spec = model_spec(model)
    assert (spec.likelihood, spec.parameterization) == ("gaussian", parameterization)
    assert (spec.a, spec.b, spec.c, spec.d, spec.noise_var) == (2.0, 0.5, 3.0, 0.3, None)
    assert model_spec(clone_model(model)) == spec
    fixed = model_spec(pm.do(model, {"beta": 4.0}))
    assert (fixed.noise_var, fixed.c, fixed.parameterization) == (0.25, None, parameterization)
    observed = model_spec(pm.observe(model, {"alpha": np.ones(6)}))
    assert (observed.a, observed.parameterization, observed.design) == (
        None,
        parameterization,
        spec.design,
    )


def test_block_composes_with_a_users_likelihood(problem):
    """rvm_weights in a user's model gives the same log density as build_model's weights, and
    a, b may be PyMC variables (a hierarchical prior on the weight scale)."""
    Phi, t = problem
    reference = build_model(Phi, t, parameterization="noncentred", **PRIOR)
    with pm.Model(coords={"basis": np.arange(6), "obs": np.arange(30)}) as own:
        beta = pm.Gamma("beta", alpha=3.0, beta=np.float64(0.3))
        w = rvm_weights(Phi, 2.0, 0.5)
        pm.Normal("t", mu=Phi @ w, sigma=1.0 / pm.math.sqrt(beta), observed=t, dims="obs")
    rng = np.random.default_rng(8)
    point = {"alpha_log__": rng.normal(size=6), "z": rng.normal(size=6), "beta_log__": 1.2}
    # the same terms summed in another order (Phi a constant here, a shared variable there)
    assert _logp(own, point) == pytest.approx(_logp(reference, point), rel=1e-11)
    with pm.Model(coords={"basis": np.arange(6)}) as hierarchical:
        scale = pm.HalfNormal("scale", 1.0)
        w = rvm_weights(Phi, 2.0, 2.0 * scale**2, parameterization="centred")
    alpha = hierarchical["alpha"]
    assert hierarchical.named_vars_to_dims["w"] == ("basis",)
    rate = 1.0 / alpha.owner.inputs[-1]  # PyTensor's Gamma takes the scale
    np.testing.assert_allclose(rate.eval({hierarchical["scale"]: 1.5}), 2.0 * 1.5**2, rtol=1e-14)


def test_student_t_and_categorical_logp_match_scipy(problem):
    Phi, t = problem
    rng = np.random.default_rng(10)
    robust = build_model(Phi, t, "student_t", nu=4.0, **PRIOR)
    alpha, z, beta = rng.gamma(2.0, 1.0, 6), rng.normal(size=6), 2.0
    w = z / np.sqrt(alpha)
    expected = (
        _log_gamma_on_log_scale(alpha, 2.0, 0.5)
        + _log_gamma_on_log_scale(beta, 3.0, 0.3)
        + stats.norm.logpdf(z).sum()
        + stats.t.logpdf(t, 4.0, loc=Phi @ w, scale=1.0 / np.sqrt(beta)).sum()
    )
    point = {"alpha_log__": np.log(alpha), "z": z, "beta_log__": np.log(beta)}
    assert _logp(robust, point) == pytest.approx(expected, abs=1e-8)
    assert "nu" in build_model(Phi, t, "student_t", **PRIOR).named_vars  # learned by default

    labels = np.array(["b", "a", "c"])[rng.integers(0, 3, 30)]
    softmax = build_model(Phi, labels, "categorical", a=2.0, b=0.5)
    assert list(softmax.coords["class"]) == ["a", "b", "c"]
    assert softmax.named_vars_to_dims["w"] == ("basis", "class")
    alpha, z = rng.gamma(2.0, 1.0, (6, 3)), rng.normal(size=(6, 3))
    logits = Phi @ (z / np.sqrt(alpha))
    log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    codes = np.searchsorted(["a", "b", "c"], labels)
    expected = (
        _log_gamma_on_log_scale(alpha, 2.0, 0.5)
        + stats.norm.logpdf(z).sum()
        + log_p[np.arange(30), codes].sum()
    )
    assert _logp(softmax, {"alpha_log__": np.log(alpha), "z": z}) == pytest.approx(expected, 1e-10)
