"""Generate ``docs/benchmarks.md`` from the committed result files.

Every ``docs/results/<name>/results.json`` (written by ``bayes-rvm reproduce`` or by a
benchmark script through ``benchmarks/_results.py``) becomes one section: its title, the
exact command, the machine it ran on, its table and its notes. The page is never edited by
hand::

    python scripts/benchmark_page.py           # rewrite docs/benchmarks.md
    python scripts/benchmark_page.py --check   # exit 1 if the page is not the generated one
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"

#: Sections in page order; result files not named here follow in alphabetical order.
ORDER = [
    "regression-20",
    "classification",
    "sequential-suite",
    "sequential-memory",
    "scale-working-set",
    "scale-reduced",
    "bench-classification",
    "sampling",
]

INTRO = """\
# Benchmarks

What was measured, with which command, on which machine: one table per benchmark, the
latest run of each. Times come from a 2-core machine shared with other jobs, with
single-threaded BLAS unless a table says otherwise; compare ratios within a table, not
absolute times across tables.

Every table is generated from a committed result file, `docs/results/<name>/results.json`,
by `python scripts/benchmark_page.py`. To measure again, run the table's command from the
repository root: the reproduction and the benchmark commands (with `--write`) write the
result file themselves (`write_results` from `benchmarks/_results.py`).
How good the predictive error bars are is measured in the
[predictive guide](guide/predictive.md).
"""


def _cell(value) -> str:
    """A table cell: numbers as measured (up to 6 significant digits), ``-`` for none."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        value = f"{value:.6g}"
    return str(value).replace("|", "\\|").replace("*", "\\*")


def section(document: dict) -> str:
    """The Markdown of one result file."""
    columns = document["columns"]
    lines = [
        f"## {document['title']}",
        "",
        "```console",
        document["command"],
        "```",
        "",
        f"Machine: {document['machine']}.",
        "",
        "| " + " | ".join(_cell(c) for c in columns) + " |",
        "|" + "---|" * len(columns),
    ]
    lines += ["| " + " | ".join(_cell(row[c]) for c in columns) + " |" for row in document["rows"]]
    if document.get("notes"):
        lines += ["", document["notes"]]
    return "\n".join(lines) + "\n"


def documents(results: Path = RESULTS) -> list[dict]:
    """The result files, in page order."""
    found = {path.parent.name: path for path in sorted(results.glob("*/results.json"))}
    names = [n for n in ORDER if n in found] + sorted(set(found) - set(ORDER))
    return [json.loads(found[name].read_text()) for name in names]


def page(results: Path = RESULTS) -> str:
    """The whole page."""
    return "\n".join([INTRO, *(section(d) for d in documents(results))])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="fail if the committed page is not generated"
    )
    args = parser.parse_args(argv)
    text = page()
    if args.check:
        if PAGE.read_text() != text:
            print(f"{PAGE} differs from its generated text: run {__file__}", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    print(f"wrote {PAGE} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
