"""``takeover agent run`` against each reply shape real endpoints send (scripted server, small git repo):
reasoning only, inline thinking, a reply cut at the cap, 429 with Retry-After (seconds and date), a prompt
count of 0, cached and reasoning token details, a dropped connection. Each run's record is read back:
exit status, calls, attempts with their waits, and the usage in run.json and calls.jsonl
(docs/protocol.md section 8: exact usage on every call)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_agents import bash, events_of

from takeover.llm import REASONING_ONLY
from takeover.testing.scripted_server import ScriptedServer

CAP = 0.2  # --max-retry-wait: the longest wait between attempts, so no test sleeps for seconds


def run_cli(tmp_path: Path, task, mirror: Path, script: list[dict], *, steps: int) -> tuple[int, dict, list[dict], str]:
    """Run ``takeover agent run --json`` on the scripted server; returns (exit code, run.json, calls, output)."""
    from typer.testing import CliRunner

    from takeover.cli import app

    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    out = tmp_path / "run"
    with ScriptedServer(script) as srv:
        done = CliRunner().invoke(app, [
            "agent", "run", "--dataset", str(dataset), "--instance-id", task.instance_id, "--model", "scripted",
            "--base-url", srv.base_url, "--api-key-env", "", "--mirror", str(mirror), "--offline",
            "--step-limit", str(steps), "--max-retry-wait", str(CAP), "--out-dir", str(out), "--json",
        ])
        served = srv.served
    record = json.loads((out / "run.json").read_text())
    calls = [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]
    assert served == sum(len(c["attempts"]) for c in calls) or record["exit_status"] == "model_error"
    return done.exit_code, record, calls, done.output


def test_reasoning_only_ends_the_run_with_the_cause_and_its_tokens_counted(tmp_path, task_and_mirror):
    reply = {"content": None, "reasoning_content": "I should look at calc.py before I", "finish_reason": "length",
             "usage": {"prompt_tokens": 50, "completion_tokens": 7, "reasoning_tokens": 7}}
    code, record, calls, _ = run_cli(tmp_path, *task_and_mirror, [reply, bash("ls")], steps=3)
    assert code == 1 and record["exit_status"] == "model_error"
    assert REASONING_ONLY in record["exit_detail"] and "ReasoningOnlyReply" in record["exit_detail"]
    acc = record["accounting"]
    assert (acc["llm_calls"], acc["failed_calls"], acc["agent_events"]) == (1, 0, 0)
    assert (acc["prompt_tokens"], acc["completion_tokens"], acc["reasoning_tokens"]) == (50, 7, 7)
    assert [a["status"] for a in calls[0]["attempts"]] == ["reasoning_only"]


def test_an_action_inside_thinking_is_not_run(tmp_path, task_and_mirror):
    content = ('<think>Options: {"cmd": "rm"} or\n```mswea_bash_command\nrm -rf calc.py\n```\nno.</think>\n'
               "THOUGHT: list the files first.\n\n```mswea_bash_command\nls\n```")
    code, record, calls, _ = run_cli(tmp_path, *task_and_mirror, [{"content": content}], steps=1)
    assert code == 0 and record["exit_status"] == "step_limit"
    assert record["accounting"]["format_errors"] == 0 and [c["format_error"] for c in calls] == [False]
    events = events_of(tmp_path / "run")
    assert [e["command"] for e in events if e["kind"] == "action"] == ["ls"]
    assert "calc.py" in events[1]["text"]  # ls ran, and calc.py is still there


def test_a_reply_cut_at_the_cap_is_a_format_error_that_says_so(tmp_path, task_and_mirror):
    cut = {"content": "THOUGHT: I will list the files\n\n```mswea_bash_command\nls", "finish_reason": "length"}
    code, record, calls, _ = run_cli(tmp_path, *task_and_mirror, [cut, bash("ls")], steps=2)
    assert code == 0 and record["exit_status"] == "step_limit"
    assert (record["accounting"]["format_errors"], record["accounting"]["llm_calls"]) == (1, 2)
    assert calls[0]["format_error"] and calls[0]["attempts"][0]["finish_reason"] == "length"
    reminder = events_of(tmp_path / "run")[1]
    assert reminder["source"] == "user" and "finish_reason=length" in reminder["text"]


@pytest.mark.parametrize(("limited", "asked"), [({"retry_after": 6}, (6.0, 6.0)),
                                                 ({"retry_after_date": 60}, (50.0, 60.0))])
def test_a_rate_limit_mid_run_waits_as_asked_up_to_the_cap(tmp_path, task_and_mirror, limited, asked):
    script = [bash("ls"), {"status": 429, "error": "rate limited", **limited}, bash("ls")]
    code, record, calls, _ = run_cli(tmp_path, *task_and_mirror, script, steps=2)
    assert code == 0 and record["exit_status"] == "step_limit"  # the run went on
    assert (record["accounting"]["llm_calls"], record["accounting"]["failed_calls"]) == (2, 0)
    first, second = calls[1]["attempts"]
    assert (first["status"], second["status"]) == ("http_429", "ok")
    assert asked[0] <= first["retry_after"] <= asked[1] and first["wait_seconds"] == CAP
    assert [a["status"] for a in calls[0]["attempts"]] == ["ok"]


def test_a_zero_prompt_count_is_estimated_and_flagged(tmp_path, task_and_mirror):
    script = [{**bash("ls"), "usage": {"prompt_tokens": 0, "completion_tokens": 18}}, bash("ls")]
    code, record, calls, _ = run_cli(tmp_path, *task_and_mirror, script, steps=2)
    acc = record["accounting"]
    assert code == 0 and acc["usage"] == "estimated" and acc["estimated_calls"] == 1
    assert calls[0]["usage"]["estimated"] and calls[0]["usage"]["prompt_tokens"] > 0
    assert calls[0]["usage"]["completion_tokens"] == 18  # the reported count is kept
    assert not calls[1]["usage"]["estimated"]
    assert acc["prompt_tokens"] == calls[0]["usage"]["prompt_tokens"] + calls[1]["usage"]["prompt_tokens"]


def test_cached_and_reasoning_tokens_are_summed_apart(tmp_path, task_and_mirror):
    usage = {"prompt_tokens": 1000, "completion_tokens": 300, "cached_tokens": 900, "reasoning_tokens": 250}
    script = [{**bash("ls"), "reasoning_content": "calc.py first", "usage": usage}] * 2
    code, record, calls, _ = run_cli(tmp_path, *task_and_mirror, script, steps=2)
    acc = record["accounting"]
    assert code == 0 and acc["usage"] == "reported" and acc["estimated_calls"] == 0
    assert (acc["prompt_tokens"], acc["cached_tokens"], acc["completion_tokens"], acc["reasoning_tokens"]) == (
        2000, 1800, 600, 500)
    assert [c["usage"]["reasoning_tokens"] for c in calls] == [250, 250]


def test_a_dropped_connection_is_retried_and_the_run_goes_on(tmp_path, task_and_mirror):
    code, record, calls, _ = run_cli(tmp_path, *task_and_mirror, [{"drop": True}, bash("ls")], steps=1)
    assert code == 0 and record["exit_status"] == "step_limit"
    assert [a["status"] for a in calls[0]["attempts"]] == ["connection_error", "ok"]
    assert 0 < calls[0]["attempts"][0]["wait_seconds"] <= CAP
