"""
Evidence, MCMC and VI on the same data
======================================

One model, three fits: the type-II (evidence) fit, NUTS and ADVI of the same hierarchical
model over the relevance vectors' basis functions, with proper Gamma priors (the paper's
flat prior cannot be sampled). The 95 % predictive bands, with no data in the grey gap.
"""

import logging
import os

import matplotlib.pyplot as plt
import numpy as np

import bayes_rvm as br

logging.getLogger("pymc").setLevel(logging.ERROR)
DRAWS, VI_STEPS = (200, 5_000) if os.environ.get("BAYES_RVM_SMALL") == "1" else (1000, 30_000)

rng = np.random.default_rng(4)
X = np.sort(rng.uniform(-10, 10, 60))[:, None]
X = X[(X[:, 0] < 1) | (X[:, 0] > 5)]
t = np.sinc(X[:, 0] / np.pi) + rng.normal(0, 0.1, X.shape[0])
X_new = np.linspace(-10, 10, 201)[:, None]

evidence_fit = br.RVR(kernel="rbf", gamma=0.25).fit(X, t)
s = float(np.std(t))
model = br.model_from_estimator(
    evidence_fit, X, t, basis="relevant",  # the collapsed form: w integrated out
    a=2.0, b=2.0 * s**2, c=2.0, d=2.0 * (s / 2) ** 2,
)
fits = {
    "evidence": br.to_inference_data(evidence_fit, X, t, X_new=X_new, draws=DRAWS,
                                     random_seed=1),
    "MCMC (NUTS)": br.sample(model, draws=DRAWS, tune=DRAWS, chains=2, random_seed=1,
                             X_new=X_new, target_accept=0.95),
    "VI (ADVI)": br.fit_vi(model, n=VI_STEPS, draws=DRAWS, random_seed=1, X_new=X_new),
}

fig, axes = plt.subplots(1, 3, sharey=True, figsize=(10, 3.2))
for ax, (name, tree) in zip(axes, fits.items(), strict=True):
    draws = tree["predictions"]["t"].stack(sample=("chain", "draw")).values
    low, high = np.quantile(draws, [0.025, 0.975], axis=1)
    ax.axvspan(1, 5, color="0.92", zorder=0)
    ax.fill_between(X_new[:, 0], low, high, alpha=0.3)
    ax.plot(X_new[:, 0], draws.mean(axis=1), color="C0")
    ax.plot(X_new[:, 0], np.sinc(X_new[:, 0] / np.pi), color="0.4", lw=1)
    ax.scatter(X[:, 0], t, s=6, color="k")
    ax.set(title=name, xlabel="x", ylim=(-0.7, 1.4))
fig.tight_layout()
