"""The likelihood registry: what each entry claims is what the package does."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from bayes_rvm import fit_type2
from bayes_rvm.likelihoods import LIKELIHOODS, get_likelihood
from bayes_rvm.solvers import SOLVERS, default_solver


def _problem(name: str, rng):
    Phi = rng.normal(size=(40, 6))
    f = Phi[:, 0] - Phi[:, 1]
    if name == "gaussian":
        return Phi, f + rng.normal(0, 0.1, 40)
    if name == "bernoulli":
        return Phi, (f > 0).astype(float)
    return Phi, np.digitize(f, [-0.5, 0.5]).astype(float)


def test_names():
    assert list(LIKELIHOODS) == ["gaussian", "bernoulli", "categorical", "student_t"]
    with pytest.raises(ValueError, match="unknown likelihood 'poisson'; expected one of"):
        get_likelihood("poisson")


@pytest.mark.parametrize("name", ["gaussian", "bernoulli", "categorical"])
@pytest.mark.parametrize("solver", list(SOLVERS))
def test_listed_solvers_fit_and_the_others_refuse(name, solver, rng):
    Phi, t = _problem(name, rng)
    if solver in LIKELIHOODS[name].solvers:
        with warnings.catch_warnings():  # accepting the likelihood is the point, not the fit
            warnings.simplefilter("ignore", ConvergenceWarning)
            assert fit_type2(Phi, t, name, solver, max_iter=30).likelihood == name
    else:
        with pytest.raises(ValueError, match=f"solver '{solver}' does not support"):
            fit_type2(Phi, t, name, solver)


def test_student_t_has_no_type2_solver(rng):
    Phi, t = _problem("gaussian", rng)
    for solver in ("auto", *SOLVERS):
        with pytest.raises(ValueError, match="no type-II solver does: fit it by MCMC or VI"):
            fit_type2(Phi, t, "student_t", solver)
    assert default_solver("auto", "categorical") == "mackay"
    assert default_solver(None, "bernoulli") == "sequential"
    assert default_solver("auto", "gaussian", a=1.0) == "mackay"


def test_scale_objectives_resolve():
    from bayes_rvm.solvers import scales

    gaussian = get_likelihood("gaussian").scale_gradient()
    assert gaussian is scales.log_evidence_scale_gradient
    bernoulli = get_likelihood("bernoulli").scale_gradient()
    assert bernoulli is scales.log_evidence_scale_gradient_bernoulli
    with pytest.raises(ValueError, match="learning input scales supports likelihood"):
        get_likelihood("categorical").scale_gradient()


def test_pymc_terms_resolve_lazily():
    """``import bayes_rvm`` and the registry do not import PyMC; asking for a term does."""
    code = (
        "import sys, bayes_rvm, bayes_rvm.likelihoods as lk\n"
        "assert [lk.get_likelihood(n).pymc for n in lk.LIKELIHOODS]\n"
        "assert 'pymc' not in sys.modules, 'the registry imported PyMC'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    from bayes_rvm import pymc_model

    for name in LIKELIHOODS:
        assert get_likelihood(name).pymc_term() is pymc_model._LIKELIHOOD_TERMS[name]
    assert set(pymc_model.LIKELIHOODS) == set(pymc_model._LIKELIHOOD_TERMS) == set(LIKELIHOODS)
