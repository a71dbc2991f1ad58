"""A log of model calls as they happen, one JSON line per attempt, for progress displays and benchmarks.

When ``$TAKEOVER_CALL_LOG`` names a file, every attempt of a chat completion made through
:class:`takeover.llm.ModelClient` in this process appends one :class:`LoggedCall` to it, the moment the
attempt ends. ``$TAKEOVER_CALL_UNIT`` (set by :func:`serving_unit` around a unit of work) says which unit the
call serves. Worker processes inherit both variables, so one file collects the calls of every worker; each
line is written with one ``write`` on a file opened for appending, so lines of two processes never mix.

The quickstart reads the file to print a line per call (:mod:`takeover.quickstart`), and
``benchmarks/bench_quickstart.py`` reads it for its per-call figures. Nothing else depends on it: without
the variable nothing is written.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

CALL_LOG_ENV = "TAKEOVER_CALL_LOG"
CALL_UNIT_ENV = "TAKEOVER_CALL_UNIT"


class LoggedCall(BaseModel):
    """One attempt of one model call (units: tokens and seconds).

    Attributes:
        unit: the unit of work it served (``stage``, ``key`` and the unit's labels), ``{}`` outside one.
        model: the model name sent; at: end of the attempt (seconds since the epoch); pid: the process.
        attempt, status, seconds, finish_reason, error: as in :class:`takeover.llm.CallAttempt`.
        prompt_tokens, completion_tokens: the attempt's usage (0 when it reported none).
        cached_tokens: prompt tokens the endpoint says it served from its cache (``None``: not reported).
        estimated: a count was estimated (the endpoint reported none).
        response_format: the ``response_format`` mode sent (``None``: none was sent).
    """

    unit: dict[str, Any] = Field(default_factory=dict)
    model: str
    at: float
    pid: int
    attempt: int
    status: str
    seconds: float
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None
    estimated: bool = False
    response_format: str | None = None
    error: str | None = None


def current_unit() -> dict[str, Any]:
    """The unit this process serves (``$TAKEOVER_CALL_UNIT``), ``{}`` when none or unreadable."""
    try:
        value = json.loads(os.environ.get(CALL_UNIT_ENV) or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


@contextlib.contextmanager
def serving_unit(unit: dict[str, Any]) -> Iterator[None]:
    """Inside the block, logged calls name ``unit`` (a JSON object: stage, key, labels)."""
    before = os.environ.get(CALL_UNIT_ENV)
    os.environ[CALL_UNIT_ENV] = json.dumps(unit, sort_keys=True, default=str)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CALL_UNIT_ENV, None)
        else:
            os.environ[CALL_UNIT_ENV] = before


def log_call(call: LoggedCall) -> None:
    """Append ``call`` to ``$TAKEOVER_CALL_LOG`` (nothing when it is unset; a failing write is ignored:
    the log is for watching, never a reason for a call to fail)."""
    path = os.environ.get(CALL_LOG_ENV)
    if not path:
        return
    line = (call.model_dump_json() + "\n").encode()
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def logged_call(model: str, attempt: Any) -> LoggedCall:
    """The :class:`LoggedCall` of a :class:`takeover.llm.CallAttempt` made now in this process."""
    usage = attempt.usage
    return LoggedCall(
        unit=current_unit(), model=model, at=time.time(), pid=os.getpid(), attempt=attempt.attempt,
        status=attempt.status, seconds=attempt.seconds, finish_reason=attempt.finish_reason,
        prompt_tokens=usage.prompt_tokens if usage else 0, completion_tokens=usage.completion_tokens if usage else 0,
        cached_tokens=usage.cached_tokens if usage else None, estimated=bool(usage and usage.estimated),
        response_format=attempt.response_format, error=attempt.error,
    )


def read_calls(path: Path | str, offset: int = 0) -> tuple[list[LoggedCall], int]:
    """The complete lines of a call log from byte ``offset`` on, and the offset after the last complete line
    (a line still being written is left for the next read). A missing file gives ``([], offset)``;
    unreadable lines are skipped."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except FileNotFoundError:
        return [], offset
    end = data.rfind(b"\n") + 1
    calls = []
    for line in data[:end].splitlines():
        with contextlib.suppress(ValueError):
            calls.append(LoggedCall.model_validate_json(line))
    return calls, offset + end
