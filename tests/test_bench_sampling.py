"""benchmarks/bench_sampling.py --write: the sampling table's file, never its numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_write_records_each_form_and_sampler_with_its_command(load_script, monkeypatch, tmp_path):
    """A row per form and sampler with every column, the divergences of each seed, the
    exact command; the page renders it; ``--write`` without the sampling part is refused."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    results = load_script("benchmarks/_results.py")
    monkeypatch.setattr(results, "RESULTS", tmp_path)
    bench = load_script("benchmarks/bench_sampling.py")
    page = load_script("scripts/benchmark_page.py")
    argv = ["--part", "sampling", "--data", "sinc", "--samplers", "pymc", "--seeds", "1", "2"]
    argv += ["--draws", "20", "--tune", "20", "--chains", "1", "--write"]
    bench.main(argv)
    table = json.loads((tmp_path / "sampling" / "results.json").read_text())
    assert [(row["form"], row["sampler"]) for row in table["rows"]] == [
        (form, "pymc") for form in bench.GAUSSIAN_FORMS
    ]
    for row in table["rows"]:
        assert list(row) == bench.COLUMNS
        assert len(row["divergences"].split(", ")) == 2  # one count per seed
        assert row["leapfrog/draw"] >= 1 and row["min bulk ESS"] > 0
    assert table["command"] == "python benchmarks/bench_sampling.py " + " ".join(argv)
    assert "| collapsed | pymc |" in page.section(table)
    with pytest.raises(SystemExit):
        bench.main(["--part", "vi", "--write"])
