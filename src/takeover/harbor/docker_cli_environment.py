"""A Harbor environment on the plain ``docker`` command line, for machines without Docker Compose.

Harbor's own ``docker`` environment drives ``docker compose``; where only the ``docker`` command is installed
(Debian's ``docker.io`` has no compose plugin) ``harbor run`` can use this one instead::

    harbor run -p TASKS/ -a oracle -e takeover.harbor.docker_cli_environment:DockerCliEnvironment

It serves single-container tasks (``environment/Dockerfile``, or ``[environment] docker_image``): the image is
built with ``docker build`` (the build's ``RUN`` steps without a network) and tagged
``hb__<task name>``; the container runs ``sleep infinity`` with ``--network none`` by default
(``--ek network=bridge`` or ``host`` to give the agent the daemon's network, e.g. for a model API), labelled
``org.takeover.harbor``; commands run with ``docker exec``; files move with ``docker cp``. Nothing is mounted
from the host: Harbor downloads ``/logs`` after the agent and the verifier. Stopping removes the container
(and with ``--delete`` the built image).

This module needs Harbor (0.25) installed beside takeover; takeover itself never imports it.
"""

from __future__ import annotations

import asyncio
import re
import shlex
from pathlib import Path

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities

LABEL = "org.takeover.harbor"


def _name(text: str) -> str:
    return re.sub(r"[^a-z0-9_.-]+", "-", text.lower()).strip("-.") or "task"


class DockerCliEnvironment(BaseEnvironment):
    """One container of the task's image, driven with the ``docker`` command (module docstring).

    Extra keyword arguments (``--ek name=value``): ``network`` (``none`` by default; any ``docker run
    --network`` value), ``keep_containers`` (leave the container after the trial).
    """

    def __init__(self, *args, network: str = "none", keep_containers: bool | str = False, **kwargs):
        self._network = network
        self._keep = str(keep_containers).lower() in ("1", "true", "yes")
        self._container: str | None = None
        self._image: str | None = None
        self._built = False
        super().__init__(*args, **kwargs)

    @staticmethod
    def type() -> str:
        return "takeover-docker-cli"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(disable_internet=True)

    def _validate_definition(self):
        if not self.task_env_config.docker_image and not (self.environment_dir / "Dockerfile").is_file():
            raise FileNotFoundError(f"{self.environment_dir / 'Dockerfile'} not found and the task names no docker_image")

    async def _docker(self, *args: str, timeout: float | None = None, check: bool = True,
                      stdin: bytes | None = None) -> ExecResult:
        proc = await asyncio.create_subprocess_exec(
            "docker", *args, stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin), timeout=timeout)
        except (TimeoutError, asyncio.CancelledError):
            proc.kill()
            await proc.wait()
            raise
        result = ExecResult(stdout=out.decode(errors="replace"), stderr=err.decode(errors="replace"),
                            return_code=proc.returncode or 0)
        if check and result.return_code != 0:
            raise RuntimeError(f"docker {' '.join(args[:2])} failed ({result.return_code}): {result.stderr.strip()[-2000:]}")
        return result

    async def start(self, force_build: bool) -> None:
        if self.task_env_config.docker_image and not (self.environment_dir / "Dockerfile").is_file():
            self._image = self.task_env_config.docker_image
        else:
            self._image = f"hb__{_name(self.environment_name)}"
            exists = (await self._docker("image", "inspect", self._image, check=False)).return_code == 0
            if force_build or not exists:
                await self._docker("build", "--network", "none", "--label", LABEL, "-t", self._image,
                                   str(self.environment_dir), timeout=self.task_env_config.build_timeout_sec)
                self._built = True
        self._container = f"hb__{_name(self.session_id)}"
        await self._docker("rm", "-f", self._container, check=False)
        run = ["run", "-d", "--name", self._container, "--label", LABEL, "--network", self._network]
        for key, value in self._startup_env().items():
            run += ["-e", f"{key}={value}"]
        if self._effective_cpus:
            run += ["--cpus", str(self._effective_cpus)]
        if self._effective_memory_mb:
            run += ["--memory", f"{self._effective_memory_mb}m"]
        await self._docker(*run, "--entrypoint", "sh", self._image, "-c", "sleep infinity")
        await self.exec("mkdir -p /logs/agent /logs/verifier /logs/artifacts && chmod 777 /logs/agent /logs/verifier "
                        "/logs/artifacts", user="root")
        await self._upload_environment_dir_after_start()

    async def stop(self, delete: bool):
        if self._container and not self._keep:
            await self._docker("rm", "-f", self._container, check=False)
        if delete and self._built and self._image and not self._keep:
            await self._docker("image", "rm", self._image, check=False)

    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_sec: int | None = None, user: str | int | None = None) -> ExecResult:
        args = ["exec", "-i"]
        workdir = cwd or self.task_env_config.workdir
        if workdir:
            args += ["-w", workdir]
        for key, value in (self._merge_env(env) or {}).items():
            args += ["-e", f"{key}={value}"]
        resolved = self._resolve_user(user)
        if resolved is not None:
            args += ["-u", str(resolved)]
        try:
            return await self._docker(*args, self._container or "", "bash", "-c", command, timeout=timeout_sec,
                                      check=False)
        except TimeoutError:
            raise RuntimeError(f"command timed out after {timeout_sec} seconds: {shlex.quote(command)[:200]}") from None

    async def upload_file(self, source_path: Path | str, target_path: str):
        await self.exec(f"mkdir -p {shlex.quote(str(Path(target_path).parent))}", user="root")
        await self._docker("cp", str(source_path), f"{self._container}:{target_path}")

    async def upload_dir(self, source_dir: Path | str, target_dir: str):
        await self.exec(f"mkdir -p {shlex.quote(target_dir)}", user="root")
        await self._docker("cp", f"{Path(source_dir)}/.", f"{self._container}:{target_dir}")

    async def download_file(self, source_path: str, target_path: Path | str):
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        await self._docker("cp", f"{self._container}:{source_path}", str(target_path))

    async def download_dir(self, source_dir: str, target_dir: Path | str):
        Path(target_dir).mkdir(parents=True, exist_ok=True)
        await self._docker("cp", f"{self._container}:{source_dir.rstrip('/')}/.", str(target_dir))
