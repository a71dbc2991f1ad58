"""Rediscovery figures of a study's takeover units, stored with each unit (docs/protocol.md, Extension
"Rediscovery").

A takeover unit's figures are computed from files the study already holds: the successor's run folder (the
unit's ``output.run_dir``), the predecessor's trajectory and the cut (the checkpoint unit it was made from:
``inputs.trajectory`` and the point's ``event_index``). No model is called, nothing is graded again. They
are stored as ``OUT/work/takeover/<key>/rediscovery.json`` (the unit's own work folder) and read back from
there, so ``takeover report`` on a folder written before rediscovery existed computes them once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from takeover._util.io import atomic_write_json
from takeover.errors import TakeoverError
from takeover.rediscovery.labels import label_successor
from takeover.trajectories import Trajectory, read_trajectories
from takeover.trajectories.takeover_run import read_run

#: File name of a unit's stored figures, in the unit's work folder.
FIGURES_FILE = "rediscovery.json"
#: Version of the stored record: a record of another version is computed again (2: the repeat rule, reasons
#: of ``new`` labels, unrecognised command parts with counts).
FIGURES_VERSION = 2
#: Predecessor runs kept while a study's units are labelled (units are taken point by point).
_CACHED_PREDECESSORS = 4


@dataclass
class UnitFigures:
    """The rediscovery record of one takeover unit: its labels (``point_type``, ``view``, ``successor``,
    ``instance_id``), ``cut_event``, ``figures`` (:class:`~takeover.rediscovery.RediscoveryFigures` as a
    dict), ``labels`` (one per successor action: event, label, repeats, kind, reason) and ``unrecognised``
    (command part -> count); or ``figures`` ``None`` and the ``reason`` (a run folder that is gone)."""

    key: str
    instance_id: str | None
    point_type: str | None
    view: str | None
    successor: str | None
    cut_event: int | None = None
    figures: dict[str, Any] | None = None
    labels: list[dict[str, Any]] | None = None
    unrecognised: dict[str, int] | None = None
    reason: str | None = None


def _load(path: Path) -> dict | None:
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        return None


def _relocated(path: str | None, out: Path) -> Path | None:
    """``path`` if it exists, else the same path under ``out`` (an output folder that was moved:
    ``.../work/<stage>/<key>/...`` is looked for as ``OUT/work/<stage>/<key>/...``)."""
    if not path:
        return None
    if Path(path).exists():
        return Path(path)
    if "/work/" in path:
        moved = out / "work" / path.rsplit("/work/", 1)[1]
        if moved.exists():
            return moved
    return None


def _checkpoint(out: Path, key: str, cache: dict) -> dict | None:
    """The checkpoint unit ``key``'s record, read once per point (``cache``)."""
    name = f"checkpoint:{key}"
    if name not in cache:
        cache[name] = _load(out / "units" / "checkpoint" / f"{key}.json")
    return cache[name]


def _predecessor(ref: dict, out: Path) -> Trajectory:
    """The predecessor trajectory a checkpoint unit's ``inputs.trajectory`` names (a run folder, or a file and
    record)."""
    run_dir = _relocated(ref.get("run_dir"), out)
    if ref.get("run_dir"):
        if run_dir is None:
            raise TakeoverError(f"the predecessor's run folder {ref['run_dir']} is gone")
        return read_run(run_dir)
    file = _relocated(ref.get("file"), out) or (Path(ref["file"]) if ref.get("file") else None)
    if file is None or not file.exists():
        raise TakeoverError(f"the predecessor's trajectory {ref.get('file')} is gone")
    runs = read_trajectories(file)
    for run in runs:
        if run.record == ref.get("record"):
            return run
    if len(runs) == 1:
        return runs[0]
    raise TakeoverError(f"record {ref.get('record')!r} not found in {file}")


def unit_figures(out: Path, unit: dict, *, store: bool = True,
                 predecessors: dict[str, Any] | None = None) -> UnitFigures:
    """The rediscovery record of one takeover unit file's content ``unit`` (done), from its stored file or,
    when there is none (or of another version, or of an earlier run of the unit: another ``started_at``),
    computed and, with ``store``, written beside the unit. ``predecessors`` caches what was read for earlier units
    (checkpoint records, a few predecessor runs): the views of one point share one read."""
    key = unit["key"]
    labels = unit.get("labels") or {}
    row = UnitFigures(key, labels.get("instance_id"), labels.get("point_type"), labels.get("view"),
                      labels.get("successor"))
    stored_path = out / "work" / "takeover" / key / FIGURES_FILE
    stored = _load(stored_path)
    # A unit run again (a redo) has another start time: its stored figures are those of the earlier run.
    started = unit.get("started_at")
    if stored and stored.get("version") == FIGURES_VERSION and stored.get("key") == key and \
            stored.get("started_at") == started:
        row.cut_event, row.figures = stored["cut_event"], stored["figures"]
        row.labels, row.unrecognised = stored["labels"], stored.get("unrecognised", {})
        return row
    cache = {} if predecessors is None else predecessors
    try:
        checkpoint = _checkpoint(out, str(labels.get("point_key")), cache)
        if not checkpoint:
            raise TakeoverError(f"the checkpoint unit {labels.get('point_key')} has no readable record")
        cut = (checkpoint.get("output") or {}).get("event_index")
        if cut is None:
            cut = ((checkpoint.get("inputs") or {}).get("point") or {}).get("event_index")
        ref = (checkpoint.get("inputs") or {}).get("trajectory")
        if cut is None or not isinstance(ref, dict):
            raise TakeoverError(f"the checkpoint unit {labels.get('point_key')} names no trajectory or event")
        run_dir = _relocated((unit.get("output") or {}).get("run_dir"), out) or _relocated(
            str(out / "work" / "takeover" / key / "run"), out)
        if run_dir is None:
            raise TakeoverError("the successor's run folder is gone")
        ref_key = json.dumps(ref, sort_keys=True)
        if ref_key not in cache:
            runs = [k for k in cache if not k.startswith("checkpoint:")]
            if len(runs) >= _CACHED_PREDECESSORS:  # a bounded cache: a study may have thousands of runs
                cache.pop(runs[0])
            cache[ref_key] = _predecessor(ref, out)
        result = label_successor(cache[ref_key], int(cut), read_run(run_dir))
    except (TakeoverError, OSError, ValueError) as exc:  # a damaged file: the report says why, and goes on
        row.reason = str(exc)
        return row
    record = result.to_json()
    row.cut_event, row.figures, row.labels = record["cut_event"], record["figures"], record["labels"]
    row.unrecognised = record["unrecognised"]
    if store:
        try:
            atomic_write_json(stored_path, {"version": FIGURES_VERSION, "key": key, "started_at": started, **record})
        except OSError as exc:  # a read-only study folder: the figures are still reported
            row.reason = f"not stored: {exc}"
    return row


def study_figures(out: Path | str, *, store: bool = True) -> list[UnitFigures]:
    """The rediscovery records of every done takeover unit of the study folder ``out`` (key order); a unit's
    labels are those of ``plan.json`` completed by its own file's."""
    out = Path(out)
    plan = _load(out / "plan.json") or {}
    planned = {u.get("key"): u.get("labels") or {} for u in (plan.get("stages") or {}).get("takeover", [])}
    units = []
    for path in sorted((out / "units" / "takeover").glob("*.json")):
        unit = _load(path)
        if unit and unit.get("status") == "done" and unit.get("key") == path.stem:
            unit["labels"] = {**planned.get(path.stem, {}), **(unit.get("labels") or {})}
            units.append(unit)
    predecessors: dict[str, Any] = {}
    # Point by point, so that the views of one point share one read of the predecessor.
    done = {u["key"]: unit_figures(out, u, store=store, predecessors=predecessors)
            for u in sorted(units, key=lambda u: (str(u["labels"].get("point_key")), u["key"]))}
    return [done[u["key"]] for u in units]
