"""What a grading backend is: the seam every way of running SWE-bench's tests fills (docs/protocol.md
section 6).

A backend grades one prediction of one task into that prediction's log folder, and says how its tests
see the network, what of its environment decides a verdict (and so enters the
:class:`~takeover.grading.reuse.GradingKey`) and whether it writes SWE-bench's ``report.json`` itself. It
declares its own options (:attr:`GradingBackend.Options`: the grading record's ``options``,
``--backend-option NAME=VALUE``); the settings every backend shares are the
:class:`~takeover.grading_settings.GradingSettings` it is given whole.
The backends are registered by name in :data:`takeover.grading.backends.BACKENDS`, one folder each:
:mod:`takeover.grading.local` (a venv and the sandbox) and :mod:`takeover.grading.docker` (swebench's
harness on its images). A new backend is a folder with a class that has the members of
:class:`GradingBackend`, and one entry in that mapping.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel

from takeover.grading.predictions import Prediction
from takeover.grading.reuse import EnvironmentKey, GradingKey
from takeover.grading.verdict import GradeResult
from takeover.grading_settings import GradingSettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask

#: The files a backend leaves in a grading's log folder (``<log_dir>/<model_name_or_path>/<instance_id>/``);
#: removed before each grading, so that none is left over from an earlier patch.
LOG_FILES = ("run_instance.log", "test_output.txt", "report.json", "eval.sh", "patch.diff")


@runtime_checkable
class GradingBackend(Protocol):
    """A way of running a task's tests on a patch and grading them as SWE-bench does.

    Attributes:
        name: the name it is registered and chosen under (``--backend``, ``[grading] backend``, the key's
            and the result's ``backend``).
        description: a few words for help texts (``a cached venv, sandboxed``).
        writes_report: the backend leaves SWE-bench's ``report.json`` and ``patch.diff`` in the log folder
            itself (swebench's harness does); otherwise they are written from the :class:`GradeResult`.
        uses_sandbox: its tests run in takeover's sandbox where this machine has one
            (:mod:`takeover._util.sandbox`), so a result with ``sandboxed`` false ran unconfined.
        Options: the backend's own options, a pydantic model it declares and validates (the grading record's
            ``options``); :class:`takeover.agents.NoOptions`'s shape (an empty model refusing any field) for
            a backend that has none.
    """

    name: str
    description: str
    writes_report: bool
    uses_sandbox: bool
    Options: ClassVar[type[BaseModel]]

    def tests_network(self, asked: bool) -> bool:
        """Whether the tests have the network when the caller ``asked`` for it (or not)."""
        ...

    def environment_key(self, task: SourceTask, options: Any) -> EnvironmentKey:
        """What of this backend's environment for ``task`` decides a verdict, under its own ``options`` (an
        instance of :attr:`Options`). Never raises for a missing or invalid specification: the key then has
        none, and :meth:`grade` reports the error."""
        ...

    def grade(self, task: SourceTask, prediction: Prediction, key: GradingKey, log_dir: Path,
              grading: GradingSettings, options: Any, repo_source: RepoSource) -> GradeResult:
        """Grade ``prediction`` for ``task`` under ``key``; the test log (``test_output.txt``) and the other
        :data:`LOG_FILES` the backend makes go to ``log_dir``.

        Args:
            grading: the settings every backend shares: its ``timeout``, ``network`` (what the tests get:
                :meth:`tests_network` of what was asked) and the ``hash_seed`` of this grading (never None
                here: :mod:`takeover.grading.seeds`); the verdict rules are the key's ``grading_rules``.
            options: the backend's own options (an instance of :attr:`Options`).
            repo_source: where repositories come from.

        Returns:
            The :class:`GradeResult` with its handoff state; a failure of this one prediction (repository,
            environment, container) is in its ``error``.

        Raises:
            EnvironmentUnavailable: the backend cannot grade on this machine at all (no Docker daemon).
        """
        ...
