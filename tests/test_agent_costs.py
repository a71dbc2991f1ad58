"""The cost of an agent run against litellm's own model cost map, computed here from the usage the
scripted server reports (prompt, cached prompt and completion tokens priced per token)."""

from __future__ import annotations

import json

import pytest

from takeover.agents import ExitStatus, RunLimits
from takeover.agents.runs import run_predecessor
from takeover.llm import ModelSettings
from takeover.sources.repos import RepoSource
from takeover.testing.scripted_server import ScriptedServer

USAGE = [{"prompt_tokens": 1000, "completion_tokens": 100},
         {"prompt_tokens": 3000, "completion_tokens": 200, "cached_tokens": 2000}]


def bash(command: str) -> dict:
    return {"content": f"THOUGHT: look\n\n```mswea_bash_command\n{command}\n```"}


def test_run_cost_is_the_cost_map_price_of_each_calls_usage(tmp_path, task_and_mirror):
    import litellm  # the cost map shipped with litellm (LITELLM_LOCAL_MODEL_COST_MAP: no download)

    price = litellm.model_cost["gpt-4o"]
    expected = [u["prompt_tokens"] * price["input_cost_per_token"] + u["completion_tokens"] * price["output_cost_per_token"]
                for u in USAGE[:1]]
    cached = USAGE[1]
    expected.append((cached["prompt_tokens"] - cached["cached_tokens"]) * price["input_cost_per_token"]
                    + cached["cached_tokens"] * price["cache_read_input_token_cost"]
                    + cached["completion_tokens"] * price["output_cost_per_token"])
    task, mirror = task_and_mirror
    with ScriptedServer([{**bash("ls"), "usage": u} for u in USAGE]) as srv:
        model = ModelSettings(model="gpt-4o", base_url=srv.base_url, api_key_env=None, retries=0)
        record = run_predecessor(task, model, tmp_path / "run", repo_source=RepoSource(mirror),
                                 limits=RunLimits(step_limit=2))
    assert record.exit_status is ExitStatus.step_limit
    acc = record.accounting
    assert (acc.llm_calls, acc.prompt_tokens, acc.completion_tokens, acc.cached_tokens) == (2, 4000, 300, 2000)
    assert acc.cost == pytest.approx(sum(expected), rel=1e-9)
    calls = [json.loads(line) for line in (tmp_path / "run" / "calls.jsonl").read_text().splitlines()]
    assert [c["usage"]["prompt_tokens"] for c in calls] == [1000, 3000]


def test_a_cost_limit_below_the_first_calls_price_stops_after_it(tmp_path, task_and_mirror):
    import litellm

    price = litellm.model_cost["gpt-4o"]
    first = USAGE[0]["prompt_tokens"] * price["input_cost_per_token"] + USAGE[0]["completion_tokens"] * price["output_cost_per_token"]
    task, mirror = task_and_mirror
    with ScriptedServer([{**bash("ls"), "usage": u} for u in USAGE]) as srv:
        model = ModelSettings(model="gpt-4o", base_url=srv.base_url, api_key_env=None, retries=0)
        record = run_predecessor(task, model, tmp_path / "run", repo_source=RepoSource(mirror),
                                 limits=RunLimits(cost_limit=first * 0.99))
    assert record.exit_status is ExitStatus.cost_limit
    assert (record.accounting.llm_calls, srv.served) == (1, 1)
    assert record.accounting.cost == pytest.approx(first, rel=1e-9)
