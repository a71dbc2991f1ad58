"""Live progress of an experiment with rich: per stage, done / running / failed, elapsed time, tokens."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from rich.console import Console
from rich.live import Live
from rich.table import Table

from takeover.experiments.engine import ProgressEvent


@dataclass
class StageProgress:
    """Counts of one stage's units (``reused``: found finished from an earlier run), the tokens they spent,
    and when the stage started and ended (``time.monotonic`` seconds)."""

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
            st.started = time.monotonic()
            st.ended = None
            if st.total == st.reused:
                st.ended = st.started
        elif event.kind == "started":
            st.running += 1
        elif event.kind == "finished" and event.result is not None:
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
