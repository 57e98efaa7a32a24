"""The entry point of the type-II solvers: :func:`fit_type2`, the solver registry and the
default-solver rule."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from bayes_rvm._validation import (
    check_noise_var,
    check_positive_int,
    check_positive_real,
    check_target,
    lookup,
)
from bayes_rvm.basis import Basis, as_basis
from bayes_rvm.evidence import Prior
from bayes_rvm.likelihoods import get_likelihood
from bayes_rvm.solvers import em, mackay, sequential
from bayes_rvm.solvers._base import Type2Result, warn_empty_model

__all__ = ["SOLVERS", "SOLVER_CHOICES", "default_solver", "fit_type2"]

#: solver name -> (fit function, default max_iter)
SOLVERS: dict[str, tuple[Callable[..., Type2Result], int]] = {
    "mackay": (mackay.fit, 10_000),
    "em": (em.fit, 100_000),
    "sequential": (sequential.fit, 100_000),
}


#: Values of the ``solver=`` option: a name in :data:`SOLVERS`, or ``"auto"``
#: (:func:`default_solver`).
SOLVER_CHOICES = ("auto", *SOLVERS)


def default_solver(solver: str | None, likelihood: str, a: float = 0.0, b: float = 0.0) -> str:
    """The solver that ``solver="auto"`` (or ``None``) stands for; other names as given.

    "sequential" (Tipping & Faul 2003) when it fits the likelihood and the prior on
    ``alpha`` is the improper ``a = b = 0`` it needs; otherwise "mackay" (the softmax, or a
    Gamma prior on ``alpha``). The rule of :func:`fit_type2` and both estimators.
    """
    solver = lookup(SOLVER_CHOICES, "auto" if solver is None else solver, "solver")
    if solver != "auto":
        return solver
    sequential_fits = "sequential" in get_likelihood(likelihood).solvers
    return "sequential" if sequential_fits and a == 0 and b == 0 else "mackay"


def fit_type2(
    Phi: np.ndarray | Basis,
    t,
    likelihood: str = "gaussian",
    solver: str = "auto",
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
        See :data:`bayes_rvm.likelihoods.LIKELIHOODS` (``"student_t"`` has no type-II
        solver).
        ``"bernoulli"``: logistic sigmoid (eq. 23). ``"categorical"``: softmax over ``K``
        classes (eq. 28; Bishop 2006, eq. 7.120-7.122); the result's ``mu`` has shape
        ``(M, K)`` and each ``alpha_m`` is shared by the ``K`` weights of basis function
        ``m`` (see :mod:`bayes_rvm.laplace` for why). Classification ignores ``c, d``.
    solver : {"auto", "sequential", "mackay", "em"}, default="auto"
        Type-II optimiser (see :data:`SOLVERS`). "sequential" (Tipping & Faul 2003, needs
        ``a = b = 0``; gaussian and bernoulli likelihoods) grows the model one basis
        function at a time and keeps ``O(N M)`` memory; "mackay" (eq. 44, 46) and "em"
        (eq. 48, 50) re-estimate every hyperparameter from the full basis. "auto" (or
        ``None``): "sequential" for the gaussian and bernoulli likelihoods with
        ``a = b = 0``, otherwise "mackay" (the softmax, or a Gamma prior on ``alpha``);
        see :func:`default_solver`.
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
    model = get_likelihood(likelihood)
    prior = Prior(a, b, c, d)
    solver = default_solver(solver, likelihood, prior.a, prior.b)
    fit_function, default_max_iter = SOLVERS[solver]
    model.check_solver(solver)
    basis = as_basis(Phi)
    t = check_target(t, basis.n_rows)
    noise_var = check_noise_var(noise_var)
    link = None if model.make_link is None else model.make_link(t)
    if link is not None and noise_var is not None:
        raise ValueError(
            f"noise_var applies to the gaussian likelihood only; got noise_var={noise_var} "
            f"with likelihood={likelihood!r}"
        )
    max_iter = check_positive_int(default_max_iter if max_iter is None else max_iter, "max_iter")
    tol = check_positive_real(tol, "tol")
    result = fit_function(
        basis,
        t,
        prior=prior,
        noise_var=noise_var,
        max_iter=max_iter,
        tol=tol,
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
