"""One-vs-rest in parallel (``n_jobs``) and its progress (``verbose``)."""

from __future__ import annotations

import numpy as np
import pytest

from bayes_rvm import RVC


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


def test_verbose_one_vs_rest_names_each_class(three_classes, capsys):
    X, y = three_classes
    RVC(verbose=True).fit(X, y)
    out = capsys.readouterr().out
    for k, label in enumerate("abc", start=1):
        assert f"fitting class {k} of 3 ('{label}' against the rest)" in out


@pytest.mark.parametrize(("n_jobs", "error"), [(0, ValueError), (1.5, TypeError)])
def test_invalid_n_jobs_is_named(three_classes, n_jobs, error):
    X, y = three_classes
    with pytest.raises(error, match="n_jobs"):
        RVC(n_jobs=n_jobs).fit(X, y)
