"""The entry point of the type-II solvers: :func:`fit_type2`, the solver registry and the
default-solver rule."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from bayes_rvm._basis_views import RowWeightedBasis, ScaledBasis
from bayes_rvm._validation import (
    check_noise_var,
    check_positive_int,
    check_positive_real,
    check_sample_weight,
    check_target,
    lookup,
)
from bayes_rvm.basis import Basis, as_basis
from bayes_rvm.evidence import LOG_2PI, Prior
from bayes_rvm.likelihoods import get_likelihood
from bayes_rvm.solvers import em, mackay, sequential
from bayes_rvm.solvers._base import (
    TargetMoments,
    Type2Result,
    warn_empty_model,
    warn_if_interpolating,
)

__all__ = ["SOLVERS", "SOLVER_CHOICES", "default_solver", "fit_type2"]

#: solver name -> (fit function, default max_iter)
SOLVERS: dict[str, tuple[Callable[..., Type2Result], int]] = {
    "mackay": (mackay.fit, 10_000),
    "em": (em.fit, 100_000),
    # a fit on a working set resumes its ascent round after round, and every step counts:
    # Friedman #1 with every one of 20,000 inputs a centre takes over 100,000
    "sequential": (sequential.fit, 1_000_000),
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


def _robust_norm(values: np.ndarray) -> float:
    """``sqrt(mean(values^2))``, computed on ``values / max|values|`` so that it cannot
    overflow or underflow; 0 for a zero vector."""
    largest = float(np.max(np.abs(values), initial=0.0))
    if largest == 0:
        return 0.0
    return largest * float(np.sqrt(np.mean((values / largest) ** 2)))


def column_scales(basis: Basis, sq_norms: np.ndarray, prior: Prior) -> np.ndarray:
    """The column scales :func:`fit_type2` divides ``basis`` by (its columns' norms, from
    their squares ``sq_norms``; 1 for a zero column), or their largest for every column
    when the prior on ``alpha`` is proper (``b > 0``: ``Gamma(a, b)`` must stay one prior)."""
    with np.errstate(over="ignore", under="ignore"):
        norms = np.sqrt(sq_norms)
    # squares that underflowed: from the columns themselves (zero columns stay 0)
    tiny = np.flatnonzero(norms < np.sqrt(np.finfo(float).tiny))
    for j, column in zip(tiny, basis.columns(tiny).T, strict=True):
        norms[j] = _robust_norm(column) * np.sqrt(basis.n_rows)
    if not np.all(np.isfinite(norms)):
        raise ValueError(
            "the design matrix has columns whose squared norm exceeds the float range "
            f"(> {np.finfo(float).max:.3g}); rescale the inputs or the basis functions"
        )
    norms = np.where(norms > 0, norms, 1.0)
    if prior.b > 0:
        norms = np.full_like(norms, float(np.max(norms)))
    return norms


@dataclass(frozen=True)
class _Scaling:
    """The units :func:`fit_type2` solves in: targets of unit root mean square and columns
    of unit norm, so that no solver threshold (pruning at a large ``alpha``, noise floors,
    squares of the targets) depends on the units of the data.

    With ``t = s t~`` and ``phi_j = c_j phi~_j`` the model is the same with
    ``w~_j = c_j w_j / s``, ``alpha~_j = alpha_j s^2 / c_j^2`` and ``beta~ = beta s^2``;
    ``alpha ~ Gamma(a, b)`` becomes ``Gamma(a, b c^2 / s^2)``, which is one prior only
    when every ``c_j`` is the same or ``b = 0``: a proper prior on ``alpha`` gets one
    common column scale. The evidence of ``t`` is that of ``t~`` divided by ``s^N`` (the
    Jacobian), and the Gamma terms on the log scale (eq. 35) are unchanged, except the
    improper ``alpha^a`` (``b = 0``) and ``beta^c`` (``d = 0``), shifted by
    ``a log(alpha~ / alpha)`` and ``c log(beta~ / beta)``.
    """

    target: float
    columns: np.ndarray
    prior: Prior
    original: Prior
    sq_norms: np.ndarray  # the basis's squared column norms (a pass computed them)

    @classmethod
    def of(cls, basis: Basis, t: np.ndarray | None, prior: Prior) -> _Scaling:
        """The scaling for ``basis`` and the regression targets ``t`` (``None``:
        classification, whose targets have no units)."""
        target = np.float64(1.0 if t is None else (_robust_norm(t) or 1.0))
        with np.errstate(over="ignore", under="ignore"):
            sq_norms = basis.sq_norms()
        norms = column_scales(basis, sq_norms, prior)
        with np.errstate(over="ignore", under="ignore"):
            b = prior.b * (norms[0] / target) ** 2 if prior.b > 0 else 0.0
            d = prior.d / target**2 if prior.d > 0 else 0.0
        if not (np.isfinite(b) and np.isfinite(d)):
            raise ValueError(
                f"the hyperprior rates b={prior.b}, d={prior.d} are outside the float range "
                f"in units of the targets' scale {target:.3g}; rescale y"
            )
        return cls(target, norms, dataclasses.replace(prior, b=b, d=d), prior, sq_norms)

    def basis(self, basis: Basis) -> ScaledBasis:
        """``basis`` with columns of unit norm; it knows its column norms (no second pass)."""
        return ScaledBasis(basis, self.columns, self.sq_norms)

    def noise_var(self, noise_var: float) -> float:
        """A noise variance in the scaled units."""
        with np.errstate(over="ignore", under="ignore"):
            scaled = noise_var / self.target**2
            # beta^2 enters S, Q (Tipping & Faul 2003): it must be a float too
            squared_precision = scaled**-2
        self._check_range(np.array([scaled, squared_precision]))
        return scaled

    def _check_range(self, *arrays: np.ndarray) -> None:
        """Raise if a precision or factor fell outside the float range when unscaled."""
        if all(np.all(np.isfinite(x) & (x > 0)) for x in arrays):
            return
        raise ValueError(
            "the fit is outside the float range in the units of the data: with targets of "
            f"scale {self.target:.3g} and basis columns of norm {self.columns.min():.3g} .. "
            f"{self.columns.max():.3g}, the weight or noise precisions exceed "
            f"{np.finfo(float).tiny:.3g} .. {np.finfo(float).max:.3g}; rescale y or X "
            "(the type-II fit is invariant to the scale of both)"
        )

    def undo(
        self, result: Type2Result, solver_prior: Prior, n_rows: int, weight_total: float
    ) -> Type2Result:
        """``result`` (fitted in the scaled units under ``solver_prior``) in the units of
        the data. Its evidence is that of the ``weight_total`` rows that the ``n_rows``
        weighted rows stand for (a row of weight 2 counts as two equal rows)."""
        s, c = self.target, self.columns[result.active]
        K = 1 if result.mu.ndim == 1 else result.mu.shape[1]
        with np.errstate(over="ignore", under="ignore", divide="ignore"):
            ratio = c / s
            alpha = result.alpha * ratio * ratio
            mu = result.mu / (ratio if K == 1 else ratio[:, None])
            factor = result.precision_chol * np.repeat(ratio, K)[:, None]
            beta = None if result.beta is None else result.beta / s / s
            noise = 1.0 / (beta or 1.0)  # the noise variance must be a float too
        self._check_range(alpha, np.diag(factor), np.array([beta or 1.0, noise]))
        # eq. 36 without the hyperprior, in the scaled units; the Jacobian of t = s t~
        learned = None if result.beta is None or result.noise_fixed else result.beta
        gaussian = result.log_evidence - solver_prior.log_density(result.alpha, learned)
        gaussian -= n_rows * np.log(s)
        if beta is not None:
            # w_n - 1 copies of row n add (beta / 2 pi)^((w_n - 1) / 2) each
            gaussian += 0.5 * (weight_total - n_rows) * (np.log(beta) - LOG_2PI)
        learned = None if beta is None or result.noise_fixed else beta
        shift = gaussian + self.original.log_density(alpha, learned) - result.log_evidence
        return dataclasses.replace(
            result,
            alpha=alpha,
            mu=mu,
            precision_chol=factor,
            beta=beta,
            log_evidence=result.log_evidence + shift,
            log_evidence_path=result.log_evidence_path + shift,
            prior=self.original,
        )


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
    sample_weight=None,
    n_starts: int | None = None,
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
    sample_weight : array of shape (N,), optional
        Non-negative weights ``w_n``, so that a weight of 2 gives the fit (and the
        evidence) of the row repeated twice, and a weight of 0 that of the row left out.
        Gaussian likelihood: row ``n`` has noise precision ``beta w_n``, and the noise is
        learned as if there were ``sum(w)`` rows. Bernoulli and categorical: the log
        likelihood is ``sum_n w_n log p(t_n | y_n)``, so the IRLS curvature is
        ``w_n y_n (1 - y_n)`` (softmax: ``w_n (diag(y_n) - y_n y_n^T)``) and the gradient
        residual ``w_n (t_n - y_n)`` (:class:`~bayes_rvm.laplace.Bernoulli`,
        :class:`~bayes_rvm.laplace.Categorical`).
    n_starts : int, optional
        "sequential" with the gaussian likelihood: the number of ascents, each from its
        own starting noise, of which the fit with the highest log evidence is returned
        (the evidence has many local optima in the noise, and which one an ascent reaches
        depends on where it starts;
        :meth:`~bayes_rvm.solvers.sequential.Schedule.first_starts`). With ``noise_var``
        given, an ascent that starts below it learns the noise up to ``noise_var`` and
        then finishes there. More starts never
        reach a lower optimum and take about proportionally longer, but a higher optimum is
        not always a better model: on few points with a narrow kernel more starts can
        reach a fit that interpolates (an ``InterpolationWarning``). ``None``: 4 on a basis
        held in memory, 2 on one reduced to its triangular factor (more rows than
        columns, over 16 MiB: there each ascent takes seconds). A larger basis that is
        not reduced is fitted from one start, the noise learned or fixed, and a larger
        ``n_starts`` warns that it is not used there. Classification has no starting
        noise: one ascent, and ``n_starts`` is refused.
        The measured trade-off is on the solver page of the docs.

    Returns
    -------
    Type2Result

    Raises
    ------
    ValueError
        When the fit cannot be represented in the units of the data: the solvers work on
        targets of unit root mean square and unit-norm columns (so that the fit is
        invariant to the scale of both, Sec. 2.1), and the precisions ``alpha`` and
        ``beta`` in the data's units must lie within the float range (about
        ``1e-308 .. 1e308``; regression targets of scale ``1e-150 .. 1e154`` with columns
        of norm ~1 are fine).

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
    weights = check_sample_weight(sample_weight, basis.n_rows)
    # classification: each row's log likelihood weighted by w_n (Laplace mode and evidence)
    link = None if model.make_link is None else model.make_link(t, sample_weight=weights)
    if link is not None and noise_var is not None:
        raise ValueError(
            f"noise_var applies to the gaussian likelihood only; got noise_var={noise_var} "
            f"with likelihood={likelihood!r}"
        )
    max_iter = check_positive_int(default_max_iter if max_iter is None else max_iter, "max_iter")
    starts: dict[str, int] = {}  # the sequential solver's number of starts, when given
    if n_starts is not None:
        starts["n_starts"] = check_positive_int(n_starts, "n_starts")
        if solver != "sequential":
            raise ValueError(
                f"n_starts applies to solver='sequential', got solver={solver!r} (MacKay "
                "and EM update every hyperparameter from one start)"
            )
        if link is not None:
            raise ValueError(
                f"n_starts applies to the gaussian likelihood, got likelihood={likelihood!r} "
                "(classification has no starting noise: one ascent)"
            )
    tol = check_positive_real(tol, "tol")
    solver_basis = basis.evaluated()  # a small kernel basis evaluated once, not per pass
    fitted_basis, fitted_t = solver_basis, t
    if weights is not None and link is None:
        # noise precision beta w_n: the plain model on W^(1/2) Phi, W^(1/2) t, with the
        # noise updates counting sum(w) rows (eq. 46, 50: N + 2c)
        fitted_basis, fitted_t = RowWeightedBasis(solver_basis, weights), np.sqrt(weights) * t
    scaling = _Scaling.of(fitted_basis, fitted_t if link is None else None, prior)
    weight_total = basis.n_rows if weights is None else float(np.sum(weights))
    solver_prior = scaling.prior.with_noise_shape(
        scaling.prior.c + 0.5 * (weight_total - basis.n_rows)
    )
    # regression: the starting noise and its floor from the targets of the rows the
    # weighted rows stand for; classification: the likelihood (checked above)
    options = (
        {"targets": TargetMoments.of(t / scaling.target, weights)}
        if link is None
        else {"link": link}
    )
    result = fit_function(
        scaling.basis(fitted_basis),
        fitted_t / scaling.target,
        prior=solver_prior,
        noise_var=None if noise_var is None else scaling.noise_var(noise_var),
        max_iter=max_iter,
        tol=tol,
        verbose=verbose,
        **options,
        **starts,
    )
    result = scaling.undo(result, solver_prior, basis.n_rows, weight_total)
    if result.stalled:
        warnings.warn(
            f"solver {solver!r} stopped after {result.n_iter} iterations without converging "
            f"(tol={tol}): the log evidence gained less than min(tol, 1e-6) nats over the "
            "last 100 iterations, as EM's steps shrink near the optimum; the result is the "
            "last iterate. Use solver='mackay' or 'sequential' to converge, or a larger tol",
            ConvergenceWarning,
            stacklevel=2,
        )
    elif not result.converged:
        warnings.warn(
            f"solver {solver!r} reached max_iter={max_iter} before converging (tol={tol}); "
            "the result is the last iterate",
            ConvergenceWarning,
            stacklevel=2,
        )
    if result.active.size == 0:
        warn_empty_model(stacklevel=2)
    warn_if_interpolating(result, basis.n_rows, stacklevel=2)
    return result
