"""scikit-learn's estimator checks for RVR and RVC under every solver and kernel.

One parametrised place for ``parametrize_with_checks``. The fast tier checks the
defaults RVR() and RVC(); the slow tier checks the cross product of the solvers
("mackay", "em", "sequential") and every kernel of :data:`bayes_rvm.kernels.KERNELS`.

The checks test the estimator contract (cloning, validation, fitted attributes, dtypes,
idempotence, pickling, predictions of the right shape and accuracy), not how tightly the
evidence is maximised. Where the default ``tol=1e-6`` makes the suite too slow to run in
CI, the instances use a looser ``tol`` (the contract does not depend on it):

- EM converges linearly (Tipping 2001, App. A.3): on the checks' data sets it needs
  10^4-10^5 iterations to reach ``tol=1e-6`` (one regression suite took several minutes);
  ``tol=1e-2`` brings RVR under ~5 s per kernel.
- MacKay's updates for classification take thousands of Laplace steps on the separable
  blobs of ``check_classifiers_classes``; ``tol=1e-3`` gives ~10-15 s per kernel.
- RVC with EM takes ~1 minute per kernel even at ``tol=1e-2`` (every EM step is a Laplace
  fit over a still large basis on 300 points): 3.4 minutes for the four non-RBF kernels.

The default RVR() and RVC() (both the sequential solver) are checked at the default
``tol`` in the fast tier.

:class:`~bayes_rvm.solvers.EmptyModelWarning` is ignored on purpose: some checks fit
noise or a handful of points, for which the empty model is the evidence's answer, and
the warning says so (what the empty model predicts is tested in test_reliability.py).
So is :class:`~bayes_rvm.solvers.InterpolationWarning`: the checks fit ten-point data
sets exactly (tested in test_reliability_warnings.py).
"""

from __future__ import annotations

import warnings

import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from bayes_rvm import RVC, RVR
from bayes_rvm.kernels import KERNELS

#: tol per (estimator, solver) for the cross product (see the module notes)
TOL = {
    ("RVR", "mackay"): 1e-6,
    ("RVR", "em"): 1e-2,
    ("RVR", "sequential"): 1e-6,
    ("RVC", "mackay"): 1e-3,
    ("RVC", "em"): 1e-2,
    ("RVC", "sequential"): 1e-6,
}


def _cross_product():
    estimators = []
    for estimator in (RVR, RVC):
        for solver in ("mackay", "em", "sequential"):
            for kernel in KERNELS:
                name = estimator.__name__
                estimators.append(estimator(kernel=kernel, solver=solver, tol=TOL[name, solver]))
    return estimators


EMPTY_MODEL_EXPECTED = pytest.mark.filterwarnings("ignore::bayes_rvm.solvers.EmptyModelWarning")
INTERPOLATION_EXPECTED = pytest.mark.filterwarnings(
    "ignore::bayes_rvm.solvers.InterpolationWarning"
)


@EMPTY_MODEL_EXPECTED
@INTERPOLATION_EXPECTED
@parametrize_with_checks([RVR(), RVC()])
def test_estimator_checks_fast(estimator, check):
    check(estimator)


@pytest.mark.slow
@EMPTY_MODEL_EXPECTED
@INTERPOLATION_EXPECTED
@parametrize_with_checks(_cross_product())
def test_estimator_checks_every_solver_and_kernel(estimator, check):
    if "sample_weight" not in getattr(check, "func", check).__name__:
        check(estimator)
        return
    # The sample-weight checks fit 16 noise-free rows, four copies of each: MacKay's
    # updates do not reach tol=1e-6 there (with or without weights); the checks are
    # about the weights' shape and equivalences, which hold for the last iterate.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)
