"""Where an agent's commands run: the command backends, by name in :data:`COMMAND_BACKENDS`, and the
sandbox they run commands in (mini-swe-agent environments around the run's workspace).

(The task's own environment, its Python and packages, is :mod:`takeover.environments`; a sandbox here
runs the commands with that environment's variables.)

- ``local`` (default, :class:`LocalCommands`): :class:`SandboxedLocalEnvironment`, mini-swe-agent's
  ``LocalEnvironment`` with every command wrapped by :func:`takeover._util.sandbox.wrap` (no network,
  writes only in the workspace and the run's private ``/tmp``) when a sandbox is available; unconfined
  otherwise, and ``run.json`` says so.
- ``docker`` (:class:`~takeover.agents.docker_commands.DockerCommands`): mini-swe-agent's
  ``DockerEnvironment`` on the official SWE-bench image of the instance, on the image's own repository
  copied out and mounted at ``/testbed`` (so snapshots are taken on the host), no network; the image is
  the environment. Needs a Docker daemon; raises :class:`~takeover.errors.EnvironmentUnavailable`
  otherwise.

Each backend makes the run's workspace (:meth:`CommandBackend.workspace`), prepares the task's environment
and the starting state in it (:meth:`CommandBackend.prepare`), says where the commands see the workspace
(:meth:`CommandBackend.root`) and how they are confined (:meth:`CommandBackend.description`, recorded in
``run.json``), removes what a killed run left (:meth:`CommandBackend.remove_stale`), and builds the
mini-swe-agent environment that runs the commands. Code outside this module picks a backend by name
(:func:`command_backend`) and never tests the names itself.

Commands see a clean environment: variables whose names look like credentials are removed, so an agent
cannot print an API key; the task environment's variables (its Python venv on ``PATH``) are added.
"""

from __future__ import annotations

import os
import platform
import re
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from pydantic import Field

from takeover._util import sandbox
from takeover._util.processes import run_process
from takeover.agents.docker_commands import DockerCommands
from takeover.agents.mini_swe_agent import _mswea
from takeover.agents.mini_swe_agent._mswea import TESTBED
from takeover.environments import prepare_environment
from takeover.errors import InputError, TakeoverError
from takeover.repository_states.starting_state import (
    StartingState,
    commit_starting_state,
    find_environment_edits,
)
from takeover.sources.tasks import SourceTask

_mswea.load()

from minisweagent.environments.local import LocalEnvironment, LocalEnvironmentConfig
from minisweagent.utils.serialize import recursive_merge

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)
# Shell start-up files (mini-swe-agent's SWE-bench config sets BASH_ENV=/root/.bashrc for its images) would
# run the host's rc files before every command and could put other interpreters ahead of the task's venv.
_STARTUP_VARS = ("BASH_ENV", "ENV")


class EnvironmentFailure(RuntimeError):
    """The environment itself failed (workspace gone, sandbox or container broken): ends the run."""


def clean_environ(extra: dict[str, str] | None = None) -> dict[str, str]:
    """``os.environ`` updated with ``extra``, without credential-like variables (from either) and without
    shell start-up variables (``BASH_ENV``, ``ENV``)."""
    merged = {**os.environ, **(extra or {})}
    return {k: v for k, v in merged.items() if not _SECRET_NAME.search(k) and k not in _STARTUP_VARS}


class SandboxedLocalEnvironmentConfig(LocalEnvironmentConfig):
    """mini-swe-agent's local config plus the folders the sandbox needs.

    Attributes:
        workspace: the repository checkout (read-write inside the sandbox).
        tmp_dir: the run's folder mounted at ``/tmp`` (kept between commands); ``None`` for a fresh tmpfs.
        readable: folders the commands must still read when they lie under the replaced ``/tmp`` (the
            mirror objects behind the workspace's git alternates, the task's shared venv).
        use_sandbox: wrap commands with :func:`takeover._util.sandbox.wrap` (it falls back to unconfined
        itself).
        mount_at: path at which the sandbox mounts the workspace (``/testbed``); ``cwd`` is then a path
            inside the sandbox. Only set when the sandbox is available (:func:`command_root`).
    """

    workspace: str
    tmp_dir: str | None = None
    readable: list[str] = Field(default_factory=list)
    use_sandbox: bool = True
    mount_at: str | None = None


class SandboxedLocalEnvironment(LocalEnvironment):
    """Runs each command as ``bash -c CMD`` in the workspace, inside bubblewrap when available.

    ``execute`` keeps mini-swe-agent's contract: it returns ``{"output", "returncode", "exception_info"}``
    and raises ``Submitted`` on the submission marker. A command that exceeds its time limit is killed
    with its process group and reported in the observation. Raises :class:`EnvironmentFailure` when the
    workspace no longer exists.
    """

    def __init__(self, **kwargs):
        super().__init__(config_class=SandboxedLocalEnvironmentConfig, **kwargs)

    def execute(self, action: dict, cwd: str = "", *, timeout: float | None = None) -> dict[str, Any]:
        """Run ``action["command"]`` in ``cwd`` (default: the configured ``cwd``) within ``timeout`` seconds
        (default: the configured ``timeout``).

        Returns:
            ``{"output", "returncode", "exception_info"}`` (plus ``extra`` after a time-out).
        Raises:
            Submitted: the output starts with mini-swe-agent's submission marker.
            EnvironmentFailure: the workspace or ``cwd`` is gone, or no command can be started there.
        """
        command = action.get("command", "")
        workspace = Path(self.config.workspace)
        cwd = cwd or self.config.cwd or str(workspace)
        root = self.config.mount_at if self.config.use_sandbox else None
        host_cwd = cwd
        if root and (cwd == root or cwd.startswith(root.rstrip("/") + "/")):
            host_cwd = str(workspace) + cwd[len(root.rstrip("/")) :]
        if not workspace.is_dir() or not Path(host_cwd).is_dir():
            raise EnvironmentFailure(f"working directory {cwd} does not exist")
        argv = ["bash", "-c", command]
        if self.config.use_sandbox:
            argv = sandbox.wrap(
                argv,
                workspace,
                cwd=cwd,
                tmp=self.config.tmp_dir,
                readable=self.config.readable,
                mount_at=root,
            )
        limit = timeout or self.config.timeout
        try:
            done = run_process(argv, cwd=host_cwd, env=clean_environ(self.config.env), timeout=limit)
        except OSError as exc:
            raise EnvironmentFailure(f"cannot start a command in {cwd}: {exc}") from exc
        # mini-swe-agent reads command output in text mode, which turns every line ending into "\n".
        text = done.output.replace("\r\n", "\n").replace("\r", "\n")
        if done.timed_out:
            output = {
                "output": text,
                "returncode": -1,
                "exception_info": f"The command timed out after {limit:g} seconds and was killed.",
                "extra": {
                    "exception_type": "TimeoutExpired",
                    "exception": str(subprocess.TimeoutExpired(shlex.join(argv), limit)),
                },
            }
        else:
            output = {"output": text, "returncode": done.exit_code, "exception_info": ""}
        self._check_finished(output)
        return output

    def get_template_vars(self, **kwargs) -> dict[str, Any]:
        """The config and the host's ``platform.uname()`` fields, updated with ``kwargs``.

        mini-swe-agent merges ``os.environ`` here as well; prompts must not depend on (or leak) the host's
        variables, so they are left out.
        """
        return recursive_merge(self.config.model_dump(), platform.uname()._asdict(), kwargs)


class CommandBackend(Protocol):
    """Where a run's commands run (registered by name in :data:`COMMAND_BACKENDS`).

    Attributes:
        uses_task_environment: commands get the variables of the task's environment prepared on this host
            (its venv on ``PATH``); a backend with an environment of its own (an image) does not.
        on_host: commands run on this host (sandboxed where possible). A runtime whose commands run inside
            its own process (OpenHands, the user's own agent) can use only such a backend.
    """

    uses_task_environment: bool
    on_host: bool

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

    def workspace(self, *, instance_id: str, base_commit: str, image: str | None, dest: Path, patch: str,
                  checkout: Callable[[Path], Path]) -> Path:
        """Make the run's repository in the new folder ``dest``: ``checkout(dest)`` (the mirror's checkout of
        ``base_commit`` with ``patch`` applied), or the backend's own (an image's) with ``patch`` applied."""

    def prepare(self, task: SourceTask | None, base_commit: str, workspace: Path,
                out_dir: Path) -> tuple[dict[str, str], dict[str, Any], StartingState]:
        """Prepare the task's environment for the commands in ``workspace`` and its starting state
        (docs/protocol.md section 5.2) as ``HEAD``: ``(variables for every command, the environment's
        description for run.json, the starting state)``."""

    def environment(self, *, workspace: Path, tmp_dir: Path | None, env: dict[str, str], command_timeout: float,
                    instance_id: str, image: str | None, readable: list[Path], lifetime: float | None = None) -> Any:
        """The mini-swe-agent environment that runs the commands (its ``execute(action, timeout=...)``
        returns ``{"output", "returncode", "exception_info"}``); the arguments as in
        :func:`make_command_sandbox`."""


def _task_environment(task: SourceTask | None, workspace: Path) -> tuple[dict[str, str], dict]:
    """Variables from the task's prepared environment, and its description for run.json."""
    if task is None:
        return {}, {"kind": "host", "note": "no task record given: commands use the host's interpreters"}
    prepared = prepare_environment(task, workspace)
    return dict(prepared.env_vars()), prepared.model_dump(mode="json")


def _starting_state(task: SourceTask | None, base_commit: str, workspace: Path, out_dir: Path) -> StartingState:
    """The run's starting state (docs/protocol.md section 5.2), made ``HEAD`` of ``workspace``.

    Preparing the task's environment in the workspace ran its setup steps there (SWE-bench's
    ``pre_install``: ``sed`` pins in ``setup.py``, ``tox.ini``...): those edits are the environment's, never
    the agent's. They are found as replay finds them
    (:func:`takeover.repository_states.starting_state.find_environment_edits`,
    in a scratch checkout under ``out_dir``) and committed on top of ``base_commit`` as SWE-bench's images
    commit them, so the agent's ``git diff`` does not show them either. Without a task record no setup ran:
    the starting state is ``base_commit``.

    Raises:
        TakeoverError: git fails in the workspace.
    """
    if task is None:
        found = subprocess.run(["git", "rev-parse", "--verify", f"{base_commit}^{{tree}}"], cwd=workspace,
                               capture_output=True, text=True, check=False)
        if found.returncode != 0:
            raise TakeoverError(f"{workspace} lacks base_commit {base_commit}: {found.stderr.strip()[:300]}")
        return StartingState(base_commit=base_commit, tree=found.stdout.strip())
    start = find_environment_edits(task, workspace, work_dir=out_dir)
    commit_starting_state(workspace, start)
    return start


class LocalCommands:
    """``local``: commands on this host in the workspace, inside bubblewrap when it is available."""

    uses_task_environment = True
    on_host = True

    def check(self) -> None:
        """Nothing to check: without a sandbox the commands run unconfined and ``run.json`` says so."""

    def root(self, workspace: Path) -> str:
        """``/testbed`` when bubblewrap can mount the workspace there
        (:func:`takeover._util.sandbox.can_mount_at`), so that prompts, commands and token counts do not
        depend on the host folder of the run; otherwise the workspace's host path (unavoidable without a
        sandbox)."""
        if sandbox.status().available and sandbox.can_mount_at(TESTBED):
            return TESTBED
        return str(workspace)

    def description(self) -> str:
        """The sentence of :func:`takeover._util.sandbox.status` (which sandbox, or why none)."""
        return sandbox.status().message

    def remove_stale(self, out_dir: Path) -> list[str]:
        """Nothing: the commands of a killed run end with its process group."""
        return []

    def workspace(self, *, instance_id, base_commit, image, dest, patch, checkout):
        """``checkout(dest)``, the mirror's checkout, which applies ``patch`` itself."""
        return checkout(dest)

    def prepare(self, task, base_commit, workspace, out_dir):
        """The task's environment prepared on this host (:func:`takeover.environments.prepare_environment`;
        none without a task record) and its starting state, the setup's edits committed."""
        task_env, described = _task_environment(task, workspace)
        return task_env, described, _starting_state(task, base_commit, workspace, out_dir)

    def environment(self, *, workspace, tmp_dir, env, command_timeout, instance_id, image, readable, lifetime=None):
        """:class:`SandboxedLocalEnvironment` in the workspace (``instance_id``, ``image`` and ``lifetime``
        unused)."""
        root = self.root(workspace)
        return SandboxedLocalEnvironment(
            cwd=root,
            workspace=str(workspace),
            mount_at=root if root != str(workspace) else None,
            tmp_dir=str(tmp_dir) if tmp_dir else None,
            readable=[str(p) for p in readable],
            env=env,
            timeout=max(1, round(command_timeout)),
        )


def host_command_backends() -> list[str]:
    """The names of the command backends whose commands run on this host (:attr:`CommandBackend.on_host`)."""
    return [name for name, backend in COMMAND_BACKENDS.items() if backend.on_host]


#: The command backends by name (``--command-backend``, the experiment file's ``command_backend``).
COMMAND_BACKENDS: dict[str, CommandBackend] = {"local": LocalCommands(), "docker": DockerCommands()}


def command_backend(name: str, *, where: str = "command_backend") -> CommandBackend:
    """The command backend called ``name``.

    Raises:
        InputError: no backend has that name (``where``: the flag or key that gave it).
    """
    try:
        return COMMAND_BACKENDS[name]
    except KeyError:
        raise InputError(where, f"unknown command backend {name!r}: use {' or '.join(COMMAND_BACKENDS)}") from None


def command_root(backend: str, workspace: Path) -> str:
    """The path at which an agent's commands (and its prompt) see the workspace with the backend called
    ``backend`` (:meth:`CommandBackend.root`).

    Raises:
        InputError: an unknown backend.
    """
    return command_backend(backend).root(workspace)


def make_command_sandbox(
    backend: str,
    *,
    workspace: Path,
    tmp_dir: Path | None,
    env: dict[str, str],
    command_timeout: float,
    instance_id: str,
    image: str | None = None,
    readable: list[Path] | None = None,
    lifetime: float | None = None,
):
    """The mini-swe-agent environment in which a run's commands run.

    Args:
        backend: a name of :data:`COMMAND_BACKENDS` (``local`` or ``docker``).
        workspace: the run's repository checkout (host path).
        tmp_dir: the run's private ``/tmp`` (local backend).
        env: variables for every command (the runtime's own plus, for a backend that
            :attr:`~CommandBackend.uses_task_environment`, the task environment's).
        command_timeout: per-command time limit (seconds; :attr:`takeover.limits.RunLimits.command_timeout`).
        instance_id: for the SWE-bench image name; ``image`` overrides it.
        readable: extra read-only folders for the sandbox (see :class:`SandboxedLocalEnvironmentConfig`).
        lifetime: the run's wall-time limit (seconds): a container lives no longer, plus a margin.
    Raises:
        InputError: an unknown backend.
        EnvironmentUnavailable: ``docker`` without a daemon.
    """
    return command_backend(backend).environment(
        workspace=workspace, tmp_dir=tmp_dir, env=env, command_timeout=command_timeout, instance_id=instance_id,
        image=image, readable=list(readable or []), lifetime=lifetime)
