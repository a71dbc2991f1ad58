"""The test command's environment does not depend on the caller's: the reference patch gets the same report
under a hostile environment (colours forced, pytest options, a narrow terminal, a missing locale) as under
a clean one, on a small repository built here and, with TAKEOVER_MIRROR, on a real instance."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_repo
from prerequisites import requires, shared

from takeover.environments import EnvSpec
from takeover.grading import grade, parse_test_log
from takeover.grading.local.hermetic import (
    FALLBACK_LOCALE,
    FIXED_VARIABLES,
    hermetic_eval_commands,
    hermetic_locale,
    host_has_locale,
)
from takeover.grading_settings import GradingSettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask, load_tasks

HOSTILE = {"PY_COLORS": "1", "FORCE_COLOR": "1", "PYTEST_ADDOPTS": "--color=yes", "COLUMNS": "40",
           "LC_ALL": "xx_XX.UTF-8"}
# Also for the tests only (the small repository has no install step, which runs with the caller's variables).
HOSTILE_TO_TESTS = {**HOSTILE, "PYTHONWARNINGS": "error", "LINES": "3"}
CLEAN_REMOVED = ("PY_COLORS", "FORCE_COLOR", "NO_COLOR", "PYTEST_ADDOPTS", "COLUMNS", "LINES", "LC_ALL",
                 "PYTHONWARNINGS")

CALC = "def add(a, b):\n    return a - b\n"
TESTS = "from calc import add\n\n\ndef test_add_zero():\n    assert add(1, 0) == 1\n"
# The task's tests check what a hermetic run guarantees: the locale exists (setlocale raises for a missing
# one), a non-ASCII file name can be written, the width is fixed and no pytest options leak in.
TEST_PATCH = """diff --git a/tests/test_calc.py b/tests/test_calc.py
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -1,5 +1,20 @@
+import locale
+import os
+import shutil
+
 from calc import add
 
 
 def test_add_zero():
     assert add(1, 0) == 1
+
+
+def test_add():
+    assert add(2, 3) == 5
+
+
+def test_environment(tmp_path):
+    locale.setlocale(locale.LC_ALL, "")
+    (tmp_path / "caf\\u00e9.txt").write_text("ok")
+    assert shutil.get_terminal_size().columns == 80
+    assert "PYTEST_ADDOPTS" not in os.environ and "FORCE_COLOR" not in os.environ
"""
GOLD = """diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""
# The specification asks for en_US.UTF-8 as SWE-bench's Django specifications do.
SPEC = {"python": None, "test_cmd": "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 pytest -rA -p no:cacheprovider",
        "log_parser": "pytest", "eval_commands": ["export LANG=en_US.UTF-8", "export LC_ALL=en_US.UTF-8"]}


@pytest.fixture
def locale_task(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    mirror = tmp_path / "mirror"
    _, sha = make_repo(tmp_path / "src" / "calc", {"calc.py": CALC, "tests/test_calc.py": TESTS, "conftest.py": ""},
                       bare_mirror=mirror / "acme__calc.git")
    task = {
        "instance_id": "acme__calc-7", "repo": "acme/calc", "base_commit": sha, "problem_statement": "add subtracts",
        "version": "0.1", "patch": GOLD, "test_patch": TEST_PATCH,
        "FAIL_TO_PASS": ["tests/test_calc.py::test_add"],
        "PASS_TO_PASS": ["tests/test_calc.py::test_add_zero", "tests/test_calc.py::test_environment"],
        "takeover_env_spec": SPEC,
    }
    return task, RepoSource(mirror, offline=True)


def _report(result) -> dict:
    return json.loads((Path(result.log_path).parent / "report.json").read_text())


def _grade_under(env: dict[str, str | None], monkeypatch, task, patch, **kwargs):
    with monkeypatch.context() as m:
        for name in CLEAN_REMOVED:
            m.delenv(name, raising=False)
        for name, value in env.items():
            m.setenv(name, value)
        return grade(task, patch, **kwargs)


def test_hostile_caller_environment_breaks_a_plain_pytest_run(tmp_path):
    """The hostile environment of these tests really changes what SWE-bench's parser sees."""
    (tmp_path / "test_x.py").write_text("def test_a():\n    assert True\n")
    env = {**os.environ, **HOSTILE}
    out = subprocess.run([sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "test_x.py"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, check=False).stdout
    task = SourceTask(instance_id="a__b-1", repo="a/b", base_commit="0" * 40, problem_statement="")
    status, _ = parse_test_log(f">>>>> Start Test Output\n{out}\n>>>>> End Test Output\n", task, "pytest")
    assert "\x1b[" in out and status == {}  # coloured status words: no test is seen


def test_reference_patch_gets_the_same_report_under_a_hostile_environment(locale_task, tmp_path, monkeypatch):
    task, source = locale_task
    clean = _grade_under({}, monkeypatch, task, GOLD, repo_source=source, log_dir=tmp_path / "clean", grading=GradingSettings(timeout=120))
    hostile = _grade_under(HOSTILE_TO_TESTS, monkeypatch, task, GOLD, repo_source=source,
                           log_dir=tmp_path / "hostile", grading=GradingSettings(timeout=120))
    assert clean.error is None and clean.resolved, Path(clean.log_path).read_text()
    assert sorted(clean.PASS_TO_PASS.success) == sorted(task["PASS_TO_PASS"])
    assert _report(hostile) == _report(clean)
    assert (hostile.FAIL_TO_PASS, hostile.PASS_TO_PASS, hostile.resolved) == (
        clean.FAIL_TO_PASS, clean.PASS_TO_PASS, clean.resolved)
    assert "\x1b[" not in Path(hostile.log_path).read_text()
    # the locale the specification asks for when this machine has it, else the recorded fallback
    fallback = [n for n in hostile.notes if "en_US.UTF-8" in n and FALLBACK_LOCALE in n]
    assert bool(fallback) is (not host_has_locale("en_US.UTF-8"))
    assert hostile.notes == clean.notes
    run_log = (Path(hostile.log_path).parent / "run_instance.log").read_text()
    assert "NO_COLOR=1" in run_log and "COLUMNS=80" in run_log and "PYTEST_ADDOPTS" not in run_log


def test_empty_patch_is_still_graded_as_failing_under_a_hostile_environment(locale_task, tmp_path, monkeypatch):
    task, source = locale_task
    r = _grade_under(HOSTILE_TO_TESTS, monkeypatch, task, "", repo_source=source, log_dir=tmp_path / "logs", grading=GradingSettings(timeout=120))
    assert r.FAIL_TO_PASS.failure == ["tests/test_calc.py::test_add"]
    assert sorted(r.PASS_TO_PASS.success) == sorted(task["PASS_TO_PASS"])
    assert r.handoff_state == "needs_completion"


def test_locale_of_the_specification_is_kept_when_it_exists_and_replaced_when_it_does_not():
    spec = EnvSpec(eval_commands=["export LANG=en_US.UTF-8", "export LC_ALL='en_US.UTF-8'", "export X=1"])
    chosen, note = hermetic_locale(spec)
    if host_has_locale("en_US.UTF-8"):
        assert (chosen, note) == ("en_US.UTF-8", None)
    else:
        assert chosen == FALLBACK_LOCALE and "en_US.UTF-8" in note and "locale-gen" in note
    assert hermetic_locale(EnvSpec(eval_commands=["export LC_ALL=zz_ZZ.UTF-8"]))[0] == FALLBACK_LOCALE
    assert hermetic_locale(EnvSpec(eval_commands=["export LC_ALL=C.UTF-8"])) == ("C.UTF-8", None)
    assert hermetic_locale(EnvSpec()) == (FALLBACK_LOCALE, None)
    assert hermetic_eval_commands(spec.eval_commands, "C.UTF-8") == [
        "export LANG=C.UTF-8", "export LC_ALL=C.UTF-8", "export X=1"]
    assert host_has_locale(FALLBACK_LOCALE)
    assert FIXED_VARIABLES["NO_COLOR"] == "1" and FIXED_VARIABLES["PY_COLORS"] == "0"


@pytest.mark.mirror
@pytest.mark.slow
@requires("mirror", "shared:swebench_verified.jsonl",
          counterpart="test_grading_hermetic.py::test_reference_patch_gets_the_same_report_under_a_hostile_environment")
def test_real_instance_gets_the_same_report_under_a_hostile_environment(mirror_dir, tmp_path, monkeypatch):
    tasks = {t.instance_id: t for t in load_tasks(shared("swebench_verified.jsonl"))}
    task = tasks["pytest-dev__pytest-5631"]
    source = RepoSource(mirror_dir, offline=True)
    clean = _grade_under({}, monkeypatch, task, task.patch, repo_source=source, log_dir=tmp_path / "clean",
                         grading=GradingSettings(timeout=900))
    hostile = _grade_under(HOSTILE, monkeypatch, task, task.patch, repo_source=source, log_dir=tmp_path / "hostile",
                           grading=GradingSettings(timeout=900))
    assert clean.error is None and clean.resolved, clean.error
    assert _report(hostile) == _report(clean)
