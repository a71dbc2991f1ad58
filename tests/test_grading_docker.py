"""The docker backend's harness calls, without a daemon: one run id and model name per graded patch, and a
report read back only when it belongs to that patch. The harness's files are written by swebench's own
``run_instance`` (its report-rewriting path, which needs no container) in SWE-bench's layout
``logs/run_evaluation/<run_id>/<model_name_or_path>/<instance_id>/``, under swebench 4.1 and 5.0."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from takeover._util import harness_version
from takeover.environments.row_grading import harness_test_spec
from takeover.errors import InputError
from takeover.grading import Prediction, grading_key, swebench_rules
from takeover.grading.docker.docker_backend import (
    HARNESS_FILES,
    copy_harness_logs,
    harness_folder,
    harness_prediction,
    harness_run_id,
    read_harness_report,
    result_from_harness,
)
from takeover.grading.docker.harness_run import HARNESS_LOGS, harness_log_root
from takeover.grading_settings import GradingSettings
from takeover.sources.tasks import SourceTask

F2P = "testing/test_x.py::test_new"
P2P = "testing/test_x.py::test_old"
TEST_PATCH = """diff --git a/testing/test_x.py b/testing/test_x.py
--- a/testing/test_x.py
+++ b/testing/test_x.py
@@ -1,2 +1,5 @@
 def test_old():
     pass
+
+def test_new():
+    pass
"""
PATCH_A = "diff --git a/src/x.py b/src/x.py\n--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
PATCH_B = PATCH_A.replace("+a = 2", "+a = 3")


def _task(**changes) -> SourceTask:
    # a SWE-bench (repo, version) whose specification needs no download (pip packages only)
    row = {"instance_id": "pytest-dev__pytest-9999", "repo": "pytest-dev/pytest", "version": "5.0",
           "base_commit": "a" * 40, "environment_setup_commit": "b" * 40, "problem_statement": "x",
           "test_patch": TEST_PATCH, "FAIL_TO_PASS": [F2P], "PASS_TO_PASS": [P2P]}
    return SourceTask.model_validate({**row, **changes})


def _key(task: SourceTask, patch: str):
    return grading_key(task, patch, GradingSettings(backend="docker", network=True, timeout=1800))


def _log(passed: list[str], failed: list[str]) -> str:
    lines = [f"PASSED {t}" for t in passed] + [f"FAILED {t} - assert 0" for t in failed]
    return ">>>>> Start Test Output\n" + "\n".join(lines) + "\n>>>>> End Test Output\n"


def _harness_writes(tmp_path: Path, monkeypatch, task: SourceTask, prediction: Prediction, test_log: str) -> Path:
    """What the harness leaves after a finished run: patch.diff and test_output.txt as run_instance writes
    them, then report.json written by swebench's run_instance itself; returns the instance folder."""
    monkeypatch.chdir(tmp_path)  # nothing may land here: the harness writes inside the grading's folder
    key = _key(task, prediction.model_patch)
    run_id, pred = harness_run_id(key), harness_prediction(prediction, key)
    folder = harness_folder(run_id, pred, root=tmp_path / "grading" / HARNESS_LOGS)
    folder.mkdir(parents=True)
    (folder / "patch.diff").write_text(pred["model_patch"] or "")
    (folder / "test_output.txt").write_text(test_log)
    (folder / "run_instance.log").write_text("Test runtime: 12.50 seconds\n")
    spec, _fields = harness_test_spec(task)
    with harness_log_root(tmp_path / "grading" / HARNESS_LOGS):
        harness_version.run_instance(spec, pred, client=None, run_id=run_id, timeout=None, rewrite_reports=True)
    assert (folder / "report.json").is_file() and not (tmp_path / "logs").exists()
    return folder.resolve()


def test_every_grading_gets_its_own_run_id_and_every_patch_its_own_model_name():
    task = _task()
    a, b = _key(task, PATCH_A), _key(task, PATCH_B)
    # Two gradings of one key at once (a task's reference patch beside each checkpoint, two studies on one
    # daemon) never share the harness's container name or log folder; the run id still names the key.
    first, second = harness_run_id(a), harness_run_id(_key(task, PATCH_A))
    assert first != second and first.startswith(f"takeover-{a.digest[:12]}-") and second.startswith(first[:22])
    others = [b, _key(_task(FAIL_TO_PASS=[F2P, P2P]), PATCH_A), _key(_task(instance_id="pytest-dev__pytest-9998"),
              PATCH_A), a.model_copy(update={"swebench": "0.0.1"}), a.model_copy(update={"takeover": "0.0.1"})]
    assert len({k.digest[:12] for k in [a, *others]}) == 6
    assert re.fullmatch(r"[a-zA-Z0-9][a-zA-Z0-9_.-]+", harness_run_id(a))  # part of a container name
    pred = Prediction(instance_id=task.instance_id, model_name_or_path="org/model", model_patch=PATCH_A)
    pa, pb = harness_prediction(pred, a), harness_prediction(pred.model_copy(update={"model_patch": PATCH_B}), b)
    assert pa["model_name_or_path"] != pb["model_name_or_path"]
    assert pa["model_name_or_path"].startswith("org/model.") and pa["model_patch"] == PATCH_A
    assert harness_folder(first, pa) == (
        harness_version.run_evaluation_log_dir() / first / pa["model_name_or_path"].replace("/", "__") / task.instance_id)


def test_the_harness_writes_its_logs_inside_the_folder_given_and_then_where_it_did(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = harness_version.run_evaluation_log_dir()
    from swebench.harness import run_evaluation

    with harness_log_root(tmp_path / "grading" / HARNESS_LOGS) as root:
        assert root == (tmp_path / "grading" / "run_evaluation").resolve()
        assert run_evaluation.RUN_EVALUATION_LOG_DIR == root  # what run_instance reads when it runs
    assert run_evaluation.RUN_EVALUATION_LOG_DIR == before


def test_report_written_by_the_harness_is_read_back_for_its_patch(tmp_path, monkeypatch):
    task = _task()
    pred = Prediction(instance_id=task.instance_id, model_name_or_path="m", model_patch=PATCH_A)
    folder = _harness_writes(tmp_path, monkeypatch, task, pred, _log([F2P, P2P], []))
    result = result_from_harness(folder, task, pred, timeout=1800)
    assert result.error is None and result.applied and result.resolved
    assert result.FAIL_TO_PASS.success == [F2P] and result.PASS_TO_PASS.success == [P2P]
    assert result.handoff_state == "resolved_preserve" and result.backend == "docker"
    assert result.test_seconds == 12.5  # the harness's own "Test runtime"
    entry = read_harness_report(folder, task.instance_id, PATCH_A)
    assert entry["resolved"] is True

    logs = tmp_path / "takeover-logs" / "m" / task.instance_id
    copy_harness_logs(folder, logs)
    assert {p.name for p in logs.iterdir()} == {"patch.diff", "test_output.txt", "report.json", "run_instance.log"}
    assert set(HARNESS_FILES) >= {p.name for p in logs.iterdir()}


def test_report_of_another_patch_is_refused(tmp_path, monkeypatch):
    task = _task()
    first = Prediction(instance_id=task.instance_id, model_name_or_path="m", model_patch=PATCH_A)
    folder = _harness_writes(tmp_path, monkeypatch, task, first, _log([F2P, P2P], []))
    with pytest.raises(InputError, match="another patch") as err:
        read_harness_report(folder, task.instance_id, PATCH_B)
    assert "patch.diff" in str(err.value) and task.instance_id in str(err.value)
    with pytest.raises(InputError, match="another patch"):
        result_from_harness(folder, task, first.model_copy(update={"model_patch": ""}), timeout=1800)
    (folder / "patch.diff").unlink()
    with pytest.raises(InputError, match="no patch.diff"):
        read_harness_report(folder, task.instance_id, PATCH_A)


def test_report_about_another_instance_is_refused(tmp_path, monkeypatch):
    task = _task()
    pred = Prediction(instance_id=task.instance_id, model_name_or_path="m", model_patch=PATCH_A)
    folder = _harness_writes(tmp_path, monkeypatch, task, pred, _log([F2P], [P2P]))
    report = json.loads((folder / "report.json").read_text())
    (folder / "report.json").write_text(json.dumps({"other__repo-1": report[task.instance_id]}))
    with pytest.raises(InputError, match="no report entry"):
        read_harness_report(folder, task.instance_id, PATCH_A)


def test_failing_tests_a_patch_that_does_not_apply_and_a_time_out(tmp_path, monkeypatch):
    APPLY_PATCH_FAIL = swebench_rules.APPLY_PATCH_FAIL

    task = _task()
    pred = Prediction(instance_id=task.instance_id, model_name_or_path="m", model_patch=PATCH_A)
    folder = _harness_writes(tmp_path, monkeypatch, task, pred, _log([F2P], [P2P]))
    broke = result_from_harness(folder, task, pred, timeout=1800)
    assert not broke.resolved and broke.PASS_TO_PASS.failure == [P2P] and broke.handoff_state == "broke_existing"

    # run_instance stops before the tests: no report, the reason in run_instance.log
    (folder / "report.json").unlink()
    (folder / "test_output.txt").unlink()
    (folder / "run_instance.log").write_text(f"{APPLY_PATCH_FAIL}:\nerror: patch failed: src/x.py:1\n")
    invalid = result_from_harness(folder, task, pred, timeout=1800)
    assert not invalid.applied and "src/x.py" in invalid.apply_error and invalid.handoff_state == "invalid"

    (folder / "run_instance.log").write_text("Test runtime: 60.00 seconds\n")
    (folder / "test_output.txt").write_text(_log([F2P], []) + "\n\nTimeout error: 60 seconds exceeded.")
    late = result_from_harness(folder, task, pred, timeout=60)
    assert late.timed_out and not late.resolved and late.FAIL_TO_PASS.failure == [F2P]
    assert late.handoff_state == "needs_completion"

    (folder / "test_output.txt").unlink()
    (folder / "run_instance.log").write_text("Error in evaluating model: container died\n")
    failed = result_from_harness(folder, task, pred, timeout=60)
    assert failed.error is not None and "no report" in failed.error and failed.handoff_state is None
