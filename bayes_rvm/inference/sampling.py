"""MCMC (:func:`sample`) and variational (:func:`fit_vi`) fits of a model."""

from __future__ import annotations

import importlib.util
import inspect
import time
import warnings
from collections.abc import Sequence

import numpy as np
import pymc as pm
import xarray as xr
from pymc.sampling import mcmc as pm_mcmc
from pymc.variational.callbacks import CheckParametersConvergence

from bayes_rvm._collapsed import GRAM_MISMATCH, gram_matches
from bayes_rvm._progress import interactive
from bayes_rvm._validation import (
    check_open_unit,
    check_positive_int,
    lookup,
)
from bayes_rvm.inference._draws import (
    _INDEPENDENT_DRAWS,
    _dataset,
    _gaussian_draws,
    _numpy_rng,
    _set_group,
)
from bayes_rvm.inference.export import _complete, _Fitted, _record_inputs
from bayes_rvm.inference.prediction import _check_new_design
from bayes_rvm.pymc_model import model_spec
from bayes_rvm.variational import fit_vb

#: ``nuts_sampler`` name -> the module it needs (``None``: part of PyMC).
NUTS_SAMPLERS = {"pymc": None, "nutpie": "nutpie", "numpyro": "numpyro"}

#: ``method`` names accepted by :func:`fit_vi`.
VI_METHODS = ("advi", "fullrank_advi", "vb")


def _training_data(model: pm.Model) -> tuple[np.ndarray, np.ndarray]:
    Phi = np.asarray(model["Phi"].get_value())
    t = np.asarray(model.rvs_to_values[model["t"]].data)
    if Phi.shape[0] != t.size:
        raise ValueError(
            f"the model's Phi has {Phi.shape[0]} rows but t has {t.size} values: restore the "
            "training rows (pm.set_data) before fitting; pass new rows as Phi_new instead"
        )
    return Phi, t


def _fitted_model(model, spec) -> _Fitted:
    Phi, t = _training_data(model)
    if spec.parameterization == "collapsed" and not gram_matches(Phi, model["gram"].get_value()):
        raise ValueError(GRAM_MISMATCH)
    coords = {name: np.asarray(values) for name, values in model.coords.items()}
    return _Fitted(spec.likelihood, Phi, t, coords)


def _fixed_values(model) -> dict[str, np.ndarray]:
    """``alpha`` and ``beta`` where the model holds them fixed: observed (``pm.observe``),
    intervened on (``pm.do``) or a fixed noise (``noise_var``)."""
    fixed = {}
    for name in ("alpha", "beta"):
        if name not in model.named_vars:
            continue
        variable = model[name]
        if variable in model.observed_RVs:
            fixed[name] = np.asarray(model.rvs_to_values[variable].data, dtype=np.float64)
        elif variable not in model.free_RVs:
            fixed[name] = np.asarray(variable.eval(), dtype=np.float64)
    return fixed


def _fit_attrs(spec, fit: str, method: str, diagnostics: str) -> dict:
    return {
        "fit": fit,
        "method": method,
        "likelihood": spec.likelihood,
        "parameterization": spec.parameterization,
        "sampling_diagnostics": diagnostics,
    }


def _check_progressbar(progressbar):
    if progressbar is None:
        return interactive()
    if not isinstance(progressbar, bool):
        raise TypeError(f"progressbar must be True, False or None, got {progressbar!r}")
    return progressbar


def _check_seed(random_seed, chains: int):
    """``None``, an int, a Generator, or one int per chain (as ``pm.sample`` accepts)."""
    if random_seed is None or isinstance(random_seed, np.random.Generator):
        return random_seed
    seeds = np.atleast_1d(np.asarray(random_seed, dtype=object))
    if seeds.ndim != 1 or not all(
        isinstance(s, int | np.integer) and not isinstance(s, bool) and s >= 0 for s in seeds
    ):
        raise TypeError(
            "random_seed must be None, a non-negative int, a numpy Generator or a sequence of "
            f"non-negative ints (one per chain), got {random_seed!r}"
        )
    if np.ndim(random_seed) == 0:
        return int(random_seed)
    if seeds.size != chains:
        raise ValueError(f"expected {chains} seeds (one per chain), got {seeds.size}")
    return [int(s) for s in seeds]


def _check_var_names(model, var_names):
    if var_names is None:
        return None
    if isinstance(var_names, str) or not isinstance(var_names, Sequence):
        raise TypeError(f"var_names must be a list of variable names, got {var_names!r}")
    unknown = [name for name in var_names if name not in model.named_vars]
    if unknown:
        raise ValueError(
            f"var_names {unknown} are not variables of the model; expected some of "
            f"{sorted(model.named_vars)}"
        )
    return list(var_names)


#: keyword arguments of pm.sample and of its NUTS step, which **sample_kwargs may hold
#: (read from the module that defines pm.sample: the name ``pm.sample`` may be wrapped
#: when this module is first imported)
_SAMPLE_OPTIONS = frozenset(inspect.signature(pm_mcmc.sample).parameters) | frozenset(
    inspect.signature(pm.NUTS.__init__).parameters
)
#: options of sample() itself, or set by it
_OWN_OPTIONS = frozenset({"model", "return_inferencedata", "kwargs", "self", "vars"})


def _check_sample_kwargs(sample_kwargs) -> None:
    unknown = sorted(set(sample_kwargs) - (_SAMPLE_OPTIONS - _OWN_OPTIONS))
    if unknown:
        raise TypeError(f"unexpected keyword arguments for pymc.sample: {unknown}")


def sample(
    model: pm.Model,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    cores: int | None = None,
    random_seed=None,
    nuts_sampler: str | None = None,
    target_accept: float = 0.9,
    var_names: Sequence[str] | None = None,
    step=None,
    X_new=None,
    Phi_new=None,
    progressbar: bool | None = None,
    return_inferencedata: bool = True,
    **sample_kwargs,
) -> xr.DataTree:
    """Sample the posterior of a :func:`~bayes_rvm.build_model` model with NUTS.

    Every option is checked before anything is compiled or sampled.

    Parameters
    ----------
    model : pymc.Model
        From :func:`~bayes_rvm.build_model` or :func:`model_from_estimator`, or a copy of
        one made by ``clone_model``, ``pm.do`` or ``pm.observe``. Any other model (your own,
        with :func:`~bayes_rvm.rvm_weights`) is refused before anything is compiled: sample
        it with ``pm.sample`` and predict with ``predict(tree, model=model)``.
    draws, tune, chains : int
        As ``pymc.sample`` (4 chains by default).
    cores : int, optional
        Parallel chains (PyMC's default when ``None``).
    random_seed : int, Generator or sequence of int, optional
        Seeds the sampler (one int per chain is accepted) and the exact ``w`` and
        prediction draws made here.
    nuts_sampler : {"pymc", "nutpie", "numpyro"}, optional
        NUTS implementation; nutpie and numpyro are the optional ``samplers`` extra. By
        default nutpie when it is installed (as ``pymc.sample`` does; on noisy sinc it
        drew 1.5 times the ESS per second of sampling of PyMC's NUTS in the collapsed form
        and about 8 times in the weight-space forms, after a few seconds' longer
        compilation: ``benchmarks/bench_sampling.py``), otherwise ``"pymc"``; ``"pymc"``
        when ``step`` or a ``callback`` is given.
    target_accept : float
        Step-size adaptation target; raise it (0.95-0.99) if divergences are reported.
    var_names : list of str, optional
        Posterior variables to keep (``w``, ``log_alpha`` and ``log_beta`` are derived
        and kept in any case).
    step : PyMC step method, optional
        With ``nuts_sampler="pymc"`` only.
    X_new : array, optional
        New inputs (models from :func:`model_from_estimator`) for the ``predictions`` group.
    Phi_new : array of shape (N_new, M), optional
        New design rows for the ``predictions`` group.
    progressbar : bool, optional
        Default: on in a terminal or a notebook.
    return_inferencedata : bool
        Must be True: the fit is a DataTree (use ``pm.sample`` itself for a MultiTrace).
    **sample_kwargs
        Further ``pymc.sample`` (or NUTS) options.

    Returns
    -------
    xarray.DataTree
        The layout of the module notes. For the collapsed model ``w`` is drawn exactly from
        ``N(mu, Sigma)`` (Tipping 2001, eq. 12-13) at every posterior draw of
        ``(alpha, beta)``, which makes the joint draws exact posterior draws of ``w``, and
        ``log_likelihood`` holds the exact leave-one-out conditionals, so ``az.loo`` works.
        A run interrupted by ``KeyboardInterrupt`` returns the draws made, with a warning
        and the attribute ``partial = 1``.

    Raises
    ------
    ImportError
        When the requested sampler is not installed.
    ValueError, TypeError
        For an invalid option, before any compilation or sampling.
    """
    spec = model_spec(model)
    if nuts_sampler is None:  # nutpie takes neither a step method nor a callback
        pymc_only = step is not None or "callback" in sample_kwargs
        installed = importlib.util.find_spec("nutpie") is not None
        nuts_sampler = "nutpie" if installed and not pymc_only else "pymc"
    module = lookup(NUTS_SAMPLERS, nuts_sampler, "nuts_sampler")
    if return_inferencedata is not True:
        raise ValueError(
            "bayes_rvm.sample returns a DataTree (return_inferencedata=True); for a "
            "MultiTrace call pm.sample(model=model, return_inferencedata=False)"
        )
    if step is not None and nuts_sampler != "pymc":
        raise ValueError(f"step= needs nuts_sampler='pymc', got nuts_sampler={nuts_sampler!r}")
    if module is not None and importlib.util.find_spec(module) is None:
        raise ImportError(
            f"nuts_sampler={nuts_sampler!r} needs the {module!r} package, which is not "
            "installed; install the optional extra (pip install 'bayes_rvm[samplers]') or use "
            "nuts_sampler='pymc'"
        )
    _check_sample_kwargs(sample_kwargs)
    fitted = _fitted_model(model, spec)
    Phi_new = _check_new_design(spec.design, fitted.Phi.shape[1], X_new, Phi_new)
    chains = check_positive_int(chains, "chains")
    options = {
        "draws": check_positive_int(draws, "draws"),
        "tune": check_positive_int(tune, "tune", minimum=0),
        "chains": chains,
        "cores": None if cores is None else check_positive_int(cores, "cores"),
        "target_accept": check_open_unit(target_accept, "target_accept"),
        "random_seed": _check_seed(random_seed, chains),
        "progressbar": _check_progressbar(progressbar),
    }
    if step is not None:  # PyMC passes target_accept to NUTS only
        del options["target_accept"]
    keep = _check_var_names(model, var_names)
    if keep is not None:
        needed = [name for name in ("alpha", "beta", "w", "nu") if name in model.named_vars]
        options["var_names"] = sorted(set(keep) | set(needed))
    start = time.perf_counter()
    with warnings.catch_warnings():
        # JAX drops the collapsed model's check of Phi against gram, made above already
        warnings.filterwarnings("ignore", message="Skipping CheckAndRaise", category=UserWarning)
        tree = pm.sample(
            **options, nuts_sampler=nuts_sampler, step=step, model=model, **sample_kwargs
        )
    wall_time = time.perf_counter() - start
    done = (tree["posterior"].sizes["chain"], tree["posterior"].sizes["draw"])
    if done != (chains, options["draws"]):
        _partial(tree, f"{done[0]} chains of {done[1]} draws, of {chains} x {options['draws']}")
    attrs = _fit_attrs(spec, "mcmc", f"NUTS ({nuts_sampler})", "meaningful: Markov chains")
    rng = _numpy_rng(random_seed)
    tree = _complete(tree, fitted, _fixed_values(model), Phi_new, rng, attrs)
    tree.attrs["wall_time"] = wall_time
    if keep is not None:
        posterior = tree["posterior"].to_dataset()
        derived = {"w", "log_alpha", "log_beta"}
        kept = [name for name in posterior if name in set(keep) | derived]
        _set_group(tree, "posterior", posterior[kept])
    _record_inputs(tree, X_new)
    return tree


def _vb_tree(spec, fitted: _Fitted, n: int, draws: int, rng) -> tuple[xr.DataTree, np.ndarray]:
    """The analytic variational RVM (Bishop and Tipping 2000) as a one-chain tree."""
    if spec.likelihood != "gaussian":
        raise ValueError(
            f"method='vb' is the variational RVM of the Gaussian likelihood; the model has "
            f"likelihood={spec.likelihood!r}: use method='advi' or 'fullrank_advi'"
        )
    if spec.a is None or spec.b is None or (spec.noise_var is None and spec.c is None):
        raise ValueError(
            "method='vb' needs constant Gamma hyperparameters a, b (and c, d or a fixed "
            "noise); this model's prior is hierarchical: use method='advi'"
        )
    result = fit_vb(
        fitted.Phi,
        fitted.t,
        a=spec.a,
        b=spec.b,
        c=spec.c,
        d=spec.d,
        noise_var=spec.noise_var,
        max_iter=n,
    )
    if not result.converged:
        warnings.warn(
            f"method='vb' stopped after {n} sweeps before the lower bound settled; increase n",
            UserWarning,
            stacklevel=3,
        )
    m = fitted.Phi.shape[1]
    alpha = rng.gamma(result.alpha_shape, 1.0 / result.alpha_rate, (draws, m))
    w = _gaussian_draws(result.mu, result.precision_chol, rng, draws)
    variables = {
        "alpha": (("chain", "draw", "basis"), alpha[None]),
        "w": (("chain", "draw", "basis"), w[None]),
    }
    if result.beta_shape is not None:
        beta = rng.gamma(result.beta_shape, 1.0 / result.beta_rate, draws)
        variables["beta"] = (("chain", "draw"), beta[None])
    coords = {**fitted.coords, "chain": np.arange(1), "draw": np.arange(draws)}
    tree = xr.DataTree()
    _set_group(tree, "posterior", _dataset(variables, coords))
    return tree, -result.lower_bound_path


def _loss_trend(loss: np.ndarray) -> tuple[float, float]:
    """The fall of a least-squares line through ``loss`` over its span, and its standard error."""
    x = np.arange(loss.size) - (loss.size - 1) / 2.0
    slope = float(x @ (loss - loss.mean()) / (x @ x))
    residual = loss - loss.mean() - slope * x
    se = float(np.sqrt(residual @ residual / (loss.size - 2) / (x @ x)))
    return -slope * loss.size, se * loss.size


class _Convergence(CheckParametersConvergence):
    """PyMC's parameter-convergence callback, remembering whether it stopped the fit."""

    fired = False

    def __call__(self, approx, loss, i):
        try:
            super().__call__(approx, loss, i)
        except StopIteration:
            self.fired = True
            raise


def _partial(tree: xr.DataTree, what: str) -> None:
    """Mark a fit that stopped before the run asked for, and say so."""
    tree.attrs["partial"] = 1
    warnings.warn(
        f"the fit was interrupted: {what}. The tree holds what was run (attribute "
        "partial = 1); its diagnostics and predictions describe that shorter run only.",
        UserWarning,
        stacklevel=3,
    )


def _advi_tree(model, method, n, draws, random_seed, progressbar, tolerance, fit_kwargs):
    """ADVI with PyMC's parameter-convergence callback; a warning when it never fires."""
    check = _Convergence(every=max(n // 50, 100), tolerance=tolerance, diff="absolute")
    callbacks = [*fit_kwargs.pop("callbacks", []), check]
    approx = pm.fit(
        n=n,
        method=method,
        model=model,
        random_seed=random_seed,
        progressbar=progressbar,
        callbacks=callbacks,
        **fit_kwargs,
    )
    loss = np.asarray(approx.hist, dtype=np.float64)
    if not check.fired:  # the parameters never settled: is the loss still falling?
        span = max(2 * loss.size // 5, 20)
        falling, noise = _loss_trend(loss[-span:]) if loss.size >= 3 else (np.nan, np.nan)
        if not np.isfinite(falling) or falling > 3.0 * noise:
            warnings.warn(
                f"{method} has not converged after {loss.size} of n={n} steps: the loss fell by "
                f"{falling:.3g} (+- {noise:.2g}) over the last {min(span, loss.size)} steps "
                f"and its parameters still moved by more than tolerance={tolerance:g}. "
                "Increase n, lower the learning rate (obj_optimizer), or use method='vb' "
                "(closed-form updates) for the Gaussian likelihood.",
                UserWarning,
                stacklevel=3,
            )
    tree = approx.sample(draws, random_seed=random_seed)
    if not check.fired and loss.size < n:
        _partial(tree, f"{loss.size} of n={n} optimisation steps")
    return tree, loss


def fit_vi(
    model: pm.Model,
    *,
    method: str = "advi",
    n: int = 20_000,
    draws: int = 1000,
    random_seed: int | None = None,
    X_new=None,
    Phi_new=None,
    progressbar: bool | None = None,
    tolerance: float = 1e-2,
    **fit_kwargs,
) -> xr.DataTree:
    """Variational fit of a :func:`~bayes_rvm.build_model` model.

    Parameters
    ----------
    model : pymc.Model
        As for :func:`sample` (checked before the optimisation starts).
    method : {"advi", "fullrank_advi", "vb"}
        ``"advi"`` / ``"fullrank_advi"``: mean-field or full-rank Gaussian approximation
        on the unconstrained scale (``log alpha``, ``log beta``, and ``z`` / ``w`` unless
        the model is collapsed, whose ``w`` is then drawn exactly given each draw).
        ``"vb"``: the variational RVM of Bishop and Tipping (2000) for the Gaussian
        likelihood, ``q(w) q(alpha) q(beta)`` with closed-form updates
        (:mod:`bayes_rvm.variational`); fast, and its lower bound never decreases.
    n : int
        Optimisation steps (``pymc.fit``), or the most sweeps of ``"vb"``.
    draws : int
        Draws from the fitted approximation (one chain).
    random_seed : int, optional
    X_new, Phi_new : array, optional
        New inputs or design rows for the ``predictions`` group (see :func:`sample`).
    progressbar : bool, optional
        Default: on in a terminal or a notebook (ADVI).
    tolerance : float
        ADVI stops early once the largest change of its parameters over ``n / 50`` steps
        (at least 100) is below ``tolerance``
        (``pymc.variational.callbacks.CheckParametersConvergence``). When that never
        happens and the loss is still falling over the last 40 % of the steps (by more
        than three standard errors of a straight-line fit), a ``UserWarning`` says so and
        what to do.
    **fit_kwargs
        Further ``pymc.fit`` options (e.g. ``obj_optimizer``, ``callbacks``).

    Returns
    -------
    xarray.DataTree
        The layout of the module notes; ``sample_stats["loss"]`` (dim ``iteration``) is
        the negative lower bound (ELBO) after every step or sweep. An ADVI run interrupted
        by ``KeyboardInterrupt`` returns the approximation reached, checked for convergence
        like a full run, with a warning and the attribute ``partial = 1``.

    Raises
    ------
    ValueError, TypeError
        For invalid options, before the optimisation starts.
    """
    spec = model_spec(model)
    method = lookup(VI_METHODS, method, "VI method")
    fitted = _fitted_model(model, spec)
    Phi_new = _check_new_design(spec.design, fitted.Phi.shape[1], X_new, Phi_new)
    n, draws = check_positive_int(n, "n"), check_positive_int(draws, "draws")
    progressbar = _check_progressbar(progressbar)
    if not (isinstance(tolerance, float | int) and tolerance > 0):
        raise ValueError(f"tolerance must be a number > 0, got {tolerance!r}")
    random_seed = _check_seed(random_seed, 1)
    if method == "vb" and fit_kwargs:
        raise TypeError(f"method='vb' takes no pymc.fit options, got {sorted(fit_kwargs)}")
    if method != "vb" and spec.likelihood == "gaussian" and spec.parameterization != "collapsed":
        warnings.warn(
            f"{method} on the {spec.parameterization} Gaussian model approximates the joint "
            "posterior of w and alpha, whose funnel a Gaussian fits badly: on noisy sinc its "
            "predictive sd came out about 16 times the MCMC value "
            "(benchmarks/bench_sampling.py --part vi). Use the collapsed model "
            "(parameterization='collapsed', the default) or method='vb'.",
            UserWarning,
            stacklevel=2,
        )
    rng = _numpy_rng(random_seed)
    start = time.perf_counter()
    if method == "vb":
        tree, loss = _vb_tree(spec, fitted, n, draws, rng)
        names = {"vb": "variational RVM (Bishop and Tipping 2000)"}
    else:
        tree, loss = _advi_tree(
            model, method, n, draws, random_seed, progressbar, tolerance, dict(fit_kwargs)
        )
        names = {"advi": "ADVI (mean-field)", "fullrank_advi": "ADVI (full-rank)"}
    wall_time = time.perf_counter() - start
    _set_group(
        tree,
        "sample_stats",
        xr.Dataset({"loss": (("iteration",), loss)}, coords={"iteration": np.arange(loss.size)}),
    )
    attrs = _fit_attrs(spec, "vi", names[method], _INDEPENDENT_DRAWS)
    tree = _complete(tree, fitted, _fixed_values(model), Phi_new, rng, attrs)
    tree.attrs["wall_time"] = wall_time
    _record_inputs(tree, X_new)
    return tree
