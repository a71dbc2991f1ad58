"""takeover's own agent runs start from the task's starting state (docs/protocol.md sections 5.2 and 8.1):
the edits the environment's setup makes (SWE-bench's ``pre_install``: a ``sed`` on ``tox.ini`` for sphinx)
are never the agent's, so neither the final patch, nor the recorded snapshots' checkpoints, nor a successor's
final patch carry them, and grading, which makes them again, grades exactly the agent's work (scripted
model, small git repository)."""

from __future__ import annotations

import json

from conftest import git, make_repo
from test_agents import SUBMIT, bash, events_of, settings

from takeover.agents import ExitStatus, RunLimits, read_run
from takeover.agents.runs import run_predecessor, run_takeover
from takeover.checkpoints import materialize_checkpoint
from takeover.grading import grade
from takeover.grading_settings import GradingSettings
from takeover.points import analyze_run, checkpoint_method
from takeover.replay_settings import ReplaySettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.testing.scripted_server import ScriptedServer

TOX = "[tox]\nenvlist = py\n\n[testenv]\ncommands =\n    pytest {posargs}\n"
# What SWE-bench's specification does to sphinx's tox.ini before any agent starts.
SETUP_STEP = "sed -i 's/pytest/pytest -rA/' tox.ini"
CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
# Passes only when tox.ini is as the environment's setup leaves it: the setup's edit made exactly once.
TESTS = (
    "from pathlib import Path\n\nfrom calc import mul\n\n\n"
    "def test_mul():\n    assert mul(2, 3) == 6\n\n\n"
    "def test_tox_ini_is_as_the_setup_leaves_it():\n"
    "    assert Path(__file__).parents[1].joinpath('tox.ini').read_text().count('-rA') == 1\n"
)
FIX = "sed -i 's/a - b/a + b/' calc.py"
DOC = "sed -i '1i \"\"\"Arithmetic.\"\"\"' calc.py"


def _task(tmp_path) -> tuple[SourceTask, RepoSource]:
    files = {"calc.py": CALC, "tests/__init__.py": "", "tests/test_calc.py": TESTS, "tox.ini": TOX, "conftest.py": ""}
    src, sha = make_repo(tmp_path / "src" / "calc", files, bare_mirror=tmp_path / "mirror" / "acme__calc.git")
    tests = src / "tests" / "test_calc.py"
    tests.write_text(TESTS.replace("import mul", "import add, mul") + "\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    test_patch = git(src, "diff")
    spec = {"python": None, "pre_install": [SETUP_STEP], "log_parser": "pytest",
            "test_cmd": "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 pytest -rA -p no:cacheprovider"}
    task = SourceTask(
        instance_id="acme__calc-1", repo="acme/calc", base_commit=sha, problem_statement="add subtracts",
        version="0.1", patch="", test_patch=test_patch,
        FAIL_TO_PASS=["tests/test_calc.py::test_add"],
        PASS_TO_PASS=["tests/test_calc.py::test_mul", "tests/test_calc.py::test_tox_ini_is_as_the_setup_leaves_it"],
        takeover_env_spec=spec,
    )
    return task, RepoSource(tmp_path / "mirror", offline=True)


def test_runs_and_their_checkpoints_leave_the_environment_setup_out_and_grade_as_the_agent_left_them(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    task, source = _task(tmp_path)
    script = [bash("git status --short && grep -c -- -rA tox.ini"), bash(FIX), bash("git diff > patch.txt"),
              bash(SUBMIT)]
    with ScriptedServer(script) as srv:
        record = run_predecessor(task, settings(srv), tmp_path / "run", repo_source=source)
    assert record.exit_status is ExitStatus.submitted
    ws = tmp_path / "run" / "workspace"
    # The agent works where the setup has run, and sees it as SWE-bench's images show it: committed.
    assert events_of(tmp_path / "run")[1]["text"] == "<returncode>0</returncode>\n<output>\n1\n</output>"
    assert (ws / "tox.ini").read_text().count("-rA") == 1
    assert git(ws, "show", f"{record.starting_state}:tox.ini") == TOX.replace("pytest", "pytest -rA")
    assert record.environment_files == ["tox.ini"]
    assert json.loads((tmp_path / "run" / "run.json").read_text())["starting_state"] == record.starting_state
    patch = (tmp_path / "run" / "patch.diff").read_text()
    assert "diff --git a/calc.py b/calc.py" in patch and "tox.ini" not in patch
    assert "tox.ini" not in record.submission  # the agent's own `git diff`

    # Recorded snapshots: checkpoints against the starting state the run recorded.
    traj = read_run(tmp_path / "run")
    assert traj.metadata["starting_state"] == record.starting_state
    rp = analyze_run(traj, task, source, replay=ReplaySettings(use_environment=False))
    assert rp.replay.method == "recorded_snapshot" and rp.replay.first_mismatch is None, rp.replay
    assert rp.replay.environment_files == ["tox.ini"] and "+    pytest -rA {posargs}" in rp.environment_patch
    point = rp.point("after_first_source_edit")
    assert point.changed_source_files == ["calc.py"] and "tox.ini" not in rp.patches[point.type]
    folder = tmp_path / "ckpt"
    cp = materialize_checkpoint(task, traj, point, rp.patches[point.type], folder, checkpoint_method(rp.replay),
                                repo_source=source, environment_files=rp.replay.environment_files)
    assert cp.files == ["calc.py"] and cp.environment_files == ["tox.ini"]

    # A successor starts from base_commit + the setup's edits + the checkpoint patch: its final patch is the
    # checkpoint's edit plus its own, never the setup's.
    with ScriptedServer([bash("git status --short"), bash(DOC), bash(SUBMIT.replace("cat patch.txt", "git diff"))]) as srv:
        successor = run_takeover(folder, "repo_only", settings(srv), tmp_path / "succ", task=task, prompt="continue",
                                 repo_source=source)
    assert successor.exit_status is ExitStatus.submitted and successor.environment_files == ["tox.ini"]
    assert events_of(tmp_path / "succ")[1]["text"] == "<returncode>0</returncode>\n<output>\n M calc.py\n</output>"
    final = (tmp_path / "succ" / "patch.diff").read_text()
    assert final.startswith("diff --git a/calc.py b/calc.py") and "tox.ini" not in final
    assert '+"""Arithmetic."""' in final and "+    return a + b" in final

    # Grading makes the setup's edit itself, once: the successor's patch resolves the task.
    result = grade(task, final, grading=GradingSettings(timeout=120), repo_source=source, log_dir=tmp_path / "logs")
    assert result.error is None and result.applied, result
    assert result.PASS_TO_PASS.failure == [] and result.resolved, result


def test_a_task_whose_environment_has_no_setup_steps_starts_from_base_commit(tmp_path):
    task, source = _task(tmp_path)
    task = task.model_copy(update={"takeover_env_spec": {"python": None, "log_parser": "pytest"}})
    with ScriptedServer([bash("git status --short"), bash(FIX)]) as srv:
        record = run_predecessor(task, settings(srv), tmp_path / "run", repo_source=source,
                                 limits=RunLimits(step_limit=2))
    ws = tmp_path / "run" / "workspace"
    assert record.starting_state == git(ws, "rev-parse", f"{task.base_commit}^{{tree}}").strip()
    assert record.environment_files == [] and git(ws, "rev-parse", "HEAD").strip() == task.base_commit
    assert (tmp_path / "run" / "patch.diff").read_text().startswith("diff --git a/calc.py b/calc.py")
    assert (ws / "tox.ini").read_text() == TOX
