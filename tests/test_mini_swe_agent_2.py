"""mini-swe-agent 2.x runs (``trajectory_format`` ``mini-swe-agent-1.1``) in both tool-calling layouts, written
by mini-swe-agent's own ``DefaultAgent`` and ``LocalEnvironment`` on a tiny git repository: its deterministic
models return the messages its ``litellm_response_model``/``litellm_model`` would store (whole response
objects, chat completions), and format errors are raised as those models raise them. Each test reads the run
with exact counts and usage, and replays it to a verified final state."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import git, make_repo

from takeover.replay_settings import ReplaySettings
from takeover.repository_states.replay import replay_trajectory
from takeover.trajectories import read_trajectories

os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
mini = pytest.importorskip("minisweagent")
from minisweagent.agents.default import DefaultAgent
from minisweagent.environments.local import LocalEnvironment
from minisweagent.exceptions import FormatError
from minisweagent.models.test_models import (
    DeterministicResponseAPIToolcallModel,
    DeterministicToolcallModel,
)
from minisweagent.models.utils.actions_toolcall_response import _format_error_message

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"
TEMPLATES = {"system_template": "You are a helpful assistant.", "instance_template": "Fix: {{task}}"}


@pytest.fixture(autouse=True)
def _mini_config(tmp_path, monkeypatch):
    monkeypatch.setenv("MSWEA_GLOBAL_CONFIG_DIR", str(tmp_path / "mini-config"))


# --- Responses API layout (litellm_response_model) ------------------------------------------------------


def response(n: int, *, text: str = "", calls: list[str] = (), usage: tuple[int, int, int, int]) -> dict:
    """A ``litellm.responses()`` result as ``model_dump()`` stores it: reasoning, message and function_call
    items, ``usage`` with input/output token details. ``usage`` = (input, cached, output, reasoning)."""
    output: list[dict] = [{"type": "reasoning", "id": f"rs_{n}", "summary": [{"type": "summary_text", "text": "thinking"}]}]
    if text:
        output.append({"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]})
    for k, command in enumerate(calls):
        output.append({"type": "function_call", "id": f"fc_{n}_{k}", "call_id": f"call_{n}_{k}", "name": "bash",
                       "arguments": json.dumps({"command": command}), "status": "completed"})
    prompt, cached, completion, reasoning = usage
    return {
        "id": f"resp_{n}", "created_at": 1767225600 + n, "model": "gpt-5-mini", "object": "response",
        "status": "completed", "output": output, "parallel_tool_calls": True, "tool_choice": "auto",
        "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": cached},
                  "output_tokens": completion, "output_tokens_details": {"reasoning_tokens": reasoning},
                  "total_tokens": prompt + completion},
    }


def turn(resp: dict) -> dict:
    """What ``LitellmResponseModel.query`` returns for a parsed response: the response plus ``extra``."""
    actions = [{"command": json.loads(i["arguments"])["command"], "tool_call_id": i["call_id"]}
               for i in resp["output"] if i["type"] == "function_call"]
    return {**resp, "extra": {"actions": actions, "cost": 0.001, "timestamp": 1767225600.0}}


def format_error(resp: dict, error: str) -> dict:
    """A turn whose parse fails: the model raises ``FormatError`` carrying its reply, cost and response."""
    message = _format_error_message(error)
    message["extra"].update({"cost": 0.001, "response": resp})
    return {"format_error": message}


def scripted(model_class):
    """mini-swe-agent's deterministic model that raises ``FormatError`` where the script says, as the real
    models do when a reply does not parse (the script stays plain data, so the run can be saved)."""

    class Scripted(model_class):
        def query(self, messages, **kwargs):
            out = super().query(messages, **kwargs)
            if "format_error" in out:
                raise FormatError(out["format_error"])
            return out

    return Scripted


def run_mini(model, repo: Path, out: Path, timeout: int = 5) -> dict:
    agent = DefaultAgent(model, LocalEnvironment(cwd=str(repo), timeout=timeout), output_path=out, **TEMPLATES)
    agent.run("change x to 2 in a.py")
    return json.loads(out.read_text())


def test_responses_api_run_reads_exactly_and_replays(tmp_path):
    repo, base = make_repo(tmp_path / "repo", {"a.py": "x = 1\n"})
    script = [
        turn(response(1, text="Look first.", calls=["cat a.py"], usage=(1200, 0, 40, 16))),
        format_error(response(2, text="I think I am done.", usage=(1300, 1024, 25, 10)),
                     "No tool calls found in the response. Every response MUST include at least one tool call."),
        turn(response(3, calls=["sed -i s/1/2/ a.py", "sleep 6"], usage=(0, 0, 60, 32))),  # prompt 0: cached
        turn(response(4, calls=[SUBMIT], usage=(1500, 1280, 20, 0))),
    ]
    doc = run_mini(scripted(DeterministicResponseAPIToolcallModel)(outputs=script), repo, tmp_path / "run.traj.json", timeout=3)
    msgs = doc["messages"]
    assert doc["trajectory_format"] == "mini-swe-agent-1.1"
    assert [m.get("object") or m.get("type") or m["role"] for m in msgs[2:]] == [
        "response", "function_call_output", "message", "response", "function_call_output",
        "function_call_output", "response", "exit",
    ]  # the native layout: no role on responses and tool results; the format error only as the reply

    (traj,) = read_trajectories(tmp_path / "run.traj.json")
    kinds = [(e.kind, e.source, e.type, e.exit_code, e.format_error, e.timed_out) for e in traj.events]
    assert kinds == [
        ("action", "agent", "command", None, False, False),
        ("observation", "environment", "command", 0, False, False),
        ("action", "agent", "message", None, True, False),
        ("observation", "user", "message", None, False, False),
        ("action", "agent", "command", None, False, False),
        ("action", "agent", "command", None, False, False),
        ("observation", "environment", "command", 0, False, False),
        ("observation", "environment", "command", -1, False, True),  # killed at the harness's 3 s limit (sed and cat need far less)
        ("action", "agent", "finish", None, False, False),
        ("observation", "environment", "finish", None, False, False),
    ]
    assert traj.events[0].command == "cat a.py" and traj.events[0].thought == "Look first."
    assert traj.events[2].text == "I think I am done." and traj.events[3].cause == 2
    assert [traj.events[6].cause, traj.events[7].cause] == [4, 5]
    assert traj.agent_events == 10 and traj.actions == 5 and traj.observations == 5
    # Four model calls, the format error included; its tokens count.
    assert len(traj.llm_calls) == doc["info"]["model_stats"]["api_calls"] == 4
    assert [c.format_error for c in traj.llm_calls] == [False, True, False, False]
    assert traj.events[4].llm_call == traj.events[5].llm_call == 2
    usages = [c.usage for c in traj.llm_calls]
    assert [u.prompt_tokens for u in usages[:2] + usages[3:]] == [1200, 1300, 1500]
    assert usages[2].estimated and usages[2].prompt_tokens > 0  # a reported 0 is not a count
    assert not any(u.estimated for u in usages[:2] + usages[3:])
    assert [u.cached_tokens for u in usages] == [0, 1024, 0, 1280]
    assert [u.reasoning_tokens for u in usages] == [16, 10, 32, 0]
    assert traj.completion_tokens == 145 and traj.cached_tokens == 2304 and traj.reasoning_tokens == 58
    assert traj.prompt_tokens == 4000 + usages[2].prompt_tokens and traj.usage_estimated
    assert traj.final_patch == doc["info"]["submission"] and traj.final_patch_files == ["a.py"]

    ws, sha = make_repo(tmp_path / "ws", {"a.py": "x = 1\n"})
    result = replay_trajectory(traj, ws, sha, replay=ReplaySettings(use_sandbox=False, timeout=30))
    assert result.verdict.verified, result.verdict
    assert [list(d) for d in result.diffs] == [[]] * 4 + [["a.py"]] * 6
    assert result.steps[5].action == "command" and result.steps[5].detail == "sleep 6"
    assert (ws / "a.py").read_text() == "x = 2\n"
    assert git(repo, "rev-parse", "HEAD").strip() == base


# --- chat-completions layout (litellm_model) --------------------------------------------------------------


def completion(n: int, *, text: str | None, calls: list[str], usage: tuple[int, int, int, int]) -> dict:
    """A ``litellm.completion()`` result as ``model_dump()`` stores it (OpenAI usage details included)."""
    tool_calls = [{"function": {"arguments": json.dumps({"command": c}), "name": "bash"}, "id": f"call_{n}_{k}",
                   "type": "function"} for k, c in enumerate(calls)]
    prompt, cached, out, reasoning = usage
    return {
        "id": f"chatcmpl-{n}", "created": 1767225600 + n, "model": "gpt-5-mini", "object": "chat.completion",
        "choices": [{"finish_reason": "tool_calls" if calls else "stop", "index": 0,
                     "message": {"content": text, "role": "assistant", "tool_calls": tool_calls or None}}],
        "usage": {"completion_tokens": out, "prompt_tokens": prompt, "total_tokens": prompt + out,
                  "completion_tokens_details": {"reasoning_tokens": reasoning},
                  "prompt_tokens_details": {"cached_tokens": cached}},
    }


def chat_turn(resp: dict) -> dict:
    """What ``LitellmModel.query`` returns: the choice's message plus ``extra`` with the whole response."""
    message = dict(resp["choices"][0]["message"], function_call=None, provider_specific_fields=None)
    actions = [{"command": json.loads(c["function"]["arguments"])["command"], "tool_call_id": c["id"]}
               for c in message["tool_calls"] or []]
    return {**message, "extra": {"actions": actions, "response": resp, "cost": 0.001, "timestamp": 1767225600.0}}


def test_chat_completions_run_reads_exactly_and_replays(tmp_path):
    repo, _ = make_repo(tmp_path / "repo", {"a.py": "x = 1\n"})
    failing_submit = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt"  # no patch.txt yet: exit 1
    chat_error = {"role": "user", "content": "No tool calls found in the response.",
                  "extra": {"interrupt_type": "FormatError", "cost": 0.001,
                            "response": completion(2, text="Done?", calls=[], usage=(900, 0, 5, 0))}}
    script = [
        chat_turn(completion(1, text="Edit.", calls=["sed -i s/1/2/ a.py"], usage=(800, 512, 30, 12))),
        {"format_error": chat_error},
        chat_turn(completion(3, text=None, calls=[failing_submit], usage=(1000, 768, 20, 8))),
        chat_turn(completion(4, text=None, calls=["touch b.py", SUBMIT, "touch never.py"], usage=(1100, 1024, 30, 0))),
    ]
    doc = run_mini(scripted(DeterministicToolcallModel)(outputs=script), repo, tmp_path / "run.traj.json")
    (traj,) = read_trajectories(tmp_path / "run.traj.json")
    kinds = [(e.kind, e.source, e.type, e.exit_code, e.format_error, e.not_applied) for e in traj.events]
    assert kinds == [
        ("action", "agent", "command", None, False, False),
        ("observation", "environment", "command", 0, False, False),
        ("action", "agent", "message", None, True, False),
        ("observation", "user", "message", None, False, False),
        ("action", "agent", "command", None, False, False),  # a submission that failed is a command
        ("observation", "environment", "command", 1, False, False),
        ("action", "agent", "command", None, False, False),  # ran; its output was never recorded
        ("action", "agent", "finish", None, False, False),
        ("action", "agent", "command", None, False, True),  # after the submission: never run
        ("observation", "environment", "finish", None, False, False),
    ]
    assert traj.events[9].cause == 7 and traj.events[9].text == doc["info"]["submission"]
    assert len(traj.llm_calls) == doc["info"]["model_stats"]["api_calls"] == 4
    assert [c.usage.prompt_tokens for c in traj.llm_calls] == [800, 900, 1000, 1100]
    assert [c.usage.cached_tokens for c in traj.llm_calls] == [512, 0, 768, 1024]
    assert [c.usage.reasoning_tokens for c in traj.llm_calls] == [12, 0, 8, 0]
    assert sorted(traj.final_patch_files) == ["a.py", "b.py"]

    ws, sha = make_repo(tmp_path / "ws", {"a.py": "x = 1\n"})
    result = replay_trajectory(traj, ws, sha, replay=ReplaySettings(use_sandbox=False, timeout=30))
    assert result.verdict.verified, result.verdict
    assert [sorted(d) for d in result.diffs] == [["a.py"]] * 6 + [["a.py", "b.py"]] * 4
    assert result.steps[8].action == "noop" and not (ws / "never.py").exists()
