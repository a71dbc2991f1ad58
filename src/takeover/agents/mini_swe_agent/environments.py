"""mini-swe-agent's environments around a run's workspace: its ``LocalEnvironment`` with every command in
takeover's sandbox (:class:`SandboxedLocalEnvironment`), which the ``local`` command backend
(:mod:`takeover.agents.local_commands`) gives to a runtime that runs commands itself.
"""

from __future__ import annotations

import platform
import shlex
import subprocess
from pathlib import Path
from typing import Any

from pydantic import Field

from takeover._util import sandbox
from takeover._util.processes import run_process
from takeover.agents.command_backend import clean_environ
from takeover.agents.mini_swe_agent import _mswea
from takeover.errors import EnvironmentFailure

_mswea.load()

from minisweagent.environments.local import LocalEnvironment, LocalEnvironmentConfig
from minisweagent.utils.serialize import recursive_merge


class SandboxedLocalEnvironmentConfig(LocalEnvironmentConfig):
    """mini-swe-agent's local config plus the folders the sandbox needs.

    Attributes:
        workspace: the repository checkout (read-write inside the sandbox).
        tmp_dir: the run's folder mounted at ``/tmp`` (kept between commands); ``None`` for a fresh tmpfs.
        readable: folders the commands must still read when they lie under the replaced ``/tmp`` (the
            mirror objects behind the workspace's git alternates, the task's shared venv).
        sandboxed: wrap commands with :func:`takeover._util.sandbox.wrap` (it falls back to unconfined
        itself).
        mount_at: path at which the sandbox mounts the workspace (``/testbed``); ``cwd`` is then a path
            inside the sandbox. Only set when the sandbox is available (:func:`command_root`).
    """

    workspace: str
    tmp_dir: str | None = None
    readable: list[str] = Field(default_factory=list)
    sandboxed: bool = True
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
        root = self.config.mount_at if self.config.sandboxed else None
        host_cwd = cwd
        if root and (cwd == root or cwd.startswith(root.rstrip("/") + "/")):
            host_cwd = str(workspace) + cwd[len(root.rstrip("/")) :]
        if not workspace.is_dir() or not Path(host_cwd).is_dir():
            raise EnvironmentFailure(f"working directory {cwd} does not exist")
        argv = ["bash", "-c", command]
        if self.config.sandboxed:
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


