"""One source per SWE-bench verdict rule (docs/protocol.md section 6, extension "Grading rules"): the verdict
script an exported Harbor task ships (``tests/swebench_verdict.py``) is generated from
``takeover/grading/swebench_rules.py``, the rules grading applies, and gives the verdicts grading gives.

The agreement is checked on test logs under both rule sets: the logs of each rule that changed between swebench
4.1 and 5.0 (tests/test_grading_rules.py), and the logs of real gradings made here by the ``local`` backend, whose
pytest output is what a container's would be. Grading decides under the installed harness's rules with the
harness's own functions, so the script's rendition is checked against swebench itself too."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_repo
from prerequisites import requires, shared
from test_cli_grade_flags import EXIT_1_AFTER_PASSING
from test_grading import CALC, GOLD, SPEC, TEST_PATCH, TESTS
from test_grading_rules import RULE_LOGS, _task

from takeover._util.harness_version import GRADING_RULES
from takeover.grading import grade, grade_log, swebench_rules
from takeover.grading_settings import GradingSettings
from takeover.harbor.task_folder import verdict_files, verdict_script
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask, load_tasks


def test_the_shipped_script_is_generated_from_the_rules_grading_applies():
    script = verdict_script()
    rules = Path(swebench_rules.__file__).read_text()
    body = rules.split('"""', 2)[2].strip()  # the rules without their docstring, as they are
    assert body in script
    entry = (Path(swebench_rules.__file__).parents[1] / "harbor" / "swebench_verdict.py").read_text()
    assert "from takeover.grading.swebench_rules import" in entry  # the entry point imports them; the copy inlines
    # It runs on the system Python of SWE-bench's images (3.6) with the standard library alone.
    ast.parse(script, feature_version=(3, 6))
    imported = {n.names[0].name.split(".")[0] for n in ast.walk(ast.parse(script)) if isinstance(n, ast.Import)}
    imported |= {n.module.split(".")[0] for n in ast.walk(ast.parse(script)) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= {"json", "os", "re", "sys", "swebench"}  # swebench: the parsers shipped beside it


def _shipped_verdict(folder: Path, task: SourceTask, log: str, rules: str) -> dict:
    """The shipped script's report of ``log`` for ``task`` under ``rules``, run as the task's test.sh runs it."""
    tests = folder / rules
    tests.mkdir(parents=True, exist_ok=True)
    for rel, text in verdict_files(task, GradingSettings(grading_rules=rules)).items():
        (tests / rel).parent.mkdir(parents=True, exist_ok=True)
        (tests / rel).write_text(text)
    (tests / "test_output.log").write_text(log)
    subprocess.run([sys.executable, str(tests / "swebench_verdict.py"), str(tests / "config.json"),
                    str(tests / "test_output.log"), str(tests)], check=True, capture_output=True, text=True)
    report = json.loads((tests / "report.json").read_text())[task.instance_id]
    assert (tests / "reward.txt").read_text() == ("1\n" if report["resolved"] else "0\n")
    return report


def _agree(folder: Path, task: SourceTask, log: str) -> list[str]:
    """The rule sets under which the shipped script and grading disagree on ``log`` (none when they agree)."""
    differ = []
    for rules in GRADING_RULES:
        shipped = _shipped_verdict(folder, task, log, rules)
        graded = grade_log(log, task, rules=rules, applied=swebench_rules.APPLY_PATCH_FAIL not in log)
        ours = {"resolved": graded.resolved, "FAIL_TO_PASS": graded.FAIL_TO_PASS.model_dump(),
                "PASS_TO_PASS": graded.PASS_TO_PASS.model_dump()}
        theirs = {"resolved": shipped["resolved"], **shipped["tests_status"]}
        if ours != theirs:
            differ.append(f"{rules}: graded {ours}, shipped {theirs}")
    return differ


@pytest.mark.parametrize("case", sorted(RULE_LOGS))
def test_the_shipped_script_and_grading_agree_on_each_rules_log(case, tmp_path):
    log, fail_to_pass = RULE_LOGS[case]
    assert _agree(tmp_path, _task(fail_to_pass), log) == []


def test_the_shipped_script_and_grading_agree_on_the_logs_of_real_gradings(tmp_path, monkeypatch):
    """The local backend grades the calculator task's patches (the fix, nothing, a broken test, a test command
    exiting 1 after passing tests); the shipped script, given each test log, decides as grading did."""
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    _, sha = make_repo(tmp_path / "src" / "calc", {"calc.py": CALC, "tests/test_calc.py": TESTS, "conftest.py": ""},
                       bare_mirror=tmp_path / "mirror" / "acme__calc.git")
    task = SourceTask.model_validate({
        "instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": sha, "problem_statement": "add subtracts",
        "version": "0.1", "patch": GOLD, "test_patch": TEST_PATCH, "FAIL_TO_PASS": ["tests/test_calc.py::test_add"],
        "PASS_TO_PASS": ["tests/test_calc.py::test_mul"], "takeover_env_spec": SPEC})
    broken = GOLD + ("diff --git a/conftest.py b/conftest.py\n--- a/conftest.py\n+++ b/conftest.py\n@@ -0,0 +1,3 @@\n"
                     "+import calc\n+calc.mul = lambda a, b: 0\n+\n")
    logs = {}
    for name, patch in (("gold", GOLD), ("empty", ""), ("broken", broken), ("exit-1", EXIT_1_AFTER_PASSING)):
        result = grade(task, patch, GradingSettings(timeout=300), log_dir=tmp_path / "grades",
                       repo_source=RepoSource(tmp_path / "mirror", offline=True), model_name_or_path=name)
        assert result.error is None, result.error
        logs[name] = Path(result.log_path).read_text()
    assert "PASSED tests/test_calc.py::test_add" in logs["gold"] and "FAILED" in logs["empty"]
    for name, log in logs.items():
        assert _agree(tmp_path / name, task, log) == [], name


@requires("mirror", counterpart="test_harbor_verdict.py::test_the_shipped_script_and_grading_agree_on_the_logs_of_real_gradings")
@pytest.mark.mirror
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_shipped_script_and_grading_agree_on_a_real_swebench_instances_logs(mirror_dir, tmp_path):
    """The reference and the empty patch of a real SWE-bench Verified instance (pytest's own parser), graded
    by the local backend (its environment cached by the other mirror tests)."""
    task = {t.instance_id: t for t in load_tasks(shared("swebench_verified.jsonl"))}["pytest-dev__pytest-5631"]
    for name, patch in (("gold", task.patch), ("empty", "")):
        result = grade(task, patch, GradingSettings(timeout=900), log_dir=tmp_path / "grades",
                       repo_source=RepoSource(mirror_dir, offline=True), model_name_or_path=name)
        assert result.error is None, result.error
        assert _agree(tmp_path / name, task, Path(result.log_path).read_text()) == [], name
