"""One shape for every registry of a seam: the runtimes, the command backends, the grading backends, the
trajectory readers.

A :class:`Registry` maps the name a user gives (a flag, a key of the experiment file) to the object that
does the work, the default first. It is the one place a name is looked up: an unknown name is refused with
one :class:`~takeover.errors.InputError` naming the flag or key and the known names, and code that needs what
an entry does asks the entry, never compares its name (``benchmarks/check_layout.py``'s ``name-test``).
A plug-in registers itself with :meth:`Registry.add`.

An entry may have options of its own (an agent runtime's, a command backend's, a grading backend's): its
``Options`` model declares them (:class:`NoOptions` when it has none), the record that chooses it carries
them as JSON values, and :func:`checked_options` checks them against the model.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from takeover.errors import InputError

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """Entries of one seam by name, in registration order (the first is the default).

    Args:
        kind: what an entry is, in words (``agent runtime``), for error messages.
        entries: ``{name: entry}``, the default first.
        where: the flag or key that names an entry, for error messages (``--agent``).
    """

    def __init__(self, kind: str, entries: Mapping[str, T], *, where: str) -> None:
        self.kind = kind
        self.where = where
        self._entries: dict[str, T] = dict(entries)

    def __getitem__(self, name: str) -> T:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def default(self) -> str:
        """The name of the default entry (the first registered)."""
        return next(iter(self._entries))

    def named(self, name: str, *, where: str | None = None) -> T:
        """The entry registered as ``name``.

        Raises:
            InputError: no entry has that name (``where``, default :attr:`where`: the flag or key that gave
                it; the message lists the known names).
        """
        try:
            return self._entries[name]
        except KeyError:
            raise InputError(where or self.where, f"unknown {self.kind} {name!r}: use {self.choices()}") from None

    def check(self, name: str) -> str:
        """``name`` when it is registered, for pydantic validators.

        Raises:
            ValueError: an unknown name (the message lists the known names).
        """
        if name not in self._entries:
            raise ValueError(f"unknown {self.kind} {name!r}: use {self.choices()}")
        return name

    def choices(self) -> str:
        """The names in words: ``a or b or c``."""
        return " or ".join(self._entries)

    def add(self, name: str, entry: T) -> None:
        """Register ``entry`` as ``name`` (a plug-in; the last registered wins a name taken twice)."""
        self._entries[name] = entry

    def remove(self, name: str) -> None:
        """Unregister ``name`` (a plug-in that is done; nothing happens when it is not registered)."""
        self._entries.pop(name, None)


class NoOptions(BaseModel):
    """The options of an entry that has none: any option given is refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def checked_options(model: type[BaseModel], values: Mapping[str, Any], *, where: str,
                    field: str = "options") -> dict[str, Any]:
    """``values`` validated by an entry's ``Options`` ``model`` and written back in its form: JSON values,
    those at their default left out (so that choosing an option's default keeps the keys it was in).

    Raises:
        InputError: an unknown option or a bad value (``where``: the entry, e.g. ``agent command``; the
            error's ``field`` is ``FIELD.NAME``; a typo is named before any other problem; the message lists
            the entry's options).
    """
    try:
        options = model.model_validate(dict(values))
    except ValidationError as exc:
        errors = exc.errors()
        error = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])  # a typo before its result
        name = ".".join(str(part) for part in error["loc"])
        reason = "unknown option" if error["type"] == "extra_forbidden" else error["msg"].removeprefix("Value error, ")
        # An error of the options together (a rule across two of them) has no option's name: the table's.
        raise InputError(where, f"{reason} (its options: {', '.join(model.model_fields) or 'none'})",
                         field=f"{field}.{name}" if name else field) from None
    return options.model_dump(mode="json", exclude_defaults=True)
