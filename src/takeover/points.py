"""Handoff point detection (PROTOCOL.md section 4).

The records are shared by every later stage; detection itself is implemented with the classification
rules of :mod:`takeover.classify` (issue 4).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

PointType = Literal["after_first_source_edit", "after_first_verification_result", "after_first_post_failure_edit"]
POINT_TYPES: tuple[PointType, ...] = (
    "after_first_source_edit",
    "after_first_verification_result",
    "after_first_post_failure_edit",
)
VerificationResult = Literal["passed", "failed", "unknown"]


class HandoffPoint(BaseModel):
    """One handoff point of a predecessor run.

    Attributes:
        type: one of :data:`POINT_TYPES`.
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
    """

    type: PointType
    event_index: int
    changed_source_files: list[str] = Field(default_factory=list)
    changed_test_files: list[str] = Field(default_factory=list)
    non_source_artifacts: list[str] = Field(default_factory=list)
    latest_verification_command: str | None = None
    latest_verification_result: VerificationResult | None = None
    latest_verification_evidence: str | None = None
    validation_after_latest_source_change: Literal["passed", "failed", "unknown", "none"] = "none"
    patch_sha256: str | None = None
    patch_lines: int = 0


class MissingPoint(BaseModel):
    """A point type that does not exist in a run, with the reason (never replaced by a fallback)."""

    type: PointType
    reason: str
