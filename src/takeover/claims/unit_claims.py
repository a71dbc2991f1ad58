"""The claims check of a study's notes, stored with each view unit (docs/protocol.md section 7.6, Extension).

A view unit's check is computed from files the study already holds: the view's takeover prompt (the unit's
``output.path``), the predecessor's trajectory and the cut (the checkpoint unit of its point), the
checkpoint patch and the task. No model is called. It is stored as ``OUT/work/view/<key>/claims.json``
(beside the unit's other work) with the hash of the prompt it read, and read back from there while the
prompt is the same, so ``takeover report`` on a folder written before the check existed computes it once.
A model judge's verdicts (:mod:`takeover.claims.claims_judge`) are kept in the same file under ``judge``,
apart from the rules' figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from takeover._util.io import atomic_write_json, sha256_text
from takeover.claims.claim_rules import checks_claims
from takeover.claims.claims_judge import judge_unsupported
from takeover.claims.note_checks import check_prompt
from takeover.claims.trace_facts import trace_facts
from takeover.errors import InputError, TakeoverError
from takeover.llm import ModelClient, ModelSettings
from takeover.rediscovery.study import (
    cached_predecessor,
    checkpoint_record,
    load_record,
    point_cut,
    relocated,
)
from takeover.views import view_of

#: File name of a view unit's stored check, in the unit's work folder.
CLAIMS_FILE = "claims.json"
#: Version of the stored record: a record of another version is computed again (raise it when a rule of
#: docs/protocol.md section 7.6 changes, so that stored checks follow the rules).
CLAIMS_VERSION = 1


@dataclass
class ViewClaims:
    """The claims check of one view unit: its labels (``instance_id``, ``point_key``, ``point_type``,
    ``view``), ``cut_event``, ``figures`` (:meth:`takeover.claims.NoteCheck.figures`), ``claims`` (each with
    its verdict, event and reason), ``unclaimed`` clauses and the model ``judge``'s record when one was
    run; or ``figures`` ``None`` and the ``reason`` (a prompt or trajectory that is gone)."""

    key: str
    instance_id: str | None
    point_key: str | None
    point_type: str | None
    view: str | None
    cut_event: int | None = None
    figures: dict[str, Any] | None = None
    claims: list[dict[str, Any]] | None = None
    unclaimed: list[str] | None = None
    judge: dict[str, Any] | None = None
    note: str | None = None
    fields: dict[str, str] | None = None
    events: dict[str, str] | None = None
    reason: str | None = None
    path: str | None = None

    def record(self) -> dict[str, Any]:
        """What ``claims.json`` holds besides its version, key and prompt hash."""
        return {"view": self.view, "cut_event": self.cut_event, "note": self.note, "fields": self.fields,
                "figures": self.figures, "claims": self.claims, "unclaimed": self.unclaimed, "events": self.events,
                **({"judge": self.judge} if self.judge else {})}


def stored_path(out: Path, key: str) -> Path:
    """Where view unit ``key``'s check is stored."""
    return out / "work" / "view" / key / CLAIMS_FILE


def _read(path: Path | None) -> str | None:
    try:
        return path.read_bytes().decode("utf-8") if path else None
    except OSError:
        return None


def _prompt(out: Path, unit: dict, checkpoint: dict | None, view: str) -> str | None:
    recorded = relocated((unit.get("output") or {}).get("path"), out)
    if recorded is None and checkpoint:
        cp_dir = relocated((checkpoint.get("output") or {}).get("checkpoint_dir"), out)
        recorded = cp_dir / "views" / f"{view}.md" if cp_dir else None
    return _read(recorded)


def _patch(out: Path, checkpoint: dict | None, point_key: str) -> str | None:
    cp_dir = relocated(((checkpoint or {}).get("output") or {}).get("checkpoint_dir"), out) or relocated(
        str(out / "work" / "checkpoint" / point_key / "checkpoint"), out)
    return _read(cp_dir / "checkpoint.patch") if cp_dir else None


def _problem_statement(out: Path, checkpoint: dict | None, instance_id: str | None) -> str:
    path = relocated(((checkpoint or {}).get("inputs") or {}).get("task"), out)
    if path is None and instance_id:
        path = relocated(str(out / "tasks" / f"{instance_id}.json"), out)
    task = load_record(path) if path else None
    return str((task or {}).get("problem_statement") or "")


def view_unit_claims(out: Path, unit: dict, *, store: bool = True, cache: dict[str, Any] | None = None) -> ViewClaims:
    """The check of one done view unit (file content ``unit``, its ``labels`` completed from the plan): from
    its stored file when that was made from the same prompt, else computed and, with ``store``, written.
    ``cache`` keeps what was read for earlier units (checkpoint records, a few predecessor runs)."""
    key = unit["key"]
    labels = unit.get("labels") or {}
    view, point_key = labels.get("view"), labels.get("point_key")
    row = ViewClaims(key, labels.get("instance_id"), point_key, labels.get("point_type"), view)
    cache = {} if cache is None else cache
    checkpoint = checkpoint_record(out, str(point_key), cache) if point_key else None
    prompt = _prompt(out, unit, checkpoint, str(view))
    if prompt is None:
        row.reason = "the view's prompt file is gone"
        return row
    digest = sha256_text(prompt)
    path = stored_path(out, key)
    row.path = str(path)
    stored = load_record(path)
    if stored and stored.get("version") == CLAIMS_VERSION and stored.get("key") == key and \
            stored.get("prompt_sha256") == digest:
        _fill(row, stored)
        row.judge = stored.get("judge")
        return row
    try:
        cut, ref = point_cut(out, str(point_key), cache)
        trajectory = cached_predecessor(ref, out, cache)
        facts = trace_facts(trajectory, cut, checkpoint_patch=_patch(out, checkpoint, str(point_key)),
                            problem_statement=_problem_statement(out, checkpoint, row.instance_id))
        found = check_prompt(str(view), prompt, trajectory, cut, checkpoint_patch=None, facts=facts)
    except (TakeoverError, OSError, ValueError) as exc:  # a damaged or moved file: the report says why
        row.reason = str(exc)
        return row
    if found is None:
        row.reason = f"the claims of {view} are not checked"
        return row
    _fill(row, found)
    if store:
        save(out, row, digest)
    return row


def _fill(row: ViewClaims, record: dict) -> None:
    row.cut_event, row.figures, row.claims = record["cut_event"], record["figures"], record["claims"]
    row.unclaimed, row.note, row.fields = record.get("unclaimed", []), record.get("note"), record.get("fields")
    row.events = record.get("events") or {}


def save(out: Path, row: ViewClaims, prompt_sha256: str) -> None:
    """Write ``row`` to its unit's ``claims.json`` (a read-only folder: the check is still reported, with why)."""
    try:
        atomic_write_json(stored_path(out, row.key), {"version": CLAIMS_VERSION, "key": row.key,
                                                      "prompt_sha256": prompt_sha256, **row.record()})
    except OSError as exc:
        row.reason = f"not stored: {exc}"


def _register_view_file(unit: dict) -> None:
    """Register the view file a view unit was built from (its inputs carry the file's content), so that the
    one predicate of which views are checked knows whether a model wrote it."""
    definition = (unit.get("inputs") or {}).get("view_file")
    if isinstance(definition, dict):
        try:
            view_of(str(unit["labels"].get("view")), definition)
        except InputError:
            pass  # another view holds the name in this process: its own flag answers


def study_claims(out: Path | str, *, store: bool = True) -> list[ViewClaims]:
    """The checks of every done view unit of the study folder ``out`` whose view is checked
    (:func:`takeover.claims.checks_claims`), point by point (the views of a point share one read of the
    predecessor), in key order."""
    out = Path(out)
    plan = load_record(out / "plan.json") or {}
    planned = {u.get("key"): u.get("labels") or {} for u in (plan.get("stages") or {}).get("view", [])}
    units = []
    for path in sorted((out / "units" / "view").glob("*.json")):
        unit = load_record(path)
        if unit and unit.get("status") == "done" and unit.get("key") == path.stem:
            unit["labels"] = {**planned.get(path.stem, {}), **(unit.get("labels") or {})}
            _register_view_file(unit)
            if checks_claims(str(unit["labels"].get("view"))):
                units.append(unit)
    cache: dict[str, Any] = {}
    done = {u["key"]: view_unit_claims(out, u, store=store, cache=cache)
            for u in sorted(units, key=lambda u: (str(u["labels"].get("point_key")), u["key"]))}
    return [done[u["key"]] for u in units]


def judge_study(out: Path | str, model: ModelSettings, *, again: bool = False) -> list[ViewClaims]:
    """Run the model judge (:mod:`takeover.claims.claims_judge`) on the claims the rules left unsupported in
    every checked note of the study folder ``out``, and store its verdicts apart in each unit's
    ``claims.json`` (``judge``). A note already judged by the same model is skipped unless ``again``."""
    out = Path(out)
    rows = study_claims(out)
    cache: dict[str, Any] = {}
    client = ModelClient(model)
    try:
        for row in rows:
            if row.figures is None or (row.judge and row.judge.get("model") == model.model and not again):
                continue
            stored = load_record(stored_path(out, row.key)) or {}
            checkpoint = checkpoint_record(out, str(row.point_key), cache)
            try:
                _, ref = point_cut(out, str(row.point_key), cache)
                trajectory = cached_predecessor(ref, out, cache)
            except (TakeoverError, OSError, ValueError) as exc:
                row.reason = str(exc)
                continue
            row.judge = judge_unsupported(row.record(), trajectory,
                                          _problem_statement(out, checkpoint, row.instance_id), client)
            save(out, row, str(stored.get("prompt_sha256")))
    finally:
        client.close()
    return rows
