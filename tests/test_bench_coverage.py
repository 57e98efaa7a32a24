"""The coverage statistics of benchmarks/bench_coverage.py, against closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom


@pytest.fixture(scope="module")
def bench(load_script):
    return load_script("benchmarks/bench_coverage.py")


def test_pooled_coverage_counts_every_test_target(bench):
    runs = [{"cover": 0.9, "n": 100}, {"cover": 1.0, "n": 50}]
    p, se = bench.pooled_coverage(runs)
    # 90 + 50 of 150 targets, not the mean of the two proportions (0.95)
    assert p == pytest.approx(140 / 150, abs=1e-15)
    assert se == pytest.approx(np.sqrt(p * (1 - p) / 150), rel=1e-12)


@pytest.mark.parametrize("n", [42, 79, 89, 100, 102, 1000])
def test_expected_below_is_the_binomial_tail(bench, n):
    # a split covers less than 0.92 when fewer than 0.92 n of its n targets are inside:
    # at n = 100 at most 91, 92 being exactly 0.92
    k_max = {42: 38, 79: 72, 89: 81, 100: 91, 102: 93, 1000: 919}[n]
    runs = [{"n": n}, {"n": n}]
    assert bench.expected_below(runs) == pytest.approx(2 * binom.cdf(k_max, n, 0.95), rel=1e-12)


def test_expected_below_matches_simulated_calibrated_splits(bench):
    rng = np.random.default_rng(0)
    n, splits = 89, 200_000
    cover = rng.binomial(n, 0.95, splits) / n
    simulated = np.mean(cover < bench.THRESHOLD)
    # Monte Carlo sd of the fraction is about 6e-4
    assert bench.expected_below([{"n": n}]) == pytest.approx(simulated, abs=3e-3)


def test_gap_coverage_scores_only_the_targets_inside(bench):
    rng = np.random.default_rng(1)
    y, mean, sd = rng.normal(size=50), np.zeros(50), np.full(50, 0.5)
    inside = np.zeros(50, dtype=bool)
    inside[10:20] = True
    scores = bench._split_scores(bench.gaussian_scores, inside, y, mean, sd)
    assert scores["cover"] == pytest.approx(np.mean(np.abs(y / 0.5) <= bench.Z95))
    assert scores["gap_cover"] == pytest.approx(np.mean(np.abs(y[10:20] / 0.5) <= bench.Z95))
    assert scores["gap_n"] == 10
    assert "gap_cover" not in bench._split_scores(bench.gaussian_scores, None, y, mean, sd)
