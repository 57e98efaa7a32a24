"""
The evidence as a function of one alpha
=======================================

Everything in the log evidence that depends on one precision alpha_i is
l(alpha_i) = [log alpha_i - log(alpha_i + s_i) + q_i^2 / (alpha_i + s_i)] / 2
(Faul & Tipping 2002): a single maximum at s_i^2 / (q_i^2 - s_i) when q_i^2 > s_i, at
infinity otherwise. Left, a kept basis function; right, the pruned one closest to being
kept.
"""

import matplotlib.pyplot as plt
import numpy as np

from bayes_rvm import RVR, evidence
from bayes_rvm.basis import KernelBasis

rng = np.random.default_rng(1)
X = np.linspace(-10, 10, 100)[:, None]
t = np.sinc(X[:, 0] / np.pi) + rng.normal(0, 0.1, 100)
model = RVR(kernel="rbf", gamma=0.25).fit(X, t)
fit = model.result_

# s_i, q_i of every column against the fitted model (Faul & Tipping 2002, eq. 9-11)
basis = KernelBasis(X, model.kernel_, bias=True)
Phi = basis.toarray()
beta = fit.beta
S, Q = evidence.sparsity_quality(
    beta * Phi.T @ Phi[:, fit.active], beta * basis.sq_norms(), beta * (Phi.T @ t),
    fit.precision_chol, fit.mu,
)
alpha = np.full(fit.n_basis, np.inf)
alpha[fit.active] = fit.alpha
s, q = evidence.own_sparsity_quality(S, Q, alpha)
theta = q**2 - s

grid = np.logspace(-4, 6, 300)
fig, axes = plt.subplots(1, 2, figsize=(8, 3.2), sharey=False)
kept = fit.active[np.argmin(fit.gamma)]
pruned = fit.inactive[np.argmax(theta[fit.inactive])]
for ax, i, label in zip(axes, [kept, pruned], ["kept", "pruned"], strict=True):
    ax.plot(grid, evidence.log_likelihood_alpha_i(grid, s[i], q[i]))
    best = evidence.optimal_alpha(s[i], q[i])
    if np.isfinite(best):
        ax.axvline(best, color="C3", ls="--", lw=1, label=f"maximum at {best:.3g}")
        ax.legend(fontsize=7)
    ax.set(xscale="log", xlabel="alpha_i", title=f"{label}: q² - s = {theta[i]:.3g}")
axes[0].set_ylabel("l(alpha_i)")
fig.tight_layout()
