"""The likelihoods of the sparse Bayesian model and what supports each: one registry.

Every place that accepts ``likelihood=`` (:func:`~bayes_rvm.fit_type2`, the input-scale
fit, the evidence DataTree, the PyMC model) looks the name up here, so that the list of
names and what each one supports live in one table:

===========  ========  ======================  ============  =========  ========
name         link      type-II solvers         input scales  PyMC term  DataTree
===========  ========  ======================  ============  =========  ========
gaussian     identity  sequential, mackay, em  yes           yes        yes
bernoulli    logistic  sequential, mackay, em  yes           yes        yes
categorical  softmax   mackay, em              no            no         no
student_t    identity  none (full Bayes only)  no            yes        no
===========  ========  ======================  ============  =========  ========

The PyMC term is resolved when asked for (:meth:`Likelihood.pymc_term`), so that
``import bayes_rvm`` does not import PyMC.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from bayes_rvm._validation import lookup
from bayes_rvm.laplace import Bernoulli, Categorical

__all__ = ["LIKELIHOODS", "Likelihood", "get_likelihood"]


@dataclass(frozen=True)
class Likelihood:
    """One observation model ``p(t | f)`` with ``f = Phi w`` and what supports it.

    An entry of :data:`LIKELIHOODS`; look one up with :func:`get_likelihood`.

    Attributes
    ----------
    name : str
    link : str
        How the latent function ``f`` gives the mean of ``t``: ``"identity"``,
        ``"logistic"`` (eq. 23) or ``"softmax"`` (eq. 28).
    solvers : tuple of str
        The type-II solvers (:data:`bayes_rvm.solvers.SOLVERS`) that fit it; empty when the
        model is fitted by MCMC or VI only.
    make_link : callable or None
        ``make_link(t, sample_weight=None)`` builds the classification likelihood the
        Laplace solvers take (:class:`~bayes_rvm.laplace.Bernoulli`,
        :class:`~bayes_rvm.laplace.Categorical`), with optional per-row weights of the log
        likelihood; ``None`` for Gaussian noise (the closed-form posterior).
    scale_objective : str or None
        Name of the function in :mod:`bayes_rvm.solvers.scales` giving the log evidence
        and its gradient in the log input scales; ``None``: scales cannot be learned.
    pymc : bool
        Whether :func:`~bayes_rvm.build_model` declares this likelihood.
    datatree : bool
        Whether :func:`~bayes_rvm.to_inference_data` writes an evidence fit of it.
    """

    name: str
    link: str
    solvers: tuple[str, ...]
    make_link: Callable[..., Bernoulli | Categorical] | None
    scale_objective: str | None
    pymc: bool
    datatree: bool

    def check_solver(self, solver: str) -> None:
        """Raise ``ValueError`` unless ``solver`` fits this likelihood by type-II ML."""
        if solver not in self.solvers:
            able = [entry.name for entry in LIKELIHOODS.values() if solver in entry.solvers]
            raise ValueError(
                f"solver {solver!r} does not support likelihood={self.name!r}"
                + (
                    f"; use one of {', '.join(repr(s) for s in self.solvers)}"
                    if self.solvers
                    else " (no type-II solver does: fit it by MCMC or VI)"
                )
                + f". Solver {solver!r} fits {', '.join(repr(n) for n in able) or 'none'}."
            )

    def scale_gradient(self) -> Callable:
        """``f(basis, t, active, alpha, beta) -> (log evidence, gradient in log eta)``.

        Raises
        ------
        ValueError
            If input scales cannot be learned for this likelihood.
        """
        if self.scale_objective is None:
            valid = ", ".join(repr(n) for n, e in LIKELIHOODS.items() if e.scale_objective)
            raise ValueError(
                f"learning input scales supports likelihood {valid}; got {self.name!r}"
            )
        scales = importlib.import_module("bayes_rvm.solvers.scales")
        return getattr(scales, self.scale_objective)

    def pymc_term(self) -> Callable:
        """The function that declares ``t`` in a PyMC model (imports PyMC).

        Raises
        ------
        ValueError
            If the PyMC model does not declare this likelihood.
        """
        terms = importlib.import_module("bayes_rvm.pymc_model")._LIKELIHOOD_TERMS
        if not self.pymc or self.name not in terms:
            valid = ", ".join(repr(n) for n in terms)
            raise ValueError(f"the PyMC model declares likelihood {valid}; got {self.name!r}")
        return terms[self.name]


_ALL = ("sequential", "mackay", "em")
_GRADIENT = "log_evidence_scale_gradient"

#: Likelihood name -> :class:`Likelihood`.
LIKELIHOODS = {
    row[0]: Likelihood(*row)
    for row in (
        # name, link, type-II solvers, Laplace link, scale objective, PyMC term, DataTree
        ("gaussian", "identity", _ALL, None, _GRADIENT, True, True),
        ("bernoulli", "logistic", _ALL, Bernoulli, _GRADIENT + "_bernoulli", True, True),
        ("categorical", "softmax", ("mackay", "em"), Categorical, None, True, False),
        ("student_t", "identity", (), None, None, True, False),
    )
}


def get_likelihood(name) -> Likelihood:
    """The registry entry of ``name``; ``ValueError`` listing the valid names otherwise."""
    return lookup(LIKELIHOODS, name, "likelihood")
