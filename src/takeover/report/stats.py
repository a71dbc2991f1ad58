"""Statistics of the report (docs/protocol.md section 9): medians, relative changes, paired bootstrap
intervals over handoff points, exact McNemar tests and Wilson intervals.

The statistic for event and token changes is the *relative change of medians*,
``median(view) / median(repo_only) - 1``, computed over the handoff points that have both a
``repo_only`` run and a run of the compared view (paired). Its 95% interval is a percentile bootstrap
that resamples handoff points with replacement, each carrying its pair of runs (paper: 5,000 resamples;
we seed numpy's ``default_rng`` so that a report is reproducible byte for byte).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.stats import binomtest

DEFAULT_RESAMPLES = 5000
DEFAULT_SEED = 20260430
# Resamples drawn per block: bounds memory to about CHUNK x n values while giving exactly the same
# numbers as one big draw (numpy's Generator fills arrays in row-major order from one stream).
_CHUNK = 500


def median(values: Sequence[float]) -> float | None:
    """Median of ``values`` (``None`` when empty)."""
    if len(values) == 0:
        return None
    return float(np.median(np.asarray(values, dtype=float)))


def relative_change(new: float | None, base: float | None) -> float | None:
    """``new / base - 1`` (a fraction: -0.5 is a 50% drop); ``None`` when undefined (base 0 or missing)."""
    if new is None or base is None or base == 0:
        return None
    return float(new) / float(base) - 1.0


def paired_bootstrap_relative_median_change(
    base: Sequence[float],
    new: Sequence[float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
) -> tuple[float | None, float | None, float | None]:
    """Point estimate and percentile bootstrap interval of ``median(new) / median(base) - 1``.

    Args:
        base, new: paired values (same length; index i is handoff point i): e.g. agent events of the
            ``repo_only`` run and of the ``raw_trace`` run of the same point.
        resamples: bootstrap resamples (docs/protocol.md section 9: 5,000).
        seed: seed of ``numpy.random.default_rng``; each resample draws ``n`` point indices with
            replacement (``rng.integers(0, n, n)``), in order.
        confidence: two-sided interval level.

    Returns:
        ``(estimate, low, high)`` as fractions; ``None`` parts when there are no pairs or the base median
        is 0. Resamples whose base median is 0 are dropped from the interval.

    Raises:
        ValueError: the sequences differ in length.
    """
    a = np.asarray(base, dtype=float)
    b = np.asarray(new, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired samples differ in length: {a.shape[0]} vs {b.shape[0]}")
    n = a.shape[0]
    estimate = relative_change(median(b), median(a)) if n else None
    if n == 0 or estimate is None:
        return estimate, None, None
    rng = np.random.default_rng(seed)
    # Medians of resamples through ranks: partitioning small integer ranks is cheaper than partitioning the
    # gathered float values, and gives exactly np.median's numbers (mean of the two middle values).
    sorted_a, rank_a = _ranks(a)
    sorted_b, rank_b = _ranks(b)
    mid = ((n - 1) // 2, n // 2)
    stats: list[np.ndarray] = []
    left = resamples
    while left > 0:
        k = min(_CHUNK, left)
        idx = rng.integers(0, n, size=(k, n))
        ma = _resampled_medians(rank_a[idx], sorted_a, mid)
        mb = _resampled_medians(rank_b[idx], sorted_b, mid)
        ok = ma != 0
        stats.append(mb[ok] / ma[ok] - 1.0)
        left -= k
    values = np.concatenate(stats)
    if values.size == 0:
        return estimate, None, None
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [alpha, 1.0 - alpha])
    return estimate, float(low), float(high)


def _ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sorted values, rank of each value)`` with ranks as the smallest integer type that fits."""
    order = np.argsort(values, kind="stable")
    rank = np.empty(values.shape[0], dtype=np.int32 if values.shape[0] < 2**31 else np.int64)
    rank[order] = np.arange(values.shape[0])
    return values[order], rank


def _resampled_medians(ranks: np.ndarray, sorted_values: np.ndarray, mid: tuple[int, int]) -> np.ndarray:
    """Row medians of resampled values given by their ranks (shape: resamples x n)."""
    part = np.partition(ranks, mid, axis=1)
    return (sorted_values[part[:, mid[0]]] + sorted_values[part[:, mid[1]]]) / 2.0


def mcnemar_exact(base_solved: Sequence[bool], new_solved: Sequence[bool]) -> dict:
    """Exact McNemar test on paired solved outcomes (docs/protocol.md section 9).

    Only discordant pairs matter: ``b`` = solved by the base only, ``c`` = solved by the new view only.
    Under the null each discordant pair is a fair coin, so the two-sided p-value is
    ``scipy.stats.binomtest(c, b + c, 0.5).pvalue`` (1.0 when there is no discordant pair).

    Returns:
        ``{"n": pairs, "base_only": b, "new_only": c, "p_value": p, "difference": (c - b) / n}`` where
        ``difference`` is the paired change in solved rate (a fraction; ``None`` without pairs).
    """
    if len(base_solved) != len(new_solved):
        raise ValueError("paired samples differ in length")
    b = sum(1 for x, y in zip(base_solved, new_solved) if x and not y)
    c = sum(1 for x, y in zip(base_solved, new_solved) if y and not x)
    n = len(base_solved)
    p = 1.0 if b + c == 0 else float(binomtest(c, b + c, 0.5).pvalue)
    return {"n": n, "base_only": b, "new_only": c, "p_value": p, "difference": (c - b) / n if n else None}


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float | None, float | None]:
    """Wilson score interval of a proportion (fractions); ``(None, None)`` when ``n == 0``."""
    if n == 0:
        return None, None
    from scipy.stats import norm

    z = float(norm.ppf(1 - (1 - confidence) / 2))
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)
