"""One scripted server per test module whose script each test replaces (a server costs ~0.5 s to shut down)."""

from __future__ import annotations

from typing import Self

from takeover.testing.scripted_server import ScriptedServer


class Replay:
    """A running :class:`ScriptedServer` whose answers come from ``entries`` (set per test).

    ``requests`` lists only the requests received since the last :meth:`script` call.
    """

    def __init__(self):
        self.entries: list[dict] = []
        self._start = 0
        self.server = ScriptedServer(self._next)

    def _next(self, body: dict, n: int) -> dict | None:
        return self.entries.pop(0) if self.entries else None

    def script(self, entries: list[dict]) -> Replay:
        self.entries = list(entries)
        self._start = len(self.server.requests)
        return self

    @property
    def requests(self) -> list[dict]:
        return self.server.requests[self._start :]

    @property
    def served(self) -> int:
        return len(self.requests)

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        pass
