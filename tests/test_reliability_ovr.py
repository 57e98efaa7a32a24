"""One-vs-rest in parallel (``n_jobs``) and its progress (``verbose``); RVR's ``n_jobs``,
the threads of its passes."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

from bayes_rvm import RVC, RVR
from bayes_rvm._basis_views import HeldKernelBasis, ScaledBasis
from bayes_rvm._progress import ProgressLine
from bayes_rvm.basis import KernelBasis
from bayes_rvm.kernels import RBF
from bayes_rvm.solvers import Prior
from bayes_rvm.solvers._fit import column_scales


@pytest.fixture(scope="module")
def three_classes():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    return X, np.array(["a", "b", "c"])[np.arange(60) % 3]


def test_parallel_one_vs_rest_is_the_serial_fit(three_classes):
    X, y = three_classes
    serial = RVC().fit(X, y)
    parallel = RVC(n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(parallel.predict_proba(X), serial.predict_proba(X))
    np.testing.assert_array_equal(parallel.n_iter_, serial.n_iter_)
    assert all(e.n_jobs is None for e in parallel.estimators_)


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_verbose_one_vs_rest_reports_each_class(three_classes, capsys, n_jobs):
    X, y = three_classes
    model = RVC(verbose=True, n_jobs=n_jobs).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    # one line per classifier, written by this process as each finishes (also when the
    # fits run in joblib's workers), and no solver output at verbose=1
    assert len(lines) == 3
    for k, (label, line, estimator) in enumerate(
        zip("abc", lines, model.estimators_, strict=True), start=1
    ):
        assert line.startswith(f"[RVC] class '{label}' ({k} of 3) against the rest: ")
        assert f" {estimator.n_relevance_} relevance vectors in " in line
        assert line.endswith(" s elapsed")


def test_verbose_two_adds_the_solvers_progress(three_classes, capsys):
    X, y = three_classes
    RVC(verbose=2, solver="mackay").fit(X, y)
    out = capsys.readouterr().out
    assert out.count("[mackay] iter 1:") == 3
    assert out.count("[RVC] class ") == 3


def test_not_verbose_prints_nothing(three_classes, capsys):
    X, y = three_classes
    RVC(n_jobs=2).fit(X, y)
    RVC().fit(X, y)
    assert capsys.readouterr() == ("", "")


def test_progress_bar_rewrites_its_line():
    """On a terminal or in a notebook the bar is redrawn in place: each finished step's
    line overwrites the bar (padded over it), and the bar is drawn again below."""
    stream = io.StringIO()
    progress = ProgressLine(2, "RVC", stream=stream, bar=True)
    progress.step("class 'a' (1 of 2)")
    progress.step("class 'b' (2 of 2)")
    progress.close()
    screen = [
        re.sub(r"[0-9.]+ s elapsed", "T s elapsed", line) for line in _render(stream.getvalue())
    ]
    assert [line.rstrip() for line in screen] == [
        "[RVC] class 'a' (1 of 2); T s elapsed",
        "[RVC] class 'b' (2 of 2); T s elapsed",
        "",
    ]
    assert "[##########..........] 1/2" in stream.getvalue()


def _render(text: str) -> list[str]:
    """What a terminal shows for ``text``: a carriage return moves to the start of the
    line, and what follows overwrites it."""
    lines, column = [""], 0
    for char in text:
        if char == "\n":
            lines.append("")
            column = 0
        elif char == "\r":
            column = 0
        else:
            line = lines[-1]
            lines[-1] = line[:column] + char + line[column + 1 :]
            column += 1
    return lines


@pytest.mark.parametrize(("n_jobs", "error"), [(0, ValueError), (1.5, TypeError)])
def test_invalid_n_jobs_is_named(three_classes, n_jobs, error):
    X, y = three_classes
    with pytest.raises(error, match="n_jobs"):
        RVC(n_jobs=n_jobs).fit(X, y)


@pytest.mark.parametrize(("n_jobs", "lazy"), [(None, False), (2, False), (None, True), (2, True)])
def test_one_vs_rest_evaluates_the_kernel_once_and_fits_each_class_as_alone(
    n_jobs, lazy, counting_rbf, monkeypatch
):
    """The classifiers share one evaluation of the scaled kernel matrix and of the column
    norms (HeldKernelBasis), and each is the binary fit of its class against the rest,
    to the last bit. ``lazy``: the basis is over BLOCK_BYTES (not evaluated as a matrix
    by the fit), so the fits read ``(Phi / scales)^T`` written from its symmetric kernel
    blocks (50 x 50), made once for all of them."""
    from bayes_rvm import basis as basis_module

    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 2))
    y = np.digitize(X[:, 0] + 0.3 * X[:, 1], [-0.6, 0.0, 0.6])  # four classes
    if lazy:
        monkeypatch.setattr(basis_module, "BLOCK_BYTES", 8 * 50 * 50)
        assert isinstance(KernelBasis(X, RBF(0.5)).evaluated(), KernelBasis)
        held = []
        transposed = KernelBasis.scaled_transposed
        monkeypatch.setattr(
            KernelBasis,
            "scaled_transposed",
            lambda self, scales: held.append(1) or transposed(self, scales),
        )
    model = RVC(kernel=counting_rbf(0.5), n_jobs=n_jobs).fit(X, y)
    if lazy:
        assert len(held) == 1  # one matrix, of the one-vs-rest fit
    if n_jobs is None:
        # the norms' pass (the symmetric blocks: N^2 values here) and the matrix (N^2),
        # where every classifier evaluating its own took 8 N^2; the kept columns and
        # the rows of X at the fits' ends are the rest
        assert counting_rbf.evaluated < 3 * X.shape[0] ** 2
    for k, estimator in enumerate(model.estimators_):
        alone = RVC(kernel=counting_rbf(0.5)).fit(X, (y == k).astype(int))
        assert estimator.log_evidence_ == alone.log_evidence_
        np.testing.assert_array_equal(estimator.relevance_indices_, alone.relevance_indices_)
        np.testing.assert_array_equal(estimator.result_.mu, alone.result_.mu)


def test_held_basis_holds_the_lazy_basis_values(rng):
    X = rng.normal(size=(40, 3))
    lazy = KernelBasis(X, RBF(0.7), extra=[("x0", lambda X: X[:, 0])])
    sq_norms = lazy.sq_norms()
    scales = column_scales(lazy, sq_norms, Prior())
    held = HeldKernelBasis(lazy, sq_norms, scales)
    np.testing.assert_array_equal(held.scaled_array(scales), ScaledBasis(lazy, scales).toarray())
    np.testing.assert_array_equal(ScaledBasis(held, scales).toarray(), held.scaled_array(scales))
    np.testing.assert_array_equal(held.sq_norms(), sq_norms)
    other = held.scaled_array(2 * scales)  # other scales: evaluated anew
    assert other.flags.writeable
    np.testing.assert_array_equal(other, ScaledBasis(lazy, 2 * scales).toarray())
    np.testing.assert_array_equal(
        ScaledBasis(held, 2 * scales).toarray(), ScaledBasis(lazy, 2 * scales).toarray()
    )
    with pytest.raises(ValueError, match="read-only"):
        held.scaled_array(scales)[0, 0] = 1.0
    # a fit on it keeps only what predictions need
    fitted = held.restrict(np.array([0, 5, 40]))
    np.testing.assert_array_equal(fitted.design(X), lazy.restrict([0, 5, 40]).design(X))
    assert not any(isinstance(v, np.ndarray) and v.size >= 40 * 40 for v in vars(fitted).values())


def test_held_basis_over_the_block_size_holds_what_the_fits_read(rng, monkeypatch):
    """A basis the fits would not evaluate as a matrix is held as ``(Phi / scales)^T``,
    the array a fit of it alone writes from the symmetric kernel blocks (the same bits),
    read-only and the same array for every fit; as a matrix in memory and as an array
    it is that matrix, the scaled columns to rounding."""
    from bayes_rvm import basis as basis_module

    monkeypatch.setattr(basis_module, "BLOCK_BYTES", 8 * 20 * 20)
    X = rng.normal(size=(50, 2))
    lazy = KernelBasis(X, RBF(0.7))
    sq_norms = lazy.sq_norms()
    scales = column_scales(lazy, sq_norms, Prior())
    held = HeldKernelBasis(lazy, sq_norms, scales)
    transposed = ScaledBasis(held, scales).transposed()
    assert transposed is held.scaled_transposed(scales)
    np.testing.assert_array_equal(transposed, ScaledBasis(lazy, scales).transposed())
    with pytest.raises(ValueError, match="read-only"):
        transposed[0, 0] = 1.0
    expected = ScaledBasis(lazy, scales).toarray()
    np.testing.assert_allclose(held.scaled_array(scales), expected, rtol=1e-14)
    in_memory = ScaledBasis(held, scales).in_memory()
    np.testing.assert_allclose(in_memory.toarray(), expected, rtol=1e-14)


def test_rvr_n_jobs_threads_its_passes():
    """RVR's ``n_jobs`` goes to its kernel basis (threads of each pass); RVC's does not
    (it fits the one-vs-rest classifiers in parallel)."""
    X = np.random.default_rng(1).normal(size=(30, 2))
    assert RVR(n_jobs=2)._build_basis(X).n_jobs == 2
    assert RVR()._build_basis(X).n_jobs is None
    assert RVC(n_jobs=2)._build_basis(X).n_jobs is None
    with pytest.raises(ValueError, match="n_jobs"):
        RVR(n_jobs=0).fit(X, X[:, 0])
