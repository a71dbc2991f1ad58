"""The commands of an environment build: venv creation and installs, each one logged and time-limited.

Every command runs through :func:`takeover._util.processes.run_process`, so a step that hits its time limit is
killed with every process it started (``pip`` and the compilers under it). Installs use ``uv pip`` when
``uv`` is available (fast), else the venv's own pip.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from takeover._util.processes import run_process
from takeover.environments.hints import failure_hint
from takeover.environments.interpreters import uv_binary
from takeover.errors import EnvironmentUnavailable

#: Seconds one build command may take before it is killed.
BUILD_TIMEOUT = 3600.0
#: A shell step that is a pip install (``pip install X``, ``python -m pip install X``); group ``args``.
PIP_INSTALL = re.compile(r"^\s*(?:python3?\s+-m\s+)?pip3?\s+install\s+(?P<args>.*)$")


class BuildStepFailed(EnvironmentUnavailable):
    """A build command failed or timed out; ``output`` holds all it printed (the message only its end)."""

    def __init__(self, message: str, output: str = ""):
        super().__init__(message)
        self.output = output


class BuildLog:
    """Runs build commands one after the other, appending each command and its output to a log file.

    Args:
        path: the log file (its folder is created).
        timeout: seconds each command may take.
        exclude_newer: an ISO 8601 date: uv considers only package files uploaded before it
            (``UV_EXCLUDE_NEWER``), so unpinned dependencies resolve as they did when the environment was
            specified; None = today's index.
    """

    def __init__(self, path: Path, timeout: float = BUILD_TIMEOUT, exclude_newer: str | None = None):
        self.path = path
        self.timeout = timeout
        self.exclude_newer = exclude_newer
        path.parent.mkdir(parents=True, exist_ok=True)

    def note(self, text: str) -> None:
        """Append a line for the reader of the log."""
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(f"{text}\n")

    def run(self, argv: list[str] | str, *, what: str, cwd: Path | None = None,
            env: Mapping[str, str] | None = None) -> None:
        """Run ``argv`` (a string runs in ``bash -c``) and log it; ``what`` names the step in errors.

        Raises:
            BuildStepFailed: (an :class:`EnvironmentUnavailable`) the command failed or hit the time limit;
                the message has the last lines of its output, a hint (:func:`failure_hint`) and the log's
                path; ``output`` all of it.
            OSError: the command cannot start.
        """
        shell = isinstance(argv, str)
        self.note(f"\n$ {argv if shell else shlex.join(argv)}")
        full_env = dict(os.environ if env is None else env)
        if self.exclude_newer:
            full_env["UV_EXCLUDE_NEWER"] = self.exclude_newer
        done = run_process(["/bin/bash", "-c", argv] if shell else list(argv), cwd=cwd, env=full_env,
                           timeout=self.timeout)
        ending = "killed at the time limit" if done.timed_out else f"exit {done.exit_code}"
        self.note(f"{done.output}[{ending}, {done.seconds:.2f} s]")
        if done.timed_out:
            raise BuildStepFailed(f"{what}: timed out after {self.timeout:.0f} s (log: {self.path})", done.output)
        if done.exit_code != 0:
            tail = done.output.strip().splitlines()[-6:]
            hint = failure_hint(done.output)
            raise BuildStepFailed(f"{what} failed (exit {done.exit_code}): " + " | ".join(tail)
                                  + (f"; {hint}" if hint else "") + f" (full log: {self.path})", done.output)


def pip_install(log: BuildLog, python: Path, args: list[str], *, what: str, cwd: Path | None = None,
                env: Mapping[str, str] | None = None, binary_first: bool = False) -> None:
    """Install ``args`` into the venv of ``python`` with ``uv pip`` when available, else the venv's pip
    (also for pip-only options such as ``--no-use-pep517``).

    With ``binary_first``, released packages are first installed from wheels only (``--only-binary
    :all:``): a compiled dependency then never builds from source when a wheel of a fitting version exists
    for the interpreter. Only when no such set of wheels resolves is the install repeated allowing source
    builds (the log says so).

    Raises:
        EnvironmentUnavailable: the install failed (see :meth:`BuildLog.run`).
    """
    uv = uv_binary()
    pip = [str(python), "-m", "pip", "install"]
    base = [uv, "pip", "install", "--python", str(python)] if uv and "--no-use-pep517" not in args else pip
    if binary_first:
        try:
            log.run([*base, "--only-binary", ":all:", *args], cwd=cwd, env=env, what=what)
            return
        except EnvironmentUnavailable:
            log.note("no complete set of wheels: installing again, building from source where needed")
    try:
        log.run([*base, *args], cwd=cwd, env=env, what=what)
    except BuildStepFailed as exc:
        if base is pip or not needs_pip(exc.output):
            raise
        log.note("uv cannot build it: pip builds it, as in SWE-bench's images (setup.py with the environment's "
                 "setuptools, setup.py develop for an editable install without a PEP 660 hook)")
        log.run([*pip, *args], cwd=cwd, env=env, what=what)


def needs_pip(output: str) -> bool:
    """Whether a failed uv install is one that pip does differently: an editable install whose build
    backend lacks PEP 660's ``build_editable`` (a setuptools older than 64 pinned in ``pyproject.toml``:
    pip falls back to ``setup.py develop``), or a source build that failed in uv's isolated environment
    with today's setuptools (an old ``setup.py`` importing ``setuptools.Feature``: pip builds a project
    without ``pyproject.toml`` with the environment's own, older setuptools)."""
    return any(s in output for s in ("has no attribute 'build_editable'", "does not support editable",
                                     "Failed to build", "The build backend returned an error"))


def make_venv(log: BuildLog, interpreter: Path, dest: Path, *, seed: bool) -> Path:
    """Create a venv of ``interpreter`` at ``dest`` (with pip, setuptools and wheel when ``seed``); returns
    its python. ``uv venv`` when available, else the interpreter's ``venv`` module (very old interpreters).

    Raises:
        EnvironmentUnavailable: neither could create it.
    """
    uv = uv_binary()
    if uv:
        try:
            log.run([uv, "venv", "--quiet", "--no-project", "--python", str(interpreter), *(["--seed"] if seed else []),
                     str(dest)], what=f"creating a venv with {interpreter}")
            return dest / "bin" / "python"
        except EnvironmentUnavailable:
            shutil.rmtree(dest, ignore_errors=True)
    log.run([str(interpreter), "-m", "venv", *([] if seed else ["--without-pip"]), str(dest)],
            what=f"creating a venv with {interpreter}")
    return dest / "bin" / "python"


def site_packages(python: Path) -> Path:
    """The ``purelib`` folder of ``python``'s environment.

    Raises:
        subprocess.CalledProcessError: the interpreter does not run.
    """
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())
