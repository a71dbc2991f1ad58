"""Where commands print: a rich console sized for terminals and for pipes, and progress lines for logs."""

from __future__ import annotations

import sys
import time

from rich.console import Console

from takeover.experiments.progress import is_watched

#: Width of tables printed to a pipe or file: wide enough that no column is cut (rows are not padded).
PIPE_WIDTH = 240


def output_console(*, stderr: bool = False) -> Console:
    """A rich ``Console`` for command output: the terminal's width on a terminal, :data:`PIPE_WIDTH`
    characters otherwise (a narrow ``COLUMNS`` must not cut instance ids out of piped tables)."""
    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, width=max(console.width, PIPE_WIDTH))


def progress_line(text: str) -> None:
    """Print ``HH:MM:SS text`` on stderr and flush: one line per finished piece of long work, for a log file
    or a pipe, where nobody watches a terminal (see :func:`takeover.experiments.progress.is_watched`)."""
    print(f"{time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)


__all__ = ["PIPE_WIDTH", "is_watched", "output_console", "progress_line"]
