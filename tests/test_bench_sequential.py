"""The suite's "best" log evidence and its data draws (benchmarks/bench_sequential.py)."""

from __future__ import annotations


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
