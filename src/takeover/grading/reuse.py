"""What decides a verdict, as the key under which a stored grading result may be reused (docs/protocol.md
section 6).

A stored ``result.json`` is reused only when its :class:`GradingKey` equals the new one: the same patch,
the same dataset row (everything but the text written for people, see :data:`ROW_FIELDS_NOT_IN_KEY`), the
same environment specification and test locale, the same backend, network setting and time limit, and
the same versions of takeover and swebench. Anything else grades again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from takeover._util.io import sha256_text
from takeover._util.versions import package_versions
from takeover.environments import EnvSpec, env_spec_for
from takeover.errors import TakeoverError
from takeover.grading.hermetic import hermetic_locale
from takeover.sources.tasks import SourceTask

#: Dataset-row fields that do not decide a verdict: the text given to people and agents, the reference
#: patch (graded as a patch of its own when asked), and labels. Every other field is in the key.
ROW_FIELDS_NOT_IN_KEY = frozenset({"problem_statement", "hints_text", "created_at", "patch", "difficulty"})

# Names of the key's fields as said to the user when they differ.
_FIELD_NAMES = {
    "patch_sha256": "the patch",
    "task_sha256": "the dataset row",
    "env_spec_sha256": "the environment specification",
    "test_locale": "the test locale",
    "backend": "the backend",
    "network": "the network setting",
    "timeout": "the time limit",
    "takeover": "the takeover version",
    "swebench": "the swebench version",
}


class GradingKey(BaseModel):
    """Everything that decides the verdict of one grading.

    Attributes:
        patch_sha256: sha256 of the candidate patch (``""`` for the empty patch).
        task_sha256: sha256 of the dataset row without :data:`ROW_FIELDS_NOT_IN_KEY` (``FAIL_TO_PASS``,
            ``PASS_TO_PASS``, ``test_patch``, ``version``, ``base_commit``, the task's own environment
            spec, ...).
        env_spec_sha256: sha256 of the environment specification (``local``: the :class:`EnvSpec` in use;
            ``docker``: swebench's ``MAP_REPO_VERSION_TO_SPECS`` entry); None when there is none, and then
            the grading fails and is never reused.
        test_locale: the locale the tests run in (``local``; it depends on the machine's locales).
        backend: ``local`` or ``docker``.
        network: the tests may use the network.
        timeout: seconds allowed for the test run.
        takeover, swebench: the installed versions.
    """

    patch_sha256: str
    task_sha256: str
    env_spec_sha256: str | None = None
    test_locale: str | None = None
    backend: str
    network: bool
    timeout: float
    takeover: str | None = None
    swebench: str | None = None

    @property
    def digest(self) -> str:
        """sha256 of the key (hex, 64 characters)."""
        return sha256_text(self.model_dump_json())

    def changes_from(self, old: GradingKey | None) -> list[str]:
        """What differs from ``old``, in words (``["the dataset row", "the swebench version"]``); every
        part when there is no old key."""
        if old is None:
            return ["the grading key (the stored result has none)"]
        mine, theirs = self.model_dump(), old.model_dump()
        return [_FIELD_NAMES[name] for name in _FIELD_NAMES if mine[name] != theirs[name]]


def _digest(value: Any) -> str:
    return sha256_text(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str))


def task_digest(task: SourceTask) -> str:
    """sha256 of the parts of ``task``'s dataset row that decide a verdict (all but
    :data:`ROW_FIELDS_NOT_IN_KEY`)."""
    return _digest(task.model_dump(mode="json", exclude=set(ROW_FIELDS_NOT_IN_KEY)))


def _swebench_spec(task: SourceTask) -> Mapping[str, Any] | None:
    from swebench.harness.constants import MAP_REPO_VERSION_TO_SPECS  # slow to import: only when needed

    return MAP_REPO_VERSION_TO_SPECS.get(task.repo, {}).get(task.version)


def grading_key(task: SourceTask, patch: str | None, *, backend: str, network: bool, timeout: float,
                spec_file: Path | str | Mapping[str, EnvSpec] | None = None) -> GradingKey:
    """The :class:`GradingKey` of grading ``patch`` for ``task`` this way, on this machine.

    Args:
        patch: the candidate patch (None and ``""`` are the empty patch).
        backend: ``local`` or ``docker``.
        network: the tests may use the network.
        timeout: seconds allowed for the test run.
        spec_file: the user's environment spec file (``local``), as for
            :func:`takeover.environments.env_spec_for`.

    Never raises for a missing or invalid specification: the key then has no ``env_spec_sha256``, and the
    grading itself reports the error.
    """
    versions = package_versions()
    env_digest: str | None = None
    locale: str | None = None
    if backend == "docker":
        spec = _swebench_spec(task)
        env_digest = _digest(spec) if spec is not None else None
    else:
        try:
            spec = env_spec_for(task, spec_file)
        except TakeoverError:
            spec = None
        if spec is not None:
            env_digest = _digest(spec.model_dump(mode="json", exclude={"notes", "source"}))
            locale = hermetic_locale(spec)[0]
    return GradingKey(patch_sha256=sha256_text(patch or ""), task_sha256=task_digest(task),
                      env_spec_sha256=env_digest, test_locale=locale, backend=backend, network=network,
                      timeout=float(timeout), takeover=versions.get("takeover"), swebench=versions.get("swebench"))
