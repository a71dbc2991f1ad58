"""One row of ``results.csv``: a planned takeover run joined with its grading and its point's handoff state
(docs/protocol.md sections 8.3 and 9).

The columns are the fields of :class:`ResultRow`, in order; each is a field of the unit records it comes
from (:mod:`takeover.results.records`), under the same name: the takeover unit's labels
(:data:`LABEL_COLUMNS`), the handoff state of its point (a ``handoff_state`` unit's output), its run's
counts and metrics (:data:`RUN_OUTPUT_COLUMNS`, of :class:`~takeover.results.records.TakeoverRunOutput`),
its grading (:data:`GRADE_OUTPUT_COLUMNS`, of :class:`~takeover.results.records.GradeOutput`) and the
unit's own status (:data:`STATUS_COLUMNS`). :mod:`takeover.report.rows` builds the rows from the unit files.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from takeover.results.records import GradeOutput, TakeoverRunOutput, UnitLabels
from takeover.vocabulary import EventCut, ExitStatus, HandoffState, PointType, ViewName


class ResultRow(BaseModel):
    """One planned takeover run, as a row of ``results.csv`` (the columns in this order).

    Attributes:
        successor, instance_id, point_type, view: the takeover unit's labels (``point_type`` ``event``
            for a cut at an event, docs/protocol.md section 4.5: the runs of Inspect's handoff task).
        handoff_state: the handoff state of the run's point (its checkpoint patch graded; None when not
            graded).
        resolved: the run's final patch resolves the task; false for a run that did not finish or was not
            graded (docs/protocol.md section 9).
        agent_events, prompt_tokens, completion_tokens, initial_prompt_chars, initial_prompt_tokens,
            wall_seconds, exit_status, checkpoint_diff_preserved, only_source_files_changed: the finished
            run's output (events, tokens, characters, seconds); None when it did not finish.
        fail_to_pass_rate, pass_to_pass_rate: of the final patch's grading (None when a list is empty or it
            was not graded).
        flaky: the grading's verdict changed with the hash seed: the tests that flipped and both seeds
            (:mod:`takeover.grading.flaky`); such a row is neither solved nor a failure in the report.
        status: ``done``, ``failed``, ``missing``, ``blocked`` or ``unreadable`` (another tool's record of the
            run, a Harbor trial or an Inspect sample, that cannot be read: not solved, and the reason names
            the file); failure_kind: ``infrastructure`` or ``agent`` (an agent that stopped without
            submitting); reason: why it failed.
    """

    model_config = ConfigDict(extra="forbid")

    successor: str
    instance_id: str
    point_type: PointType | EventCut
    handoff_state: HandoffState | None = None
    view: ViewName
    resolved: bool = False
    agent_events: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    initial_prompt_chars: int | None = None
    initial_prompt_tokens: int | None = None
    wall_seconds: float | None = None
    exit_status: ExitStatus | None = None
    checkpoint_diff_preserved: bool | None = None
    only_source_files_changed: bool | None = None
    fail_to_pass_rate: float | None = None
    pass_to_pass_rate: float | None = None
    status: Literal["done", "failed", "missing", "blocked", "unreadable"]
    failure_kind: Literal["infrastructure", "agent"] | None = None
    reason: str | None = None
    flaky: str | None = None


#: Columns of ``results.csv``, one row per planned takeover run.
RESULT_COLUMNS: list[str] = list(ResultRow.model_fields)
#: Columns that are the takeover unit's labels (:class:`~takeover.results.records.UnitLabels`).
LABEL_COLUMNS = tuple(c for c in RESULT_COLUMNS if c in UnitLabels.model_fields)
#: Columns from the run's point: the handoff state of its checkpoint
#: (:class:`~takeover.results.records.HandoffStateOutput`), not that of the run's final patch.
POINT_COLUMNS = ("handoff_state",)
#: Fields of a finished takeover unit's ``output`` copied into its row.
RUN_OUTPUT_COLUMNS = tuple(c for c in RESULT_COLUMNS if c in TakeoverRunOutput.model_fields)
#: Fields of a finished grade unit's ``output`` copied into its row.
GRADE_OUTPUT_COLUMNS = tuple(c for c in RESULT_COLUMNS if c in GradeOutput.model_fields and c not in POINT_COLUMNS)
#: Columns that say whether the run and its grading finished, and why not.
STATUS_COLUMNS = ("status", "failure_kind", "reason")
