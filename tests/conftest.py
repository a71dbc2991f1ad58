"""Shared fixtures: paths to the real data in ../shared/data, small git repositories, the scripted model
server, and the mirror of real repositories (tests that need it skip with a reason when it is absent)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TAKEOVER_SHARED", ROOT.parent / "shared"))
DATA = SHARED / "data"
DATASET = DATA / "swebench_verified.jsonl"
TRAJ = DATA / "trajectories"

# Quiet and offline: litellm must not fetch its cost map in tests.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


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


@pytest.fixture
def data_dir() -> Path:
    if not DATA.exists():
        pytest.skip(f"shared data not found at {DATA} (set TAKEOVER_SHARED)")
    return DATA


@pytest.fixture
def mirror_dir() -> Path:
    """The user's mirror of real SWE-bench repositories (TAKEOVER_MIRROR); skips when not configured."""
    value = os.environ.get("TAKEOVER_MIRROR")
    if not value or not Path(value).is_dir():
        pytest.skip("TAKEOVER_MIRROR is not set to a folder of bare repositories (owner__name.git)")
    return Path(value)


# A one-file calculator repository with a bug and its test: the task the agent tests run on.
CALC_BUGGY = "def add(a, b):\n    return a - b\n"
CALC_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
CALC_ENV_SPEC = {"python": None, "test_cmd": "pytest -rA", "log_parser": "pytest"}


@pytest.fixture
def task_and_mirror(tmp_path):
    """``(SourceTask acme__calc-1, mirror folder)``: the buggy calculator in a one-repository mirror."""
    from takeover.tasks import SourceTask

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
