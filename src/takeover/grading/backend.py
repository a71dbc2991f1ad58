"""What a grading backend is: the seam every way of running SWE-bench's tests fills (docs/protocol.md
section 6).

A backend grades one prediction of one task into that prediction's log folder, and says how its tests
see the network, what of its environment decides a verdict (and so enters the
:class:`~takeover.grading.reuse.GradingKey`) and whether it writes SWE-bench's ``report.json`` itself.
The backends are registered by name in :data:`takeover.grading.backends.BACKENDS`, one folder each:
:mod:`takeover.grading.local` (a venv and the sandbox) and :mod:`takeover.grading.docker` (swebench's
harness on its images). A new backend is a folder with a class that has the members of
:class:`GradingBackend`, and one entry in that mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from takeover.environments import EnvSpec
from takeover.grading.predictions import Prediction
from takeover.grading.reuse import EnvironmentKey, GradingKey
from takeover.grading.verdict import GradeResult
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask

#: A user's environment specification: a spec file, its parsed entries, or None (see
#: :func:`takeover.environments.env_spec_for`).
SpecFile = Path | str | Mapping[str, EnvSpec] | None
#: The files a backend leaves in a grading's log folder (``<log_dir>/<model_name_or_path>/<instance_id>/``);
#: removed before each grading, so that none is left over from an earlier patch.
LOG_FILES = ("run_instance.log", "test_output.txt", "report.json", "eval.sh", "patch.diff")


@dataclass(frozen=True)
class GradingOptions:
    """What the caller asked of one grading, the same for every backend (each reads what it uses).

    Attributes:
        repo_source: where repositories come from.
        timeout: seconds allowed for the test run.
        spec_file: the user's environment specification (``local``).
        network: whether the tests have the network (:meth:`GradingBackend.tests_network` of what the caller
            asked).
        keep_workspace: keep the temporary workspace, for debugging (``local``).
        hash_seed: the ``PYTHONHASHSEED`` the tests run under (:mod:`takeover.grading.seeds`; set per grading).
    """

    repo_source: RepoSource
    timeout: float
    spec_file: SpecFile = None
    network: bool = False
    keep_workspace: bool = False
    hash_seed: int | None = None


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
    """

    name: str
    description: str
    writes_report: bool
    uses_sandbox: bool

    def tests_network(self, asked: bool) -> bool:
        """Whether the tests have the network when the caller ``asked`` for it (or not)."""
        ...

    def environment_key(self, task: SourceTask, spec_file: SpecFile) -> EnvironmentKey:
        """What of this backend's environment for ``task`` decides a verdict. Never raises for a missing or
        invalid specification: the key then has none, and :meth:`grade` reports the error."""
        ...

    def grade(self, task: SourceTask, prediction: Prediction, key: GradingKey, log_dir: Path,
              options: GradingOptions) -> GradeResult:
        """Grade ``prediction`` for ``task`` under ``key``; the test log (``test_output.txt``) and the other
        :data:`LOG_FILES` the backend makes go to ``log_dir``.

        Returns:
            The :class:`GradeResult` with its handoff state; a failure of this one prediction (repository,
            environment, container) is in its ``error``.

        Raises:
            EnvironmentUnavailable: the backend cannot grade on this machine at all (no Docker daemon).
        """
        ...
