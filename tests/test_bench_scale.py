"""benchmarks/bench_scale.py: runs at a tiny size and reports what it says it reports."""

from __future__ import annotations

import re

import pytest


# the benchmark's Friedman #1 training targets are noise-free: at 200 points the RVR
# interpolates them, and says so
@pytest.mark.filterwarnings("ignore:the model interpolates")
@pytest.mark.parametrize("case", ["rvr", "subset", "rvc"])
def test_runs_at_tiny_size_and_reports(case, load_script, capsys):
    bench_scale = load_script("benchmarks/bench_scale.py")
    bench_scale.main(["--case", case, "--n", "200", "--centres", "40"])
    out = capsys.readouterr().out
    assert re.search(rf"^case {case}  n 200  solver auto  load [0-9.]+$", out, re.M)
    assert re.search(r"^fit [0-9.]+ s .* relevance [0-9]+  log evidence -?[0-9.]+", out, re.M)
    quality = "RMSE against the true function" if case != "rvc" else "error against the"
    assert re.search(rf"^{quality} .*: [0-9.]+( %)?$", out, re.M)
    assert re.search(r"^client peak RSS [0-9]+ MB$", out, re.M)


@pytest.mark.slow
def test_dask_case_runs_at_tiny_size_and_reports(load_script, capsys):
    pytest.importorskip("distributed")
    cloudpickle = pytest.importorskip("cloudpickle")
    bench_scale = load_script("benchmarks/bench_scale.py")
    cloudpickle.register_pickle_by_value(bench_scale)  # the workers cannot import it
    bench_scale.main(
        ["--case", "dask", "--n", "2000", "--centres", "60", "--workers", "2",
         "--chunk-rows", "1000"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert re.search(r"^worker .*: peak RSS [0-9]+ MB$", out, re.M)
    assert re.search(r"^RMSE against the true function .*: [0-9.]+$", out, re.M)


@pytest.mark.filterwarnings("ignore:the model interpolates")
def test_write_keeps_one_row_per_seed_of_one_command(load_script, monkeypatch, tmp_path):
    """``--write``: a row per seed, a seed run again replaces its row, and another command
    (here ``--n``) starts the table anew; the file is one the benchmark page renders."""
    import json
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    results = load_script("benchmarks/_results.py")
    monkeypatch.setattr(results, "RESULTS", tmp_path)
    bench_scale = load_script("benchmarks/bench_scale.py")
    page = load_script("scripts/benchmark_page.py")
    path = tmp_path / bench_scale.TABLES["rvr"].name / "results.json"

    def run(n, seed):
        bench_scale.main(["--case", "rvr", "--n", str(n), "--seed", str(seed), "--write"])
        return json.loads(path.read_text())

    run(120, 1)
    run(120, 0)
    table = run(120, 1)
    assert [row["seed"] for row in table["rows"]] == [0, 1]
    assert all(list(row) == bench_scale.TABLES["rvr"].columns for row in table["rows"])
    assert "--n 120 " in table["command"] and "of the 2 within 120 s" in table["notes"]
    assert "| 1 |" in page.section(table)
    table = run(140, 2)
    assert [row["seed"] for row in table["rows"]] == [2]
    with pytest.raises(SystemExit):
        bench_scale.main(["--case", "rvc", "--n", "100", "--write"])


@pytest.mark.filterwarnings("ignore:the model interpolates")
def test_write_keeps_one_row_per_subset_fit(load_script, monkeypatch, tmp_path):
    """``--case subset --write``: a row per size, centres, seed and solver (the same ones
    run again replace their row), in that order, and another ``--n-jobs`` starts anew."""
    import json
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    results = load_script("benchmarks/_results.py")
    monkeypatch.setattr(results, "RESULTS", tmp_path)
    bench_scale = load_script("benchmarks/bench_scale.py")
    page = load_script("scripts/benchmark_page.py")
    table = bench_scale.TABLES["subset"]

    def run(n, seed, *more):
        argv = ["--case", "subset", "--n", str(n), "--centres", "20", "--seed", str(seed)]
        bench_scale.main([*argv, *more, "--write"])
        held = json.loads((tmp_path / table.name / "results.json").read_text())
        return held, [tuple(row[c] for c in table.key) for row in held["rows"]]

    run(300, 1)
    run(300, 0, "--solver", "mackay")
    run(1200, 0)
    held, named = run(300, 1)
    assert named == [
        ("300", "20", 0, "mackay"), ("300", "20", 1, "sequential (default)"),
        ("1,200", "20", 0, "sequential (default)"),
    ]  # fmt: skip
    assert all(list(row) == table.columns for row in held["rows"])
    assert "| mackay |" in page.section(held)
    _, named = run(300, 2, "--n-jobs", "2")
    assert named == [("300", "20", 2, "sequential (default)")]
