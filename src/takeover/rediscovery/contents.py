"""Content keys: how the content of a file, and the state a command runs on, are told apart while a run's
events are walked (docs/protocol.md section 9.1).

A file's content is known by a *content key*: from per-event repository states when both runs have them (the
file's diff against the starting state after the event), otherwise from the events (the edits applied to the
file since the starting state, in order; a git command that rewrites the working tree changes every key).
The *repository state* is the set of all content keys. What a command *runs on* is the repository state, the
files the run wrote outside the repository (a scratch script in ``/tmp``) and the packages it installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from takeover.rediscovery.actions import ActionEffects
from takeover.trajectories.events import Event

#: The key under which :attr:`Contents.outside` records the run's package installs.
ENVIRONMENT = "<installed packages>"


class Contents:
    """The content key of every file while a run's events are walked (module docstring).

    Attributes:
        keys: without states, path -> the signatures of the edits applied to it; ``epoch``: the signatures
            of the working-tree rewrites so far.
        states, current: the per-event states and the state after the last event walked.
        names: ``(created|removed, path)`` in order: what a listing or a name search would show differently.
        outside: absolute path of a file written outside the repository (or :data:`ENVIRONMENT`) -> the
            signatures of the actions that wrote it (installed packages).
        texts: path -> the text the run wrote into it (for a script's words; whole writes replace, other
            edits add).
    """

    def __init__(self, keys: dict[str, tuple] | None = None, epoch: tuple = (),
                 states: Sequence[dict[str, str]] | None = None, current: dict[str, str] | None = None,
                 names: tuple = (), outside: dict[str, tuple] | None = None, texts: dict[str, str] | None = None):
        self.keys = dict(keys or {})
        self.epoch = epoch
        self.states = states
        self.current = dict(current or {})
        self.names = names
        self.outside = dict(outside or {})
        self.texts = dict(texts or {})

    def resumed(self, states: Sequence[dict[str, str]] | None = None) -> Contents:
        """The contents a successor that resumed from the checkpoint starts with: the repository's, and none of
        the files outside it or the packages installed (a successor runs in the task's own environment,
        docs/protocol.md section 8.1)."""
        return Contents(self.keys, self.epoch, states, self.current, self.names, None,
                        {p: t for p, t in self.texts.items() if not p.startswith("/")})

    def key(self, path: str) -> Any:
        """The content key of ``path`` (repository-relative, or absolute outside the repository)."""
        if path.startswith("/"):
            return ("outside", self.outside.get(path, ()))
        if self.states is not None:
            return ("state", self.current.get(path))
        return (self.epoch, self.keys.get(path, ()))

    def _items(self) -> list[tuple[str, Any]]:
        if self.states is not None:
            return sorted(self.current.items())
        return sorted((p, k) for p, k in self.keys.items() if k)

    def scope_key(self, scope: Sequence[str], kind: str = "content") -> Any:
        """What a search over ``scope`` depends on: the content of the files in it, or for a listing or a name
        search (``kind`` ``list``/``names``) the files created or removed in it."""
        roots = [s for s in scope if not s.startswith("filter:")] or ["."]
        if kind in ("list", "names"):
            if self.states is not None:
                changed = tuple(p for p, d in sorted(self.current.items())
                                if "new file mode" in d or "deleted file mode" in d or "/dev/null" in d)
                return tuple(p for p in changed if any(under(p, r) for r in roots))
            return (self.epoch, tuple(n for n in self.names if any(under(n[1], r) for r in roots)))
        inside = tuple((p, k) for p, k in self._items() if any(under(p, r) for r in roots))
        return (self.epoch, inside) if self.states is None else inside

    def state(self) -> Any:
        """The repository state."""
        return (self.epoch, tuple(self._items())) if self.states is None else tuple(self._items())

    def run_state(self) -> Any:
        """What a command runs on: the repository state, the files written outside it, the installs."""
        return self.state(), tuple(sorted(self.outside.items()))

    def advance(self, event: Event, fx: ActionEffects, signature: str) -> list[str]:
        """Apply ``event``'s effects (``fx``), or move to the recorded state after it; the paths whose content
        changed (repository-relative, or absolute outside the repository; without states, every path the
        action writes)."""
        changed = list(dict.fromkeys(fx.outside))
        for path in changed:
            self.outside[path] = self.outside.get(path, ()) + (signature,)
        if fx.environment:
            self.outside[ENVIRONMENT] = self.outside.get(ENVIRONMENT, ()) + (signature,)
        for path, text in fx.texts.items():
            whole = path.startswith("/") or path in fx.writes_whole
            self.texts[path] = text if whole else self.texts.get(path, "") + "\n" + text
        if self.states is not None:
            if event.index < len(self.states):
                before, self.current = self.current, dict(self.states[event.index])
                changed += sorted(p for p in set(before) | set(self.current) if before.get(p) != self.current.get(p))
            return changed
        # A file first written by this action may be new; a removal always changes the names.
        self.names = self.names + tuple(("created", p) for p in fx.created if not self.keys.get(p)) + tuple(
            ("removed", p) for p in fx.removed)
        for path in fx.edits:
            if path == "*":
                self.epoch = self.epoch + (signature,)
            else:
                self.keys[path] = self.keys.get(path, ()) + (signature,)
        return changed + [p for p in dict.fromkeys(fx.edits) if p != "*"]


def under(path: str, scope: str) -> bool:
    """Whether ``path`` is ``scope`` or inside it (``.`` holds everything)."""
    return scope in (".", "") or path == scope or path.startswith(scope.rstrip("/") + "/")


def signature(event: Event) -> str:
    """What identifies an edit between two runs: the editor's arguments, or the command's words."""
    if event.type == "file_edit":
        return repr((event.edit, event.old_text, event.new_text, event.file_text, event.insert_line,
                     event.view_range))
    return " ".join((event.command or "").split())
