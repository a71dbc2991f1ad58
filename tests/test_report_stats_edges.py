"""The report's statistics at their edges (docs/protocol.md section 9): one point, no pairs, resamples
whose repo_only median is 0, another confidence level, more points than 16-bit ranks can hold, and the
errors for unpaired samples. Expected values are recomputed here with numpy and scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest, norm

from takeover.report.stats import (
    mcnemar_exact,
    paired_bootstrap_relative_median_change,
    paired_bootstraps,
    relative_change,
    wilson_interval,
)


def direct(base, new, *, resamples: int, seed: int, confidence: float = 0.95):
    """The protocol's bootstrap one resample at a time: default_rng(seed).integers(0, n, n), resamples
    with a repo_only median of 0 dropped, percentile interval."""
    a, b = np.asarray(base, float), np.asarray(new, float)
    rng = np.random.default_rng(seed)
    stats = []
    for _ in range(resamples):
        idx = rng.integers(0, len(a), len(a))
        if np.median(a[idx]) != 0:
            stats.append(np.median(b[idx]) / np.median(a[idx]) - 1)
    alpha = (1 - confidence) / 2
    return float(np.median(b) / np.median(a) - 1), *np.quantile(stats, [alpha, 1 - alpha])


def test_a_single_point_has_a_zero_width_interval():
    assert paired_bootstrap_relative_median_change([10], [5], resamples=50, seed=1) == (-0.5, -0.5, -0.5)


def test_another_confidence_level_is_used():
    base, new = [10, 20, 30, 40, 50, 60], [9, 25, 20, 41, 30, 70]
    got = paired_bootstrap_relative_median_change(base, new, resamples=300, seed=4, confidence=0.8)
    assert got == pytest.approx(direct(base, new, resamples=300, seed=4, confidence=0.8))
    assert got != pytest.approx(paired_bootstrap_relative_median_change(base, new, resamples=300, seed=4))


def test_resamples_with_a_zero_base_median_are_dropped():
    base, new = [0, 0, 1, 1, 1], [1, 2, 3, 4, 5]
    got = paired_bootstrap_relative_median_change(base, new, resamples=500, seed=3)
    assert got == pytest.approx(direct(base, new, resamples=500, seed=3))
    # seed 2 draws points 4 1 0 1 2 first: a base median of 0, so one resample leaves nothing to rank;
    # the other pair of the same length still gets its numbers
    assert paired_bootstraps([(base, new), ([1, 2, 3, 4, 5], [2, 2, 3, 4, 5])], resamples=1, seed=2) == [
        (2.0, None, None), (0.0, 0.0, 0.0)]
    # one resample that keeps its base median gives a zero-width interval at its own ratio
    assert paired_bootstraps([([1, 2, 3, 4, 5], [2, 4, 6, 8, 10])], resamples=1, seed=2) == [(1.0, 1.0, 1.0)]


def test_more_points_than_16_bit_ranks_hold():
    rng = np.random.default_rng(8)
    n = 70_000
    base = rng.integers(1, 1000, n).astype(float)
    new = rng.integers(1, 1000, n).astype(float)
    assert paired_bootstrap_relative_median_change(base, new, resamples=3, seed=6) == pytest.approx(
        direct(base, new, resamples=3, seed=6))


def test_unpaired_samples_are_refused_with_their_lengths():
    with pytest.raises(ValueError, match="paired samples differ in length: 2 vs 1"):
        paired_bootstrap_relative_median_change([1, 2], [1])
    with pytest.raises(ValueError, match="paired samples differ in length"):
        mcnemar_exact([True], [True, False])


def test_mcnemar_without_points_and_with_ties():
    assert mcnemar_exact([], []) == {"n": 0, "base_only": 0, "new_only": 0, "p_value": 1.0, "difference": None}
    r = mcnemar_exact([True, True, False, False], [False, False, True, True])
    assert (r["base_only"], r["new_only"], r["p_value"], r["difference"]) == (2, 2, 1.0, 0.0)
    r = mcnemar_exact([True] * 6 + [False], [False] * 6 + [True])
    assert r["p_value"] == pytest.approx(binomtest(1, 7, 0.5).pvalue) and r["difference"] == pytest.approx(-5 / 7)


def test_relative_change_is_undefined_without_both_values():
    assert relative_change(None, 5) is None and relative_change(5, None) is None and relative_change(5, 0) is None
    assert relative_change(0, 5) == -1.0


def test_wilson_interval_at_another_confidence_level():
    z = norm.ppf(0.95)  # a 90% two-sided interval
    k, n = 5, 10
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert wilson_interval(k, n, confidence=0.9) == pytest.approx((centre - half, centre + half), abs=1e-12)
