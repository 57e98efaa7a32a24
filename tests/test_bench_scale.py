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
