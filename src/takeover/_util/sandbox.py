"""Run agent and replay commands with no network and no writes outside their workspace.

On Linux with bubblewrap (``bwrap``) commands see an allow-list of this machine (docs/protocol.md
section 8.6): the system folders read-only (:data:`SYSTEM_FOLDERS`), the task's environment read-only,
the workspace (and any extra writable folders the caller names) read-write, a private ``/tmp`` (also
``HOME``), and an empty network namespace. Where no sandbox is available, commands run unconfined and callers must say so in
their output (:func:`status` gives the sentence). Engineering standard: "agent commands never run with
write access outside their workspace when a sandbox is available".

The other confinement is a Docker container (the ``docker`` backends of agent runs and grading):
:func:`docker_status` is the one check whether a Docker daemon answers.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

DISABLE_ENV = "TAKEOVER_NO_SANDBOX"


class SandboxStatus(BaseModel):
    """Whether commands will be confined, and a sentence for the user."""

    available: bool
    tool: str | None
    message: str


@functools.cache
def _bwrap_works(bwrap: str) -> bool:
    try:
        proc = subprocess.run(
            [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "--", "true"],
            capture_output=True,
            check=False,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def status() -> SandboxStatus:
    """Detect bubblewrap; ``TAKEOVER_NO_SANDBOX=1`` turns the sandbox off on purpose."""
    if os.environ.get(DISABLE_ENV):
        return SandboxStatus(available=False, tool=None, message=f"sandbox disabled by {DISABLE_ENV}: commands run unconfined")
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return SandboxStatus(
            available=False,
            tool=None,
            message="no sandbox: bubblewrap (bwrap) not found, commands run unconfined "
            "(install it: apt-get install bubblewrap)",
        )
    if not _bwrap_works(bwrap):
        return SandboxStatus(
            available=False,
            tool=None,
            message="no sandbox: bwrap is installed but cannot create namespaces here; commands run unconfined",
        )
    return SandboxStatus(available=True, tool=bwrap, message="sandbox: bubblewrap (no network, only the task is "
                         "shown, writes only in the workspace)")


class DockerStatus(BaseModel):
    """Whether a Docker daemon answers the ``docker`` client, and a sentence for the user.

    Attributes:
        available: the daemon answered.
        client: path of the ``docker`` client, or ``None`` when it is not on ``PATH``.
        server_version: the daemon's version when it answered.
        message: what was found, one sentence (starts with "no Docker daemon answers" when none did).
    """

    available: bool
    client: str | None = None
    server_version: str | None = None
    message: str


def docker_status(timeout: float = 20.0) -> DockerStatus:
    """Ask the Docker daemon for its version (``docker info``), waiting at most ``timeout`` seconds.

    The ``docker`` client honours ``DOCKER_HOST`` and the current context, as the official harness's
    Python client does.
    """
    client = shutil.which("docker")
    if not client:
        return DockerStatus(available=False, message="no Docker daemon answers: the docker client is not on PATH")
    try:
        proc = subprocess.run([client, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                              timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return DockerStatus(available=False, client=client, message=f"no Docker daemon answers (docker info: {exc})")
    version = proc.stdout.strip()
    if proc.returncode != 0 or not version:
        why = (proc.stderr or proc.stdout).strip()[:200]
        return DockerStatus(available=False, client=client, message=f"no Docker daemon answers ({why})")
    return DockerStatus(available=True, client=client, server_version=version, message=f"Docker daemon {version} answers")


def can_mount_at(path: str | None) -> bool:
    """Whether :func:`wrap` can mount a workspace at ``path``: an absolute path whose top-level folder
    does not exist on this machine (e.g. ``/testbed``, ``/workspace/x``), or one under ``/tmp`` (private
    in the sandbox). A path inside an existing top-level folder (``/usr/src/app``) would need a write to
    a read-only bind."""
    if not path or not path.startswith("/") or path.rstrip("/") in ("", "/tmp"):
        return False
    top = "/" + path.strip("/").split("/", 1)[0]
    return top == "/tmp" or not os.path.lexists(top)


#: System folders a shell, git and the task's tools need, mounted read-only (those that exist; symbolic links
#: such as ``/bin -> usr/bin`` are made again as links). Nothing else of this machine is shown: not the
#: user's home, ``/work``, ``/srv``, ``/mnt``, ``/opt``, ``/run`` (the Docker socket) or ``/var``.
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/nix")


def hidden_by_sandbox(paths: Sequence[Path | str]) -> list[Path]:
    """The folders of ``paths`` that a sandboxed command cannot see unless they are mounted: those that
    exist and lie outside :data:`SYSTEM_FOLDERS` (``/tmp`` included, which the sandbox replaces by a
    private one). Pass them as ``readable`` to :func:`wrap`. Sorted, without duplicates or folders inside
    another."""
    found: set[Path] = set()
    for raw in paths:
        for path in {Path(raw), Path(raw).resolve()}:
            if not path.is_absolute() or not path.exists() or path == Path("/"):
                continue
            if any(path == Path(s) or path.is_relative_to(s) for s in SYSTEM_FOLDERS if os.path.isdir(s)):
                continue
            found.add(path if path.is_dir() else path.parent)
    return [p for p in sorted(found) if not any(p != q and p.is_relative_to(q) for q in found)]


#: Where :func:`note_private` keeps its paths: a variable, so that an experiment's worker processes (started
#: after the dataset was loaded) probe them too. ``"<what>=<path>"`` entries joined by ``os.pathsep``.
PRIVATE_ENV = "TAKEOVER_PRIVATE_PATHS"


#: Variables of takeover's own removed inside the sandbox.
HIDDEN_VARIABLES = (PRIVATE_ENV, "TAKEOVER_MIRROR", "TAKEOVER_CACHE")


def note_private(path: Path | str, what: str) -> None:
    """Remember ``path`` (a dataset file, a mirror folder) as one no agent may read, so that the isolation
    probe (:mod:`takeover.agents.isolation`) checks it; ``what`` names it in ``run.json``. Kept in
    :data:`PRIVATE_ENV` of this process, which its child processes inherit."""
    entry = f"{what}={Path(path).resolve()}"
    known = [e for e in os.environ.get(PRIVATE_ENV, "").split(os.pathsep) if e]
    if entry not in known:
        os.environ[PRIVATE_ENV] = os.pathsep.join([*known, entry])


def private_paths() -> dict[str, Path]:
    """The paths :func:`note_private` remembered (here or in a parent process), by ``"<what>: <path>"``."""
    found = {}
    for entry in os.environ.get(PRIVATE_ENV, "").split(os.pathsep):
        what, _, path = entry.partition("=")
        if what and path:
            found[f"{what}: {path}"] = Path(path)
    return found


def base_prefixes(venvs: Sequence[Path | str]) -> list[Path]:
    """The installations the venvs ``venvs`` were made from (``home`` in their ``pyvenv.cfg``: its parent
    folder), which a sandboxed command needs to run the venv's interpreter; existing folders only."""
    found = []
    for venv in venvs:
        try:
            lines = (Path(venv) / "pyvenv.cfg").read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                prefix = Path(value.strip()).resolve().parent
                if prefix.is_dir() and prefix not in found:
                    found.append(prefix)
    return found


class HostPython(BaseModel):
    """The host's own Python 3, for replayed commands of a run whose task environment is unavailable.

    Attributes:
        bin_dir: the folder of its real executable (behind any pyenv or asdf shim), put first on ``PATH``.
        readable: the folders a sandbox must show for it to run (its installation), see :func:`hidden_by_sandbox`.
    """

    bin_dir: str
    readable: list[Path]

    def path(self) -> str:
        """This process's ``PATH`` with :attr:`bin_dir` first."""
        return f"{self.bin_dir}{os.pathsep}{os.environ.get('PATH', os.defpath)}"


@functools.cache
def host_python() -> HostPython | None:
    """:class:`HostPython` of ``python3`` on ``PATH``, or None when there is none or it does not start.

    A shim (pyenv's) is a script under the user's home, which the sandbox does not show: the interpreter
    itself is asked where it lives, and only its installation is shown.
    """
    exe = shutil.which("python3")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "-c", "import sys; print(sys.executable); print(sys.base_prefix)"],
                             capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return None
    if len(out) < 2 or not out[0]:
        return None
    real = Path(out[0]).resolve()
    return HostPython(bin_dir=str(Path(out[0]).parent), readable=hidden_by_sandbox([Path(out[1]), real.parent]))


def wrap(
    argv: Sequence[str],
    workspace: Path | str,
    *,
    cwd: Path | str | None = None,
    writable: Sequence[Path | str] = (),
    network: bool = False,
    tmp: Path | str | None = None,
    readable: Sequence[Path | str] = (),
    mount_at: str | None = None,
    tool: str | None = None,
    home: str | None = "/tmp",
) -> list[str]:
    """Return ``argv`` wrapped in bubblewrap, or unchanged when no sandbox is available.

    The sandbox shows an allow-list (docs/protocol.md section 8.6): :data:`SYSTEM_FOLDERS` read-only,
    ``/dev``, ``/proc``, a private ``/tmp``, the folders in ``readable`` read-only, and the workspace and
    ``writable`` read-write. Nothing else of this machine (the dataset, the mirror, the output folder
    around the workspace, takeover's cache, the user's home) exists inside it.

    Args:
        argv: the command, e.g. ``["bash", "-c", "pytest -x"]``.
        workspace: folder mounted read-write (the repository checkout).
        cwd: working directory inside the sandbox (default: the workspace); must exist.
        writable: further folders mounted read-write (e.g. a run's scratch folder).
        network: keep the host network (default: none).
        tmp: folder mounted read-write at ``/tmp`` instead of a fresh tmpfs, so that files an agent
            leaves in ``/tmp`` survive between its commands (each command is a new sandbox).
        readable: folders mounted read-only: the task's environment (its venv and interpreter), the
            frozen object store behind a ``git clone --shared`` workspace's alternates. Folders under
            ``/tmp`` are mounted after the private ``/tmp``, so they stay visible.
        mount_at: also mount the workspace read-write at this absolute path (e.g. ``/testbed``), so that
            commands and prompts name the same path whatever the host folder is. The path must satisfy
            :func:`can_mount_at`; the workspace stays mounted at its own path too (a task's venv or an
            editable install refers to it by its host path). ``cwd`` may then name a folder under it.
        tool: the bubblewrap executable (default: the one :func:`status` found); given by callers that
            already checked the sandbox.
        home: ``HOME`` inside the sandbox (default ``/tmp``, the private one: the user's home is not
            shown); ``None`` keeps the caller's variable (which must then name a mounted folder).

    Raises:
        ValueError: ``mount_at`` cannot be created inside the sandbox (see :func:`can_mount_at`).
    """
    if tool is None:
        st = status()
        if not st.available:
            return list(argv)
        tool = st.tool
    ws = str(Path(workspace).resolve())
    if mount_at is not None and not can_mount_at(mount_at):
        raise ValueError(f"cannot mount the workspace at {mount_at!r} inside the sandbox")
    # bubblewrap's root is an empty tmpfs: only what is mounted below exists.
    cmd = [tool]
    for path in SYSTEM_FOLDERS:
        if os.path.islink(path):
            cmd += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            cmd += ["--ro-bind", path, path]
    cmd += ["--dev", "/dev", "--proc", "/proc"]
    cmd += ["--bind", str(Path(tmp).resolve()), "/tmp"] if tmp is not None else ["--tmpfs", "/tmp"]
    for folder in readable:
        if Path(folder).exists():
            cmd += ["--ro-bind", str(Path(folder).resolve()), str(Path(folder).resolve())]
    for folder in [ws, *(str(Path(w).resolve()) for w in writable)]:
        cmd += ["--bind", folder, folder]
    if mount_at is not None:
        cmd += ["--bind", ws, mount_at]
    if home is not None:
        cmd += ["--setenv", "HOME", home]
    for name in HIDDEN_VARIABLES:  # they name the study's folders, which the sandbox does not show
        cmd += ["--unsetenv", name]
    if not network:
        cmd.append("--unshare-net")
    cmd += ["--unshare-pid", "--die-with-parent", "--chdir", str(cwd or ws), "--"]
    return cmd + list(argv)
