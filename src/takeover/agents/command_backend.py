"""The command-backend seam: where an agent's commands run (docs/protocol.md section 8.4), at the bottom of
:mod:`takeover.agents`, loading no runtime.

(The task's own environment, its Python and packages, is :mod:`takeover.environments`; a backend runs the
commands with that environment's variables.)

A backend (registered by name in :data:`takeover.agents.command_backends.COMMAND_BACKENDS`) makes the run's
workspace (:meth:`CommandBackend.workspace`, from a :class:`WorkspaceRequest`), prepares the task's
environment and the starting state in it (:meth:`CommandBackend.prepare`), says where the commands see the
workspace (:meth:`CommandBackend.root`) and how they are confined (:meth:`CommandBackend.description`,
recorded in ``run.json``), removes what a killed run left (:meth:`CommandBackend.remove_stale`), and builds
the environment that runs the commands (:meth:`CommandBackend.environment`, from a :class:`CommandSession`,
with mini-swe-agent's ``execute`` contract). A backend declares its own options (``Options``: an agent
choice's ``command_backend_options``, ``--command-backend-option NAME=VALUE``); what every backend is given is
one record per call, of which each reads what it needs.

Commands see a clean environment (:func:`clean_environ`): variables whose names look like credentials are
removed, so an agent cannot print an API key; the task environment's variables (its Python venv on
``PATH``) are added.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel

from takeover.repository_states.starting_state import StartingState
from takeover.sources.tasks import SourceTask

#: The working directory of SWE-bench images, where the commands see the workspace when a sandbox or a
#: container can mount it there (mini-swe-agent's SWE-bench prompts name it literally).
TESTBED = "/testbed"
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)
# Shell start-up files (mini-swe-agent's SWE-bench config sets BASH_ENV=/root/.bashrc for its images) would
# run the host's rc files before every command and could put other interpreters ahead of the task's venv.
_STARTUP_VARS = ("BASH_ENV", "ENV")


def clean_environ(extra: dict[str, str] | None = None) -> dict[str, str]:
    """``os.environ`` updated with ``extra``, without credential-like variables (from either) and without
    shell start-up variables (``BASH_ENV``, ``ENV``)."""
    merged = {**os.environ, **(extra or {})}
    return {k: v for k, v in merged.items() if not _SECRET_NAME.search(k) and k not in _STARTUP_VARS}


@dataclass(frozen=True)
class WorkspaceRequest:
    """The run's repository a backend is asked to make (:meth:`CommandBackend.workspace`).

    Attributes:
        instance_id: the task (a backend with images of its own finds the instance's by it).
        base_commit: the task's commit.
        dest: the new folder to make the repository in.
        patch: the checkpoint's patch to apply (``""`` for a predecessor run).
        checkout: the mirror's checkout of ``base_commit`` with ``patch`` applied, made in the folder given.
    """

    instance_id: str
    base_commit: str
    dest: Path
    patch: str
    checkout: Callable[[Path], Path]


@dataclass(frozen=True)
class CommandSession:
    """What the environment that runs a run's commands is made for (:meth:`CommandBackend.environment`).

    Attributes:
        workspace: the run's repository checkout (host path).
        tmp_dir: the run's private ``/tmp`` (for a backend on this host).
        env: variables for every command (the runtime's own plus, for a backend that
            :attr:`~CommandBackend.uses_task_environment`, the task environment's).
        command_timeout: per-command time limit (seconds; :attr:`takeover.limits.RunLimits.command_timeout`).
        instance_id: the task.
        readable: extra read-only folders for a sandbox (the git alternates, a shared venv).
        lifetime: the run's wall-time limit (seconds), which a container outlives by a margin only.
    """

    workspace: Path
    tmp_dir: Path | None
    env: dict[str, str]
    command_timeout: float
    instance_id: str
    readable: list[Path]
    lifetime: float | None = None


class CommandBackend(Protocol):
    """Where a run's commands run (registered by name in :data:`takeover.agents.command_backends.COMMAND_BACKENDS`).

    Attributes:
        uses_task_environment: commands get the variables of the task's environment prepared on this host
            (its venv on ``PATH``); a backend with an environment of its own (an image) does not.
        on_host: commands run on this host (sandboxed where possible). A runtime whose commands run inside
            its own process (OpenHands, the user's own agent) can use only such a backend.
        Options: the backend's own options, a pydantic model it declares and validates (an agent choice's
            ``command_backend_options``); :class:`takeover._util.registries.NoOptions` when it has none.
    """

    uses_task_environment: bool
    on_host: bool
    Options: ClassVar[type[BaseModel]]

    def check(self) -> None:
        """Raise :class:`~takeover.errors.EnvironmentUnavailable`, saying how to fix it, when this machine
        cannot run the backend (no Docker daemon)."""

    def root(self, workspace: Path) -> str:
        """The path at which the commands (and the agent's prompt) see ``workspace``."""

    def description(self) -> str:
        """How the commands are confined, one sentence for ``run.json`` (``sandbox``)."""

    def remove_stale(self, out_dir: Path) -> list[str]:
        """Remove what killed runs in the run folder ``out_dir`` left running (containers); returns their
        names."""

    def workspace(self, request: WorkspaceRequest, options: Any) -> Path:
        """Make the run's repository in the new folder ``request.dest``: ``request.checkout(dest)`` (the
        mirror's checkout of ``base_commit`` with ``patch`` applied), or the backend's own (an image's) with
        ``patch`` applied; ``options`` are the backend's own (an instance of ``Options``)."""

    def prepare(self, task: SourceTask | None, base_commit: str, workspace: Path,
                out_dir: Path) -> tuple[dict[str, str], dict[str, Any], StartingState]:
        """Prepare the task's environment for the commands in ``workspace`` and its starting state
        (docs/protocol.md section 5.2) as ``HEAD``: ``(variables for every command, the environment's
        description for run.json, the starting state)``."""

    def environment(self, session: CommandSession, options: Any) -> Any:
        """The environment that runs the commands of ``session``, with mini-swe-agent's environment contract:
        its ``execute(action, timeout=...)`` returns ``{"output", "returncode", "exception_info"}`` and raises
        :class:`takeover.errors.EnvironmentFailure` when the environment itself fails; ``options`` are the
        backend's own.

        Raises:
            EnvironmentUnavailable: the backend cannot start (no Docker daemon).
        """
