"""``takeover points`` and ``takeover checkpoint`` flags on small repositories built here: the replay's
limits (--replay-timeout, its old spelling --timeout, --memory-mb), recorded snapshots read from
--snapshot-repo, the record of a file of several runs (--record), a checkpoint without its workspace,
and its graded handoff state (--state) (docs/protocol.md sections 4-6)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import make_repo
from test_agents import FIX, bash, settings
from test_checkpoints import SUBMIT, _final_patch, mirror  # noqa: F401  (mirror is a fixture)
from test_grading import CALC, GOLD, SPEC, TEST_PATCH, TESTS
from typer.testing import CliRunner

from takeover.agents.runs import run_predecessor
from takeover.cli import app
from takeover.points import analyze_run
from takeover.replay_settings import ReplaySettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.testing.scripted_server import ScriptedServer
from takeover.trajectories import read_trajectory

RETURN_2 = {"pkg/mod.py": "def f():\n    return 2\n"}


def write_run(path: Path, instance_id: str, steps: list[tuple[str, str, int]], final_patch: str) -> Path:
    """A mini-swe-agent 1.x trajectory file: each step is (command, output, exit code), then the submission."""
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "<pr_description>x</pr_description>"}]
    for command, output, code in [*steps, (SUBMIT, final_patch, None)]:
        messages.append({"role": "assistant", "content": f"THOUGHT: go\n\n```bash\n{command}\n```"})
        body = output if code is None else f"<returncode>{code}</returncode>\n<output>\n{output}\n</output>"
        messages.append({"role": "user", "content": body})
    path.write_text(json.dumps({
        "instance_id": instance_id, "trajectory_format": "mini-swe-agent-1", "messages": messages,
        "info": {"exit_status": "Submitted", "submission": final_patch, "mini_version": "1.15.0",
                 "config": {"environment": {"cwd": "/testbed"}}}}))
    return path


def points_json(*args: str) -> dict:
    result = CliRunner().invoke(app, ["points", *args, "--json"])
    assert result.exit_code == 0, result.output
    (row,) = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return row


def test_replay_limits_timeout_and_memory_mb_decide_whether_the_edit_happens(mirror, tmp_path):  # noqa: F811
    mirror_dir, task = mirror
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    final = _final_patch(tmp_path, RETURN_2)
    write = "open('pkg/mod.py', 'w').write('def f():\\n    return 2\\n')"
    slow = write_run(tmp_path / "slow.json", task.instance_id, [(f"sleep 3 && python3 -c \"{write}\"", "", 0)], final)
    hungry = write_run(tmp_path / "hungry.json", task.instance_id,
                       [(f"python3 -c \"b = bytearray(400 << 20); {write}\"", "", 0)], final)
    common = ["--dataset", str(dataset), "--mirror", str(mirror_dir), "--offline", "--no-environment"]

    # The command is killed after 1 s, before its edit: the replay no longer reproduces the final patch.
    cut = points_json(str(slow), *common, "--replay-timeout", "1")
    assert cut["replay"]["verified"] is False and cut["points"] == []
    assert points_json(str(slow), *common, "--replay-timeout", "120")["replay"]["verified"] is True
    # The Python keyword means the same.
    earlier = analyze_run(read_trajectory(slow), SourceTask.model_validate(task.model_dump()), RepoSource(mirror_dir, offline=True), replay=ReplaySettings(use_environment=False, timeout=1))
    assert earlier.replay.verified is False

    starved = points_json(str(hungry), *common, "--memory-mb", "100")
    assert starved["replay"]["verified"] is False and starved["points"] == []
    fed = points_json(str(hungry), *common, "--memory-mb", "2000")
    assert fed["replay"]["verified"] is True
    assert [p["type"] for p in fed["points"]] == ["after_first_source_edit"]


def moved_run(tmp_path: Path, task: SourceTask, mirror_dir: Path) -> tuple[Path, Path]:
    """A run of takeover's own agent on ``task`` (its fix, then submit) in ``tmp_path/run``, whose workspace
    then moves to ``tmp_path/elsewhere`` (the run folder still names the old place), and the task's dataset
    file: ``(moved workspace, dataset)``."""
    with ScriptedServer([bash(FIX), bash("git diff > patch.txt && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT "
                                          "&& cat patch.txt")]) as srv:
        record = run_predecessor(task, settings(srv), tmp_path / "run", repo_source=RepoSource(mirror_dir))
    assert record.finished
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    moved = tmp_path / "elsewhere"
    shutil.move(record.workspace, moved)
    return moved, dataset


def test_snapshot_repo_reads_the_recorded_snapshots_of_a_moved_run(tmp_path, task_and_mirror):
    moved, dataset = moved_run(tmp_path, *task_and_mirror)
    common = [str(tmp_path / "run"), "--dataset", str(dataset), "--offline", "--mirror", str(tmp_path / "empty")]
    lost = CliRunner().invoke(app, ["points", *common, "--json"])
    assert lost.exit_code == 1 and "skipped" in lost.stderr
    row = points_json(*common, "--snapshot-repo", str(moved))
    replay = {key: row["replay"][key] for key in ("verified", "method", "first_mismatch", "reason")}
    assert replay == {"verified": True, "method": "recorded_snapshot", "first_mismatch": None, "reason": None}
    assert [(p["type"], p["changed_source_files"]) for p in row["points"]] == [("after_first_source_edit", ["calc.py"])]

    out = tmp_path / "cp"
    result = CliRunner().invoke(app, ["checkpoint", *common, "--point-type", "after_first_source_edit",
                                      "--out-dir", str(out), "--snapshot-repo", str(moved), "--no-workspace"])
    assert result.exit_code == 0, result.output
    saved = json.loads((out / "checkpoint.json").read_text())
    assert saved["method"] == "recorded_snapshot" and saved["files"] == ["calc.py"]
    assert "+    return a + b" in (out / "checkpoint.patch").read_text()


def test_checkpoint_record_timeout_workspace_and_state(tmp_path, monkeypatch):
    """The calculator task: --record picks a run of the file (0, the only one; 1 is refused), --no-workspace
    writes only checkpoint.json and checkpoint.patch, --state grades the checkpoint (docs/protocol.md
    section 6), --replay-timeout bounds each replayed command."""
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    mirror_dir = tmp_path / "mirror"
    _, sha = make_repo(tmp_path / "src" / "calc", {"calc.py": CALC, "tests/test_calc.py": TESTS, "conftest.py": ""},
                       bare_mirror=mirror_dir / "acme__calc.git")
    task = {"instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": sha, "problem_statement": "add subtracts",
            "version": "0.1", "patch": GOLD, "test_patch": TEST_PATCH, "FAIL_TO_PASS": ["tests/test_calc.py::test_add"],
            "PASS_TO_PASS": ["tests/test_calc.py::test_mul"], "takeover_env_spec": SPEC}
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(json.dumps(task) + "\n")
    run = write_run(tmp_path / "run.json", "acme__calc-1", [(FIX, "", 0)], GOLD)
    common = [str(run), "--dataset", str(dataset), "--mirror", str(mirror_dir), "--offline",
              "--point-type", "after_first_source_edit", "--replay-timeout", "60"]

    out = tmp_path / "cp"
    result = CliRunner().invoke(app, ["checkpoint", *common, "--record", "0", "--out-dir", str(out), "--no-workspace",
                                      "--state"])
    assert result.exit_code == 0, result.output
    saved = json.loads((out / "checkpoint.json").read_text())
    assert GOLD.split("@@ -1,5 +1,5 @@")[1] in (out / "checkpoint.patch").read_text()
    assert not (out / "workspace").exists() and saved["workspace"] is None
    assert saved["handoff_state"] == "resolved_preserve" and "handoff state: resolved_preserve" in result.stdout

    with_workspace = tmp_path / "cp-ws"
    result = CliRunner().invoke(app, ["checkpoint", *common, "--out-dir", str(with_workspace), "--workspace"])
    assert result.exit_code == 0, result.output
    assert (with_workspace / "workspace" / "calc.py").read_text() == CALC.replace("a - b", "a + b")
    assert json.loads((with_workspace / "checkpoint.json").read_text())["handoff_state"] is None  # not graded

    missing = CliRunner().invoke(app, ["checkpoint", *common[:-2], "--replay-timeout", "60", "--record", "1", "--out-dir",
                                       str(tmp_path / "none")])
    assert missing.exit_code == 2 and "has no run 1 (it holds 1)" in missing.stderr


@pytest.mark.parametrize(("flag", "bound"), [(("--replay-timeout", "0"), "greater than 0"),
                                             (("--memory-mb", "63"), "greater than or equal to 64")])
def test_limits_that_no_command_could_meet_are_refused(flag, bound, tmp_path):
    """The replay record's bounds (takeover.replay_settings.ReplaySettings), refused before any work, the flag
    named."""
    result = CliRunner().invoke(app, ["points", str(tmp_path / "runs"), "--dataset", str(tmp_path / "d.jsonl"), *flag])
    assert (result.exit_code, result.stderr) == (2, f"error: {flag[0]}: Input should be {bound}\n")


@pytest.mark.parametrize(("flag", "bound"), [(("--raw-trace-max-chars", "0"), "greater than or equal to 1"),
                                             (("--raw-trace-max-tokens", "-5"), "greater than or equal to 1"),
                                             (("--note-max-tokens", "63"), "greater than or equal to 64"),
                                             (("--timeout", "0"), "greater than 0")])
def test_handoff_refuses_budgets_and_limits_below_their_records_bounds(flag, bound, tmp_path):
    """The view budgets' and the model settings' bounds, the records' own (the request flags are checked even
    without --model), refused before the session is read."""
    result = CliRunner().invoke(app, ["handoff", str(tmp_path / "session.jsonl"), *flag])
    assert (result.exit_code, result.stderr) == (2, f"error: {flag[0]}: Input should be {bound}\n")
