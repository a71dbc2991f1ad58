"""The predecessor's own message history at a cut: the chat messages its model was sent, where the
recording format keeps them (docs/protocol.md section 7.10, the ``self_notes`` view).

A format keeps them when its file holds the chat as the model saw it: mini-swe-agent's ``messages``
(:func:`takeover.trajectories.mini_swe_agent.chat_history`), and takeover's own runs of the mini-swe-agent
runtime, whose folder keeps mini-swe-agent's own record (``<instance_id>.traj.json``; used only when its events
are the run's events, one for one). The other formats record events (OpenHands' event stream, SWE-agent's steps,
Claude Code's and Codex's session logs, ATIF steps, takeover's runs of other runtimes), not the exact messages
each call was sent, and rebuilding them would put our rendering in the predecessor's mouth: a view that needs
the history refuses those runs, naming the format.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from takeover.errors import InputError
from takeover.trajectories import mini_swe_agent, takeover_run
from takeover.trajectories._common import Source
from takeover.trajectories.events import Event, Trajectory


def _shape(event: Event) -> tuple:
    return event.kind, event.type, event.command, event.path, event.cause


def _takeover_run_history(trajectory: Trajectory, event_index: int) -> list[dict]:
    """The history of a takeover run, from the mini-swe-agent record in its folder, when that record's events
    are the run's own (a runtime that keeps no such record is refused)."""
    folder = Path(str(trajectory.metadata.get("run_dir") or Path(trajectory.source_path or ".").parent))
    records = sorted(folder.glob("*.traj.json"))
    if not records:
        raise InputError(folder, "this takeover run keeps no message history (only runs of the mini-swe-agent "
                         "runtime keep its record, <instance_id>.traj.json, with the messages its model was sent)",
                         field="format")
    native = mini_swe_agent.read(Source(records[0]))[0]
    if [_shape(e) for e in native.events[: event_index + 1]] != [_shape(e) for e in trajectory.events[: event_index + 1]]:
        raise InputError(records[0], "its events differ from the run's events up to the cut, so its messages "
                         "cannot be cut there with certainty", field="messages")
    return mini_swe_agent.chat_history(native, event_index)


#: Format name -> reader of its chat history up to a cut.
HISTORIES: dict[str, Callable[[Trajectory, int], list[dict]]] = {
    mini_swe_agent.NAME: mini_swe_agent.chat_history,
    takeover_run.FORMAT: _takeover_run_history,
}


def has_history(trajectory: Trajectory) -> bool:
    """Whether ``trajectory``'s format keeps the messages its model was sent."""
    return trajectory.format in HISTORIES


def message_history(trajectory: Trajectory, event_index: int) -> list[dict]:
    """The chat messages holding events ``0..event_index`` of ``trajectory`` and nothing later (system
    message and task first), as the predecessor's model was sent them.

    Raises:
        InputError: the format keeps no message history (names the format and the ones that do), the file
            is gone or damaged, or the cut falls inside one message.
    """
    read = HISTORIES.get(trajectory.format)
    if read is None:
        raise InputError(trajectory.source_path or trajectory.format,
                         f"a {trajectory.format} run keeps no message history (the messages its model was sent); "
                         "only mini-swe-agent runs and takeover's own runs of it do", field="format")
    if not 0 <= event_index < len(trajectory.events):
        raise InputError(trajectory.source_path or trajectory.format,
                         f"event {event_index} is outside the run's {len(trajectory.events)} events")
    return read(trajectory, event_index)
