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

    @classmethod
    def from_validation(cls, path: object, exc: Exception, *, record: str | None = None) -> InputError:
        """The error of a record that failed its schema (a pydantic ``ValidationError``), in one line: the
        first failing field as a dotted path, what is wrong with it (``missing``, or the schema's words and
        the JSON type found), and how many other fields failed; never "N validation errors for Model",
        which names neither the file nor the field."""
        errors = exc.errors() if hasattr(exc, "errors") else []  # type: ignore[attr-defined]
        if not errors:
            return cls(path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__, record=record)
        first = errors[0]
        field = ".".join(str(p) for p in first.get("loc", ())) or None
        if first.get("type") == "missing":
            reason = "missing"
        else:
            reason = str(first.get("msg", "invalid")).removeprefix("Value error, ")
            if "input" in first and first.get("type", "").endswith(("_type", "_parsing")):
                reason += f", got {json_type(first['input'])}"
        if len(errors) > 1:
            reason += f" (and {len(errors) - 1} more field(s))"
        return cls(path, reason, record=record, field=field)

    def format(self) -> str:
        parts = [self.path]
        if self.record:
            parts.append(self.record)
        if self.field:
            parts.append(f"field {self.field!r}")
        return f"{': '.join(parts)}: {self.reason}"


class UnreadableRecords(TakeoverError):
    """A result was written, but records of other tools it reads (Harbor trials, Inspect logs) could not be
    read: it is not whole. The records are listed with it; the message says how many and names the first."""


class EnvironmentUnavailable(TakeoverError):
    """Something the machine lacks (an interpreter, git, Docker, a sandbox); the message says how to supply it."""


class EnvironmentFailure(RuntimeError):
    """The environment itself failed (workspace gone, sandbox or container broken): ends the run
    (``environment_error``, docs/protocol.md section 8.2)."""


class RepositoryUnavailable(TakeoverError):
    """A task's repository or commit cannot be obtained from the mirror or from GitHub."""


def json_type(value: object) -> str:
    """The JSON name of ``value``'s type, as an error shows it: ``null``, ``a boolean``, ``a number``,
    ``a string``, ``a list``, ``an object``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
