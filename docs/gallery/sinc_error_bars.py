"""
Regression with error bars
==========================

A relevance vector regression of noisy sinc data: the predictive mean, its 95 % band
(noise plus weight uncertainty, Tipping 2001 eq. 21-22) and the few training inputs whose
basis functions survive, the relevance vectors. Away from the data the band shrinks to
the noise level: a local kernel has nothing to be uncertain about there (App. D.1).
"""

import matplotlib.pyplot as plt
import numpy as np

from bayes_rvm import RVR

rng = np.random.default_rng(0)
X = np.sort(rng.uniform(-10, 10, 100))[:, None]
y = np.sinc(X[:, 0] / np.pi) + rng.normal(0, 0.1, 100)

model = RVR(kernel="rbf", gamma=0.25).fit(X, y)
X_plot = np.linspace(-14, 14, 500)[:, None]
mean, std = model.predict(X_plot, return_std=True)

fig, ax = plt.subplots(figsize=(7, 3.5))
ax.fill_between(X_plot[:, 0], mean - 1.96 * std, mean + 1.96 * std, alpha=0.3,
                label="95 % predictive")
ax.plot(X_plot[:, 0], np.sinc(X_plot[:, 0] / np.pi), color="0.4", lw=1, label="sin(x)/x")
ax.plot(X_plot[:, 0], mean, color="C0", label="predictive mean")
ax.scatter(X[:, 0], y, s=8, color="k", label="data")
rv = model.relevance_indices_
ax.scatter(X[rv, 0], y[rv], s=120, facecolors="none", edgecolors="C3", lw=1.5,
           label=f"{rv.size} relevance vectors")
ax.set(xlabel="x", ylabel="y", title="RVR on noisy sinc")
ax.legend(fontsize=7, loc="upper right")
fig.tight_layout()
