"""Type-II maximum-likelihood solvers and their common entry point :func:`fit_type2`.

Every solver has the signature
``fit(basis, t, *, prior, noise_var, max_iter, tol, verbose) -> Type2Result`` and is
registered in :data:`SOLVERS` under the name the ``solver=`` option takes.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from bayes_rvm._validation import (
    check_noise_var,
    check_positive_int,
    check_target,
)
from bayes_rvm.basis import Basis, as_basis
from bayes_rvm.laplace import Bernoulli, Categorical
from bayes_rvm.solvers import em, mackay, sequential
from bayes_rvm.solvers._base import EmptyModelWarning, Prior, Type2Result, warn_empty_model
from bayes_rvm.solvers.scales import ScalesFit, fit_type2_scales

__all__ = [
    "LIKELIHOODS",
    "SOLVERS",
    "SOLVER_LIKELIHOODS",
    "EmptyModelWarning",
    "Prior",
    "ScalesFit",
    "Type2Result",
    "fit_type2",
    "fit_type2_scales",
]

#: solver name -> (fit function, default max_iter)
SOLVERS = {
    "mackay": (mackay.fit, 10_000),
    "em": (em.fit, 100_000),
    "sequential": (sequential.fit, 100_000),
}


def _no_link(t: np.ndarray):
    return None


#: Likelihood name -> builder of the classification likelihood from the checked targets
#: (``None``: Gaussian noise, the closed-form posterior).
LIKELIHOODS = {
    "gaussian": _no_link,
    "bernoulli": Bernoulli,
    "categorical": Categorical,
}


#: Solver name -> the likelihoods it fits. Classification likelihoods reach the fit
#: function as ``link=``.
SOLVER_LIKELIHOODS = {
    "mackay": tuple(LIKELIHOODS),
    "em": tuple(LIKELIHOODS),
    "sequential": ("gaussian", "bernoulli"),
}


def _lookup(table, name, what: str):
    if not isinstance(name, str) or name not in table:
        valid = ", ".join(repr(k) for k in table)
        raise ValueError(f"unknown {what} {name!r}; expected one of: {valid}")
    return table[name] if isinstance(table, dict) else name


def fit_type2(
    Phi: np.ndarray | Basis,
    t,
    likelihood: str = "gaussian",
    solver: str | None = None,
    *,
    a: float = 0.0,
    b: float = 0.0,
    c: float = 0.0,
    d: float = 0.0,
    noise_var: float | None = None,
    max_iter: int | None = None,
    tol: float = 1e-6,
    verbose: bool = False,
) -> Type2Result:
    """Type-II maximum likelihood ("evidence") fit of the sparse Bayesian model.

    Maximises eq. 36 of Tipping (2001) over the weight precisions ``alpha`` (and the
    noise precision ``beta`` unless ``noise_var`` is given), then returns the Gaussian
    posterior over the weights of the basis functions that remain. In classification
    the posterior and the evidence are the Laplace approximations at the IRLS mode
    (Sec. 3, eq. 24-26; :mod:`bayes_rvm.laplace`).

    Parameters
    ----------
    Phi : array of shape (N, M) or Basis
        Design matrix: any basis, kernel or not. A :class:`~bayes_rvm.basis.KernelBasis`
        lets solvers that need only some columns avoid forming the whole matrix.
    t : array of shape (N,)
        Targets: real numbers (``"gaussian"``), 0 / 1 (``"bernoulli"``), or integer class
        codes ``0 .. K-1`` (``"categorical"``).
    likelihood : {"gaussian", "bernoulli", "categorical"}
        ``"bernoulli"``: logistic sigmoid (eq. 23). ``"categorical"``: softmax over ``K``
        classes (eq. 28; Bishop 2006, eq. 7.120-7.122); the result's ``mu`` has shape
        ``(M, K)`` and each ``alpha_m`` is shared by the ``K`` weights of basis function
        ``m`` (see :mod:`bayes_rvm.laplace` for why). Classification ignores ``c, d``.
    solver : {"sequential", "mackay", "em"}, optional
        Type-II optimiser (see :data:`SOLVERS`). "sequential" (Tipping & Faul 2003, needs
        ``a = b = 0``; gaussian and bernoulli likelihoods) grows the model one basis
        function at a time and keeps ``O(N M)`` memory; "mackay" (eq. 44, 46) and "em"
        (eq. 48, 50) re-estimate every hyperparameter from the full basis. Default
        (``None``): "sequential" for the gaussian and bernoulli likelihoods with
        ``a = b = 0``, otherwise "mackay" (the softmax, or a Gamma prior on ``alpha``).
    a, b : float
        ``alpha_i ~ Gamma(a, b)``; 0 is the paper's uniform prior over ``log alpha``.
    c, d : float
        ``beta ~ Gamma(c, d)``.
    noise_var : float, optional
        Fix the noise variance ``1 / beta`` instead of learning it (regression only).
    max_iter : int, optional
        Iteration limit (the solver's default when ``None``).
    tol : float
        Convergence threshold: for "mackay" and "em" the largest absolute derivative of
        the objective with respect to ``log alpha_i`` and ``log beta`` (nats per unit of
        log); for "sequential" the largest possible gain of the log evidence (nats) of any
        single add / re-estimate / delete step and of the noise update.
    verbose : bool
        Print progress.

    Returns
    -------
    Type2Result

    Warns
    -----
    ConvergenceWarning
        When ``max_iter`` is reached; the returned fit is the last iterate.
    EmptyModelWarning
        (a ``UserWarning``) When every basis function was pruned: the empty model.

    Examples
    --------
    >>> import numpy as np
    >>> from bayes_rvm import fit_type2
    >>> from bayes_rvm.kernels import RBF
    >>> x = np.linspace(-10, 10, 50)[:, None]
    >>> t = np.sinc(x[:, 0] / np.pi)
    >>> Phi = np.column_stack([RBF(0.25)(x, x), np.ones(50)])
    >>> fit = fit_type2(Phi, t, noise_var=0.01**2)
    >>> bool(fit.active.size < 50), fit.converged
    (True, True)
    """
    if solver is None:
        sequential_fits = likelihood in SOLVER_LIKELIHOODS["sequential"]
        solver = "sequential" if sequential_fits and a == b == 0 else "mackay"
    fit_function, default_max_iter = _lookup(SOLVERS, solver, "solver")
    make_link = _lookup(LIKELIHOODS, likelihood, "likelihood")
    basis = as_basis(Phi)
    t = check_target(t, basis.n_rows)
    prior = Prior(a, b, c, d)
    noise_var = check_noise_var(noise_var)
    link = make_link(t)
    if likelihood not in SOLVER_LIKELIHOODS[solver]:
        able = [name for name, fits in SOLVER_LIKELIHOODS.items() if likelihood in fits]
        raise ValueError(
            f"solver {solver!r} does not support likelihood={likelihood!r}; use one of "
            f"{', '.join(repr(name) for name in able)}"
        )
    if link is not None and noise_var is not None:
        raise ValueError(
            f"noise_var applies to the gaussian likelihood only; got noise_var={noise_var} "
            f"with likelihood={likelihood!r}"
        )
    max_iter = check_positive_int(default_max_iter if max_iter is None else max_iter, "max_iter")
    if not (isinstance(tol, int | float) and np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a finite number > 0, got {tol!r}")
    result = fit_function(
        basis,
        t,
        prior=prior,
        noise_var=noise_var,
        max_iter=max_iter,
        tol=float(tol),
        verbose=verbose,
        # only the classification solvers take a likelihood (checked above)
        **({} if link is None else {"link": link}),
    )
    if not result.converged:
        warnings.warn(
            f"solver {solver!r} reached max_iter={max_iter} before converging (tol={tol}); "
            "the result is the last iterate",
            ConvergenceWarning,
            stacklevel=2,
        )
    if result.active.size == 0:
        warn_empty_model(stacklevel=2)
    return result
