"""Result files of the benchmark scripts: one ``docs/results/<name>/results.json`` each.

A benchmark script ends with::

    from _results import write_results  # benchmarks/ is the script's own folder

    write_results(
        "sequential-suite",
        command="python benchmarks/bench_sequential.py --repeats 3 --timeout 300",
        rows=[{"problem": "sinc-100", "package": "bayes_rvm", "fit s": 0.005}, ...],
        columns=["problem", "package", "fit s"],
        notes="What the columns mean (Markdown).",
        title="The default evidence fit against fastrvm",
    )

``scripts/benchmark_page.py`` turns every result file into a table of the benchmark page
(``docs/benchmarks.md``). The schema and the machine line are those of the reproduction
(:func:`bayes_rvm.reproduce.write_results`, :func:`bayes_rvm.reproduce.machine`), so the
paper's tables and the benchmarks are written the same way.
"""

from __future__ import annotations

from pathlib import Path

from bayes_rvm.reproduce import machine
from bayes_rvm.reproduce import write_results as _write

__all__ = ["RESULTS", "machine", "write_results"]

#: Where the committed result files live.
RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"


def write_results(
    name: str,
    command: str,
    rows: list[dict],
    columns: list[str],
    notes: str = "",
    *,
    title: str | None = None,
    machine_line: str | None = None,
) -> Path:
    """Write ``docs/results/<name>/results.json``; returns its path.

    ``command`` is the exact command line that produced ``rows`` (dicts holding at least
    ``columns``); the machine line is measured now unless ``machine_line`` is given.
    """
    return _write(
        RESULTS / name,
        name=name,
        title=title or name,
        command=command,
        rows=rows,
        columns=columns,
        notes=notes,
        machine_line=machine_line,
    )
