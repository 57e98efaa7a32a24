"""benchmarks/bench_classification.py: ``--write`` writes the table the run printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_write_records_the_printed_rows(load_script, monkeypatch, tmp_path, capsys):
    """Pima's two rows (RVC and SVC) with the group named once, the command that made
    them, and a file the benchmark page renders; ``heldout`` has no rows to write."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    results = load_script("benchmarks/_results.py")
    monkeypatch.setattr(results, "RESULTS", tmp_path)
    bench = load_script("benchmarks/bench_classification.py")
    page = load_script("scripts/benchmark_page.py")
    bench.main(["--only", "pima", "--write"])
    printed = capsys.readouterr().out
    table = json.loads((tmp_path / "bench-classification" / "results.json").read_text())
    assert table["command"].endswith("bench_classification.py --only pima --write")
    models = [row["model"] for row in table["rows"]]
    assert models == ["RVC (sequential)", "SVC (same gamma, C by 5-fold CV)"]
    assert table["rows"][0]["data"].startswith("Pima (200 / 332)")
    assert table["rows"][1]["data"] == ""
    for row in table["rows"]:
        assert f"{row['model']:<34} {row['test error']:>9} {row['vectors']:>9}" in printed
    assert "| Pima (200 / 332)" in page.section(table)
    with pytest.raises(SystemExit):
        bench.main(["--only", "heldout", "--write"])
