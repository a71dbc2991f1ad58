"""The drill-down of a report: one section per handoff point with everything behind its numbers
(docs/protocol.md sections 4-9).

A :class:`PointSection` holds the task, the point (type, event index, changed files, latest
verification), the checkpoint diff, the handoff state with its FAIL_TO_PASS / PASS_TO_PASS outcome, the
exact prompt each view gave the successor, and one :class:`RunCell` per takeover run: its steps (from the
run folder, read through :mod:`takeover.trajectories`), final patch and grading.

Files are found through the unit records (paths they name) and, when those paths do not exist (an
output folder that was moved), through the experiment's own layout ``OUT/work/<stage>/<key>/``. Missing
files never fail the report: the section says what is missing instead.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from takeover.errors import InputError
from takeover.report.rows import ExperimentUnits, UnitRecord, order_views
from takeover.report.transcript import Step, read_transcripts
from takeover.results import TakeoverRunOutput
from takeover.vocabulary import POINT_TYPES


class TestOutcome(BaseModel):
    """Official grading of one patch (docs/protocol.md sections 6 and 8).

    Attributes:
        status: ``done``, or ``failed``/``missing``/``blocked`` when there is no grading (``reason``
            says why).
        resolved: whether every FAIL_TO_PASS and PASS_TO_PASS test passed.
        fail_to_pass_rate, pass_to_pass_rate: passing fractions (``None`` when the task lists none).
        fail_to_pass, pass_to_pass: ``{"success": [test ids], "failure": [test ids]}`` where the grading
            log folder has them.
        warnings: grading warnings (e.g. tests that need the network, graded without it).
    """

    __test__ = False  # a pydantic model, not a pytest test class

    status: str
    reason: str | None = None
    resolved: bool | None = None
    handoff_state: str | None = None
    fail_to_pass_rate: float | None = None
    pass_to_pass_rate: float | None = None
    fail_to_pass: dict[str, list[str]] | None = None
    pass_to_pass: dict[str, list[str]] | None = None
    warnings: list[str] = Field(default_factory=list)


class RunCell(BaseModel):
    """One takeover run of a point: the successor under one view (docs/protocol.md section 8).

    Attributes:
        takeover_key: the unit key (``OUT/units/takeover/<key>.json``); successor, view: as planned.
        status, failure_kind, reason, resolved: as in ``results.csv``.
        exit_status, exit_detail: why the agent stopped.
        agent_events, llm_calls, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens,
            estimated_calls: counts of the run (events, calls, tokens); ``cached_tokens`` and
            ``reasoning_tokens`` are ``None`` when no call reported them, ``estimated_calls`` ``None`` when
            unknown (neither the unit record nor a run folder says).
        initial_prompt_chars, initial_prompt_tokens, wall_seconds, checkpoint_diff_preserved,
            only_source_files_changed: the run's other recorded metrics.
        run_dir: the run folder read; steps: its steps; final_patch: ``patch.diff``; note: why there are
            no steps, when there are none.
        grading: the official grading of the final patch.
    """

    takeover_key: str
    successor: str
    view: str
    status: str
    failure_kind: str | None = None
    reason: str | None = None
    resolved: bool = False
    exit_status: str | None = None
    exit_detail: str | None = None
    agent_events: int | None = None
    llm_calls: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    estimated_calls: int | None = None
    initial_prompt_chars: int | None = None
    initial_prompt_tokens: int | None = None
    wall_seconds: float | None = None
    checkpoint_diff_preserved: bool | None = None
    only_source_files_changed: bool | None = None
    run_dir: str | None = None
    steps: list[Step] = Field(default_factory=list)
    final_patch: str | None = None
    note: str | None = None
    grading: TestOutcome


class PointSection(BaseModel):
    """Everything behind one handoff point (docs/protocol.md sections 4-6).

    Attributes:
        point_key: the checkpoint unit key; instance_id, repo, base_commit, problem_statement: the task.
        point_type, event_index, changed_*, non_source_artifacts, latest_verification_*,
            validation_after_latest_source_change: the handoff point (:class:`takeover.points.HandoffPoint`).
        checkpoint_method, checkpoint_patch: how the checkpoint diff was obtained, and the diff.
        handoff: the official grading of the checkpoint diff with its handoff state (never shown to the
            successor).
        prompts: ``{view: the exact takeover prompt the successor received}``.
        runs: one :class:`RunCell` per planned takeover run of the point, successor then view order.
        role: what the page calls the agent of the runs (``successor`` in a report, ``agent`` for a run
            shown on its own).
        claims: ``{view: its note's claims check}`` for the views whose notes are checked (the note, its
            claims with verdicts and events, the events cited; docs/protocol.md section 7.6).
    """

    point_key: str
    role: str = "successor"
    instance_id: str | None = None
    repo: str | None = None
    base_commit: str | None = None
    problem_statement: str | None = None
    point_type: str | None = None
    event_index: int | None = None
    changed_source_files: list[str] = Field(default_factory=list)
    changed_test_files: list[str] = Field(default_factory=list)
    non_source_artifacts: list[str] = Field(default_factory=list)
    latest_verification_command: str | None = None
    latest_verification_result: str | None = None
    latest_verification_evidence: str | None = None
    validation_after_latest_source_change: str | None = None
    checkpoint_method: str | None = None
    checkpoint_patch: str | None = None
    handoff: TestOutcome
    prompts: dict[str, str] = Field(default_factory=dict)
    runs: list[RunCell] = Field(default_factory=list)
    claims: dict[str, Any] = Field(default_factory=dict)


_POINT_FIELDS = (
    "event_index",
    "changed_source_files",
    "changed_test_files",
    "non_source_artifacts",
    "latest_verification_command",
    "latest_verification_result",
    "latest_verification_evidence",
    "validation_after_latest_source_change",
)
#: Fields of a takeover unit's ``output`` (:class:`~takeover.results.TakeoverRunOutput`) shown in its cell
#: under the same name (the run folder is found apart: the recorded one may have moved).
_RUN_FIELDS = tuple(f for f in RunCell.model_fields if f in TakeoverRunOutput.model_fields and f != "run_dir")


def _read_text(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None


def _existing(*candidates: str | Path | None) -> Path | None:
    """The first candidate path that exists."""
    for c in candidates:
        if c and Path(c).exists():
            return Path(c)
    return None


class _Reader:
    """Finds and reads the files behind the units of one experiment (tasks read once each).

    The unit folders present under ``OUT/work/<stage>/`` are listed once per stage, so that an
    experiment of many thousand units costs no file-system lookup per unit whose folder is absent."""

    def __init__(self, units: ExperimentUnits):
        self.units = units
        self.work = units.out / "work"
        self._tasks: dict[str, dict] = {}
        self._folders: dict[str, set[str]] = {}

    def has_work(self, stage: str, key: str) -> bool:
        """Whether ``OUT/work/<stage>/<key>`` exists."""
        if stage not in self._folders:
            try:
                self._folders[stage] = set(os.listdir(self.work / stage))
            except OSError:
                self._folders[stage] = set()
        return key in self._folders[stage]

    def task(self, instance_id: str | None, path: str | None) -> dict:
        key = instance_id or ""
        if key not in self._tasks:
            found = _existing(path, self.units.out / "tasks" / f"{key}.json" if key else None)
            try:
                self._tasks[key] = json.loads(found.read_bytes()) if found else {}
            except ValueError:
                self._tasks[key] = {}
        return self._tasks[key]

    def grading(self, stage: str, unit: UnitRecord | None, entry: dict | None) -> TestOutcome:
        """The grading outcome of a ``handoff_state`` or ``grade`` unit, with test ids where the grading
        log folder (``OUT/work/<stage>/<key>/grading``) holds a ``result.json``."""
        if unit is None:
            blocked = (entry or {}).get("blocked")
            return TestOutcome(status="blocked" if blocked else "missing", reason=blocked or "grading not run yet")
        if unit.status != "done":
            return TestOutcome(status=unit.status, reason=unit.reason)
        o = unit.output
        outcome = TestOutcome(status="done", resolved=o.get("resolved"), handoff_state=o.get("handoff_state"),
                              fail_to_pass_rate=o.get("fail_to_pass_rate"),
                              pass_to_pass_rate=o.get("pass_to_pass_rate"), warnings=o.get("warnings") or [])
        found = []
        if self.has_work(stage, unit.key):
            found = sorted((self.work / stage / unit.key / "grading").glob("*/*/result.json"))
        for result in found:
            try:
                data = json.loads(result.read_bytes())
            except (OSError, ValueError):
                continue
            outcome.fail_to_pass = _tests(data.get("FAIL_TO_PASS"))
            outcome.pass_to_pass = _tests(data.get("PASS_TO_PASS"))
            break
        return outcome

    def run_folder(self, unit: UnitRecord | None, key: str) -> Path | None:
        recorded = (unit.output if unit else {}).get("run_dir")
        if recorded and os.path.isdir(recorded):
            return Path(recorded)
        if self.has_work("takeover", key) and os.path.isdir(self.work / "takeover" / key / "run"):
            return self.work / "takeover" / key / "run"
        return None


def _tests(part: Any) -> dict[str, list[str]] | None:
    if not isinstance(part, dict):
        return None
    return {"success": list(part.get("success") or []), "failure": list(part.get("failure") or [])}


def _run_cell(reader: _Reader, row: dict, grade_entry: dict | None, with_steps: bool) -> tuple[RunCell, str | None]:
    """The run's cell and the prompt its run folder recorded (``None`` without one)."""
    units = reader.units
    key = row["takeover_key"]
    run = units.get("takeover", key)
    fields: dict[str, Any] = {f: run.output[f] for f in _RUN_FIELDS if f in run.output} if run else {}
    if run is not None and run.status == "failed" and fields.get("exit_detail") is None:
        fields["exit_detail"] = run.reason
    grade = units.get("grade", grade_entry["key"]) if grade_entry else None
    cell = RunCell(takeover_key=key, successor=row["successor"], view=row["view"], status=row["status"],
                   failure_kind=row["failure_kind"], reason=row["reason"], resolved=bool(row["resolved"]),
                   grading=reader.grading("grade", grade, grade_entry), **fields)
    folder = (reader.run_folder(run, key) or _existing(row.get("run_dir"))) if with_steps else None
    if folder is None:
        cell.note = "no run folder" if with_steps else None
        return cell, None
    cell.run_dir = str(folder)
    try:
        found = read_transcripts(folder)
    except InputError as exc:
        cell.note = f"run folder not readable: {exc}"
        return cell, None
    t = found[0]
    cell.steps = t.steps
    cell.final_patch = t.final_patch
    # Counts the unit did not record (a failed run, or fields older records lack) come from the folder.
    for f in ("agent_events", "llm_calls", "prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens"):
        if getattr(cell, f) is None:
            setattr(cell, f, getattr(t, f))
    if cell.estimated_calls is None:
        cell.estimated_calls = t.estimated_calls
    return cell, t.prompt


def point_keys(units: ExperimentUnits, rows: list[dict]) -> list[str]:
    """Every handoff point of the experiment (checkpoint units and points with takeover runs), ordered by
    instance, point type (protocol order) and key."""
    info: dict[str, tuple[str, str]] = {}
    for entry in units.entries("checkpoint"):
        info[entry["key"]] = (str(entry["labels"].get("instance_id")), str(entry["labels"].get("point_type")))
    for r in rows:
        info.setdefault(r["point_key"], (str(r["instance_id"]), str(r["point_type"])))

    def order(k: str) -> tuple:
        iid, ptype = info[k]
        return (iid, POINT_TYPES.index(ptype) if ptype in POINT_TYPES else len(POINT_TYPES), ptype, k)

    return sorted(info, key=order)


def point_sections(units: ExperimentUnits, rows: list[dict], *, steps: bool = True) -> Iterator[PointSection]:
    """One :class:`PointSection` per handoff point (order of :func:`point_keys`), built one at a time so
    that a large experiment is never held in memory whole.

    Args:
        units, rows: from :func:`takeover.report.rows.read_units` and
            :func:`takeover.report.rows.collect_rows`.
        steps: read each run folder for its steps and final patch (``False``: unit records only).
    """
    reader = _Reader(units)
    runs_by_point: dict[str, list[dict]] = {}
    for r in rows:
        runs_by_point.setdefault(r["point_key"], []).append(r)
    grade_entries = {e["labels"]["takeover_key"]: e for e in units.entries("grade")}
    state_entries = {e["labels"]["point_key"]: e for e in units.entries("handoff_state")}
    view_entries = {(e["labels"].get("point_key"), e["labels"].get("view")): e for e in units.entries("view")}
    checkpoint_entries = {e["key"]: e for e in units.entries("checkpoint")}
    for pkey in point_keys(units, rows):
        yield _section(reader, pkey, runs_by_point.get(pkey, []), checkpoint_entries.get(pkey),
                       state_entries.get(pkey), view_entries, grade_entries, steps)


def _section(reader: _Reader, pkey: str, runs: list[dict], cp_entry: dict | None, state_entry: dict | None,
             view_entries: dict, grade_entries: dict, steps: bool) -> PointSection:
    units = reader.units
    labels = (cp_entry or {}).get("labels") or (runs[0] if runs else {})
    cp = units.get("checkpoint", pkey)
    point = (cp.inputs.get("point") if cp else None) or {}
    instance_id = labels.get("instance_id")
    task = reader.task(instance_id, cp.inputs.get("task") if cp else None)
    cp_dir = _existing((cp.output if cp else {}).get("checkpoint_dir"), reader.work / "checkpoint" / pkey / "checkpoint")
    handoff = reader.grading("handoff_state", units.get("handoff_state", state_entry["key"]) if state_entry else None,
                             state_entry)
    section = PointSection(
        point_key=pkey, instance_id=instance_id, repo=task.get("repo"), base_commit=task.get("base_commit"),
        problem_statement=task.get("problem_statement"), point_type=labels.get("point_type") or point.get("type"),
        checkpoint_method=(cp.output.get("method") if cp and cp.status == "done" else None),
        checkpoint_patch=_read_text(cp_dir / "checkpoint.patch") if cp_dir else None, handoff=handoff,
        **{f: point[f] for f in _POINT_FIELDS if point.get(f) is not None},
    )
    views = order_views(list({r["view"] for r in runs}))
    for view in views:
        entry = view_entries.get((pkey, view))
        unit = units.done("view", entry["key"]) if entry else None
        prompt = _read_text(_existing(unit.output.get("path"))) if unit else None
        if prompt is None and cp_dir is not None:
            prompt = _read_text(_existing(cp_dir / "views" / f"{view}.md"))
        if prompt is not None:
            section.prompts[view] = prompt
    rank = {v: i for i, v in enumerate(views)}
    for row in sorted(runs, key=lambda r: (r["successor"], rank[r["view"]])):
        cell, recorded = _run_cell(reader, row, grade_entries.get(row["takeover_key"]), steps)
        section.runs.append(cell)
        if recorded is not None and row["view"] not in section.prompts:
            section.prompts[row["view"]] = recorded  # the run folder's copy (secrets redacted)
    section.prompts = {v: section.prompts[v] for v in views if v in section.prompts}
    return section
