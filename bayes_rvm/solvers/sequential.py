"""Fast sequential type-II maximum likelihood (Tipping & Faul 2003; Faul & Tipping 2002).

The evidence as a function of one ``alpha_i`` with all other hyperparameters fixed is
``l(alpha_i) = 0.5 [log alpha_i - log(alpha_i + s_i) + q_i^2 / (alpha_i + s_i)]``
(Faul & Tipping 2002, eq. 15), maximised in closed form by ``alpha_i = s_i^2 / (q_i^2 - s_i)``
when ``q_i^2 > s_i`` and by ``alpha_i = inf`` otherwise (eq. 17; Bishop 2006, eq. 7.101).
The solver starts from the single column with the largest gain and takes one step at a
time: add an inactive column, re-estimate an active ``alpha``, or delete an active column,
the action with the largest increase of the log evidence (ties go to the lowest column
index).

``fit`` chooses between three implementations:

- Gaussian likelihood on a basis of at most :attr:`Schedule.dense_bytes` (``N n_basis``
  doubles): the compiled step loop (:mod:`bayes_rvm.solvers._compiled`,
  :mod:`bayes_rvm.solvers._steps`), a noise continuation from below the optimum (or, the
  noise fixed, from below the fixed value up to it), the best of the ascents of
  :attr:`Schedule.starts` (``n_starts`` of them: by default four, two on a reduced
  design) and a final certificate on exact ``S, Q`` (see :class:`Schedule`).
- The same on a larger basis that is neither reduced (below) nor compressible (its columns
  keep a squared residual above :attr:`Schedule.working_residual` after the first block
  of :func:`~bayes_rvm.solvers._crosses.compress`): the compiled loop on a working set of
  columns, certified on every column (:mod:`bayes_rvm.solvers._working_set`).
- Bernoulli likelihood on a basis of at most :attr:`Schedule.mode_dense_bytes` (held as
  ``Phi^T``): the compiled loop on weighted Gaussian problems at the Laplace modes, in a
  trust region on the Laplace evidence (:mod:`._classify`).
- Otherwise (larger bases that compress, a fixed noise on a larger basis that is not
  reduced, the Bernoulli likelihood on a larger basis) the large path (below), whose
  settings are also :class:`Schedule`'s.

A Gaussian fit whose basis is over :attr:`Schedule.dense_bytes` but has at least twice as
many rows as columns first reduces the data (when the factor fits in
:attr:`Schedule.reduced_bytes`): the evidence (Tipping 2001, eq. 36), the posterior (eq.
12-13) and the noise update (eq. 46) see them only through ``Phi^T Phi``, ``Phi^T t``,
``t^T t`` and ``N``, which the upper-triangular factor ``[[R, z], [0, r]]`` of ``[Phi | t]``
(:meth:`~bayes_rvm.basis.Basis.reduce`, one pass of ``2 N n_basis^2`` flops) carries: the
design ``[R; 0]`` with target ``[z; r]``, counted as ``N`` rows, is the same problem in
``n_basis + 1`` rows, and the compiled path runs on it.

The large path:

  - :class:`~bayes_rvm.solvers._workspace.Workspace` holds the posterior over the active
    (unit-norm) columns, updated by rank-one terms in ``O(M^2)`` per step and refactored every
    ``large_refactor`` steps, and the ``S, Q`` of every candidate, whose rank-one terms are applied
    together by one matrix product for up to ``flush`` steps and always before an add is
    chosen. After ``large_newton_after`` re-estimates in a row the active ``alpha`` whose own
    optimum is finite take joint damped Newton steps in ``log alpha``.
  - :mod:`bayes_rvm.solvers._crosses` supplies the products ``Phi~^T phi~_j`` of a column
    about to be added: from a compressed basis ``B = Phi~^T U`` (an orthonormal ``U``
    spanning the dominant columns), with the run first converging on the projected basis
    ``U U^T Phi~`` when the compression is not exact to rounding, then from passes over the
    basis, ``prefetch`` columns per pass.
  - :mod:`bayes_rvm.solvers._outer` learns the rest between converged ``alpha`` steps. The
    noise (Tipping 2001, eq. 46) is re-estimated by block coordinate ascent from the
    low-noise side: the run starts at noise variance ``large_start_noise var(t)``, runs the
    ``alpha`` steps to convergence (confirmed on exact ``S, Q``), re-estimates the noise and
    repeats; it restarts lower when the first noise update takes the variance below
    ``restart_below`` times the start. For classification the Laplace mode takes the place
    of the noise: at the mode ``w*`` the evidence is that of a Gaussian model with noise
    precisions ``B = diag(y (1 - y))`` and working target ``t^ = Phi w* + B^-1 (t - y)``
    (Tipping & Faul 2003, Sec. 4), and the mode is found again whenever the steps since the
    last mode claim more than a trust radius, and after they converge; each mode update
    weighs every row (one pass over the basis).

Columns are normalised to unit length (the scaling is undone on the reported ``mu``,
``alpha`` and factor; with ``a = b = 0`` the evidence is invariant to it).

References
----------
Tipping, M. E. and Faul, A. C. (2003). Fast marginal likelihood maximisation for sparse
Bayesian models. AISTATS.
Faul, A. C. and Tipping, M. E. (2002). Analysis of sparse Bayesian learning. NIPS 14.
Bishop, C. M. (2006). Pattern Recognition and Machine Learning, Sec. 7.2.2.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from bayes_rvm.basis import Basis, DenseBasis
from bayes_rvm.laplace import Bernoulli
from bayes_rvm.posterior import fit_gaussian
from bayes_rvm.solvers._ascent import Ascent, Outcome, Stopping
from bayes_rvm.solvers._assemble import End, gaussian_result, workspace_result
from bayes_rvm.solvers._base import (
    Prior,
    TargetMoments,
    Type2Result,
    initial_noise_var,
    noise_var_floor,
)
from bayes_rvm.solvers._classify import fit_bernoulli
from bayes_rvm.solvers._compiled import Status, ascend_dense
from bayes_rvm.solvers._crosses import (
    CompressedCrosses,
    Compression,
    CrossCache,
    Crosses,
    compress,
)
from bayes_rvm.solvers._outer import ModeLoop, NoiseLoop, gaussian_log_evidence
from bayes_rvm.solvers._schedule import Schedule, Start
from bayes_rvm.solvers._working_set import fit_working_set
from bayes_rvm.solvers._workspace import Workspace

__all__ = ["Schedule", "Start", "fit"]


def fit(
    basis: Basis,
    t: np.ndarray,
    *,
    prior: Prior,
    noise_var: float | None,
    max_iter: int,
    tol: float,
    verbose: bool = False,
    link: Bernoulli | None = None,
    schedule: Schedule | None = None,
    targets: TargetMoments | None = None,
    n_starts: int | None = None,
) -> Type2Result:
    """Sequential add / re-estimate / delete; see :func:`bayes_rvm.fit_type2`.

    ``tol`` is in nats here: the fit has converged when no single action would raise the
    log evidence by more than ``tol`` and (noise learned) the noise update at that point
    raised it by less than ``tol``. ``max_iter`` counts add / re-estimate / delete steps
    and noise updates. ``schedule``: the settings of every path (:class:`Schedule`; its
    ``dense_bytes`` decides which path a Gaussian fit takes); ``None`` takes the
    defaults. ``n_starts``: the number of :attr:`Schedule.starts` a Gaussian fit runs on a
    basis held in memory or reduced (see :func:`bayes_rvm.fit_type2`).

    Notes
    -----
    Only the paper's improper hyperprior on ``alpha`` (``a = b = 0``) is supported: the
    closed-form ``alpha_i = s_i^2 / (q_i^2 - s_i)`` is the maximiser of the evidence alone.
    The noise hyperprior ``Gamma(c, d)`` enters eq. 46 and the objective.

    Examples
    --------
    >>> import numpy as np
    >>> from bayes_rvm import fit_type2
    >>> from bayes_rvm.basis import KernelBasis
    >>> from bayes_rvm.kernels import RBF
    >>> x = np.linspace(-10, 10, 80)[:, None]
    >>> t = np.sinc(x[:, 0] / np.pi) + np.random.default_rng(0).normal(0, 0.1, 80)
    >>> fit = fit_type2(KernelBasis(x, RBF(0.25)), t, solver="sequential")
    >>> fit.converged, bool(fit.active.size < 15), bool(abs(fit.noise_var**0.5 - 0.1) < 0.03)
    (True, True, True)
    """
    if prior.a != 0.0 or prior.b != 0.0:
        raise ValueError(
            "the sequential solver needs the improper prior a = b = 0 on alpha (its "
            f"closed-form update maximises the evidence alone); got a={prior.a}, "
            f"b={prior.b}: use solver='mackay' or solver='em' for a Gamma prior on alpha"
        )
    if link is not None and not isinstance(link, Bernoulli):
        raise ValueError(
            "the sequential solver supports the gaussian and bernoulli likelihoods, got "
            f"{link.name!r}: use solver='mackay' or solver='em', or one-vs-rest"
        )
    stop = Stopping(max_iter, tol, verbose)
    schedule = Schedule() if schedule is None else schedule
    if n_starts is not None and n_starts < 1:
        raise ValueError(f"expected n_starts >= 1 or None, got {n_starts}")
    held = schedule.holds(basis.shape)  # the basis as given, before any reduction
    data_t = t  # the target of the N rows
    # the starting noise and its floor: of the rows the data stand for (weighted rows)
    targets = TargetMoments.of(t) if targets is None else targets
    reduced = link is None and schedule.reduces(basis.shape)
    if link is None and not (reduced or held) and n_starts is not None and n_starts > 1:
        n_rows, n_basis = basis.shape
        warnings.warn(
            f"n_starts={n_starts} is not used: a basis of {n_rows} x {n_basis}, over "
            f"{schedule.dense_bytes / 2**20:g} MiB of doubles and not reduced to its "
            "triangular factor, is fitted from one start",
            UserWarning,
            stacklevel=3,
        )
    least_squares_rss = 0.0  # a lower bound on ||t - Phi w||^2
    if reduced:
        # the Gaussian evidence, posterior and noise update see the data only through
        # Phi^T Phi, Phi^T t, t^T t and N: fit on [R; 0], [z; r] of equal products
        factor = basis.reduce(t)
        basis, t = DenseBasis(factor[:, :-1]), factor[:, -1]
        least_squares_rss = float(t[-1] ** 2)  # r^2, the residual of the whole basis
    if link is None and (reduced or held):
        full_t = data_t if reduced else None
        result = _fit_compiled(
            basis, t, prior, stop, schedule, targets, full_t, least_squares_rss, n_starts,
            noise_var,
        )  # fmt: skip
        if result is not None:
            return result
        # the compiled loop lost positive definiteness (nearly collinear columns): the large
        # path's resolution test and joint Newton steps fit such bases
    if link is not None and schedule.mode_holds(basis.shape):
        # Phi^T: from a one-vs-rest fit's shared kernel matrix or written straight from the
        # kernel blocks, the same numbers (a kernel matrix evaluated once per pair of inputs)
        result = fit_bernoulli(
            basis.transposed(), link, prior=prior, tol=tol, max_iter=max_iter,
            schedule=schedule, verbose=verbose,
        )  # fmt: skip
        if result is not None:
            return result
    if link is not None and schedule.mode_holds(basis.shape):
        # the compiled loop lost positive definiteness: the large path on the basis in memory
        basis = basis.in_memory()
        products = _Products.of(basis, Compression.none(basis, t), t, schedule, dense=True)
    else:
        wide = link is None and noise_var is None and basis.n_columns > schedule.working_set
        give_up = schedule.working_residual if wide else np.inf
        compression = compress(basis, t, schedule, give_up)
        if compression.leftover > give_up:  # the basis does not compress: a working set
            result = _fit_working_set(basis, t, prior, stop, schedule, compression, targets)
            if result is not None:
                return result
        products = _Products.of(basis, compression, t, schedule, dense=False)
    if link is None:
        noise_fixed = noise_var is not None
        beta = 1.0 / (
            noise_var
            if noise_var is not None
            else initial_noise_var(targets, schedule.large_start_noise)
        )
        ws = Workspace(
            t, products.start_phi_t, products.start_unit, beta, schedule, n_rows=data_t.size
        )
        run = Ascent(ws, products.start, stop, polish=True)
        noise = (
            None if noise_fixed else NoiseLoop(prior, noise_var_floor(targets), schedule, verbose)
        )
        status = _ascend_gaussian(
            run, noise, beta, products.usable, prior, schedule.large_start_noise
        )
        outer: NoiseLoop | ModeLoop | None = noise
    else:
        noise_fixed = True
        ws = Workspace(t, products.start_phi_t, products.start_unit, 1.0, schedule)
        run = Ascent(ws, products.start, stop, polish=True)
        outer = mode = ModeLoop(link, prior, schedule, verbose)
        mode.weigh(run, np.zeros(t.size))  # the empty model: y = 1/2 everywhere
        run.add_first(products.usable)
        mode.update(run)
        run.record(run.log_ev, first=True)  # the path starts at the first mode
        status = mode.ascend(run, stale=False)
    if products.approximate or (
        products.compression.rank > 0 and (link is not None or not _products_agree(run, tol))
    ):
        status = _ascend_on_exact_products(run, outer, products, prior, noise_fixed)
    if verbose:
        compression = products.compression
        print(
            f"[sequential] {run.steps} steps, M={run.ws.M}, log evidence={run.log_ev:.6f}, "
            f"compressed rank {compression.rank} (residual {compression.leftover:.1e}), "
            f"exact passes {products.exact.passes}"
        )
    converged = status in (Outcome.CONVERGED, Outcome.STALLED)
    return workspace_result(basis, run, products.scales, prior, noise_fixed, converged, link)


@dataclass(frozen=True)
class _Products:
    """Where the large path's products come from: the normalisation of the columns, the
    products the run starts on and the exact ones it may finish on."""

    basis: Basis
    compression: Compression
    scales: np.ndarray  # the column norms (1 for a zero column)
    usable: np.ndarray  # the nonzero columns
    unit: np.ndarray  # diag(Phi~^T Phi~): 1, or 0 for a zero column
    exact: CrossCache
    start: Crosses  # the products the run starts on
    start_phi_t: np.ndarray  # Phi~^T t of the starting products
    start_unit: np.ndarray  # diag(Phi~^T Phi~) of the starting products
    approximate: bool  # the run starts on the projected basis U U^T Phi~

    @classmethod
    def of(
        cls,
        basis: Basis,
        compression: Compression,
        t: np.ndarray,
        schedule: Schedule,
        dense: bool,
    ) -> _Products:
        """The products for ``basis`` compressed to ``compression`` (rank 0: not compressed;
        ``dense``: a matrix in memory, one column per pass)."""
        usable = compression.sq_norms > 0
        if not usable.any():
            raise ValueError("expected a design matrix with a nonzero column, got all zeros")
        scales = np.where(usable, np.sqrt(compression.sq_norms), 1.0)
        unit = usable.astype(np.float64)
        size = 1 if dense else min(schedule.prefetch, basis.n_columns)
        exact = CrossCache(basis, scales, size, schedule.cache_bytes)
        approximate = compression.rank > 0 and compression.leftover > schedule.exact_residual
        if approximate:  # first run on the projected basis U U^T Phi~: a model of its own
            B, U = compression.B, compression.U
            start = CompressedCrosses(basis, scales, compression, schedule, project=True)
            start_phi_t, start_unit = B @ (U.T @ t), np.einsum("ij,ij->i", B, B)
            return cls(
                basis, compression, scales, usable, unit, exact, start, start_phi_t,
                start_unit, approximate,
            )  # fmt: skip
        start_cache: Crosses = exact
        if compression.rank:
            start_cache = CompressedCrosses(basis, scales, compression, schedule, project=False)
        return cls(
            basis, compression, scales, usable, unit, exact, start_cache, compression.phi_t,
            unit, approximate,
        )  # fmt: skip


def _ascend_on_exact_products(
    run: Ascent,
    outer: NoiseLoop | ModeLoop | None,
    products: _Products,
    prior: Prior,
    noise_fixed: bool,
) -> Outcome:
    """From the compressed products to exact ones: exact active columns (on the projected
    basis) and their products (one pass), a refresh, and the remaining steps with exact
    products.

    Also after a compression exact to rounding when the exact Gram matrix of the active
    columns disagrees: nearly collinear columns can make rounding-level errors of the
    products matter.
    """
    ws, basis, scales = run.ws, products.basis, products.scales
    active = ws.index[: ws.M]
    if products.approximate:
        ws.set_columns(basis.columns(active) / scales[active])
    run.cache = products.exact
    if isinstance(outer, ModeLoop):
        outer.restart()
        outer.update(run)
        return outer.ascend(run, stale=False)
    cross = basis.transpose_dot(ws.Phi[:, : ws.M]) / scales[:, None]
    ws.rebase(cross, products.compression.phi_t, products.unit, ws.beta)
    run.record(gaussian_log_evidence(ws, prior, noise_fixed))
    if outer is not None:
        outer.probe = False
    return run.ascend(outer, stale=outer is not None)


def _ascend_gaussian(
    run: Ascent,
    outer: NoiseLoop | None,
    beta: float,
    usable: np.ndarray,
    prior: Prior,
    start_noise: float,
) -> Outcome:
    """Gaussian likelihood: the ascent from one column at noise precision ``beta``.

    The schedule needs a start below the noise optimum. Noise-free or nearly noise-free
    targets put the optimum below ``start_noise var(t)``: the first noise update then
    lowers the noise by more than ``restart_below``, and the run restarts from one column
    at ``start_noise`` times that estimate. Only the final run's objective is recorded in
    the path.
    """
    _start_gaussian(run, beta, usable, prior, outer is None)
    status = run.ascend(outer, stale=outer is not None)
    while outer is not None and status is Outcome.ABOVE:
        beta = max(start_noise / outer.estimate, outer.floor) ** -1
        _start_gaussian(run, beta, usable, prior, False)
        outer.probe = True
        status = run.ascend(outer, stale=True)
    return status


def _fit_compiled(
    basis: Basis,
    t: np.ndarray,
    prior: Prior,
    stop: Stopping,
    schedule: Schedule,
    targets: TargetMoments,
    full_t: np.ndarray | None = None,
    least_squares_rss: float = 0.0,
    n_starts: int | None = None,
    noise_var: float | None = None,
) -> Type2Result | None:
    """Gaussian likelihood, basis in memory: the compiled ascents (:mod:`._compiled`; the
    noise learned, or fixed at ``noise_var``); ``None`` when a posterior precision lost
    positive definiteness.
    ``full_t`` is ``None`` for a held basis, or the target of the rows that the reduced
    design ``basis`` and target ``t`` stand for; ``least_squares_rss`` a lower bound on
    the residual sum of squares of every weight vector, ``n_starts`` the number of starts
    (:func:`~._compiled.ascend_dense`); ``targets``: the moments of the rows the data
    stand for."""
    data_t = t if full_t is None else full_t
    Phi = basis.toarray()
    sq_norms = np.einsum("ij,ij->j", Phi, Phi)
    usable = sq_norms > 0
    if not usable.any():
        raise ValueError("expected a design matrix with a nonzero column, got all zeros")
    scales = np.where(usable, np.sqrt(sq_norms), 1.0)
    B = np.divide(Phi.T, scales[:, None], out=np.empty(Phi.shape[::-1]))  # Phi~^T
    ascent, status = ascend_dense(
        B, t, prior=prior, max_iter=stop.max_iter, tol=stop.tol, schedule=schedule,
        full_t=full_t, least_squares_rss=least_squares_rss, targets=targets, n_starts=n_starts,
        noise_var=noise_var,
    )  # fmt: skip
    if status == Status.NOT_PD:
        return None
    index, alpha = ascent.model()
    order = np.argsort(index, kind="stable")
    active = index[order]
    scale = scales[active]
    # phi_j = scale_j phi~_j: alpha_j = scale_j^2 alpha~_j
    alpha = alpha[order] * scale**2
    S, Q = ascent.readd_gain_inputs()
    end = End(S, Q, ascent.recorded_path(), ascent.steps, status == Status.CONVERGED)
    result = gaussian_result(
        Phi[:, active], t, active, alpha, ascent.beta, prior, end, data_t.size,
        noise_fixed=noise_var is not None,
    )  # fmt: skip
    if stop.verbose:
        print(
            f"[sequential] {ascent.steps} steps, M={active.size}, noise sd "
            f"{ascent.beta**-0.5:.4g}, log evidence={result.log_evidence:.6f} "
            f"({status.name.lower()})"
        )
    return result


def _fit_working_set(
    basis: Basis,
    t: np.ndarray,
    prior: Prior,
    stop: Stopping,
    schedule: Schedule,
    compression: Compression,
    targets: TargetMoments,
) -> Type2Result | None:
    """Gaussian likelihood, noise learned, a basis neither held nor reduced, and one that
    does not compress: the compiled ascent on a working set of columns
    (:mod:`._working_set`; ``Phi^T t`` and the column norms from the pass of
    ``compression``); ``None`` when a posterior precision lost positive definiteness."""
    fit, status, S, Q = fit_working_set(
        basis, t, prior, stop, schedule, compression.phi_t, compression.sq_norms, targets
    )
    if status == Status.NOT_PD:
        return None
    active, alpha, beta = fit.model()
    scale = fit.scales[active]
    end = End(S, Q, np.concatenate(fit.path), fit.steps, status == Status.CONVERGED)
    Phi_a = basis.columns(active)
    result = gaussian_result(Phi_a, t, active, alpha * scale**2, beta, prior, end, t.size)
    if stop.verbose:
        print(
            f"[sequential] working set of {fit.order.size} columns after {fit.rounds} "
            f"rounds, {fit.passes} passes: M={active.size}, log evidence="
            f"{result.log_evidence:.6f} ({status.name.lower()})"
        )
    return result


def _products_agree(run: Ascent, tol: float) -> bool:
    """Whether the log evidence of the active columns from their exact Gram matrix
    (``O(N M^2)``) equals the one from the compressed products to ``tol`` nats."""
    ws = run.ws
    ws.refactor()  # the factor of the current Sigma^-1 (a max_iter stop can leave it older)
    M = ws.M
    exact = fit_gaussian(ws.Phi[:, :M], ws.t, ws.alpha[:M], ws.beta, n_rows=ws.n_rows)
    return abs(exact.log_marginal() - ws.posterior().log_marginal()) <= tol


def _start_gaussian(
    run: Ascent, beta: float, usable: np.ndarray, prior: Prior, noise_fixed: bool
) -> None:
    """Empty the model and start from the single column with the largest gain at noise
    precision ``beta`` (Bishop 2006, Sec. 7.2.2 step 2)."""
    run.clear()
    run.ws.refresh(beta)
    run.add_first(usable)
    run.ws.refresh(beta)
    run.record(gaussian_log_evidence(run.ws, prior, noise_fixed), first=True)
