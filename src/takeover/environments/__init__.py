"""Per-(repo, version) execution environments for the ``local`` backends of agent runs and grading.

The SWE-bench harness builds one conda environment per (repository, version) inside Docker. Without
Docker takeover builds the same thing as Python virtual environments, from the same specification:

- :mod:`.swebench_specs`: SWE-bench's install specifications as data (a table generated from swebench 4.1),
  and 4.1's rules on them; :mod:`.row_grading`: a row's ``image``/``eval_script``/``log_parser``/``eval_type``,
  its own or derived;
- :mod:`.spec`: the specification (SWE-bench's ``MAP_REPO_VERSION_TO_SPECS``, a spec file, or the task's
  ``takeover_env_spec``) as an :class:`EnvSpec`; :mod:`.conda` adapts its conda steps to a venv;
- :mod:`.interpreters`: the Python interpreters and ``uv`` on this machine (never downloaded);
- :mod:`.requirements`: requirement files read from the checkout, not from GitHub;
- :mod:`.setup_commit`: the commit requirement files are read at (a stand-in when the dataset lacks it);
- :mod:`.host_limits`: what this host cannot build, said before any work;
- :mod:`.shared_venv`: the dependency venv, built once per specification and reused;
- :mod:`.workspace_venv`: a small venv per checkout holding the project itself;
- :mod:`.project_reuse`: the project's editable install made once and copied to new workspaces;
- :mod:`.local_httpbin`: a local httpbin for test suites that read ``HTTPBIN_URL`` (psf/requests before 2.9);
- :mod:`.build_steps` and :mod:`.hints`: the build's logged, time-limited commands and what a failed
  one lacks;
- :mod:`.prepared`: :func:`prepare_environment`, the entry point, and :class:`PreparedEnvironment`;
- :mod:`.openhands_venv`: OpenHands' own Python 3.12 venv (its agent runtime and its condenser run there).

With Docker, the environment is the task's official SWE-bench image instead: :mod:`.official_image` names it
and makes swebench's ``TestSpec`` of the task without the network (:func:`official_test_spec`).
"""

from takeover.environments.build_steps import BUILD_TIMEOUT
from takeover.environments.hints import failure_hint
from takeover.environments.host_limits import (
    Unbuildable,
    check_buildable,
    host_blockers,
    unbuildable_environments,
)
from takeover.environments.interpreters import find_interpreter, interpreter_candidates, uv_binary
from takeover.environments.official_image import instance_image_name, official_test_spec
from takeover.environments.prepared import PreparedEnvironment, prepare_environment
from takeover.environments.requirements import read_environment_yml, read_requirements
from takeover.environments.setup_commit import SetupCommit, setup_commit_for
from takeover.environments.shared_venv import MARKER
from takeover.environments.spec import (
    DEFAULT_TEST_CMD,
    SPEC_FIELD,
    EnvSpec,
    env_spec_for,
    load_spec_file,
    spec_from_swebench,
)
from takeover.environments.workspace_venv import record_pre_install

__all__ = [
    "BUILD_TIMEOUT",
    "DEFAULT_TEST_CMD",
    "MARKER",
    "SPEC_FIELD",
    "EnvSpec",
    "PreparedEnvironment",
    "SetupCommit",
    "Unbuildable",
    "check_buildable",
    "env_spec_for",
    "failure_hint",
    "find_interpreter",
    "host_blockers",
    "instance_image_name",
    "interpreter_candidates",
    "load_spec_file",
    "official_test_spec",
    "prepare_environment",
    "read_environment_yml",
    "read_requirements",
    "record_pre_install",
    "setup_commit_for",
    "spec_from_swebench",
    "unbuildable_environments",
    "uv_binary",
]
