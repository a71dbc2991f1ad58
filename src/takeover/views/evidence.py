"""What the predecessor saw, as text: event entries for the raw trace and the note writer's evidence packet.

Rules (docs/protocol.md section 7):

- An event is rendered as ``[step N | source | type]`` followed by its text. ``N`` is 1-based
  (``Event.index + 1``), so the first event of a run is step 1.
- The evidence packet for note writing is the last :data:`PACKET_EVENTS` (80) events up to and including
  the handoff event, each clipped to :data:`PACKET_CLIP` (1,200) characters.
- For structured notes, patch text and fenced code blocks are removed before clipping. Because an
  action's command usually sits inside a fenced block (mini-swe-agent's ```` ```bash ```` block), the first
  line of the command is kept as a ``$ command`` line (at most 200 characters), so the note writer still
  knows what was run without seeing the code it wrote.
"""

from __future__ import annotations

import re

from takeover.trajectories.events import Event, Trajectory

PACKET_EVENTS = 80
PACKET_CLIP = 1200
COMMAND_CLIP = 200

_FENCE = re.compile(r"```[^\n]*\n.*?(?:```|\Z)", re.DOTALL)
_DIFF_START = re.compile(r"^(diff --git |--- a/|--- /dev/null|\+\+\+ b/|@@ -\d)")
_DIFF_BODY = re.compile(r"^([+\- \\]|@@|index |new file mode|deleted file mode|similarity index|rename (from|to) |old mode|new mode)")


def event_body(event: Event, *, edit_text: bool = True) -> str:
    """The readable text of an event; built from its fields when the reader left ``text`` empty.

    A file edit's text (the replaced and the new text, or a written file's content) is part of the event
    (docs/protocol.md section 7: the raw trace holds every event whole): readers that keep only a short
    ``text`` such as ``Edit path`` get it appended under labels. ``edit_text=False`` leaves it out, for the
    note writer's evidence packet, which carries no code (section 7.4)."""
    edits = [(label, value.rstrip()) for label, value in
             (("old text", event.old_text), ("new text", event.new_text), ("file text", event.file_text))
             if value and value.strip()] if edit_text else []
    if event.text and event.text.strip():
        body = event.text.rstrip()
        missing = [(label, value) for label, value in edits if value.strip() not in body]
        return "\n".join([body, *(f"{label}:\n{value}" for label, value in missing)])
    parts: list[str] = []
    if event.thought:
        parts.append(event.thought.strip())
    if event.command:
        parts.append(event.command.rstrip())
    if event.path:
        parts.append(f"{event.edit or event.type} {event.path}")
    parts += [f"{label}:\n{value}" for label, value in edits]
    return "\n".join(parts)


def event_header(event: Event) -> str:
    """``[step N | source | type]`` with 1-based ``N``."""
    return f"[step {event.index + 1} | {event.source} | {event.type}]"


def render_event(event: Event) -> str:
    """Header line plus the event's text (the raw-trace entry)."""
    body = event_body(event)
    return f"{event_header(event)}\n{body}" if body else event_header(event)


def visible_events(trajectory: Trajectory, event_index: int) -> list[Event]:
    """Events ``0..event_index`` (inclusive): everything the predecessor had produced or seen at the point."""
    if event_index < 0 or event_index >= len(trajectory.events):
        raise ValueError(f"event index {event_index} outside the trajectory's {len(trajectory.events)} events")
    return trajectory.events[: event_index + 1]


def strip_code(text: str) -> str:
    """``text`` with fenced code blocks and unified-diff text replaced by short markers."""
    text = _FENCE.sub("[code block removed]", text)
    out: list[str] = []
    in_diff = False
    for line in text.splitlines():
        if _DIFF_START.match(line):
            if not in_diff:
                out.append("[patch text removed]")
            in_diff = True
            continue
        if in_diff and (_DIFF_BODY.match(line) or line == ""):
            continue
        in_diff = False
        out.append(line)
    return "\n".join(out).strip()


def clip(text: str, limit: int = PACKET_CLIP) -> str:
    """The first ``limit`` characters, with a marker saying how many were cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [... {len(text) - limit} more characters clipped]"


def packet_entry(event: Event, *, remove_code: bool) -> str:
    """One event of the evidence packet (header + body, code removed when asked, clipped)."""
    body = event_body(event, edit_text=not remove_code)
    if remove_code:
        body = strip_code(body)
        if event.kind == "action" and event.command:
            first = event.command.strip().splitlines()[0] if event.command.strip() else ""
            more = " ..." if "\n" in event.command.strip() else ""
            body = (body + "\n" if body else "") + f"$ {first[:COMMAND_CLIP]}{more}"
    return f"{event_header(event)}\n{clip(body)}" if body else event_header(event)


def evidence_packet(trajectory: Trajectory, event_index: int, *, remove_code: bool) -> tuple[list[str], int]:
    """The note writer's evidence: (entries of the last 80 events up to the point, number of earlier events)."""
    events = visible_events(trajectory, event_index)
    window = events[-PACKET_EVENTS:]
    return [packet_entry(e, remove_code=remove_code) for e in window], len(events) - len(window)
