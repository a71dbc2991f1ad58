"""Collecting the report's rows from an experiment's per-unit result files (docs/protocol.md section 9).

Inputs, all under the experiment's output folder ``OUT``:

- ``plan.json``: the planned units of every stage with their labels (written by ``takeover run``); a
  planned unit without a result counts as missing, and units of an older plan are never read.
- ``units/<stage>/<key>.json``: one result record per unit (``stage``, ``key``, ``status``,
  ``failure_kind``, ``reason``, ``output``, token counts).

Each planned unit file is read once (:func:`read_units`) and kept in a slim form; nothing here opens a
trajectory. From those records come one row per planned takeover run (:func:`collect_rows`, the columns
of ``results.csv``: the fields of :class:`takeover.results.ResultRow`, each taken from the unit record
field of the same name), the counts of handoff points per type and state (:func:`table1`), grading warnings
and note-writing tokens.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from takeover._util.io import atomic_write_chunks
from takeover.errors import InputError
from takeover.report.harbor_jobs import harbor_rows, harbor_trial_folders
from takeover.report.inspect_logs import eval_log_files, inspect_rows
from takeover.results import GRADE_OUTPUT_COLUMNS, LABEL_COLUMNS, RESULT_COLUMNS, RUN_OUTPUT_COLUMNS
from takeover.views import view_order
from takeover.vocabulary import HANDOFF_STATES

#: Input fields kept per stage (the rest of ``inputs`` is dropped after reading): a checkpoint unit's task
#: file and handoff point, which the drill-down shows.
_KEPT_INPUTS = {"checkpoint": ("task", "point")}


def order_views(views: list[str]) -> list[str]:
    """``views`` in table order: the registered views' (the paper's four first), then the others, sorted
    (:func:`takeover.views.view_order`)."""
    return view_order(views)


def order_states(states: list[str]) -> list[str]:
    """Handoff states in report order (:data:`takeover.vocabulary.HANDOFF_STATES`), unknown ones after."""
    return sorted(states, key=lambda s: (HANDOFF_STATES.index(s) if s in HANDOFF_STATES else 99, s))


@dataclass(slots=True)
class UnitRecord:
    """The parts of one unit result file that the report reads.

    Attributes:
        stage, key, labels: the planned unit (labels from ``plan.json``).
        status: ``done`` or ``failed`` (a unit without a file is not a record: see :class:`UnitProblem`).
        failure_kind: ``infrastructure`` or ``agent`` for a failed unit.
        reason: why it failed.
        output: the unit's small output record (e.g. a takeover run's counts, a grading's outcome).
        prompt_tokens, completion_tokens: the model tokens the unit spent (tokens).
        inputs: the input fields the report needs (a checkpoint unit's task file and handoff point).
    """

    stage: str
    key: str
    labels: dict[str, Any]
    status: str
    failure_kind: str | None
    reason: str | None
    output: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int
    inputs: dict[str, Any]


@dataclass(slots=True)
class UnitProblem:
    """A planned unit that did not finish: ``status`` is ``failed``, ``missing`` or ``blocked``.

    ``failure_kind`` is ``infrastructure`` or ``agent`` (missing and blocked units count as
    infrastructure); ``reason`` says why (``not run yet`` for a missing unit, the upstream failure for a
    blocked one)."""

    stage: str
    key: str
    labels: dict[str, Any]
    status: str
    failure_kind: str
    reason: str


@dataclass
class ExperimentUnits:
    """Every planned unit of an experiment, read once.

    Attributes:
        out: the experiment folder; plan: ``plan.json``.
        units: ``{stage: {key: UnitRecord | None}}`` in plan order (``None``: no usable file).
        status: ``{stage: {"done": n, "failed": n, "failed_<kind>": n, "missing": n, "blocked": n}}``, the
            ``units`` section of ``report.json`` (keys in the order first seen).
        problems: every failed, missing or blocked unit, in plan order.
        unusable: the unit files that exist but cannot be used (not JSON, or another unit's record), each
            with why; their units count as missing.
    """

    out: Path
    plan: dict
    units: dict[str, dict[str, UnitRecord | None]] = field(default_factory=dict)
    status: dict[str, dict[str, int]] = field(default_factory=dict)
    problems: list[UnitProblem] = field(default_factory=list)
    unusable: list[str] = field(default_factory=list)

    def entries(self, stage: str) -> list[dict]:
        """The planned entries of ``stage`` (``{"key", "labels", "blocked"?}``) in plan order."""
        return self.plan.get("stages", {}).get(stage, [])

    def get(self, stage: str, key: str | None) -> UnitRecord | None:
        """The record of unit ``key`` of ``stage``; ``None`` when it has no usable file."""
        return self.units.get(stage, {}).get(key) if key else None

    def done(self, stage: str, key: str | None) -> UnitRecord | None:
        """The record of unit ``key`` when it finished (status ``done``), else ``None``."""
        unit = self.get(stage, key)
        return unit if unit is not None and unit.status == "done" else None


def load_plan(out_dir: Path | str) -> dict:
    """``OUT/plan.json`` as a dict.

    Raises:
        InputError: it is missing or not valid JSON (names the file).
    """
    path = Path(out_dir) / "plan.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if eval_log_files(out_dir) or harbor_trial_folders(out_dir):  # Inspect logs or Harbor jobs alone
            return {"name": Path(out_dir).resolve().name, "stages": {}}
        raise InputError(path, "no plan.json here: is this the output folder of `takeover run`?") from None
    except ValueError as exc:
        raise InputError(path, f"not valid JSON: {exc}") from None


def _read_unit(out: Path, stage: str, key: str, labels: dict) -> tuple[UnitRecord | None, str | None]:
    """``(record, None)``, ``(None, None)`` when there is no file, ``(None, why)`` when the file cannot be used."""
    # Plain string paths: with tens of thousands of unit files, pathlib's overhead dominates.
    path = f"{out}/units/{stage}/{key}.json"
    try:
        with open(path, "rb") as fh:
            unit = json.loads(fh.read())
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:
        return None, f"unreadable unit file {path}: {' '.join(str(exc).split())[:200]}"
    # A file whose content is another unit's (copied or renamed) counts as missing, as in the runner.
    if not isinstance(unit, dict) or unit.get("stage", stage) != stage or unit.get("key", key) != key:
        return None, f"unit file {path} holds another unit's record"
    inputs = unit.get("inputs") or {}
    output = unit.get("output") or {}
    return UnitRecord(
        stage=stage,
        key=key,
        labels=labels,
        status=unit["status"],
        failure_kind=unit.get("failure_kind"),
        reason=unit.get("reason"),
        # Interned keys: tens of thousands of records would otherwise each hold their own copy of every key.
        output={sys.intern(k): v for k, v in output.items()} if isinstance(output, dict) else {},
        prompt_tokens=unit.get("prompt_tokens", 0),
        completion_tokens=unit.get("completion_tokens", 0),
        inputs={k: inputs[k] for k in _KEPT_INPUTS.get(stage, ()) if k in inputs},
    ), None


def read_units(out_dir: Path | str, plan: dict | None = None) -> ExperimentUnits:
    """Read every planned unit's result file once (see :class:`ExperimentUnits`).

    A file that is missing, not JSON, or holds another unit's record counts as missing; the problem says
    which (``not run yet``, or the unusable file and why).

    Raises:
        InputError: ``out_dir`` has no readable ``plan.json`` (when ``plan`` is not given).
    """
    out = Path(out_dir)
    plan = plan if plan is not None else load_plan(out)
    found = ExperimentUnits(out=out, plan=plan)
    for stage, entries in plan.get("stages", {}).items():
        counts: Counter = Counter()
        units: dict[str, UnitRecord | None] = {}
        for entry in entries:
            # Interned label values: the same instance ids, views and keys repeat across every stage.
            labels = entry["labels"] = {k: sys.intern(v) if isinstance(v, str) else v
                                        for k, v in entry.get("labels", {}).items()}
            unit, unusable = _read_unit(out, stage, entry["key"], labels)
            if unusable:
                found.unusable.append(unusable)
            if unit is None and entry.get("blocked"):
                counts["blocked"] += 1
                found.problems.append(UnitProblem(stage, entry["key"], labels, "blocked", "infrastructure",
                                                  str(entry["blocked"])))
            elif unit is None:
                counts["missing"] += 1
                found.problems.append(UnitProblem(stage, entry["key"], labels, "missing", "infrastructure",
                                                  unusable or "not run yet"))
            else:
                counts[unit.status] += 1
                if unit.status == "failed":
                    counts[f"failed_{unit.failure_kind or 'infrastructure'}"] += 1
                    found.problems.append(UnitProblem(stage, entry["key"], labels, "failed",
                                                      unit.failure_kind or "infrastructure", unit.reason or ""))
            units[entry["key"]] = unit
        found.status[stage] = dict(counts)
        found.units[stage] = units
    return found


def handoff_states(units: ExperimentUnits) -> dict[str, str | None]:
    """``{point_key: handoff state}`` from the ``handoff_state`` units (``None`` when not graded)."""
    states: dict[str, str | None] = {}
    for entry in units.entries("handoff_state"):
        unit = units.done("handoff_state", entry["key"])
        states[entry["labels"]["point_key"]] = unit.output.get("handoff_state") if unit else None
    return states


def collect_rows(units: ExperimentUnits, *, unreadable: list[dict[str, Any]] | None = None,
                 repeated: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One row per planned takeover run, joined with its grading and its point's handoff state.

    Each row has the :data:`~takeover.results.RESULT_COLUMNS` (the fields of
    :class:`~takeover.results.ResultRow`) plus ``point_key`` and ``takeover_key``; the rows of Inspect logs
    and Harbor trials in the folder follow (:func:`takeover.report.inspect_logs.inspect_rows`,
    :func:`takeover.report.harbor_jobs.harbor_rows`). Their records that cannot be read are appended to
    ``unreadable`` (when given), each ``{"source", "path", "reason", "takeover_key"}``. The tables hold one
    run per (successor, point, view): a later run of one that has a row already (another attempt of a
    Harbor trial, another epoch of an Inspect sample) is not a row and is appended to ``repeated`` (when
    given), ``{"takeover_key", "counted", "successor", "point_key", "view"}``. A run that failed,
    is missing or blocked, or whose grading failed or is missing, is not solved (``resolved`` false) and
    has ``status``/``failure_kind``/``reason`` saying why; a finished run whose agent stopped without
    submitting has ``failure_kind`` ``agent`` (docs/protocol.md section 9).
    """
    states = handoff_states(units)
    grade_by_takeover = {e["labels"]["takeover_key"]: e["key"] for e in units.entries("grade")}
    rows: list[dict[str, Any]] = []
    for entry in units.entries("takeover"):
        labels = entry["labels"]
        run = units.get("takeover", entry["key"])
        grade = units.get("grade", grade_by_takeover.get(entry["key"]))
        row: dict[str, Any] = {c: None for c in RESULT_COLUMNS}
        for c in LABEL_COLUMNS:
            row[c] = labels[c]
        row.update(
            point_key=labels["point_key"],
            handoff_state=states.get(labels["point_key"]),
            resolved=False,
            takeover_key=entry["key"],
        )
        if run is not None and run.status == "done":
            for c in RUN_OUTPUT_COLUMNS:
                row[c] = run.output.get(c)
        failing: tuple[str, str | None, str | None] | None = None
        if run is None:
            failing = ("blocked", None, entry["blocked"]) if entry.get("blocked") else ("missing", None, "not run yet")
        elif run.status == "failed":
            failing = (run.status, run.failure_kind, run.reason)
        elif grade is None:
            failing = ("missing", None, "grading not run yet")
        elif grade.status == "failed":
            failing = (grade.status, grade.failure_kind, grade.reason)
        if failing is None:
            for c in GRADE_OUTPUT_COLUMNS:
                row[c] = grade.output.get(c)  # type: ignore[union-attr]
            row["resolved"] = bool(row["resolved"])
            row["status"] = "done"
            row["failure_kind"] = "agent" if (row["exit_status"] or "submitted") != "submitted" else None
        else:
            row["status"], kind, row["reason"] = failing
            row["failure_kind"] = kind or "infrastructure"
        rows.append(row)
    # the runs of Inspect's handoff task and Harbor's trials of exported tasks beside takeover's own
    seen = {(r["successor"], r["point_key"], r["view"]): r["takeover_key"] for r in rows}
    for row in inspect_rows(units.out, unreadable) + harbor_rows(units.out, unreadable):
        cell = (row["successor"], row["point_key"], row["view"])
        if cell in seen:
            if repeated is not None:
                repeated.append({"takeover_key": row["takeover_key"], "counted": seen[cell], "successor": cell[0],
                                 "point_key": cell[1], "view": cell[2]})
            for record in unreadable or []:  # an unreadable run left out is in no row of the tables either
                if record["takeover_key"] == row["takeover_key"]:
                    record["takeover_key"] = None
            continue
        seen[cell] = row["takeover_key"]
        rows.append(row)
    return rows


def table1(units: ExperimentUnits) -> dict:
    """Counts of handoff points per type and handoff state (paper Table 1), and missing points per type.

    Returns ``{"points": {point_type: {state: n}}, "total": {state: n}, "missing_points": {point_type:
    [{"instance_id", "reason"}]}}``; a point whose handoff state is not graded counts as ``ungraded``.
    """
    counts: dict[str, Counter] = defaultdict(Counter)
    for entry in units.entries("handoff_state"):
        unit = units.done("handoff_state", entry["key"])
        state = unit.output.get("handoff_state") if unit else "ungraded"
        counts[entry["labels"]["point_type"]][state or "ungraded"] += 1
    wanted = set(units.plan.get("point_types") or [])
    missing: dict[str, list[dict]] = defaultdict(list)
    for entry in units.entries("points"):
        unit = units.done("points", entry["key"])
        if unit:
            for m in unit.output.get("missing", []):
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


def grading_warnings(units: ExperimentUnits) -> dict[str, list[str]]:
    """Warnings of the grading units (``handoff_state`` and ``grade``) per ``instance_id``, e.g. the
    task's tests need the network and grading ran without it.

    Returns ``{instance_id: [warning, ...]}`` sorted, each warning once."""
    found: dict[str, set[str]] = defaultdict(set)
    for stage in ("handoff_state", "grade"):
        for entry in units.entries(stage):
            unit = units.done(stage, entry["key"])
            if unit:
                for w in unit.output.get("warnings") or []:
                    found[str(entry["labels"].get("instance_id"))].add(w)
    return {iid: sorted(ws) for iid, ws in sorted(found.items())}


def grading_rules_used(units: ExperimentUnits) -> dict[str, int]:
    """How many grading units (``handoff_state`` and ``grade``) each verdict rule set decided
    (docs/protocol.md section 6, extension "Grading rules"): ``{"swebench-4.1": 12, "swebench-5.0": 3}``;
    a unit recorded before the rules were counts as ``swebench-4.1``. More than one key means the report's
    verdicts were decided under different rules."""
    used: Counter = Counter()
    for stage in ("handoff_state", "grade"):
        for entry in units.entries(stage):
            unit = units.done(stage, entry["key"])
            if unit:
                used[unit.output.get("grading_rules") or "swebench-4.1"] += 1
    return dict(sorted(used.items()))


def note_tokens(units: ExperimentUnits) -> dict[str, dict[str, int]]:
    """Every view of the study side by side: its size and the tokens spent writing it, reported apart from
    the successors' tokens (docs/protocol.md section 9).

    Returns ``{view: {"units", "prompt_tokens", "completion_tokens", "characters_total",
    "estimated_tokens_total"}}`` (note-writing tokens; characters and estimated tokens of the finished views'
    prompts), views in table order; counters that stayed 0 are absent."""
    acc: dict[str, Counter] = defaultdict(Counter)
    for entry in units.entries("view"):
        unit = units.get("view", entry["key"])
        if unit is None:
            continue
        c = acc[entry["labels"]["view"]]
        c["units"] += 1
        c["prompt_tokens"] += unit.prompt_tokens
        c["completion_tokens"] += unit.completion_tokens
        if unit.status == "done" and unit.output.get("characters") is not None:
            c["characters_total"] += unit.output["characters"]
            if unit.output.get("estimated_tokens"):
                c["estimated_tokens_total"] += unit.output["estimated_tokens"]
    return {v: dict(acc[v]) for v in order_views(list(acc))}


def write_csv(path: Path, rows: list[dict]) -> None:
    """Write ``results.csv`` atomically: the :data:`~takeover.results.RESULT_COLUMNS` of ``rows``, sorted by
    successor, instance, point type and view (protocol order); written in pieces of 1,000 rows."""

    ranks = {view: rank for rank, view in enumerate(order_views([r["view"] for r in rows]))}

    def order(r: dict) -> tuple:
        return (r["successor"], r["instance_id"], r["point_type"], ranks[r["view"]], r["view"])

    def chunks() -> Iterator[str]:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=RESULT_COLUMNS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for i, r in enumerate(sorted(rows, key=order), 1):
            writer.writerow(r)
            if i % 1000 == 0:
                yield buf.getvalue()
                buf.seek(0)
                buf.truncate()
        yield buf.getvalue()

    atomic_write_chunks(path, chunks())
