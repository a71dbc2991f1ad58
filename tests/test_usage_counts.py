"""Token usage in every reader: one parser for the usage shapes formats record, cached / cache-creation /
reasoning tokens kept apart and shown by ``takeover inspect --json``, and a reported prompt count of 0 for a
non-empty prompt estimated instead of summed as 0 (docs/protocol.md section 1)."""

from __future__ import annotations

import json

import pytest
from conftest import TRAJ
from prerequisites import requires
from typer.testing import CliRunner

from takeover.cli import app
from takeover.llm.usage import usage_from_payload
from takeover.trajectories import read_trajectories


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        # OpenAI chat completions (litellm passes Anthropic's cache counts beside them)
        ({"prompt_tokens": 120, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 100},
          "completion_tokens_details": {"reasoning_tokens": 20}}, (120, 30, 100, None, 20)),
        ({"prompt_tokens": 50, "completion_tokens": 5, "cache_read_input_tokens": 40,
          "cache_creation_input_tokens": 8}, (50, 5, 40, 8, None)),
        # OpenAI Responses: input_tokens already holds the cached ones
        ({"input_tokens": 900, "input_tokens_details": {"cached_tokens": 768}, "output_tokens": 60,
          "output_tokens_details": {"reasoning_tokens": 32}, "total_tokens": 960}, (900, 60, 768, None, 32)),
        # Anthropic Messages: input_tokens is only the uncached part
        ({"input_tokens": 3, "cache_read_input_tokens": 4000, "cache_creation_input_tokens": 500,
          "output_tokens": 70}, (4503, 70, 4000, 500, None)),
        # Codex CLI token counts
        ({"input_tokens": 6000, "cached_input_tokens": 5000, "output_tokens": 300, "reasoning_output_tokens": 120,
          "total_tokens": 6300}, (6000, 300, 5000, None, 120)),
    ],
)
def test_one_parser_reads_every_usage_shape(payload, expected):
    u = usage_from_payload(payload)
    assert (u.prompt_tokens, u.completion_tokens, u.cached_tokens, u.cache_creation_tokens, u.reasoning_tokens) == expected
    assert not u.estimated
    assert usage_from_payload({"total_tokens": 5}) is None and usage_from_payload("12") is None


def inspect_rows(*paths) -> list[dict]:
    result = CliRunner().invoke(app, ["inspect", "--json", *map(str, paths)])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_openhands_usage_details_and_a_zero_prompt_count(tmp_path):
    history = [
        {"id": 0, "source": "user", "action": "message", "message": "Fix.", "args": {"content": "Fix it."}},
        {"id": 1, "source": "agent", "action": "run", "message": "Running", "args": {"command": "ls", "thought": ""},
         "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "c1",
                                "model_response": {"id": "r1"}}},
        {"id": 2, "source": "agent", "observation": "run", "cause": 1, "content": "a.py\n", "message": "ok",
         "extras": {"command": "ls", "metadata": {"exit_code": 0, "working_dir": "/workspace/x"}}},
        {"id": 3, "source": "agent", "action": "finish", "message": "done", "args": {"final_thought": "done"},
         "tool_call_metadata": {"function_name": "finish", "tool_call_id": "c2", "model_response": {"id": "r2"}}},
    ]
    token_usages = [
        {"model": "m", "prompt_tokens": 4000, "completion_tokens": 50, "cache_read_tokens": 3000,
         "cache_write_tokens": 900, "reasoning_tokens": 20, "response_id": "r1"},
        {"model": "m", "prompt_tokens": 0, "completion_tokens": 9, "cache_read_tokens": 0, "cache_write_tokens": 0,
         "response_id": "r2"},  # a local server that served the prompt from its cache reported 0
    ]
    row = {"instance_id": "acme__calc-1", "instruction": "Fix it.", "metadata": {"llm_config": {"model": "m"}},
           "history": history, "metrics": {"token_usages": token_usages}, "test_result": {"git_patch": ""}}
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(row) + "\n")
    (traj,) = read_trajectories(path)
    first, second = (c.usage for c in traj.llm_calls)
    assert (first.cached_tokens, first.cache_creation_tokens, first.reasoning_tokens, first.estimated) == (3000, 900, 20, False)
    assert second.estimated and second.prompt_tokens > 0 and second.completion_tokens == 9
    (summary,) = inspect_rows(path)
    assert summary["prompt_tokens"] == 4000 + second.prompt_tokens
    assert (summary["cached_tokens"], summary["cache_creation_tokens"], summary["reasoning_tokens"]) == (3000, 900, 20)
    assert summary["usage_estimated"] is True


@requires("shared:trajectories/openhands/v0/alibaba__fastjson2-2775.output.jsonl")
def test_real_openhands_run_keeps_reasoning_and_cached_tokens():
    path = TRAJ / "openhands" / "v0" / "alibaba__fastjson2-2775.output.jsonl"
    row = json.loads(path.read_text().splitlines()[0])
    usages = {}
    for ev in row["history"]:
        response = (ev.get("tool_call_metadata") or {}).get("model_response") or {}
        if response.get("usage"):
            usages[response["id"]] = response["usage"]
    (summary,) = inspect_rows(path)
    assert summary["llm_calls"] == len(usages)
    assert summary["reasoning_tokens"] == sum(u["completion_tokens_details"]["reasoning_tokens"] for u in usages.values())
    assert summary["cached_tokens"] == sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages.values())
    assert summary["prompt_tokens"] == sum(u["prompt_tokens"] for u in usages.values())
    assert summary["usage_estimated"] is False
