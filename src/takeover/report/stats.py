"""Statistics of the report (docs/protocol.md section 9): medians, relative changes, paired bootstrap
intervals over handoff points, exact McNemar tests and Wilson intervals.

The statistic for event and token changes is the *relative change of medians*,
``median(view) / median(repo_only) - 1``, computed over the handoff points that have both a
``repo_only`` run and a run of the compared view (paired). Its 95% interval is a percentile bootstrap
that resamples handoff points with replacement, each carrying its pair of runs (paper: 5,000 resamples;
we seed numpy's ``default_rng`` so that a report is reproducible byte for byte).

The bootstrap is ours rather than ``scipy.stats.bootstrap(paired=True, method="percentile")`` because the
exact stream of numbers matters: reports must stay byte-identical across versions, including resamples
whose ``repo_only`` median is 0 (dropped here; scipy would keep an infinite ratio), and scipy holds all
resamples x points values in memory at once. It draws the same point indices as scipy (one
``rng.integers(0, n, (resamples, n))`` stream) and gives the same interval; a test cross-checks the two.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def _binomtest(k: int, n: int, p: float = 0.5):
    """``scipy.stats.binomtest``, imported on first use: loading ``scipy.stats`` takes about a second and
    60 MiB, which ``import takeover.report`` (the CLI, ``takeover show``) does not need."""
    from scipy.stats import binomtest as scipy_binomtest

    return scipy_binomtest(k, n, p)


DEFAULT_RESAMPLES = 5000
DEFAULT_SEED = 20260430
# Resamples drawn per block: bounds memory to about CHUNK x n values while giving exactly the same
# numbers as one big draw (numpy's Generator fills arrays in row-major order from one stream).
_CHUNK = 250


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
    return paired_bootstraps([(base, new)], resamples=resamples, seed=seed, confidence=confidence)[0]


def paired_bootstraps(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
) -> list[tuple[float | None, float | None, float | None]]:
    """:func:`paired_bootstrap_relative_median_change` of many ``(base, new)`` pairs at once.

    Every pair gets exactly the numbers it would get alone. A report compares each view with
    ``repo_only`` for two metrics, per successor and per breakdown group: pairs of the same length draw
    the same indices (same seed), and equal value vectors have the same resampled medians, so both are
    computed once per length and per vector; lengths run in parallel threads. Memory: about ``250 x n``
    indices per thread at a time plus ``resamples`` medians per distinct vector.

    Returns:
        One ``(estimate, low, high)`` per pair, in order.

    Raises:
        ValueError: the two sequences of a pair differ in length.
    """
    results: list[tuple[float | None, float | None, float | None] | None] = [None] * len(pairs)
    by_length: dict[int, list[tuple[int, np.ndarray, np.ndarray, float]]] = {}
    for i, (base, new) in enumerate(pairs):
        a = np.asarray(base, dtype=float)
        b = np.asarray(new, dtype=float)
        if a.shape != b.shape:
            raise ValueError(f"paired samples differ in length: {a.shape[0]} vs {b.shape[0]}")
        n = a.shape[0]
        estimate = relative_change(median(b), median(a)) if n else None
        if n == 0 or estimate is None:
            results[i] = (estimate, None, None)
        else:
            by_length.setdefault(n, []).append((i, a, b, estimate))
    alpha = (1.0 - confidence) / 2.0
    work = []
    for n, jobs in by_length.items():
        vectors: dict[bytes, np.ndarray] = {}
        for _, a, b, _ in jobs:
            vectors.setdefault(a.tobytes(), a)
            vectors.setdefault(b.tobytes(), b)
        work.append((n, jobs, vectors))
    # Lengths are independent streams (each starts from the seed): numpy sorts, draws and gathers
    # without the GIL, so threads use every core and the numbers stay the same.
    threads = min(len(work), os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        medians = list(pool.map(lambda w: _bootstrap_medians(w[0], list(w[2].values()), resamples=resamples,
                                                             seed=seed), work))
    for (_, jobs, vectors), found in zip(work, medians):
        by_vector = dict(zip(vectors, found))
        for i, a, b, estimate in jobs:
            ma, mb = by_vector[a.tobytes()], by_vector[b.tobytes()]
            ok = ma != 0
            values = mb[ok] / ma[ok] - 1.0
            if values.size == 0:
                results[i] = (estimate, None, None)
                continue
            low, high = np.quantile(values, [alpha, 1.0 - alpha])
            results[i] = (estimate, float(low), float(high))
    return results  # type: ignore[return-value]


def _bootstrap_medians(n: int, vectors: list[np.ndarray], *, resamples: int, seed: int) -> list[np.ndarray]:
    """Medians of ``resamples`` bootstrap resamples of each vector (all of length ``n``), the resamples
    drawn by ``default_rng(seed).integers(0, n, (resamples, n))`` in blocks of :data:`_CHUNK` rows.

    Medians go through ranks: sorting small unsigned ranks (numpy's radix sort for 8- and 16-bit keys)
    is several times cheaper than partitioning the gathered float values, and gives exactly
    ``np.median``'s numbers (mean of the two middle values)."""
    rng = np.random.default_rng(seed)
    ranked = [_ranks(v) for v in vectors]
    mid = ((n - 1) // 2, n // 2)
    out = [np.empty(resamples, dtype=float) for _ in vectors]
    done = 0
    while done < resamples:
        k = min(_CHUNK, resamples - done)
        idx = rng.integers(0, n, size=(k, n))
        for (sorted_values, rank), medians in zip(ranked, out):
            medians[done:done + k] = _resampled_medians(rank[idx], sorted_values, mid)
        done += k
    return out


def _ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sorted values, rank of each value)`` with ranks as the smallest unsigned type that fits."""
    n = values.shape[0]
    order = np.argsort(values, kind="stable")
    dtype = np.uint8 if n <= 2**8 else np.uint16 if n <= 2**16 else np.uint32 if n <= 2**32 else np.uint64
    rank = np.empty(n, dtype=dtype)
    rank[order] = np.arange(n, dtype=dtype)
    return values[order], rank


def _resampled_medians(ranks: np.ndarray, sorted_values: np.ndarray, mid: tuple[int, int]) -> np.ndarray:
    """Row medians of resampled values given by their ranks (shape: resamples x n)."""
    if ranks.dtype.itemsize <= 2 and ranks.shape[1] >= 32:
        part = np.sort(ranks, axis=1, kind="stable")  # a radix sort for 8- and 16-bit integers
    else:
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
    p = 1.0 if b + c == 0 else float(_binomtest(c, b + c, 0.5).pvalue)
    return {"n": n, "base_only": b, "new_only": c, "p_value": p, "difference": (c - b) / n if n else None}


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float | None, float | None]:
    """Wilson score interval of a proportion ``successes / n`` (fractions in [0, 1]).

    Computed by ``scipy.stats.binomtest(successes, n).proportion_ci(method="wilson")``. Returns
    ``(None, None)`` when ``n == 0``.
    """
    if n == 0:
        return None, None
    ci = _binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
    return max(0.0, float(ci.low)), min(1.0, float(ci.high))
