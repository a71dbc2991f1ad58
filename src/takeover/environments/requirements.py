"""A task's requirement files, read from its checkout instead of downloaded.

SWE-bench's harness downloads a repository's ``requirements.txt`` or ``environment.yml`` from GitHub
(``get_requirements``, ``get_environment_yml``). takeover reads the same files from the workspace's git
objects at the task's commit (``git show <commit>:<path>``), so a build works offline, and cleans them
with swebench's own functions. :func:`resolve_dependencies` gathers what a spec installs besides its pip
pins, resolved against one checkout.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import yaml
from pydantic import BaseModel, Field

from takeover.environments.conda import conda_packages_as_pip
from takeover.environments.spec import EnvSpec
from takeover.environments.swebench_specs import clean_environment_yml, clean_requirements
from takeover.errors import EnvironmentUnavailable
from takeover.sources.frozen_history import host_git_env
from takeover.sources.tasks import SourceTask


def read_repo_file(workspace: Path, commit: str | None, rel: str) -> str | None:
    """File ``rel`` at ``commit`` (from the workspace's git objects), else from the working tree; None
    when neither has it."""
    if commit:
        out = subprocess.run(["git", "show", f"{commit}:{rel}"], cwd=workspace, capture_output=True, text=True,
                             check=False, env=host_git_env(workspace))  # a setup commit newer than the frozen history
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
    for rel in candidates:
        text = read_repo_file(workspace, commit, rel)
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
            inner = read_repo_file(workspace, commit, f"{req_dir}/{name}" if req_dir else name)
            if inner is not None:
                extra += [x for x in inner.split("\n") if keep(x)]
        elif keep(line):
            original.append(line)
    extra.append("\n".join(original))
    return rel, clean_requirements("\n".join(extra))


def read_environment_yml(workspace: Path, commit: str | None, candidates: list[str], instance_id: str | None,
                         notes: list[str]) -> tuple[str, list[str]]:
    """pip requirement strings from a conda ``environment.yml``.

    Returns ``(where it came from, requirements)``. Conda dependencies are mapped to pip names (with
    notes appended to ``notes``); the ``pip:`` section is taken as it is.

    Raises:
        EnvironmentUnavailable: none of the candidate files exists.
    """
    # swebench 4.1 looks for a copy it ships first (load_cached_environment_yml); its wheel ships none.
    text, used = None, ""
    for rel in candidates:
        text = read_repo_file(workspace, commit, rel)
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
            out += conda_packages_as_pip(shlex.quote(str(dep).replace(" ", "")), notes)
    return used, out


class Dependencies(BaseModel):
    """What goes into the shared venv besides ``pip_packages``, resolved against one checkout.

    Attributes:
        packages: pip requirement strings (the spec's conda packages as pip).
        environment_packages: pip requirement strings of an ``environment.yml`` (conda dependencies and
            its ``pip:`` section); installed together where they can be, one by one where not.
        requirements_file: the requirements file used (repository path), or None.
        requirements_text: its cleaned text (empty when there is none).
    """

    packages: list[str] = Field(default_factory=list)
    environment_packages: list[str] = Field(default_factory=list)
    requirements_file: str | None = None
    requirements_text: str = ""


def resolve_dependencies(spec: EnvSpec, task: SourceTask, workspace: Path, notes: list[str],
                         commit: str | None = None) -> Dependencies:
    """The spec's dependencies with its requirement files read from ``workspace`` at ``commit`` (the one
    :func:`takeover.environments.setup_commit.setup_commit_for` chose; default the task's
    ``environment_setup_commit``, else ``base_commit``); adaptations are appended to ``notes``.

    Raises:
        EnvironmentUnavailable: a requirements file or ``environment.yml`` is missing.
    """
    commit = commit or task.environment_setup_commit or task.base_commit
    deps = Dependencies(packages=list(spec.packages))
    if spec.requirements_from:
        deps.requirements_file, deps.requirements_text = read_requirements(workspace, commit, spec.requirements_from)
    if spec.environment_yml_from:
        used, pkgs = read_environment_yml(workspace, commit, spec.environment_yml_from, task.instance_id, notes)
        notes.append(f"conda environment.yml ({used}) installed with pip")
        deps.environment_packages += pkgs
    return deps
