"""The outputs of a run: the table and the normalised means (``table.md``, ``table.csv``),
the fits (``runs.csv``) and the result file, and runs read back from their ``runs.csv``
and merged (:func:`merge_runs`)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from bayes_rvm.reproduce._fitting import RowResult
from bayes_rvm.reproduce._result_file import write_results
from bayes_rvm.reproduce._rows import PAPER_NORMALISED_MEANS, ROWS

# ---------------------------------------------------------------- table


def _mean_ratio(pairs: list[tuple[float, float]]) -> float:
    """Mean of ``rvm / svm`` over rows; NaN when an SVM value is 0 (no ratio defined)."""
    return float(np.mean([rvm / svm if svm else math.nan for rvm, svm in pairs]))


def normalised_means(results: list[RowResult], task: str) -> dict | None:
    """RVM / SVM mean error and vectors, averaged over the rows the paper averages.

    Returns ours and the paper's over the same rows (None when no such row has both
    models), plus the paper's value over its complete table.
    """
    rows = [r for r in results if r.row.task == task and r.row.paper.in_mean and r.runs]
    if not rows:
        return None
    return {
        "rows": [r.row.key for r in rows],
        "error": _mean_ratio([(r.mean("rvm", "error"), r.mean("svm", "error")) for r in rows]),
        "vectors": _mean_ratio(
            [(r.mean("rvm", "vectors"), r.mean("svm", "vectors")) for r in rows]
        ),
        "paper_error": _mean_ratio([(r.row.paper.rvm_error, r.row.paper.svm_error) for r in rows]),
        "paper_vectors": _mean_ratio(
            [(r.row.paper.rvm_vectors, r.row.paper.svm_vectors) for r in rows]
        ),
        "paper_table": PAPER_NORMALISED_MEANS[task],
    }


COLUMNS = [
    "row", "data set", "N", "d", "repeats", "unit",
    "SVM error", "SVM error sem", "RVM error", "RVM error sem",
    "SVM vectors", "RVM vectors", "RVM fits at max_iter",
    "paper SVM error", "paper RVM error", "paper SVM vectors", "paper RVM vectors",
    "seconds",
]  # fmt: skip


def table_rows(results: list[RowResult]) -> list[dict]:
    """One dict per row with the :data:`COLUMNS`."""
    out = []
    for r in results:
        paper = r.row.paper
        not_converged = sum(run.get("rvm_converged") is False for run in r.runs)
        out.append(
            {
                "row": r.row.key,
                "data set": r.row.title,
                "N": r.runs[0]["n_train"] if r.runs else r.row.n_train,
                "d": r.row.d,
                "repeats": len(r.runs),
                "unit": r.row.unit,
                "SVM error": r.mean("svm", "error"),
                "SVM error sem": r.sem("svm", "error"),
                "RVM error": r.mean("rvm", "error"),
                "RVM error sem": r.sem("rvm", "error"),
                "SVM vectors": r.mean("svm", "vectors"),
                "RVM vectors": r.mean("rvm", "vectors"),
                "RVM fits at max_iter": not_converged,
                "paper SVM error": paper.svm_error,
                "paper RVM error": paper.rvm_error,
                "paper SVM vectors": paper.svm_vectors,
                "paper RVM vectors": paper.rvm_vectors,
                "seconds": r.seconds,
            }
        )
    return out


def _fmt(value, digits: int = 4) -> str:
    if isinstance(value, str):
        return value
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, int) or (float(value).is_integer() and abs(value) >= 10):
        return str(int(value))
    return f"{value:.{digits}g}"


def _with_sem(mean: float, sem: float) -> str:
    return _fmt(mean) if math.isnan(sem) else f"{_fmt(mean)} ± {_fmt(sem, 2)}"


def markdown(results: list[RowResult], header: str = "") -> str:
    """The table and the normalised means as Markdown."""
    lines = [header] if header else []
    lines += [
        "| Data set | N | d | reps | unit | SVM error | RVM error | SVM vectors | RVM vectors "
        "| paper SVM / RVM error | paper SVM / RVM vectors |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for t in table_rows(results):
        lines.append(
            f"| {t['data set']} | {t['N']} | {t['d']} | {t['repeats']} | {t['unit']} "
            f"| {_with_sem(t['SVM error'], t['SVM error sem'])} "
            f"| {_with_sem(t['RVM error'], t['RVM error sem'])} "
            f"| {_fmt(t['SVM vectors'])} | {_fmt(t['RVM vectors'])} "
            f"| {_fmt(t['paper SVM error'])} / {_fmt(t['paper RVM error'])} "
            f"| {_fmt(t['paper SVM vectors'])} / {_fmt(t['paper RVM vectors'])} |"
        )
    lines += ["", "Normalised means (RVM / SVM, averaged over rows; SVM = 1.00):", ""]
    lines += [
        "| task | rows | ours: errors | ours: vectors | paper, same rows: errors "
        "| paper, same rows: vectors | paper, full table: errors / vectors |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for task in ("regression", "classification"):
        m = normalised_means(results, task)
        if m is None:
            lines.append(f"| {task} | (no row with both models run) | - | - | - | - | - |")
            continue
        lines.append(
            f"| {task} | {', '.join(m['rows'])} | {m['error']:.2f} | {m['vectors']:.2f} "
            f"| {m['paper_error']:.2f} | {m['paper_vectors']:.2f} "
            f"| {m['paper_table'][0]:.2f} / {m['paper_table'][1]:.2f} |"
        )
    return "\n".join(lines) + "\n"


def write_outputs(
    results: list[RowResult], out: Path, header: str, command: str = ""
) -> dict[str, Path]:
    """``table.md``, ``table.csv`` (one line per row), ``runs.csv`` (one per fit pair) and
    ``results.json`` (the table in the result-file schema of :func:`write_results`)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out / "table.md", "csv": out / "table.csv", "runs": out / "runs.csv"}
    paths["markdown"].write_text(markdown(results, header))
    with paths["csv"].open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(table_rows(results))
    runs = [run for r in results for run in r.runs]
    fields = list(dict.fromkeys(k for run in runs for k in run))
    with paths["runs"].open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(runs)
    paths["results"] = write_results(out, name=out.name, command=command, **results_table(results))
    return paths


#: Columns of the reproduction's table on the results page.
PAGE_COLUMNS = [
    "data set", "N", "repeats", "unit", "SVM error", "RVM error", "SVM vectors",
    "RVM vectors", "paper error (SVM / RVM)", "paper vectors (SVM / RVM)",
]  # fmt: skip


def results_table(results: list[RowResult]) -> dict:
    """Title, rows, columns and notes of the reproduction for :func:`write_results`."""
    rows = []
    for t in table_rows(results):
        rows.append(
            t
            | {
                "SVM error": _with_sem(t["SVM error"], t["SVM error sem"]),
                "RVM error": _with_sem(t["RVM error"], t["RVM error sem"]),
                "SVM vectors": _fmt(t["SVM vectors"]),
                "RVM vectors": _fmt(t["RVM vectors"]),
                "paper error (SVM / RVM)": (
                    f"{_fmt(t['paper SVM error'])} / {_fmt(t['paper RVM error'])}"
                ),
                "paper vectors (SVM / RVM)": (
                    f"{_fmt(t['paper SVM vectors'])} / {_fmt(t['paper RVM vectors'])}"
                ),
            }
        )
    notes = [
        "Errors are means over the repetitions with their standard error; units as in the "
        "paper (`RMS x 10`: root-mean-square deviation from the noise-free sinc times 10; "
        "MSE: mean squared error; `% wrong`: test error in percent)."
    ]
    for task in ("regression", "classification"):
        m = normalised_means(results, task)
        if m is not None:
            notes.append(
                f"Normalised means ({task}, RVM / SVM averaged over "
                f"{', '.join(m['rows'])}): errors {m['error']:.2f}, vectors "
                f"{m['vectors']:.2f}; the paper over the same rows {m['paper_error']:.2f}, "
                f"{m['paper_vectors']:.2f} (its full table {m['paper_table'][0]:.2f}, "
                f"{m['paper_table'][1]:.2f})."
            )
    tasks = sorted({r.row.task for r in results})
    return {
        "title": f"Reproduction of Tipping (2001), Sec. 4.4: {' and '.join(tasks)}",
        "rows": rows,
        "columns": PAGE_COLUMNS,
        "notes": " ".join(notes),
    }


# ---------------------------------------------------------------- merging runs


def _parse(value: str):
    """A ``runs.csv`` field: int, float, bool, None (empty) or the text itself."""
    if value in ("True", "False"):
        return value == "True"
    if value == "":
        return None
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def merge_runs(directories) -> list[RowResult]:
    """The rows of several runs (their ``runs.csv``) as one result, in the table's order.

    Raises ``ValueError`` if a repetition of a row appears twice (same row, repetition and
    seed): the runs overlap instead of extending each other.
    """
    runs: dict[tuple, dict] = {}
    for directory in directories:
        path = Path(directory) / "runs.csv"
        with path.open(newline="") as handle:
            for record in csv.DictReader(handle):
                run = {k: _parse(v) for k, v in record.items()}
                key = (run["row"], run["repeat"], run["seed"])
                if key in runs:
                    raise ValueError(
                        f"repetition {run['repeat']} (seed {run['seed']}) of row "
                        f"{run['row']!r} appears twice (again in {path}): merge runs of "
                        "disjoint repetitions (--first-repeat)"
                    )
                runs[key] = run
    results = []
    for name, row in ROWS.items():
        rows = sorted((k for k in runs if k[0] == name), key=lambda k: (k[2], k[1]))
        if not rows:
            continue
        result = RowResult(row, len(rows), [runs[k] for k in rows])
        result.seconds = sum(
            (r.get("svm_seconds") or 0.0) + (r.get("rvm_seconds") or 0.0) for r in result.runs
        )
        results.append(result)
    return results
