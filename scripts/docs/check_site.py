"""Check a built documentation site: every internal link and anchor resolves, nothing is
loaded from another host.

    python scripts/docs/check_site.py SITE_DIR

``mkdocs build --strict`` validates the links it sees in Markdown pages. This script reads
the HTML that was actually built (notebook pages and API pages included) and fails with
one line per problem when

- an ``href`` or ``src`` that stays on the site names a file that is not there;
- a ``#fragment`` names no ``id`` (or ``name``) on the page it points to;
- a page loads a script, style sheet, font, image or frame from another host (the site
  must read and render offline: MathJax and the fonts are served with it), or a page or
  the site's own style sheets and scripts name a CDN host.

Links to other hosts in the text (``<a href="https://...">``) are allowed: a reader may
follow them. Vendored packages (``javascripts/mathjax/``) are not scanned for host names:
MathJax's bundle names a CDN only for Internet Explorer fallbacks that are never loaded.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

#: hosts that serve libraries; none may be named by a page or the site's own assets
CDN_HOSTS = re.compile(
    r"cdn\.jsdelivr\.net|cdnjs\.cloudflare\.com|unpkg\.com|fonts\.googleapis\.com"
    r"|fonts\.gstatic\.com|polyfill\.io|code\.jquery\.com|ajax\.googleapis\.com"
    r"|stackpath\.bootstrapcdn\.com|cdn\.plot\.ly|cdn\.bokeh\.org|requirejs\.org"
)
#: attributes that make the browser fetch something as the page loads
LOADED = {
    ("script", "src"),
    ("link", "href"),
    ("img", "src"),
    ("iframe", "src"),
    ("source", "src"),
    ("video", "src"),
    ("audio", "src"),
    ("embed", "src"),
}
VENDORED = ("javascripts/mathjax/",)


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[tuple[str, str, str]] = []  # (tag, attribute, url)

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)
            elif name in ("href", "src"):
                rel = dict(attrs).get("rel") or ""
                if tag == "link" and ("canonical" in rel or "alternate" in rel):
                    continue
                self.links.append((tag, name, value))


def _target(site: Path, page: Path, path: str) -> Path | None:
    """The file a site-relative or page-relative path names, or None."""
    base = site if path.startswith("/") else page.parent
    target = (base / unquote(path).lstrip("/")).resolve()
    if target.is_dir():
        target = target / "index.html"
    return target if target.is_file() else None


def check(site: Path) -> list[str]:
    site = site.resolve()
    pages = {p.resolve(): _Page() for p in site.rglob("*.html")}
    for path, parser in pages.items():
        parser.feed(path.read_text(encoding="utf-8"))
    problems = []
    for page, parser in sorted(pages.items()):
        name = page.relative_to(site).as_posix()
        text = page.read_text(encoding="utf-8")
        for host in sorted(set(CDN_HOSTS.findall(text))):
            problems.append(f"{name}: names the CDN host {host}")
        for tag, attribute, url in parser.links:
            parts = urlsplit(url)
            if parts.scheme in ("mailto", "data", "javascript", "tel"):
                continue
            if parts.scheme or parts.netloc:
                if (tag, attribute) in LOADED:
                    problems.append(f"{name}: <{tag} {attribute}> loads {url} from another host")
                continue
            target = _target(site, page, parts.path) if parts.path else page
            if target is None:
                problems.append(f"{name}: broken link {url}")
                continue
            if parts.fragment and target in pages:
                fragment = unquote(parts.fragment)
                if fragment not in pages[target].ids:
                    where = target.relative_to(site).as_posix()
                    problems.append(f"{name}: no anchor #{fragment} in {where} (link {url})")
    for asset in sorted([*site.rglob("*.css"), *site.rglob("*.js")]):
        name = asset.relative_to(site).as_posix()
        if name.startswith(VENDORED) or "/assets/" in f"/{name}":
            continue
        for host in sorted(set(CDN_HOSTS.findall(asset.read_text(encoding="utf-8")))):
            problems.append(f"{name}: names the CDN host {host}")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: python scripts/docs/check_site.py SITE_DIR", file=sys.stderr)
        return 2
    problems = check(Path(argv[0]))
    if not any(Path(argv[0]).rglob("*.html")):
        problems.append(f"no HTML page in {argv[0]}: the site was not built")
    for line in problems:
        print(line, file=sys.stderr)
    n_pages = sum(1 for _ in Path(argv[0]).rglob("*.html"))
    if problems:
        print(f"site check: {len(problems)} problems in {n_pages} pages", file=sys.stderr)
        return 1
    print(f"site check: {n_pages} pages, every internal link and anchor resolves, no CDN")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
