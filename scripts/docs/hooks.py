"""MkDocs hooks of the documentation site (registered under ``hooks:`` in mkdocs.yml).

- MathJax is served with the site: the files of the npm package ``mathjax`` (installed by
  ``bash scripts/run setup`` into ``scripts/docs/node_modules``) are added to the site
  under ``javascripts/mathjax/``, so that formulas render without a network connection.
- mkdocs-jupyter appends its own MathJax loader, which fetches MathJax from a CDN, to every
  page; it is removed here, and ``docs/javascripts/mathjax.js`` typesets the notebooks too.
- The API index (``docs/api/index.md``) must list every name of ``bayes_rvm.__all__``: the
  build fails on a name the table lacks.
- The gallery: a page per example script of ``docs/gallery/`` (its docstring, its picture
  from ``docs/gallery/images/``, its code) and an index of thumbnails, made from the
  scripts at every build (``scripts/docs/gallery.py`` draws the pictures). The build fails
  when an example has no picture.
- Links from a notebook to a Markdown page (``[guide](../guide/full_bayes.md)``, relative to
  the notebook as in the other pages) are rewritten to the page's address, which
  mkdocs-jupyter leaves as they are.
"""

from __future__ import annotations

import posixpath
import re
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gallery

HERE = Path(__file__).resolve().parent
MATHJAX = HERE / "node_modules" / "mathjax" / "es5"
#: what the site needs of the package: the TeX-to-SVG bundle (fonts included), the TeX
#: extensions it loads on demand (boldsymbol among them) and the menu.
MATHJAX_FILES = ("tex-svg.js", "input/tex/extensions", "ui")
SITE_DIR = "javascripts/mathjax"

_JUPYTER_LOADER = re.compile(r"<script data-mkdocs-jupyter-mathjax=.*?</script>\s*", re.DOTALL)
_MD_HREF = re.compile(r'href="(?![a-z]+:|#|/)([^"#]+\.md)(#[^"]*)?"')
_files = None


def _mathjax_sources() -> list[Path]:
    if not (MATHJAX / "tex-svg.js").is_file():
        raise PluginError(
            f"MathJax is not installed: expected {MATHJAX / 'tex-svg.js'}. "
            "Run `bash scripts/run setup` (or `npm ci --prefix scripts/docs`) first."
        )
    sources = []
    for name in MATHJAX_FILES:
        path = MATHJAX / name
        sources.extend(sorted(p for p in path.rglob("*.js")) if path.is_dir() else [path])
    return sources


def on_files(files, config):
    """Add the MathJax files to the site, as if they were in ``docs/javascripts/mathjax``."""
    for source in _mathjax_sources():
        uri = f"{SITE_DIR}/{source.relative_to(MATHJAX).as_posix()}"
        files.append(File.generated(config, uri, abs_src_path=str(source)))
    for uri, text in _gallery_pages():
        files.append(File.generated(config, uri, content=text))
    global _files
    _files = files
    return files


def _gallery_pages() -> list[tuple[str, str]]:
    pages = []
    cards = []
    for example in gallery.examples():
        if not example.image.is_file():
            raise PluginError(
                f"the gallery example {example.path.name} has no picture {example.image}: "
                f"run `python scripts/docs/gallery.py {example.name}`"
            )
        image = f"images/{example.name}.png"
        pages.append(
            (
                f"gallery/{example.name}.md",
                f"# {example.title}\n\n{example.description}\n\n![{example.title}]({image})\n\n"
                f"```python\n{example.code}```\n\n"
                f"[Download the script]({example.name}.py) and run it with `python "
                f"{example.name}.py`, or the whole gallery with "
                "`python scripts/docs/gallery.py`.\n",
            )
        )
        cards.append(
            f'<a href="{example.name}/"><img src="{image}" alt="{example.title}">'
            f"<br>{example.title}</a>"
        )
    index = (
        "# Gallery\n\nShort examples, one topic each. Every picture was drawn by the code on "
        "its page (`python scripts/docs/gallery.py` draws them all again).\n\n"
        '<div class="gallery">\n' + "\n".join(cards) + "\n</div>\n"
    )
    return [("gallery/index.md", index), *pages]


def on_page_markdown(markdown, page, config, files):
    """Fail the build when the API index misses a public name."""
    if page.file.src_uri == "api/index.md":
        import bayes_rvm

        listed = set(re.findall(r"^\| \[`(\w+)`\]", markdown, flags=re.MULTILINE))
        missing = sorted(set(bayes_rvm.__all__) - listed)
        if missing:
            raise PluginError(f"docs/api/index.md does not list {', '.join(missing)}")
    return markdown


def _page_link(match: re.Match, page) -> str:
    src = posixpath.normpath(posixpath.join(posixpath.dirname(page.file.src_uri), match[1]))
    target = _files.get_file_from_path(src) if _files is not None else None
    if target is None:
        return match[0]  # left as it is: the site check reports it as broken
    return f'href="{target.url_relative_to(page.file)}{match[2] or ""}"'


def on_post_page(output, page, config):
    """Drop mkdocs-jupyter's CDN MathJax loader; the site's own loader is on every page."""
    output = _JUPYTER_LOADER.sub("", output)
    if page.file.src_uri.endswith(".ipynb"):
        output = _MD_HREF.sub(lambda match: _page_link(match, page), output)
    return output
