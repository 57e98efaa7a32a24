"""Kernel input scales learned by the evidence: the eta-RVM (Tipping 2001, Sec. 4.3, App. C).

A Gaussian kernel with one input scale per dimension (eq. 56),
``K(x, y) = exp(-sum_k eta_k (x_k - y_k)^2)``, has its scales ``eta`` chosen by
maximising the profile evidence: eq. 36 at the type-II solver's ``alpha`` and ``beta``
for those scales, whose gradient is the App. C gradient at them (envelope theorem;
:mod:`bayes_rvm.solvers._scale_gradient`). :func:`fit_type2_scales` has the search.
"""

from __future__ import annotations

import contextlib
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
    n_starts: int | None = None,
    max_outer: int = 100,
    scale_tol: float = 1e-3,
    scale_gtol: float = 1e-2,
    scale_bounds: tuple[float, float] = (1e-6, 1e6),
    step_radius: float = 1.0,
    alpha_max_iter: int | str | None = "auto",
    probe_dimensions: bool = True,
    probe_factor: float = 100.0,
    verbose: bool = False,
) -> ScalesFit:
    """Type-II fit with one learned input scale per dimension (Tipping 2001, App. C).

    Maximises the profile evidence (eq. 36 at the solver's ``alpha`` and ``beta``) over
    ``log eta`` by L-BFGS-B with the gradient of :func:`log_evidence_scale_gradient` at
    the fitted ``alpha`` and ``beta``, from the starting scales, then from probes that
    widen one input's kernel (see Notes).

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
    a, b, c, d, noise_var, tol, max_iter, n_starts
        As in :func:`bayes_rvm.fit_type2`, for every alpha step.
    max_outer : int
        Largest number of eta steps (evaluations of the profile evidence, each an alpha
        step) of one ascent.
    scale_tol : float
        Evidence gain (nats) below which an ascent has stalled, and which a probe must
        beat.
    scale_gtol : float
        Largest entry of the projected gradient ``|dL / d log eta|`` below which the scales
        are stationary.
    scale_bounds : (float, float)
        Bounds on ``eta_k`` relative to its starting value.
    alpha_max_iter : int, "auto" or None
        Iteration limit of the alpha steps of the search; ``None`` is
        ``max_iter``, ``"auto"`` the solver's entry in :data:`ALPHA_STEP_MAX_ITER` (else
        ``max_iter``). The fits at the starting and at the returned scales always run to
        convergence (``max_iter``). Re-estimation from the full basis gets the evidence to
        within ~1e-3 nats in a few hundred iterations but takes thousands to prune the
        last columns; those have negligible weight and do not change the eta step.
    step_radius : float
        Trust box of one L-BFGS-B run, ``|delta log eta_k| <= step_radius`` around its
        start. Without it the line search can leap across valleys of the profile evidence
        into a distant mode (for example a kernel so narrow that it only fits the noise).
    probe_dimensions : bool
        When an ascent has stopped, ascend again from the best of the probes that widen
        or switch off one input's kernel (see Notes). ``False``: one ascent, from the
        starting scales.
    probe_factor : float
        A probe divides one ``eta_k`` by this factor; another sets it to its lower bound.
    verbose : bool

    Returns
    -------
    ScalesFit

    Warns
    -----
    ConvergenceWarning
        When the last ascent used ``max_outer`` eta steps without meeting the stopping
        rule, or when the solver did not converge at the returned scales (its warnings at
        intermediate scales, whose fits serve only as steps, are not repeated).
    EmptyModelWarning
        When every basis function is pruned at the returned scales (not for the
        intermediate fits).

    Notes
    -----
    Stopping rule of one ascent: L-BFGS-B runs, each started afresh in its trust box
    around the best point so far, until a run gains less than ``scale_tol`` nats
    (**converged**). A run ends at a projected gradient ``max_k |dL / d log eta_k|`` below
    ``scale_gtol``, at a relative change ``scale_tol / |P|``, or when
    :data:`LINE_SEARCH_STEPS` evaluations have not gained ``scale_tol``: ``P`` is only
    piecewise smooth (columns are pruned and re-added as ``eta`` moves, and the solver's
    optimum in ``alpha`` can jump), and its gradient can promise more than a step gives.
    A fit that interpolates the data (an :class:`~bayes_rvm.solvers.InterpolationWarning`:
    the noise collapses, and a kernel narrow enough to fit it can raise the evidence)
    ranks below every fit that does not; a run ends where the fits start to interpolate.

    ``P`` has several modes in ``eta``: an input that enters the target linearly, or not
    at all, can sit at a moderate scale with a local maximum, separated by a valley from a
    higher mode at a broad kernel (or a vanishing scale). So after an ascent, ``2 d``
    probes each widen one input's kernel by ``probe_factor`` or switch it off (``eta_k``
    at its lower bound, where its gradient vanishes: it stays off); the search ascends
    from the probe with the largest ``P`` and, if that ends ``scale_tol`` above the
    previous mode, probes around the new one (at most ``d`` rounds, each ``2 d`` alpha
    steps and one ascent).

    The scales returned are those of the best alpha step, refitted to convergence, or the
    starting ones if their fit is better: the returned evidence is never below the
    start's, unless the start interpolates and the returned fit does not.

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
    if alpha_max_iter == "auto":
        alpha_max_iter = ALPHA_STEP_MAX_ITER.get(solver, max_iter)
    if alpha_max_iter is not None:
        alpha_max_iter = check_positive_int(alpha_max_iter, "alpha_max_iter")
    scale_tol = check_positive_real(scale_tol, "scale_tol")
    scale_gtol = check_positive_real(scale_gtol, "scale_gtol")
    step_radius = check_positive_real(step_radius, "step_radius")
    probe_factor = check_positive_real(probe_factor, "probe_factor")
    if not probe_factor > 1:
        raise ValueError(f"probe_factor must be > 1 (it widens a kernel); got {probe_factor}")
    low, high = _check_bounds(scale_bounds)
    if np.ndim(kernel.gamma) and np.size(kernel.gamma) != X.shape[1]:
        raise ValueError(
            f"expected {X.shape[1]} starting scales (one per input dimension), "
            f"got {np.size(kernel.gamma)}"
        )
    eta0 = np.broadcast_to(np.asarray(kernel.gamma, dtype=np.float64), (X.shape[1],)).copy()
    options: dict[str, Any] = {"a": a, "b": b, "c": c, "d": d, "noise_var": noise_var}
    options.update(tol=tol, n_starts=n_starts)
    start = type(kernel)(eta0)
    search = _ScaleSearch(
        start,
        KernelBasis(X, start, bias=bias, extra=extra),
        t,
        objective,
        lambda basis, limit: fit_type2(basis, t, likelihood, solver, max_iter=limit, **options),
        (np.log(eta0 * low), np.log(eta0 * high)),
        _Settings(
            max_iter, alpha_max_iter, max_outer, scale_tol, scale_gtol, probe_factor, step_radius
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
    return ScalesFit(
        result=point.fit,
        kernel=check_scalable(point.basis.kernel),
        basis=point.basis,
        scales=np.exp(point.log_eta),
        initial_scales=eta0,
        gradient=search.gradient(point),
        log_evidence_path=np.array(search.path),
        scales_path=np.array(search.scales_path),
        n_outer=search.n_outer,
        n_probe=search.n_probe,
        converged=converged,
    )


#: L-BFGS-B's line search budget (evaluations); a run whose last this many evaluations
#: did not raise its best evidence by ``scale_tol`` has stalled.
LINE_SEARCH_STEPS = 5


class _Stalled(Exception):
    """Raised inside an ascent's objective to stop the quasi-Newton search."""


class _Point(NamedTuple):
    """One alpha step: the solver's fit at the log scales ``log_eta``, on ``basis``;
    ``interpolates``: whether the fit raised :class:`InterpolationWarning`."""

    fit: Type2Result
    basis: KernelBasis
    log_eta: np.ndarray
    interpolates: bool


class _Settings(NamedTuple):
    """The options of :func:`fit_type2_scales` that steer the search (see there)."""

    max_iter: int | None
    alpha_max_iter: int | None
    max_outer: int
    scale_tol: float
    scale_gtol: float
    probe_factor: float
    step_radius: float


def _rank(point: _Point) -> tuple[bool, float]:
    """Order of the points: every fit that does not interpolate above every one that
    does, then by log evidence."""
    return not point.interpolates, point.fit.log_evidence


def _beats(point: _Point, other: _Point, margin: float) -> bool:
    """Whether ``point`` is better than ``other`` in the order of :func:`_rank`, by more
    than ``margin`` nats when both interpolate or neither does."""
    if point.interpolates != other.interpolates:
        return other.interpolates
    return point.fit.log_evidence > other.fit.log_evidence + margin


class _ScaleSearch:
    """The profile-evidence ascent of :func:`fit_type2_scales`, and its state.

    State: ``start`` (the fit at the starting scales), ``best`` (the alpha step with the
    largest log evidence so far), ``path`` and ``scales_path`` (every alpha step's log
    evidence and scales), ``n_outer`` (eta steps of the ascent from the start: evaluations
    of the profile evidence at new scales) and ``n_probe`` (those of the probes).
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
        self.probing = False

    def _basis(self, log_eta: np.ndarray) -> KernelBasis:
        return self.base.with_kernel(self.kernel_type(np.exp(log_eta)))

    def alpha_step(self, log_eta: np.ndarray, limit: int | None) -> _Point:
        """The solver's fit of ``alpha`` (and ``beta``) at the scales ``exp(log_eta)``."""
        basis = self._basis(log_eta)
        with warnings.catch_warnings(record=True) as caught:
            # Reported once by fit_type2_scales, for the fit that is returned.
            warnings.simplefilter("ignore", ConvergenceWarning)
            warnings.simplefilter("ignore", EmptyModelWarning)
            warnings.simplefilter("always", InterpolationWarning)
            fit = self.solve(basis, limit)
        interpolates = any(issubclass(w.category, InterpolationWarning) for w in caught)
        return _Point(fit, basis, log_eta, interpolates)

    def gradient(self, point: _Point) -> np.ndarray:
        """``dL / d log eta`` at ``point``'s alpha and beta (eq. 53-57)."""
        fit = point.fit
        return self.objective(point.basis, self.t, fit.active, fit.alpha, fit.beta)[1]

    def profile(self, log_eta: np.ndarray) -> tuple[_Point, np.ndarray]:
        """The profile evidence at ``exp(log_eta)`` (the alpha step's log evidence) and
        its gradient: the App. C gradient at the fitted alpha, beta (envelope theorem)."""
        point = self.alpha_step(
            np.clip(log_eta, self.lower, self.upper), self.settings.alpha_max_iter
        )
        self.path.append(point.fit.log_evidence)
        self.scales_path.append(np.exp(point.log_eta))
        self.n_probe, self.n_outer = self.n_probe + self.probing, self.n_outer + 1 - self.probing
        if _beats(point, self.best, 0.0):
            self.best = point
        return point, self.gradient(point)

    def ascend(self, point: _Point) -> tuple[_Point, bool]:
        """Quasi-Newton ascent of the profile evidence from ``point``: L-BFGS-B runs, each
        in the trust box ``|delta log eta_k| <= step_radius`` around the best point so
        far, until a run gains less than ``scale_tol``. The best point reached, and
        whether it stopped so before ``max_outer`` evaluations."""
        settings = self.settings
        top, run = point, [point]
        while True:
            gradient = self.gradient(top)
            if self.verbose:
                print(
                    f"[scales] {len(run) - 1} eta steps: log evidence="
                    f"{top.fit.log_evidence:.6f} M={top.fit.active.size} "
                    f"|grad|={np.max(np.abs(gradient)):.2e} eta={np.exp(top.log_eta)}"
                )
            self._quasi_newton(top, gradient, run)
            reached = max(run, key=_rank)
            if not _beats(reached, top, settings.scale_tol):
                return top, True
            if len(run) > settings.max_outer:
                return reached, False
            top = reached

    def _quasi_newton(self, top: _Point, gradient: np.ndarray, run: list[_Point]) -> None:
        """One L-BFGS-B run from ``top`` (``gradient`` its gradient) in its trust box;
        appends every point it evaluates to ``run``. Ends at L-BFGS-B's tolerances, at
        the evaluation budget left, or when the last ``LINE_SEARCH_STEPS`` evaluations
        did not raise the run's best by ``scale_tol`` (the profile evidence is only
        piecewise smooth: columns are pruned or re-added as ``eta`` moves, and the
        solver's optimum in ``alpha`` can jump)."""
        settings = self.settings
        best, gained_at, first = top.fit.log_evidence, len(run), len(run)

        def negative(z):
            nonlocal best, gained_at
            if np.array_equal(z, top.log_eta):
                return -top.fit.log_evidence, -gradient
            if len(run) - gained_at >= LINE_SEARCH_STEPS:
                raise _Stalled
            reached, slope = self.profile(z)
            if reached.interpolates and not top.interpolates:
                raise _Stalled
            run.append(reached)
            if reached.fit.log_evidence > best + settings.scale_tol:
                gained_at = len(run)
            best = max(best, reached.fit.log_evidence)
            return -reached.fit.log_evidence, -slope

        box = zip(
            np.maximum(self.lower, top.log_eta - settings.step_radius),
            np.minimum(self.upper, top.log_eta + settings.step_radius),
            strict=True,
        )
        with contextlib.suppress(_Stalled):
            optimize.minimize(
                negative,
                top.log_eta,
                jac=True,
                method="L-BFGS-B",
                bounds=list(box),
                options={
                    "maxfun": max(1, settings.max_outer + 1 - first),
                    "maxls": LINE_SEARCH_STEPS,
                    "gtol": settings.scale_gtol,
                    # (f_k - f_k+1) / max(|f_k|, |f_k+1|, 1) <= ftol: about scale_tol nats
                    "ftol": settings.scale_tol / max(1.0, abs(top.fit.log_evidence)),
                },
            )

    def probe(self, point: _Point) -> tuple[_Point, bool] | None:
        """Probes around ``point``: each input's kernel widened (``eta_k`` divided by
        ``probe_factor``) or switched off (``eta_k`` at its lower bound), one input at a
        time. Ascends from the probe with the largest profile evidence; its end and
        whether that ascent converged, or None if it does not beat ``point`` by
        ``scale_tol``."""
        self.probing = True
        probes = []
        for k in np.flatnonzero(point.log_eta > self.lower):
            widened = point.log_eta[k] - np.log(self.settings.probe_factor)
            for log_eta_k in {max(widened, self.lower[k]), self.lower[k]}:
                trial = point.log_eta.copy()
                trial[k] = log_eta_k
                probes.append(self.profile(trial)[0])
        end = self.ascend(max(probes, key=_rank)) if probes else None
        self.probing = False
        helped = end is not None and _beats(end[0], point, self.settings.scale_tol)
        if self.verbose:
            print(f"[scales] probe: {'a higher mode' if helped else 'no higher mode'}")
        return end if helped else None

    def run(self, probe_dimensions: bool) -> bool:
        """Ascend from the start, then from the probes around the best point while they
        find a higher mode (at most one round per input dimension); whether converged."""
        top, converged = self.ascend(self.start)
        for _ in range(top.log_eta.size if probe_dimensions else 0):
            found = self.probe(top)
            if found is None:
                break
            top, converged = found
        return converged

    def final(self) -> _Point:
        """The best point, refitted to convergence when its alpha step was cut short; the
        start if that refit is worse."""
        point = self.best
        if point is not self.start and self.settings.alpha_max_iter != self.settings.max_iter:
            point = self.alpha_step(point.log_eta, self.settings.max_iter)
            if _beats(self.start, point, 0.0):
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
