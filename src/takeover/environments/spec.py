"""The specification of a task's environment: SWE-bench's own, a spec file's, or the task's.

SWE-bench's harness (4.1) builds each environment from ``MAP_REPO_VERSION_TO_SPECS`` (python version,
``packages``, ``pip_packages``, ``pre_install``, ``install``, ``eval_commands``, ``test_cmd``); swebench 5.x
no longer ships it, so takeover reads it from the table generated from swebench 4.1
(:mod:`takeover.environments.swebench_specs`). :func:`spec_from_swebench` reads those values, never
re-typed here, into an
:class:`EnvSpec` adapted to a venv (:mod:`takeover.environments.conda`). Repositories that SWE-bench does
not know get their spec from a task field (``takeover_env_spec``) or a user's spec file (JSON or TOML,
keys ``owner/name`` or ``owner/name/version``); :func:`env_spec_for` picks one.

"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from takeover._util.io import read_text
from takeover.environments import swebench_specs
from takeover.environments.conda import adapt_steps, conda_packages_as_pip, tox_current_env_steps
from takeover.errors import EnvironmentUnavailable, InputError
from takeover.sources.tasks import SourceTask

#: The task field that carries an environment spec of its own (an :class:`EnvSpec` as a dict).
SPEC_FIELD = "takeover_env_spec"
#: SWE-bench's test command for pytest-based repositories; used when a custom spec gives none.
DEFAULT_TEST_CMD = "pytest -rA"
#: When SWE-bench Verified and its environment images were released: SWE-bench's specifications leave many
#: dependencies unpinned, and they resolve as they did then (today's releases break old projects:
#: docutils 0.22 drops ``docutils.utils.roman``, setuptools 81 drops ``pkg_resources``).
SWEBENCH_PACKAGES_DATE = "2024-08-13T00:00:00Z"


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
        exclude_newer: resolve unpinned packages as of this ISO 8601 date (uv's ``exclude-newer``; the
            build moves it to half a year after the task's setup commit when that is later); None = today.
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
    exclude_newer: str | None = None
    seed: bool = True
    notes: list[str] = Field(default_factory=list)
    source: str = SPEC_FIELD

    @property
    def test_cmds(self) -> list[str]:
        """The test commands as a list (the test files go after the last one)."""
        return [self.test_cmd] if isinstance(self.test_cmd, str) else list(self.test_cmd)

    @property
    def needs_build(self) -> bool:
        """False when the current interpreter is used as it is (no packages, no install steps)."""
        return bool(
            self.python or self.packages or self.requirements_from or self.environment_yml_from
            or self.pip_packages or self.pre_install or self.install
        )


def spec_from_swebench(repo: str, version: str | None) -> EnvSpec:
    """The :class:`EnvSpec` of a SWE-bench (repo, version), from swebench 4.1's specifications
    (:func:`takeover.environments.swebench_specs.repo_version_specs`).

    Raises:
        KeyError: swebench has no specification for this pair.
    """
    specs = swebench_specs.repo_version_specs(repo, version)
    if specs is None:
        raise KeyError(f"{repo} {version}")
    notes: list[str] = []
    packages: list[str] = []
    requirements_from: list[str] = []
    env_yml: list[str] = []
    pkgs = specs.get("packages", "") or ""
    if pkgs == "requirements.txt":
        requirements_from = swebench_specs.requirements_paths(repo)
    elif pkgs == "environment.yml":
        env_yml = swebench_specs.environment_yml_paths(repo)
    elif pkgs:
        packages = conda_packages_as_pip(pkgs, notes)
    pre_packages, pre_shell = adapt_steps(list(specs.get("pre_install", [])), notes)
    install = swebench_specs.install_command(repo)
    install_steps = [install] if install else []
    if specs.get("install"):
        install_steps.append(specs["install"])
    _, eval_shell = adapt_steps(list(specs.get("eval_commands", [])), notes)
    python = str(specs["python"]) if specs.get("python") else None
    eval_shell += tox_current_env_steps(specs["test_cmd"], python, notes)
    if specs.get("nano_cpus"):
        notes.append(f"SWE-bench runs these tests in a container limited to {specs['nano_cpus'] / 1e9:g} CPUs; "
                     f"tests that count the CPUs from the cgroup (pylint's needs_two_cores) may be skipped on a "
                     f"host whose cgroup grants fewer")
    return EnvSpec(
        repo=repo,
        version=version,
        python=python,
        packages=packages + pre_packages,
        requirements_from=requirements_from,
        environment_yml_from=env_yml,
        pip_packages=list(specs.get("pip_packages", [])),
        pre_install=pre_shell,
        install=install_steps,
        eval_commands=eval_shell,
        test_cmd=specs["test_cmd"],
        log_parser=None,
        exclude_newer=SWEBENCH_PACKAGES_DATE,
        notes=notes,
        source=f"swebench MAP_REPO_VERSION_TO_SPECS[{repo!r}][{version!r}]",
    )


def load_spec_file(path: Path | str) -> dict[str, EnvSpec]:
    """Read a user spec file: JSON or TOML mapping ``owner/name`` or ``owner/name/version`` to a spec.

    Raises:
        InputError: unreadable file, or an entry that is not a valid :class:`EnvSpec` (names the key).
    """
    path = Path(path)
    text = read_text(path)
    try:
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


def env_spec_for(task: SourceTask, spec_file: Path | str | Mapping[str, EnvSpec] | None = None) -> EnvSpec:
    """The environment spec of ``task``.

    Order: the task's ``takeover_env_spec`` field; the spec file's ``repo/version`` then ``repo`` entry
    (``spec_file`` is a path for :func:`load_spec_file` or its loaded mapping); swebench's
    ``MAP_REPO_VERSION_TO_SPECS``.

    Raises:
        InputError: ``takeover_env_spec`` is not a valid spec, or the spec file cannot be read.
        EnvironmentUnavailable: no spec anywhere; the message says how to give one.
    """
    repo, version = task.repo, task.version
    own = (task.model_extra or {}).get(SPEC_FIELD)
    if own is not None:
        try:
            spec = own if isinstance(own, EnvSpec) else EnvSpec.model_validate(own)
        except ValidationError as exc:
            raise InputError(task.instance_id, f"invalid environment spec: {exc}", field=SPEC_FIELD) from None
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
            f"field {SPEC_FIELD!r} or in a spec file (--backend-option spec_file=FILE, key '{repo}/{version}' or '{repo}')"
        ) from None
