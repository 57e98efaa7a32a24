"""
Classification boundary and probabilities
=========================================

A relevance vector classifier on two interleaved half-moons: the probability of class 1
(shading), the decision boundary at probability 1/2 and the relevance vectors, which sit
inside the classes rather than on the margin as support vectors do.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons

from bayes_rvm import RVC

X, y = make_moons(200, noise=0.25, random_state=0)
model = RVC(kernel="rbf", gamma=2.0).fit(X, y)

g1, g2 = np.meshgrid(np.linspace(-2, 3, 200), np.linspace(-1.5, 2, 150))
proba = model.predict_proba(np.column_stack([g1.ravel(), g2.ravel()]))[:, 1]

fig, ax = plt.subplots(figsize=(6, 4))
shade = ax.contourf(g1, g2, proba.reshape(g1.shape), levels=np.linspace(0, 1, 11),
                    cmap="RdBu_r", alpha=0.6)
ax.contour(g1, g2, proba.reshape(g1.shape), levels=[0.5], colors="k", linestyles="--")
ax.scatter(*X[y == 0].T, s=10, color="C0", edgecolors="k", lw=0.3)
ax.scatter(*X[y == 1].T, s=10, color="C3", edgecolors="k", lw=0.3)
ax.scatter(*model.relevance_vectors_.T, s=140, facecolors="none", edgecolors="k", lw=1.5,
           label=f"{model.n_relevance_} relevance vectors")
fig.colorbar(shade, ax=ax, label="P(class 1)")
ax.set(xlabel="x1", ylabel="x2", title="RVC on two moons")
ax.legend(fontsize=8, loc="lower left")
fig.tight_layout()
