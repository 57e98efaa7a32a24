"""
Your own PyMC model with an RVM block
=====================================

A model the package did not build: sparse RBF weights with the RVM prior
(:func:`bayes_rvm.rvm_weights`), a random intercept per group, and Student-t noise for the
outliers. It is sampled with :func:`pymc.sample`, predicted at new inputs with
:func:`pymc.set_data` and :func:`pymc.sample_posterior_predictive`, and compared through
:func:`arviz.compare` with the evidence fit of an :class:`bayes_rvm.RVR` (which knows
neither the groups nor the outliers) and with a plain PyMC Gaussian process
(:class:`pymc.gp.Marginal`).
"""

# %%
# Data: sinc plus a group offset, with heavy-tailed noise
# --------------------------------------------------------
import logging

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pymc as pm
import xarray as xr
from scipy.linalg import cho_factor, cho_solve

import bayes_rvm as br
from bayes_rvm.kernels import RBF

logging.getLogger("pymc").setLevel(logging.ERROR)
rng = np.random.default_rng(3)
n, n_groups = 80, 4
X = rng.uniform(-10, 10, (n, 1))
group = rng.integers(n_groups, size=n)
offset = np.array([-0.3, 0.0, 0.2, 0.4])
t = np.sinc(X[:, 0] / np.pi) + offset[group] + 0.05 * rng.standard_t(2, n)

# %%
# The model: RVM weights + random intercept + Student-t noise
# -----------------------------------------------------------
# Twenty RBF basis functions on a grid; ``rvm_weights`` declares ``alpha_i ~ Gamma(a, b)``
# and ``w_i ~ N(0, 1 / alpha_i)`` and returns ``w``. The prior ``a = 2, b = a s^2`` says the
# weights are of the size ``s`` of the targets.
centres = np.linspace(-10, 10, 20)[:, None]
kernel = RBF(0.25)
s = float(np.std(t))
coords = {"basis": np.round(centres[:, 0], 2), "group": np.arange(n_groups), "obs": np.arange(n)}
with pm.Model(coords=coords) as model:
    Phi = pm.Data("Phi", kernel(X, centres), dims=("obs", "basis"))
    g = pm.Data("g", group, dims="obs")
    w = br.rvm_weights(Phi, 2.0, 2.0 * s**2)
    sigma_u = pm.HalfNormal("sigma_u", 0.5)
    u = pm.Deterministic("u", sigma_u * pm.Normal("u_z", dims="group"), dims="group")
    mu = pm.Deterministic("mu", Phi @ w + u[g], dims="obs")
    nu = pm.Gamma("nu", 2.0, 0.1)
    sigma = pm.HalfNormal("sigma", 0.5)
    pm.StudentT("t", nu=nu, mu=mu, sigma=sigma, observed=t, dims="obs")
    idata = pm.sample(300, tune=300, chains=2, cores=1, random_seed=1, progressbar=False)
    pm.compute_log_likelihood(idata, progressbar=False)

print(az.summary(idata, var_names=["u", "sigma", "nu"]))

# %%
# Predictions at new inputs, for group 0
# --------------------------------------
X_new = np.linspace(-10, 10, 150)[:, None]
with model:
    pm.set_data(
        {"Phi": kernel(X_new, centres), "g": np.zeros(len(X_new), dtype=int)},
        coords={"obs": np.arange(len(X_new))},
    )
    pred = pm.sample_posterior_predictive(
        idata, var_names=["mu"], predictions=True, random_seed=2, progressbar=False
    )
mu_new = pred["predictions"]["mu"]

# %%
# The evidence fit and a plain Gaussian process
# ---------------------------------------------
# The RVR's evidence fit becomes a DataTree whose ``log_likelihood`` holds its exact
# leave-one-out terms at the type-II estimates (optimistic: those were fitted on all the
# data).
rvr = br.RVR(kernel="rbf", gamma=0.25).fit(X, t)
evidence = br.to_inference_data(rvr, X, t, X_new=X_new, random_seed=1)

with pm.Model() as gp_model:
    ell = pm.Gamma("ell", 2.0, 1.0)
    eta = pm.HalfNormal("eta", 1.0)
    level = pm.Normal("level", 0.0, 1.0)
    cov = eta**2 * pm.gp.cov.ExpQuad(1, ls=ell)
    gp = pm.gp.Marginal(mean_func=pm.gp.mean.Constant(level), cov_func=cov)
    noise = pm.HalfNormal("noise", 0.5)
    gp.marginal_likelihood("t", X=X, y=t, sigma=noise)
    gp_idata = pm.sample(300, tune=300, chains=2, cores=1, random_seed=1, progressbar=False)


# %%
# The GP's likelihood is one multivariate normal, so :func:`pymc.compute_log_likelihood`
# gives one term per draw, not one per observation. Its pointwise terms are the
# leave-one-out conditionals of that normal, ``t_n | t_-n ~ N(t_n - c_n / g_n, 1 / g_n)``
# with ``c = C^-1 (t - level)`` and ``g = diag(C^-1)`` (Bürkner, Gabry and Vehtari 2021).
def gp_loo_terms(posterior):
    d2 = (X - X.T) ** 2
    draws = posterior[["ell", "eta", "level", "noise"]].stack(sample=("chain", "draw"))
    terms = []
    for ell, eta, level, noise in zip(*(draws[v].values for v in draws.data_vars), strict=True):
        C = eta**2 * np.exp(-0.5 * d2 / ell**2) + noise**2 * np.eye(n)
        C_inv = cho_solve(cho_factor(C), np.eye(n))
        c, g = C_inv @ (t - level), np.diag(C_inv)
        terms.append(-0.5 * (np.log(2 * np.pi) - np.log(g) + c**2 / g))
    shape = (posterior.sizes["chain"], posterior.sizes["draw"], n)
    return xr.Dataset({"t": (("chain", "draw", "obs"), np.reshape(terms, shape))})


gp_idata["log_likelihood"] = gp_loo_terms(gp_idata["posterior"].to_dataset())

# %%
# Compare by PSIS-LOO
# -------------------
comparison = az.compare(
    {"RVM + intercept, Student-t": idata, "GP": gp_idata, "RVR evidence": evidence}
)
print(comparison)

# %%
# The figure: the data by group, the predictive mean for group 0 with its 90 % band, and the
# evidence fit (one curve for all groups); right, elpd_loo with its standard error.
fig, (ax, ax_cmp) = plt.subplots(1, 2, figsize=(10, 3.6), width_ratios=(2, 1))
ax.scatter(X[:, 0], t, c=group, cmap="viridis", s=12, label="data (colour: group)")
lo, mid, hi = mu_new.quantile([0.05, 0.5, 0.95], dim=("chain", "draw")).values
ax.fill_between(X_new[:, 0], lo, hi, alpha=0.3, color="C1")
ax.plot(X_new[:, 0], mid, color="C1", label="RVM + intercept (group 0)")
f_evidence = evidence["predictions"]["f"].mean(("chain", "draw"))
ax.plot(X_new[:, 0], f_evidence, "k--", label="RVR evidence")
ax.set(xlabel="x", ylabel="t")
ax.legend(fontsize=7)
ax_cmp.errorbar(comparison["elpd"], comparison.index, xerr=comparison["se"], fmt="o")
ax_cmp.set(xlabel="elpd_loo")
fig.tight_layout()
