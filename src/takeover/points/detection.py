"""Handoff point detection (docs/protocol.md section 4): the three point types of one run, from its events
and the repository state after each event, and the reason for each point type the run does not have.

The rules for file classes are :mod:`takeover.repository_states.file_classes`'s; those for verification
commands and
their results are :mod:`takeover.points.verification`'s.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from pydantic import BaseModel, Field

from takeover._util.patches import count_changed_lines
from takeover.points.verification import (
    failure_evidence,
    is_restore_command,
    is_verification_command,
    verification_result,
)
from takeover.repository_states.file_classes import file_class
from takeover.repository_states.snapshots import join_diffs, patch_sha256
from takeover.trajectories.events import Event
from takeover.vocabulary import (
    POINT_TYPES,
    EventCut,
    PointType,
    SessionEnd,
    ValidationStatus,
    VerificationResult,
)


class HandoffPoint(BaseModel):
    """One handoff point of a predecessor run.

    Attributes:
        type: one of :data:`POINT_TYPES`, ``session_end`` for the last event of an interrupted session
            (:data:`takeover.vocabulary.SESSION_END`), or ``event`` for a cut at an event the user chose
            (:data:`takeover.vocabulary.EVENT_CUT`).
        event_index: index (0-based, into ``Trajectory.events``) of the handoff event; the checkpoint is
            the repository after this event and the successor sees events ``0..event_index`` at most.
        changed_source_files: source files whose cumulative diff is non-empty at the point (sorted).
        changed_test_files: test files changed at the point (sorted).
        non_source_artifacts: other changed or created paths at the point (sorted).
        latest_verification_command: the last verification command observed at or before the point.
        latest_verification_result: its result (``passed``/``failed``/``unknown``), ``None`` if none.
        latest_verification_evidence: a failure line from that observation, at most 240 characters.
        validation_after_latest_source_change: result of the latest verification that came after the
            latest source edit at or before the point: ``passed``/``failed``/``unknown``/``none``.
        patch_sha256: sha256 of the cumulative diff (UTF-8) at the point.
        patch_lines: added + removed lines of that diff.
        unrecorded_files: files of that diff whose content the record does not determine: a replayed
            command filled them with a program's output the record never shows (docs/protocol.md section
            5.3, extension "Unrecorded output"); a replay elsewhere may give other bytes for them, and only
            for them (sorted).
    """

    type: PointType | SessionEnd | EventCut
    event_index: int
    changed_source_files: list[str] = Field(default_factory=list)
    changed_test_files: list[str] = Field(default_factory=list)
    non_source_artifacts: list[str] = Field(default_factory=list)
    latest_verification_command: str | None = None
    latest_verification_result: VerificationResult | None = None
    latest_verification_evidence: str | None = None
    validation_after_latest_source_change: ValidationStatus = "none"
    patch_sha256: str | None = None
    patch_lines: int = 0
    unrecorded_files: list[str] = Field(default_factory=list)


class MissingPoint(BaseModel):
    """A point type that does not exist in a run, with the reason (never replaced by a fallback)."""

    type: PointType
    reason: str


class Verification(BaseModel):
    """One observation of a verification command (docs/protocol.md section 4)."""

    event_index: int
    command: str
    result: VerificationResult
    evidence: str | None = None


def command_of(events: Sequence[Event], index: int) -> str | None:
    """The shell command an event ran or answers: its own ``command``, or, for an observation, the
    command of the action it answers (``cause``, else the nearest earlier action)."""
    ev = events[index]
    if ev.command:
        return ev.command
    if ev.kind != "observation":
        return None
    if ev.cause is not None and 0 <= ev.cause < len(events):
        return events[ev.cause].command
    for j in range(index - 1, -1, -1):
        if events[j].kind == "action":
            return events[j].command
    return None


def verifications(events: Sequence[Event]) -> list[Verification]:
    """Every observation of a verification command, in order, with its result and failure evidence."""
    found = []
    for i, ev in enumerate(events):
        if ev.kind != "observation":
            continue
        command = command_of(events, i)
        if not is_verification_command(command):
            continue
        result = verification_result(ev.text, ev.exit_code)
        evidence = failure_evidence(ev.text) if result == "failed" else None
        found.append(Verification(event_index=i, command=command or "", result=result, evidence=evidence))
    return found


def source_edits(
    events: Sequence[Event], diffs: Sequence[Mapping[str, str]], *, base_top_level: Collection[str] | None = None
) -> list[int]:
    """Indices of source edits: events after which the per-file diff of at least one source file differs
    from its diff after the previous event (docs/protocol.md section 3.4). Test and artifact changes never
    count. ``base_top_level``: the top-level names of ``base_commit``, which the scratch rule needs
    (:func:`takeover.repository_states.file_classes.is_scratch_file`; ``None`` when unknown).

    Raises:
        ValueError: ``diffs`` and ``events`` differ in length.
    """
    if len(diffs) != len(events):
        raise ValueError(f"diffs has {len(diffs)} entries for {len(events)} events")
    edits = []
    previous: Mapping[str, str] = {}
    for i, current in enumerate(diffs):
        changed = set(previous) | set(current)
        if any(file_class(p, base_top_level=base_top_level) == "source" and previous.get(p) != current.get(p)
               for p in changed):
            edits.append(i)
        previous = current
    return edits


def point_at(
    kind: PointType | SessionEnd | EventCut, index: int, diff: Mapping[str, str], edits: Sequence[int],
    checks: Sequence[Verification], *, base_top_level: Collection[str] | None = None,
) -> HandoffPoint:
    """What a point at event ``index`` records (docs/protocol.md section 4.4).

    Args:
        kind: the point's type.
        index: the handoff event (0-based).
        diff: ``{path: cumulative diff against the starting state}`` after that event.
        edits: indices of the run's source edits (:func:`source_edits`), in order.
        checks: the run's verification observations (:func:`verifications`), in order.
        base_top_level: the top-level names of ``base_commit`` for the scratch rule (``None``: unknown).
    """
    classes: dict[str, list[str]] = {"source": [], "test": [], "artifact": []}
    for path in sorted(diff):
        classes[file_class(path, base_top_level=base_top_level)].append(path)
    seen = [v for v in checks if v.event_index <= index]
    latest = seen[-1] if seen else None
    last_edit = max((e for e in edits if e <= index), default=None)
    after = [v for v in seen if last_edit is not None and v.event_index > last_edit]
    patch = join_diffs(diff)
    return HandoffPoint(
        type=kind,
        event_index=index,
        changed_source_files=classes["source"],
        changed_test_files=classes["test"],
        non_source_artifacts=classes["artifact"],
        latest_verification_command=latest.command if latest else None,
        latest_verification_result=latest.result if latest else None,
        latest_verification_evidence=latest.evidence if latest else None,
        validation_after_latest_source_change=after[-1].result if after else "none",
        patch_sha256=patch_sha256(patch),
        patch_lines=count_changed_lines(patch) if patch else 0,
    )


def detect_points(
    events: Sequence[Event], diffs: Sequence[Mapping[str, str]], *, base_top_level: Collection[str] | None = None
) -> tuple[list[HandoffPoint], list[MissingPoint]]:
    """The three handoff points of a run (docs/protocol.md section 4), and the reason for each missing one.

    Args:
        events: the run's events (``Trajectory.events``).
        diffs: ``diffs[i]`` = ``{path: cumulative diff against the starting state}`` after event ``i``.
        base_top_level: names of the top-level files and folders of ``base_commit``
            (:func:`takeover.repository_states.snapshots.top_level_names`): a folder the repository has is
            never a scratch
            folder (docs/protocol.md section 3.2). ``None`` when unknown: the names alone decide.

    Rules:
        - ``after_first_source_edit``: the first source edit (section 3 definition).
        - ``after_first_verification_result``: the first observation of a verification command after the
          first source edit (verification before any edit does not count).
        - ``after_first_post_failure_edit``: the first source edit after the first *failed* verification
          result that follows the first source edit; events running ``git stash/restore/checkout/reset/
          clean`` or copying a backup back (:func:`~takeover.points.verification.is_restore_command`) are
          not counted as this edit.

    Returns:
        ``(points, missing)``; points in :data:`POINT_TYPES` order. A missing point is never replaced.

    Raises:
        ValueError: ``diffs`` and ``events`` differ in length.
    """
    edits = source_edits(events, diffs, base_top_level=base_top_level)
    checks = verifications(events)

    def at(kind: PointType, index: int) -> HandoffPoint:
        return point_at(kind, index, diffs[index], edits, checks, base_top_level=base_top_level)

    points: list[HandoffPoint] = []
    missing: list[MissingPoint] = []
    if not edits:
        reason = "no source edit in the run"
        touched = sorted(set().union(*[set(d) for d in diffs])) if diffs else []
        if touched:
            reason += f" (only test files or non-source artifacts changed: {', '.join(touched[:5])})"
        return [], [MissingPoint(type=t, reason=reason) for t in POINT_TYPES]
    first_edit = edits[0]
    points.append(at("after_first_source_edit", first_edit))

    after_edit = [v for v in checks if v.event_index > first_edit]
    if after_edit:
        first_check = after_edit[0].event_index
        points.append(at("after_first_verification_result", first_check))
    else:
        missing.append(MissingPoint(
            type="after_first_verification_result",
            reason=f"no verification command observed after the first source edit (event {first_edit})",
        ))

    failed = next((v for v in after_edit if v.result == "failed"), None)
    if failed is None:
        reason = f"no failed verification result after the first source edit (event {first_edit})"
        missing.append(MissingPoint(type="after_first_post_failure_edit", reason=reason))
    else:
        later = [e for e in edits if e > failed.event_index and not is_restore_command(command_of(events, e))]
        if later:
            points.append(at("after_first_post_failure_edit", later[0]))
        else:
            missing.append(MissingPoint(
                type="after_first_post_failure_edit",
                reason=f"no source edit after the first failed verification (event {failed.event_index})"
                " other than git stash/restore/checkout/reset/clean or a backup copied back",
            ))
    return points, missing
