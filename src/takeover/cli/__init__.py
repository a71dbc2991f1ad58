"""The ``takeover`` command line: a thin layer over the Python API.

Each concept registers its own commands from a module beside this one, so that the CLI mirrors the
package. Errors about bad input become one line on stderr and exit status 2.
"""

from __future__ import annotations

import sys

import typer

from takeover.errors import TakeoverError

app = typer.Typer(
    name="takeover",
    help="Measure handoff debt: how much extra work a coding agent pays to resume a half-done task.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command()
def version() -> None:
    """Print the takeover version."""
    from takeover import __version__

    print(__version__)


def _register() -> None:
    from takeover.cli import agent, experiment, grade, inspect, points, quickstart, tasks, views

    for module in (tasks, inspect, grade, points, views, agent, experiment, quickstart):
        module.register(app)


_register()


def main() -> None:
    """Console entry point; :class:`TakeoverError` becomes ``error: ...`` and exit status 2."""
    try:
        app()
    except TakeoverError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
