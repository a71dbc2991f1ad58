"""Plumbing shared by the readers of interactive agents' session logs (Claude Code, Codex CLI).

Both formats are JSON Lines written while a person works with the agent; one file is one session (one
:class:`~takeover.trajectories.events.Trajectory`). Their edit tools can fail (a rejected call, a text
that is not in the file, a patch that does not apply); such a call changed nothing, and its events say so
with :func:`takeover.trajectories._common.mark_not_applied`.
"""

from __future__ import annotations

from typing import Any

from takeover.trajectories._common import Ctx, Source


def session_records(source: Source) -> list[tuple[Ctx, dict]]:
    """Every record of a session file with its :class:`Ctx` (``line N``).

    Raises:
        InputError: a record is not a JSON object (names the file and the line).
    """
    out = []
    for label, record in source.records():
        ctx = Ctx(source.path, label or "line 1")
        if not isinstance(record, dict):
            raise ctx.error(f"expected a JSON object, got {type(record).__name__}")
        out.append((ctx, record))
    return out


def head(source: Source, limit: int = 20) -> list[Any]:
    """The first ``limit`` top-level records (what detection looks at; never raises for foreign JSON)."""
    return [record for _, record in source.records()[:limit]]


def count(value: Any, ctx: Ctx, key: str) -> int | None:
    """A token count: a non-negative integer, or ``None`` when absent or null.

    Raises:
        InputError: present but not a non-negative integer (names the field).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ctx.error(f"expected a non-negative integer (tokens), got {value!r}", key)
    return value
