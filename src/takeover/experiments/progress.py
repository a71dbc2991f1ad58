"""Progress of an experiment: a live rich table on a terminal, one plain line per event otherwise.

:class:`ProgressTracker` counts units per stage from the engine's events; :class:`LiveProgress` shows it as
a table that updates in place; :class:`ProgressLines` prints one line per finished unit and per finished
stage (time of day, counts, seconds, tokens) for logs, CI and cluster jobs, where nobody watches a terminal
and a live display would print nothing until the end. :func:`show_progress` picks one.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

from rich.console import Console
from rich.live import Live
from rich.table import Table

from takeover.experiments.engine import ProgressCallback, ProgressEvent


@dataclass
class StageProgress:
    """Counts of one stage's units (``reused``: found finished from an earlier run), the tokens they spent,
    and when the stage started (its first unit, or its plan when every unit is reused) and ended
    (``time.monotonic`` seconds). Stages may overlap: a takeover run starts as soon as its view exists."""

    total: int = 0
    reused: int = 0
    done: int = 0
    running: int = 0
    failed: int = 0
    tokens: int = 0
    started: float | None = None
    ended: float | None = None

    @property
    def elapsed(self) -> float:
        """Seconds from the stage's start to its end (or to now while it runs)."""
        if self.started is None:
            return 0.0
        return (self.ended or time.monotonic()) - self.started


@dataclass
class ProgressTracker:
    """Counts per stage from :class:`ProgressEvent` s; a rich renderable (``__rich__``) of the table.

    Usable without a display too (the quickstart can read ``stages``).
    """

    stages: dict[str, StageProgress] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __call__(self, event: ProgressEvent) -> None:
        st = self.stages.setdefault(event.stage, StageProgress())
        if event.kind == "planned":
            st.total = event.total
            st.reused = event.reused
            st.done = event.reused - event.reused_failed
            st.failed = event.reused_failed
            st.tokens = event.reused_tokens
            st.started = time.monotonic() if event.reused or event.total == 0 else None
            st.ended = None
            if st.total == st.reused:
                st.ended = st.started
        elif event.kind == "started":
            st.running += 1
        if event.kind in ("started", "finished") and st.started is None:
            st.started = time.monotonic()  # a stage starts with its first unit (stages may overlap)
        if event.kind == "finished" and event.result is not None:
            if event.reused_result:
                st.reused += 1
            elif not event.blocked:
                st.running = max(0, st.running - 1)
            if event.result.status == "done":
                st.done += 1
            else:
                st.failed += 1
            st.tokens += event.result.prompt_tokens + event.result.completion_tokens
            if st.done + st.failed >= st.total:
                st.ended = time.monotonic()

    def table(self) -> Table:
        """The rich table: per stage total, done, running, failed, reused, elapsed seconds, tokens."""
        t = Table(title="takeover run", title_justify="left")
        for col in ("stage", "total", "done", "running", "failed", "reused", "elapsed", "tokens"):
            t.add_column(col, justify="left" if col == "stage" else "right")
        for name, st in self.stages.items():
            t.add_row(
                name,
                str(st.total),
                f"[green]{st.done}[/]",
                f"[cyan]{st.running}[/]" if st.running else "0",
                f"[red]{st.failed}[/]" if st.failed else "0",
                str(st.reused),
                f"{st.elapsed:,.1f}s",
                f"{st.tokens:,}",
            )
        return t

    def __rich__(self) -> Table:
        return self.table()


class LiveProgress:
    """Context manager showing a :class:`ProgressTracker` live on ``console`` (stderr by default)."""

    def __init__(self, tracker: ProgressTracker | None = None, console: Console | None = None):
        self.tracker = tracker or ProgressTracker()
        self.console = console or Console(stderr=True)
        self._live = Live(self.tracker, console=self.console, refresh_per_second=4, transient=False)

    def __enter__(self) -> ProgressTracker:
        self._live.__enter__()
        return self.tracker

    def __exit__(self, *exc) -> None:
        self._live.refresh()
        self._live.__exit__(*exc)


def _labels(labels: dict) -> str:
    """The labels that say which unit it is, in a fixed order (instance, point type, view, successor)."""
    keys = ("instance_id", "point_type", "view", "successor")
    return " ".join(str(labels[k]) for k in keys if labels.get(k))


class ProgressLines:
    """Prints one plain line per finished unit, per redone unit and per finished stage, each prefixed with
    the time of day and flushed at once (for a log file, a pipe, CI or a cluster job).

    Lines (seconds are wall time, tokens prompt + completion)::

        14:02:11 takeover: 8 units planned, 3 reused, 5 to run
        14:02:11 grade: 8 unit(s) planned as the stage before ends (stored ones are reused)
        14:02:40 takeover 4/8 done 28.9 s 4,210 tokens: pytest-dev__pytest-7521 after_first_source_edit raw_trace
        14:03:05 takeover 5/8 failed (agent) 24.6 s 3,100 tokens: ... : <reason>
        14:03:06 takeover: worker lost, unit sent again: ... : <reason>
        14:03:07 grade 3/8 blocked 0.0 s 0 tokens: ...: takeover run 5d1f... did not finish
        14:04:31 takeover: stage done in 140.2 s: 7 done, 1 failed (3 reused), 21,000 tokens

    Args:
        tracker: the counts it reads and updates (a new one by default).
        stream: where lines go (default: ``sys.stderr`` at the time of each line).
    """

    def __init__(self, tracker: ProgressTracker | None = None, stream: IO[str] | None = None):
        self.tracker = tracker or ProgressTracker()
        self.stream = stream

    def _print(self, text: str) -> None:
        stream = self.stream or sys.stderr
        stream.write(f"{time.strftime('%H:%M:%S')} {text}\n")
        stream.flush()

    def __call__(self, event: ProgressEvent) -> None:
        self.tracker(event)
        st = self.tracker.stages[event.stage]
        name = event.stage
        if event.kind == "planned" and event.follows:
            # Stored results of these units are found only as the units they follow end.
            self._print(f"{name}: {st.total} unit(s) planned as the stage before ends (stored ones are reused)")
        elif event.kind == "planned":
            self._print(f"{name}: {st.total} unit(s) planned, {st.reused} reused, {st.total - st.reused} to run")
        elif event.kind == "redo":
            self._print(f"{name}: worker lost, unit sent again: {_labels(event.labels) or event.key}: {event.reason}")
        elif event.kind == "finished" and event.result is not None:
            r = event.result
            status = "done" if r.status == "done" else f"failed ({r.failure_kind or 'infrastructure'})"
            if event.blocked:
                status = "blocked"
            elif event.reused_result:
                status += ", reused"
            line = (f"{name} {st.done + st.failed}/{st.total} {status} {r.seconds:.1f} s "
                    f"{r.prompt_tokens + r.completion_tokens:,} tokens: {_labels(event.labels) or event.key}")
            if r.status != "done":
                line += f": {r.reason}"
            self._print(line)
        if event.kind in ("planned", "finished") and st.ended is not None and st.total:
            reused = f" ({st.reused} reused)" if st.reused else ""
            self._print(f"{name}: stage done in {st.elapsed:.1f} s: {st.done} done, {st.failed} failed{reused}, "
                        f"{st.tokens:,} tokens")


def is_watched(console: Console | None = None) -> bool:
    """Whether a person watches: standard output and the progress console (stderr by default) are both
    terminals. Otherwise progress is printed as plain lines."""
    console = console or Console(stderr=True)
    return console.is_terminal and sys.stdout.isatty()


@contextlib.contextmanager
def show_progress(console: Console | None = None,
                  tracker: ProgressTracker | None = None) -> Iterator[ProgressCallback]:
    """Show an experiment's progress on ``console`` (stderr by default): the live table when a person
    watches (:func:`is_watched`), plain lines (:class:`ProgressLines`) otherwise. Yields the callback to
    give :func:`~takeover.experiments.engine.run_units`."""
    console = console or Console(stderr=True)
    if is_watched(console):
        with LiveProgress(tracker, console) as live:
            yield live
    else:
        yield ProgressLines(tracker, console.file)
