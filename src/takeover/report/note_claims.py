"""The report's claims check of model-written notes (docs/protocol.md section 7.6, Extension): per note view
the claims per note and the shares unsupported and contradicted, beside solved, events and tokens in every
summary table; a section with the figures per kind of claim, the model judge's figures apart and what the
rules do not read; and, in the drill-down, each note's claims marked and linked to their events.

The check of each view unit comes from :func:`takeover.claims.study_claims` (stored with the unit, computed
once for a folder written before). Rules of the figures:

- a summary entry (successor, view) counts the notes of that view at the entry's points (the points of its
  rows), whether or not their takeover run finished: a note is checked once, whatever the successor;
- claims per note is the mean over those notes; the shares are of all their claims (pooled);
- a judge's verdicts are counted in their own table and never change the rules' figures.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from takeover.claims import CLAIM_KINDS, VERDICTS, ViewClaims, study_claims, summary_of
from takeover.claims.unit_claims import stored_path
from takeover.rediscovery.study import load_record
from takeover.report.rows import order_views

#: Clauses listed as what the rules do not read (the most frequent first).
MAX_UNCLAIMED = 30


def claims_section(out: Path) -> dict[str, Any]:
    """The ``claims`` section of ``report.json``: ``views`` (one entry per checked view: its figures over
    all notes, ``by_kind`` and, when a judge ran, ``judge``), ``points`` (``{point_key: {view: figures}}``,
    for the summary tables), ``not_computed`` (view unit keys with why) and ``unclaimed`` (clauses no rule
    read, with counts)."""
    checks = study_claims(out)
    by_view: dict[str, list[ViewClaims]] = defaultdict(list)
    points: dict[str, dict[str, dict]] = defaultdict(dict)
    for c in checks:
        if c.figures is not None and c.view:
            by_view[c.view].append(c)
            points[str(c.point_key)][c.view] = c.figures
    views = []
    for view in order_views(list(by_view)):
        found = by_view[view]
        entry: dict[str, Any] = {"view": view, **summary_of([c.figures for c in found])}
        entry["by_kind"] = {k: {v: sum((c.figures.get("by_kind") or {}).get(k, {}).get(v, 0) for c in found)
                                for v in VERDICTS} for k in CLAIM_KINDS}
        entry["by_kind"] = {k: n for k, n in entry["by_kind"].items() if sum(n.values())}
        judged = [c.judge for c in found if c.judge]
        if judged:
            entry["judge"] = _judge_summary(judged)
        views.append(entry)
    unclaimed: Counter[str] = Counter(text for c in checks for text in c.unclaimed or [])
    return {
        "views": views,
        "points": dict(points),
        "not_computed": {c.key: c.reason for c in checks if c.figures is None},
        "unclaimed": dict(sorted(unclaimed.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_UNCLAIMED]),
    }


def _judge_summary(judged: list[dict]) -> dict[str, Any]:
    verdicts: Counter[str] = Counter(v["verdict"] for j in judged for v in j.get("verdicts", []))
    return {"notes": len(judged), "model": judged[0].get("model"), "judged": sum(verdicts.values()),
            **{v: verdicts.get(v, 0) for v in ("supported", "unsupported", "contradicted", "no_answer")}}


def add_claim_figures(tables: dict[str, Any], section: dict[str, Any], rows: list[dict]) -> None:
    """Give each entry of the summary tables (all points, and each breakdown) whose view is checked its
    ``claims`` figures over the notes of that view at the entry's points (module docstring)."""
    notes = section.get("points") or {}
    if not notes:
        return
    where: dict[tuple, set[str]] = defaultdict(set)
    for r in rows:
        where[("summary", None, r["successor"], r["view"])].add(r["point_key"])
        for field in ("handoff_state", "point_type"):
            where[(f"by_{field}", str(r[field]), r["successor"], r["view"])].add(r["point_key"])

    def fill(entries: list[dict], table: str, group: str | None) -> None:
        for e in entries:
            keys = where.get((table, group, e["successor"], e["view"]), set())
            found = [notes[p][e["view"]] for p in sorted(keys) if e["view"] in notes.get(p, {})]
            if found:
                e["claims"] = summary_of(found)

    fill(tables.get("summary") or [], "summary", None)
    for table in ("by_handoff_state", "by_point_type"):
        for group, entries in (tables.get(table) or {}).items():
            fill(entries, table, group)


def claim_cells(entry: dict) -> tuple[str, str, str]:
    """The summary table's three claims cells of an entry: claims per note, unsupported and contradicted
    shares (empty for a view whose notes are not checked)."""
    c = entry.get("claims")
    if not c or c.get("claims_per_note") is None:
        return "", "", ""

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.0f}%"

    return f"{c['claims_per_note']:g}", pct(c["unsupported_share"]), pct(c["contradicted_share"])


def claims_markdown(section: dict[str, Any]) -> str:
    """The claims section of ``report.md``."""
    views = section.get("views") or []
    if not views and not section.get("not_computed"):
        return ""
    lines = ["", "## Claims of the notes checked against the trace", "",
             ("Each claim a model-written note makes (a file, lines, a command, a test and its outcome, an edit, "
              "an error, a function) checked against the predecessor's events up to the cut (docs/protocol.md "
              "section 7.6): supported, unsupported (no event shows it) or contradicted (an event shows "
              "otherwise). Shares are of all claims of the view's notes."), "",
             "| view | notes | claims | claims per note | supported | unsupported | contradicted |",
             "|---|---|---|---|---|---|---|"]
    for v in views:
        lines.append(f"| {v['view']} | {v['notes']} | {v['claims']} | {v['claims_per_note']} | {v['supported']} "
                     f"| {v['unsupported']} ({_pct(v['unsupported_share'])}) "
                     f"| {v['contradicted']} ({_pct(v['contradicted_share'])}) |")
    kinds = [(v["view"], k, n) for v in views for k, n in v.get("by_kind", {}).items()]
    if kinds:
        lines += ["", "| view | kind of claim | supported | unsupported | contradicted |", "|---|---|---|---|---|"]
        lines += [f"| {view} | {k} | {n['supported']} | {n['unsupported']} | {n['contradicted']} |"
                  for view, k, n in kinds]
    judged = [v for v in views if v.get("judge")]
    if judged:
        lines += ["", ("A model judge's verdicts on the claims the rules left unsupported (recorded apart; the "
                  "figures above are the rules' alone):"), "",
                  "| view | judge | notes | claims judged | supported | unsupported | contradicted | no answer |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {v['view']} | {v['judge']['model']} | {v['judge']['notes']} | {v['judge']['judged']} "
                  f"| {v['judge']['supported']} | {v['judge']['unsupported']} | {v['judge']['contradicted']} "
                  f"| {v['judge']['no_answer']} |" for v in judged]
    if section.get("unclaimed"):
        lines += ["", "Clauses of the notes in which the rules found no claim (most frequent): " + "; ".join(
            f"\"{t[:80]}\" ({n})" for t, n in list(section["unclaimed"].items())[:10])]
    if section.get("not_computed"):
        lines += ["", "Not checked: " + "; ".join(f"{k}: {why}" for k, why in section["not_computed"].items())]
    lines.append("")
    return "\n".join(lines)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def mark_claims(section: Any, out: Path, view_keys: dict[str, str]) -> None:
    """Give the drill-down ``section`` each checked view's note with its claims marked and the predecessor
    events they cite (``view_keys``: ``{view: view unit key}`` of the section's point)."""
    from_stored: dict[str, Any] = {}
    for view, key in view_keys.items():
        stored = _stored(out, key)
        if stored and stored.get("claims") is not None:
            from_stored[view] = {k: stored.get(k) for k in ("note", "fields", "claims", "figures", "events", "judge")
                                 if stored.get(k) is not None}
    section.claims = from_stored


def _stored(out: Path, key: str) -> dict | None:
    return load_record(stored_path(out, key))
