"""``takeover handoff`` and ``takeover resume`` flags on the Claude Code session of handoff_sessions.py:
the raw_trace budgets, the note writer's completion cap and request settings (timeout, retries, the cap on
a wait between attempts), where the prompt is written (--out-dir, the old --out), the run limits of the
successor (each ends the run with its own exit status, docs/protocol.md section 8), its action protocol and
command timeout. Numbers are read from run.json and the requests the scripted server received."""

from __future__ import annotations

import json

import pytest
from handoff_sessions import calc_repo, claude_session, note
from test_cli_flag_shapes import plain
from typer.testing import CliRunner

from takeover.cli import app
from takeover.testing.scripted_server import ScriptedServer


def bash(command: str) -> dict:
    return {"content": f"THOUGHT: next step\n\n```mswea_bash_command\n{command}\n```"}


SUBMIT = bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")


@pytest.fixture
def claude(tmp_path):
    root, _ = calc_repo(tmp_path / "calc")
    return claude_session(tmp_path / "session.jsonl", root), root


def cli(*args) -> object:
    return CliRunner().invoke(app, [str(a) for a in args])


def endpoint(srv: ScriptedServer, *extra: str) -> list[str]:
    return ["--base-url", srv.base_url, "--api-key-env", "", *extra]


# --- handoff -----------------------------------------------------------------------------------------


def test_handoff_raw_trace_budgets_in_characters_and_tokens(claude):
    session, root = claude
    full = cli("handoff", session, "--repo", root, "--record", "0")
    assert full.exit_code == 0, full.output
    assert "earlier events omitted" not in full.stdout
    for flag, value in (("--raw-trace-max-chars", "600"), ("--raw-trace-max-tokens", "150")):
        cut = cli("handoff", session, "--repo", root, flag, value)
        assert cut.exit_code == 0, cut.output
        assert "earlier events omitted" in cut.stdout and len(cut.stdout) < len(full.stdout)
    other = cli("handoff", session, "--repo", root, "--record", "1")
    assert other.exit_code == 2 and "has no run 1" in other.stderr


def test_handoff_note_cap_and_request_timeout(claude, tmp_path):
    session, root = claude
    with ScriptedServer([{**note(), "delay": 60}, note()]) as srv:
        result = cli("handoff", session, "--repo", root, "--model", "scripted", *endpoint(srv), "--retries", "1",
                     "--timeout", "3", "--note-max-tokens", "321", "--json")
        requests = list(srv.requests)
    assert result.exit_code == 0, result.output
    record = json.loads(next(line for line in result.stdout.splitlines() if line.startswith("{")))
    usage = record["view"]["note_usage"]
    assert record["view"]["validation"] == "valid" and (usage["calls"], usage["failed_calls"]) == (2, 1)
    assert [a["status"] for a in usage["attempts"]] == ["timeout", "ok"] and usage["attempts"][0]["seconds"] >= 3
    assert [r["max_tokens"] for r in requests] == [321, 321]


def test_handoff_max_retry_wait_caps_the_servers_retry_after(claude):
    session, root = claude
    with ScriptedServer([{"status": 429, "error": "slow down", "retry_after": 30}, note()]) as srv:
        result = cli("handoff", session, "--repo", root, "--model", "scripted", *endpoint(srv), "--retries", "1",
                     "--max-retry-wait", "0.01", "--json")
    assert result.exit_code == 0, result.output
    attempts = json.loads(result.stdout)["view"]["note_usage"]["attempts"]
    assert [a["status"] for a in attempts] == ["http_429", "ok"]
    assert attempts[0]["retry_after"] == 30 and attempts[0]["wait_seconds"] <= 0.01


def test_handoff_out_dir_writes_the_prompt(claude, tmp_path):
    session, root = claude
    new = cli("handoff", session, "--repo", root, "--out-dir", tmp_path / "next")
    assert new.exit_code == 0, new.output
    prompt = (tmp_path / "next" / "prompt.md").read_text()
    assert prompt and prompt in new.stdout
    assert new.stderr.strip() == f"wrote the takeover prompt to {tmp_path / 'next' / 'prompt.md'}"


def test_handoff_takes_one_view(claude):
    session, root = claude
    two = cli("handoff", session, "--repo", root, "--view", "raw_trace", "--view", "repo_only")
    assert two.exit_code == 2 and "handoff takes one view; got 2 (raw_trace, repo_only)" in plain(two.output)
    one = cli("handoff", session, "--repo", root, "--view", "repo_only")
    assert one.exit_code == 0 and '<previous_agent view="raw_trace">' not in one.stdout


# --- resume ------------------------------------------------------------------------------------------

LIMITS = {
    "step_limit": (["--step-limit", "1"], [bash("ls")] * 2, "scripted"),
    "time_limit": (["--wall-time-limit-seconds", "3"], [{**bash("ls"), "delay": 4}, bash("ls")], "scripted"),
    "token_limit": (["--prompt-token-limit", "1"], [bash("ls")] * 2, "scripted"),
    "cost_limit": (["--cost-limit", "1e-9"], [bash("ls")] * 2, "gpt-4o"),
    "format_errors": (["--max-consecutive-format-errors", "2"], [{"content": "no action here"}] * 3, "scripted"),
}


@pytest.mark.parametrize("status", list(LIMITS))
def test_resume_limits_end_the_successor_run_with_their_status(claude, tmp_path, status):
    session, root = claude
    flags, script, model = LIMITS[status]
    out = tmp_path / "run"
    with ScriptedServer(script) as srv:
        result = cli("resume", session, "--repo", root, "--model", model, *endpoint(srv, "--retries", "0"),
                     "--view", "raw_trace", "--out-dir", out, *flags)
    run = json.loads((out / "run.json").read_text())
    assert result.exit_code == 0, result.output
    assert run["exit_status"] == status and run["finished"] is True
    calls = {"step_limit": 1, "time_limit": 1, "token_limit": 1, "cost_limit": 1, "format_errors": 2}[status]
    assert run["accounting"]["llm_calls"] == calls
    assert '<previous_agent view="raw_trace">' in srv.requests[0]["messages"][1]["content"]


def test_resume_tool_protocol_and_command_timeout(claude, tmp_path):
    session, root = claude
    script = [{"content": "", "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30; echo late"}}]},
              {"content": "", "tool_calls": [{"name": "bash",
                                              "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}}]}]
    out = tmp_path / "run"
    with ScriptedServer(script) as srv:
        result = cli("resume", session, "--repo", root, "--model", "scripted", *endpoint(srv, "--retries", "0"),
                     "--view", "raw_trace", "--out-dir", out, "--protocol", "tools", "--command-timeout", "2")
    assert result.exit_code == 0, result.output
    assert srv.requests[0]["tools"][0]["function"]["name"] == "bash"
    run = json.loads((out / "run.json").read_text())
    assert run["exit_status"] == "submitted" and run["protocol"] == "tools"
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    slept = next(e for e in events if e["kind"] == "observation")
    assert "late" not in slept["text"] and "timed out" in slept["text"]
    assert run["accounting"]["command_seconds"] < 25  # killed after 2 s, not after the 30 s sleep


def test_resume_budgets_note_cap_timeout_and_record(claude, tmp_path):
    session, root = claude
    for flag, value in (("--raw-trace-max-chars", "600"), ("--raw-trace-max-tokens", "150")):
        out = tmp_path / flag.strip("-")
        with ScriptedServer([SUBMIT]) as srv:
            result = cli("resume", session, "--repo", root, "--model", "scripted", *endpoint(srv, "--retries", "0"),
                         "--view", "raw_trace", "--out-dir", out, flag, value)
            prompt = srv.requests[0]["messages"][1]["content"]
        assert result.exit_code == 0, result.output
        assert "earlier events omitted" in prompt

    out = tmp_path / "notes"
    with ScriptedServer([{**note(), "delay": 60}, note(), SUBMIT]) as srv:
        result = cli("resume", session, "--repo", root, "--model", "scripted", *endpoint(srv, "--retries", "1"),
                     "--out-dir", out, "--note-max-tokens", "321", "--timeout", "3", "--record", "0")
        requests = list(srv.requests)
    assert result.exit_code == 0, result.output
    assert [r.get("max_tokens") for r in requests[:2]] == [321, 321]  # both note attempts were capped
    handoff = json.loads((out / "handoff.json").read_text())
    assert [a["status"] for a in handoff["view"]["note_usage"]["attempts"]] == ["timeout", "ok"]
    assert json.loads((out / "run.json").read_text())["exit_status"] == "submitted"


def test_resume_max_retry_wait_caps_the_servers_retry_after_and_one_view_is_taken(claude, tmp_path):
    session, root = claude
    out = tmp_path / "run"
    with ScriptedServer([{"status": 429, "error": "slow down", "retry_after": 30}, note(), SUBMIT]) as srv:
        result = cli("resume", session, "--repo", root, "--model", "scripted", *endpoint(srv, "--retries", "1"),
                     "--out-dir", out, "--max-retry-wait", "0.01")
    assert result.exit_code == 0, result.output
    attempts = json.loads((out / "handoff.json").read_text())["view"]["note_usage"]["attempts"]
    assert [a["status"] for a in attempts] == ["http_429", "ok"]
    assert attempts[0]["retry_after"] == 30 and attempts[0]["wait_seconds"] <= 0.01
    two = cli("resume", session, "--repo", root, "--model", "scripted", "--view", "raw_trace", "--view=repo_only")
    assert two.exit_code == 2 and "resume takes one view; got 2" in plain(two.output)
