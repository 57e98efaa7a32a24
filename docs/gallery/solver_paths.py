"""
The evidence path of each solver
================================

The log evidence (Tipping 2001, eq. 36) after every iteration of the three type-II
solvers on the same data: the sequential algorithm (one basis function added,
re-estimated or deleted per step, the default), MacKay's re-estimation from the full
basis, and EM, which never decreases the objective but takes thousands of iterations.
The sequential solver starts at a noise level below any plausible optimum and re-estimates
it once its steps converge: its evidence climbs in jumps at those noise updates.
"""

import os
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from bayes_rvm import RVR

rng = np.random.default_rng(0)
X = np.linspace(-10, 10, 100)[:, None]
y = np.sinc(X[:, 0] / np.pi) + rng.normal(0, 0.1, 100)
# CI's small mode stops EM early (it needs about 30,000 iterations here)
max_iter = 2_000 if os.environ.get("BAYES_RVM_SMALL") == "1" else None

fig, ax = plt.subplots(figsize=(6.5, 3.5))
for solver in ("sequential", "mackay", "em"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = RVR(kernel="rbf", gamma=0.25, solver=solver, max_iter=max_iter).fit(X, y)
    path = model.log_evidence_path_
    ax.plot(np.arange(1, path.size + 1), path,
            label=f"{solver}: {model.n_iter_} iterations, {model.relevance_indices_.size} RVs")
ax.set(xscale="log", xlabel="iteration", ylabel="log evidence",
       ylim=(model.log_evidence_ - 40, model.log_evidence_ + 5),
       title="three solvers, one objective")
ax.legend(fontsize=8)
fig.tight_layout()
