"""A view's note checked against the predecessor's trace: the note found in the takeover prompt, the fields
of a structured note, the check (docs/protocol.md section 7.6, Extension).

A view's prompt holds its note between ``<previous_agent view="...">`` and ``</previous_agent>``
(docs/protocol.md section 7.1). A structured note's model-filled fields are read from the record as the
packaged template renders it (``- Work completed: ...``); a record a user's template renders otherwise is
checked as free text.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from takeover._util.io import atomic_write_json
from takeover.claims.claim_rules import NoteCheck, check_note, checks_claims
from takeover.claims.claims_judge import judge_unsupported
from takeover.claims.trace_facts import TraceFacts, trace_facts
from takeover.llm import ModelClient
from takeover.trajectories.events import Trajectory
from takeover.views.evidence import event_body, event_header
from takeover.views.structured import MODEL_FIELDS
from takeover.views.view_registry import written_part

#: Characters of an event shown beside the claims it supports or contradicts.
EXCERPT = 600
#: The line of the packaged ``summary_notes`` block that comes before the note.
SUMMARY_HEADER = "Notes about the previous agent's work, written from its event log:"
#: The labels of the model-filled fields in the packaged ``structured_notes`` block, by field.
FIELD_LABELS: dict[str, str] = {
    "problem_understanding": "Problem understanding",
    "work_completed": "Work completed",
    "evidence_observed": "Evidence observed",
    "observed_failures": "Observed failures or error evidence",
    "remaining_uncertainty": "Remaining uncertainty",
    "rollback_notes": "Rollback notes",
    "recommended_next_action": "Recommended next action",
}
_MODEL_HALF = "Notes written from the event log:"


def note_block(prompt: str, view: str) -> str | None:
    """The view block of ``prompt`` (between ``<previous_agent view="VIEW">`` and ``</previous_agent>``),
    without the packaged summary header, and only the part a model wrote
    (:func:`takeover.views.view_registry.written_part`); ``None`` when the prompt has none."""
    m = re.search(rf'<previous_agent view="{re.escape(view)}">\n?(.*?)\n?</previous_agent>', prompt, re.DOTALL)
    if m is None:
        return None
    block = m.group(1)
    return written_part(view, block.split(SUMMARY_HEADER, 1)[1].strip() if SUMMARY_HEADER in block else block.strip())


def structured_fields(block: str) -> dict[str, str] | None:
    """The model-filled fields of a structured record rendered by the packaged template, else ``None``."""
    if _MODEL_HALF not in block:
        return None
    half = block.split(_MODEL_HALF, 1)[1]
    fields: dict[str, str] = {}
    for name, label in FIELD_LABELS.items():
        m = re.search(rf"^- {re.escape(label)}: (.*)$", half, re.MULTILINE)
        if m:
            fields[name] = m.group(1).strip()
    return fields if set(fields) == set(MODEL_FIELDS) else None


def check_view_note(view: str, note: str, facts: TraceFacts, *, fields: dict[str, str] | None = None) -> NoteCheck | None:
    """The check of one view's note (``None`` for a view whose claims are not checked, see
    :func:`takeover.claims.checks_claims`). ``fields``: a structured note's model-filled fields, when known;
    else they are read from ``note`` when it is a packaged structured record."""
    if not checks_claims(view):
        return None
    return check_note(note, facts, fields=fields if fields is not None else structured_fields(note))


def check_prompt(view: str, prompt: str, trajectory: Trajectory, cut_event: int, *, checkpoint_patch: str | None,
                 problem_statement: str = "", fields: dict[str, str] | None = None,
                 facts: TraceFacts | None = None) -> dict[str, Any] | None:
    """The check of the note in a view's takeover ``prompt`` as a JSON object (``cut_event``, ``figures``,
    ``claims``, ``unclaimed``), or ``None`` for a view whose claims are not checked.

    Args:
        trajectory, cut_event: the predecessor run and the cut (0-based event index).
        checkpoint_patch: the cumulative diff at the cut (``None``: not known).
        problem_statement: the task's text.
        fields: a structured note's model-filled fields, when known.
        facts: the record of the cut when already built for another view.

    Raises:
        ValueError: the prompt holds no view block, or ``cut_event`` is not an event of the run.
    """
    if not checks_claims(view):
        return None
    note = note_block(prompt, view)
    if note is None:
        raise ValueError(f"the {view} prompt holds no <previous_agent view=\"{view}\"> block")
    facts = facts or trace_facts(trajectory, cut_event, checkpoint_patch=checkpoint_patch,
                                 problem_statement=problem_statement)
    fields = fields if fields is not None else structured_fields(note)
    check = check_view_note(view, note, facts, fields=fields)
    if check is None:
        return None
    cited: dict[int, str] = {}
    for c in check.claims:
        if c.event is not None and c.event not in cited:
            cited[c.event] = excerpt(trajectory, c.event, c.claim.subject)
    return {"view": view, "cut_event": cut_event, "note": note, "fields": fields, **check.to_json(),
            "events": {str(k): cited[k] for k in sorted(cited)}}


def excerpt(trajectory: Trajectory, index: int, needle: str = "") -> str:
    """Event ``index`` as the drill-down shows it beside a claim: its ``[step N | source | type]`` header and
    at most :data:`EXCERPT` characters of its text (an action's command or editor arguments, an
    observation's output), around ``needle`` when the text holds it."""
    event = trajectory.events[index]
    # An action is shown by what it did (its command, or the editor's path and texts), not by its thought.
    done = [v for v in (event.command, event.path, event.old_text, event.new_text, event.file_text) if v]
    body = "\n".join(done) if event.kind == "action" and done else event_body(event)
    at = body.find(needle) if needle else -1
    if len(body) > EXCERPT:
        start = max(0, min(at - EXCERPT // 3, len(body) - EXCERPT)) if at >= 0 else 0
        body = ("..." if start else "") + body[start:start + EXCERPT] + ("..." if start + EXCERPT < len(body) else "")
    return f"{event_header(event)}\n{body}"


def check_views_folder(folder: Path | str, views: dict[str, dict[str, Any]], trajectory: Trajectory, cut_event: int, *,
                       checkpoint_patch: str | None, problem_statement: str = "",
                       judge: ModelClient | None = None) -> dict[str, dict[str, Any]]:
    """Check the notes of a views folder (``takeover views``: ``<view>.md`` and ``views.json``, whose per-view
    rows are ``views``) and, when any is, write ``claims.json`` beside them: ``{view: check}`` for each built view whose
    claims are checked (a view that could not be checked maps to ``{"error": why}``). With ``judge``, the
    claims the rules leave unsupported are also judged by that model (``judge`` in each check, apart)."""
    folder = Path(folder)
    facts = None
    found: dict[str, dict[str, Any]] = {}
    for view, row in views.items():
        if not checks_claims(view) or not row.get("file"):
            continue
        fields = ((row.get("structured") or {}).get("notes")) or None
        try:
            prompt = (folder / row["file"]).read_bytes().decode("utf-8")
            facts = facts or trace_facts(trajectory, cut_event, checkpoint_patch=checkpoint_patch,
                                         problem_statement=problem_statement)
            check = check_prompt(view, prompt, trajectory, cut_event, checkpoint_patch=checkpoint_patch,
                                 fields=fields, facts=facts)
        except (OSError, ValueError) as exc:
            found[view] = {"error": str(exc)}
            continue
        if check is not None:
            if judge is not None:
                check["judge"] = judge_unsupported(check, trajectory, problem_statement, judge)
            found[view] = check
    if found:
        atomic_write_json(folder / "claims.json", {"cut_event": cut_event, "views": found})
    return found
