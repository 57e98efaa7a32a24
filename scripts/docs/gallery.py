"""The example gallery: short single-topic scripts in ``docs/gallery/*.py``, each drawing one
figure.

    python scripts/docs/gallery.py [NAME ...]          # run, write docs/gallery/images/NAME.png
    python scripts/docs/gallery.py --check [NAME ...]  # run them in small mode, write nothing

An example's module docstring gives its title (first line) and description (the rest).
The site's pages are made from the scripts when the site is built (``scripts/docs/hooks.py``),
so the code shown is always the code that drew the committed picture; the build fails when
an example has no picture. CI runs ``--check`` (``BAYES_RVM_SMALL=1``: fewer draws) so that
every example keeps working.
"""

from __future__ import annotations

import argparse
import ast
import os
import runpy
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GALLERY = ROOT / "docs" / "gallery"
IMAGES = GALLERY / "images"
DPI = 160  # twice the 80 dpi at which the figures are drawn on the page
#: the order of the gallery; an example not listed comes after these, by name
ORDER = (
    "sinc_error_bars",
    "classification_boundary",
    "relevance_vectors_2d",
    "alpha_likelihood",
    "solver_paths",
    "evidence_mcmc_vi",
    "forest_log_alpha",
)


@dataclass(frozen=True)
class Example:
    name: str
    path: Path
    title: str
    description: str

    @property
    def image(self) -> Path:
        return IMAGES / f"{self.name}.png"

    @property
    def code(self) -> str:
        """The script without its docstring (which the page shows as text)."""
        source = self.path.read_text(encoding="utf-8")
        body = ast.parse(source).body
        first = body[0]
        lines = source.splitlines(keepends=True)
        return "".join(lines[first.end_lineno :]).strip() + "\n"


def examples() -> list[Example]:
    found = []

    def rank(path: Path):
        return (ORDER.index(path.stem), "") if path.stem in ORDER else (len(ORDER), path.stem)

    for path in sorted(GALLERY.glob("*.py"), key=rank):
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        if not docstring:
            raise ValueError(f"{path}: an example needs a docstring (title, then description)")
        title, _, description = docstring.partition("\n")
        found.append(Example(path.stem, path, title.strip(), description.strip()))
    return found


def run(example: Example, image: Path) -> float:
    """Run one example and save its figure; returns the seconds it took."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.close("all")
    start = time.perf_counter()
    runpy.run_path(str(example.path), run_name="__main__")
    if not plt.get_fignums():
        raise RuntimeError(f"{example.path} drew no figure")
    plt.gcf().savefig(image, dpi=DPI)
    plt.close("all")
    return time.perf_counter() - start


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="examples to run (default: all)")
    parser.add_argument("--check", action="store_true", help="small mode, write nothing")
    args = parser.parse_args(argv)
    chosen = [e for e in examples() if not args.names or e.name in args.names]
    unknown = set(args.names) - {e.name for e in chosen}
    if unknown:
        parser.error(f"unknown examples {sorted(unknown)}; have {[e.name for e in examples()]}")
    if args.check:
        os.environ["BAYES_RVM_SMALL"] = "1"
        out = Path(tempfile.mkdtemp())
    else:
        out = IMAGES
        out.mkdir(parents=True, exist_ok=True)
    for example in chosen:
        seconds = run(example, out / f"{example.name}.png")
        print(f"{example.name}: {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
