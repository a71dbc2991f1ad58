"""The ``takeover`` command line: a thin layer over the Python API.

Each concept registers its own commands from a module beside this one, so that the CLI mirrors the
package; options several commands share are declared once in :mod:`takeover.cli.options`. Errors about
bad input, and a file or folder that cannot be read or written, become one line on stderr and exit status
2 (:func:`failure`). Every ``--json`` prints JSON Lines: one record per
line, in input order.
"""

from __future__ import annotations

import errno
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
from takeover.errors import TakeoverError

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


#: ``errno`` values of an output or input location the user named that cannot be used (exit status 2, as
#: bad input); any other error of the file system (a full disk, an I/O error) is exit status 1.
_LOCATION_ERRORS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EISDIR, errno.ENOENT,
                              errno.EEXIST, errno.ENAMETOOLONG, errno.ELOOP})


def failure(exc: BaseException) -> tuple[int, str] | None:
    """The exit status and the one line on stderr of an error that ends a command, or ``None`` for an error
    that is a bug (its traceback is shown). :class:`TakeoverError` (bad input, a missing prerequisite) is
    status 2; an ``OSError`` on a named file (a folder that cannot be written, a disk that is full) is one
    line naming the file."""
    if isinstance(exc, TakeoverError):
        return 2, f"error: {exc}"
    if isinstance(exc, OSError) and exc.filename is not None:
        where = f"{exc.filename}" + (f" -> {exc.filename2}" if exc.filename2 is not None else "")
        return (2 if exc.errno in _LOCATION_ERRORS else 1), f"error: {where}: {exc.strerror or exc}"
    return None


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
