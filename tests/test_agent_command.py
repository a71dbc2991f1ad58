"""The user's own agent (``--agent command --agent-option agent_command=TEMPLATE``; docs/protocol.md section 8.4): a small
agent program written here edits the calculator and writes a Claude Code session, whose events, tokens and
patch are read back; a command past the wall time is stopped and labelled; a command that writes no session
fails its run clearly; an agent whose record keeps no usage has n/a tokens, never 0; and the limits it
cannot keep are refused before the run."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest
from test_agent_runtimes import _agent_run
from test_agents import events_of

from takeover.agents import AgentChoice, ExitStatus, RunLimits, read_run
from takeover.agents.command.command_runtime import AgentSessionMissing
from takeover.agents.runs import run_predecessor
from takeover.errors import InputError
from takeover.experiments import load_experiment
from takeover.experiments.stages import _run_output
from takeover.llm import ModelSettings
from takeover.sources.repos import RepoSource
from takeover.testing.scripted_server import ScriptedServer

MODEL = ModelSettings(model="claude-sonnet", api_key_env=None)

#: Fixes calc.py, then writes a Claude Code 2.x session (argv: prompt file, session file, with usage or not).
AGENT = textwrap.dedent('''
    import json, pathlib, sys
    prompt = pathlib.Path(sys.argv[1]).read_text()
    session, usage = pathlib.Path(sys.argv[2]), sys.argv[3] == "usage"
    calc = pathlib.Path("calc.py")
    calc.write_text(calc.read_text().replace("a - b", "a + b"))

    def record(uuid, parent, role, content, tokens=None, mid=None):
        message = {"role": role, "content": content}
        if role == "assistant":
            message.update(id=mid, model="claude-sonnet", **({"usage": tokens} if usage else {}))
        return {"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": "s1", "cwd": "/testbed",
                "version": "2.1.0", "timestamp": "2026-01-01T00:00:00Z", "isSidechain": False, "message": message}

    edit = {"file_path": "/testbed/calc.py", "old_string": "a - b", "new_string": "a + b"}
    lines = [record("u1", None, "user", prompt),
             record("a1", "u1", "assistant", [{"type": "text", "text": "Fixing add."},
                                              {"type": "tool_use", "id": "t1", "name": "Edit", "input": edit}],
                    {"input_tokens": 100, "output_tokens": 7, "cache_read_input_tokens": 20,
                     "cache_creation_input_tokens": 5}, "m1"),
             record("u2", "a1", "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "edited"}]),
             record("a2", "u2", "assistant", [{"type": "text", "text": "Done."}],
                    {"input_tokens": 140, "output_tokens": 2}, "m2")]
    session.parent.mkdir(parents=True, exist_ok=True)
    session.write_text("".join(json.dumps(line) + "\\n" for line in lines))
''')


def _agent(tmp_path):
    program = tmp_path / "agent.py"
    program.write_text(AGENT)
    return f"{sys.executable} {program}"


def test_a_command_agent_s_claude_code_session_gives_the_events_tokens_and_patch(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    out = tmp_path / "run"
    record = run_predecessor(task, MODEL, out, repo_source=RepoSource(mirror), agent=AgentChoice(
        runtime="command", options={"agent_command": f"{_agent(tmp_path)} {{prompt_file}} {{session_file}} usage"}))
    assert record.finished and record.exit_status is ExitStatus.submitted and record.agent == "command"
    assert record.inputs["agent"]["options"]["agent_command"].endswith("{prompt_file} {session_file} usage")
    events = events_of(out)
    assert [(e["kind"], e["type"]) for e in events] == [("action", "file_edit"), ("observation", "file_edit"),
                                                        ("action", "message")]
    assert events[0]["path"] == "/testbed/calc.py" and events[0]["thought"] == "Fixing add."
    assert all(e["snapshot"] is None for e in events) and record.snapshots == "unavailable"
    acc = record.accounting
    # Anthropic-style usage: prompt tokens = input + cache read + cache creation (docs/protocol.md section 1).
    assert (acc.llm_calls, acc.agent_events, acc.prompt_tokens, acc.completion_tokens) == (2, 3, 265, 9)
    assert acc.cached_tokens == 20 and acc.usage == "reported" and acc.initial_prompt_tokens == 125
    assert acc.initial_prompt_chars == len((out / "session" / "prompt.md").read_text())
    assert "+    return a + b" in (out / "patch.diff").read_text()
    assert read_run(out).prompt_tokens == 265


def test_a_command_agent_that_records_no_usage_has_unknown_tokens_never_zero(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    out = tmp_path / "run"
    record = run_predecessor(task, MODEL, out, repo_source=RepoSource(mirror), agent=AgentChoice(
        runtime="command", options={"agent_command": f"{_agent(tmp_path)} {{prompt_file}} {{session_file}} none"}))
    assert record.exit_status is ExitStatus.submitted and record.accounting.llm_calls == 2
    assert record.accounting.usage == "unavailable"
    calls = [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]
    assert [c["usage"] for c in calls] == [None, None]
    assert read_run(out).usage_reported is False
    output = _run_output(record, out)  # what an experiment's unit writes, and the report reads
    assert (output["prompt_tokens"], output["completion_tokens"], output["usage"]) == (None, None, "unavailable")


def test_session_glob_finds_a_session_the_agent_named_itself(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    record = run_predecessor(task, MODEL, tmp_path / "run", repo_source=RepoSource(mirror), agent=AgentChoice(
        runtime="command", options={
            "agent_command": f"{_agent(tmp_path)} {{prompt_file}} ~/.claude/projects/p/s1.jsonl usage",
            "session_glob": "~/.claude/projects/*/*.jsonl"}))
    assert record.exit_status is ExitStatus.submitted and record.accounting.agent_events == 3
    assert record.environment["session_file"].endswith("session/home/.claude/projects/p/s1.jsonl")
    with ScriptedServer([]) as srv:  # the same from the command line
        result = _agent_run(tmp_path / "cli", task, mirror, srv, "--agent", "command", "--agent-option",
                            f"agent_command={_agent(tmp_path)} {{prompt_file}} ~/.claude/projects/p/s1.jsonl usage",
                            "--agent-option", "session_glob=~/.claude/projects/*/*.jsonl")
    assert result.exit_code == 0, result.output
    run_json = json.loads((tmp_path / "cli" / "run" / "run.json").read_text())
    assert run_json["environment"]["session_file"].endswith("session/home/.claude/projects/p/s1.jsonl")
    assert run_json["exit_status"] == "submitted" and run_json["accounting"]["agent_events"] == 3


def test_a_command_past_the_wall_time_is_stopped_and_labelled(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    record = run_predecessor(task, MODEL, tmp_path / "run", repo_source=RepoSource(mirror),
                             agent=AgentChoice(runtime="command", options={"agent_command": "sleep 30"}),
                             limits=RunLimits(wall_time_limit_seconds=1))
    assert record.finished and record.exit_status is ExitStatus.time_limit
    assert record.accounting.wall_seconds < 15 and record.accounting.agent_events == 0


def test_a_command_that_writes_no_session_is_a_clear_failure_of_its_run(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    out = tmp_path / "run"
    with pytest.raises(AgentSessionMissing, match=r"wrote no session record: looked for .*session\.jsonl"):
        run_predecessor(task, MODEL, out, repo_source=RepoSource(mirror),
                        agent=AgentChoice(runtime="command", options={"agent_command": "echo did nothing"}))
    assert json.loads((out / "run.json").read_text())["finished"] is False  # a rerun starts it again
    assert "did nothing" in (out / "session" / "command.log").read_text()

    with ScriptedServer([]) as srv:
        result = _agent_run(tmp_path / "cli", task, mirror, srv, "--agent", "command", "--agent-option", "agent_command=true")
    assert result.exit_code == 1 and "wrote no session record" in result.output


def test_the_command_runtime_refuses_the_limits_of_the_agent_s_own_loop_before_the_run(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    for limits, field in ((RunLimits(step_limit=10), "step_limit"), (RunLimits(prompt_token_limit=5), "prompt_token_limit"),
                          (RunLimits(command_timeout=30), "command_timeout")):
        with pytest.raises(InputError) as exc:
            run_predecessor(task, MODEL, tmp_path / "run", repo_source=RepoSource(mirror),
                            agent=AgentChoice(runtime="command", options={"agent_command": "true"}), limits=limits)
        assert exc.value.field == field and not (tmp_path / "run").exists()

    base = 'out_dir = "o"\n[dataset]\npath = "t.jsonl"\n[predecessor]\ntrajectories = ["runs"]\n[[successors]]\nmodel = "m"\n'
    (tmp_path / "none.toml").write_text(base + 'agent = "command"\n')
    with pytest.raises(InputError, match="needs a command template"):
        load_experiment(tmp_path / "none.toml")
    (tmp_path / "other.toml").write_text(base + 'agent = { options = { agent_command = "true" } }\n')
    with pytest.raises(InputError, match=r"unknown option \(its options: none\) \(options.agent_command\)"):
        load_experiment(tmp_path / "other.toml")
    (tmp_path / "bad.toml").write_text(base + 'agent = { runtime = "command", options = { agent_command = "run {prompt}" } }\n')
    with pytest.raises(InputError, match="bad placeholder {prompt}"):
        load_experiment(tmp_path / "bad.toml")
    (tmp_path / "ok.toml").write_text(
        base + 'agent = { runtime = "command", options = { agent_command = "claude -p < {prompt_file}" } }\n')
    assert load_experiment(tmp_path / "ok.toml").successors[0].agent.options == {"agent_command": "claude -p < {prompt_file}"}
