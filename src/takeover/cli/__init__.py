"""The ``takeover`` command line: a thin layer over the Python API.

Each concept registers its own commands from a module beside this one, so that the CLI mirrors the
package; options several commands share are declared once in :mod:`takeover.cli.options`, and every record
several flags fill is built there by an option group. Every command runs under one error mapper
(:func:`failure`, :mod:`takeover.cli.failures`): bad input and a file or folder that cannot be read or
written become one line on stderr and exit status 2, work that ran and failed exit status 1. Every
``--json`` prints JSON Lines: one record per line, in input order.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from takeover import __version__
from takeover._util.logs import third_party_logging
from takeover.cli import (
    agent,
    claims,
    doctor,
    experiment,
    export,
    grade,
    handoff,
    inspect,
    points,
    quickstart,
    rediscovery,
    serve_model,
    show,
    tasks,
    views,
)
from takeover.cli.console import PIPE_WIDTH, output_console
from takeover.cli.failures import failure

__all__ = ["PIPE_WIDTH", "app", "failure", "main", "output_console"]

app = typer.Typer(
    name="takeover",
    help="Measure handoff debt: how much extra work a coding agent pays to resume a half-done task.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
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
    third_party_logging()  # WARNING for other libraries' loggers; commands with --verbose open them up


@app.command()
def version() -> None:
    """Print the takeover version."""
    print(__version__)


for _module in (tasks, inspect, grade, points, views, agent, experiment, doctor, serve_model, quickstart, show, handoff,
                export, rediscovery, claims):
    _module.register(app)


def main() -> None:
    """Console entry point: an error :func:`failure` knows becomes one ``error: ...`` line and its exit
    status, never a traceback."""
    try:
        app()
    except Exception as exc:
        found = failure(exc)
        if found is None:
            raise
        print(found[1], file=sys.stderr)
        sys.exit(found[0])
