"""Grading mechanics on a tiny package in a git repository built here (no environment build: the task's
``takeover_env_spec`` uses the current interpreter, which has pytest)."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from pathlib import Path

import pytest
from conftest import make_repo
from typer.testing import CliRunner

from takeover.grading import grade, grade_predictions
from takeover.grading_settings import GradingSettings
from takeover.sources.repos import RepoSource

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TESTS = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
TEST_PATCH = """diff --git a/tests/test_calc.py b/tests/test_calc.py
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -1,5 +1,9 @@
-from calc import mul
+from calc import add, mul
 
 
 def test_mul():
     assert mul(2, 3) == 6
+
+
+def test_add():
+    assert add(2, 3) == 5
"""
GOLD = """diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,5 +1,5 @@
 def add(a, b):
-    return a - b
+    return a + b
 
 
 def mul(a, b):
"""
BREAKS_MUL = """diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,6 +1,6 @@
 def add(a, b):
-    return a - b
+    return a + b
 
 
 def mul(a, b):
-    return a * b
+    return a + b
"""
DOES_NOT_APPLY = """diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,5 +1,5 @@
 def add(a, b):
-    return a * b * 7
+    return a + b
 
 
 def mul(a, b):
"""
# plugin autoload off: the run does not depend on which pytest plugins this interpreter happens to have
SPEC = {"python": None, "test_cmd": "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 pytest -rA -p no:cacheprovider", "log_parser": "pytest"}


def _hang_patch(token: str) -> str:
    return f"""diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,5 +1,8 @@
 def add(a, b):
-    return a - b
+    import subprocess, time
+    subprocess.Popen(["sleep", "{token}"])
+    time.sleep(600)
+    return a + b
 
 
 def mul(a, b):
"""


@pytest.fixture
def calc_task(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    mirror = tmp_path / "mirror"
    _, sha = make_repo(tmp_path / "src" / "calc", {"calc.py": CALC, "tests/test_calc.py": TESTS, "conftest.py": ""},
                       bare_mirror=mirror / "acme__calc.git")
    task = {
        "instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": sha, "problem_statement": "add subtracts",
        "version": "0.1", "patch": GOLD, "test_patch": TEST_PATCH,
        "FAIL_TO_PASS": ["tests/test_calc.py::test_add"], "PASS_TO_PASS": ["tests/test_calc.py::test_mul"],
        "takeover_env_spec": SPEC,
    }
    return task, RepoSource(mirror, offline=True)


def test_gold_resolves_and_empty_does_not(calc_task, tmp_path):
    task, source = calc_task
    gold = grade(task, GOLD, grading=GradingSettings(timeout=120), repo_source=source, log_dir=tmp_path / "logs")
    assert gold.error is None and gold.applied
    assert gold.resolved and gold.handoff_state == "resolved_preserve"
    assert gold.FAIL_TO_PASS.success == ["tests/test_calc.py::test_add"]
    assert gold.PASS_TO_PASS.success == ["tests/test_calc.py::test_mul"]
    log = Path(gold.log_path).read_text()
    assert ">>>>> Start Test Output" in log and ">>>>> End Test Output" in log
    assert "PASSED tests/test_calc.py::test_add" in log
    report = json.loads((Path(gold.log_path).parent / "report.json").read_text())
    assert report["acme__calc-1"]["resolved"] is True

    empty = grade(task, "", grading=GradingSettings(timeout=120), repo_source=source, log_dir=tmp_path / "logs")
    assert not empty.resolved and empty.handoff_state == "needs_completion"
    assert empty.FAIL_TO_PASS.failure == ["tests/test_calc.py::test_add"]
    assert empty.PASS_TO_PASS.success == ["tests/test_calc.py::test_mul"]
    # the mirror was only read: its refs are unchanged and it holds no workspace files
    assert not (tmp_path / "mirror" / "acme__calc.git" / "calc.py").exists()


def test_a_relative_log_dir_is_read_from_the_current_folder(calc_task, tmp_path, monkeypatch):
    task, source = calc_task
    monkeypatch.chdir(tmp_path)
    gold = grade(task, GOLD, grading=GradingSettings(timeout=120), repo_source=source, log_dir="logs")
    assert gold.applied and gold.resolved and gold.handoff_state == "resolved_preserve"
    assert Path(gold.log_path).is_absolute() and Path(gold.log_path).is_relative_to(tmp_path / "logs")


def test_patch_that_does_not_apply_is_invalid_with_the_hunk(calc_task, tmp_path):
    task, source = calc_task
    r = grade(task, DOES_NOT_APPLY, repo_source=source, log_dir=tmp_path / "logs")
    assert not r.applied and r.handoff_state == "invalid" and not r.resolved
    assert "calc.py" in r.apply_error
    assert "-    return a * b * 7" in r.apply_error  # the failing hunk is shown
    assert r.error is None
    # The printed log path is a real file that says why no test ran.
    log = Path(r.log_path).read_text()
    assert log.startswith("no tests were run: candidate patch does not apply") and "calc.py" in log


def test_patch_breaking_pass_to_pass_is_broke_existing(calc_task, tmp_path):
    task, source = calc_task
    r = grade(task, BREAKS_MUL, grading=GradingSettings(timeout=120), repo_source=source, log_dir=tmp_path / "logs")
    assert r.FAIL_TO_PASS.success == ["tests/test_calc.py::test_add"]
    assert r.PASS_TO_PASS.failure == ["tests/test_calc.py::test_mul"]
    assert r.handoff_state == "broke_existing" and not r.resolved


def _processes_with(token: str) -> list[int]:
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if token.encode() in (d / "cmdline").read_bytes():
                    found.append(int(d.name))
            except OSError:
                continue
    return found


def test_hanging_test_is_killed_with_its_process_group(calc_task, tmp_path):
    task, source = calc_task
    token = f"{uuid.uuid4().int % 10**6 + 10**6}.{os.getpid()}"  # a unique sleep duration to look for
    box = {}
    worker = threading.Thread(target=lambda: box.update(r=grade(task, _hang_patch(token), grading=GradingSettings(timeout=6), repo_source=source, log_dir=tmp_path / "logs")))
    worker.start()
    seen = False
    while worker.is_alive():
        seen = seen or bool(_processes_with(token))
        time.sleep(0.1)
    worker.join()
    r = box["r"]
    assert seen  # the grandchild really ran while the test hung
    assert r.timed_out and not r.resolved
    assert 6 <= r.test_seconds < 30
    assert r.FAIL_TO_PASS.failure == ["tests/test_calc.py::test_add"]
    assert r.handoff_state == "needs_completion"
    assert ">>>>> Tests Timed Out" in Path(r.log_path).read_text()
    assert _processes_with(token) == []  # the grandchild "sleep" died with the group


def test_predictions_resume_and_unknown_instance(calc_task, tmp_path):
    from takeover.errors import InputError

    task, source = calc_task
    preds = [{"instance_id": "acme__calc-1", "model_name_or_path": "m/1", "model_patch": DOES_NOT_APPLY}]
    first = grade_predictions([task], preds, repo_source=source, log_dir=tmp_path / "logs")
    saved = tmp_path / "logs" / "m__1" / "acme__calc-1" / "result.json"
    assert saved.exists() and first[0].handoff_state == "invalid"
    mtime = saved.stat().st_mtime_ns
    again = grade_predictions([task], preds, repo_source=source, log_dir=tmp_path / "logs")
    assert saved.stat().st_mtime_ns == mtime  # reused, not re-graded
    told = {"reused", "reuse_note"}  # only what the output says about the reuse differs
    assert again[0].reused and again[0].model_dump(exclude=told) == first[0].model_dump(exclude=told)
    with pytest.raises(InputError, match="acme__calc-9"):
        grade_predictions([task], [{"instance_id": "acme__calc-9", "model_patch": ""}], repo_source=source)


def test_cli_grade_json_and_docker_without_daemon(calc_task, tmp_path):
    import typer

    from takeover.cli import grade as grade_cli

    # only this command's module: the test must not depend on other commands' import-time state
    app = typer.Typer()
    app.callback()(lambda: None)
    grade_cli.register(app)
    task, _ = calc_task
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(json.dumps(task) + "\n")
    patch = tmp_path / "p.diff"
    patch.write_text(DOES_NOT_APPLY)
    runner = CliRunner()
    res = runner.invoke(app, ["grade", "--dataset", str(dataset), "--instance-id", "acme__calc-1", "--patch", str(patch),
                              "--mirror", str(tmp_path / "mirror"), "--offline", "--json",
                              "--out-dir", str(tmp_path / "logs")])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["handoff_state"] == "invalid" and out["resolved"] is False
    assert set(out) >= {"instance_id", "FAIL_TO_PASS", "PASS_TO_PASS", "backend", "env_seconds", "test_seconds",
                        "log_path"}
    # No daemon listens on this socket, whether or not this machine runs one.
    res = runner.invoke(app, ["grade", "--dataset", str(dataset), "--instance-id", "acme__calc-1", "--empty",
                              "--backend", "docker", "--mirror", str(tmp_path / "mirror"),
                              "--out-dir", str(tmp_path / "docker-logs")],
                        env={"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"})
    assert res.exit_code == 2
    assert "no Docker daemon answers" in res.output and "--backend local" in res.output


def test_unbuildable_environment_is_reported_and_other_tasks_go_on(calc_task, tmp_path):
    task, source = calc_task
    old = {**task, "instance_id": "acme__calc-2", "takeover_env_spec": {**SPEC, "python": "2.5"}}
    results = grade_predictions([task, old], [{"instance_id": "acme__calc-2", "model_patch": GOLD}, {"instance_id": "acme__calc-1", "model_patch": GOLD}], grading=GradingSettings(timeout=120), repo_source=source, log_dir=tmp_path / "logs")
    broken, fine = results
    assert broken.error is not None and "no Python 2.5" in broken.error and "pyenv install 2.5" in broken.error
    assert broken.handoff_state is None and not broken.resolved
    assert fine.error is None and fine.resolved


def test_handoff_state_of_a_checkpoint_patch(calc_task, tmp_path):
    from takeover.errors import EnvironmentUnavailable
    from takeover.grading import grade_handoff_state
    from takeover.sources.tasks import SourceTask

    task, source = calc_task
    assert grade_handoff_state(SourceTask.model_validate(task), BREAKS_MUL, repo_source=source,
                               log_dir=tmp_path / "logs") == "broke_existing"
    unbuildable = SourceTask.model_validate({**task, "takeover_env_spec": {**SPEC, "python": "2.5"}})
    with pytest.raises(EnvironmentUnavailable, match="did not finish: environment: no Python 2.5"):
        grade_handoff_state(unbuildable, GOLD, repo_source=source, log_dir=tmp_path / "logs2")


# The specification's pre_install steps edit tracked files (a sed pin, as for sphinx-doc/sphinx 3.x); the
# order file says whether they ran before the candidate patch (which adds fix.py).
PRE_INSTALL = ["sed -i 's/lib/lib<=1.0/' deps.txt",
               "if [ -e fix.py ]; then echo after > order.txt; else echo before > order.txt; fi"]
SETUP_TESTS = "def test_true():\n    assert True\n"
SETUP_TEST_PATCH = """diff --git a/tests/test_setup.py b/tests/test_setup.py
--- a/tests/test_setup.py
+++ b/tests/test_setup.py
@@ -1,2 +1,10 @@
 def test_true():
     assert True
+
+
+def test_fixed_in_the_starting_state():
+    from pathlib import Path
+    import fix
+    assert fix.FIXED
+    assert Path('deps.txt').read_text() == 'lib<=1.0\\n'
+    assert Path('order.txt').read_text() == 'before\\n'
"""
FIX_ONLY = """diff --git a/fix.py b/fix.py
new file mode 100644
--- /dev/null
+++ b/fix.py
@@ -0,0 +1 @@
+FIXED = True
"""
# The same fix made in an image that left the setup's edits in the working tree: the submission carries them.
FIX_WITH_SETUP_EDITS = FIX_ONLY + """diff --git a/deps.txt b/deps.txt
--- a/deps.txt
+++ b/deps.txt
@@ -1 +1 @@
-lib
+lib<=1.0
diff --git a/order.txt b/order.txt
--- a/order.txt
+++ b/order.txt
@@ -1 +1 @@
-unknown
+before
"""


@pytest.mark.parametrize("patch", [FIX_ONLY, FIX_WITH_SETUP_EDITS], ids=["committed", "working_tree"])
def test_pre_install_steps_run_before_the_candidate_patch_and_never_twice(patch, tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    mirror = tmp_path / "mirror"
    _, sha = make_repo(tmp_path / "src" / "setup", {"deps.txt": "lib\n", "order.txt": "unknown\n",
                                                    "tests/test_setup.py": SETUP_TESTS, "conftest.py": ""},
                       bare_mirror=mirror / "acme__setup.git")
    task = {
        "instance_id": "acme__setup-1", "repo": "acme/setup", "base_commit": sha, "problem_statement": "fix",
        "version": "0.1", "patch": FIX_ONLY, "test_patch": SETUP_TEST_PATCH,
        "FAIL_TO_PASS": ["tests/test_setup.py::test_fixed_in_the_starting_state"],
        "PASS_TO_PASS": ["tests/test_setup.py::test_true"],
        "takeover_env_spec": {**SPEC, "pre_install": PRE_INSTALL},
    }
    result = grade(task, patch, grading=GradingSettings(timeout=120), repo_source=RepoSource(mirror, offline=True), log_dir=tmp_path / "logs")
    assert result.error is None, result.error
    assert result.FAIL_TO_PASS.success == ["tests/test_setup.py::test_fixed_in_the_starting_state"]
    assert result.resolved
    assert result.setup_commit == sha and result.setup_commit_source == "base_commit"
    assert result.summary()["setup_commit"] == sha
    log = (tmp_path / "logs" / "takeover" / "acme__setup-1" / "run_instance.log").read_text()
    assert log.index("environment setup steps (2) change deps.txt, order.txt") < log.index("candidate patch:")


def test_an_environment_this_host_cannot_build_is_said_before_the_repository_is_cloned(calc_task, tmp_path):
    task, _ = calc_task
    nowhere = RepoSource(tmp_path / "empty-mirror", offline=True)  # cloning would fail: no repository there
    old = {**task, "takeover_env_spec": {**SPEC, "python": "2.5"}}
    result = grade(old, GOLD, grading=GradingSettings(timeout=120), repo_source=nowhere, log_dir=tmp_path / "logs")
    assert result.error is not None and "cannot be built on this host" in result.error
    assert "--backend docker" in result.error and "not in the mirror" not in result.error
    log = (tmp_path / "logs" / "takeover" / "acme__calc-1" / "run_instance.log").read_text()
    assert "candidate patch" not in log
