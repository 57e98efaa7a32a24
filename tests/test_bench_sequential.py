"""benchmarks/bench_sequential.py: its output format and bookkeeping, never its numbers."""

from __future__ import annotations

import contextlib
import math
import shutil
import subprocess
from pathlib import Path

import pytest

COLUMNS = [
    "problem", "package", "fit s", "ratio to fastrvm", "RVs", "noise sd", "log evidence",
    "below best",
]  # fmt: skip


def test_a_self_reported_evidence_never_sets_the_best(load_script):
    """fastrvm's own report (here an impossible +64,135 against -7,745 evaluated for ours)
    is not the best; it is when it is all there is."""
    suite = load_script("benchmarks/bench_sequential.py")
    medians = {
        "bayes_rvm": {"log_evidence": -7745.3},
        "fastrvm": {"log_evidence": 64135.4},
        "sklearn-rvm": {"log_evidence": -7800.0},
    }
    assert suite.best_evidence(medians) == -7745.3
    assert suite.best_evidence({"fastrvm": {"log_evidence": -9646.1}}) == -9646.1


def test_seeds_draw_the_random_problems_only(load_script):
    """``--seeds`` redraws sinc, Friedman #1 and the broad-kernel sinc; diabetes and Boston
    are fixed data sets and run once."""
    suite = load_script("benchmarks/bench_sequential.py")
    draws = suite._draws(["sinc-100", "diabetes-0.03", "broad-sinc", "boston-0.1"], [0, 3])
    assert draws == [
        ("sinc-100", 0), ("sinc-100", 3), ("diabetes-0.03", 0), ("broad-sinc", 0),
        ("broad-sinc", 3), ("boston-0.1", 0),
    ]  # fmt: skip


def test_runs_at_tiny_size_and_prints_its_table(load_script, monkeypatch, capsys):
    """In process, one problem, two packages, one repetition: a Markdown table with the
    documented columns and one row per package whose numeric cells parse, the best
    package 0 below the best."""
    suite = load_script("benchmarks/bench_sequential.py")
    argv = ["bench_sequential.py", "--packages", "bayes_rvm", "mackay"]
    argv += ["--problems", "sinc-100", "--repeats", "1", "--in-process"]
    monkeypatch.setattr("sys.argv", argv)
    monkeypatch.setattr(suite, "run", None)  # no subprocess
    suite.main()
    lines = capsys.readouterr().out.splitlines()
    assert [c.strip() for c in lines[0].strip("|").split("|")] == COLUMNS
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:4]]
    assert [row[:2] for row in rows] == [["sinc-100", "bayes_rvm"], ["sinc-100", "mackay"]]
    for row in rows:
        assert len(row) == len(COLUMNS)
        fit_s, ratio, n_rv, noise, evidence, below = row[2:]
        assert float(fit_s) > 0 and math.isnan(float(ratio))  # no fastrvm in this run
        assert int(n_rv) > 0 and float(noise) > 0 and math.isfinite(float(evidence))
        assert float(below) >= 0
    assert min(float(row[7]) for row in rows) == 0.0


def test_a_revision_spec_is_split_and_malformed_ones_are_refused(load_script, monkeypatch):
    """``bayes_rvm@REF[...]`` is the spec ``bayes_rvm[...]`` run at ``REF``; a revision of
    another package, an empty one or one that reads as an option is a ValueError, as is
    a revision with ``--in-process`` (before any fit)."""
    suite = load_script("benchmarks/bench_sequential.py")
    assert suite.split_ref("bayes_rvm@257e8c6") == ("bayes_rvm", "257e8c6")
    assert suite.split_ref("bayes_rvm@v1.0[n_starts=1]") == ("bayes_rvm[n_starts=1]", "v1.0")
    assert suite.split_ref("bayes_rvm[n_starts=1]") == ("bayes_rvm[n_starts=1]", None)
    for spec in ("fastrvm@main", "bayes_rvm@", "bayes_rvm@--output=x"):
        with pytest.raises(ValueError, match="expected bayes_rvm@REF"):
            suite.split_ref(spec)
    argv = ["bench_sequential.py", "--packages", "bayes_rvm", "bayes_rvm@HEAD", "--in-process"]
    monkeypatch.setattr("sys.argv", argv)
    monkeypatch.setattr(suite, "worker", None)  # no fit
    with pytest.raises(ValueError, match="--in-process"):
        suite.main()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_revision_runs_from_its_own_copy_removed_at_the_end(load_script):
    """The workers of ``bayes_rvm@HEAD`` import ``bayes_rvm`` from a copy of HEAD's (as
    the check process reports), with a numba cache of their own; both directories go when
    the run ends. An unknown revision, or a field its ``Schedule`` does not have, is a
    ValueError before any fit."""
    suite = load_script("benchmarks/bench_sequential.py")
    root = Path(suite.ROOT)
    with contextlib.ExitStack() as stack:
        envs = suite.environments(["bayes_rvm", "bayes_rvm@HEAD"], stack)
        env = envs["bayes_rvm@HEAD"]
        copy = Path(env["PYTHONPATH"], "bayes_rvm", "__init__.py")
        head = subprocess.run(
            ["git", "-C", root, "show", "HEAD:bayes_rvm/__init__.py"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert envs["bayes_rvm"] == {} and copy.read_text() == head
        assert root not in copy.parents and Path(env["NUMBA_CACHE_DIR"]).is_dir()
    assert not Path(env["PYTHONPATH"]).exists() and not Path(env["NUMBA_CACHE_DIR"]).exists()
    for spec in ("bayes_rvm@no-such-revision", "bayes_rvm@HEAD[no_such_field=1]"):
        with contextlib.ExitStack() as stack, pytest.raises(ValueError, match="expected"):
            suite.environments(["bayes_rvm", spec], stack)


def test_the_default_is_compared_with_a_revision_and_a_setting_with_the_default(load_script):
    """Beside ``bayes_rvm``, a setting is tested against the default and the default
    against a revision: per problem the log evidence difference (tested minus baseline)
    and the fit time ratio (tested over baseline), then how many problems are more than
    0.5 nat lower or 25 % slower; a problem without both fits is named, not counted."""
    suite = load_script("benchmarks/bench_sequential.py")
    packages = ["bayes_rvm", "bayes_rvm@abc", "bayes_rvm[n_starts=1]", "fastrvm"]
    assert suite.comparisons(packages) == [
        ("bayes_rvm", "bayes_rvm@abc"), ("bayes_rvm[n_starts=1]", "bayes_rvm"),
    ]  # fmt: skip
    assert suite.comparisons(packages[1:]) == []
    by_problem = [
        ("a", {"bayes_rvm": {"log_evidence": -10.0, "time": 2.0},
               "bayes_rvm@abc": {"log_evidence": -9.0, "time": 1.0}}),
        ("b", {"bayes_rvm": {"log_evidence": 5.0, "time": 1.0},
               "bayes_rvm@abc": {"log_evidence": 5.25, "time": 1.0}}),
        ("c", {"bayes_rvm": {"log_evidence": 5.0, "time": 1.0}}),
    ]  # fmt: skip
    text = suite.against("bayes_rvm", "bayes_rvm@abc", by_problem)
    assert text.startswith("bayes_rvm against bayes_rvm@abc")
    assert "a -1.00 nat 2.00x, b -0.25 nat 1.00x." in text
    assert "more than 0.5 nat lower on 1 of 2 problems" in text
    assert "more than 25 % slower on 1 of 2" in text
    assert text.endswith("No fit within the timeout: c (bayes_rvm@abc).")


def test_memory_run_writes_its_table(load_script, monkeypatch, tmp_path):
    """``--memory N --write``: one fit in a fresh process, its row in
    ``sequential-memory`` with the page's columns, the worker's peak at least the fit's
    share of it; the page renders it."""
    import json

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    results = load_script("benchmarks/_results.py")
    monkeypatch.setattr(results, "RESULTS", tmp_path)
    suite = load_script("benchmarks/bench_sequential.py")
    page = load_script("scripts/benchmark_page.py")
    monkeypatch.setattr("sys.argv", ["bench_sequential.py", "--memory", "400", "--write"])
    suite.main()
    table = json.loads((tmp_path / "sequential-memory" / "results.json").read_text())
    (row,) = table["rows"]
    assert list(row) == table["columns"] and row["problem"] == "sinc, N = 400"
    whole, fit = (float(row[c].split()[0].replace(",", "")) for c in table["columns"][1:3])
    assert 0 <= fit <= whole and whole > 50 and row["RVs"] > 0  # numpy alone holds more
    assert table["command"].endswith("--memory 400 --write")
    assert "| sinc, N = 400 |" in page.section(table)
