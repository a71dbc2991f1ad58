"""The quickstart's model calls as they happen: which unit each serves, its tokens and seconds.

While the experiment runs, every model call of every worker is appended to ``OUT/model-calls.jsonl``
(:mod:`takeover.llm.call_log`, switched on by :func:`logging_calls`); :class:`CallWatcher` reads the file
from a thread of the quickstart's process and hands each call, numbered within its unit, to a callback
(the display prints one line per call). ``benchmarks/bench_quickstart.py`` reads the same file.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Self

from takeover.llm import CALL_LOG_ENV, LoggedCall, read_calls

CALLS_FILE = "model-calls.jsonl"
#: Seconds between two reads of the call log.
WATCH_INTERVAL = 0.5


@contextlib.contextmanager
def logging_calls(out: Path) -> Iterator[Path]:
    """Inside the block, this process and the workers it starts log every model call to
    ``out/model-calls.jsonl`` (appended to: a resumed quickstart adds its calls after the earlier ones)."""
    path = out / CALLS_FILE
    before = os.environ.get(CALL_LOG_ENV)
    os.environ[CALL_LOG_ENV] = str(path)
    try:
        yield path
    finally:
        if before is None:
            os.environ.pop(CALL_LOG_ENV, None)
        else:
            os.environ[CALL_LOG_ENV] = before


def unit_phrase(unit: dict) -> str:
    """Which unit a call serves, as a person reads it: ``view structured_notes``, ``takeover raw_trace``,
    then the task and point type (``model check`` outside a unit)."""
    if not unit:
        return "model check"
    what = " ".join(str(unit[k]) for k in ("stage", "view") if unit.get(k))
    where = " ".join(str(unit[k]) for k in ("instance_id", "point_type") if unit.get(k))
    return f"{what} ({where})" if where else what


def describe_call(call: LoggedCall, number: int) -> str:
    """One line for one model call: the unit, the call's number in it, tokens (prompt, of them reused from
    the server's cache when it says so, completion) and seconds; a failed attempt says its status."""
    tokens = f"{call.prompt_tokens:,} prompt tokens"
    if call.cached_tokens:
        tokens += f" ({call.cached_tokens:,} reused)"
    tokens += f", {call.completion_tokens:,} completion tokens"
    if call.estimated:
        tokens += " (estimated)"
    status = "" if call.status == "ok" else f", {call.status}"
    shape = f", {call.response_format}" if call.response_format else ""
    return f"model call {number} of {unit_phrase(call.unit)}: {tokens}, {call.seconds:.1f} s{shape}{status}"


class CallWatcher:
    """Reads ``path`` every :data:`WATCH_INTERVAL` seconds from its end at start and calls
    ``on_call(call, number)`` for each new call (``number``: 1-based within its unit). Use as a context
    manager; the last calls are read when it stops."""

    def __init__(self, path: Path, on_call: Callable[[LoggedCall, int], None]):
        self.path = path
        self.on_call = on_call
        self.calls: list[LoggedCall] = []
        self._offset = path.stat().st_size if path.exists() else 0
        self._per_unit: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="takeover-call-watch", daemon=True)

    def _read(self) -> None:
        calls, self._offset = read_calls(self.path, self._offset)
        for call in calls:
            self._per_unit[str(call.unit.get("key", ""))] += 1
            self.calls.append(call)
            self.on_call(call, self._per_unit[str(call.unit.get("key", ""))])

    def _run(self) -> None:
        while not self._stop.wait(WATCH_INTERVAL):
            self._read()

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._read()
