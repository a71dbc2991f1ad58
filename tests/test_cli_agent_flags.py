"""``takeover agent run`` flags on the calculator task (conftest.py): each run limit ends the run with its own
exit status (docs/protocol.md section 8), the prompt file, temperature and action protocol reach the model
requests, the model request settings (--timeout, --retries, --max-retry-wait) govern each call's attempts,
a command over --command-timeout is killed, and --backend docker needs a Docker daemon."""

from __future__ import annotations

import json

import pytest
from test_cli_flag_shapes import plain
from test_cli_handoff_flags import bash
from typer.testing import CliRunner

from takeover.cli import app
from takeover.testing.scripted_server import ScriptedServer

LIMITS = {
    "time_limit": (["--wall-time-limit-seconds", "3"], [{**bash("ls"), "delay": 4}, bash("ls")], "scripted", 1),
    "token_limit": (["--prompt-token-limit", "1"], [bash("ls")] * 2, "scripted", 1),
    "cost_limit": (["--cost-limit", "1e-9"], [bash("ls")] * 2, "gpt-4o", 1),
    "format_errors": (["--max-consecutive-format-errors", "2"], [{"content": "no action here"}] * 3, "scripted", 2),
}


def agent_run(tmp_path, task, mirror, srv: ScriptedServer, *flags: str, model: str = "scripted"):
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    return CliRunner().invoke(app, [
        "agent", "run", "--dataset", str(dataset), "--instance-id", task.instance_id, "--model", model,
        "--base-url", srv.base_url, "--api-key-env", "", "--mirror", str(mirror), "--offline",
        "--out-dir", str(tmp_path / "run"), *flags])


@pytest.mark.parametrize("status", list(LIMITS))
def test_each_limit_flag_ends_the_run_with_its_status(tmp_path, task_and_mirror, status):
    flags, script, model, calls = LIMITS[status]
    with ScriptedServer(script) as srv:
        result = agent_run(tmp_path, *task_and_mirror, srv, *flags, model=model)
    assert result.exit_code == 0, result.output
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (run["exit_status"], run["accounting"]["llm_calls"]) == (status, calls)


def test_prompt_file_temperature_tool_protocol_and_command_timeout(tmp_path, task_and_mirror):
    prompt = tmp_path / "prompt.md"
    prompt.write_text("PROMPT FROM A FILE: make add() add.\n")
    script = [{"content": "", "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30; echo late"}}]},
              {"content": "", "tool_calls": [{"name": "bash",
                                              "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}}]}]
    with ScriptedServer(script) as srv:
        result = agent_run(tmp_path, *task_and_mirror, srv, "--prompt-file", str(prompt), "--temperature", "0.7",
                           "--protocol", "tools", "--command-timeout", "2")
        first = srv.requests[0]
    assert result.exit_code == 0, result.output
    assert "PROMPT FROM A FILE: make add() add." in first["messages"][1]["content"]
    assert first["temperature"] == 0.7 and first["tools"][0]["function"]["name"] == "bash"
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["exit_status"] == "submitted" and run["protocol"] == "tools"
    assert run["limits"]["command_timeout"] == 2
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    slept = next(e for e in events if e["kind"] == "observation")
    assert "late" not in slept["text"] and "timed out" in slept["text"]


def test_docker_backend_needs_a_daemon(tmp_path, task_and_mirror):
    with ScriptedServer([bash("ls")]) as srv:
        dataset = tmp_path / "tasks.jsonl"
        task, mirror = task_and_mirror
        dataset.write_text(task.model_dump_json() + "\n")
        # No daemon listens on this socket, whether or not this machine runs one.
        result = CliRunner().invoke(app, [
            "agent", "run", "--dataset", str(dataset), "--instance-id", task.instance_id, "--model", "scripted",
            "--base-url", srv.base_url, "--api-key-env", "", "--mirror", str(mirror), "--offline",
            "--out-dir", str(tmp_path / "run"), "--command-backend", "docker"],
            env={"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"})
        assert srv.served == 0
    # One line on stderr and exit status 2 (takeover.cli.failure), as at the console script.
    assert result.exit_code == 2 and result.stderr.startswith("error: ") and "Docker daemon" in result.stderr


def test_model_request_flags_govern_each_calls_attempts(tmp_path, task_and_mirror):
    script = [{"status": 429, "error": "slow down", "retry_after": 30}, {**bash("ls"), "delay": 60},
              bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")]
    with ScriptedServer(script) as srv:
        result = agent_run(tmp_path, *task_and_mirror, srv, "--timeout", "3", "--retries", "2",
                           "--max-retry-wait", "0.01")
    assert result.exit_code == 0, result.output
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (run["model"]["timeout"], run["model"]["retries"], run["model"]["max_retry_wait"]) == (3, 2, 0.01)
    first = json.loads((tmp_path / "run" / "calls.jsonl").read_text().splitlines()[0])
    assert [a["status"] for a in first["attempts"]] == ["http_429", "timeout", "ok"]
    assert first["attempts"][0]["retry_after"] == 30 and first["attempts"][0]["wait_seconds"] <= 0.01
    assert first["attempts"][1]["seconds"] >= 3


def test_a_takeover_run_takes_one_known_view(tmp_path):
    common = ["agent", "run", "--dataset", str(tmp_path / "d.jsonl"), "--instance-id", "a__b-1", "--model", "m",
              "--out-dir", str(tmp_path / "run"), "--checkpoint-dir", str(tmp_path / "cp")]
    two = CliRunner().invoke(app, [*common, "--view", "raw_trace", "--view", "repo_only"])
    assert two.exit_code == 2 and "agent run takes one view; got 2" in plain(two.output)
    unknown = CliRunner().invoke(app, [*common, "--view", "diary"])
    assert unknown.exit_code == 2
    assert ("unknown view 'diary'; the views are repo_only, raw_trace, summary_notes, structured_notes"
            in plain(unknown.output))
