"""Shared fixtures. The PyTensor compile cache lives outside the clone (see STACK.md)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

_cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "bayes_rvm" / "pytensor"
if "base_compiledir" not in os.environ.get("PYTENSOR_FLAGS", ""):
    flags = os.environ.get("PYTENSOR_FLAGS", "")
    os.environ["PYTENSOR_FLAGS"] = f"base_compiledir={_cache}" + (f",{flags}" if flags else "")
os.environ.setdefault("MPLBACKEND", "Agg")
# Single-threaded BLAS: the machines have 2 cores, and results must not depend on threading.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from bayes_rvm.kernels import RBF  # noqa: E402

# A plugin (hypothesis) imports numpy before this file, so its BLAS has read the
# variables above already: limit the running library too.
threadpool_limits(1)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def load_script():
    """Import a script of the repository that is not in the package (``benchmarks/``,
    ``scripts/docs/``) from its path relative to the root, as the module of its file's
    name (registered in ``sys.modules``, so that dataclasses and pickling find it)."""

    def load(relative: str):
        path = ROOT / relative
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture
def rng():
    return np.random.default_rng(20011)


class CountingRBF(RBF):
    """An RBF kernel that counts the kernel values it evaluates (a class attribute:
    scikit-learn's clone copies the instance)."""

    evaluated = 0

    def __call__(self, X, Y=None):
        values = super().__call__(X, Y)
        CountingRBF.evaluated += values.size
        return values


@pytest.fixture
def counting_rbf():
    """:class:`CountingRBF`, its count set to 0."""
    CountingRBF.evaluated = 0
    return CountingRBF


@pytest.fixture(scope="session")
def sinc_data():
    """Noisy sinc as in Tipping (2001) Sec. 4.1: 100 points on [-10, 10], uniform noise 0.2."""
    x = np.linspace(-10, 10, 100)[:, None]
    f = np.sinc(x[:, 0] / np.pi)
    t = f + np.random.default_rng(1).uniform(-0.2, 0.2, 100)
    return x, t, f
