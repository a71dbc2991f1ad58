"""The grading backends by name (docs/protocol.md section 6): the one place a backend is registered.

Each backend is a :class:`~takeover.grading.backend.GradingBackend` in a folder of its own; this mapping
is how every caller finds one (the ``--backend`` flag and its help, ``[grading] backend`` in an
experiment file, the quickstart, :func:`takeover.grading.grade_predictions`)::

    from takeover.grading.backends import grading_backend

    backend = grading_backend("docker")
    backend.tests_network(False)  # True: the harness's containers have the network
"""

from __future__ import annotations

from typing import Literal

from takeover.errors import InputError
from takeover.grading.backend import GradingBackend
from takeover.grading.docker import DockerBackend
from takeover.grading.local import LocalBackend

#: The grading backends by name, the default first.
BACKENDS: dict[str, GradingBackend] = {b.name: b for b in (LocalBackend(), DockerBackend())}
#: The backend used when none is named.
DEFAULT_BACKEND = LocalBackend.name
#: The name of a registered backend, as a field type: a record or setting holding any other name is
#: refused, the error listing the known ones.
GradingBackendName = Literal[tuple(BACKENDS)]  # type: ignore[valid-type]


def grading_backend(name: str) -> GradingBackend:
    """The backend registered as ``name``.

    Raises:
        InputError: no backend has that name (the message lists the known ones; the path is ``--backend``).
    """
    try:
        return BACKENDS[name]
    except KeyError:
        raise InputError("--backend", f"unknown backend {name!r}; use one of {', '.join(BACKENDS)}") from None


def describe_backends() -> str:
    """The backends in words, for help texts: ``local (a cached venv, sandboxed) or docker (the official
    SWE-bench images)``."""
    parts = [f"{b.name} ({b.description})" for b in BACKENDS.values()]
    return ", ".join(parts[:-1]) + f" or {parts[-1]}" if len(parts) > 1 else parts[0]
