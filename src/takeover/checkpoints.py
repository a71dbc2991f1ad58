"""Checkpoint materialization (PROTOCOL.md section 5).

A checkpoint folder holds ``checkpoint.json`` (:class:`Checkpoint`), ``checkpoint.patch`` (the
predecessor's cumulative diff against ``base_commit`` after the handoff event) and, once views are
built, ``views/<view>.md`` with each view's full takeover prompt. Materialization is implemented in
issue 4; the record is shared.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from takeover.points import HandoffPoint

CheckpointMethod = Literal["recorded_snapshot", "stored_diff", "verified_replay"]
HandoffState = Literal["invalid", "resolved_preserve", "needs_completion", "broke_existing"]


class Checkpoint(BaseModel):
    """The frozen repository state at a handoff point.

    Attributes:
        instance_id, repo, base_commit: the source task.
        point: the handoff point (type, event index, files, verification context).
        files: paths changed by ``checkpoint.patch``.
        patch_sha256: sha256 of ``checkpoint.patch`` bytes.
        method: how the diff was obtained, best first: ``recorded_snapshot`` (our runner),
            ``stored_diff`` (per-step diffs in the trajectory), ``verified_replay``.
        trajectory: path of the predecessor trajectory file and the record in it.
        handoff_state: official grading label (section 6), when graded; never shown to the successor.
    """

    instance_id: str
    repo: str
    base_commit: str
    point: HandoffPoint
    files: list[str] = Field(default_factory=list)
    patch_sha256: str
    method: CheckpointMethod
    trajectory: str | None = None
    trajectory_record: str | None = None
    handoff_state: HandoffState | None = None
