"""What decides a verdict, as the key under which a stored grading result may be reused (docs/protocol.md
section 6).

A stored ``result.json`` is reused only when its :class:`GradingKey` equals the new one: the same patch,
the same dataset row (everything but the text written for people, see :data:`ROW_FIELDS_NOT_IN_KEY`), the
same environment specification and test locale, the same backend, network setting and time limit, and
the same versions of takeover and swebench, the same grading rules (``swebench-4.1`` or ``swebench-5.0``:
which harness version's verdict rules decide). Anything else grades again. What of the environment enters
the key is the backend's to say (its :class:`EnvironmentKey`).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from takeover._util import harness_version
from takeover._util.io import sha256_text, stable_form
from takeover._util.versions import package_versions
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
    "image_id": "the image",
    "backend": "the backend",
    "network": "the network setting",
    "timeout": "the time limit",
    "takeover": "the takeover version",
    "swebench": "the swebench version",
    "grading_rules": "the grading rules",
}
#: The rules of a stored key that has none: it was graded before they were recorded, under swebench 4.1.
_RULES_BEFORE_RECORDED = "swebench-4.1"


class EnvironmentKey(BaseModel):
    """What of a backend's environment goes into the :class:`GradingKey`
    (:meth:`takeover.grading.backend.GradingBackend.environment_key`).

    Attributes:
        env_spec_sha256: sha256 (:func:`value_digest`) of the specification the tests run under; None
            when there is none (the grading then fails and is never reused).
        test_locale: the locale the tests run in, where it depends on the machine.
        image_id: the content id (``sha256:...``) of the image the tests run in (``docker``): the same name
            can point at other content tomorrow, and a verdict is the image's as much as the patch's.

    A backend whose verdicts depend on more adds the field here and to :class:`GradingKey` with a default of
    None and a name in ``_FIELD_NAMES``: stored keys without it read as None (and the stable form of a key
    leaves it out while it is None), so results of the other backends are still reused.
    """

    env_spec_sha256: str | None = None
    test_locale: str | None = None
    image_id: str | None = None


class GradingKey(BaseModel):
    """Everything that decides the verdict of one grading.

    Attributes:
        patch_sha256: sha256 of the candidate patch (``""`` for the empty patch).
        task_sha256: sha256 of the dataset row without :data:`ROW_FIELDS_NOT_IN_KEY` (``FAIL_TO_PASS``,
            ``PASS_TO_PASS``, ``test_patch``, ``version``, ``base_commit``, the task's own environment
            spec, ...).
        env_spec_sha256: sha256 of the environment specification (``local``: the
            :class:`~takeover.environments.EnvSpec` in use; ``docker``: swebench's
            ``MAP_REPO_VERSION_TO_SPECS`` entry); None when there is none, and then the grading fails and is
            never reused.
        test_locale: the locale the tests run in (``local``; it depends on the machine's locales).
        image_id: the content id of the image the tests run in (``docker``; None when the daemon has none).
        env_spec_sha256, test_locale and image_id are the backend's :class:`EnvironmentKey`.
        backend: the backend's name (:data:`takeover.grading.backends.BACKENDS`).
        network: the tests may use the network.
        timeout: seconds allowed for the test run.
        takeover, swebench: the installed versions.
        grading_rules: whose verdict rules decide (:data:`takeover._util.harness_version.GRADING_RULES`;
            docs/protocol.md section 6, extension "Grading rules"); a stored key without it was graded under
            ``swebench-4.1``.
    """

    patch_sha256: str
    task_sha256: str
    env_spec_sha256: str | None = None
    test_locale: str | None = None
    image_id: str | None = None
    backend: str
    network: bool
    timeout: float
    takeover: str | None = None
    swebench: str | None = None
    grading_rules: str = _RULES_BEFORE_RECORDED

    @classmethod
    def of(cls, task: SourceTask, patch: str | None, environment: EnvironmentKey, *, backend: str, network: bool,
           timeout: float, grading_rules: str | None = None) -> GradingKey:
        """The key of grading ``patch`` for ``task`` with the backend named ``backend`` in ``environment``
        (its :class:`EnvironmentKey`), on this machine (the installed takeover and swebench versions).

        Args:
            patch: the candidate patch (None and ``""`` are the empty patch).
            network: the tests may use the network.
            timeout: seconds allowed for the test run.
            grading_rules: ``swebench-4.1`` or ``swebench-5.0``; None = the installed harness's.

        Raises:
            ValueError: unknown grading rules.
        """
        versions = package_versions()
        return cls(patch_sha256=sha256_text(patch or ""), task_sha256=task_digest(task), **environment.model_dump(),
                   backend=backend, network=network, timeout=float(timeout), takeover=versions.get("takeover"),
                   swebench=versions.get("swebench"), grading_rules=harness_version.grading_rules(grading_rules))

    @property
    def digest(self) -> str:
        """sha256 of the key in its stable form (:func:`takeover._util.io.stable_form`: a field at its default
        is left out, so a field added later leaves the digests of earlier keys as they were; hex, 64
        characters)."""
        return sha256_text(json.dumps(stable_form(self), ensure_ascii=False, separators=(",", ":")))

    def changes_from(self, old: GradingKey | None) -> list[str]:
        """What differs from ``old``, in words (``["the dataset row", "the swebench version"]``); every
        part when there is no old key."""
        if old is None:
            return ["the grading key (the stored result has none)"]
        mine, theirs = self.model_dump(), old.model_dump()
        return [_FIELD_NAMES[name] for name in _FIELD_NAMES if mine.get(name) != theirs.get(name)]


def value_digest(value: Any) -> str:
    """sha256 of ``value`` as canonical JSON (sorted keys, UTF-8 text, ``str`` of anything else): the
    digest of a specification in :class:`EnvironmentKey`."""
    return sha256_text(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str))


def task_digest(task: SourceTask) -> str:
    """sha256 of the parts of ``task``'s dataset row that decide a verdict (all but
    :data:`ROW_FIELDS_NOT_IN_KEY`)."""
    return value_digest(task.model_dump(mode="json", exclude=set(ROW_FIELDS_NOT_IN_KEY)))
