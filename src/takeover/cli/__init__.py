"""The ``takeover`` command line: a thin layer over the Python API.

Each concept registers its own commands from a module beside this one, so that the CLI mirrors the
package. Errors about bad input become one line on stderr and exit status 2.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from takeover.errors import TakeoverError

app = typer.Typer(
    name="takeover",
    help="Measure handoff debt: how much extra work a coding agent pays to resume a half-done task.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from takeover import __version__

        print(__version__)
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option("--version", help="Print the takeover version and exit.", callback=_print_version,
                     is_eager=True),
    ] = False,
) -> None:
    """Measure handoff debt: how much extra work a coding agent pays to resume a half-done task."""


@app.command()
def version() -> None:
    """Print the takeover version."""
    from takeover import __version__

    print(__version__)


#: Width of tables printed to a pipe or file: wide enough that no column is cut (rows are not padded).
PIPE_WIDTH = 240


def output_console(*, stderr: bool = False):
    """A rich ``Console`` for command output: the terminal's width on a terminal, :data:`PIPE_WIDTH`
    characters otherwise (a narrow ``COLUMNS`` must not cut instance ids out of piped tables)."""
    from rich.console import Console

    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, width=max(console.width, PIPE_WIDTH))


def _register() -> None:
    from takeover.cli import (
        agent,
        experiment,
        grade,
        handoff,
        inspect,
        points,
        quickstart,
        show,
        tasks,
        views,
    )

    for module in (tasks, inspect, grade, points, views, agent, experiment, quickstart, show, handoff):
        module.register(app)


_register()


def main() -> None:
    """Console entry point; :class:`TakeoverError` becomes ``error: ...`` and exit status 2."""
    try:
        app()
    except TakeoverError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
