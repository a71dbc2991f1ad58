"""The ``local`` command backend: an agent's commands on this host, in the run's workspace, inside bubblewrap
when it is available (:func:`takeover._util.sandbox.wrap`: no network, writes only in the workspace and the
run's private ``/tmp``); unconfined otherwise, and ``run.json`` says so. The task's environment is prepared on
this host (:func:`takeover.environments.prepare_environment`) and its variables given to every command.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from takeover._util import sandbox
from takeover._util.registries import NoOptions
from takeover.agents.command_backend import TESTBED, CommandSession, WorkspaceRequest
from takeover.agents.mini_swe_agent.environments import SandboxedLocalEnvironment
from takeover.environments import prepare_environment
from takeover.errors import TakeoverError
from takeover.repository_states.starting_state import (
    StartingState,
    commit_starting_state,
    find_environment_edits,
)
from takeover.sources.tasks import SourceTask


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
    """``local``: commands on this host in the workspace, inside bubblewrap when it is available; it has no
    options of its own."""

    uses_task_environment = True
    on_host = True
    Options = NoOptions

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

    def workspace(self, request: WorkspaceRequest, options: NoOptions) -> Path:
        """``request.checkout(dest)``, the mirror's checkout, which applies the patch itself."""
        return request.checkout(request.dest)

    def prepare(self, task, base_commit, workspace, out_dir):
        """The task's environment prepared on this host (:func:`takeover.environments.prepare_environment`;
        none without a task record) and its starting state, the setup's edits committed."""
        task_env, described = _task_environment(task, workspace)
        return task_env, described, _starting_state(task, base_commit, workspace, out_dir)

    def environment(self, session: CommandSession, options: NoOptions) -> SandboxedLocalEnvironment:
        """:class:`SandboxedLocalEnvironment` in the session's workspace (its commands end with the run's
        process group: the run's lifetime needs no enforcing here)."""
        root = self.root(session.workspace)
        return SandboxedLocalEnvironment(
            cwd=root,
            workspace=str(session.workspace),
            mount_at=root if root != str(session.workspace) else None,
            tmp_dir=str(session.tmp_dir) if session.tmp_dir else None,
            readable=[str(p) for p in session.readable],
            env=session.env,
            timeout=max(1, round(session.command_timeout)),
        )


