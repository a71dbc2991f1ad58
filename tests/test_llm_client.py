"""The one model client against the scripted OpenAI-compatible server: attempts, waits and usage of every
reply shape a real endpoint sends (docs/protocol.md section 8: usage on every call)."""

from __future__ import annotations

import os

import pytest
from _replay import Replay

from takeover.llm import ModelCallError, ModelClient, ModelSettings, transport_for

MESSAGES = [{"role": "user", "content": "write notes please"}]


@pytest.fixture(scope="module")
def replay():
    r = Replay()
    with r.server:
        yield r


def settings(srv: Replay, **kw) -> ModelSettings:
    base = {"name": "notes-model", "base_url": srv.base_url, "api_key_env": "TAKEOVER_TEST_API_KEY",
            "timeout": 5.0, "retries": 3, "backoff": 0.5}
    return ModelSettings(**{**base, **kw})


def test_valid_answer_takes_one_attempt_and_records_reported_usage(replay):
    usage = {"prompt_tokens": 120, "completion_tokens": 30, "cached_tokens": 20}
    with replay.script([{"content": "- a note", "usage": usage}]) as srv:
        client = ModelClient(settings(srv))
        answer = client.complete(MESSAGES, temperature=0.0, max_tokens=1600)
    assert answer.content == "- a note"
    assert [a.status for a in answer.attempts] == ["ok"]
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens, answer.usage.cached_tokens) == (120, 30, 20)
    assert client.usage.calls == 1 and client.usage.failed_calls == 0
    assert (client.usage.prompt_tokens, client.usage.completion_tokens, client.usage.cached_tokens) == (120, 30, 20)
    body = srv.requests[0]
    assert body["temperature"] == 0.0 and body["max_tokens"] == 1600 and body["model"] == "notes-model"


def test_rate_limit_then_success_retries_once_with_the_first_backoff(replay):
    waits: list[float] = []
    with replay.script([{"status": 429, "error": "rate limited"}, {"content": "ok now"}]) as srv:
        client = ModelClient(settings(srv), sleep=waits.append)
        answer = client.complete(MESSAGES)
    assert answer.content == "ok now"
    assert [a.status for a in answer.attempts] == ["http_429", "ok"]
    assert len(waits) == 1 and 0.5 <= waits[0] <= 1.0  # first back-off plus up to one back-off of jitter
    assert answer.attempts[0].wait_seconds == pytest.approx(waits[0], abs=1e-6)
    assert srv.served == 2
    # scripted usage = words: 3 prompt words, 2 completion words; the failed attempt reported none
    assert (client.usage.calls, client.usage.failed_calls) == (2, 1)
    assert (client.usage.prompt_tokens, client.usage.completion_tokens) == (3, 2)
    assert client.usage.seconds == pytest.approx(sum(a.seconds for a in answer.attempts), abs=1e-5)


def test_timeout_then_success_counts_the_timed_out_attempt(replay):
    waits: list[float] = []
    with replay.script([{"delay": 1.5, "content": "too late"}, {"content": "in time"}]) as srv:
        client = ModelClient(settings(srv, timeout=0.3), sleep=waits.append)
        answer = client.complete(MESSAGES)
    assert answer.content == "in time"
    assert [a.status for a in answer.attempts] == ["timeout", "ok"]
    assert answer.attempts[0].seconds >= 0.3
    assert len(waits) == 1 and 0.5 <= waits[0] <= 1.0
    assert client.usage.calls == 2 and client.usage.completion_tokens == 2


def test_server_errors_exhaust_retries_with_exponential_backoff(replay):
    waits: list[float] = []
    script = [{"status": 500, "error": "boom"}, {"status": 502, "error": "bad gateway"}, {"status": 503, "error": "busy"}]
    with replay.script(script) as srv:
        client = ModelClient(settings(srv, retries=2), sleep=waits.append)
        with pytest.raises(ModelCallError) as info:
            client.complete(MESSAGES)
    assert info.value.status == "http_503"
    assert [a.status for a in info.value.attempts] == ["http_500", "http_502", "http_503"]
    assert len(waits) == 2 and 0.5 <= waits[0] <= 1.0 and 1.0 <= waits[1] <= 1.5  # doubling, plus jitter
    assert [a.wait_seconds for a in info.value.attempts] == pytest.approx([*waits, 0.0], abs=1e-6)
    assert "gave up after 3 attempts" in str(info.value)
    assert client.usage.calls == 3 and client.usage.failed_calls == 3 and client.usage.prompt_tokens == 0


def test_other_client_errors_are_not_retried(replay):
    waits: list[float] = []
    with replay.script([{"status": 400, "error": "context length exceeded"}, {"content": "never sent"}]) as srv:
        client = ModelClient(settings(srv), sleep=waits.append)
        with pytest.raises(ModelCallError) as info:
            client.complete(MESSAGES)
    assert info.value.status == "http_400"
    assert len(info.value.attempts) == 1 and srv.served == 1 and waits == []
    assert "context length exceeded" in str(info.value) and "not retryable" in str(info.value)


def test_api_key_is_sent_but_never_appears_in_errors_or_records(replay, monkeypatch):
    key = "sk-test-abcdefghijklmnopqrstuvwxyz012345"
    monkeypatch.setenv("TAKEOVER_TEST_API_KEY", key)
    with replay.script([{"status": 401, "error": f"invalid api key {key}"}]) as srv:
        client = ModelClient(settings(srv))
        with pytest.raises(ModelCallError) as info:
            client.complete(MESSAGES)
    assert key not in str(info.value)
    assert "[REDACTED]" in str(info.value)
    assert key not in info.value.attempts[0].model_dump_json()
    assert key not in client.usage.model_dump_json() and key not in client.settings.model_dump_json()


def test_missing_usage_is_estimated_and_marked(replay):
    with replay.script([{"content": "five words in this answer", "usage": None}]) as srv:
        client = ModelClient(settings(srv))
        answer = client.complete(MESSAGES)
    assert answer.usage.estimated is True and client.usage.estimated is True
    # cl100k_base: "five words in this answer" is 5 tokens; the prompt is 3 (reply priming) + 3 (message
    # wrapper) + 1 ("user") + 3 ("write notes please")
    assert answer.usage.completion_tokens == 5
    assert answer.usage.prompt_tokens == 10
    assert client.usage.estimated_calls == 1


def test_openai_prefix_is_stripped_for_the_endpoint(replay):
    with replay.script([{"content": "x"}]) as srv:
        ModelClient(settings(srv, name="openai/qwen3")).complete(MESSAGES)
    assert srv.requests[0]["model"] == "qwen3"


def test_transport_choice():
    assert transport_for(ModelSettings(name="qwen", base_url="http://h/v1")) == "http"
    assert transport_for(ModelSettings(name="openai/qwen", base_url="http://h/v1")) == "http"
    assert transport_for(ModelSettings(name="anthropic/claude-x")) == "litellm"
    assert transport_for(ModelSettings(name="gpt-4o")) == "litellm"
    assert transport_for(ModelSettings(name="qwen", base_url="http://h/v1", extra={"client": "litellm"})) == "litellm"


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("TAKEOVER_SLOW_TESTS"), reason="imports litellm (10+ s); set TAKEOVER_SLOW_TESTS=1")
def test_litellm_transport_has_the_same_retry_accounting(replay):
    with replay.script([{"status": 429, "error": "rate limited"}, {"content": "via litellm"}]) as srv:
        client = ModelClient(settings(srv, name="openai/m", backoff=0.01, extra={"client": "litellm"}))
        answer = client.complete(MESSAGES)
    assert answer.content == "via litellm"
    assert [a.status for a in answer.attempts] == ["http_429", "ok"]
    assert srv.served == 2
