"""Kernel input scales learned by the evidence: the eta-RVM (Tipping 2001, Sec. 4.3, App. C).

A Gaussian kernel with one input scale per dimension (eq. 56),
``K(x, y) = exp(-sum_k eta_k (x_k - y_k)^2)``, has its scales ``eta`` chosen by
maximising the log evidence (eq. 36) together with ``alpha`` and ``beta``.

The gradient (eq. 53-57) is that of :mod:`bayes_rvm.solvers._scale_gradient`.

The optimisation alternates two blocks, each of which can only raise the evidence
at its own step:

1. **alpha step**: the chosen type-II solver (any entry of
   :data:`bayes_rvm.solvers.SOLVERS`) fits ``alpha`` and ``beta`` on the design matrix at
   the current scales. Every column is a candidate again, so basis functions pruned at
   the old scales can come back at the new ones.
2. **eta step**: with the active set, ``alpha`` and ``beta`` held fixed, a bounded
   quasi-Newton search (L-BFGS-B) on ``log eta`` maximises the evidence with its
   analytic gradient. The step is accepted only when it raises the evidence.

Instead of the paper's hill climbing, each eta step is a bounded quasi-Newton search in
a trust box. Because the evidence is multimodal in ``eta``, a stalled search also tries
switching each input dimension off. The stopping rule, the dimension probe and the
guarantee that the result is never worse than the starting scales are in
:func:`fit_type2_scales`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from scipy import optimize
from sklearn.exceptions import ConvergenceWarning

from bayes_rvm._validation import (
    check_design,
    check_positive_int,
    check_positive_real,
    check_target,
)
from bayes_rvm.basis import ExtraColumns, KernelBasis
from bayes_rvm.kernels import RBF, get_kernel
from bayes_rvm.likelihoods import get_likelihood
from bayes_rvm.solvers._base import (
    EmptyModelWarning,
    InterpolationWarning,
    ScalesFit,
    Type2Result,
    warn_empty_model,
    warn_if_interpolating,
)
from bayes_rvm.solvers._fit import fit_type2
from bayes_rvm.solvers._scale_gradient import (
    check_scalable,
    log_evidence_scale_gradient,
    log_evidence_scale_gradient_bernoulli,
)

__all__ = [
    "ScalesFit",
    "fit_type2_scales",
    "log_evidence_scale_gradient",
    "log_evidence_scale_gradient_bernoulli",
]


def _projected_gradient(gradient, log_eta, lower, upper) -> np.ndarray:
    """The ascent directions the bounds allow: zero where a bound blocks the gradient."""
    blocked = ((log_eta <= lower) & (gradient < 0)) | ((log_eta >= upper) & (gradient > 0))
    return np.where(blocked, 0.0, gradient)


#: solver -> iteration limit of the intermediate alpha steps (``alpha_max_iter="auto"``).
#: Only the full-basis re-estimation solvers, whose last iterations just prune.
ALPHA_STEP_MAX_ITER = {"mackay": 200, "em": 200}


def fit_type2_scales(
    X,
    t,
    kernel: RBF | str = "rbf",
    likelihood: str = "gaussian",
    solver: str = "mackay",
    *,
    gamma: float | np.ndarray = 1.0,
    bias: bool = True,
    extra: ExtraColumns | Sequence = (),
    a: float = 0.0,
    b: float = 0.0,
    c: float = 0.0,
    d: float = 0.0,
    noise_var: float | None = None,
    tol: float = 1e-6,
    max_iter: int | None = None,
    max_outer: int = 50,
    scale_tol: float = 1e-3,
    scale_gtol: float = 1e-2,
    scale_bounds: tuple[float, float] = (1e-6, 1e6),
    eta_steps: int = 20,
    step_radius: float = 1.0,
    alpha_max_iter: int | str | None = "auto",
    probe_dimensions: bool = True,
    verbose: bool = False,
) -> ScalesFit:
    """Type-II fit with one learned input scale per dimension (Tipping 2001, App. C).

    Alternates the solver's fit of ``alpha`` and ``beta`` (all columns candidates) with a
    bounded L-BFGS-B search on ``log eta`` at fixed ``alpha`` and ``beta``, using the
    analytic gradient of :func:`log_evidence_scale_gradient`.

    Parameters
    ----------
    X : array of shape (N, n_features)
        Inputs; the kernel centres are the training inputs.
    t : array of shape (N,)
    kernel : RBF, Laplacian or "rbf"
        Kernel whose ``gamma`` gives the starting scales (a scalar is used in every
        dimension).
    likelihood : {"gaussian", "bernoulli"}
        ``"bernoulli"``: targets in {0, 1}, the Laplace evidence
        (:func:`log_evidence_scale_gradient_bernoulli`).
    solver : str
        Any name in :data:`bayes_rvm.solvers.SOLVERS`.
    gamma : float or array
        Starting scales when ``kernel`` is a name.
    bias : bool
        Constant column.
    extra : ExtraColumns or sequence
        Extra basis functions (Sec. 4.3), e.g. ``["linear", "quadratic"]``.
    a, b, c, d, noise_var, tol, max_iter
        As in :func:`bayes_rvm.fit_type2`, for every alpha step.
    max_outer : int
        Largest number of eta steps.
    scale_tol : float
        Evidence change (nats) below which the alternation has stalled.
    scale_gtol : float
        Largest entry of the projected gradient ``|dL / d log eta|`` below which the scales
        are stationary.
    scale_bounds : (float, float)
        Bounds on ``eta_k`` relative to its starting value.
    eta_steps : int
        L-BFGS-B iterations per eta step.
    alpha_max_iter : int, "auto" or None
        Iteration limit of the alpha steps between two eta steps; ``None`` is
        ``max_iter``, ``"auto"`` the solver's entry in :data:`ALPHA_STEP_MAX_ITER` (else
        ``max_iter``). The fits at the starting and at the returned scales always run to
        convergence (``max_iter``). Re-estimation from the full basis gets the evidence to
        within ~1e-3 nats in a few hundred iterations but takes thousands to prune the
        last columns; those have negligible weight and do not change the eta step.
    step_radius : float
        Trust region of one eta step: ``|delta log eta_k| <= step_radius``. With ``alpha``
        fixed at a sparse fit the evidence is a poor guide far from the current scales;
        short steps keep the two blocks in step (the paper interleaves 1-5 small ones).
    probe_dimensions : bool
        When the gradient search has stopped, try switching each input dimension off
        (``eta_k`` to its lower bound), and restart the search from the best switch-off
        that raises the evidence (see Notes).
    verbose : bool

    Returns
    -------
    ScalesFit

    Warns
    -----
    ConvergenceWarning
        When ``max_outer`` eta steps did not meet the stopping rule, or when the solver did
        not converge at the returned scales (its warnings at intermediate scales, whose
        fits serve only as steps, are not repeated).
    EmptyModelWarning
        When every basis function is pruned at the returned scales (not for the
        intermediate fits).

    Notes
    -----
    Stopping rule, checked after each alpha step: **converged** when the projected
    gradient ``max_k |dL / d log eta_k|`` (zero where a bound blocks ascent) is below
    ``scale_gtol`` (a stationary point in ``eta`` at optimal ``alpha``, ``beta``), or when
    the last eta step raised the evidence by less than ``scale_tol`` nats *and* the alpha
    step that followed changed it by less than ``scale_tol`` (the alternation has
    stalled). An eta step that cannot raise the evidence also ends the search.

    The evidence as a function of ``eta`` (with ``alpha`` re-optimised) has several
    modes: an irrelevant input can sit at a moderate scale with a local maximum of the
    evidence, separated by a valley from the far higher mode where its scale vanishes
    (the basis changes discretely as columns are pruned). Gradient steps do not cross
    the valley; the dimension probe jumps to the other side, one input at a time, much as
    pruning sets an ``alpha_i`` to infinity. A switched-off dimension stays at its lower
    bound (its gradient in ``log eta_k`` vanishes there).

    Each alpha step starts the solver afresh, so its evidence can fall below the one
    the previous eta step reached. The scales returned are those of the alpha step with
    the largest log evidence, refitted to convergence; if that refit is below the fit at
    the starting scales, the starting scales and their fit are returned. The returned
    evidence is thus never below the one at the starting scales.

    Examples
    --------
    >>> import numpy as np
    >>> from bayes_rvm.solvers.scales import fit_type2_scales
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-5, 5, (60, 2))
    >>> t = np.sinc(X[:, 0] / np.pi) + rng.normal(0, 0.05, 60)
    >>> fit = fit_type2_scales(X, t, "rbf", gamma=0.1)
    >>> bool(fit.scales[0] > 10 * fit.scales[1])
    True
    """
    objective = get_likelihood(likelihood).scale_gradient()
    X = check_design(X, "X")
    t = check_target(t, X.shape[0])
    kernel = check_scalable(get_kernel(kernel, gamma) if isinstance(kernel, str) else kernel)
    max_outer = check_positive_int(max_outer, "max_outer")
    eta_steps = check_positive_int(eta_steps, "eta_steps")
    if alpha_max_iter == "auto":
        alpha_max_iter = ALPHA_STEP_MAX_ITER.get(solver, max_iter)
    if alpha_max_iter is not None:
        alpha_max_iter = check_positive_int(alpha_max_iter, "alpha_max_iter")
    scale_tol = check_positive_real(scale_tol, "scale_tol")
    scale_gtol = check_positive_real(scale_gtol, "scale_gtol")
    step_radius = check_positive_real(step_radius, "step_radius")
    low, high = _check_bounds(scale_bounds)
    if np.ndim(kernel.gamma) and np.size(kernel.gamma) != X.shape[1]:
        raise ValueError(
            f"expected {X.shape[1]} starting scales (one per input dimension), "
            f"got {np.size(kernel.gamma)}"
        )
    eta0 = np.broadcast_to(np.asarray(kernel.gamma, dtype=np.float64), (X.shape[1],)).copy()
    options: dict[str, Any] = {"a": a, "b": b, "c": c, "d": d, "noise_var": noise_var, "tol": tol}
    start = type(kernel)(eta0)
    search = _ScaleSearch(
        start,
        KernelBasis(X, start, bias=bias, extra=extra),
        t,
        objective,
        lambda basis, limit: fit_type2(basis, t, likelihood, solver, max_iter=limit, **options),
        (np.log(eta0 * low), np.log(eta0 * high)),
        _Settings(
            max_iter, alpha_max_iter, max_outer, eta_steps, step_radius, scale_tol, scale_gtol
        ),
        verbose,
    )
    converged = search.run(probe_dimensions)
    if not converged:
        warnings.warn(
            f"the input scales did not meet the stopping rule in max_outer={max_outer} eta "
            "steps; the fit returned is the best one found",
            ConvergenceWarning,
            stacklevel=2,
        )
    point = search.final()
    if not point.fit.converged:
        warnings.warn(
            f"solver {solver!r} reached max_iter before converging at the returned scales; "
            "the result is its last iterate",
            ConvergenceWarning,
            stacklevel=2,
        )
    if point.fit.active.size == 0:
        warn_empty_model(stacklevel=2)
    warn_if_interpolating(point.fit, X.shape[0], stacklevel=2)
    _, gradient = search.evaluate(point.log_eta, point.fit)
    return ScalesFit(
        result=point.fit,
        kernel=check_scalable(point.basis.kernel),
        basis=point.basis,
        scales=np.exp(point.log_eta),
        initial_scales=eta0,
        gradient=gradient,
        log_evidence_path=np.array(search.path),
        scales_path=np.array(search.scales_path),
        n_outer=search.n_outer,
        n_probe=search.n_probe,
        converged=converged,
    )


class _Point(NamedTuple):
    """One alpha step: the solver's fit at the log scales ``log_eta``, on ``basis``."""

    fit: Type2Result
    basis: KernelBasis
    log_eta: np.ndarray


class _Settings(NamedTuple):
    """The options of :func:`fit_type2_scales` that steer the search (see there)."""

    max_iter: int | None
    alpha_max_iter: int | None
    max_outer: int
    eta_steps: int
    step_radius: float
    scale_tol: float
    scale_gtol: float


class _ScaleSearch:
    """The alternation of alpha and eta steps of :func:`fit_type2_scales`, and its state.

    State: ``start`` (the fit at the starting scales), ``best`` (the alpha step with the
    largest log evidence so far), ``path`` and ``scales_path`` (every alpha step's log
    evidence and scales), ``n_outer`` (eta steps) and ``n_probe`` (alpha steps probing
    switched-off dimensions).
    """

    def __init__(
        self,
        kernel: RBF,
        base: KernelBasis,
        t: np.ndarray,
        objective: Callable,
        solve: Callable[[KernelBasis, int | None], Type2Result],
        bounds: tuple[np.ndarray, np.ndarray],
        settings: _Settings,
        verbose: bool,
    ):
        """``kernel`` at the starting scales, ``base`` the training basis with it;
        ``solve(basis, max_iter)`` is the solver's fit at the scales of ``basis``;
        ``objective`` the likelihood's scale gradient; ``bounds`` those of ``log eta``."""
        self.kernel_type = type(kernel)
        self.base, self.t, self.objective, self.solve = base, t, objective, solve
        self.lower, self.upper = bounds
        self.settings, self.verbose = settings, verbose
        eta0 = np.asarray(kernel.gamma, dtype=np.float64)
        self.start = self.best = self.alpha_step(np.log(eta0), settings.max_iter)
        self.path = [self.start.fit.log_evidence]
        self.scales_path = [eta0]
        self.n_outer = self.n_probe = 0

    def _basis(self, log_eta: np.ndarray) -> KernelBasis:
        return self.base.with_kernel(self.kernel_type(np.exp(log_eta)))

    def alpha_step(self, log_eta: np.ndarray, limit: int | None) -> _Point:
        """The solver's fit of ``alpha`` (and ``beta``) at the scales ``exp(log_eta)``."""
        basis = self._basis(log_eta)
        with warnings.catch_warnings():
            # Reported once by fit_type2_scales, for the fit that is returned.
            warnings.simplefilter("ignore", ConvergenceWarning)
            warnings.simplefilter("ignore", EmptyModelWarning)
            warnings.simplefilter("ignore", InterpolationWarning)
            fit = self.solve(basis, limit)
        return _Point(fit, basis, log_eta)

    def evaluate(self, log_eta: np.ndarray, fit: Type2Result) -> tuple[float, np.ndarray]:
        """Log evidence and its gradient in ``log eta`` with ``fit``'s alpha and beta."""
        return self.objective(self._basis(log_eta), self.t, fit.active, fit.alpha, fit.beta)

    def record(self, point: _Point) -> None:
        self.path.append(point.fit.log_evidence)
        self.scales_path.append(np.exp(point.log_eta))
        if point.fit.log_evidence > self.best.fit.log_evidence:
            self.best = point

    def ascend(self, point: _Point) -> bool:
        """Alternate eta and alpha steps from ``point``; whether the stopping rule was met."""
        fit, log_eta = point.fit, point.log_eta
        while True:
            value, gradient = self.evaluate(log_eta, fit)
            projected = _projected_gradient(gradient, log_eta, self.lower, self.upper)
            if self.verbose:
                print(
                    f"[scales] step {self.n_outer}: log evidence={fit.log_evidence:.6f} "
                    f"M={fit.active.size} |grad|={np.max(np.abs(projected)):.2e} "
                    f"eta={np.exp(log_eta)}"
                )
            if np.max(np.abs(projected)) < self.settings.scale_gtol:
                return True
            if self.n_outer == self.settings.max_outer:
                return False
            self.n_outer += 1
            box = zip(
                np.maximum(self.lower, log_eta - self.settings.step_radius),
                np.minimum(self.upper, log_eta + self.settings.step_radius),
                strict=True,
            )
            search = optimize.minimize(
                lambda z, fit=fit: tuple(-v for v in self.evaluate(z, fit)),
                log_eta,
                jac=True,
                method="L-BFGS-B",
                bounds=list(box),
                options={"maxiter": self.settings.eta_steps},
            )
            gain = -float(search.fun) - value
            if not gain > 0:
                # No ascent in eta at these alphas: stationary up to the search's accuracy.
                return True
            log_eta = np.clip(search.x, self.lower, self.upper)
            previous = fit.log_evidence
            step = self.alpha_step(log_eta, self.settings.alpha_max_iter)
            fit = step.fit
            self.record(step)
            stalled = abs(fit.log_evidence - previous) < self.settings.scale_tol
            if gain < self.settings.scale_tol and stalled:
                return True

    def probe(self, point: _Point) -> _Point | None:
        """Switch input dimensions off (eta_k to its lower bound); the better point or None.

        Tries each dimension alone, then all those that helped together.
        """
        candidates = []
        for k in np.flatnonzero(point.log_eta > self.lower):
            trial = point.log_eta.copy()
            trial[k] = self.lower[k]
            self.n_probe += 1
            candidates.append(self.alpha_step(trial, self.settings.alpha_max_iter))
            self.record(candidates[-1])
        threshold = point.fit.log_evidence + self.settings.scale_tol
        helped = [c for c in candidates if c.fit.log_evidence > threshold]
        if len(helped) > 1:
            trial = np.min([c.log_eta for c in helped], axis=0)
            self.n_probe += 1
            candidates.append(self.alpha_step(trial, self.settings.alpha_max_iter))
            self.record(candidates[-1])
            helped.append(candidates[-1])
        if self.verbose:
            print(f"[scales] probe: {len(helped)} of {len(candidates)} switch-offs helped")
        return max(helped, key=lambda c: c.fit.log_evidence) if helped else None

    def run(self, probe_dimensions: bool) -> bool:
        """Ascend from the start, then probe switched-off dimensions (at most one round
        per input dimension: a successful probe switches one off); whether converged."""
        converged = self.ascend(self.start)
        for _ in range(self.start.log_eta.size if probe_dimensions else 0):
            if not converged:
                break
            point = self.probe(self.best)
            if point is None:
                break
            converged = self.ascend(point)
        return converged

    def final(self) -> _Point:
        """The best point, refitted to convergence when its alpha step was cut short; the
        start if that refit is worse."""
        point = self.best
        if point is not self.start and self.settings.alpha_max_iter != self.settings.max_iter:
            point = self.alpha_step(point.log_eta, self.settings.max_iter)
            if point.fit.log_evidence < self.start.fit.log_evidence:
                point = self.start
        return point


def _check_bounds(bounds) -> tuple[float, float]:
    try:
        low, high = (float(v) for v in bounds)
    except (TypeError, ValueError):
        raise ValueError(f"scale_bounds must be a pair (low, high); got {bounds!r}") from None
    if not (0 < low <= 1 <= high < np.inf):
        raise ValueError(
            "scale_bounds are factors on the starting scales: expected 0 < low <= 1 <= high "
            f"< inf, got {bounds!r}"
        )
    return low, high
