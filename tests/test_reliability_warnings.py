"""Warnings that matter: a run that stops early says so and what to do."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from bayes_rvm import RVR, solvers
from bayes_rvm.solvers import InterpolationWarning


def test_em_stops_when_the_evidence_stalls(monkeypatch):
    """EM's steps shrink geometrically: on 200 diabetes rows the gradient test alone takes
    19359 iterations. The run stops once 100 iterations gain less than ``tol`` nats, warns,
    and ends within 1e-5 nats of where the gradient test ends."""
    X, y = load_diabetes(return_X_y=True)
    X, y = StandardScaler().fit_transform(X[:200]), y[:200]
    with pytest.warns(ConvergenceWarning, match=r"stopped after \d+ iterations.*solver='mackay'"):
        em = RVR(solver="em").fit(X, y)
    assert em.result_.stalled and not em.result_.converged
    assert em.n_iter_ < 10_000
    monkeypatch.setattr(solvers.em, "RULES", dataclasses.replace(solvers.em.RULES, stall_window=0))
    full = RVR(solver="em").fit(X, y)
    assert full.result_.converged and full.n_iter_ > 15_000
    assert em.log_evidence_ == pytest.approx(full.log_evidence_, abs=1e-5)
    np.testing.assert_allclose(em.predict(X), full.predict(X), atol=1e-3 * np.std(y))


def test_interpolating_fit_warns_and_says_what_to_do():
    """Standardised diabetes with gamma=1: the evidence drives the noise to ~0 and keeps
    every point (noise sd 2e-4 on targets of sd 77)."""
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    with pytest.warns(InterpolationWarning, match=r"interpolates.*smaller gamma.*noise_var"):
        model = RVR(gamma=1.0, solver="sequential").fit(X, y)
    assert model.result_.gamma.sum() > 0.9 * y.size
    # a fixed noise is the user's choice: no warning
    RVR(gamma=1.0, solver="sequential", noise_var=1.0).fit(X, y)


@pytest.mark.parametrize("noise_var", [1e-300, 1e300])
def test_a_fixed_noise_past_the_float_range_is_refused_without_overflow(noise_var):
    """A fixed noise whose squared precision (in S and Q) is past the float range on unit-scale
    targets: a ValueError naming the range, not hundreds of overflow warnings."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-5, 5, size=(40, 1))
    y = np.sinc(X[:, 0]) + 0.1 * rng.normal(size=40)
    with pytest.raises(ValueError, match="outside the float range"):
        RVR(gamma=0.25, noise_var=noise_var).fit(X, y)
