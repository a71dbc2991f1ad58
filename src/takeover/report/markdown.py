"""``report.md``: the report's tables as Markdown (docs/protocol.md section 9).

Sections: the folder's notice when it has one (:mod:`takeover.report.notice`), the main table (all handoff
points; for a view whose notes are checked, its claims per note and shares unsupported and contradicted,
:mod:`takeover.report.note_claims`), the breakdowns by handoff state and by point type, Table 1 (handoff points per type and state, and
the missing points), the runs not imported (and why), grading warnings, note-writing tokens and the units of
work per stage. Numbers are formatted here only; every figure comes from ``report.json``.
"""

from __future__ import annotations

import io

from takeover.report.isolation_warning import isolation_markdown, isolation_table
from takeover.report.note_claims import claim_cells
from takeover.report.notice import notice_markdown
from takeover.report.rows import order_states


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def format_number(x: float | None) -> str:
    """A median as the tables print it: ``n/a``, ``1.5``, ``12k``, ``2.30M``."""
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
        "| median prompt tokens | Δ tokens [95% CI] | claims per note | unsupported claims | contradicted claims "
        "| median initial prompt chars | Δ chars | infra fail | agent fail | ended unsubmitted | flaky |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
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
            f"| {format_number(e['median_agent_events'])} | {_change(vs.get('agent_events'))} "
            f"| {format_number(e['median_prompt_tokens'])} | {_change(vs.get('prompt_tokens'))} "
            f"| {' | '.join(claim_cells(e))} "
            f"| {format_number(e['median_initial_prompt_chars'])} | {_change(vs.get('initial_prompt_chars'))} "
            f"| {_infrastructure(e)} | {e['agent_failures']} | {_unsubmitted(e)} | {e.get('flaky', 0)} |"
        )
    return head + "\n".join(lines) + "\n"


def _infrastructure(entry: dict) -> str:
    unreadable = entry.get("unreadable") or 0
    return f"{entry['infrastructure_failures']}" + (f" ({unreadable} unreadable)" if unreadable else "")


def unreadable_markdown(records: list[dict]) -> str:
    """The section that lists other tools' records the report could not read ("" when none): each file and
    why, and whether the run counts in the tables (as not solved, ``unreadable``) or could not be placed."""
    if not records:
        return ""
    placed = sum(1 for r in records if r.get("takeover_key"))
    unplaced = len(records) - placed
    lines = [f"## Unreadable records\n\n{len(records)} record(s) of other tools could not be read. "
             + (f"{placed} count in the tables above as runs not solved (infra fail, unreadable). " if placed else "")
             + (f"{unplaced} name no run that could be placed in the tables. " if unplaced else "")
             + "Fix or remove each file and build the report again.\n\n"]
    lines += [f"- {r['reason']}" + ("" if r.get("takeover_key") else " (not in the tables)") + "\n" for r in records]
    return "".join(lines) + "\n"


def repeated_markdown(repeated: list[dict]) -> str:
    """The section that lists runs of another tool left out of the tables because their (successor, point,
    view) has a run already ("" when none): the tables hold one run per handoff point and view."""
    if not repeated:
        return ""
    lines = [(f"## Runs not counted\n\n{len(repeated)} run(s) repeat a (successor, handoff point, view) that "
              "already has one (another attempt of a Harbor trial, another epoch of an Inspect sample). The "
              "tables count one run per point and view, the first found; these are left out:\n\n")]
    lines += [f"- {r['takeover_key']} ({r['successor']}, {r['point_key']}, {r['view']}): {r['counted']} is counted\n"
              for r in repeated]
    return "".join(lines) + "\n"


def _unsubmitted(entry: dict) -> str:
    time_limited = entry.get("time_limited") or 0
    return f"{entry.get('unsubmitted', 0)}" + (f" ({time_limited} time limit)" if time_limited else "")


def time_limited_note(summary: list[dict]) -> str:
    """The sentence under a table that names the views whose runs the wall-time limit ended ("" when none):
    their events, tokens and changes are where the limit cut them, not what their view did."""
    marked = [f"{e['view']} ({e['successor']}): {e['time_limited']} of {e['points']}"
              for e in summary if e.get("time_limited")]
    if not marked:
        return ""
    return ("Time-limited runs, ended by their wall-time limit: " + "; ".join(marked) + ". Their events, "
            "tokens and Δ columns show where the limit cut them, not what their view did.\n")


def render_markdown(data: dict) -> str:
    """``report.md``: the main table, breakdowns, Table 1, note-writing tokens and unit status."""
    md = io.StringIO()
    md.write(f"# Handoff debt report: {data.get('name', 'experiment')}\n\n")
    if data.get("notice"):
        md.write(notice_markdown(data["notice"]))
    md.write(isolation_markdown(data.get("isolation")))
    md.write(
        "One takeover run per (handoff point, view, successor). Solved rate counts every planned run; runs "
        "that failed for infrastructure reasons or are missing count as not solved and are listed apart. "
        "Medians are over finished runs. Δ columns compare each view with `repo_only` on the same handoff "
        "points: solved-rate difference in percentage points with an exact McNemar p-value; events, "
        "tokens and characters as the relative change of medians, with a 95% paired bootstrap interval "
        f"over handoff points ({data['bootstrap']['resamples']} resamples, seed {data['bootstrap']['seed']}).\n\n"
    )
    md.write("## All handoff points\n\n" + _table(data["summary"]) + "\n")
    md.write(isolation_table(data.get("isolation")))
    if time_limited_note(data["summary"]):
        md.write(time_limited_note(data["summary"]) + "\n")
    md.write(unreadable_markdown(data.get("unreadable_records") or []))
    md.write(repeated_markdown(data.get("repeated_runs") or []))
    for field, title in (("by_handoff_state", "By handoff state"), ("by_point_type", "By handoff point type")):
        md.write(f"## {title}\n\n")
        for key, summary in data[field].items():
            md.write(f"### {key}\n\n" + _table(summary) + "\n")
    t1 = data["table1"]
    states = order_states(list({s for c in t1["points"].values() for s in c}))
    md.write("## Handoff points per type and state (Table 1)\n\n")
    if not states:
        md.write("No handoff point has a handoff state yet.\n\n")
    else:
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
    if data.get("not_imported") or data.get("import_notes"):
        md.write("## Runs not imported\n\n")
        for iid, why in data.get("not_imported", {}).items():
            md.write(f"- {iid}: {why}\n")
        for note in data.get("import_notes", []):
            md.write(f"- {note}\n")
        md.write("\n")
    rules = data.get("grading_rules") or {}
    if len(rules) > 1:  # docs/protocol.md section 6, extension "Grading rules": never pooled silently
        md.write("## Verdicts decided under different rules\n\nThe verdicts below pool gradings decided under "
                 + ", ".join(f"{name} ({n} grading(s))" for name, n in rules.items())
                 + " (docs/swebench5.md); grade them again under one rule set (--force) to compare like with like.\n\n")
    if data.get("warnings"):
        md.write("## Warnings\n\nGrading results that may not match the official SWE-bench harness:\n\n")
        for iid, ws in data["warnings"].items():
            for w in ws:
                md.write(f"- {iid}: {w}\n")
        md.write("\n")
    md.write("## Views: sizes and note-writing tokens (not included in the successors' tokens)\n\n")
    md.write("| view | views built | mean characters | mean estimated tokens | note prompt tokens | note completion tokens |"
             "\n|---|---|---|---|---|---|\n")
    for view, c in data["note_writing"].items():
        built = c.get("units", 0)
        md.write(f"| {view} | {built} | {_mean(c.get('characters_total', 0), built)} | "
                 f"{_mean(c.get('estimated_tokens_total', 0), built)} | {c.get('prompt_tokens', 0)} | "
                 f"{c.get('completion_tokens', 0)} |\n")
    md.write("\n## Units of work\n\n| stage | done | failed (infrastructure) | failed (agent) | missing | blocked |\n")
    md.write("|---|---|---|---|---|---|\n")
    for stage, c in data["units"].items():
        md.write(f"| {stage} | {c.get('done', 0)} | {c.get('failed_infrastructure', 0)} | {c.get('failed_agent', 0)} "
                 f"| {c.get('missing', 0)} | {c.get('blocked', 0)} |\n")
    return md.getvalue()


def _mean(total: int, units: int) -> str:
    return f"{total / units:,.0f}" if units and total else "-"
