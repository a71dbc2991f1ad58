"""The predecessor's run a raw_trace Harbor task ships as ``trajectory.json`` (docs/protocol.md section 8.6):
found from the checkpoint that names it, checked to be that checkpoint's run, cut at its handoff event.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from takeover.checkpoints import Checkpoint
from takeover.errors import InputError
from takeover.trajectories import read_trajectories
from takeover.trajectories.atif_writer import to_atif


def predecessor_file(checkpoint: Checkpoint, folder: Path) -> Path:
    """The predecessor's trajectory file: ``checkpoint.trajectory`` as recorded when absolute; a relative path
    is resolved against the file that names it, ``checkpoint.json``: under the checkpoint folder or the
    nearest folder above it that holds it (where ``takeover checkpoint`` ran), never against the current
    folder, where the same name may be another task's run.

    Raises:
        InputError: the checkpoint names no trajectory, or the file is found nowhere (names the places).
    """
    if not checkpoint.trajectory:
        raise InputError(folder / "checkpoint.json", "names no predecessor trajectory: the raw_trace task needs one",
                         field="trajectory")
    recorded = Path(checkpoint.trajectory)
    if recorded.is_absolute():
        if not recorded.is_file():
            raise InputError(folder / "checkpoint.json", f"the predecessor's trajectory {recorded} does not exist "
                             "(moved or removed since the checkpoint was made)", field="trajectory")
        return recorded
    for parent in (folder.resolve(), *folder.resolve().parents):
        if (parent / recorded).is_file():
            return parent / recorded
    raise InputError(folder / "checkpoint.json", f"the predecessor's trajectory {recorded} (a relative path) is not "
                     f"found under the checkpoint folder {folder} nor any folder above it; move the checkpoint "
                     "folder back below the folder the trajectory path is relative to", field="trajectory")


def predecessor_atif(checkpoint: Checkpoint, folder: Path) -> dict[str, Any]:
    """The predecessor's run up to the handoff event as an ATIF document, every step ``is_copied_context``
    (Harbor seeds the successor's session with it; readers leave copied steps out of the successor's counts).

    Raises:
        InputError: as :func:`predecessor_file`, the file no longer holds the checkpoint's record, or its run is
            of another task, or ends before the handoff event.
    """
    path = predecessor_file(checkpoint, folder)
    runs = read_trajectories(path)
    found = [r for r in runs if r.record == checkpoint.trajectory_record] or (
        runs if len(runs) == 1 and checkpoint.trajectory_record is None else [])
    if not found:
        raise InputError(path, "no run of this file is the checkpoint's predecessor",
                         record=checkpoint.trajectory_record)
    run = found[0]
    if run.instance_id and run.instance_id != checkpoint.instance_id:
        raise InputError(path, f"this run is of {run.instance_id}, not of the checkpoint's {checkpoint.instance_id}: "
                         f"{folder / 'checkpoint.json'} names another task's run as its predecessor",
                         record=run.record, field="instance_id")
    if len(run.events) <= checkpoint.point.event_index:
        raise InputError(path, f"this run has {len(run.events)} events, and the checkpoint's point is after event "
                         f"{checkpoint.point.event_index}: it is not the checkpoint's predecessor", record=run.record)
    doc = to_atif(run, through_event=checkpoint.point.event_index)
    for step in doc["steps"]:
        step["is_copied_context"] = True
    doc.setdefault("extra", {})["copied_from"] = "takeover handoff predecessor"
    return doc
