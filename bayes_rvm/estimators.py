"""scikit-learn estimators on top of the type-II solvers.

The estimators only orchestrate: validate, build the basis, call
:func:`~bayes_rvm.fit_type2`, and expose the result as fitted attributes (the steps
they share are in ``bayes_rvm._estimator_base``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import ClassifierMixin, RegressorMixin, clone
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.validation import check_is_fitted

from bayes_rvm._basis_views import HeldKernelBasis
from bayes_rvm._estimator_base import _BaseRVM
from bayes_rvm._progress import ProgressLine
from bayes_rvm._validation import (
    check_bool,
    check_class_labels,
    check_no_missing_labels,
    check_noise_var,
    check_nonnegative,
    check_positive_int,
    check_sample_weight,
    check_target,
    lookup,
    none_or,
    one_of,
    validate_parameters,
)
from bayes_rvm.augmented import augmented_predictive, default_alpha_star
from bayes_rvm.basis import BLOCK_BYTES, KernelBasis
from bayes_rvm.laplace import latent_covariance, latent_variance, log_class_proba
from bayes_rvm.solvers import Prior
from bayes_rvm.solvers._fit import column_scales
from bayes_rvm.solvers._schedule import Schedule

__all__ = ["RVC", "RVR"]


def _check_n_jobs(value, name: str) -> int:
    """joblib's ``n_jobs``: a nonzero integer (-1: every core)."""
    value = check_positive_int(value, name, minimum=-(2**31))
    if value == 0:
        raise ValueError(f"{name} must be a nonzero integer (-1 for every core), got 0")
    return value


def _check_class_weight(value, name: str):
    """``class_weight``: "balanced" or a mapping class label -> weight >= 0 (the labels are
    checked against the classes at fit)."""
    if isinstance(value, str):
        return lookup(("balanced",), value, name)
    if not isinstance(value, Mapping):
        raise TypeError(
            f"{name} must be None, 'balanced' or a dict class label -> weight, got {value!r} "
            f"({type(value).__name__})"
        )
    for label, weight in value.items():
        check_nonnegative(weight, f"{name}[{label!r}]")
    return value


#: ``predictive`` option of :class:`RVR` -> description (the valid names).
PREDICTIVE = {
    "paper": "Tipping (2001) eq. 21-22 over the relevance vectors",
    "augmented": "the RVM*: one kernel function added at each test input "
    "(Rasmussen & Quiñonero-Candela 2005)",
}


@dataclass(repr=False, eq=False, kw_only=True)
class RVR(RegressorMixin, _BaseRVM):
    """Relevance vector regression (Tipping 2001, Sec. 2).

    ``y(x) = sum_i w_i k(x, x_i) + w_0`` with one Gaussian prior precision ``alpha_i`` per
    weight, fitted by type-II maximum likelihood; most ``alpha_i`` go to infinity and the
    remaining basis functions are the relevance vectors.

    Parameters
    ----------
    kernel : {"rbf", "linear_spline", "poly", "linear", "laplacian", "precomputed"}, Kernel \
or callable, default="rbf"
        Basis functions ``k(x, x_i)``; need not be a Mercer kernel.
    gamma : float, array, "scale" or "auto", default="scale"
        Input scale of the RBF / Laplacian / polynomial kernels; an array gives one scale
        per input dimension. "scale" is ``1 / (n_features X.var())`` (with ``sample_weight``,
        each row counted ``w_n`` times), "auto" ``1 / n_features``.
    degree : int, default=3
        Polynomial degree.
    coef0 : float, default=1.0
        Polynomial offset.
    bias : bool, default=True
        Add a constant basis function (its weight is ``intercept_``).
    solver : {"auto", "sequential", "mackay", "em"}, default="auto"
        Type-II optimiser (:func:`bayes_rvm.fit_type2`). "sequential" (Tipping & Faul 2003)
        adds, re-estimates and deletes one basis function at a time, never forms the
        ``N x N`` kernel matrix, and approaches the noise level from below so that it does
        not stall at a high-noise local optimum; it needs
        ``a = b = 0``. "mackay" and "em" start from the full basis (``O(N n)`` memory for
        ``n`` basis functions, ``O(n^3)`` per iteration: ``O(N^2)`` and ``O(N^3)`` with
        every input a centre; a basis over 16 MB with ``N >= 2 (n + 1)`` and a factor of
        at most 512 MB, such as up to about 8,000 candidate centres, is reduced first to
        its ``(n + 1)^2`` triangular factor) and
        accept Gamma priors on ``alpha``. "auto":
        "sequential" when ``a = b = 0``, otherwise "mackay"
        (:func:`bayes_rvm.solvers.default_solver`, the same rule as :class:`RVC`).
    a, b : float, default=0.0
        Gamma hyperprior on each ``alpha_i``.
    c, d : float, default=0.0
        Gamma hyperprior on the noise precision.
    noise_var : float, optional
        Fix the noise variance (Fig. 1 of the paper uses ``0.01**2``); learned when ``None``.
    n_starts : int, optional
        Solver "sequential": the number of ascents from different starting noises, the
        best kept (:func:`bayes_rvm.fit_type2`; with ``noise_var`` given, an ascent that
        starts below it learns the noise up to it). ``None``: 4 on a basis of at most
        16 MiB of doubles (``N n_basis``), 2 on a larger one with at least twice as many
        rows as columns (reduced to its triangular factor); other larger bases are
        fitted from one start, and a larger value warns. 1 is the fastest; more never
        reach a lower optimum of the evidence and take about proportionally longer.
    max_iter : int, optional
        Solver iteration limit (solver default when ``None``).
    tol : float, default=1e-6
        Convergence threshold: for "mackay" and "em" on the gradient of the log evidence
        with respect to ``log alpha`` and ``log beta``, for "sequential" on the largest
        possible gain of the log evidence in nats (see :func:`bayes_rvm.fit_type2`).
    optimize_scales : bool, default=False
        Learn one input scale per dimension of the "rbf" (or "laplacian") kernel by the
        evidence, starting from ``gamma`` (the eta-RVM, Tipping 2001, App. C; see
        :func:`bayes_rvm.solvers.scales.fit_type2_scales`).
    extra_columns : sequence, optional
        Extra basis functions appended after the kernel columns and the bias, pruned like
        any other (Sec. 4.3): ``"linear"`` (the inputs ``x1, x2, ...``), ``"quadratic"``
        (``x1*x1, x1*x2, ...``) or pairs ``(name, f)`` with ``f(X)`` an array of one or
        more columns (:class:`bayes_rvm.basis.ExtraColumns`).
    predictive : {"paper", "augmented"}, default="paper"
        Predictive distribution of :meth:`predict` (see ``PREDICTIVE``). "paper" is
        Tipping (2001, eq. 21-22) over the relevance vectors. "augmented" is the RVM*
        (Rasmussen & Quiñonero-Candela 2005): at each test input one kernel function
        centred there is added to the fitted model, so that the error bars grow away from
        the data instead of shrinking to the noise level
        (:func:`bayes_rvm.augmented.augmented_predictive`); it keeps the training inputs
        and targets and costs ``O(N M)`` per test input.
    centres : None, int or array of shape (n_centres, n_features), default=None
        Candidate centres of the kernel basis functions. ``None``: every training input,
        as in the paper (a pass over the basis costs ``N^2`` kernel values); an input given
        in several rows is one centre, and a row of ``sample_weight`` 0 is none (its
        relevance vectors then also fill ``basis_.centres``; ``relevance_indices_`` name
        the first training row of each; with ``optimize_scales``, every row). An int: that
        many centres chosen among the training inputs by k-means++
        (:func:`sklearn.cluster.kmeans_plusplus`, seeded by ``random_state``). An array:
        the given centres. A pass then costs ``N n_centres`` kernel values; the relevance
        vectors are the kept centres (``basis_.centres`` holds all of them).
    random_state : None, int or numpy.random.RandomState, default=None
        Seed of k-means++ when ``centres`` is an int.
    verbose : bool or int, default=False
        Print the solver's progress (every 50 iterations, and its steps).
    n_jobs : int, optional
        Threads for a basis that is not held in memory (with every input a centre, from
        about 1,400 training inputs): the blocks of each pass over the kernel, of the
        working sets' Gram matrices and of the certificates' ``S, Q`` are computed in
        parallel (:class:`bayes_rvm.basis.KernelBasis`). ``None``: one; ``-1``: every
        core. The fit is the same to the last bit with any ``n_jobs``. A fit that holds
        its basis in memory or reduces it (``centres``) makes one or two passes and
        runs its solver in one thread: threads change little there.

    Attributes
    ----------
    relevance_vectors_ : ndarray of shape (n_relevance, n_features)
    relevance_indices_ : ndarray of int
        Rows of the training data that are relevance vectors, the first row of an input
        given in several (columns of the Gram matrix with ``kernel="precomputed"``; rows of
        ``basis_.centres`` with ``centres`` an int or an array).
    coef_ : ndarray of shape (n_relevance,)
        Posterior mean weights of the relevance vectors.
    intercept_ : float
        Posterior mean of the bias weight (0 when ``bias=False`` or pruned).
    alpha_ : ndarray
        Precisions of the active basis functions: relevance vectors, then the bias, then
        extra columns (see ``active_names_``).
    sigma_ : ndarray
        Posterior covariance of the active weights, same order as ``alpha_``.
    noise_var_ : float
        Noise variance ``1 / beta`` (learned or as given).
    log_evidence_ : float
        Final log marginal likelihood with hyperprior terms (eq. 36).
    log_evidence_path_ : ndarray
        The log evidence along the fit: one entry per iteration (MacKay, EM), or per
        add / re-estimate / delete step and noise update (sequential). The sequential
        solver's entries between two refactorisations of the posterior precision are
        running values from the steps' gains; with nearly collinear relevant columns
        (its condition number near ``1 / eps``) they can overshoot, and the next
        refactorisation brings them back; there the exact value can also fall between
        two refactorisations (the steps were taken on rounded ``Sigma``). The last entry
        is ``log_evidence_``.
    n_iter_ : int
        Iterations (MacKay, EM), or steps and noise updates (sequential).
    kernel_ : Kernel or None
        The kernel with ``gamma`` resolved, or the learned scales with
        ``optimize_scales`` (``None`` when precomputed).
    scales_ : ndarray of shape (n_features,) or None
        Learned input scales ``eta`` (``None`` unless ``optimize_scales``).
    scales_fit_ : ScalesFit
        With ``optimize_scales``: the scale search (path, gradient, convergence).
    basis_ : FittedBasis
        The active basis functions as fitted (kernel at the learned scales, relevance
        vectors, bias, extra columns); :meth:`design_matrix` evaluates them.
    extra_coef_ : dict
        Posterior mean weight of every extra column by name (``"x2"``, ``"x1*x2"``, ...);
        0.0 for pruned ones.
    active_names_ : list of str
        Name of every active basis function, aligned with ``alpha_`` and ``sigma_``:
        ``"k<i>"`` for the kernel centred on training row ``i``, ``"bias"``, extra names.
    result_ : Type2Result
        The solver's complete result.
    n_train_ : int
        Number of training samples (the kernel columns of the basis).
    X_train_ : ndarray of shape (n_samples, n_features)
        The training inputs (the Gram matrix with ``kernel="precomputed"``), kept for
        ``predictive="augmented"``, which like a Gaussian process needs every training
        input; a pickled model carries them.
    y_train_ : ndarray of shape (n_samples,)
        The training targets, for the same predictive.
    train_weights_ : ndarray of shape (n_samples,) or None
        The ``sample_weight`` of the fit (``None`` without one).

    Examples
    --------
    >>> import numpy as np
    >>> from bayes_rvm import RVR
    >>> rng = np.random.default_rng(0)
    >>> X = np.linspace(-10, 10, 100)[:, None]
    >>> y = np.sinc(X[:, 0] / np.pi) + rng.normal(0, 0.1, 100)
    >>> model = RVR(kernel="rbf", gamma=0.25).fit(X, y)
    >>> mean, std = model.predict(X[:3], return_std=True)
    >>> bool(len(model.relevance_vectors_) < 20)
    True
    """

    c: float = 0.0
    d: float = 0.0
    noise_var: float | None = None
    n_starts: int | None = None
    predictive: str = "paper"
    n_jobs: int | None = None

    def fit(self, X, y, sample_weight=None):
        """Fit the hyperparameters by type-II maximum likelihood; returns ``self``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs (with ``kernel="precomputed"``, the square Gram matrix).
            A dask array chunked by rows is fitted where its chunks live, by dask tasks
            (:class:`bayes_rvm.dask.DaskKernelBasis`; ``pip install bayes_rvm[dask]``).
            Dense only: a scipy sparse matrix raises ``TypeError`` (the kernel columns
            are dense whatever ``X`` is, so converting would hide an ``N x N`` dense
            cost; pass ``X.toarray()`` deliberately). Any real dtype is accepted and
            computed in float64 (float32 inputs are upcast; predictions are float64).
        y : array-like of shape (n_samples,)
            Real targets.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights: sample ``n`` has noise precision ``beta w_n``, and the
            noise is learned from ``sum(w)`` observations, so a weight of 2 fits as the
            sample repeated twice and a weight of 0 as the sample left out. With
            ``centres=None`` that holds for the basis too: the candidate centres are the
            distinct inputs of positive weight (a sample of weight 0 is no centre, and
            repeated inputs are one centre), and ``gamma="scale"`` counts each sample
            ``w_n`` times. Not with ``optimize_scales``.

        Raises
        ------
        ValueError
            NaN or infinite values, fewer than 2 samples, inconsistent lengths, an
            invalid option, or targets so large or small that the fit (its precisions,
            noise variance or weight covariance ``sigma_``) is outside the float range.
            A fit that raises leaves a previous fit intact.
        TypeError
            Sparse ``X``, or non-numeric ``X`` or ``y``.

        Warns
        -----
        ConvergenceWarning
            When ``max_iter`` is reached; the estimator holds the last iterate.
        UserWarning
            When every basis function is pruned (e.g. a target that is 0 everywhere):
            the model then predicts 0 with the learned noise as its standard deviation.
        """
        return self._fit_atomic(X, y, sample_weight=sample_weight)

    _parameter_constraints = _BaseRVM._parameter_constraints | {
        "c": check_nonnegative,
        "d": check_nonnegative,
        "noise_var": check_noise_var,
        "n_starts": none_or(check_positive_int),
        "predictive": one_of(PREDICTIVE),
        "n_jobs": none_or(_check_n_jobs),
    }

    def _pass_jobs(self) -> int | None:
        return self.n_jobs

    def _fit(self, X, y, sample_weight=None) -> None:
        validate_parameters(self)
        X, y = self._validate_training(X, y, y_numeric=True)
        y = check_target(y, X.shape[0], "y")
        self._check_n_samples(X)
        sample_weight = check_sample_weight(sample_weight, X.shape[0])
        self._fit_type2(X, y, "gaussian", sample_weight)
        self.noise_var_ = self.result_.noise_var
        # the augmented predictive (RVM*) needs every training input and target, as a GP
        # does: held in memory (O(N d)), so a dask fit predicts after its cluster is gone
        self.X_train_, self.y_train_ = np.asarray(X), y
        self.train_weights_ = sample_weight  # None without sample_weight

    def predict(self, X, return_std: bool = False, predictive: str | None = None):
        """Predictive mean, and with ``return_std`` the predictive standard deviation.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        return_std : bool, default=False
        predictive : {"paper", "augmented"}, optional
            Overrides the constructor's ``predictive`` for this call.

        Notes
        -----
        "paper": the variance is ``noise_var_ + phi(x)^T sigma_ phi(x)`` (Tipping 2001,
        eq. 22): the noise plus the uncertainty of every active weight, the bias weight's
        included. "augmented": the RVM* mean and variance
        (:func:`bayes_rvm.augmented.augmented_predictive`), with one kernel function
        added at each test input, its prior precision from
        :func:`bayes_rvm.augmented.default_alpha_star`. The design rows are evaluated in
        blocks of :data:`~bayes_rvm.basis.BLOCK_BYTES`, so memory stays bounded for any
        number of inputs.
        """
        check_is_fitted(self)
        if predictive is None:
            predictive = self.predictive
        lookup(PREDICTIVE, predictive, "predictive")
        X = self._validate_new(X)
        if predictive == "augmented":
            mean, var = self._augmented(X)
        else:
            mean, var = self._by_row_blocks(X, self.result_.predict)
        return (mean, np.sqrt(var)) if return_std else mean

    def _augmented(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """RVM* predictive, test inputs in blocks whose ``N x block`` kernel block takes at
        most :data:`~bayes_rvm.basis.BLOCK_BYTES`."""
        if self.kernel_ is None:
            raise ValueError(
                "predictive='augmented' adds a kernel function centred on each test input, "
                "which needs the inputs: it is not available with kernel='precomputed'"
            )
        if self.train_weights_ is not None:
            raise ValueError(
                "predictive='augmented' is derived for one noise level shared by every "
                "training row; this model was fitted with sample_weight (a noise level per "
                "row): use predictive='paper'"
            )
        X_train, t = self.X_train_, self.y_train_
        Phi = self.basis_.design(X_train)
        block = max(1, BLOCK_BYTES // (8 * X_train.shape[0]))
        result = self.result_
        mean, var = np.empty(X.shape[0]), np.empty(X.shape[0])
        for start in range(0, X.shape[0], block):
            rows = slice(start, start + block)
            k_self = self.kernel_.diag(X[rows])
            mean[rows], var[rows] = augmented_predictive(
                Phi,
                t,
                result.mu,
                result.precision_chol,
                result.beta,
                self.basis_.design(X[rows]),
                self.kernel_(X_train, X[rows]),
                k_self,
                default_alpha_star(t, result.beta, k_self),
            )
        return mean, var


#: ``multi_class`` option -> description (the valid names).
MULTI_CLASS = {
    "ovr": "one binary classifier per class against the rest (Tipping 2001, Sec. 4.4)",
    "multinomial": "one softmax model with K weight vectors (Bishop 2006, eq. 7.120-7.122)",
}


@dataclass(repr=False, eq=False, kw_only=True)
class RVC(ClassifierMixin, _BaseRVM):
    """Relevance vector classification (Tipping 2001, Sec. 3).

    ``P(t = 1 | x) = sigmoid(sum_i w_i k(x, x_i) + w_0)`` with one prior precision
    ``alpha_i`` per weight. For fixed ``alpha`` the weight posterior is replaced by its
    Laplace approximation at the mode (found by IRLS, eq. 24-26), and ``alpha`` is
    re-estimated from it until convergence; most ``alpha_i`` go to infinity.

    Parameters
    ----------
    kernel : {"rbf", "linear_spline", "poly", "linear", "laplacian", "precomputed"}, Kernel \
or callable, default="rbf"
        Basis functions ``k(x, x_i)``; need not be a Mercer kernel.
    gamma : float, array, "scale" or "auto", default="scale"
        Input scale of the RBF / Laplacian / polynomial kernels (``gamma = r^-2`` for the
        paper's Gaussian kernel of width ``r``, eq. 30).
    degree : int, default=3
    coef0 : float, default=1.0
    bias : bool, default=True
        Add a constant basis function.
    solver : {"auto", "sequential", "mackay", "em"}, default="auto"
        Type-II optimiser (:func:`bayes_rvm.fit_type2`). "auto": "sequential" (Tipping &
        Faul 2003; the binary model, and each classifier of "ovr") when ``a = b = 0``,
        otherwise "mackay" (:func:`bayes_rvm.solvers.default_solver`, the same rule as
        :class:`RVR`). "sequential" does not fit the softmax (``"multinomial"``).
    a, b : float, default=0.0
        Gamma hyperprior on each ``alpha_i``.
    multi_class : {"ovr", "multinomial"}, default="ovr"
        With more than two classes: ``"ovr"`` fits one binary RVC per class against the
        rest (the paper's strategy for USPS) and normalises their probabilities;
        ``"multinomial"`` fits one softmax model (``MK x MK`` Hessian) in which every
        basis function keeps or loses its ``K`` weights together (one shared ``alpha_i``;
        see :mod:`bayes_rvm.laplace`); over more than
        :data:`~bayes_rvm.laplace.MAX_SOFTMAX_WEIGHTS` weights it runs on a working set of
        basis functions grown by their evidence gain, with a Hessian of that size at most.
        Two classes always give the binary model.
    moderated : bool, default=False
        Probabilities. ``False``: the sigmoid (softmax) of the latent function at the
        posterior mode, ``sigmoid(phi(x)^T w*)``. ``True``: MacKay's moderated output, the
        sigmoid integrated over the Laplace posterior of the latent function by the
        probit approximation ``sigmoid(kappa(s^2) phi(x)^T w*)`` with
        ``kappa(s^2) = (1 + pi s^2 / 8)^(-1/2)`` and ``s^2 = phi(x)^T Sigma phi(x)``
        (Bishop 2006, eq. 4.153-4.155); it pulls probabilities towards 1/2 far from the
        relevance vectors. For the softmax, the average of the softmax over the Gaussian of
        the ``K`` latent outputs with their full covariance, by deterministic quasi-Monte
        Carlo (within Monte Carlo error of averaging over draws of the weights; see
        :func:`bayes_rvm.laplace.log_class_proba`). One-vs-rest moderates each of its
        classifiers. Predicted labels of binary problems are the
        same either way.
    max_iter : int, optional
    tol : float, default=1e-6
        Convergence threshold (see :func:`bayes_rvm.fit_type2`): the largest gain in nats
        of any single step for "sequential", the gradient of the (Laplace) log evidence
        with respect to ``log alpha`` for "mackay" and "em".
    optimize_scales : bool, default=False
        Learn one input scale per dimension of the "rbf" (or "laplacian") kernel by the
        Laplace evidence (binary problems, and each classifier of "ovr"); see
        :func:`bayes_rvm.solvers.scales.fit_type2_scales`.
    extra_columns : sequence, optional
        Extra basis functions after the kernel columns and the bias (Sec. 4.3), as in
        :class:`RVR`.
    centres : None, int or array of shape (n_centres, n_features), default=None
        Candidate centres (every training input, k-means++ or given), as in :class:`RVR`;
        with one-vs-rest every classifier gets the same candidates.
    random_state : None, int or numpy.random.RandomState, default=None
        Seed of k-means++ when ``centres`` is an int.
    verbose : bool or int, default=False
        Print progress. Binary and multinomial fits: the solver's iterations. One-vs-rest:
        ``True`` (or 1) prints a line per classifier as it finishes (its class label,
        ``k of K``, relevance vectors, time) and, on a terminal or in a notebook, a
        progress bar that rewrites itself; also with ``n_jobs`` (this process reports the
        fits of the workers). 2 adds each classifier's solver iterations (without the
        bar). Nothing is printed with ``False``.
    class_weight : None, "balanced" or dict, default=None
        Weights of the classes, multiplied into ``sample_weight`` (scikit-learn's
        convention, :func:`sklearn.utils.class_weight.compute_class_weight`). A dict maps
        class labels to weights >= 0 (classes not listed weigh 1; a label that is not a
        class is an error). "balanced" gives class ``k`` the weight ``n / (K n_k)``,
        with the ``n`` samples and the ``n_k`` of class ``k`` counted with their sample
        weights, so that every class weighs the same in the likelihood. One-vs-rest
        weighs the samples by their own class in every binary classifier.
    n_jobs : int, optional
        With one-vs-rest, the number of classifiers fitted in parallel (joblib; ``-1``:
        every core, ``None``: one unless in a ``joblib.parallel_config`` context). The
        classifiers share one evaluation of the kernel matrix when each would hold it
        (up to 1 GB; passed to parallel workers as a memory map).

    Attributes
    ----------
    classes_ : ndarray
        The class labels (any type), sorted.
    relevance_vectors_ : ndarray of shape (n_relevance, n_features)
        With ``"ovr"`` and more than two classes, the union over the classifiers.
    relevance_indices_ : ndarray of int
    n_relevance_ : int
        Number of relevance vectors; with ``"ovr"`` the total over the classifiers
        (how Tipping 2001 counts them for USPS).
    coef_ : ndarray of shape (n_relevance,) or (n_relevance, K)
        Posterior mode of the weights (binary, or one column per class for softmax).
    intercept_ : float or ndarray of shape (K,)
    alpha_, sigma_ : ndarray
        Precisions and Laplace covariance of the active weights (binary, multinomial).
    log_evidence_ : float or ndarray of shape (K,)
        Laplace approximation of the log evidence (one per classifier with ``"ovr"``).
    log_evidence_path_ : ndarray
        Binary and multinomial only: the log evidence along the fit (the sequential
        solver: the Laplace evidence at each mode, the weighted Gaussian objective of the
        steps between modes). The last entry is ``log_evidence_``.
    n_iter_ : int or ndarray of shape (K,)
        Iterations or steps of the solver (one-vs-rest: per class).
    estimators_ : list of RVC
        ``"ovr"`` with more than two classes: the fitted binary classifiers, class ``k``
        against the rest.
    kernel_ : Kernel or None
        With ``optimize_scales``, the kernel at the learned scales.
    scales_ : ndarray of shape (n_features,) or None
        Learned input scales (binary fits with ``optimize_scales``).
    extra_coef_ : dict
        Weight of every extra column by name (0 when pruned); binary and multinomial.
    active_names_ : list of str
        Name of every active basis function, aligned with ``alpha_``.
    result_ : Type2Result
        Binary and multinomial only.
    basis_ : FittedBasis
        Binary and multinomial only: the active basis functions as fitted
        (:meth:`design_matrix`).

    Examples
    --------
    >>> import numpy as np
    >>> from bayes_rvm import RVC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 2))
    >>> y = np.where(X[:, 0] + X[:, 1] > 0, "yes", "no")
    >>> model = RVC(kernel="rbf", gamma=0.5).fit(X, y)
    >>> model.predict(X[:3]).tolist(), model.predict_proba(X[:3]).shape
    (['no', 'yes', 'no'], (3, 2))
    >>> bool(model.n_relevance_ < 10)
    True
    """

    multi_class: str = "ovr"
    moderated: bool = False
    class_weight: str | Mapping | None = None
    n_jobs: int | None = None

    def fit(self, X, y, sample_weight=None):
        """Fit the hyperparameters by type-II maximum likelihood; returns ``self``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs, dense (sparse matrices raise ``TypeError``; see
            :meth:`RVR.fit`), computed in float64; or a dask array chunked by rows
            (see :meth:`RVR.fit`).
        y : array-like of shape (n_samples,)
            Class labels of any one type: integers, integral floats, booleans, strings,
            or other sortable objects (an object array of numbers counts as numbers).
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights ``w_n`` of the samples' log likelihoods,
            ``sum_n w_n log P(t_n | x_n)`` (a weighted Bernoulli or softmax likelihood in
            the Laplace mode and evidence): a weight of 2 fits as the sample repeated
            twice, a weight of 0 as the sample left out, the basis included with
            ``centres=None`` (the candidate centres are the distinct inputs of positive
            weight, see :meth:`RVR.fit`). Multiplied by the weights of
            ``class_weight``. One-vs-rest passes them to each binary classifier. Not with
            ``optimize_scales``.

        Raises
        ------
        ValueError
            If ``y`` holds a single class, continuous values or labels of mixed types,
            ``X`` or ``y`` holds NaN or infinite values, or ``multi_class`` is not a valid
            name. A fit that raises leaves a previous fit intact.
        TypeError
            Sparse or non-numeric ``X``, or labels that cannot be sorted.

        Warns
        -----
        ConvergenceWarning
            When ``max_iter`` is reached; the estimator holds the last iterate.
        UserWarning
            When every basis function is pruned: the model then predicts probability
            1/K for every class (ties go to the first class of ``classes_``).
        """
        return self._fit_atomic(X, y, sample_weight=sample_weight)

    _parameter_constraints = _BaseRVM._parameter_constraints | {
        "multi_class": one_of(MULTI_CLASS),
        "moderated": check_bool,
        "class_weight": none_or(_check_class_weight),
        "n_jobs": none_or(_check_n_jobs),
    }

    def _fit(self, X, y, sample_weight=None, basis: KernelBasis | None = None) -> None:
        validate_parameters(self)
        if y is not None:  # None: validate_data says that y is required
            check_no_missing_labels(y)
        X, y = self._validate_training(X, y)
        self.classes_, codes = check_class_labels(y)
        self._check_n_samples(X)
        n_classes = self.classes_.size
        if n_classes < 2:
            raise ValueError(
                "RVC needs training labels of at least 2 classes; y holds only one class "
                f"({self.classes_[0]!r})"
            )
        sample_weight = self._sample_weight(codes, check_sample_weight(sample_weight, y.size))
        if n_classes > 2 and self.multi_class == "ovr":
            # the same candidate centres for every classifier
            centres, rows = self._candidates(X, sample_weight)
            self.estimators_ = self._fit_one_vs_rest(X, codes, centres, sample_weight)
            self.kernel_ = self.estimators_[0].kernel_
            kept = np.unique(np.concatenate([e.relevance_indices_ for e in self.estimators_]))
            self.relevance_vectors_ = np.asarray((X if centres is None else centres)[kept])
            self.relevance_indices_ = kept if rows is None else rows[kept]
            self.n_relevance_ = sum(e.n_relevance_ for e in self.estimators_)
            self.log_evidence_ = np.array([e.log_evidence_ for e in self.estimators_])
            self.n_iter_ = np.array([e.n_iter_ for e in self.estimators_])
            return
        likelihood = "bernoulli" if n_classes == 2 else "categorical"
        self._fit_type2(X, codes, likelihood, sample_weight, basis)
        self.n_relevance_ = int(self.relevance_indices_.size)

    def _sample_weight(self, codes: np.ndarray, sample_weight: np.ndarray | None):
        """``sample_weight`` times the weight of each sample's class (``class_weight``, as
        :func:`sklearn.utils.class_weight.compute_class_weight`: "balanced" gives class
        ``k`` the weight ``n / (K n_k)``, with ``n`` and ``n_k`` counted with the sample
        weights); ``None`` when neither is given."""
        if self.class_weight is None:
            return sample_weight
        K = self.classes_.size
        if isinstance(self.class_weight, str):  # "balanced"
            totals = np.bincount(codes, weights=sample_weight, minlength=K)
            if not np.all(totals > 0):
                empty = self.classes_[np.flatnonzero(totals == 0)].tolist()
                raise ValueError(
                    "class_weight='balanced' divides by the total sample weight of each "
                    f"class; classes {empty!r} have total weight 0"
                )
            per_class = compute_class_weight(
                "balanced", classes=np.arange(K), y=codes, sample_weight=sample_weight
            )
        else:
            index = {label: k for k, label in enumerate(self.classes_.tolist())}
            unknown = [label for label in self.class_weight if label not in index]
            if unknown:
                raise ValueError(
                    f"class_weight has weights for {unknown!r}, which are not classes of y; "
                    f"the classes are {self.classes_.tolist()!r}"
                )
            per_class = np.ones(K)
            for label, weight in self.class_weight.items():
                per_class[index[label]] = weight
        weights = per_class[codes] if sample_weight is None else per_class[codes] * sample_weight
        if not np.any(weights > 0):
            raise ValueError(
                "class_weight and sample_weight together give every sample weight 0; class "
                f"weights: {dict(zip(self.classes_.tolist(), per_class.tolist(), strict=True))}"
            )
        return weights

    def _fit_one_vs_rest(
        self, X: np.ndarray, codes: np.ndarray, centres, sample_weight
    ) -> list[RVC]:
        """One binary classifier per class against the rest, on the given candidate
        centres, in parallel with ``n_jobs``; with ``verbose``, each is reported as it
        finishes (from this process, also when the fits run in workers).

        When each fit would hold the whole matrix of its scaled columns (the sequential
        solver's classification path holds a basis that ``Schedule.mode_holds``), that
        matrix and the column norms are computed once here and shared
        (``bayes_rvm._basis_views.HeldKernelBasis``; with ``n_jobs``, joblib passes the matrix
        to the workers as a memory map)."""
        K = self.classes_.size
        template = self._binary(centres)
        basis = template._build_basis(X, sample_weight)
        if (
            type(basis) is KernelBasis
            and not self.optimize_scales
            and Schedule().mode_holds(basis.shape)
        ):
            sq_norms = basis.sq_norms()
            scales = column_scales(basis, sq_norms, Prior(self.a, self.b))
            basis = HeldKernelBasis(basis, sq_norms, scales)
        jobs = (
            delayed(self._fit_binary)(
                X, (codes == k).astype(np.int64), template, basis, sample_weight
            )
            for k in range(K)
        )
        progress = None
        if self.verbose:
            # the solvers print their own progress from verbose=2 on: then no bar
            progress = ProgressLine(K, "RVC", bar=None if self.verbose == 1 else False)
        estimators = []
        try:
            for k, (estimator, seconds) in enumerate(
                Parallel(n_jobs=self.n_jobs, return_as="generator")(jobs)
            ):
                estimators.append(estimator)
                if progress is not None:
                    label = np.asarray(self.classes_[k]).tolist()
                    progress.step(
                        f"class {label!r} ({k + 1} of {K}) against the rest: "
                        f"{estimator.n_relevance_} relevance vectors in {seconds:.2f} s"
                    )
        finally:
            if progress is not None:
                progress.close()
        return estimators

    def _binary(self, centres) -> RVC:
        """An unfitted classifier of one-vs-rest on the given candidate centres: the class
        weights are in its sample weights, and its solver prints its progress from
        ``verbose=2`` on."""
        return clone(self).set_params(
            n_jobs=None, centres=centres, class_weight=None, verbose=max(int(self.verbose) - 1, 0)
        )

    @staticmethod
    def _fit_binary(
        X: np.ndarray, targets: np.ndarray, template: RVC, basis: KernelBasis, sample_weight
    ) -> tuple[RVC, float]:
        """A copy of ``template`` fitted to ``targets`` (0 / 1) on ``basis`` (the one its
        ``_build_basis(X)`` builds), and its time in seconds."""
        start = time.perf_counter()
        binary = clone(template)
        binary._fit(X, targets, sample_weight=sample_weight, basis=basis)
        return binary, time.perf_counter() - start

    def decision_function(self, X):
        """Latent function at the posterior mode, ``phi(x)^T w*``.

        Returns
        -------
        ndarray of shape (n_samples,) (binary: the log-odds of ``classes_[1]``) or
        (n_samples, K) (one latent output per class).
        """
        check_is_fitted(self)
        X = self._validate_new(X)
        if hasattr(self, "estimators_"):
            return np.column_stack([e.decision_function(X) for e in self.estimators_])
        return self._by_row_blocks(X, lambda Phi: Phi @ self.result_.mu)

    def _log_proba(self, X: np.ndarray, moderated: bool) -> np.ndarray:
        if hasattr(self, "estimators_"):
            # one-vs-rest: P(class k) proportional to classifier k's probability, each
            # classifier moderated or not as this estimator is set now
            log_p = np.column_stack([e._log_proba(X, moderated)[:, 1] for e in self.estimators_])
            return log_p - np.logaddexp.reduce(log_p, axis=1, keepdims=True)
        return self._by_row_blocks(X, lambda Phi: self._log_proba_rows(Phi, moderated))

    def _log_proba_rows(self, Phi: np.ndarray, moderated: bool) -> np.ndarray:
        """Log class probabilities at design rows ``Phi``."""
        mean = Phi @ self.result_.mu
        if not moderated:
            return log_class_proba(mean)
        L = self.result_.precision_chol
        if mean.ndim == 1:
            return log_class_proba(mean, latent_variance(Phi, L, 1))
        return log_class_proba(mean, latent_covariance(Phi, L, mean.shape[1]))

    def predict_proba(self, X):
        """Class probabilities, columns in the order of ``classes_``.

        At the posterior mode, or moderated (``moderated=True``); see the class notes.
        """
        check_is_fitted(self)
        X = self._validate_new(X)
        return np.exp(self._log_proba(X, self.moderated))

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`, computed without underflow for the sigmoid."""
        check_is_fitted(self)
        X = self._validate_new(X)
        return self._log_proba(X, self.moderated)

    def predict(self, X):
        """The most probable class (``classes_`` labels)."""
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
