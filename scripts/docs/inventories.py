"""Write the intersphinx inventories of ``docs/_intersphinx/`` without a network.

    python scripts/docs/inventories.py          # write docs/_intersphinx/*.inv
    python scripts/docs/inventories.py --list   # print what would be written

The site is built offline, so the inventories that link our pages to the Python, NumPy,
SciPy, scikit-learn, PyMC, ArviZ, xarray and Dask documentation are stored in the
repository. This script writes them for the objects our pages and docstrings name: every
cross-reference role (``:class:`pymc.Model``` in a docstring, ``{func}`arviz.loo``` in a
page) whose target belongs to one of those libraries, plus the names in ``ALWAYS``. Each
object is imported from the installed package first (a name that does not exist stops the
script), and gets its address on its project's site. Run it again after a page or
docstring starts naming a new object; the docs build (nitpicky) fails on one it lacks.
"""

from __future__ import annotations

import argparse
import builtins
import importlib
import inspect
import re
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "_intersphinx"
#: where the cross-references are written
SOURCES = ("docs/**/*.md", "bayes_rvm/**/*.py", "docs/gallery/*.py", "notebooks/*.ipynb")
ROLE = re.compile(
    r"(?::|\{)(?:py:)?(class|func|meth|attr|data|mod|obj|exc)(?::|\})`~?(?:[^`<]*<)?"
    r"([A-Za-z_][\w.]*)>?`"
)
#: objects the pages discuss, so that a page may link them before a docstring does
ALWAYS = (
    "numpy.ndarray",
    "numpy.random.Generator",
    "numpy.random.default_rng",
    "scipy.linalg.cho_solve",
    "scipy.linalg.solve_triangular",
    "sklearn.base.clone",
    "sklearn.linear_model.ARDRegression",
    "sklearn.model_selection.GridSearchCV",
    "sklearn.model_selection.KFold",
    "sklearn.pipeline.Pipeline",
    "sklearn.svm.SVR",
    "pymc.Model",
    "pymc.sample",
    "pymc.set_data",
    "pymc.sample_posterior_predictive",
    "pymc.model_to_graphviz",
    "arviz.loo",
    "arviz.compare",
    "arviz.summary",
    "xarray.DataTree",
    "xarray.Dataset",
    "dask.array.Array",
    "distributed.Client",
)


@dataclass(frozen=True)
class Site:
    """A project's documentation site: its inventory's name in ``docs/conf.py`` and the
    address of an object's page, relative to the site's root."""

    key: str
    url: str

    def uri(self, name: str, obj: object) -> str:
        if self.key == "python":
            if isinstance(obj, type) and issubclass(obj, BaseException):
                return f"library/exceptions.html#{name}"
            if isinstance(obj, type):
                return f"library/stdtypes.html#{name}"
            if getattr(builtins, name, None) is obj:
                return f"library/functions.html#{name}"
            return f"library/{name.split('.')[0]}.html#{name}"
        if self.key == "numpy" and name.startswith("numpy.random."):
            if name == "numpy.random.default_rng" or name == "numpy.random.Generator":
                return f"reference/random/generator.html#{name}"
            return f"reference/random/generated/{name}.html#{name}"
        if self.key == "pymc" and _is_distribution(obj):
            return f"api/distributions/generated/{name}.html#{name}"
        if self.key.startswith("arviz"):
            real = f"{obj.__module__.split('.')[0]}.{name.rsplit('.', 1)[1]}"
            return f"api/generated/{real}.html#{real}"
        if self.key == "distributed":
            return f"api.html#{name}"
        if self.key == "dask":
            return f"generated/{name}.html#{name}"
        prefix = {
            "numpy": "reference/generated/",
            "scipy": "reference/generated/",
            "sklearn": "modules/generated/",
            "pymc": "api/generated/",
            "xarray": "generated/",
        }[self.key]
        return f"{prefix}{name}.html#{name}"


SITES = {
    "python": Site("python", "https://docs.python.org/3/"),
    "numpy": Site("numpy", "https://numpy.org/doc/stable/"),
    "scipy": Site("scipy", "https://docs.scipy.org/doc/scipy/"),
    "sklearn": Site("sklearn", "https://scikit-learn.org/stable/"),
    "pymc": Site("pymc", "https://www.pymc.io/projects/docs/en/stable/"),
    "arviz_base": Site("arviz_base", "https://python.arviz.org/projects/base/en/stable/"),
    "arviz_stats": Site("arviz_stats", "https://python.arviz.org/projects/stats/en/stable/"),
    "arviz_plots": Site("arviz_plots", "https://python.arviz.org/projects/plots/en/stable/"),
    "xarray": Site("xarray", "https://docs.xarray.dev/en/stable/"),
    "dask": Site("dask", "https://docs.dask.org/en/stable/"),
    "distributed": Site("distributed", "https://distributed.dask.org/en/stable/"),
}
STDLIB = ("builtins", "collections", "functools", "itertools", "pickle", "typing", "warnings")


def _is_distribution(obj: object) -> bool:
    import pymc

    return isinstance(obj, type) and issubclass(obj, pymc.Distribution)


def referenced() -> set[str]:
    """The targets of the cross-reference roles in our pages, docstrings and notebooks."""
    names = set(ALWAYS)
    for pattern in SOURCES:
        for path in ROOT.glob(pattern):
            text = path.read_text(encoding="utf-8")
            names.update(match[2] for match in ROLE.finditer(text))
    return {name for name in names if _ours(name)}


def _ours(name: str) -> bool:
    """Whether ``name`` belongs to one of the libraries of ``SITES``."""
    top = name.split(".")[0]
    return top in SITES or top in STDLIB or top == "arviz" or hasattr(builtins, name)


def resolve(name: str) -> tuple[object, Site]:
    """Import ``name`` (a module, or an attribute path inside one) and find its site."""
    parts = name.split(".")
    if len(parts) == 1:
        obj = getattr(builtins, name)
        return obj, SITES["python"]
    for cut in range(len(parts), 0, -1):  # the longest importable prefix
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)  # AttributeError: the name does not exist
        break
    else:
        raise ImportError(f"cannot import any module of {name}")
    if parts[0] == "arviz":  # ArviZ 1 re-exports arviz_base, arviz_stats and arviz_plots
        home = getattr(obj, "__module__", "arviz_base").split(".")[0]
        return obj, SITES[home if home in SITES else "arviz_base"]
    return obj, SITES["python" if parts[0] in STDLIB else parts[0]]


def role(obj: object, name: str) -> str:
    if inspect.ismodule(obj):
        return "py:module"
    if isinstance(obj, type):
        return "py:exception" if issubclass(obj, BaseException) else "py:class"
    if callable(obj):
        owner = name.rsplit(".", 2)
        return "py:method" if len(owner) == 3 and owner[1][:1].isupper() else "py:function"
    return "py:data"


def inventory(project: str, entries: list[tuple[str, str, str]]) -> bytes:
    """A Sphinx inventory (version 2): a text header, then zlib-compressed lines of
    ``name domain:role priority uri display-name``."""
    header = (
        "# Sphinx inventory version 2\n"
        f"# Project: {project}\n"
        "# Version: \n"
        "# The remainder of this file is compressed using zlib.\n"
    ).encode()
    body = "".join(f"{name} {kind} 1 {uri} -\n" for name, kind, uri in sorted(entries))
    return header + zlib.compress(body.encode())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the entries, write nothing")
    args = parser.parse_args(argv)
    per_site: dict[str, list[tuple[str, str, str]]] = {key: [] for key in SITES}
    for name in sorted(referenced()):
        obj, site = resolve(name)
        per_site[site.key].append((name, role(obj, name), site.uri(name, obj)))
    for key, entries in per_site.items():
        if args.list:
            for name, kind, uri in entries:
                print(f"{key:12} {kind:14} {name:45} {SITES[key].url}{uri}")
            continue
        OUT.mkdir(parents=True, exist_ok=True)
        (OUT / f"{key}.inv").write_bytes(inventory(key, entries))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
