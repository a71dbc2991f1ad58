"""Per-(repo, version) execution environments for the ``local`` backend (issue 3).

The SWE-bench harness builds one conda environment per (repository, version) inside Docker. Without
Docker we build the same thing as a Python virtual environment, from the same specification:
``swebench.harness.constants.MAP_REPO_VERSION_TO_SPECS`` (python version, ``packages``, ``pip_packages``,
``pre_install``, ``install``, ``eval_commands``, ``test_cmd``), never re-typed here.

Design (two layers, so that one cached environment serves many workspaces):

* **Shared environment** ``cache_dir()/envs/<hash>``: a venv of the right interpreter holding the
  *dependencies* only. ``<hash>`` is :func:`takeover._io.stable_hash` of the resolved specification
  (interpreter version, packages, requirement text read from the checkout, pip pins, environment-level
  pre-install steps). It is built once under a lock file (``<hash>.lock``); the marker ``<hash>/
  takeover-env.json`` is written atomically only after a successful build, so a reader that sees the
  marker can trust the folder and a crashed build is simply redone. To collect the project's own
  dependencies the spec's install step is run once against the first workspace, then the project
  itself is uninstalled again.
* **Workspace environment**: SWE-bench's ``install`` (usually ``pip install -e .``) binds a venv to ONE
  checkout path, so it cannot go into the shared venv. Per workspace we create a tiny venv (``uv venv``,
  about 0.1 s) inside the workspace's ``.git`` folder (``.git/takeover/venv``: never tracked, never in
  ``git status``, removed with the workspace), whose site-packages holds a ``.pth`` line
  ``import site; site.addsitedir(<shared site-packages>)`` (so the shared venv's own ``.pth`` files work
  too), copies of the shared venv's console scripts re-pointed at the workspace interpreter, and the
  project installed by the spec's install step with ``--no-deps``. Dependencies that this checkout
  declares but the shared venv lacks are then installed into the workspace venv only.

Conda-only steps are adapted to a venv: ``conda install x`` becomes a pip install, activation lines are
dropped, and system steps (``apt-get``, ``locale-gen``, writes under ``/etc``) are skipped with a note
in :attr:`PreparedEnvironment.notes`. Requirement files that SWE-bench downloads from GitHub
(``get_requirements``) are read from the workspace checkout instead (``git show <commit>:<path>``).
Interpreters are never downloaded: pyenv versions (``$PYENV_ROOT`` or ``/root/.pyenv``), ``uv``-managed
interpreters (``uv python find``, downloads off) and ``pythonX.Y`` on ``PATH`` are tried in that order.

Extension: a task may carry ``takeover_env_spec`` (an :class:`EnvSpec` as a dict) that replaces the
SWE-bench lookup, and users may give a spec file (JSON or TOML, keys ``owner/name`` or
``owner/name/version``) for repositories that are not in SWE-bench.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from takeover._io import atomic_write_json, stable_hash
from takeover.errors import EnvironmentUnavailable, InputError
from takeover.repos import cache_dir

MARKER = "takeover-env.json"
# Builds that failed in this process, by hash: later tasks of the same environment fail at once.
_FAILED: dict[str, str] = {}
SPEC_FIELD = "takeover_env_spec"
BUILD_TIMEOUT = 3600.0
# SWE-bench's default test command for pytest-based repositories; used when a custom spec gives none.
DEFAULT_TEST_CMD = "pytest -rA"

# Conda packages that have no pip equivalent worth installing in a venv (compilers, system libraries).
_CONDA_ONLY = {"python", "pip", "gxx_linux-64", "gcc_linux-64", "cxx-compiler", "c-compiler", "compilers",
               "libgcc", "libgcc-ng", "libstdcxx-ng", "make", "pkg-config", "nodejs", "git", "openssl"}
# Conda package names that differ on PyPI.
_CONDA_TO_PIP = {"pytables": "tables", "pyqt": "PyQt5", "matplotlib-base": "matplotlib", "py-lief": "lief"}
_SYSTEM_STEP = re.compile(r"(^|[;&|]\s*)(sudo\s+)?(apt-get|apt|yum|dnf|apk|locale-gen|update-locale)\b|/etc/")
_CONDA_STEP = re.compile(r"(^|\s)(source\s+/opt/miniconda3|conda\s+activate|conda\s+deactivate)")
_PIP_INSTALL = re.compile(r"^\s*(?:python3?\s+-m\s+)?pip3?\s+install\s+(?P<args>.*)$")


class EnvSpec(BaseModel):
    """How to build and use a task's environment: SWE-bench's specification, normalized for a venv.

    Fields follow ``MAP_REPO_VERSION_TO_SPECS`` (swebench 4.1.0) where they exist.

    Attributes:
        python: interpreter ``major.minor`` (``"3.9"``); ``None`` = the interpreter running takeover.
        packages: pip requirement strings installed first (SWE-bench's conda ``packages``, mapped to pip).
        requirements_from: repository paths of a requirements file, first existing one used
            (SWE-bench ``packages: requirements.txt`` with ``MAP_REPO_TO_REQS_PATHS``); read from the checkout.
        environment_yml_from: repository paths of a conda ``environment.yml`` (first existing one used).
        pip_packages: pip pins installed after ``packages`` (SWE-bench order: these win).
        pre_install: shell commands run in each workspace before ``install`` (system steps already removed).
        install: shell commands run in each workspace (usually ``python -m pip install -e .``).
        eval_commands: shell lines run before the test command (exports, ...).
        test_cmd: the test command (string or list of commands; the test files are appended to the last).
        log_parser: a swebench log parser name (``pytest``, ``django``, ``sympy``, ``pytest_v2``, ...) or a
            repository (``sympy/sympy``); ``None`` = ``MAP_REPO_TO_PARSER[repo]``, else ``pytest``.
        seed: put pip, setuptools and wheel into the shared venv, as a conda environment has them (off only
            for environments made purely of wheels, e.g. offline tests).
        notes: adaptations made (skipped system steps, conda to pip), for the user.
        source: where the spec came from.
    """

    model_config = ConfigDict(extra="forbid")

    repo: str | None = None
    version: str | None = None
    python: str | None = None
    packages: list[str] = Field(default_factory=list)
    requirements_from: list[str] = Field(default_factory=list)
    environment_yml_from: list[str] = Field(default_factory=list)
    pip_packages: list[str] = Field(default_factory=list)
    pre_install: list[str] = Field(default_factory=list)
    install: list[str] = Field(default_factory=list)
    eval_commands: list[str] = Field(default_factory=list)
    test_cmd: str | list[str] = DEFAULT_TEST_CMD
    log_parser: str | None = None
    seed: bool = True
    notes: list[str] = Field(default_factory=list)
    source: str = SPEC_FIELD

    @property
    def test_cmds(self) -> list[str]:
        return [self.test_cmd] if isinstance(self.test_cmd, str) else list(self.test_cmd)

    @property
    def needs_build(self) -> bool:
        """False when the current interpreter is used as it is (no packages, no install steps)."""
        return bool(
            self.python or self.packages or self.requirements_from or self.environment_yml_from
            or self.pip_packages or self.pre_install or self.install
        )


def _split_conda_packages(text: str, notes: list[str]) -> list[str]:
    """SWE-bench ``packages`` (conda names, maybe quoted with pins) as pip requirement strings."""
    out = []
    for item in shlex.split(text):
        name = re.split(r"[<>=!~ ]", item, maxsplit=1)[0].strip().lower()
        if name in _CONDA_ONLY:
            if name not in ("python", "pip"):
                notes.append(f"skipped conda-only package {item!r} (no pip equivalent)")
            continue
        if name in _CONDA_TO_PIP:
            item = _CONDA_TO_PIP[name] + item[len(name):]
        # conda's single "=" pins a version prefix; pip spells it "==x.*".
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)=([0-9][^=<>!]*)", item)
        if m:
            item = f"{m.group(1)}=={m.group(2)}" + ("" if m.group(2).count(".") >= 2 else ".*")
        out.append(item)
    return out


def _adapt_steps(commands: list[str], notes: list[str]) -> tuple[list[str], list[str]]:
    """Split SWE-bench shell steps into (pip packages for the shared env, shell steps for a workspace)."""
    packages: list[str] = []
    shell: list[str] = []
    for cmd in commands:
        if _SYSTEM_STEP.search(cmd):
            notes.append(f"skipped system step (needs root and a package manager; install by hand if tests need it): {cmd}")
            continue
        if _CONDA_STEP.search(cmd):
            continue
        m = re.match(r"^\s*conda\s+install\s+(?P<args>.*)$", cmd)
        if m:
            words = shlex.split(m.group("args"))
            kept, skip = [], False
            for w in words:
                if skip:
                    skip = False
                elif w in ("-c", "--channel", "-n", "--name"):
                    skip = True
                elif not w.startswith("-"):
                    kept.append(w)
            pkgs = _split_conda_packages(" ".join(shlex.quote(k) for k in kept), notes)
            notes.append(f"conda step adapted to pip: {cmd} -> pip install {' '.join(pkgs)}")
            packages += pkgs
            continue
        shell.append(cmd)
    return packages, shell


def spec_from_swebench(repo: str, version: str | None) -> EnvSpec:
    """The :class:`EnvSpec` of a SWE-bench (repo, version), from swebench's own constants.

    Raises:
        KeyError: swebench has no specification for this pair.
    """
    from swebench.harness.constants import (
        MAP_REPO_TO_ENV_YML_PATHS,
        MAP_REPO_TO_INSTALL,
        MAP_REPO_TO_REQS_PATHS,
        MAP_REPO_VERSION_TO_SPECS,
    )

    specs = MAP_REPO_VERSION_TO_SPECS[repo][version]
    notes: list[str] = []
    packages: list[str] = []
    requirements_from: list[str] = []
    env_yml: list[str] = []
    pkgs = specs.get("packages", "") or ""
    if pkgs == "requirements.txt":
        requirements_from = list(MAP_REPO_TO_REQS_PATHS[repo])
    elif pkgs == "environment.yml":
        env_yml = list(MAP_REPO_TO_ENV_YML_PATHS[repo])
    elif pkgs:
        packages = _split_conda_packages(pkgs, notes)
    pre_packages, pre_shell = _adapt_steps(list(specs.get("pre_install", [])), notes)
    install_steps = [MAP_REPO_TO_INSTALL[repo]] if repo in MAP_REPO_TO_INSTALL else []
    if specs.get("install"):
        install_steps.append(specs["install"])
    _, eval_shell = _adapt_steps(list(specs.get("eval_commands", [])), notes)
    return EnvSpec(
        repo=repo,
        version=version,
        python=str(specs["python"]) if specs.get("python") else None,
        packages=packages + pre_packages,
        requirements_from=requirements_from,
        environment_yml_from=env_yml,
        pip_packages=list(specs.get("pip_packages", [])),
        pre_install=pre_shell,
        install=install_steps,
        eval_commands=eval_shell,
        test_cmd=specs["test_cmd"],
        log_parser=None,
        notes=notes,
        source=f"swebench MAP_REPO_VERSION_TO_SPECS[{repo!r}][{version!r}]",
    )


def load_spec_file(path: Path | str) -> dict[str, EnvSpec]:
    """Read a user spec file: JSON or TOML mapping ``owner/name`` or ``owner/name/version`` to a spec.

    Raises:
        InputError: unreadable file, or an entry that is not a valid :class:`EnvSpec` (names the key).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (OSError, ValueError) as exc:
        raise InputError(path, f"cannot read spec file ({exc})") from None
    if not isinstance(data, dict):
        raise InputError(path, "expected a mapping of 'owner/name[/version]' to environment specs")
    out: dict[str, EnvSpec] = {}
    for key, value in data.items():
        try:
            spec = EnvSpec.model_validate({**value, "source": f"spec file {path} [{key}]"})
        except (ValidationError, TypeError) as exc:
            raise InputError(path, f"invalid environment spec: {exc}", record=f"key {key!r}") from None
        out[key] = spec
    return out


def _task_field(task: Any, name: str, default: Any = None) -> Any:
    if isinstance(task, Mapping):
        return task.get(name, default)
    value = getattr(task, name, None)
    if value is None and getattr(task, "model_extra", None):
        value = task.model_extra.get(name)
    return default if value is None else value


def env_spec_for(task: Any, spec_file: Path | str | Mapping[str, EnvSpec] | None = None) -> EnvSpec:
    """The environment spec of ``task`` (a :class:`takeover.tasks.SourceTask` or a dict).

    Order: the task's ``takeover_env_spec`` field; the spec file's ``repo/version`` then ``repo`` entry;
    swebench's ``MAP_REPO_VERSION_TO_SPECS``.

    Raises:
        InputError: ``takeover_env_spec`` is not a valid spec.
        EnvironmentUnavailable: no spec anywhere; the message says how to give one.
    """
    repo = _task_field(task, "repo")
    version = _task_field(task, "version")
    version = None if version is None else str(version)
    own = _task_field(task, SPEC_FIELD)
    if own is not None:
        try:
            spec = EnvSpec.model_validate(own) if not isinstance(own, EnvSpec) else own
        except ValidationError as exc:
            raise InputError(_task_field(task, "instance_id", "task"), f"invalid environment spec: {exc}",
                             field=SPEC_FIELD) from None
        return spec.model_copy(update={"repo": spec.repo or repo, "version": spec.version or version})
    if spec_file is not None:
        specs = spec_file if isinstance(spec_file, Mapping) else load_spec_file(spec_file)
        for key in (f"{repo}/{version}", repo):
            if key in specs:
                spec = specs[key]
                return spec.model_copy(update={"repo": spec.repo or repo, "version": spec.version or version})
    try:
        return spec_from_swebench(repo, version)
    except KeyError:
        raise EnvironmentUnavailable(
            f"no environment specification for {repo} version {version}: swebench has none; give one in the task "
            f"field {SPEC_FIELD!r} or in a spec file (--env-spec FILE, key '{repo}/{version}' or '{repo}')"
        ) from None


# ---------------------------------------------------------------------------------------------------
# Interpreters and tools


@functools.lru_cache(maxsize=64)
def _probe(python: str | Path) -> str | None:
    """``major.minor.micro`` of an interpreter, or None when it does not run."""
    try:
        out = subprocess.run([str(python), "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                             capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def uv_binary() -> str | None:
    """Path of ``uv`` (PATH, beside the running interpreter, or the ``uv`` Python package), or None."""
    found = shutil.which("uv")
    if found:
        return found
    beside = Path(sys.executable).parent / "uv"
    if beside.exists():
        return str(beside)
    try:
        from uv import find_uv_bin  # type: ignore[import-not-found]

        return find_uv_bin()
    except (ImportError, OSError):
        return None


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in re.split(r"[.\-]", name))


@functools.lru_cache(maxsize=32)
def find_interpreter(version: str) -> Path:
    """An interpreter of ``major.minor`` = ``version`` on this machine; never downloads one.

    Looks, in order, in pyenv (``$PYENV_ROOT/versions`` and ``/root/.pyenv/versions``, highest patch
    first), ``uv python find`` with downloads off, and ``pythonX.Y`` on ``PATH`` (each one is run to
    check its version; pyenv shims that do not resolve are skipped).

    Raises:
        EnvironmentUnavailable: none found; the message says how to install one.
    """
    candidates: list[Path] = []
    roots = [os.environ.get("PYENV_ROOT"), str(Path.home() / ".pyenv"), "/root/.pyenv"]
    for root in dict.fromkeys(r for r in roots if r):
        versions = Path(root) / "versions"
        if versions.is_dir():
            for d in sorted(versions.glob(f"{version}.*"), key=lambda p: _version_key(p.name), reverse=True):
                if re.fullmatch(rf"{re.escape(version)}\.\d+", d.name):
                    candidates.append(d / "bin" / f"python{version}")
    uv = uv_binary()
    if uv:
        try:
            out = subprocess.run([uv, "python", "find", "--no-python-downloads", "--no-project", version],
                                 capture_output=True, text=True, timeout=60,
                                 env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"}, check=False)
            if out.returncode == 0 and out.stdout.strip():
                candidates.append(Path(out.stdout.strip()))
        except (OSError, subprocess.TimeoutExpired):
            pass
    on_path = shutil.which(f"python{version}")
    if on_path:
        candidates.append(Path(on_path))
    for cand in candidates:
        if cand.exists():
            got = _probe(cand)
            if got and got.rsplit(".", 1)[0] == version:
                return cand
    raise EnvironmentUnavailable(
        f"no Python {version} interpreter on this machine (looked in pyenv versions, uv-managed interpreters "
        f"and python{version} on PATH); install one: pyenv install {version} (or: uv python install {version})"
    )


# ---------------------------------------------------------------------------------------------------
# Reading requirement files from the checkout


def _read_repo_file(workspace: Path, commit: str | None, rel: str) -> str | None:
    """File ``rel`` at ``commit`` (from the workspace's git objects), else from the working tree."""
    if commit:
        out = subprocess.run(["git", "show", f"{commit}:{rel}"], cwd=workspace, capture_output=True, text=True, check=False)
        if out.returncode == 0:
            return out.stdout
    path = workspace / rel
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None


def read_requirements(workspace: Path, commit: str | None, candidates: list[str]) -> tuple[str, str]:
    """Requirements text as swebench's ``get_requirements`` builds it, but read from the checkout.

    Returns ``(path used, text)``. Lines ``-e .``, comments and ``.[test...]`` are dropped, ``-r`` files
    are inlined from the same folder, and swebench's ``clean_requirements`` is applied.

    Raises:
        EnvironmentUnavailable: none of the candidate files exists at that commit.
    """
    from swebench.harness.test_spec.python import clean_requirements

    for rel in candidates:
        text = _read_repo_file(workspace, commit, rel)
        if text is not None:
            break
    else:
        raise EnvironmentUnavailable(f"no requirements file at {candidates} in the checkout (commit {commit})")
    req_dir = "/".join(rel.split("/")[:-1])

    def keep(line: str) -> bool:
        return not any(line.strip().startswith(x) for x in ("-e .", "#", ".[test"))

    original, extra = [], []
    for line in text.split("\n"):
        if line.strip().startswith("-r"):
            name = line.strip()[2:].strip()
            inner = _read_repo_file(workspace, commit, f"{req_dir}/{name}" if req_dir else name)
            if inner is not None:
                extra += [x for x in inner.split("\n") if keep(x)]
        elif keep(line):
            original.append(line)
    extra.append("\n".join(original))
    return rel, clean_requirements("\n".join(extra))


def read_environment_yml(workspace: Path, commit: str | None, candidates: list[str], instance_id: str | None,
                         notes: list[str]) -> tuple[str, list[str]]:
    """pip requirement strings from a conda ``environment.yml`` (swebench's cached copy first).

    Conda dependencies are mapped to pip names; the ``pip:`` section is taken as it is.
    """
    import yaml
    from swebench.harness.test_spec.python import clean_environment_yml
    from swebench.harness.utils import load_cached_environment_yml

    text, used = (load_cached_environment_yml(instance_id) if instance_id else None), "swebench cached environment.yml"
    if not text:
        for rel in candidates:
            text = _read_repo_file(workspace, commit, rel)
            if text is not None:
                used = rel
                break
    if not text:
        raise EnvironmentUnavailable(f"no environment.yml at {candidates} in the checkout (commit {commit})")
    data = yaml.safe_load(clean_environment_yml(text)) or {}
    out: list[str] = []
    for dep in data.get("dependencies", []) or []:
        if isinstance(dep, dict):
            out += [str(x) for x in dep.get("pip", []) or []]
        else:
            out += _split_conda_packages(shlex.quote(str(dep).replace(" ", "")), notes)
    return used, out


# ---------------------------------------------------------------------------------------------------
# Building


class PreparedEnvironment(BaseModel):
    """An environment ready to run a task's commands in one workspace.

    Attributes:
        python: interpreter to run (the workspace venv's, the shared venv's, or the current one).
        venv: the workspace venv (``<workspace>/.git/takeover/venv``), or None.
        shared_venv: the cached dependency venv ``cache_dir()/envs/<hash>``, or None.
        env_hash: cache key of the shared venv (None when the current interpreter is used).
        build_seconds: wall seconds spent building the shared venv in this call (0 when cached).
        setup_seconds: wall seconds spent on the workspace venv and install step.
        cached: the shared venv existed already (or none was needed).
        notes: adaptations and skipped steps, for the user.
    """

    spec: EnvSpec
    workspace: Path
    python: Path
    venv: Path | None = None
    shared_venv: Path | None = None
    env_hash: str | None = None
    interpreter_version: str | None = None
    build_seconds: float = 0.0
    setup_seconds: float = 0.0
    cached: bool = True
    notes: list[str] = Field(default_factory=list)

    @property
    def seconds(self) -> float:
        return self.build_seconds + self.setup_seconds

    @property
    def bin_dirs(self) -> list[Path]:
        dirs = []
        if self.venv:
            dirs.append(self.venv / "bin")
        if self.shared_venv:
            dirs.append(self.shared_venv / "bin")
        if not dirs:
            dirs.append(self.python.parent)
        return dirs

    @property
    def readable(self) -> list[Path]:
        """Folders a sandboxed command must be able to read (pass to ``sandbox.wrap(readable=...)``:
        inside bubblewrap ``/tmp`` is private, so a cache under ``/tmp`` would otherwise vanish)."""
        return [p for p in (self.shared_venv, self.venv) if p is not None]

    def env_vars(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """Environment for subprocesses: ``base`` (default ``os.environ``) with the venv activated.

        ``PATH`` starts with the workspace venv's ``bin`` (then the shared venv's), ``VIRTUAL_ENV`` is
        set, and ``PYTHONHOME``/``PYTHONPATH``/conda variables that would leak another environment are
        removed.
        """
        env = dict(os.environ if base is None else base)
        for key in ("PYTHONHOME", "PYTHONPATH", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "__PYVENV_LAUNCHER__"):
            env.pop(key, None)
        env["PATH"] = os.pathsep.join([*(str(d) for d in self.bin_dirs), env.get("PATH", os.defpath)])
        venv = self.venv or self.shared_venv
        if venv is None and sys.prefix != sys.base_prefix and self.python == Path(sys.executable):
            venv = Path(sys.prefix)
        if venv is not None:
            env["VIRTUAL_ENV"] = str(venv)
        else:
            env.pop("VIRTUAL_ENV", None)
        env["PYTHONNOUSERSITE"] = "1"
        return env


class _Runner:
    """Runs build commands, appending their output to a log file; raises with the tail on failure."""

    def __init__(self, log: Path):
        self.log = log
        log.parent.mkdir(parents=True, exist_ok=True)

    def __call__(self, argv: list[str] | str, *, cwd: Path | None = None, env: Mapping[str, str] | None = None,
                 what: str, timeout: float = BUILD_TIMEOUT) -> str:
        shell = isinstance(argv, str)
        with open(self.log, "a", encoding="utf-8") as fh:
            fh.write(f"\n$ {argv if shell else shlex.join(argv)}\n")
            fh.flush()
            began = time.monotonic()
            try:
                proc = subprocess.run(argv if shell else list(argv), shell=shell, executable="/bin/bash" if shell else None,
                                      cwd=cwd, env=dict(env) if env else None, capture_output=True, text=True,
                                      timeout=timeout, check=False)
            except subprocess.TimeoutExpired:
                raise EnvironmentUnavailable(f"{what}: timed out after {timeout:.0f} s (log: {self.log})") from None
            fh.write(proc.stdout + proc.stderr)
            fh.write(f"[exit {proc.returncode}, {time.monotonic() - began:.2f} s]\n")
        if proc.returncode != 0:
            text = (proc.stderr or proc.stdout).strip()
            tail = text.splitlines()[-6:]
            hint = failure_hint(proc.stdout + proc.stderr)
            raise EnvironmentUnavailable(f"{what} failed (exit {proc.returncode}): " + " | ".join(tail)
                                         + (f"; {hint}" if hint else "") + f" (full log: {self.log})")
        return proc.stdout


_HINTS = [
    (re.compile(r"fatal error: ([\w/.+-]+\.h): No such file"),
     ("the C header {0} is missing: install the system development package that provides it "
     "(e.g. apt-get install lib<name>-dev)")),
    (re.compile(r"(?:command '|unable to execute '|error: command ')(gcc|g\+\+|cc|x86_64-linux-gnu-gcc)"),
     "a C compiler is needed: apt-get install build-essential"),
    (re.compile(r"No matching distribution found for ([^\s]+)|Because ([^\s]+) was not found in the package registry"),
     "{0} is not available from the package index for this Python version (pin another version in the spec)"),
    (re.compile(r"(?:Could not|Failed to) (?:fetch|connect|resolve).*(?:pypi|files\.pythonhosted)", re.IGNORECASE),
     "the package index is unreachable: check the network or a local index (UV_INDEX_URL / PIP_INDEX_URL)"),
]


def failure_hint(output: str) -> str:
    """A sentence saying what is missing, from a failed build's output (headers, compiler, packages)."""
    for pattern, sentence in _HINTS:
        m = pattern.search(output)
        if m:
            return sentence.format(next((g for g in m.groups() if g), ""))
    return ""


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def _pip_install(run: _Runner, python: Path, args: list[str], *, what: str, cwd: Path | None = None,
                 env: Mapping[str, str] | None = None) -> None:
    """Install with ``uv pip`` when available (fast), else the venv's pip (also for pip-only options)."""
    uv = uv_binary()
    if uv and "--no-use-pep517" not in args:
        run([uv, "pip", "install", "--python", str(python), *args], cwd=cwd, env=env, what=what)
    else:
        run([str(python), "-m", "pip", "install", *args], cwd=cwd, env=env, what=what)


def _make_venv(run: _Runner, interpreter: Path, dest: Path, *, seed: bool) -> Path:
    uv = uv_binary()
    if uv:
        try:
            run([uv, "venv", "--quiet", "--no-project", "--python", str(interpreter), *(["--seed"] if seed else []),
                 str(dest)], what=f"creating a venv with {interpreter}")
            return dest / "bin" / "python"
        except EnvironmentUnavailable:
            shutil.rmtree(dest, ignore_errors=True)  # very old interpreters: fall back to the venv module
    run([str(interpreter), "-m", "venv", *([] if seed else ["--without-pip"]), str(dest)],
        what=f"creating a venv with {interpreter}")
    return dest / "bin" / "python"


# SWE-bench install steps are "python -m pip install ..."; in a workspace venv the project goes in
# without dependencies (they live in the shared venv).
def _install_step_for_workspace(cmd: str, python: Path) -> tuple[str, list[str]]:
    """Rewrite a pip install step for the workspace venv; returns (shell command, requested extras)."""
    m = _PIP_INSTALL.match(cmd)
    if not m:
        return cmd, []
    args = shlex.split(m.group("args"))
    extras = []
    for a in args:
        em = re.match(r"^\.?\[([^\]]+)\]$|^\.\[([^\]]+)\]$", a)
        if em:
            extras += [e.strip() for e in (em.group(1) or em.group(2)).split(",")]
    uv = uv_binary()
    if "--no-deps" not in args:
        args.insert(0, "--no-deps")
    if uv and "--no-use-pep517" not in args:
        args = [a for a in args if a not in ("--verbose",)]
        return shlex.join([uv, "pip", "install", "--python", str(python), *args]), extras
    return shlex.join([str(python), "-m", "pip", "install", *args]), extras


_MISSING_DEPS = r"""
import json, sys, importlib.metadata as md
try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement
site, extras = sys.argv[1], json.loads(sys.argv[2])
missing = []
for dist in md.distributions(path=[site]):
    if "dir_info" not in json.loads(dist.read_text("direct_url.json") or "{}"):
        continue
    for text in dist.requires or []:
        req = Requirement(text)
        if req.marker and not any(req.marker.evaluate({"extra": e}) for e in [""] + extras):
            continue
        try:
            have = md.version(req.name)
        except md.PackageNotFoundError:
            have = None
        if have is None or (req.specifier and not req.specifier.contains(have, prereleases=True)):
            missing.append(str(req.name) + str(req.specifier))
print(json.dumps(sorted(set(missing))))
"""


def _project_dists(python: Path, site: Path, workspace: Path) -> list[str]:
    """Names of distributions in ``site`` installed from the folder ``workspace`` (``direct_url.json``
    with ``dir_info``: an install of the checkout, not of a wheel or archive)."""
    code = ("import importlib.metadata as md, json, sys\n"
            "for d in md.distributions(path=[sys.argv[1]]):\n"
            "    raw = d.read_text('direct_url.json')\n"
            "    info = json.loads(raw) if raw else {}\n"
            "    if 'dir_info' in info and info.get('url', '').rstrip('/') == sys.argv[2].rstrip('/'):\n"
            "        print(d.metadata['Name'])\n")
    out = subprocess.run([str(python), "-c", code, str(site), workspace.resolve().as_uri()], capture_output=True,
                         text=True, check=False)
    return [x for x in out.stdout.split() if x]


def _build_shared(spec: EnvSpec, interpreter: Path, dest: Path, resolved: dict[str, Any], workspace: Path,
                  log: _Runner, notes: list[str]) -> None:
    python = _make_venv(log, interpreter, dest, seed=spec.seed)
    if resolved["packages"]:
        _pip_install(log, python, resolved["packages"], what=f"installing packages for {spec.repo} {spec.version}")
    if resolved["requirements_text"]:
        reqs = dest / "takeover-requirements.txt"
        reqs.write_text(resolved["requirements_text"])
        _pip_install(log, python, ["-r", str(reqs)], what=f"installing {resolved['requirements_file']}")
    if spec.pip_packages:
        _pip_install(log, python, list(spec.pip_packages), what="installing pip_packages")
    # The project's own dependencies: run the install step once into the shared venv, then remove the
    # project itself (a checkout-bound editable install must not live in a shared venv).
    site = _site_packages(python)
    env = {**os.environ, "PATH": f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}", "VIRTUAL_ENV": str(dest)}
    env.pop("PYTHONPATH", None)
    for cmd in spec.install:
        m = _PIP_INSTALL.match(cmd)
        if not m:
            continue  # setup.py install and the like: the workspace venv gets it; deps come with it there
        _pip_install(log, python, shlex.split(m.group("args")), cwd=workspace, env=env,
                     what=f"installing the dependencies of {spec.repo} ({cmd})")
    uv = uv_binary()
    for name in _project_dists(python, site, workspace):
        argv = [uv, "pip", "uninstall", "--python", str(python), name] if uv else [str(python), "-m", "pip", "uninstall", "-y", name]
        log(argv, what=f"removing {name} from the shared venv")


def _resolve(spec: EnvSpec, task: Any, workspace: Path, notes: list[str]) -> dict[str, Any]:
    commit = _task_field(task, "environment_setup_commit") or _task_field(task, "base_commit")
    resolved: dict[str, Any] = {"packages": list(spec.packages), "requirements_file": None, "requirements_text": ""}
    if spec.requirements_from:
        rel, text = read_requirements(workspace, commit, spec.requirements_from)
        resolved["requirements_file"], resolved["requirements_text"] = rel, text
    if spec.environment_yml_from:
        used, pkgs = read_environment_yml(workspace, commit, spec.environment_yml_from,
                                          _task_field(task, "instance_id"), notes)
        notes.append(f"conda environment.yml ({used}) installed with pip")
        resolved["packages"] += pkgs
    return resolved


def _link_scripts(shared_bin: Path, ws_bin: Path) -> None:
    """Copy the shared venv's console scripts into the workspace venv, re-pointed at its interpreter."""
    old, new = str(shared_bin), str(ws_bin)
    for src in shared_bin.iterdir():
        dst = ws_bin / src.name
        if dst.exists() or src.name.startswith(("python", "activate", "deactivate")) or not src.is_file():
            continue
        try:
            data = src.read_bytes()
        except OSError:
            continue
        if len(data) > 200_000 or not data.startswith(b"#!") or old.encode() not in data:
            continue
        dst.write_bytes(data.replace(old.encode(), new.encode()))
        dst.chmod(0o755)


def _workspace_venv_dir(workspace: Path, env_hash: str) -> Path:
    git_dir = workspace / ".git"
    if git_dir.is_dir():
        return git_dir / "takeover" / "venv"
    return cache_dir() / "workspace-envs" / stable_hash([str(workspace.resolve()), env_hash])


def prepare_environment(task: Any, workspace: Path | str, *, spec_file: Path | str | Mapping[str, EnvSpec] | None = None,
                        spec: EnvSpec | None = None) -> PreparedEnvironment:
    """Build (or reuse) the environment of ``task`` and install ``workspace``'s project into it.

    Args:
        task: a :class:`takeover.tasks.SourceTask` or an instance dict (``repo``, ``version``,
            ``base_commit``, optional ``environment_setup_commit``, optional ``takeover_env_spec``).
        workspace: the checkout the commands will run in (its requirement files are read from it).
        spec_file: a user spec file or its loaded mapping (see :func:`env_spec_for`).
        spec: use this spec instead of looking one up.

    Returns:
        A :class:`PreparedEnvironment`; pass ``.env_vars()`` to subprocesses.
    Raises:
        EnvironmentUnavailable: no interpreter of the needed version, a failed pip install, a missing
            requirements file; the message names what is missing and how to supply it.
    """
    workspace = Path(workspace).resolve()
    spec = spec or env_spec_for(task, spec_file)
    notes = list(spec.notes)
    if not spec.needs_build:
        return PreparedEnvironment(spec=spec, workspace=workspace, python=Path(sys.executable),
                                   interpreter_version=".".join(map(str, sys.version_info[:3])), notes=notes)
    interpreter = find_interpreter(spec.python) if spec.python else Path(sys.executable)
    interp_version = _probe(interpreter)
    resolved = _resolve(spec, task, workspace, notes)
    key_material = {
        "interpreter": interp_version, "interpreter_path": str(interpreter), "packages": resolved["packages"],
        "requirements": resolved["requirements_text"], "pip_packages": spec.pip_packages,
        "install": spec.install, "seed": spec.seed, "layout": 1,
    }
    needs_shared = bool(resolved["packages"] or resolved["requirements_text"] or spec.pip_packages or spec.python
                        or any(_PIP_INSTALL.match(c) for c in spec.install))
    env_hash = stable_hash(key_material)
    shared: Path | None = None
    build_seconds, cached = 0.0, True
    if needs_shared:
        envs = cache_dir() / "envs"
        shared = envs / env_hash
        marker = shared / MARKER
        if env_hash in _FAILED:
            raise EnvironmentUnavailable(f"{_FAILED[env_hash]} (failed earlier in this process; not retried)")
        if not marker.exists():
            with _locked(envs / f"{env_hash}.lock"):
                if not marker.exists():  # another process may have finished it while we waited
                    cached = False
                    start = time.monotonic()
                    shutil.rmtree(shared, ignore_errors=True)  # leftovers of a crashed build
                    build_log = envs / f"{env_hash}.build.log"
                    build_log.unlink(missing_ok=True)
                    runner = _Runner(build_log)
                    try:
                        _build_shared(spec, interpreter, shared, resolved, workspace, runner, notes)
                    except BaseException as exc:
                        if isinstance(exc, EnvironmentUnavailable):
                            skipped = [n.split(": ", 1)[-1] for n in notes if n.startswith("skipped system step")]
                            if skipped:  # the likely cause: say which system steps were not run here
                                exc = EnvironmentUnavailable(f"{exc}; system steps of the spec that were skipped "
                                                             f"here and may be needed: {'; '.join(skipped)}")
                            _FAILED[env_hash] = str(exc)
                            failed = envs / f"{env_hash}.failed.log"
                            with contextlib.suppress(OSError):
                                shutil.copyfile(build_log, failed)
                            shutil.rmtree(shared, ignore_errors=True)
                            raise exc from None
                        failed = envs / f"{env_hash}.failed.log"
                        with contextlib.suppress(OSError):
                            shutil.copyfile(build_log, failed)
                        shutil.rmtree(shared, ignore_errors=True)
                        raise
                    build_seconds = time.monotonic() - start
                    atomic_write_json(marker, {
                        "spec": spec.model_dump(mode="json"), "key": key_material, "hash": env_hash,
                        "site_packages": str(_site_packages(shared / "bin" / "python")),
                        "build_seconds": round(build_seconds, 3), "notes": notes,
                    })
    start = time.monotonic()
    if shared is None and not spec.install and not spec.pre_install:
        return PreparedEnvironment(spec=spec, workspace=workspace, python=Path(sys.executable), env_hash=env_hash,
                                   interpreter_version=interp_version, notes=notes)
    venv = _workspace_venv_dir(workspace, env_hash)
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    runner = _Runner(venv.parent / "setup.log")
    base_interp = interpreter
    ws_python = _make_venv(runner, base_interp, venv, seed=False)
    ws_site = _site_packages(ws_python)
    if shared is not None:
        shared_site = Path(json.loads((shared / MARKER).read_text())["site_packages"])
        sites = [shared_site]
    else:
        import site as _site

        sites = [Path(p) for p in _site.getsitepackages()]  # python null: reuse the current packages
    (ws_site / "_takeover_shared_env.pth").write_text(
        "".join(f"import site; site.addsitedir({str(s)!r})\n" for s in sites))
    if shared is not None:
        _link_scripts(shared / "bin", venv / "bin")
    prepared = PreparedEnvironment(spec=spec, workspace=workspace, python=ws_python, venv=venv, shared_venv=shared,
                                   env_hash=env_hash, interpreter_version=interp_version, build_seconds=build_seconds,
                                   cached=cached, notes=notes)
    env = prepared.env_vars()
    for cmd in spec.pre_install:
        runner(cmd, cwd=workspace, env=env, what=f"pre-install step {cmd!r}")
    for cmd in spec.install:
        shell, extras = _install_step_for_workspace(cmd, ws_python)
        try:
            # uv's cache nearly always holds the build backend already: skip the index round trips.
            runner(shell, cwd=workspace, env={**env, "UV_OFFLINE": "1"}, what=f"install step {cmd!r}")
        except EnvironmentUnavailable:
            runner(shell, cwd=workspace, env=env, what=f"install step {cmd!r}")
        if _PIP_INSTALL.match(cmd):
            out = subprocess.run([str(ws_python), "-c", _MISSING_DEPS, str(ws_site), json.dumps(extras)],
                                 capture_output=True, text=True, env=env, check=False)
            missing = json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else []
            if missing:
                notes.append(f"installed dependencies missing from the shared venv into the workspace venv: {missing}")
                _pip_install(runner, ws_python, missing, what="installing missing dependencies", env=env)
    prepared.setup_seconds = time.monotonic() - start
    return prepared
