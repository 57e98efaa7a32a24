"""MCMC, VI and evidence fits of the sparse Bayesian model as ArviZ ``DataTree`` objects.

Every fit returned here has the same layout, so that the ways of fitting the model line
up in ArviZ:

- ``posterior``: ``alpha``, ``log_alpha`` and ``w`` (dims ``chain, draw, basis``; plus
  ``class`` for the categorical likelihood), ``beta`` and ``log_beta`` (regression);
- ``log_likelihood``: ``t`` (``chain, draw, obs``), pointwise terms for ``az.loo``: in the
  weight-space forms ``log p(t_n | w, beta)``; in the collapsed form and the evidence fit
  the exact leave-one-out conditionals ``log p(t_n | t_-n, alpha, beta)`` of the Gaussian
  marginal (the group's ``pointwise`` attribute says which);
- ``observed_data``: ``t``; ``constant_data``: ``Phi``;
- ``predictions`` (when new design rows are given, or from :func:`predict`):
  ``f = Phi_new w`` (the mean function, or the logits in classification) and ``t`` (a draw
  of a new target) per posterior draw, with ``predictions_constant_data`` holding
  ``Phi_new``;
- ``sample_stats``: the sampler's statistics (MCMC) or ``loss``, the negative lower bound
  per iteration (VI);
- root attributes ``fit`` (``"mcmc"``, ``"vi"``, ``"evidence"``), ``method``,
  ``likelihood``, ``parameterization`` and ``sampling_diagnostics`` (whether r_hat, ESS
  and MCSE mean anything for these draws).

The posterior draws of ``w`` carry everything the predictions need, so predictions are
computed from them for every fit; for the collapsed model ``w`` is drawn exactly from
``p(w | alpha, beta, t)`` at every draw of the hyperparameters.
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
