"""The documentation tooling of scripts/docs: the check of a built site, and the griffe
extension that turns Sphinx roles into cross-references."""

from __future__ import annotations

from pathlib import Path

import pytest


def _page(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<html><head></head><body>{body}</body></html>", encoding="utf-8")


@pytest.fixture
def site(tmp_path):
    _page(tmp_path / "index.html", '<h1 id="top">Home</h1><a href="guide/#fit">guide</a>')
    _page(tmp_path / "guide" / "index.html", '<h2 id="fit">Fit</h2><a href="../#top">home</a>')
    (tmp_path / "style.css").write_text("body { color: black; }", encoding="utf-8")
    return tmp_path


def test_a_sound_site_passes(site, load_script):
    assert load_script("scripts/docs/check_site.py").check(site) == []


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('<a href="../missing/">x</a>', "broken link ../missing/"),
        ('<a href="../guide/#nope">x</a>', "no anchor #nope in guide/index.html"),
        (
            '<script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-svg.js"></script>',
            "loads https://cdn.jsdelivr.net",
        ),
        (
            '<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">',
            "names the CDN host fonts.googleapis.com",
        ),
    ],
)
def test_each_problem_is_reported(site, body, expected, load_script):
    _page(site / "extra" / "index.html", body)
    problems = load_script("scripts/docs/check_site.py").check(site)
    assert any(expected in problem for problem in problems), problems


def test_links_to_other_hosts_in_the_text_are_allowed(site, load_script):
    _page(site / "extra" / "index.html", '<a href="https://arxiv.org/abs/1903.08008">paper</a>')
    assert load_script("scripts/docs/check_site.py").check(site) == []


def test_sphinx_roles_become_cross_references(tmp_path, load_script):
    griffe = pytest.importorskip("griffe")
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        '"""See :func:`fit`, :class:`~pkg.core.Model`, :data:`core.LIMIT`, '
        ':func:`numpy.dot` and :meth:`Model.run`."""\n'
        "from pkg.core import Model, fit\n",
        encoding="utf-8",
    )
    (package / "core.py").write_text(
        "class _Base:\n    pass\n\n\nclass Model(_Base):\n    def run(self):\n        pass\n\n\n"
        "def fit():\n    pass\n\n\nLIMIT = 3\n",
        encoding="utf-8",
    )
    extension = load_script("scripts/docs/griffe_bayes_rvm.py").SphinxRoles()
    pkg = griffe.load("pkg", search_paths=[tmp_path], extensions=griffe.load_extensions(extension))
    text = pkg.docstring.value
    assert "[`fit`][pkg.core.fit]" in text
    assert "[`Model`][pkg.core.Model]" in text
    assert "[`Model.run`][pkg.core.Model.run]" in text
    # a constant may not be on a page: an optional reference, code when unresolved
    optional = '<autoref identifier="pkg.core.LIMIT" optional><code>core.LIMIT</code></autoref>'
    assert optional in text
    assert "`numpy.dot`" in text and ":func:" not in text
    assert [str(base) for base in pkg["core.Model"].bases] == []
