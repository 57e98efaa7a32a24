"""Kernel overflow and input validation: every case ends in a clear error naming the cause.

The kernel output is checked in one place (where the basis evaluates the kernel columns),
so an overflow is reported as an overflow of the kernel, not as a failing Cholesky
factorisation or a NaN in a design matrix the user never passed.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from bayes_rvm import RVC, RVR
from bayes_rvm._validation import check_class_labels
from bayes_rvm.datasets import make_sinc
from bayes_rvm.kernels import RBF
from bayes_rvm.solvers import EmptyModelWarning


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    return X, X[:, 0] + 0.1 * rng.normal(size=30)


@pytest.mark.parametrize(
    ("options", "scale", "match"),
    [
        ({"kernel": "poly", "gamma": 1e200}, 1.0, r"kernel Polynomial.* overflowed"),
        ({"kernel": "linear"}, 1e200, r"kernel Linear\(\) overflowed"),
        ({"kernel": "linear_spline"}, 1e120, r"kernel LinearSpline\(\) overflowed"),
        ({"kernel": "poly", "degree": 50, "gamma": 1.0}, 1e10, r"kernel Polynomial.* overflowed"),
        ({}, 1e200, r"gamma='scale' .* outside the float range"),
    ],
)
def test_kernel_overflow_is_named(data, options, scale, match):
    X, y = data
    for estimator, target in ((RVR, y), (RVC, (y > 0).astype(int))):
        with pytest.raises(ValueError, match=match):
            estimator(solver="mackay", **options).fit(X * scale, target)


def test_gamma_scale_at_float_max_is_not_silently_one(data):
    X, y = data
    X = np.vstack([X, [[np.finfo(float).max, -np.finfo(float).max]]])
    with pytest.raises(ValueError, match="outside the float range"):
        RVR().fit(X, np.r_[y, 0.0])


def test_gamma_scale_is_not_needed_by_kernels_without_gamma(data):
    """A linear spline on tiny inputs: gamma='scale' would be out of range, but unused."""
    X, y = data
    with warnings.catch_warnings():  # the spline is ~1 everywhere: nothing to learn
        warnings.simplefilter("ignore", EmptyModelWarning)
        model = RVR(kernel="linear_spline", solver="mackay").fit(X * 1e-160, y)
    assert np.all(np.isfinite(model.predict(X * 1e-160)))


@pytest.mark.parametrize("coef0", [np.inf, np.nan])
def test_coef0_must_be_finite(data, coef0):
    X, y = data
    with pytest.raises(ValueError, match="coef0 must be a finite number"):
        RVR(kernel="poly", coef0=coef0).fit(X, y)


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"gamma": None}, TypeError, "gamma must be a positive number or array, got None"),
        ({"kernel": RBF}, TypeError, r"got the class RBF: pass an instance such as RBF\(\)"),
        ({"extra_columns": 5}, TypeError, r"extra_columns must be a sequence .* got 5"),
        ({"extra_columns": {"linear": None}}, TypeError, "extra_columns must be a sequence"),
        (
            {"extra_columns": ["linear", ("x1", lambda X: X[:, 0] ** 2)]},
            ValueError,
            r"names must be unique .*\['x1'\]",
        ),
        (
            {"extra_columns": [("bias", lambda X: X[:, 0] ** 2)]},
            ValueError,
            r"differ from 'bias'",
        ),
        (
            {"extra_columns": [("f", lambda X: X[:5, 0])]},
            ValueError,
            r"extra column 'f' must return shape \(30,\) .* got shape \(5,\)",
        ),
        (
            {"extra_columns": [("f", lambda X: X[:, 0] + 1j)]},
            TypeError,
            "extra column 'f' returned complex values",
        ),
        ({"kernel": lambda A, B: A @ B.T + 1j}, TypeError, "returned complex values"),
        (
            {"extra_columns": [("s", lambda X: np.array(["a"] * len(X)))]},
            TypeError,
            r"extra column 's' returned values of dtype <U1; basis functions must return real",
        ),
        (
            {"kernel": lambda A, B: np.full((len(A), len(B)), "a")},
            TypeError,
            r"kernel function .* returned values of dtype <U1",
        ),
        (
            {"kernel": lambda A: A @ A.T},
            TypeError,
            r"kernel must be a callable k\(X, Y\) .* cannot be called with two arguments",
        ),
        ({"gamma": 1 + 2j}, TypeError, r"gamma must be a positive real number .* complex128"),
        ({"gamma": np.complex128(1)}, TypeError, r"gamma must be a positive real .* complex"),
        ({"max_iter": 2**70}, ValueError, r"max_iter must be at most 2\*\*63 - 1 .* got 1180"),
        (
            {"centres": 5, "random_state": -1},
            ValueError,
            r"random_state must be None, an int in \[0, 2\*\*32 - 1\] .* got -1",
        ),
    ],
)
def test_invalid_options_are_named(data, options, error, match):
    X, y = data
    with pytest.raises(error, match=match):
        RVR(**options).fit(X, y)


def test_labels_without_a_total_order_are_rejected():
    labels = np.array([frozenset({i % 3}) for i in range(30)], dtype=object)
    with pytest.raises(TypeError, match="totally ordered"):
        check_class_labels(labels)


def test_missing_labels_are_named(data):
    pd = pytest.importorskip("pandas")
    X, _ = data
    labels = pd.array(["a", "b"] * 14 + [pd.NA, "a"], dtype="string")
    with pytest.raises(ValueError, match=r"must not be missing.*first at position 28"):
        RVC().fit(X, labels)
    with pytest.raises(ValueError, match="must not be missing"):
        RVC().fit(X, ["a", "b"] * 14 + [None, "a"])


def test_make_sinc_needs_a_finite_width():
    with pytest.raises(ValueError, match="finite width"):
        make_sinc(10, x_range=(-1e308, 1e308))


OFFSETS = (1e7, 1e8, 1e9)


@pytest.fixture(scope="module")
def on_a_grid():
    """Inputs on a grid of 2^-10 (``x + 1e9`` holds them exactly) and a unit-scale target."""
    rng = np.random.default_rng(3)
    X = np.round(rng.uniform(-3, 3, size=(120, 2)) * 1024) / 1024
    y = np.sinc(X[:, 0]) * np.cos(X[:, 1]) + 0.05 * rng.normal(size=120)
    return X, y


def _assert_unchanged(shifted, reference):
    """Relative change at most 1e-9 of the largest reference value."""
    scale = np.max(np.abs(reference))
    np.testing.assert_allclose(shifted, reference, rtol=0, atol=1e-9 * scale)


@pytest.mark.parametrize("centres", [None, slice(0, None, 4)], ids=["inputs", "centres"])
def test_rbf_fits_are_invariant_to_an_offset_of_the_inputs(on_a_grid, centres):
    """Timestamps and projected coordinates: adding an offset to every input (and centre)
    is the same problem, for the regression and the classifier."""
    X, y = on_a_grid
    labels = (y > np.median(y)).astype(int)

    def options(offset):
        return {"gamma": 0.5, "centres": None if centres is None else X[centres] + offset}

    reference = RVR(**options(0.0)).fit(X, y)
    classifier = RVC(**options(0.0)).fit(X, labels)
    for offset in OFFSETS:
        model = RVR(**options(offset)).fit(X + offset, y)
        np.testing.assert_array_equal(model.relevance_indices_, reference.relevance_indices_)
        for got, expected in zip(
            model.predict(X + offset, return_std=True),
            reference.predict(X, return_std=True),
            strict=True,
        ):
            _assert_unchanged(got, expected)
        shifted = RVC(**options(offset)).fit(X + offset, labels)
        assert shifted.n_relevance_ == classifier.n_relevance_ > 0
        _assert_unchanged(shifted.predict_proba(X + offset), classifier.predict_proba(X))


@pytest.mark.parametrize("centres", [None, 25], ids=["symmetric", "centres"])
@pytest.mark.parametrize("dask", [False, True], ids=["numpy", "dask"])
def test_gram_passes_are_invariant_to_an_offset(on_a_grid, centres, dask):
    """The passes of the large-N designs (the working set's ``Phi^T V`` and column norms,
    column fetches, the reduction; in memory and on dask chunks) evaluate the kernel
    blocks of the shifted inputs as those of the unshifted ones."""
    from bayes_rvm.basis import KernelBasis

    X, y = on_a_grid
    C = None if centres is None else X[:centres]
    V = np.column_stack([y, np.cos(3 * y)])
    weights = np.linspace(0.5, 2.0, y.size)
    idx = np.arange(0, X.shape[0] if C is None else C.shape[0], 7)

    def passes(shift):
        if dask:
            import dask.array as da

            from bayes_rvm.dask import DaskKernelBasis

            basis = DaskKernelBasis(
                da.from_array(X + shift, chunks=(37, 2)), RBF(0.5),
                centres=None if C is None else C + shift,
            )  # fmt: skip
        else:
            basis = KernelBasis(X + shift, RBF(0.5), centres=None if C is None else C + shift)
        return (
            *basis.transpose_dot_with_norms(V),
            basis.transpose_dot_with_norms(V, weights)[1],
            basis.columns(idx),
            np.abs(basis.reduce(y)),  # R of a QR factorisation: rows up to sign
        )

    reference = passes(0.0)
    for offset in OFFSETS:
        for got, expected in zip(passes(offset), reference, strict=True):
            _assert_unchanged(got, expected)


def test_kmeans_centres_are_invariant_to_an_offset_of_the_inputs(on_a_grid):
    X, y = on_a_grid
    reference = RVR(gamma=0.5, centres=30, random_state=0).fit(X, y)
    for offset in OFFSETS:
        model = RVR(gamma=0.5, centres=30, random_state=0).fit(X + offset, y)
        np.testing.assert_array_equal(model.basis_.centres - offset, reference.basis_.centres)
        _assert_unchanged(model.predict(X + offset), reference.predict(X))


def _dates(n):
    return np.datetime64("2024-01-01") + np.arange(n).astype("timedelta64[D]")


@pytest.mark.parametrize("estimator", [RVR(), RVC()], ids=["RVR", "RVC"])
@pytest.mark.parametrize(
    "where",
    ["X dates", "X durations", "X frame", "y dates", "y durations", "y series", "predict"],
)
def test_dates_and_durations_are_refused(data, estimator, where):
    """Their integer ticks are no unit a kernel width could be read in: the user says."""
    pd = pytest.importorskip("pandas")
    X, y = data
    labels = (y > 0).astype(int) if isinstance(estimator, RVC) else y
    dates = _dates(X.shape[0])
    durations = dates - dates[0]
    fit_args = {
        "X dates": (np.column_stack([dates, dates]), labels),
        "X durations": (durations[:, None], labels),
        "X frame": (pd.DataFrame({"when": dates, "x": X[:, 0]}), labels),
        "y dates": (X, dates),
        "y durations": (X, durations),
        "y series": (X, pd.Series(durations)),
    }
    kind = "datetime64" if "dates" in where or "frame" in where else "timedelta64"
    if isinstance(estimator, RVC) and where.startswith("y"):  # labels: categories, any type
        two = fit_args[where][1]
        two = two.iloc[labels] if isinstance(two, pd.Series) else two[labels]
        model = estimator.fit(X, two)
        assert model.classes_.size == 2
        return
    if where == "predict":
        model = estimator.fit(X, labels)
        with pytest.raises(TypeError, match=r"X holds dates or durations \(dtype datetime64"):
            model.predict(np.column_stack([dates, dates]))
        return
    with pytest.raises(TypeError, match=rf"{where[0]} holds dates or durations \(dtype {kind}"):
        estimator.fit(*fit_args[where])


@pytest.mark.parametrize("failure", [ZeroDivisionError, KeyError])
def test_an_exception_in_the_users_kernel_names_the_kernel(data, failure):
    X, y = data

    def kernel(A, B):
        raise failure("inside")

    model = RVR(gamma=1.0).fit(X, y)
    with pytest.raises(ValueError, match=rf"kernel function .*kernel.* raised {failure.__name__}"):
        model.set_params(kernel=kernel).fit(X, y)
    with pytest.raises(ValueError, match="inside") as info:
        RVR(kernel=kernel).fit(X, y)
    assert isinstance(info.value.__cause__, failure)  # the user's error, chained
    assert model.kernel_.gamma == 1.0  # the failed fit kept the previous one


def test_dask_inputs_of_unknown_size_say_what_to_do(data):
    da = pytest.importorskip("dask.array")
    X, y = data
    chunked = da.from_array(X, chunks=10)
    unknown = chunked[chunked[:, 0] > -100]  # boolean indexing: chunk sizes unknown
    with pytest.raises(ValueError, match=r"chunk sizes are unknown .*X\.compute_chunk_sizes\(\)"):
        RVR(gamma=1.0).fit(unknown, y)
    model = RVR(gamma=1.0).fit(unknown.compute_chunk_sizes(), y)
    np.testing.assert_allclose(model.predict(X), RVR(gamma=1.0).fit(X, y).predict(X), atol=1e-9)


@pytest.mark.parametrize("failure", [ZeroDivisionError, KeyError])
def test_an_exception_in_an_extra_column_names_the_column(data, failure):
    X, y = data

    def column(A):
        raise failure("inside")

    match = rf"extra column 'mine' raised {failure.__name__}"
    with pytest.raises(ValueError, match=match) as info:
        RVR(extra_columns=[("mine", column)]).fit(X, y)
    assert isinstance(info.value.__cause__, failure)  # the user's error, chained
