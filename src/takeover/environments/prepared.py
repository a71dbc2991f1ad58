"""A task's environment made ready in one workspace: the shared dependency venv plus the workspace venv.

:func:`prepare_environment` is the entry point. In order: the spec (:mod:`.spec`); what this host cannot
build, said before any work (:mod:`.host_limits`); the interpreter (:mod:`.interpreters`); the commit the
requirement files are read at (:mod:`.setup_commit`); the ``pre_install`` steps in the checkout, once;
the dependencies resolved against the checkout and the shared venv built or reused (:mod:`.shared_venv`);
the workspace venv with the project installed (:mod:`.workspace_venv`), or copied from an earlier
workspace's install of the same checkout state (:mod:`.project_reuse`). Its result,
:class:`PreparedEnvironment`, gives the variables every command of the task runs with.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, Field

from takeover._util.sandbox import base_prefixes, hidden_by_sandbox
from takeover.environments.build_steps import BUILD_TIMEOUT, BuildLog
from takeover.environments.host_limits import check_buildable
from takeover.environments.interpreters import find_interpreter, interpreter_version
from takeover.environments.project_reuse import (
    checkout_fingerprint,
    project_key,
    reuse_template,
    save_template,
    template_dir,
    untracked_files,
)
from takeover.environments.requirements import resolve_dependencies
from takeover.environments.setup_commit import packages_date, setup_commit_for
from takeover.environments.shared_venv import ensure_shared_venv
from takeover.environments.spec import EnvSpec, env_spec_for
from takeover.environments.workspace_venv import (
    install_project,
    make_workspace_venv,
    run_pre_install,
    workspace_state_dir,
    workspace_venv_dir,
)
from takeover.sources.repos import cache_dir
from takeover.sources.tasks import SourceTask


class PreparedEnvironment(BaseModel):
    """An environment ready to run a task's commands in one workspace.

    Attributes:
        python: interpreter to run (the workspace venv's, the shared venv's, or the current one).
        venv: the workspace venv (``<workspace>/.git/takeover/venv``), or None.
        shared_venv: the cached dependency venv ``cache_dir()/envs/<hash>``, or None.
        env_hash: cache key of the shared venv (None when the current interpreter is used).
        interpreter_version: ``major.minor.micro`` of the interpreter the venvs are made of.
        build_seconds: wall seconds spent building the shared venv in this call (0 when cached).
        setup_seconds: wall seconds spent on the workspace venv and install step.
        cached: the shared venv existed already (or none was needed).
        project_reused: the project's install was copied from an earlier workspace's
            (:mod:`takeover.environments.project_reuse`) instead of run.
        setup_commit: the commit the requirement files were read at (see
            :mod:`takeover.environments.setup_commit`), and ``setup_commit_source`` how it was chosen.
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
    project_reused: bool = False
    setup_commit: str | None = None
    setup_commit_source: str | None = None
    notes: list[str] = Field(default_factory=list)

    @property
    def seconds(self) -> float:
        """Wall seconds of the build and the workspace setup."""
        return self.build_seconds + self.setup_seconds

    @property
    def bin_dirs(self) -> list[Path]:
        """Folders put first on ``PATH``: the workspace venv's, then the shared venv's ``bin``."""
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
        """Folders a sandboxed command must be able to read (pass to ``sandbox.wrap(readable=...)``): the
        sandbox shows only system folders (docs/protocol.md section 8.6), so the environment is named: the
        venvs, the interpreters they were made from, the interpreter's folder and, when the commands run with
        the interpreter takeover runs on, its prefixes and import path (a venv built in a clone under
        ``/tmp``, an editable install of its checkout)."""
        folders = [p for p in (self.shared_venv, self.venv) if p is not None]
        prefix = self.python.parent.parent if self.python.parent.name == "bin" else self.python.parent
        candidates = [prefix, *base_prefixes([*folders, prefix])]
        if self.python == Path(sys.executable):
            candidates += [Path(sys.prefix), Path(sys.base_prefix), *(Path(p) for p in sys.path if p)]
        folders += [p for p in hidden_by_sandbox(candidates) if p not in folders]
        return folders

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


def prepare_environment(task: SourceTask, workspace: Path | str, *,
                        spec_file: Path | str | Mapping[str, EnvSpec] | None = None, spec: EnvSpec | None = None,
                        timeout: float = BUILD_TIMEOUT) -> PreparedEnvironment:
    """Build (or reuse) the environment of ``task`` and install ``workspace``'s project into it.

    Args:
        task: the task (``repo``, ``version``, ``base_commit``, ``environment_setup_commit``, and an
            optional ``takeover_env_spec`` field).
        workspace: the checkout the commands will run in (its requirement files are read from it).
        spec_file: a user spec file or its loaded mapping (see :func:`env_spec_for`).
        spec: use this spec instead of looking one up.
        timeout: seconds each build command may take; at the limit it is killed with everything it
            started, and the build fails.

    Returns:
        A :class:`PreparedEnvironment`; pass ``.env_vars()`` to subprocesses.
    Raises:
        InputError: the task's own spec or the spec file is invalid.
        EnvironmentUnavailable: no spec; a host that cannot build it (raised before any work, with the
            reasons and ``--backend docker``); a failed or timed-out install; a missing requirements file.
            The message names what is missing and how to supply it.
    """
    workspace = Path(workspace).resolve()
    spec = spec or env_spec_for(task, spec_file)
    notes = list(spec.notes)
    current = Path(sys.executable)
    if not spec.needs_build:
        return PreparedEnvironment(spec=spec, workspace=workspace, python=current,
                                   interpreter_version=".".join(map(str, sys.version_info[:3])), notes=notes)
    check_buildable(spec)  # before any work: say why this host cannot, and what to use instead
    interpreter = find_interpreter(spec.python) if spec.python else current
    version = interpreter_version(interpreter)
    setup = setup_commit_for(task, workspace)
    notes.append(setup.note)
    start = time.monotonic()
    # Before anything runs in the checkout: what the project's install generates there is told apart
    # from the files the patch added (a shared venv build installs the checkout once too).
    untracked = untracked_files(workspace)
    venv = workspace_venv_dir(workspace)
    date = packages_date(spec.exclude_newer, workspace, setup.commit)
    log = BuildLog(workspace_state_dir(workspace) / "setup.log", timeout, date)
    base_env = {**os.environ, "PATH": f"{interpreter.parent}{os.pathsep}{os.environ.get('PATH', os.defpath)}"}
    run_pre_install(log, spec, workspace, base_env)  # before the dependencies are collected, as SWE-bench does
    fingerprint = checkout_fingerprint(spec, workspace)
    pre_seconds = time.monotonic() - start
    deps = resolve_dependencies(spec, task, workspace, notes, commit=setup.commit)
    shared = ensure_shared_venv(spec, interpreter, version, deps, workspace, notes, timeout=timeout,
                                exclude_newer=date)
    notes += shared.build_notes
    common = {"spec": spec, "workspace": workspace, "env_hash": shared.env_hash, "interpreter_version": version,
              "setup_commit": setup.commit, "setup_commit_source": setup.source, "notes": notes}
    if shared.path is None and not spec.install:
        return PreparedEnvironment(python=current, **common)
    start = time.monotonic()
    prepared = PreparedEnvironment(python=venv / "bin" / "python", venv=venv, shared_venv=shared.path,
                                   build_seconds=shared.build_seconds, cached=shared.cached, **common)
    template = None
    if fingerprint is not None:
        template = template_dir(cache_dir() / "envs", shared.env_hash, project_key(fingerprint, shared.env_hash))
    try:
        prepared.project_reused = template is not None and reuse_template(template, venv, workspace)
    except OSError as exc:
        log.note(f"the project's install could not be copied ({exc}); installing it")
    if prepared.project_reused:
        log.note(f"project install copied from {template}")
    else:
        prepared.python = make_workspace_venv(log, interpreter, venv, shared)
        install_project(log, spec, prepared.python, workspace, prepared.env_vars())
        after = untracked_files(workspace)
        if template is not None and untracked is not None and after is not None:
            log.note(save_template(template, prepared.python, venv, workspace, after - untracked))
    prepared.setup_seconds = pre_seconds + time.monotonic() - start
    return prepared
