"""Where commands print: a rich console sized for terminals and for pipes."""

from __future__ import annotations

from rich.console import Console

#: Width of tables printed to a pipe or file: wide enough that no column is cut (rows are not padded).
PIPE_WIDTH = 240


def output_console(*, stderr: bool = False) -> Console:
    """A rich ``Console`` for command output: the terminal's width on a terminal, :data:`PIPE_WIDTH`
    characters otherwise (a narrow ``COLUMNS`` must not cut instance ids out of piped tables)."""
    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, width=max(console.width, PIPE_WIDTH))
