"""Build the report of an experiment from its small per-unit result files (docs/protocol.md section 9).

Inputs, all under the experiment's output folder ``OUT``:

- ``plan.json``: the planned units of every stage with their labels (written by ``takeover run``); the
  report counts a planned unit without a result as missing, and never reads units of an older plan.
- ``units/<stage>/<key>.json``: one :class:`takeover.experiments.units.UnitResult` per unit.

Nothing here opens a trajectory: every figure comes from the units' small ``output`` records.

Outputs: ``results.csv`` (one row per takeover run), ``report.json``, ``report.md`` and the plots
``plots/events_tokens.png`` and ``plots/solved_rate.png``.

Rules of the tables (documented in ``report.md`` too):

- The unit of analysis is the handoff point. Each (successor, view) has one planned takeover run per
  point. A run that failed for infrastructure reasons (environment, repository, endpoint, harness) or is
  missing stays in the denominator of the solved rate as not solved, and is counted apart.
- Medians of agent events, cumulative prompt tokens and initial prompt characters are over the runs that
  finished.
- Changes against ``repo_only`` are paired: computed over the points where both the ``repo_only`` run
  and the view's run finished. The statistic is the relative change of medians
  (``median(view) / median(repo_only) - 1``), with a 95% percentile interval from a paired bootstrap
  that resamples handoff points (5,000 resamples, seeded). The solved-rate change is the paired
  difference in percentage points over all planned points, with an exact McNemar test.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from takeover._io import atomic_write_json, atomic_write_text
from takeover.errors import InputError
from takeover.report.stats import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    mcnemar_exact,
    median,
    paired_bootstrap_relative_median_change,
    relative_change,
    wilson_interval,
)

BASE_VIEW = "repo_only"
VIEW_ORDER = ("repo_only", "raw_trace", "summary_notes", "structured_notes")
HANDOFF_STATES = ("needs_completion", "resolved_preserve", "broke_existing", "invalid")

RESULT_COLUMNS = [
    "successor",
    "instance_id",
    "point_type",
    "handoff_state",
    "view",
    "resolved",
    "agent_events",
    "prompt_tokens",
    "completion_tokens",
    "initial_prompt_chars",
    "initial_prompt_tokens",
    "wall_seconds",
    "exit_status",
    "checkpoint_diff_preserved",
    "only_source_files_changed",
    "fail_to_pass_rate",
    "pass_to_pass_rate",
    "status",
    "failure_kind",
    "reason",
]
METRICS = ("agent_events", "prompt_tokens", "initial_prompt_chars")


class Report(BaseModel):
    """The report of one experiment; ``data`` is exactly what ``report.json`` holds.

    Attributes:
        out_dir: the experiment folder; files: paths written (``results.csv``, ``report.md``, ...).
        rows: one dict per takeover run (the columns of ``results.csv``).
        data: summary tables, Table 1 counts, note-writing tokens and unit status counts.
        markdown: the text of ``report.md``.
    """

    out_dir: str
    files: dict[str, str] = Field(default_factory=dict)
    rows: list[dict[str, Any]] = Field(default_factory=list)
    data: dict[str, Any] = Field(default_factory=dict)
    markdown: str = ""


# --- reading units ---------------------------------------------------------------------------------


def _read_unit(out: Path, stage: str, key: str) -> dict | None:
    # Plain string paths: with tens of thousands of unit files, pathlib's overhead dominates.
    try:
        with open(f"{out}/units/{stage}/{key}.json", "rb") as fh:
            unit = json.loads(fh.read())
    except (FileNotFoundError, ValueError):
        return None
    # A file whose content is another unit's (copied or renamed) counts as missing, as in the runner.
    if not isinstance(unit, dict) or unit.get("stage", stage) != stage or unit.get("key", key) != key:
        return None
    return unit


def load_plan(out_dir: Path | str) -> dict:
    """``OUT/plan.json`` (raises :class:`InputError` when it is missing or unreadable)."""
    path = Path(out_dir) / "plan.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "no plan.json here: is this the output folder of `takeover run`?") from None
    except ValueError as exc:
        raise InputError(path, f"not valid JSON: {exc}") from None


def _rate(success: list[str] | None, failure: list[str] | None) -> float | None:
    s, f = len(success or []), len(failure or [])
    return s / (s + f) if s + f else None


def collect_rows(out_dir: Path | str, plan: dict | None = None) -> tuple[list[dict], dict]:
    """One row per planned takeover run, joined with its grading and its point's handoff state.

    Returns ``(rows, status)`` where ``status`` counts units per stage as done / failed / missing.
    """
    out = Path(out_dir)
    plan = plan or load_plan(out)
    stages: dict[str, list[dict]] = plan.get("stages", {})
    status: dict[str, Counter] = {}
    results: dict[str, dict[str, dict | None]] = {}
    for stage, entries in stages.items():
        counts: Counter = Counter()
        found: dict[str, dict | None] = {}
        for entry in entries:
            unit = _read_unit(out, stage, entry["key"])
            if unit is None and entry.get("blocked"):
                counts["blocked"] += 1
            elif unit is None:
                counts["missing"] += 1
            else:
                counts[unit["status"]] += 1
                if unit["status"] == "failed":
                    counts[f"failed_{unit.get('failure_kind') or 'infrastructure'}"] += 1
            found[entry["key"]] = unit
        status[stage] = counts
        results[stage] = found

    states: dict[str, str | None] = {}
    for entry in stages.get("handoff_state", []):
        unit = results["handoff_state"].get(entry["key"])
        states[entry["labels"]["point_key"]] = (
            unit["output"].get("handoff_state") if unit and unit["status"] == "done" else None
        )
    grade_by_takeover = {e["labels"]["takeover_key"]: e["key"] for e in stages.get("grade", [])}

    rows: list[dict] = []
    for entry in stages.get("takeover", []):
        labels = entry["labels"]
        run = results["takeover"].get(entry["key"])
        grade_key = grade_by_takeover.get(entry["key"])
        grade = results.get("grade", {}).get(grade_key) if grade_key else None
        row: dict[str, Any] = {c: None for c in RESULT_COLUMNS}
        row.update(
            successor=labels["successor"],
            instance_id=labels["instance_id"],
            point_type=labels["point_type"],
            point_key=labels["point_key"],
            view=labels["view"],
            handoff_state=states.get(labels["point_key"]),
            resolved=False,
        )
        if run is not None and run["status"] == "done":
            o = run["output"]
            for c in (
                "agent_events",
                "prompt_tokens",
                "completion_tokens",
                "initial_prompt_chars",
                "initial_prompt_tokens",
                "wall_seconds",
                "exit_status",
                "checkpoint_diff_preserved",
                "only_source_files_changed",
            ):
                row[c] = o.get(c)
        failing = None
        if run is None or run["status"] == "failed":
            failing = run or (
                {"status": "blocked", "reason": entry["blocked"]}
                if entry.get("blocked")
                else {"status": "missing", "reason": "not run yet"}
            )
        elif grade is None or grade["status"] == "failed":
            failing = grade or {"status": "missing", "reason": "grading not run yet"}
        if failing is None:
            g = grade["output"]
            row["resolved"] = bool(g.get("resolved"))
            row["fail_to_pass_rate"] = g.get("fail_to_pass_rate")
            row["pass_to_pass_rate"] = g.get("pass_to_pass_rate")
            row["status"] = "done"
            row["failure_kind"] = "agent" if (row["exit_status"] or "submitted") != "submitted" else None
        else:
            row["status"] = failing["status"]
            row["failure_kind"] = failing.get("failure_kind") or "infrastructure"
            row["reason"] = failing.get("reason")
        rows.append(row)
    return rows, {k: dict(v) for k, v in status.items()}


# --- tables ----------------------------------------------------------------------------------------


def _order_views(views: list[str]) -> list[str]:
    return sorted(views, key=lambda v: (VIEW_ORDER.index(v) if v in VIEW_ORDER else len(VIEW_ORDER), v))


def summarize(rows: list[dict], *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> list[dict]:
    """Per (successor, view): counts, solved rate (Wilson 95%), medians, and changes against repo_only.

    ``rows`` are takeover rows as made by :func:`collect_rows` (a subset for a breakdown). Returns one
    dict per (successor, view) in successor then view order; see the module docstring for the rules.
    """
    by: dict[tuple[str, str], dict[str, dict]] = defaultdict(dict)
    for r in rows:
        by[(r["successor"], r["view"])][r["point_key"]] = r
    out: list[dict] = []
    successors = sorted({s for s, _ in by})
    for succ in successors:
        views = _order_views([v for s, v in by if s == succ])
        base = by.get((succ, BASE_VIEW), {})
        for view in views:
            runs = by[(succ, view)]
            n = len(runs)
            solved = sum(1 for r in runs.values() if r["resolved"])
            done = [r for r in runs.values() if r["status"] == "done"]
            low, high = wilson_interval(solved, n)
            entry: dict[str, Any] = {
                "successor": succ,
                "view": view,
                "points": n,
                "finished": len(done),
                "solved": solved,
                "solved_rate": solved / n if n else None,
                "solved_rate_ci95": [low, high],
                "infrastructure_failures": sum(
                    1 for r in runs.values() if r["status"] != "done" and r["failure_kind"] == "infrastructure"
                ),
                "agent_failures": sum(1 for r in runs.values() if r["failure_kind"] == "agent"),
            }
            for m in METRICS:
                entry[f"median_{m}"] = median([r[m] for r in done if r[m] is not None])
            if view != BASE_VIEW and base:
                common = sorted(set(runs) & set(base))
                entry["vs_repo_only"] = _paired_changes(base, runs, common, resamples=resamples, seed=seed)
            out.append(entry)
    return out


def _paired_changes(base: dict, runs: dict, common: list[str], *, resamples: int, seed: int) -> dict:
    # A point compares the two views only when both runs finished; with none, a "+0.0 pp (p=1)" would
    # read as a measured null effect, so the solved-rate change is None (n/a) instead.
    comparable = sum(1 for p in common if base[p]["status"] == "done" and runs[p]["status"] == "done")
    solved = mcnemar_exact([base[p]["resolved"] for p in common], [runs[p]["resolved"] for p in common])
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
        est, low, high = paired_bootstrap_relative_median_change(a, b, resamples=resamples, seed=seed)
        result[m] = {"pairs": len(pairs), "relative_change": est, "ci95": [low, high]}
    return result


def breakdown(rows: list[dict], field: str, *, resamples: int, seed: int) -> dict[str, list[dict]]:
    """:func:`summarize` per value of ``field`` (``handoff_state`` or ``point_type``)."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups[str(r[field])].append(r)
    return {k: summarize(v, resamples=resamples, seed=seed) for k, v in sorted(groups.items())}


def table1(out: Path, plan: dict) -> dict:
    """Counts of handoff points per type and handoff state (paper Table 1), and missing points per type."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for entry in plan.get("stages", {}).get("handoff_state", []):
        unit = _read_unit(out, "handoff_state", entry["key"])
        state = unit["output"].get("handoff_state") if unit and unit["status"] == "done" else "ungraded"
        counts[entry["labels"]["point_type"]][state or "ungraded"] += 1
    wanted = set(plan.get("point_types") or [])
    missing: dict[str, list[dict]] = defaultdict(list)
    for entry in plan.get("stages", {}).get("points", []):
        unit = _read_unit(out, "points", entry["key"])
        if unit and unit["status"] == "done":
            for m in unit["output"].get("missing", []):
                if not wanted or m["type"] in wanted:
                    missing[m["type"]].append({"instance_id": entry["labels"].get("instance_id"),
                                               "reason": m.get("reason") or "missing"})
    total: Counter = Counter()
    for c in counts.values():
        total.update(c)
    return {
        "points": {k: dict(v) for k, v in sorted(counts.items())},
        "total": dict(total),
        "missing_points": {k: sorted(v, key=lambda m: str(m["instance_id"])) for k, v in sorted(missing.items())},
    }


def grading_warnings(out: Path, plan: dict) -> dict[str, list[str]]:
    """Warnings of the grading units (``handoff_state`` and ``grade``) per ``instance_id``, e.g. the
    task's tests need the network and grading ran without it (:data:`takeover.grading.NETWORK_REPOS`).
    Returns ``{instance_id: [warning, ...]}`` sorted, each warning once."""
    found: dict[str, set[str]] = defaultdict(set)
    for stage in ("handoff_state", "grade"):
        for entry in plan.get("stages", {}).get(stage, []):
            unit = _read_unit(out, stage, entry["key"])
            if unit and unit.get("status") == "done":
                for w in (unit.get("output") or {}).get("warnings") or []:
                    found[str(entry["labels"].get("instance_id"))].add(w)
    return {iid: sorted(ws) for iid, ws in sorted(found.items())}


def note_tokens(out: Path, plan: dict) -> dict:
    """Tokens spent writing notes, per view (reported apart from the successors' tokens, section 9)."""
    acc: dict[str, Counter] = defaultdict(Counter)
    for entry in plan.get("stages", {}).get("view", []):
        unit = _read_unit(out, "view", entry["key"])
        if unit is None:
            continue
        c = acc[entry["labels"]["view"]]
        c["units"] += 1
        c["prompt_tokens"] += unit.get("prompt_tokens", 0)
        c["completion_tokens"] += unit.get("completion_tokens", 0)
        if unit["status"] == "done" and unit["output"].get("characters") is not None:
            c["characters_total"] += unit["output"]["characters"]
    return {v: dict(acc[v]) for v in _order_views(list(acc))}


# --- rendering -------------------------------------------------------------------------------------


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None) -> str:
    if x is None:
        return "n/a"
    if abs(x) >= 1e6:
        return f"{x / 1e6:.2f}M"
    if abs(x) >= 1e4:
        return f"{x / 1e3:.0f}k"
    return f"{x:g}"


def _change(c: dict | None) -> str:
    if not c or c.get("relative_change") is None:
        return ""
    text = f"{100 * c['relative_change']:+.0f}%"
    ci = c.get("ci95")
    if ci and ci[0] is not None:
        text += f" [{100 * ci[0]:+.0f}, {100 * ci[1]:+.0f}]"
    return text


def _table(summary: list[dict]) -> str:
    head = (
        "| successor | view | points | solved | Δ solved (McNemar p) | median events | Δ events [95% CI] "
        "| median prompt tokens | Δ tokens [95% CI] | median initial prompt chars | Δ chars | infra fail | agent fail |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for e in summary:
        vs = e.get("vs_repo_only") or {}
        s = vs.get("solved_rate")
        if not s:
            solved_change = ""
        elif s["difference"] is None or s.get("p_value") is None:
            solved_change = "n/a"
        else:
            solved_change = f"{100 * s['difference']:+.1f} pp (p={s['p_value']:.3g})"
        lines.append(
            f"| {e['successor']} | {e['view']} | {e['points']} | {_pct(e['solved_rate'])} | {solved_change} "
            f"| {_num(e['median_agent_events'])} | {_change(vs.get('agent_events'))} "
            f"| {_num(e['median_prompt_tokens'])} | {_change(vs.get('prompt_tokens'))} "
            f"| {_num(e['median_initial_prompt_chars'])} | {_change(vs.get('initial_prompt_chars'))} "
            f"| {e['infrastructure_failures']} | {e['agent_failures']} |"
        )
    return head + "\n".join(lines) + "\n"


def render_markdown(data: dict) -> str:
    """``report.md``: the main table, breakdowns, Table 1, note-writing tokens and unit status."""
    md = io.StringIO()
    md.write(f"# Handoff debt report: {data.get('name', 'experiment')}\n\n")
    md.write(
        "One takeover run per (handoff point, view, successor). Solved rate counts every planned run; runs "
        "that failed for infrastructure reasons or are missing count as not solved and are listed apart. "
        "Medians are over finished runs. Δ columns compare each view with `repo_only` on the same handoff "
        "points: solved-rate difference in percentage points with an exact McNemar p-value; events, "
        "tokens and characters as the relative change of medians, with a 95% paired bootstrap interval "
        f"over handoff points ({data['bootstrap']['resamples']} resamples, seed {data['bootstrap']['seed']}).\n\n"
    )
    md.write("## All handoff points\n\n" + _table(data["summary"]) + "\n")
    for field, title in (("by_handoff_state", "By handoff state"), ("by_point_type", "By handoff point type")):
        md.write(f"## {title}\n\n")
        for key, summary in data[field].items():
            md.write(f"### {key}\n\n" + _table(summary) + "\n")
    t1 = data["table1"]
    states = sorted({s for c in t1["points"].values() for s in c}, key=lambda s: (
        HANDOFF_STATES.index(s) if s in HANDOFF_STATES else 99, s))
    md.write("## Handoff points per type and state (Table 1)\n\n")
    md.write("| point type | " + " | ".join(states) + " | total |\n|---|" + "---|" * (len(states) + 1) + "\n")
    for ptype, c in t1["points"].items():
        md.write(f"| {ptype} | " + " | ".join(str(c.get(s, 0)) for s in states) + f" | {sum(c.values())} |\n")
    md.write("| total | " + " | ".join(str(t1["total"].get(s, 0)) for s in states)
             + f" | {sum(t1['total'].values())} |\n\n")
    if t1["missing_points"]:
        md.write("Missing points (never replaced by a fallback):\n\n")
        for ptype, items in t1["missing_points"].items():
            for m in items:
                md.write(f"- {ptype}, {m['instance_id']}: {m['reason']}\n")
        md.write("\n")
    if data.get("warnings"):
        md.write("## Warnings\n\nGrading results that may not match the official SWE-bench harness:\n\n")
        for iid, ws in data["warnings"].items():
            for w in ws:
                md.write(f"- {iid}: {w}\n")
        md.write("\n")
    md.write("## Note-writing tokens (not included in the successors' tokens)\n\n")
    md.write("| view | views built | prompt tokens | completion tokens |\n|---|---|---|---|\n")
    for view, c in data["note_writing"].items():
        md.write(f"| {view} | {c.get('units', 0)} | {c.get('prompt_tokens', 0)} | {c.get('completion_tokens', 0)} |\n")
    md.write("\n## Units of work\n\n| stage | done | failed (infrastructure) | failed (agent) | missing | blocked |\n")
    md.write("|---|---|---|---|---|---|\n")
    for stage, c in data["units"].items():
        md.write(f"| {stage} | {c.get('done', 0)} | {c.get('failed_infrastructure', 0)} | {c.get('failed_agent', 0)} "
                 f"| {c.get('missing', 0)} | {c.get('blocked', 0)} |\n")
    return md.getvalue()


def write_csv(path: Path, rows: list[dict]) -> None:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=RESULT_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    def order(r: dict) -> tuple:
        rank = VIEW_ORDER.index(r["view"]) if r["view"] in VIEW_ORDER else len(VIEW_ORDER)
        return (r["successor"], r["instance_id"], r["point_type"], rank, r["view"])

    for r in sorted(rows, key=order):
        writer.writerow(r)
    atomic_write_text(path, buf.getvalue())


def build_report(out_dir: Path | str, *, plots: bool = True) -> Report:
    """Read ``OUT/plan.json`` and the unit files, write ``results.csv``, ``report.json``, ``report.md``
    and (with ``plots``) the PNG plots; return the :class:`Report`.

    Raises:
        InputError: ``out_dir`` has no ``plan.json``.
    """
    out = Path(out_dir)
    plan = load_plan(out)
    boot = plan.get("bootstrap", {})
    resamples = int(boot.get("resamples", DEFAULT_RESAMPLES))
    seed = int(boot.get("seed", DEFAULT_SEED))
    rows, units = collect_rows(out, plan)
    data: dict[str, Any] = {
        "name": plan.get("name", "experiment"),
        "bootstrap": {"resamples": resamples, "seed": seed, "statistic": "relative change of medians, paired"},
        "takeover_runs": len(rows),
        "summary": summarize(rows, resamples=resamples, seed=seed),
        "by_handoff_state": breakdown(rows, "handoff_state", resamples=resamples, seed=seed),
        "by_point_type": breakdown(rows, "point_type", resamples=resamples, seed=seed),
        "table1": table1(out, plan),
        "note_writing": note_tokens(out, plan),
        "warnings": grading_warnings(out, plan),
        "units": units,
    }
    report = Report(out_dir=str(out), rows=rows, data=data, markdown=render_markdown(data))
    write_csv(out / "results.csv", rows)
    atomic_write_json(out / "report.json", data)
    atomic_write_text(out / "report.md", report.markdown)
    report.files = {"results.csv": str(out / "results.csv"), "report.json": str(out / "report.json"),
                    "report.md": str(out / "report.md")}
    if plots and rows:
        from takeover.report.plots import write_plots

        report.files.update(write_plots(out / "plots", data["summary"]))
    return report
