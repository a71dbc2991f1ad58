"""The report's summary tables: per (successor, view) solved rates, medians and paired changes against
``repo_only``, over all handoff points and per breakdown group (docs/protocol.md section 9).

Rules (documented in ``report.md`` too):

- The unit of analysis is the handoff point. Each (successor, view) has one planned takeover run per
  point. A run that failed for infrastructure reasons (environment, repository, endpoint, harness) or is
  missing stays in the denominator of the solved rate as not solved, and is counted apart (``infra fail``,
  of which ``unreadable`` counts another tool's record of a run, a Harbor trial or an Inspect sample, that
  cannot be read; ``agent fail`` for a unit the agent made unusable). A finished run whose agent stopped without
  submitting (a limit) is no failure and may be solved: it is counted in ``ended unsubmitted``.
- A run whose grading was flaky (its verdict changed with the hash seed alone: ``flaky``, docs/protocol.md
  section 6, extension) is neither solved nor unsolved: it is left out of the solved rate (numerator and
  denominator) and of the paired solved-rate change, and counted apart (``flaky``).
- Medians of agent events, cumulative prompt tokens and initial prompt characters are over the runs that
  finished.
- Changes against ``repo_only`` are paired: computed over the points where both the ``repo_only`` run
  and the view's run finished. The statistic is the relative change of medians
  (``median(view) / median(repo_only) - 1``), with a 95% percentile interval from a paired bootstrap
  that resamples handoff points (5,000 resamples, seeded). The solved-rate change is the paired
  difference in percentage points over all planned points, with an exact McNemar test.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from takeover.report.rows import order_views
from takeover.report.stats import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    mcnemar_exact,
    median,
    paired_bootstraps,
    relative_change,
    wilson_interval,
)
from takeover.vocabulary import BASE_VIEW

#: Metrics with a median per (successor, view) and a paired change against ``repo_only``.
METRICS = ("agent_events", "prompt_tokens", "initial_prompt_chars")
#: Row fields the report breaks the summary down by.
BREAKDOWNS = ("handoff_state", "point_type")


class _Bootstraps:
    """Bootstrap requests collected while tables are built, computed together (same numbers as one by
    one, see :func:`takeover.report.stats.paired_bootstraps`), then written into their table cells."""

    def __init__(self) -> None:
        self.pairs: list[tuple[list, list]] = []
        self.cells: list[dict] = []

    def add(self, base: list, new: list, cell: dict) -> None:
        self.pairs.append((base, new))
        self.cells.append(cell)

    def run(self, *, resamples: int, seed: int) -> None:
        for cell, (est, low, high) in zip(self.cells, paired_bootstraps(self.pairs, resamples=resamples, seed=seed)):
            cell["relative_change"] = est
            cell["ci95"] = [low, high]


def _summarize(rows: list[dict], boot: _Bootstraps) -> list[dict]:
    by: dict[tuple[str, str], dict[str, dict]] = defaultdict(dict)
    for r in rows:
        by[(r["successor"], r["view"])][r["point_key"]] = r
    out: list[dict] = []
    for succ in sorted({s for s, _ in by}):
        views = order_views([v for s, v in by if s == succ])
        base = by.get((succ, BASE_VIEW), {})
        for view in views:
            runs = by[(succ, view)]
            counted = [r for r in runs.values() if not r.get("flaky")]  # a flaky verdict is no verdict
            n = len(counted)
            solved = sum(1 for r in counted if r["resolved"])
            done = [r for r in runs.values() if r["status"] == "done"]
            low, high = wilson_interval(solved, n)
            entry: dict[str, Any] = {
                "successor": succ,
                "view": view,
                "points": len(runs),
                "finished": len(done),
                "solved": solved,
                "solved_rate": solved / n if n else None,
                "solved_rate_ci95": [low, high],
                "infrastructure_failures": sum(
                    1 for r in runs.values() if r["status"] != "done" and r["failure_kind"] == "infrastructure"
                ),
                # Of those, runs another tool recorded whose record cannot be read (a damaged Harbor trial or
                # Inspect sample): not solved, and listed with the file and the reason.
                "unreadable": sum(1 for r in runs.values() if r["status"] == "unreadable"),
                "agent_failures": sum(
                    1 for r in runs.values() if r["status"] != "done" and r["failure_kind"] == "agent"
                ),
                # Finished runs whose agent stopped without submitting (a limit): no failure, and some are
                # solved; counted apart from failures.
                "unsubmitted": sum(
                    1 for r in done if (r.get("exit_status") or "submitted") != "submitted"
                ),
                # Of those, the runs the wall-time limit ended: their events, tokens and Δ columns show where the
                # limit cut them, not what their view did; the tables mark them.
                "time_limited": sum(1 for r in done if r.get("exit_status") == "time_limit"),
                "flaky": len(runs) - n,
            }
            for m in METRICS:
                entry[f"median_{m}"] = median([r[m] for r in done if r[m] is not None])
            if view != BASE_VIEW and base:
                common = sorted(set(runs) & set(base))
                entry["vs_repo_only"] = _paired_changes(base, runs, common, boot)
            out.append(entry)
    return out


def _paired_changes(base: dict, runs: dict, common: list[str], boot: _Bootstraps) -> dict:
    # A point compares the two views only when both runs finished; with none, a "+0.0 pp (p=1)" would
    # read as a measured null effect, so the solved-rate change is None (n/a) instead.
    comparable = sum(1 for p in common if base[p]["status"] == "done" and runs[p]["status"] == "done")
    verdicts = [p for p in common if not base[p].get("flaky") and not runs[p].get("flaky")]
    solved = mcnemar_exact([base[p]["resolved"] for p in verdicts], [runs[p]["resolved"] for p in verdicts])
    solved["comparable_pairs"] = comparable
    if comparable == 0:
        solved.update(difference=None, p_value=None)
    result: dict[str, Any] = {"solved_rate": solved}
    for m in METRICS:
        pairs = [
            (base[p][m], runs[p][m])
            for p in common
            if base[p]["status"] == "done" and runs[p]["status"] == "done"
            and base[p][m] is not None and runs[p][m] is not None
        ]
        a = [x for x, _ in pairs]
        b = [y for _, y in pairs]
        if m == "initial_prompt_chars":
            # Deterministic per view (no run-to-run noise worth an interval): the change of medians only.
            result[m] = {"pairs": len(pairs), "relative_change": relative_change(median(b), median(a))}
            continue
        result[m] = {"pairs": len(pairs), "relative_change": None, "ci95": [None, None]}
        boot.add(a, b, result[m])
    return result


def _groups(rows: list[dict], field: str) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups[str(r[field])].append(r)
    return dict(sorted(groups.items()))


def summarize(rows: list[dict], *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> list[dict]:
    """Per (successor, view): counts, solved rate (Wilson 95%), medians, and changes against repo_only.

    ``rows`` are takeover rows as made by :func:`takeover.report.rows.collect_rows` (a subset for a
    breakdown). Returns one dict per (successor, view) in successor then view order, with ``points``,
    ``finished``, ``solved``, ``solved_rate`` (fraction) and its ``solved_rate_ci95``, failure counts,
    ``median_<metric>`` for each of :data:`METRICS` (events, tokens, characters) and, for views other than
    ``repo_only``, ``vs_repo_only`` (see the module docstring for the rules).
    """
    boot = _Bootstraps()
    summary = _summarize(rows, boot)
    boot.run(resamples=resamples, seed=seed)
    return summary


def breakdown(rows: list[dict], field: str, *, resamples: int, seed: int) -> dict[str, list[dict]]:
    """:func:`summarize` per value of ``field`` (``handoff_state`` or ``point_type``), keys sorted."""
    boot = _Bootstraps()
    tables = {k: _summarize(v, boot) for k, v in _groups(rows, field).items()}
    boot.run(resamples=resamples, seed=seed)
    return tables


def summary_tables(rows: list[dict], *, resamples: int = DEFAULT_RESAMPLES,
                   seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """``{"summary": ..., "by_handoff_state": ..., "by_point_type": ...}``: :func:`summarize` and both
    :func:`breakdown` tables, with every bootstrap of the three computed in one batch (same numbers)."""
    boot = _Bootstraps()
    tables: dict[str, Any] = {"summary": _summarize(rows, boot)}
    for field in BREAKDOWNS:
        tables[f"by_{field}"] = {k: _summarize(v, boot) for k, v in _groups(rows, field).items()}
    boot.run(resamples=resamples, seed=seed)
    return tables
