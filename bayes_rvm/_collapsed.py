"""The collapsed Gaussian likelihood of :func:`bayes_rvm.build_model` (``w`` integrated out).

The observed ``t ~ N(0, C)``, ``C = beta^-1 I + Phi A^-1 Phi^T`` (Tipping 2001, eq. 34), is
declared as two terms whose sum is the exact log marginal likelihood:

- the observed ``t``'s own log density: ``N`` pointwise terms, the exact leave-one-out
  conditionals ``log p(t_n | t_-n, alpha, beta)`` of the marginal, so that
  ``pm.compute_log_likelihood`` gives one term per observation and ``az.loo`` scores ``N``
  points;
- the ``pm.Potential`` ``"t_coupling"``: ``log p(t | alpha, beta) - sum_n log p(t_n | t_-n,
  alpha, beta)``, what the joint density has beyond the product of the leave-one-out
  conditionals (the observations are dependent given ``alpha, beta``).

The model's log density is therefore the joint, and its gradient is that of the joint alone
(the leave-one-out terms carry none: they cancel in the sum), so NUTS and ADVI see the
marginal model itself.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.compile.builders import OpFromGraph
from pytensor.gradient import DisconnectedType, disconnected_grad
from pytensor.graph.basic import Variable
from pytensor.raise_op import Assert

from bayes_rvm.evidence import LOG_2PI

#: Name of the collapsed likelihood's distribution class: how the model is recognised.
COLLAPSED_CLASS = "RVMCollapsedGaussian"

#: Name of the potential that completes the leave-one-out terms to the joint density.
COUPLING = "t_coupling"

#: message of the check that the collapsed model's Phi and gram agree
GRAM_MISMATCH = (
    "the collapsed model's Phi no longer matches its Gram matrix 'gram' = Phi^T Phi (was Phi "
    "changed with pm.set_data?). Set both, pm.set_data({'Phi': Phi_new, 'gram': Phi_new.T @ "
    "Phi_new}), or build a new model; for predictions at new rows use bayes_rvm.predict"
)


def gram_matches(Phi: np.ndarray, gram: np.ndarray) -> bool:
    """Whether ``gram`` is ``Phi^T Phi``, by one product with a fixed random vector.

    ``Phi^T (Phi v) = gram v`` costs ``O(N M)``, not the ``O(N M^2)`` of forming the product;
    a change of ``Phi`` passes only if ``Phi^T Phi - gram`` happens to annihilate ``v``.
    """
    v = _probe(np.arange(Phi.shape[1]))
    return bool(np.allclose(Phi.T @ (Phi @ v), gram @ v, rtol=1e-9, atol=1e-9))


def _probe(index):
    """A fixed vector with irregular entries in [-1, 1] (NumPy or PyTensor)."""
    sin = pt.sin if isinstance(index, Variable) else np.sin
    return sin(index * 12.9898 + 0.5)


def loo_terms(residual, weight_var, beta, log=np.log):
    """``log p(t_n | t_-n)`` for ``t ~ N(0, C)``, ``C = beta^-1 I + Phi A^-1 Phi^T``.

    From the residual ``t - Phi mu`` and ``s_n = phi_n^T Sigma phi_n`` of the weight
    posterior (NumPy arrays, or PyTensor variables with ``log=pt.log``). With
    ``g = diag(C^-1)`` and ``c = C^-1 t``: ``t_n | t_-n ~ N(t_n - c_n / g_n, 1 / g_n)``
    (Sundararajan and Keerthi 2001; Bürkner, Gabry and Vehtari 2021). By Woodbury,
    ``C^-1 = beta I - beta^2 Phi Sigma Phi^T``, so ``c = beta (t - Phi mu)`` and
    ``g_n = beta - beta^2 s_n``: no ``N x N`` matrix.
    """
    g = beta - beta**2 * weight_var
    c = beta * residual
    return 0.5 * (log(g) - LOG_2PI - c**2 / g)


def _collapsed_terms(value, alpha, beta, Phi, gram):
    """Cholesky factor of the posterior precision, posterior mean and residual sum of squares."""
    # Tipping (2001) eq. 12: Sigma^-1 = A + beta Phi^T Phi
    L = pt.linalg.cholesky(pt.diag(alpha) + beta * gram)
    # Tipping (2001) eq. 13: mu = beta Sigma Phi^T t
    u = pt.linalg.solve_triangular(L, Phi.T @ value, lower=True)
    mu = beta * pt.linalg.solve_triangular(L.T, u, lower=False)
    rss = pt.sum((value - Phi @ mu) ** 2)
    return L, mu, rss


def _collapsed_value(value, alpha, beta, Phi, gram):
    """``log N(t | 0, beta^-1 I + Phi A^-1 Phi^T)`` through the ``M x M`` posterior precision.

    The weight-space route of :func:`bayes_rvm.evidence.log_evidence_gaussian`: one
    Cholesky factor of ``H = A + beta Phi^T Phi``, no ``N x N`` matrix.
    """
    L, mu, rss = _collapsed_terms(value, alpha, beta, Phi, gram)
    n = value.shape[0]
    # Tipping (2001) eq. 38: log|C| = -log|Sigma| - N log beta - log|A|
    log_det_C = 2.0 * pt.sum(pt.log(pt.diag(L))) - n * pt.log(beta) - pt.sum(pt.log(alpha))
    # Tipping (2001) eq. 41: t^T C^-1 t = beta ||t - Phi mu||^2 + mu^T A mu
    quad = beta * rss + pt.sum(alpha * mu**2)
    return -0.5 * (n * LOG_2PI + log_det_C + quad)


def _collapsed_pullback(inputs, outputs, cotangents):
    """Analytic gradient of the log evidence in ``alpha`` and ``beta``.

    Needs only ``diag(Sigma)`` (column norms of ``L^-1``): about three times cheaper than
    differentiating through the Cholesky factorisation. The data inputs get no gradient.
    """
    value, alpha, beta, Phi, gram = inputs
    (cotangent,) = cotangents
    L, mu, rss = _collapsed_terms(value, alpha, beta, Phi, gram)
    L_inv = pt.linalg.solve_triangular(L, pt.eye(alpha.shape[0]), lower=True)
    sigma_diag = pt.sum(L_inv**2, axis=0)
    n = value.shape[0]
    # Tipping (2001) eq. 42 without the hyperprior terms, divided by alpha_i (d / d alpha_i)
    d_alpha = 0.5 * (1.0 / alpha - sigma_diag - mu**2)
    # Tipping (2001) eq. 45 without the hyperprior terms (d / d beta), with
    # beta tr(Sigma Phi^T Phi) = sum_i gamma_i = sum_i (1 - alpha_i Sigma_ii) (eq. 17, 46)
    d_beta = 0.5 * (n / beta - rss - pt.sum(1.0 - alpha * sigma_diag) / beta)
    no_gradient = DisconnectedType()
    return [no_gradient(), cotangent * d_alpha, cotangent * d_beta, no_gradient(), no_gradient()]


def _checked(value, Phi, gram):
    """``value``, refused at evaluation when ``gram`` does not match ``Phi``.

    ``gram`` is the ``pm.Data`` ``Phi^T Phi`` (forming it at every evaluation would double
    the cost); ``pm.set_data`` may change one without the other.
    """
    v = _probe(pt.arange(gram.shape[0]))
    matches = pt.allclose(Phi.T @ (Phi @ v), gram @ v, rtol=1e-9, atol=1e-9)
    return Assert(GRAM_MISMATCH)(value, matches)


def _joint_logp(value, alpha, beta, Phi, gram):
    """Log density of the marginal ``t`` (eq. 34), with the analytic gradient attached."""
    inputs = [pt.dvector("t"), pt.dvector("alpha"), pt.dscalar("beta")]
    inputs += [pt.dmatrix("Phi"), pt.dmatrix("gram")]
    op = OpFromGraph(
        inputs,
        [_collapsed_value(*inputs)],
        pullback=_collapsed_pullback,
        connection_pattern=[[False], [True], [True], [False], [False]],
        inline=True,
        name="collapsed_log_evidence",
    )
    return _checked(op(value, alpha, beta, Phi, gram), Phi, gram)


def _loo_logp(value, alpha, beta, Phi, gram):
    """The ``N`` exact leave-one-out terms: the log density of the observed ``t``.

    They carry no gradient (``disconnected_grad``): in the model they appear once here and
    once, subtracted, in the coupling potential, so the model's gradient is the joint's
    alone, and graph rewriting removes them from the compiled log density.
    """
    L, mu, _ = _collapsed_terms(value, alpha, beta, Phi, gram)
    # phi_n^T Sigma phi_n: squared column norms of L^-1 Phi^T (Tipping 2001, eq. 22)
    Z = pt.linalg.solve_triangular(L, Phi.T, lower=True)
    terms = loo_terms(value - Phi @ mu, pt.sum(Z**2, axis=0), beta, log=pt.log)
    return _checked(disconnected_grad(terms), Phi, gram)


def _collapsed_random(alpha, beta, Phi, gram, rng=None, size=None):
    """Draws of the marginal ``t ~ N(0, beta^-1 I + Phi A^-1 Phi^T)`` given ``(alpha, beta)``.

    ``t = Phi w + e`` with ``w ~ N(0, A^-1)`` and ``e ~ N(0, beta^-1 I)`` has exactly that
    distribution (Tipping 2001, eq. 34), without forming the ``N x N`` covariance.
    """
    batch = () if size is None else tuple(np.atleast_1d(size))
    w = rng.standard_normal((*batch, alpha.shape[-1])) / np.sqrt(alpha)
    noise = rng.standard_normal((*batch, Phi.shape[0])) / np.sqrt(beta)
    return w @ Phi.T + noise


def collapsed_likelihood(Phi, alpha, beta, t) -> None:
    """Declare the observed ``t`` and the potential ``t_coupling`` in the current model."""
    model = pm.modelcontext(None)
    model.add_coord("basis_", model.coords["basis"])
    value = Phi.get_value()
    gram = pm.Data("gram", value.T @ value, dims=("basis", "basis_"))
    # Tipping (2001) eq. 34: t ~ N(0, beta^-1 I + Phi A^-1 Phi^T), pointwise: the
    # leave-one-out conditionals
    observed = pm.CustomDist(
        "t",
        alpha,
        beta,
        Phi,
        gram,
        logp=_loo_logp,
        random=_collapsed_random,
        signature="(m),(),(n,m),(m,m)->(n)",
        class_name=COLLAPSED_CLASS,
        observed=t,
        shape=Phi.shape[0],
        dims="obs",
    )
    joint = _joint_logp(observed, alpha, beta, Phi, gram)
    pm.Potential(COUPLING, joint - pt.sum(_loo_logp(observed, alpha, beta, Phi, gram)))
