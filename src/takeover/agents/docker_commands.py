"""The ``docker`` command backend: an agent's commands run in a container of the task's official SWE-bench
image, on the repository exactly as the image holds it.

- **The workspace is the image's own ``/testbed``** (:meth:`DockerCommands.workspace`), copied out once per
  run (:func:`takeover.environments.official_image.workspace_from_image`): its git history up to its HEAD (no
  alternates naming host paths the container cannot see), SWE-bench's setup commit, and the files the
  image's install built (compiled extensions, ``.egg-info``), with anything newer than its ``HEAD`` removed
  (:func:`takeover.sources.frozen_history.freeze_in_place`: an older image's remote, newer tags, reflog and
  unreachable commits). A takeover run's checkpoint patch is applied on top. The copy is mounted at
  ``/testbed``, so takeover takes every snapshot on the host as for ``local``.
- **The image is the environment** (:meth:`DockerCommands.prepare`): nothing is built on the host;
  ``run.json``'s ``environment`` records the image and its content id, and the starting state
  (docs/protocol.md section 5.2) is the image's repository as copied: its ``HEAD`` (``base_commit`` plus
  SWE-bench's setup commit) with the untracked files the install left, so neither shows in ``patch.diff``.
- **The container** (:meth:`DockerCommands.environment`) is mini-swe-agent's ``DockerEnvironment`` on the
  image's content id, without network, labelled as takeover's (:mod:`takeover._util.containers`), living no
  longer than the run's wall-time limit, stopped at once (SIGKILL), and git in it trusts the mounted
  ``/testbed`` whatever uid owns the host folder (as SWE-bench's eval script does). A rerun in the same run
  folder first removes the containers a killed run left (:meth:`DockerCommands.remove_stale`). A container
  that is gone or stopped while the run uses it (removed outside takeover, the daemon stopped) ends the run
  with ``environment_error``, an infrastructure failure of its unit, never an observation the agent reads.
- Its log lines go to ``takeover.agents.docker``, never to stdout (``--json`` keeps stdout JSON Lines).
- Its own options (:class:`DockerCommandOptions`, ``--command-backend-option NAME=VALUE``): the image
  (default: the instance's SWE-bench image).
"""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from takeover._util import sandbox
from takeover._util.containers import (
    STOP_SIGNAL,
    container_labels,
    label_args,
    remove_stale_containers,
)
from takeover.agents.command_backend import TESTBED, CommandSession, WorkspaceRequest
from takeover.checkpoints import apply_patch
from takeover.environments.official_image import workspace_from_image
from takeover.errors import EnvironmentFailure, EnvironmentUnavailable
from takeover.repository_states import snapshots
from takeover.repository_states.starting_state import StartingState
from takeover.sources.frozen_history import freeze_in_place
from takeover.sources.tasks import SourceTask

#: Where the copied workspace records what it was copied from (inside its ``.git``: never part of a snapshot).
IMAGE_RECORD = Path("takeover") / "image.json"
#: Seconds a container outlives the run's wall-time limit (setup, the final snapshot), so that one left by a
#: killed run ends by itself even when no rerun removes it.
LIFETIME_MARGIN = 600.0
_LOG = logging.getLogger("takeover.agents.docker")


def _image_record(workspace: Path) -> dict[str, Any]:
    """The record :meth:`DockerCommands.workspace` wrote in ``workspace``.

    Raises:
        EnvironmentUnavailable: the workspace was not copied from an image.
    """
    path = snapshots.git_dir(workspace) / IMAGE_RECORD
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise EnvironmentUnavailable(f"{workspace} was not copied from an image ({path} is missing): the docker "
                                     "backend runs on the image's own repository") from None


def _container_running(container_id: str) -> bool:
    """Whether the container exists and runs (``docker inspect``); False when it is gone or the daemon does
    not answer."""
    try:
        done = subprocess.run(["docker", "inspect", "--format", "{{.State.Running}}", container_id],
                              capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == "true"


def _run_container_class() -> type:
    """mini-swe-agent's ``DockerEnvironment`` whose failed command is checked against its container: a
    container that is gone or stopped ends the run as an environment failure (made on first use: importing
    mini-swe-agent is slow)."""
    from minisweagent.environments.docker import DockerEnvironment

    class RunContainer(DockerEnvironment):
        def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
            output = super().execute(action, cwd, timeout=timeout)
            # takeover never removes a container in use (its stale scan keeps those of live processes); one that
            # vanishes anyway (someone's docker rm, the daemon stopped) is the infrastructure's failure: the
            # run ends with environment_error, never with the agent reading docker's error as a command's output.
            if output.get("returncode") != 0 and self.container_id and not _container_running(self.container_id):
                raise EnvironmentFailure(
                    f"the run's container {self.container_id[:12]} is gone or stopped (removed outside this run, or "
                    f"the Docker daemon stopped): {' '.join(str(output.get('output', '')).split())[:300]}")
            return output

    return RunContainer


def _run_container(**kwargs: Any) -> Any:
    """A started :func:`_run_container_class` container environment (``kwargs``: ``DockerEnvironment``'s)."""
    return _run_container_class()(**kwargs)


class DockerCommandOptions(BaseModel):
    """The ``docker`` command backend's own options (an agent choice's ``command_backend_options``;
    ``--command-backend-option NAME=VALUE``).

    Attributes:
        image: the image whose ``/testbed`` is the run's repository and whose container runs the commands
            (a name or id the daemon has or can pull); None: the instance's SWE-bench image
            (:func:`takeover.environments.official_image.instance_image_name`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    image: str | None = None


class DockerCommands:
    """``docker``: commands in the instance's SWE-bench image (see the module docstring)."""

    uses_task_environment = False
    on_host = False
    Options = DockerCommandOptions

    def check(self) -> None:
        """Raises :class:`~takeover.errors.EnvironmentUnavailable` without a running Docker daemon."""
        docker = sandbox.docker_status()
        if not docker.available:
            raise EnvironmentUnavailable(
                f"the docker backend needs a running Docker daemon: {docker.message}. "
                "Start Docker, or use the local backend (--command-backend local)"
            )

    def root(self, workspace: Path) -> str:
        """Always ``/testbed``."""
        return TESTBED

    def description(self) -> str:
        """A container without network."""
        return "docker container, no network"

    def remove_stale(self, out_dir: Path) -> list[str]:
        """Remove the containers of runs in ``out_dir`` whose process is gone (a run killed with SIGKILL);
        returns their names. Without a daemon there is nothing to remove (and :meth:`workspace` says so)."""
        if not sandbox.docker_status().available:
            return []
        return [c.name for c in remove_stale_containers(out_dir)]

    def workspace(self, request: WorkspaceRequest, options: DockerCommandOptions) -> Path:
        """The image's ``/testbed`` (``options.image``, else the instance's) copied to ``request.dest`` (the
        mirror's checkout is not used), its starting state snapshotted, then the patch (a checkpoint's, or
        empty) applied.

        Raises:
            EnvironmentUnavailable: no daemon; the image is missing and cannot be pulled, or its repository
                is not at ``base_commit`` (one line naming the image and docker's reason).
            InputError: ``patch`` does not apply.
        """
        self.check()
        dest = request.dest
        copied = workspace_from_image(request.instance_id, request.base_commit, dest,
                                      container_labels("agent run", dest.parent), image=options.image)
        # An image built before SWE-bench cleaned its history may carry the task's future (docs/protocol.md
        # section 8.6): removed before the first snapshot, whose trees a prune would take.
        frozen = freeze_in_place(dest)
        start = snapshots.take_snapshot(dest)  # HEAD and the untracked files the image's install left
        record = {"image": copied.image.name, "image_id": copied.image.id, "repo_digests": copied.image.repo_digests,
                  "head": copied.head, "starting_tree": start, "frozen": frozen}
        path = snapshots.git_dir(dest) / IMAGE_RECORD
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=2), encoding="utf-8")
        apply_patch(dest, request.patch)
        return dest

    def prepare(self, task: SourceTask | None, base_commit: str, workspace: Path,
                out_dir: Path) -> tuple[dict[str, str], dict[str, Any], StartingState]:
        """``({}, the image as run.json's environment, the starting state)``: nothing is prepared on the host.

        Raises:
            EnvironmentUnavailable: ``workspace`` was not copied from an image.
        """
        record = _image_record(workspace)
        diffs, _ = snapshots.without_generated(snapshots.snapshot_diff(workspace, base_commit, record["starting_tree"]))
        described = {"kind": "docker image", "image": record["image"], "image_id": record["image_id"],
                     "repo_digests": record["repo_digests"], "repository": f"the image's {TESTBED} at {record['head']}",
                     "note": "the image is the environment: nothing was built on this host"}
        return {}, described, StartingState(base_commit=base_commit, tree=record["starting_tree"], diffs=diffs,
                                            steps=[f"the image's {TESTBED} (SWE-bench's setup commit {record['head'][:12]})"])

    def environment(self, session: CommandSession, options: DockerCommandOptions) -> Any:
        """mini-swe-agent's ``DockerEnvironment`` on the image the workspace was copied from (its content id),
        the workspace mounted at ``/testbed``, no network, labelled, living the session's ``lifetime`` seconds
        plus :data:`LIFETIME_MARGIN` (default: two hours, mini-swe-agent's).

        Raises:
            EnvironmentUnavailable: no Docker daemon, the workspace was not copied from an image, or the
                container cannot start (one line with docker's reason).
        """
        self.check()
        workspace = session.workspace
        record = _image_record(workspace)
        labels = container_labels("agent run", Path(workspace).parent)
        seconds = session.lifetime + LIFETIME_MARGIN if session.lifetime else 7200
        try:
            environment = _run_container(
                image=record["image_id"],
                cwd=TESTBED,
                # SWE-bench images activate their conda env ``testbed`` in /root/.bashrc; ``bash -c`` reads it
                # only through BASH_ENV (mini-swe-agent's tool-call config does the same).
                env={"BASH_ENV": "/root/.bashrc", **session.env},
                interpreter=["bash", "-c"],
                timeout=max(1, round(session.command_timeout)),
                container_timeout=f"{round(seconds)}s",
                run_args=["--rm", "--network", "none", "--stop-signal", STOP_SIGNAL, *label_args(labels),
                          "-v", f"{Path(workspace).resolve()}:{TESTBED}"],
                logger=_LOG,
            )
        except subprocess.CalledProcessError as exc:
            reason = " ".join((exc.stderr or exc.stdout or str(exc)).split())[:300]
            raise EnvironmentUnavailable(f"cannot start a container of image {record['image']} "
                                         f"({record['image_id'][:19]}): {reason}") from None
        # The mounted folder is owned by the host's user, not the container's root: trust it, as SWE-bench's
        # eval script does (system-wide, so the image's own ~/.gitconfig stays as it is).
        trusted = environment.execute({"command": f"git config --system --add safe.directory {TESTBED}"})
        if trusted["returncode"] != 0:
            _LOG.warning("git in the container may refuse %s: %s", TESTBED, trusted["output"][:200])
        return environment
