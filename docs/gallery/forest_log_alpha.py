"""
Forest of log alpha
===================

Automatic relevance determination on eight inputs, of which three matter
(t = 2 x1 - x2 + 0.5 x3 + noise): the full posterior of log10 alpha_i for each input's
weight (NUTS on the collapsed model, the weights integrated out), next to the evidence
fit's point estimates. A small alpha_i lets the weight be large: the input is used. Each
alpha_i learns from one weight only, so its posterior stays about a decade wide; the five
unused inputs sit two decades higher, where the evidence fit puts large or infinite
alpha_i (pruned inputs have no star).
"""

import logging
import os

import matplotlib.pyplot as plt
import numpy as np

import bayes_rvm as br

logging.getLogger("pymc").setLevel(logging.ERROR)
DRAWS = 200 if os.environ.get("BAYES_RVM_SMALL") == "1" else 1000

rng = np.random.default_rng(3)
Phi = rng.normal(size=(60, 8))  # the basis: the eight inputs themselves
t = 2.0 * Phi[:, 0] - 1.0 * Phi[:, 1] + 0.5 * Phi[:, 2] + rng.normal(0, 0.3, 60)

evidence_fit = br.fit_type2(Phi, t)
s = float(np.std(t))
model = br.build_model(
    Phi, t, a=1.0, b=1e-2, c=2.0, d=2.0 * (s / 2) ** 2, parameterization="collapsed"
)
tree = br.sample(model, draws=DRAWS, tune=DRAWS, chains=2, random_seed=1, target_accept=0.95)
log_alpha = np.log10(tree["posterior"]["alpha"])
low, mid, high = (log_alpha.quantile(q, dim=("chain", "draw")).values for q in (0.05, 0.5, 0.95))

rows = np.arange(Phi.shape[1])
point = np.full(rows.size, np.nan)
point[evidence_fit.active] = np.log10(evidence_fit.alpha)
fig, ax = plt.subplots(figsize=(7, 3.8))
ax.hlines(rows, low, high, color="C0", lw=2, label="MCMC: 90 % interval")
ax.plot(mid, rows, "o", color="C0", label="MCMC: median")
ax.plot(point, rows, "*", ms=13, color="C3", label="evidence fit (kept inputs)")
ax.set_yticks(rows, [f"x{i + 1}" for i in rows])
ax.invert_yaxis()
ax.set(xlabel="log10 alpha_i", title="which inputs matter: posterior of log10 alpha")
ax.legend(fontsize=7, loc="upper right")
fig.tight_layout()
