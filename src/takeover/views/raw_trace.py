"""The ``raw_trace`` view block: every predecessor event up to and including the handoff event.

Each event is rendered as ``[step N | source | type]`` plus its text (:func:`takeover.views.evidence.render_event`).
By default nothing is cut (as in the paper). With a budget (``raw_trace_max_chars`` characters or
``raw_trace_max_tokens`` estimated tokens, counted over the event entries), the newest events that fit are kept, the oldest are
dropped, and the block says how many were dropped. The handoff event itself is always kept.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from takeover.llm import estimate_tokens
from takeover.trajectories.events import Trajectory
from takeover.views.evidence import render_event, visible_events
from takeover.views.prompt import render


class RawTrace(BaseModel):
    """The rendered block, events shown and events dropped by the budget."""

    block: str
    shown: int
    dropped: int


def raw_trace_block(
    trajectory: Trajectory,
    event_index: int,
    *,
    raw_trace_max_chars: int | None = None,
    raw_trace_max_tokens: int | None = None,
    template_dir: Path | str | None = None,
) -> RawTrace:
    """Render events ``0..event_index`` (see module docstring).

    Args:
        raw_trace_max_chars: character budget over the entries (``None``: no limit).
        raw_trace_max_tokens: estimated-token budget over the entries (``None``: no limit).

    Raises:
        ValueError: ``event_index`` outside the trajectory, or a budget that is not positive.
    """
    for value in (raw_trace_max_chars, raw_trace_max_tokens):
        if value is not None and value <= 0:
            raise ValueError("a raw_trace budget must be a positive number")
    entries = [render_event(e) for e in visible_events(trajectory, event_index)]
    keep = len(entries)
    budget = None
    if raw_trace_max_chars is not None or raw_trace_max_tokens is not None:
        used_chars = used_tokens = 0
        keep = 0
        for entry in reversed(entries):
            chars = used_chars + len(entry) + 2
            tokens = used_tokens + (estimate_tokens(entry) if raw_trace_max_tokens is not None else 0)
            over = ((raw_trace_max_chars is not None and chars > raw_trace_max_chars)
                    or (raw_trace_max_tokens is not None and tokens > raw_trace_max_tokens))
            if over and keep > 0:
                break
            used_chars, used_tokens, keep = chars, tokens, keep + 1
        parts = []
        if raw_trace_max_chars is not None:
            parts.append(f"{raw_trace_max_chars} characters")
        if raw_trace_max_tokens is not None:
            parts.append(f"{raw_trace_max_tokens} estimated tokens")
        budget = " and ".join(parts)
    shown = entries[len(entries) - keep :]
    dropped = len(entries) - keep
    block = render("view_raw_trace.md.j2", template_dir, entries=shown, shown=keep, dropped=dropped, budget=budget)
    return RawTrace(block=block, shown=keep, dropped=dropped)
