"""Shared fixtures: paths to the real data in ../shared/data, small git repositories, the scripted model
server, and the mirror of real repositories.

What a test needs from the machine is declared with ``prerequisites.requires`` and checked here before the
test runs: a missing prerequisite skips the test naming it, and fails it under CI (``CI=true``); see
``tests/prerequisites.py``. The CLI invocations of the whole session are recorded for
``test_cli_parameters.py`` (``tests/cli_invocations.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import cli_invocations
import pytest
from prerequisites import BORROWED, USER_CACHE, need
from prerequisites import SHARED as DATA

ROOT = Path(__file__).resolve().parents[1]
SHARED = DATA.parent
DATASET = DATA / "swebench_verified.jsonl"
TRAJ = DATA / "trajectories"

# Quiet and offline: litellm must not fetch its cost map in tests.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

#: The suite's own takeover cache, new for each session (made when pytest starts, before any test module is
#: imported) and removed at its end: what the tests make there (frozen stores of their small repositories,
#: environments, gradings) never lands in the user's cache (``prerequisites.USER_CACHE``). It borrows the few
#: things built once for the machine (``prerequisites.BORROWED``) by a link; subprocesses inherit it through
#: ``TAKEOVER_CACHE``.
SUITE_CACHE = Path()


def _suite_cache() -> Path:
    cache = Path(tempfile.mkdtemp(prefix="takeover-test-cache-"))
    for name in BORROWED:
        if (USER_CACHE / name).is_dir():
            (cache / name).symlink_to(USER_CACHE / name, target_is_directory=True)
    os.environ["TAKEOVER_CACHE"] = str(cache)
    return cache


def git(cwd: Path | str, *args: str) -> str:
    """Run git with a fixed identity and dates, so commits are deterministic; returns stdout."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.com",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def make_repo(root: Path, files: dict[str, str], *, bare_mirror: Path | None = None) -> tuple[Path, str]:
    """Create a git repository at ``root`` with ``files`` committed; returns (path, commit sha).

    With ``bare_mirror``, also make a bare clone there (a mirror folder entry ``owner__name.git``).
    """
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    sha = git(root, "rev-parse", "HEAD").strip()
    if bare_mirror is not None:
        bare_mirror.parent.mkdir(parents=True, exist_ok=True)
        git(root.parent, "clone", "-q", "--bare", str(root), str(bare_mirror))
    return root, sha


def pytest_configure(config: pytest.Config) -> None:
    global SUITE_CACHE
    SUITE_CACHE = _suite_cache()
    cli_invocations.start_recording()


def pytest_unconfigure(config: pytest.Config) -> None:
    if SUITE_CACHE != Path():
        shutil.rmtree(SUITE_CACHE, ignore_errors=True)  # the links only: rmtree never follows them


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker in item.iter_markers("requires"):
        need(*marker.args, counterpart=marker.kwargs.get("counterpart"))


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    cli_invocations.run_parameter_check_last(items)


def pytest_deselected(items: list[pytest.Item]) -> None:
    cli_invocations.note_deselected(items)


@pytest.fixture
def mirror_dir(request: pytest.FixtureRequest) -> Path:
    """The user's mirror of real SWE-bench repositories (TAKEOVER_MIRROR), for a test marked
    ``@requires("mirror", counterpart=...)`` (it skips, also under CI, when no mirror is configured)."""
    if not any("mirror" in m.args for m in request.node.iter_markers("requires")):
        pytest.fail('a test using mirror_dir is marked @requires("mirror", counterpart="file.py::test") '
                    "(the counterpart runs in CI on a repository built in the test)", pytrace=False)
    return Path(os.environ["TAKEOVER_MIRROR"])


@pytest.fixture(scope="module")
def checkpoint_patch() -> str:
    """The checkpoint patch of the real psf__requests-1766 run at ``after_first_source_edit`` (the view
    tests; it needs that shared run)."""
    from _views_support import requests_1766_patches

    return requests_1766_patches()["after_first_source_edit"]


# A one-file calculator repository with a bug and its test: the task the agent tests run on.
CALC_BUGGY = "def add(a, b):\n    return a - b\n"
CALC_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
CALC_ENV_SPEC = {"python": None, "test_cmd": "pytest -rA", "log_parser": "pytest"}


@pytest.fixture
def task_and_mirror(tmp_path):
    """``(SourceTask acme__calc-1, mirror folder)``: the buggy calculator in a one-repository mirror."""
    from takeover.sources.tasks import SourceTask

    _, sha = make_repo(
        tmp_path / "src" / "calc",
        {"calc.py": CALC_BUGGY, "test_calc.py": CALC_TEST},
        bare_mirror=tmp_path / "mirror" / "acme__calc.git",
    )
    task = SourceTask(
        instance_id="acme__calc-1",
        repo="acme/calc",
        base_commit=sha,
        problem_statement="add() subtracts instead of adding",
        takeover_env_spec=CALC_ENV_SPEC,
    )
    return task, tmp_path / "mirror"


@pytest.fixture(scope="session")
def tiny_docker_task(tmp_path_factory):
    """A small task under a SWE-bench (repository, version), pallets/flask 2.3, its mirror and its stand-in
    image in the Docker daemon, made once per session (``tests/docker_images.py``); for tests marked
    ``@requires("docker daemon", "debootstrap")``."""
    from docker_images import tiny_docker_task as make

    return make(tmp_path_factory.mktemp("tiny-docker"))


@pytest.fixture(scope="session")
def requests_docker_task(tmp_path_factory):
    """As ``tiny_docker_task``, under another repository's specification (psf/requests 2.31: another Python,
    another install, another log parser), so that the docker tests cover two repositories without a mirror."""
    from docker_images import requests_docker_task as make

    return make(tmp_path_factory.mktemp("requests-docker"))
