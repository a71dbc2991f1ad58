"""The predecessor's own message history at a cut: the chat messages its model was sent, where the
recording format keeps them (docs/protocol.md section 7.10, the ``self_notes`` view).

A format keeps them when its file holds the chat as the model saw it: mini-swe-agent's ``messages``
(:func:`takeover.trajectories.mini_swe_agent.chat_history`). The other formats record events (OpenHands'
event stream, SWE-agent's steps, Claude Code's and Codex's session logs, ATIF steps, takeover's own runs), not
the exact messages each call was sent, and rebuilding them would put our rendering in the predecessor's
mouth: a view that needs the history refuses those runs, naming the format.
"""

from __future__ import annotations

from collections.abc import Callable

from takeover.errors import InputError
from takeover.trajectories import mini_swe_agent
from takeover.trajectories.events import Trajectory

#: Format name -> reader of its chat history up to a cut.
HISTORIES: dict[str, Callable[[Trajectory, int], list[dict]]] = {
    mini_swe_agent.NAME: mini_swe_agent.chat_history,
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
                         f"only {', '.join(sorted(HISTORIES))} runs do", field="format")
    if not 0 <= event_index < len(trajectory.events):
        raise InputError(trajectory.source_path or trajectory.format,
                         f"event {event_index} is outside the run's {len(trajectory.events)} events")
    return read(trajectory, event_index)
