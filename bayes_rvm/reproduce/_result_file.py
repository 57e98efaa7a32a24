"""The result file ``results.json``: one benchmark's table, its command and the machine it
ran on, as the benchmark page shows it (written by the reproduction and by every script of
``benchmarks/``)."""

from __future__ import annotations

import json
import math
import os
import platform
from pathlib import Path

import numpy as np

import bayes_rvm

#: Version of the result-file schema written by :func:`write_results`.
RESULTS_SCHEMA = 1


def machine() -> str:
    """One line on where a measurement ran: system, CPUs, load, Python, numpy, BLAS.

    The BLAS libraries and their thread counts come from ``threadpoolctl`` (after
    importing numpy, so its BLAS is loaded), sorted; a library shipped inside a package's
    wheel (numpy and scipy each bring their own OpenBLAS) is named with that package.
    """
    from threadpoolctl import threadpool_info

    blas = sorted(
        f"{_shipped_by(info.get('filepath') or '')}"
        f"{info.get('internal_api', info.get('prefix', '?'))} {info.get('version') or ''}"
        f" ({info.get('num_threads')} thread{'' if info.get('num_threads') == 1 else 's'})"
        for info in threadpool_info()
        if info.get("user_api") == "blas"
    )  # in a fixed order: threadpoolctl lists them in the order they were loaded
    load = f"load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    parts = [
        f"{platform.system()} {platform.machine()}",
        f"{os.cpu_count()} CPUs",
        load,
        f"Python {platform.python_version()}",
        f"numpy {np.__version__}",
        ", ".join(blas) or "BLAS unknown",
        f"bayes_rvm {bayes_rvm.__version__}",
    ]
    return ", ".join(p for p in parts if p)


def _shipped_by(path: str) -> str:
    """``"numpy's "`` for a library in ``numpy.libs`` (a wheel's bundled libraries), else
    ``""``."""
    folder = Path(path).parent.name
    return f"{folder.removesuffix('.libs')}'s " if folder.endswith(".libs") else ""


def write_results(
    directory: Path | str,
    *,
    name: str,
    title: str,
    command: str,
    rows: list[dict],
    columns: list[str],
    notes: str = "",
    machine_line: str | None = None,
) -> Path:
    """Write ``results.json`` in ``directory``: one benchmark's table for the results page.

    The schema (version :data:`RESULTS_SCHEMA`): ``{"schema", "name", "title", "command",
    "machine", "columns", "rows", "notes"}``. ``rows`` are dicts holding at least the
    ``columns`` (numbers or text; ``None`` for a missing value); ``command`` is the exact
    command line that produced them, ``machine`` the line of :func:`machine` (or
    ``machine_line``), ``notes`` Markdown shown under the table (what the columns mean).
    ``scripts/benchmark_page.py`` renders every such file into the benchmark page.
    """
    missing = [(i, c) for i, row in enumerate(rows) for c in columns if c not in row]
    if missing:
        raise ValueError(f"every row needs every column; missing (row, column): {missing[:5]}")
    document = {
        "schema": RESULTS_SCHEMA,
        "name": name,
        "title": title,
        "command": command,
        "machine": machine() if machine_line is None else machine_line,
        "columns": list(columns),
        "rows": [{c: _json_value(row[c]) for c in row} for row in rows],
        "notes": notes,
    }
    path = Path(directory) / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    return path


def _json_value(value):
    """Floats to 6 significant digits, NaN to None (JSON has none), numpy to Python."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return None if math.isnan(value) else float(f"{value:.6g}")
    return value
