"""A stored grading result is reused only when everything that decides the verdict is unchanged: the patch,
the dataset row, the environment specification, the backend (and network, time limit) and the versions of
takeover and swebench. Each change grades again, and the output says what happened."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import make_repo
from typer.testing import CliRunner

from takeover.environments import EnvSpec
from takeover.errors import EnvironmentUnavailable
from takeover.grading import GradeResult, grade, grading_key
from takeover.grading_settings import GradingSettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask

CALC = "def add(a, b):\n    return a - b\n"
TESTS = "from calc import add\n\n\ndef test_add_zero():\n    assert add(1, 0) == 1\n"
TEST_PATCH = """diff --git a/tests/test_calc.py b/tests/test_calc.py
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -1,5 +1,9 @@
 from calc import add
 
 
 def test_add_zero():
     assert add(1, 0) == 1
+
+
+def test_add():
+    assert add(2, 3) == 5
"""
GOLD = """diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""
OTHER = GOLD.replace("+    return a + b", "+    return b + a")
SPEC = {"python": None, "test_cmd": "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 pytest -rA -p no:cacheprovider",
        "log_parser": "pytest"}


@pytest.fixture
def calc(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    mirror = tmp_path / "mirror"
    _, sha = make_repo(tmp_path / "src" / "calc", {"calc.py": CALC, "tests/test_calc.py": TESTS, "conftest.py": ""},
                       bare_mirror=mirror / "acme__calc.git")
    task = {
        "instance_id": "acme__calc-3", "repo": "acme/calc", "base_commit": sha, "problem_statement": "add subtracts",
        "version": "0.1", "patch": GOLD, "test_patch": TEST_PATCH,
        "FAIL_TO_PASS": ["tests/test_calc.py::test_add"], "PASS_TO_PASS": ["tests/test_calc.py::test_add_zero"],
        "takeover_env_spec": SPEC,
    }
    return task, RepoSource(mirror, offline=True), tmp_path / "logs"


def _first(task, source, logs, patch=GOLD, **options):
    result = grade(task, patch, GradingSettings(timeout=120, options=options), repo_source=source, log_dir=logs)
    assert result.error is None and not result.reused and result.graded_at
    return result


def test_same_grading_is_reused_and_says_from_when(calc):
    task, source, logs = calc
    first = _first(task, source, logs)
    saved = logs / "takeover" / "acme__calc-3" / "result.json"
    mtime = saved.stat().st_mtime_ns
    again = grade(task, GOLD, grading=GradingSettings(timeout=120), repo_source=source, log_dir=logs)
    assert again.reused and saved.stat().st_mtime_ns == mtime
    assert again.graded_at == first.graded_at and first.graded_at in again.reuse_note
    assert "--force" in again.reuse_note and again.summary()["reused"] is True
    # the text given to people is not part of the key
    reworded = {**task, "problem_statement": "add() is wrong", "hints_text": "look at calc.py"}
    assert grade(reworded, GOLD, grading=GradingSettings(timeout=120), repo_source=source, log_dir=logs).reused


@pytest.mark.parametrize(("what", "change"), [
    ("the patch", {"patch": OTHER}),
    ("the dataset row", {"task": {"FAIL_TO_PASS": []}}),
    ("the dataset row", {"task": {"PASS_TO_PASS": []}}),
    ("the dataset row", {"task": {"test_patch": TEST_PATCH.replace("add(2, 3) == 5", "add(3, 2) == 5")}}),
    ("the dataset row", {"task": {"version": "0.2"}}),
    ("the dataset row", {"task": {"environment_setup_commit": "0" * 40}}),
    ("the environment specification", {"task": {"takeover_env_spec": {**SPEC, "test_cmd": SPEC["test_cmd"] + " -q"}}}),
    ("the network setting", {"grading": {"network": True}}),
    ("the time limit", {"grading": {"timeout": 121}}),
])
def test_each_part_of_the_key_grades_again(calc, what, change):
    task, source, logs = calc
    first = _first(task, source, logs)
    changed_task = {**task, **change.get("task", {})}
    grading = GradingSettings(**{"timeout": 120, **change.get("grading", {})})
    again = grade(changed_task, change.get("patch", GOLD), grading, repo_source=source, log_dir=logs)
    assert not again.reused
    assert again.reuse_note.startswith("graded again: ") and what in again.reuse_note
    assert first.graded_at in again.reuse_note
    assert again.grading_key != first.grading_key


def test_spec_file_change_grades_again(calc):
    task, source, logs = calc
    plain = {k: v for k, v in task.items() if k != "takeover_env_spec"}
    _first(plain, source, logs, spec_file={"acme/calc": EnvSpec(**SPEC)})
    same = grade(plain, GOLD, grading=GradingSettings(timeout=120, options={"spec_file": {"acme/calc": EnvSpec(**SPEC)}}), repo_source=source, log_dir=logs)
    assert same.reused
    other = grade(plain, GOLD, grading=GradingSettings(timeout=120, options={"spec_file": {"acme/calc": EnvSpec(**{**SPEC, "test_cmd": SPEC["test_cmd"] + " -q"})}}), repo_source=source, log_dir=logs)
    assert not other.reused and "the environment specification" in other.reuse_note


@pytest.mark.parametrize(("package", "what"), [("swebench", "the swebench version"),
                                                ("takeover", "the takeover version")])
def test_a_result_from_other_versions_is_graded_again(calc, package, what):
    task, source, logs = calc
    _first(task, source, logs)
    saved = logs / "takeover" / "acme__calc-3" / "result.json"
    stored = json.loads(saved.read_text())
    stored["grading_key"][package] = "0.0.1"  # as an earlier installation wrote it
    saved.write_text(json.dumps(stored))
    again = grade(task, GOLD, grading=GradingSettings(timeout=120), repo_source=source, log_dir=logs)
    assert not again.reused and what in again.reuse_note
    assert json.loads(saved.read_text())["grading_key"][package] != "0.0.1"


def test_a_result_without_key_or_with_an_error_is_graded_again(calc):
    task, source, logs = calc
    _first(task, source, logs)
    saved = logs / "takeover" / "acme__calc-3" / "result.json"
    stored = json.loads(saved.read_text())
    saved.write_text(json.dumps({k: v for k, v in stored.items() if k != "grading_key"}))  # an older result.json
    again = grade(task, GOLD, grading=GradingSettings(timeout=120), repo_source=source, log_dir=logs)
    assert not again.reused and "has none" in again.reuse_note
    stored = json.loads(saved.read_text())
    saved.write_text(json.dumps({**stored, "error": "environment: broken"}))
    again = grade(task, GOLD, grading=GradingSettings(timeout=120), repo_source=source, log_dir=logs)
    assert not again.reused and "had an error" in again.reuse_note


def test_force_grades_again(calc):
    task, source, logs = calc
    _first(task, source, logs)
    forced = grade(task, GOLD, grading=GradingSettings(timeout=120), repo_source=source, log_dir=logs, force=True)
    assert not forced.reused and "--force" in forced.reuse_note and forced.resolved


def test_backend_is_part_of_the_key(calc):
    task, source, logs = calc
    first = _first(task, source, logs)
    source_task = SourceTask.model_validate(task)
    docker_key = grading_key(source_task, GOLD, GradingSettings(backend="docker", network=True, timeout=120))
    assert docker_key.backend == "docker" and docker_key != first.grading_key
    if subprocess.run(["sh", "-c", "test -S /var/run/docker.sock"], check=False).returncode != 0:
        # the stored local result is not handed out as the docker backend's: it must grade, and cannot here
        with pytest.raises(EnvironmentUnavailable, match="no Docker daemon answers"):
            grade(task, GOLD, grading=GradingSettings(backend="docker", timeout=120), repo_source=source, log_dir=logs)
    # a stored docker result under an equal key is reused without a daemon
    saved = logs / "takeover" / "acme__calc-3" / "result.json"
    docker_result = GradeResult.model_validate_json(saved.read_text()).model_copy(
        update={"backend": "docker", "network": True, "grading_key": docker_key})
    saved.write_text(docker_result.model_dump_json())
    reused = grade(task, GOLD, grading=GradingSettings(backend="docker", timeout=120), repo_source=source, log_dir=logs)
    assert reused.reused and reused.backend == "docker"


def test_cli_says_reused_and_force_grades_again(calc, tmp_path):
    import typer

    from takeover.cli import grade as grade_cli

    app = typer.Typer()
    app.callback()(lambda: None)
    grade_cli.register(app)
    task, _, logs = calc
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(json.dumps(task) + "\n")
    args = ["grade", "--dataset", str(dataset), "--instance-id", "acme__calc-3", "--gold", "--mirror",
            str(tmp_path / "mirror"), "--offline", "--out-dir", str(logs)]
    runner = CliRunner()
    first = runner.invoke(app, [*args, "--json"])
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["reused"] is False
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert "reused the result graded at" in " ".join(again.output.split())
    forced = runner.invoke(app, [*args, "--force", "--json"])
    out = json.loads(forced.stdout)
    assert out["reused"] is False and "--force" in out["reuse_note"] and out["resolved"] is True
