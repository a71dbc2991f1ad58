"""The protocol's vocabulary: every name a study, a record or a report uses for its concepts.

This is the one home of these names (``docs/protocol.md`` section 1). Every other module imports them from
here; a ``Literal`` type and the tuple of its values (in the protocol's order) are defined side by side,
so that a type checker and a loop over the values can never disagree.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, get_args

# --- handoff views (docs/protocol.md section 7) -------------------------------------------------------

PaperView = Literal["repo_only", "raw_trace", "summary_notes", "structured_notes"]
#: The paper's four views, in the protocol's order: the default views of a study, first in every table and
#: chart. Any other registered view (``takeover.views.view_registry.HANDOFF_VIEWS``) comes after them.
VIEWS: tuple[PaperView, ...] = get_args(PaperView)
#: A view's name: one of :data:`VIEWS` or any other registered view's (a study's view file's included).
ViewName = str
#: The view every other view is compared with (docs/protocol.md section 9).
BASE_VIEW: PaperView = "repo_only"

# --- handoff points (docs/protocol.md section 4) ------------------------------------------------------

PointType = Literal["after_first_source_edit", "after_first_verification_result", "after_first_post_failure_edit"]
#: The three deterministic point types, in the protocol's order.
POINT_TYPES: tuple[PointType, ...] = get_args(PointType)
#: The handoff point of an interrupted interactive session (``takeover handoff``): its last event. Not one
#: of the study's point types (a person chose the moment), so it is never in :data:`POINT_TYPES`.
SessionEnd = Literal["session_end"]
SESSION_END: SessionEnd = "session_end"
#: The handoff point of a cut at an event the user chose (``--event N``, docs/protocol.md section 4.5): the
#: point records name the event (``type`` ``event`` and its ``event_index``) instead of a point type. Not one
#: of the study's point types, so it is never in :data:`POINT_TYPES`.
EventCut = Literal["event"]
EVENT_CUT: EventCut = "event"

# --- handoff states (docs/protocol.md section 6) ------------------------------------------------------

HandoffState = Literal["needs_completion", "resolved_preserve", "broke_existing", "invalid"]
#: Handoff states in report order: the three labels of the paper, then a patch that does not apply.
HANDOFF_STATES: tuple[HandoffState, ...] = get_args(HandoffState)

# --- file classes and verification (docs/protocol.md sections 3 and 4) --------------------------------

FileClass = Literal["source", "test", "artifact"]
FILE_CLASSES: tuple[FileClass, ...] = get_args(FileClass)

VerificationResult = Literal["passed", "failed", "unknown"]
VERIFICATION_RESULTS: tuple[VerificationResult, ...] = get_args(VerificationResult)
#: Result of the latest verification after the latest source change; ``none`` when there was none.
ValidationStatus = Literal["passed", "failed", "unknown", "none"]

#: The continuation label of structured notes (docs/protocol.md section 7), from what the predecessor
#: observed, never from official grading.
ContinuationLabel = Literal[
    "source change with failing validation",
    "validated by predecessor",
    "needs verification",
    "no source change observed",
]
CONTINUATION_LABELS: tuple[ContinuationLabel, ...] = get_args(ContinuationLabel)

# --- checkpoints (docs/protocol.md section 5) ---------------------------------------------------------

#: Exact sources of a checkpoint's diff, best first.
CheckpointMethod = Literal["recorded_snapshot", "stored_diff", "verified_replay"]
CHECKPOINT_METHODS: tuple[CheckpointMethod, ...] = get_args(CheckpointMethod)

# --- agent runs (docs/protocol.md section 8) ----------------------------------------------------------

RunKind = Literal["predecessor", "takeover"]
#: How the agent states its actions: a fenced command in text (the paper's protocol) or native tool calls.
ActionProtocol = Literal["text", "tools"]
#: The action protocol of a run that names none (the paper's).
DEFAULT_PROTOCOL: ActionProtocol = "text"
#: The agent runtime of a run that names none, and of every run folder written before runtimes had names.
DEFAULT_AGENT = "mini-swe-agent"
#: Where the commands of a run run when it names no command backend (``takeover.agents.command_backends``
#: has the backends by name).
DEFAULT_COMMAND_BACKEND = "local"


class ExitStatus(StrEnum):
    """Why a run ended. Each limit has its own status so that no two causes are ever merged."""

    submitted = "submitted"
    """The agent ran the submission command (mini-swe-agent ``Submitted``)."""
    step_limit = "step_limit"
    """``step_limit`` model calls were made (format-error turns count as steps)."""
    time_limit = "time_limit"
    """The run's wall-clock limit elapsed (checked before every model call)."""
    token_limit = "token_limit"
    """Cumulative prompt tokens reached the run's prompt token limit."""
    cost_limit = "cost_limit"
    """Cumulative cost (US dollars, litellm's price table) reached ``cost_limit``."""
    format_errors = "format_errors"
    """Too many responses in a row had no (or more than one) action."""
    model_error = "model_error"
    """The endpoint failed after its retries (HTTP errors, timeouts, refused connections)."""
    environment_error = "environment_error"
    """The workspace, sandbox or container failed (not a failing command: those are observations)."""


#: Exit statuses that are failures of the infrastructure, not of the agent: such runs stay in the
#: denominator and are reported apart (docs/protocol.md section 9).
INFRA_EXIT_STATUSES: frozenset[ExitStatus] = frozenset({ExitStatus.model_error, ExitStatus.environment_error})
