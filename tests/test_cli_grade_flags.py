"""``takeover grade`` flags on the calculator task built in test_grading.py: each flag changes what is
graded or how, and the JSON line (or the log) shows it (docs/protocol.md section 6)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from prerequisites import requires
from test_grading import BREAKS_MUL, GOLD, SPEC, _hang_patch, calc_task  # noqa: F401  (calc_task is a fixture)
from typer.testing import CliRunner

from takeover.cli import app

#: The gold fix, and a conftest.py that makes pytest exit with status 1 although every test passes.
EXIT_1_AFTER_PASSING = GOLD + """diff --git a/conftest.py b/conftest.py
--- a/conftest.py
+++ b/conftest.py
@@ -0,0 +1,2 @@
+def pytest_sessionfinish(session, exitstatus):
+    session.exitstatus = 1
"""


def grade_cli(tmp_path: Path, task: dict, *args: str, logs: str = "logs") -> list[dict]:
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(json.dumps(task) + "\n")
    result = CliRunner().invoke(app, ["grade", "--dataset", str(dataset), "--mirror", str(tmp_path / "mirror"),
                                      "--offline", "--json", "--out-dir", str(tmp_path / logs), *args])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def test_gold_grades_the_reference_patch_and_predictions_grade_each_line(calc_task, tmp_path):  # noqa: F811
    task, _ = calc_task
    (gold,) = grade_cli(tmp_path, task, "--instance-id", "acme__calc-1", "--gold")
    assert (gold["resolved"], gold["handoff_state"]) == (True, "resolved_preserve")
    assert "/gold/acme__calc-1/" in gold["log_path"]

    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(json.dumps({"instance_id": "acme__calc-1", "model_name_or_path": "mine",
                                       "model_patch": BREAKS_MUL}) + "\n")
    (mine,) = grade_cli(tmp_path, task, "--predictions", str(predictions))
    assert (mine["resolved"], mine["handoff_state"]) == (False, "broke_existing")
    assert mine["PASS_TO_PASS"]["failure"] == ["tests/test_calc.py::test_mul"]
    assert "/mine/acme__calc-1/" in mine["log_path"]


def test_predictions_for_an_unknown_instance_are_refused_before_anything_is_graded(calc_task, tmp_path):  # noqa: F811
    task, _ = calc_task
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(json.dumps(task) + "\n")
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text("".join(json.dumps({"instance_id": iid, "model_name_or_path": "mine", "model_patch": ""})
                                   + "\n" for iid in ("acme__calc-1", "x__y-1")))
    result = CliRunner().invoke(app, ["grade", "--dataset", str(dataset), "--mirror", str(tmp_path / "mirror"),
                                      "--offline", "--out-dir", str(tmp_path / "logs"), "--predictions",
                                      str(predictions)])
    assert result.exit_code == 2
    assert f"{predictions}: line 2: field 'instance_id': instance 'x__y-1' is not in the dataset" in (
        " ".join(result.stderr.split()))
    assert not (tmp_path / "logs").exists()  # the first line was not graded


def test_a_grading_error_shows_no_test_counts(calc_task, tmp_path):  # noqa: F811
    task, _ = calc_task
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(json.dumps(task) + "\n")
    (tmp_path / "empty-mirror").mkdir()
    result = CliRunner().invoke(app, ["grade", "--dataset", str(dataset), "--mirror", str(tmp_path / "empty-mirror"),
                                      "--offline", "--out-dir", str(tmp_path / "logs"), "--instance-id", "acme__calc-1",
                                      "--gold"])
    (row,) = [line for line in result.stdout.splitlines() if line.startswith("│ acme__calc-1")]
    assert [cell.strip() for cell in row.strip("│ ").split("│")][2:5] == ["error", "-", "-"]


def test_grading_timeout_limits_each_test_run(calc_task, tmp_path):  # noqa: F811
    task, _ = calc_task
    patch = tmp_path / "hang.diff"
    patch.write_text(_hang_patch(f"{uuid.uuid4().int % 10**6 + 10**6}.7"))
    (row,) = grade_cli(tmp_path, task, "--instance-id", "acme__calc-1", "--patch", str(patch), "--grading-timeout", "5")
    assert row["timed_out"] is True and row["handoff_state"] == "needs_completion"
    assert 5 <= row["test_seconds"] < 120


def test_out_dir_and_grading_timeout_reach_the_grading(calc_task, tmp_path):  # noqa: F811
    task, _ = calc_task
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(json.dumps(task) + "\n")
    result = CliRunner().invoke(app, ["grade", "--dataset", str(dataset), "--mirror", str(tmp_path / "mirror"),
                                      "--offline", "--json", "--out-dir", str(tmp_path / "old"), "--grading-timeout=300",
                                      "--instance-id", "acme__calc-1", "--empty"])
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)
    assert row["log_path"].startswith(str(tmp_path / "old" / "empty" / "acme__calc-1"))
    stored = json.loads((tmp_path / "old" / "empty" / "acme__calc-1" / "result.json").read_text())
    assert stored["grading_key"]["timeout"] == 300  # the grading ran under the flag's value


def test_env_spec_file_gives_the_environment_of_a_task_without_one(calc_task, tmp_path):  # noqa: F811
    task, _ = calc_task
    bare = {k: v for k, v in task.items() if k != "takeover_env_spec"}
    spec = tmp_path / "specs.json"
    spec.write_text(json.dumps({"acme/calc": {**SPEC, "test_cmd": "echo SPEC-FROM-FILE && " + SPEC["test_cmd"]}}))
    # The spec file is the local backend's own option (docs/protocol.md section 6).
    (row,) = grade_cli(tmp_path, bare, "--instance-id", "acme__calc-1", "--gold", "--backend-option", f"spec_file={spec}")
    assert row["error"] is None and row["resolved"] is True
    assert "SPEC-FROM-FILE" in Path(row["log_path"]).read_text()


@requires("bubblewrap")  # without the sandbox the tests see the host network either way
def test_network_lets_the_tests_use_the_network(calc_task, tmp_path):  # noqa: F811
    task, _ = calc_task
    (off,) = grade_cli(tmp_path, task, "--instance-id", "acme__calc-1", "--empty", logs="off")
    (on,) = grade_cli(tmp_path, task, "--instance-id", "acme__calc-1", "--empty", "--network", logs="on")
    assert (off["network"], on["network"]) == (False, True)
    log = Path(on["log_path"]).parent / "run_instance.log"
    assert "network for the tests: on" in log.read_text()
    assert "network for the tests: off" in (Path(off["log_path"]).parent / "run_instance.log").read_text()


def test_grading_rules_decide_the_verdict_whichever_swebench_is_installed(calc_task, tmp_path):  # noqa: F811
    """Both rule sets are accepted under swebench 4.1 and 5.0; they disagree on a log whose tests all pass
    while the test command exits with status 1: 4.1 reads the tests, 5.0 rejects the log (docs/protocol.md
    section 6, extension "Grading rules")."""
    task, _ = calc_task
    patch = tmp_path / "exit-1.diff"
    patch.write_text(EXIT_1_AFTER_PASSING)
    verdicts = {}
    for rules in ("swebench-4.1", "swebench-5.0"):
        (row,) = grade_cli(tmp_path, task, "--instance-id", "acme__calc-1", "--patch", str(patch),
                           "--grading-rules", rules, logs=rules)
        assert row["grading_rules"] == rules and row["error"] is None and row["applied"] is True
        stored = json.loads((Path(row["log_path"]).parent / "result.json").read_text())
        assert stored["grading_key"]["grading_rules"] == rules
        verdicts[rules] = (row["resolved"], row["handoff_state"], row["FAIL_TO_PASS"], row["PASS_TO_PASS"])
    assert ">>>>> Test Exit Code: 1" in Path(row["log_path"]).read_text()
    assert verdicts["swebench-4.1"] == (True, "resolved_preserve",
                                        {"success": ["tests/test_calc.py::test_add"], "failure": []},
                                        {"success": ["tests/test_calc.py::test_mul"], "failure": []})
    assert verdicts["swebench-5.0"] == (False, "needs_completion",
                                        {"success": [], "failure": ["tests/test_calc.py::test_add"]},
                                        {"success": [], "failure": ["tests/test_calc.py::test_mul"]})
    dataset = tmp_path / "tasks.jsonl"
    unknown = CliRunner().invoke(app, ["grade", "--dataset", str(dataset), "--mirror", str(tmp_path / "mirror"),
                                       "--offline", "--out-dir", str(tmp_path / "logs"), "--instance-id",
                                       "acme__calc-1", "--gold", "--grading-rules", "swebench-6"])
    assert unknown.exit_code == 2
    assert " ".join(unknown.stderr.split()) == ("error: --grading-rules: unknown grading rules 'swebench-6'; known: "
                                                "swebench-4.1, swebench-5.0")
    assert not (tmp_path / "logs").exists()  # refused before anything was graded
