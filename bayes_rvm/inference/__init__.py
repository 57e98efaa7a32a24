"""MCMC, VI and evidence fits of the sparse Bayesian model as ArviZ ``DataTree`` objects.

Every fit returned here has the same layout, so that the ways of fitting the model line
up in ArviZ:

- ``posterior``: ``alpha``, ``log_alpha`` and ``w`` (dims ``chain, draw, basis``; plus
  ``class`` for the categorical likelihood), ``beta`` and ``log_beta`` (regression);
- ``log_likelihood``: ``t`` (``chain, draw, obs``), pointwise terms for ``az.loo`` and
  ``az.compare``: in the weight-space forms and the evidence fit ``log p(t_n | w, beta)``
  (for the evidence fit at draws of ``w`` given the type-II ``alpha, beta``, so its
  PSIS-LOO is conditional on them; :func:`compare` reports that LOO in closed form); in
  the collapsed form the exact leave-one-out conditionals ``log p(t_n | t_-n, alpha,
  beta)`` of the Gaussian marginal (the group's ``pointwise`` attribute says which);
- ``observed_data``: ``t``; ``constant_data``: ``Phi``;
- ``predictions`` (when new design rows are given, or from :func:`predict`):
  ``f = Phi_new w`` (the mean function, or the logits in classification) and ``t`` (a draw
  of a new target) per posterior draw, with ``predictions_constant_data`` holding
  ``Phi_new``;
- ``sample_stats``: the sampler's statistics (MCMC) or ``loss``, the negative lower bound
  per iteration (VI);
- root attributes ``fit`` (``"mcmc"``, ``"vi"``, ``"evidence"``), ``method``,
  ``likelihood``, ``parameterization`` and ``sampling_diagnostics`` (whether r_hat, ESS
  and MCSE mean anything for these draws), and ``partial = 1`` for a run that was
  interrupted (with a warning).

For the models :func:`~bayes_rvm.build_model` declares, the posterior draws of ``w``
carry everything the predictions need, so predictions are computed from them in closed
form; for the collapsed model ``w`` is drawn exactly from ``p(w | alpha, beta, t)`` at
every draw of the hyperparameters. For any other model (your own, with
:func:`~bayes_rvm.rvm_weights`), :func:`predict` and :func:`compare` take the model and
use its own observed variable, distribution and mean (module
:mod:`bayes_rvm.inference.prediction`).

Modules: :mod:`~bayes_rvm.inference.sampling` (``sample``, ``fit_vi``),
:mod:`~bayes_rvm.inference.export` (``to_inference_data`` and the layout),
:mod:`~bayes_rvm.inference.prediction` (``predict``),
:mod:`~bayes_rvm.inference.estimator` (``model_from_estimator``),
:mod:`~bayes_rvm.inference.comparison` (``compare``).
"""

from bayes_rvm.inference.comparison import Comparison, compare
from bayes_rvm.inference.estimator import model_from_estimator
from bayes_rvm.inference.export import to_inference_data
from bayes_rvm.inference.prediction import predict
from bayes_rvm.inference.sampling import _SAMPLE_OPTIONS as _SAMPLE_OPTIONS
from bayes_rvm.inference.sampling import NUTS_SAMPLERS, VI_METHODS, fit_vi, sample

__all__ = [
    "NUTS_SAMPLERS",
    "VI_METHODS",
    "Comparison",
    "compare",
    "fit_vi",
    "model_from_estimator",
    "predict",
    "sample",
    "to_inference_data",
]
