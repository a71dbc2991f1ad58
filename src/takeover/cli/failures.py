"""The one place an error that ends a command becomes a line on stderr and an exit status.

Every command is registered through :func:`command`, which runs it under :func:`failure`: a
:class:`~takeover.errors.TakeoverError` (bad input, a missing prerequisite, work that ran and failed) is one
``error: ...`` line and its ``exit_status`` (2, or 1 for work that failed), an ``OSError`` on a named file is
one line naming the file; anything else is a bug and shows its traceback. Commands raise; they never print an
error and exit themselves.
"""

from __future__ import annotations

import errno
import functools
import sys
from collections.abc import Callable
from typing import Any

import typer

from takeover.errors import TakeoverError

#: ``errno`` values of an output or input location the user named that cannot be used (exit status 2, as
#: bad input); any other error of the file system (a full disk, an I/O error) is exit status 1.
_LOCATION_ERRORS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EISDIR, errno.ENOENT,
                              errno.EEXIST, errno.ENAMETOOLONG, errno.ELOOP})


def failure(exc: BaseException) -> tuple[int, str] | None:
    """The exit status and the one line on stderr of an error that ends a command, or ``None`` for an error
    that is a bug (its traceback is shown). A :class:`TakeoverError` is its ``exit_status`` (2 for bad input or
    a missing prerequisite, 1 for work that ran and failed); an ``OSError`` on a named file (a folder that
    cannot be written, a disk that is full) is one line naming the file."""
    if isinstance(exc, TakeoverError):
        return exc.exit_status, f"error: {exc}"
    if isinstance(exc, OSError) and exc.filename is not None:
        where = f"{exc.filename}" + (f" -> {exc.filename2}" if exc.filename2 is not None else "")
        return (2 if exc.errno in _LOCATION_ERRORS else 1), f"error: {where}: {exc.strerror or exc}"
    return None


def mapped(callback: Callable[..., Any]) -> Callable[..., Any]:
    """``callback`` (a command) with the errors :func:`failure` knows turned into their line and exit status."""

    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return callback(*args, **kwargs)
        except Exception as exc:  # typer.Exit and click's own errors are not Exceptions it knows: re-raised
            found = failure(exc)
            if found is None:
                raise
            print(found[1], file=sys.stderr)
            raise typer.Exit(found[0]) from None

    return run


def command(app: typer.Typer, name: str | None = None, **kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a function as ``app``'s command ``name`` (``app.command(name)``), run under :func:`failure`."""

    def register(callback: Callable[..., Any]) -> Callable[..., Any]:
        app.command(name, **kwargs)(mapped(callback))
        return callback

    return register
