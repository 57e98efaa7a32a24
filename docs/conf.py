"""Sphinx configuration of the bayes_rvm documentation site.

Build (what the docs tier of ``scripts/check`` runs; no network needed)::

    python -m sphinx -W --keep-going -n -b html docs docs/_build/html

- Pages are MyST Markdown; the notebooks (``docs/notebooks``, a link to ``notebooks/``) are
  rendered by MyST-NB from their stored outputs (CI executes them in their own tier).
- The code cells of the pages run during the build; the gallery: every script of
  ``docs/gallery/`` is run by sphinx-gallery, in small mode (``BAYES_RVM_SMALL=1``), and
  its page shows the figures it draws. ``-D nb_execution_mode=off -D plot_gallery=0``
  builds the site without running either (the pages then show their code alone).
- The API pages come from the numpydoc docstrings (autodoc); every name of the ``__all__``
  of ``bayes_rvm`` and of its public modules must be documented (checked below).
- MathJax is served from the site (the npm package installed by ``bash scripts/run setup``
  into ``scripts/docs/node_modules``), and the intersphinx inventories of Python, NumPy,
  SciPy, scikit-learn, PyMC, ArviZ and xarray are read from ``docs/_intersphinx``
  (written by ``python scripts/docs/inventories.py``).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from sphinx.util import logging
from sphinx_gallery.sorting import ExplicitOrder

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
# the gallery's examples run in small mode: fewer draws, the same figures
os.environ["BAYES_RVM_SMALL"] = "1"
os.environ.setdefault("MPLBACKEND", "Agg")
# The kernels that execute the pages keep their own log to critical errors: ipykernel
# logs a warning per kernel about unencrypted local TCP and, at shutdown, a ZMQError from
# its IOPub thread closing first. Errors in cells still fail the build (MyST-NB).
_KERNEL_PROFILE = Path(tempfile.mkdtemp(prefix="bayes-rvm-docs-ipython-"))
(_KERNEL_PROFILE / "profile_default").mkdir()
(_KERNEL_PROFILE / "profile_default" / "ipython_kernel_config.py").write_text(
    'c.IPKernelApp.log_level = "CRITICAL"\n'
)
os.environ["IPYTHONDIR"] = str(_KERNEL_PROFILE)
atexit.register(shutil.rmtree, _KERNEL_PROFILE, True)

import bayes_rvm  # noqa: E402

project = "bayes_rvm"
author = "the bayes_rvm authors"
copyright = "the bayes_rvm authors"
release = version = bayes_rvm.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "sphinx_copybutton",
]

exclude_patterns = [
    "_build",
    "Thumbs.db",
    ".DS_Store",
    "**.ipynb_checkpoints",
    # sphinx-gallery's own outputs beside each example page (the notebook and script are
    # offered for download, not pages of the site)
    "auto_gallery/*.ipynb",
    "auto_gallery/*.py",
    "auto_gallery/*.zip",
    "auto_gallery/*.json",
    "auto_gallery/*.md5",
    "results/*/table.md",  # the benchmark page shows these tables
]

# ---- MyST and MyST-NB
myst_enable_extensions = ["amsmath", "colon_fence", "deflist", "dollarmath", "substitution"]
myst_heading_anchors = 3  # `[text](page.md#a-heading)` links; a missing anchor warns
# The pages run their cells in the build; the notebooks keep their stored outputs (run by
# the notebooks tier of the tests instead). ``-D nb_execution_mode=off`` builds the site
# without running anything. A first fit in a new environment compiles the solver (up to a
# minute on a loaded machine), and the pages fit and sample on every build: cells get ten
# minutes, not MyST-NB's default 30 s.
nb_execution_mode = "force"
nb_execution_excludepatterns = ["notebooks/*.ipynb"]
nb_execution_timeout = 600
nb_merge_streams = True

# ---- the gallery
sphinx_gallery_conf = {
    "examples_dirs": "gallery",
    "gallery_dirs": "auto_gallery",
    "filename_pattern": r"\.py$",  # run every example, whatever its name
    "within_subsection_order": ExplicitOrder(
        [
            "sinc_error_bars.py",
            "classification_boundary.py",
            "relevance_vectors_2d.py",
            "alpha_likelihood.py",
            "solver_paths.py",
            "evidence_mcmc_vi.py",
            "forest_log_alpha.py",
            "*",
        ]
    ),
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "matplotlib_animations": False,
    "image_srcset": [],
    "doc_module": ("bayes_rvm",),
    "backreferences_dir": None,
    "show_memory": False,
    "write_computation_times": False,  # its pages load DataTables from a CDN
}

# ---- API pages
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"  # numpydoc's Parameters sections give the types
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_validation_checks: set[str] = set()
numpydoc_xref_param_type = False

# ---- cross-links to the libraries users read, from inventories shipped in docs/_intersphinx
# (written offline by scripts/docs/inventories.py, which also holds each site's address)
sys.path.insert(0, str(ROOT / "scripts" / "docs"))
from inventories import SITES  # noqa: E402

intersphinx_mapping = {
    key: (site.url, str(DOCS / "_intersphinx" / f"{key}.inv")) for key, site in SITES.items()
}
intersphinx_timeout = 1
# Docstrings may name the package's private modules and helpers (for contributors); those
# have no page, so such a reference is shown as code. Any other unresolved name fails.
nitpick_ignore_regex = [(r"py:.*", r"(.*\.)?_\w+(\..*)?")]

# ---- maths: MathJax 3 from the site itself, never from a CDN
MATHJAX = ROOT / "scripts" / "docs" / "node_modules" / "mathjax" / "es5"
#: what the site needs of the npm package: the TeX-to-SVG bundle, the TeX extensions it
#: loads on demand (boldsymbol among them) and the menu.
MATHJAX_FILES = ("tex-svg.js", "input/tex/extensions", "ui")
mathjax_path = "mathjax/tex-svg.js"
mathjax3_config = {
    "loader": {"load": ["[tex]/boldsymbol"]},
    "tex": {"packages": {"[+]": ["boldsymbol"]}},
    "svg": {"fontCache": "global"},
}

# ---- HTML
html_theme = "pydata_sphinx_theme"
html_title = "bayes_rvm"
html_static_path = ["stylesheets"]
html_css_files = ["extra.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 8,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_sidebars = {"index": [], "getting_started": []}  # pages without a section
html_show_sourcelink = False

logger = logging.getLogger(__name__)


def _public_modules() -> list[str]:
    """``bayes_rvm`` and its public modules: those not starting with an underscore, but the
    command-line entry point and the demonstration script."""
    import pkgutil

    names = ["bayes_rvm"]
    for package in ("bayes_rvm", "bayes_rvm.solvers"):
        path = importlib.import_module(package).__path__
        for info in pkgutil.iter_modules(path):
            if not info.name.startswith("_") and info.name != "demo":
                names.append(f"{package}.{info.name}")
    return names


def _check_api_complete(app, env) -> None:
    """Warn (an error under ``-W``) for a name of a public ``__all__`` the API pages miss."""
    domain = env.get_domain("py")
    documented = set(domain.objects) | set(domain.modules)
    for module in _public_modules():
        for name in getattr(importlib.import_module(module), "__all__", ()):
            obj = getattr(importlib.import_module(module), name)
            # a name re-exported from another module is documented where it is defined
            if f"{module}.{name}" not in documented and not _documented_as(domain, name, obj):
                logger.warning(f"the API reference does not document {module}.{name}")


def _copy_mathjax(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    if not (MATHJAX / "tex-svg.js").is_file():
        logger.warning(
            f"MathJax is not installed: expected {MATHJAX / 'tex-svg.js'}; run "
            "`bash scripts/run setup` (or `npm ci --prefix scripts/docs`) first"
        )
        return
    target = Path(app.outdir) / "_static" / "mathjax"
    for name in MATHJAX_FILES:
        source = MATHJAX / name
        if source.is_dir():
            shutil.copytree(source, target / name, dirs_exist_ok=True)
        else:
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def _public_alias(app, env, node, contnode):
    """Resolve ``bayes_rvm.NAME`` (how users import the names of ``bayes_rvm.__all__``) to
    the page of the module that defines NAME."""
    target = node.get("reftarget", "")
    if node.get("refdomain") != "py" or not target.startswith("bayes_rvm."):
        return None
    name = target.removeprefix("bayes_rvm.")
    if name not in bayes_rvm.__all__:
        return None
    obj = getattr(bayes_rvm, name)
    domain = env.get_domain("py")
    for candidate in _documented_as(domain, name, obj):
        node["reftarget"] = candidate
        found = domain.resolve_xref(
            env, node["refdoc"], app.builder, node["reftype"], candidate, node, contnode
        )
        if found is not None:
            return found
    node["reftarget"] = target
    return None


def _documented_as(domain, name: str, obj: object) -> list[str]:
    """The names under which ``obj`` (called ``name`` in its module) is documented."""
    found = []
    for documented, entry in domain.objects.items():
        module, _, last = documented.rpartition(".")
        if last == name and not entry.aliased and module.startswith("bayes_rvm"):
            with contextlib.suppress(ImportError, AttributeError):
                if getattr(importlib.import_module(module), name) is obj:
                    found.append(documented)
    return found


def _module_references(app, what, name, obj, options, lines) -> None:
    """A module docstring's numpydoc ``References`` section becomes a rubric, as numpydoc
    renders it in a function's or class's docstring (numpydoc leaves module docstrings as
    they are, and a section would make one site-wide label per module)."""
    if what != "module":
        return
    for i in range(len(lines) - 1):
        if lines[i].strip() == "References" and set(lines[i + 1].strip()) == {"-"}:
            lines[i : i + 2] = [".. rubric:: References", ""]
            return


def _internal_name(app, env, node, contnode):
    """A docstring may name a helper or constant of the package that is not public (for
    contributors): it exists but has no page, so it is shown as code. A name that exists
    nowhere in the package stays a broken reference."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    context = [node.get("py:module") or "", node.get("py:class") or ""]
    prefixes = {"", context[0], ".".join(filter(None, context))}
    prefixes |= {name for name in sys.modules if name.startswith("bayes_rvm")}
    for prefix in prefixes:
        if prefix and not prefix.startswith("bayes_rvm"):
            continue
        if _exists(f"{prefix}.{target}" if prefix else target):
            return contnode
    return None


def _exists(dotted: str) -> bool:
    parts = dotted.split(".")
    if parts[0] != "bayes_rvm":
        return False
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            fields = getattr(obj, "__dataclass_fields__", {}) | getattr(
                obj, "__annotations__", {}
            )
            # an instance attribute: a dataclass field, an annotation, or an entry of the
            # class's numpydoc Attributes section
            listed = re.search(rf"^\s*{attr} :", getattr(obj, "__doc__", None) or "", re.M)
            if not hasattr(obj, attr):
                return bool((attr in fields or listed) and attr == parts[-1])
            obj = getattr(obj, attr)
        return True
    return False


def setup(app):
    app.connect("autodoc-process-docstring", _module_references)
    app.connect("missing-reference", _public_alias)
    app.connect("missing-reference", _internal_name)
    app.connect("env-check-consistency", _check_api_complete)
    app.connect("build-finished", _copy_mathjax)
