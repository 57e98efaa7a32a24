"""
Relevance vectors of a surface
==============================

Regression of a two-dimensional surface, sin(r)/r of the distance r from the origin, from
300 noisy samples: the fitted surface and where its relevance vectors lie. A handful of
basis functions carry the whole fit.
"""

import matplotlib.pyplot as plt
import numpy as np

from bayes_rvm import RVR


def surface(X):
    return np.sinc(np.hypot(X[:, 0], X[:, 1]) / np.pi)


rng = np.random.default_rng(1)
X = rng.uniform(-8, 8, (300, 2))
y = surface(X) + rng.normal(0, 0.05, 300)
model = RVR(kernel="rbf", gamma=0.3).fit(X, y)

g = np.linspace(-8, 8, 120)
g1, g2 = np.meshgrid(g, g)
grid = np.column_stack([g1.ravel(), g2.ravel()])
fitted = model.predict(grid).reshape(g1.shape)
rmse = np.sqrt(np.mean((fitted.ravel() - surface(grid)) ** 2))

fig, ax = plt.subplots(figsize=(5.5, 4.5))
shade = ax.contourf(g1, g2, fitted, levels=20, cmap="viridis")
ax.scatter(*X.T, s=4, color="w", alpha=0.6, label="data")
ax.scatter(*model.relevance_vectors_.T, s=90, facecolors="none", edgecolors="C3", lw=1.8,
           label=f"{model.relevance_vectors_.shape[0]} relevance vectors")
fig.colorbar(shade, ax=ax, label="predictive mean")
ax.set(xlabel="x1", ylabel="x2", title=f"sin(r)/r from 300 points, RMSE {rmse:.3f}")
ax.legend(fontsize=8, loc="upper right")
fig.tight_layout()
