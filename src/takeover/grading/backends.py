"""The grading backends by name (docs/protocol.md section 6): the one place a backend is registered.

Each backend is a :class:`~takeover.grading.backend.GradingBackend` in a folder of its own; this mapping
is how every caller finds one (the ``--backend`` flag and its help, ``[grading] backend`` in an
experiment file, the quickstart, :func:`takeover.grading.grade_predictions`)::

    from takeover.grading.backends import grading_backend

    backend = grading_backend("docker")
    backend.tests_network(False)  # True: the harness's containers have the network
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer

from takeover._util.registries import Registry
from takeover.grading.backend import GradingBackend
from takeover.grading.docker import DockerBackend
from takeover.grading.local import LocalBackend
from takeover.grading.seeds import MAX_SEED

#: The grading backends by name, the default first.
BACKENDS: Registry[GradingBackend] = Registry("backend", {b.name: b for b in (LocalBackend(), DockerBackend())},
                                              where="--backend")
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
    return BACKENDS.named(name)


def describe_backends() -> str:
    """The backends in words, for help texts: ``local (a cached venv, sandboxed) or docker (the official
    SWE-bench images)``."""
    parts = [f"{b.name} ({b.description})" for b in BACKENDS.values()]
    return ", ".join(parts[:-1]) + f" or {parts[-1]}" if len(parts) > 1 else parts[0]


#: Seconds allowed for each test run unless a grading says otherwise (``--grading-timeout``).
DEFAULT_TIMEOUT = 1800.0


class GradingSettings(BaseModel):
    """How patches are graded (docs/protocol.md sections 6 and 8): one record, the ``[grading]`` table of an
    experiment file and the ``grading`` of handoff-state and grade unit inputs.

    Attributes:
        backend: a name of :data:`BACKENDS` (``--backend``).
        timeout: seconds allowed for each test run (``--grading-timeout``).
        network: let the tests use the network (``local`` backend; off by default, as the sandbox is
            offline). SWE-bench's Docker harness runs tests with the network on, and some suites need it
            (:data:`takeover.grading.NETWORK_REPOS`, e.g. psf/requests calls httpbin.org): without it those
            tasks never resolve, and their results carry a warning that the report lists.
        hash_seed: the tests' ``PYTHONHASHSEED`` (``--hash-seed``; 1 to 4294967295); None: one per grading
            key (:mod:`takeover.grading.seeds`). A verdict that changes with the seed is flaky
            (:mod:`takeover.grading.flaky`). Left out of the record while None, so that a study's unit keys
            stay those written before the setting existed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: str = DEFAULT_BACKEND
    timeout: float = Field(DEFAULT_TIMEOUT, gt=0)
    network: bool = False
    hash_seed: int | None = Field(None, ge=1, le=MAX_SEED)

    @model_serializer(mode="wrap")
    def _omit_unset_seed(self, handler) -> dict[str, Any]:
        data = handler(self)
        if self.hash_seed is None:
            data.pop("hash_seed", None)
        return data

    @field_validator("backend")
    @classmethod
    def _registered(cls, value: str) -> str:
        return BACKENDS.check(value)
