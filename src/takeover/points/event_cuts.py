"""A cut at any event of a run (docs/protocol.md section 4.5, an Extension): the repository state after
event N with what a point records there, and every event's changes, so that a user can choose N.

The states are the ones the point types use (:func:`takeover.points.event_states.event_states`: recorded
snapshots, stored diffs or a verified replay), accepted under the same rules: a run whose states are not
exact is refused with the reason, and so is an event the run does not have. What the cut records is what a
point records (section 4.4, :func:`takeover.points.detection.point_at`), with the point's ``type``
``event`` (:data:`takeover.vocabulary.EVENT_CUT`): the checkpoint and view records name the event instead
of a point type.

Event indices are 0-based, as ``takeover points`` prints them and as ``checkpoint.json`` records a point's
``event_index``; a ``raw_trace`` view shows event N as ``[step N+1 | ...]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from takeover._util.io import atomic_write_text
from takeover._util.patches import count_changed_lines
from takeover.points.detection import HandoffPoint, command_of, point_at, source_edits, verifications
from takeover.points.event_states import event_states
from takeover.replay_settings import ReplaySettings
from takeover.repository_states.replay import ReplayResult, ReplayVerdict
from takeover.repository_states.snapshots import join_diffs
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.trajectories.events import Event, Trajectory
from takeover.vocabulary import EVENT_CUT, VerificationResult


class EventCut(BaseModel):
    """The repository state after one event of a run, or why it cannot be rebuilt exactly.

    Attributes:
        instance_id, repo, base_commit: the source task.
        trajectory, trajectory_record, format: where the run came from; ``events``: its number of events.
        event_index: the event asked for (0-based).
        replay: how the per-event states were obtained and whether they are exact.
        point: what a point records at the event (``type`` ``event``), or ``None`` when refused.
        patch: the cumulative diff after the event against the task's starting state (the future
            ``checkpoint.patch``); empty when refused.
        environment_patch: the edits of the task environment's own setup (docs/protocol.md section 5.2).
        reason: why the cut was refused (an event past the end, a run whose states are not exact).
    """

    instance_id: str
    repo: str
    base_commit: str
    trajectory: str | None = None
    trajectory_record: str | None = None
    format: str | None = None
    events: int = 0
    event_index: int
    replay: ReplayVerdict | None = None
    point: HandoffPoint | None = None
    patch: str = ""
    environment_patch: str = ""
    reason: str | None = None


class EventRow(BaseModel):
    """One event as ``takeover points --all-events`` lists it.

    Attributes:
        index: the event (0-based); ``kind``, ``source``, ``type``: as in :class:`~takeover.trajectories.Event`.
        summary: the first line of its command (at most 120 characters), or the path it edits or views.
        changed_files: files whose diff against the starting state changed at this event (sorted).
        source_edit: the event is a source edit (docs/protocol.md section 3.4).
        verification: the result of a verification observation (section 4.2), else ``None``.
        files: files changed against the starting state after the event; ``patch_lines``: added plus
            removed lines of that cumulative diff.
    """

    index: int
    kind: str
    source: str
    type: str
    summary: str = ""
    changed_files: list[str] = Field(default_factory=list)
    source_edit: bool = False
    verification: VerificationResult | None = None
    files: int = 0
    patch_lines: int = 0


class RunEvents(BaseModel):
    """Every event of one run with its changes and verification, or none when its states are not exact."""

    instance_id: str
    repo: str
    base_commit: str
    trajectory: str | None = None
    trajectory_record: str | None = None
    format: str | None = None
    events: int = 0
    replay: ReplayVerdict
    rows: list[EventRow] = Field(default_factory=list)
    reason: str | None = None

    def save(self, path: Path | str) -> Path:
        """Write this record as JSON, atomically."""
        return atomic_write_text(path, self.model_dump_json(indent=2) + "\n")


def event_range_error(trajectory: Trajectory, event_index: int) -> str | None:
    """Why ``event_index`` names no event of ``trajectory`` (``None`` when it does): indices are 0-based and
    end at the run's last event."""
    n = len(trajectory.events)
    if n == 0:
        return "the run has no events"
    if event_index < 0:
        return f"event {event_index} does not exist: events are numbered from 0 (this run has 0 to {n - 1})"
    if event_index >= n:
        return f"event {event_index} is past the end of the run: it has {n} events (0 to {n - 1})"
    return None


def unexact_reason(verdict: ReplayVerdict) -> str:
    """Why a run's states cannot give an exact state at any event (the verdict of an unreplayable run)."""
    return f"run is unreplayable: {verdict.reason or 'its states are not exact'}"


def _record(trajectory: Trajectory, task: SourceTask) -> dict:
    return {
        "instance_id": task.instance_id, "repo": task.repo, "base_commit": task.base_commit,
        "trajectory": trajectory.source_path, "trajectory_record": trajectory.record, "format": trajectory.format,
        "events": len(trajectory.events),
    }


def cut_from_states(trajectory: Trajectory, result: ReplayResult, event_index: int) -> tuple[HandoffPoint, str] | str:
    """``(point, patch)`` at ``event_index`` from states already computed, or the reason for refusing."""
    why = event_range_error(trajectory, event_index)
    if why is not None:
        return why
    if not result.verdict.verified:
        return unexact_reason(result.verdict)
    top = result.base_top_level
    edits = source_edits(trajectory.events, result.diffs, base_top_level=top)
    diff = result.diffs[event_index]
    point = point_at(EVENT_CUT, event_index, diff, edits, verifications(trajectory.events), base_top_level=top)
    point.unrecorded_files = result.unrecorded[event_index] if result.unrecorded else []
    return point, join_diffs(diff)


def cut_at_event(
    trajectory: Trajectory,
    task: SourceTask,
    event_index: int,
    repo_source: RepoSource | None = None,
    *,
    snapshot_repo: Path | str | None = None,
    work_dir: Path | str | None = None,
    replay: ReplaySettings | None = None,
) -> EventCut:
    """The repository state after event ``event_index`` (0-based) of ``trajectory``, or why it cannot be
    rebuilt exactly (docs/protocol.md section 4.5).

    An index outside the run is refused before any replay. Otherwise the states come from
    :func:`takeover.points.event_states.event_states` with the same arguments as
    :func:`takeover.points.analyze_run` (snapshot repository, work folder, ``replay``: the
    :class:`takeover.replay_settings.ReplaySettings`); an unreplayable run is refused with its verdict's reason.

    Raises:
        RepositoryUnavailable: the repository or ``base_commit`` cannot be obtained (replay only).
    """
    base = _record(trajectory, task)
    why = event_range_error(trajectory, event_index)
    if why is not None:
        return EventCut(**base, event_index=event_index, reason=why)
    result = event_states(trajectory, task, repo_source, snapshot_repo=snapshot_repo, work_dir=work_dir,
                          replay=replay)
    env = result.start.patch if result.start is not None else ""
    cut = cut_from_states(trajectory, result, event_index)
    if isinstance(cut, str):
        return EventCut(**base, event_index=event_index, replay=result.verdict, environment_patch=env, reason=cut)
    point, patch = cut
    return EventCut(**base, event_index=event_index, replay=result.verdict, point=point, patch=patch,
                    environment_patch=env)


def _summary(events: Sequence[Event], ev: Event) -> str:
    text = ev.command if ev.kind == "action" else command_of(events, ev.index)
    if ev.type in ("file_edit", "file_view") and ev.path:
        text = f"{ev.edit or ev.type} {ev.path}" if ev.kind == "action" else ev.path
    line = (text or ev.text or "").strip().splitlines()[0] if (text or ev.text or "").strip() else ""
    return line if len(line) <= 120 else line[:117] + "..."


def event_rows(trajectory: Trajectory, result: ReplayResult) -> list[EventRow]:
    """One :class:`EventRow` per event from states already computed (empty when they are not exact)."""
    if not result.verdict.verified:
        return []
    events, diffs, top = trajectory.events, result.diffs, result.base_top_level
    edits = set(source_edits(events, diffs, base_top_level=top))
    checks = {v.event_index: v.result for v in verifications(events)}
    rows: list[EventRow] = []
    previous: dict[str, str] = {}
    lines: dict[int, int] = {}
    for ev, diff in zip(events, diffs, strict=True):
        changed = sorted(p for p in set(previous) | set(diff) if previous.get(p) != diff.get(p))
        if id(diff) not in lines:  # stored and recorded states share one map for unchanged events
            patch = join_diffs(diff)
            lines[id(diff)] = count_changed_lines(patch) if patch else 0
        rows.append(EventRow(
            index=ev.index, kind=ev.kind, source=ev.source, type=ev.type, summary=_summary(events, ev),
            changed_files=changed, source_edit=ev.index in edits, verification=checks.get(ev.index),
            files=len(diff), patch_lines=lines[id(diff)],
        ))
        previous = diff
    return rows


def run_events(
    trajectory: Trajectory,
    task: SourceTask,
    repo_source: RepoSource | None = None,
    *,
    snapshot_repo: Path | str | None = None,
    work_dir: Path | str | None = None,
    replay: ReplaySettings | None = None,
) -> RunEvents:
    """Every event of ``trajectory`` with the files it changed, whether it is a source edit and its
    verification result (what ``takeover points --all-events`` prints), from the same states and with the
    same arguments as :func:`cut_at_event`. A run whose states are not exact has no rows and the reason.

    Raises:
        RepositoryUnavailable: the repository or ``base_commit`` cannot be obtained (replay only).
    """
    result = event_states(trajectory, task, repo_source, snapshot_repo=snapshot_repo, work_dir=work_dir,
                          replay=replay)
    reason = None if result.verdict.verified else unexact_reason(result.verdict)
    return RunEvents(**_record(trajectory, task), replay=result.verdict, rows=event_rows(trajectory, result),
                     reason=reason)

