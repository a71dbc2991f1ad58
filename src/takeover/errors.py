"""Errors that users see.

Every error about bad input names the file, the record (line number or index) and the field, so that a
user can find the offending bytes without reading our code. The CLI turns every :class:`TakeoverError` into
one line on stderr and its :attr:`~TakeoverError.exit_status` (2: bad input or a missing prerequisite,
nothing was done; 1: the work ran and failed), in one place (:func:`takeover.cli.failure`).
"""

from __future__ import annotations


class TakeoverError(Exception):
    """Base class of every error raised on purpose by ``takeover``.

    Attributes:
        exit_status: the command line's exit status for it: 2 (bad input, a missing prerequisite: nothing
            was done), unless a subclass says the work ran and failed (1).
    """

    exit_status = 2


class InputError(TakeoverError):
    """Bad input: a file, a record in it, and the field that is wrong.

    Attributes:
        path: the file (or directory) that was read.
        record: where in the file: ``"line 12"``, ``"index 3"``, ``"row 7"``, or ``None`` for the whole file.
        field: dotted field path inside the record (``"messages[3].content"``), or ``None``.
        reason: what is wrong, in a few words.
    """

    def __init__(self, path: object, reason: str, *, record: str | None = None, field: str | None = None):
        self.path = str(path)
        self.record = record
        self.field = field
        self.reason = reason
        super().__init__(self.format())

    def format(self) -> str:
        parts = [self.path]
        if self.record:
            parts.append(self.record)
        if self.field:
            parts.append(f"field {self.field!r}")
        return f"{': '.join(parts)}: {self.reason}"


class EnvironmentUnavailable(TakeoverError):
    """Something the machine lacks (an interpreter, git, Docker, a sandbox); the message says how to supply it."""


class EnvironmentFailure(RuntimeError):
    """The environment itself failed (workspace gone, sandbox or container broken): ends the run
    (``environment_error``, docs/protocol.md section 8.2)."""


class RepositoryUnavailable(TakeoverError):
    """A task's repository or commit cannot be obtained from the mirror or from GitHub."""
