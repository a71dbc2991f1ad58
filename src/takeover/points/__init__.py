"""The points stage: handoff points of predecessor runs (docs/protocol.md sections 3-5).

Modules:

- ``detection.py``: the protocol's detection rules over a run's events and per-event diffs
  (:func:`detect_points`, :class:`HandoffPoint`, :class:`MissingPoint`).
- ``event_states.py``: the repository state after every event, from recorded snapshots, stored diffs or
  a verified replay (:func:`event_states`, :func:`checkpoint_method`).
- ``verification.py``, ``runner_summaries.py``: verification commands and their results (section 4).
- ``run_points.py``: the one way to find a run's points (:func:`analyze_run`) and the record later stages
  read (:class:`RunPoints`).
- ``event_cuts.py``: a cut at any event (:func:`cut_at_event`) and every event's changes
  (:func:`run_events`), docs/protocol.md section 4.5.
"""

from takeover.points.detection import (
    HandoffPoint,
    MissingPoint,
    Verification,
    command_of,
    detect_points,
    point_at,
    source_edits,
    verifications,
)
from takeover.points.event_cuts import EventCut, EventRow, RunEvents, cut_at_event, run_events
from takeover.points.event_states import checkpoint_method, event_states, recorded_diffs, stored_diffs
from takeover.points.run_points import RunPoints, analyze_run

__all__ = [
    "EventCut",
    "EventRow",
    "HandoffPoint",
    "MissingPoint",
    "RunEvents",
    "RunPoints",
    "Verification",
    "analyze_run",
    "checkpoint_method",
    "command_of",
    "cut_at_event",
    "detect_points",
    "event_states",
    "point_at",
    "recorded_diffs",
    "run_events",
    "source_edits",
    "stored_diffs",
    "verifications",
]
