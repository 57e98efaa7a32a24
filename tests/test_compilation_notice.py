"""The first fit of a new installation says that it is compiling, once, and a fit that
loads the compiled code from numba's cache says nothing."""

import os
import subprocess
import sys

from bayes_rvm._progress import COMPILING

# A weighted design's row pass is compiled code of the package that compiles in about a
# second: the same mechanism as the solver's step loop, at a fraction of its cost.
CODE = (
    "import numpy as np; from bayes_rvm._blocks import weighted_sq_norms; "
    "weighted_sq_norms(np.ones((3, 2)), np.ones(3))"
)


def _run(cache_dir) -> str:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    done = subprocess.run(
        [sys.executable, "-c", CODE], env=env, capture_output=True, text=True, check=True
    )
    return done.stderr


def test_compiling_is_said_once_and_a_cache_load_is_silent(tmp_path):
    first = _run(tmp_path)
    assert first.count(COMPILING) == 1, first
    second = _run(tmp_path)
    assert COMPILING not in second, second


def test_other_compiled_code_compiles_as_before():
    """Numba code of other packages (PyTensor's numba backend builds its functions with
    ``exec``, whose ``__module__`` is ``None``) compiles and runs with the notice
    registered, and says nothing."""
    code = (
        "import numba, numpy as np; from bayes_rvm._progress import announce_compilation; "
        "announce_compilation(); namespace = {'__name__': None}; "
        "exec('def f(x):\\n    return x + 1', namespace); "
        "print(numba.njit(namespace['f'])(np.ones(2)).sum())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "4.0"
    assert COMPILING not in done.stderr
