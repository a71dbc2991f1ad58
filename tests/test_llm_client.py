"""The one model client against the scripted OpenAI-compatible server: attempts, waits and usage of every
reply shape a real endpoint sends (docs/protocol.md section 8: usage on every call)."""

from __future__ import annotations

import pytest
from _replay import Replay

from takeover.llm import (
    REASONING_ONLY,
    ModelCallError,
    ModelClient,
    ModelSettings,
    ReasoningOnlyReply,
    transport_for,
)

MESSAGES = [{"role": "user", "content": "write notes please"}]


@pytest.fixture(scope="module")
def replay():
    r = Replay()
    with r.server:
        yield r


def settings(srv: Replay, **kw) -> ModelSettings:
    base = {"model": "notes-model", "base_url": srv.base_url, "api_key_env": "TAKEOVER_TEST_API_KEY",
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
    # The first answer never comes in time; the second must, even on a loaded machine: 3 s for a local reply.
    with replay.script([{"delay": 60, "content": "too late"}, {"content": "in time"}]) as srv:
        client = ModelClient(settings(srv, timeout=3), sleep=waits.append)
        answer = client.complete(MESSAGES)
    assert answer.content == "in time"
    assert [a.status for a in answer.attempts] == ["timeout", "ok"]
    assert answer.attempts[0].seconds >= 3
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
        ModelClient(settings(srv, model="openai/qwen3")).complete(MESSAGES)
    assert srv.requests[0]["model"] == "qwen3"


def test_transport_choice():
    assert transport_for(ModelSettings(model="qwen", base_url="http://h/v1")) == "http"
    assert transport_for(ModelSettings(model="openai/qwen", base_url="http://h/v1")) == "http"
    assert transport_for(ModelSettings(model="anthropic/claude-x")) == "litellm"
    assert transport_for(ModelSettings(model="gpt-4o")) == "litellm"
    assert transport_for(ModelSettings(model="qwen", base_url="http://h/v1", extra={"client": "litellm"})) == "litellm"


@pytest.mark.slow
def test_litellm_transport_has_the_same_retry_accounting(replay):
    with replay.script([{"status": 429, "error": "rate limited"}, {"content": "via litellm"}]) as srv:
        client = ModelClient(settings(srv, model="openai/m", backoff=0.01, extra={"client": "litellm"}))
        answer = client.complete(MESSAGES)
    assert answer.content == "via litellm"
    assert [a.status for a in answer.attempts] == ["http_429", "ok"]
    assert srv.served == 2


# -- reply shapes of real endpoints ------------------------------------------------------------------------


def test_reasoning_only_reply_is_a_precise_error_and_not_retried(replay):
    reply = {"content": None, "reasoning_content": "Let me think about the notes first", "finish_reason": "length",
             "usage": {"prompt_tokens": 50, "completion_tokens": 7, "reasoning_tokens": 7}}
    with replay.script([reply, {"content": "never asked"}]) as srv:
        client = ModelClient(settings(srv))
        with pytest.raises(ReasoningOnlyReply) as info:
            client.complete(MESSAGES)
    assert srv.served == 1
    assert (info.value.status, [a.status for a in info.value.attempts]) == ("reasoning_only", ["reasoning_only"])
    assert REASONING_ONLY in str(info.value) and "finish_reason 'length'" in str(info.value)
    assert str(info.value).startswith("model 'notes-model' at http://127.0.0.1:")
    used = info.value.usage
    assert (used.prompt_tokens, used.completion_tokens, used.reasoning_tokens, used.failed_calls) == (50, 7, 7, 1)


def test_inline_thinking_with_braces_stays_in_content_and_out_of_the_answer(replay):
    content = '<think>The JSON could be {"a": 1} or {"b": 2}.</think>\n{"answer": 42}'
    with replay.script([{"content": content}]) as srv:
        answer = ModelClient(settings(srv)).complete(MESSAGES)
    assert answer.content == content and answer.answer == '{"answer": 42}'
    assert answer.usage.completion_tokens == len(content.split())


def test_a_reply_cut_at_the_cap_is_marked_truncated(replay):
    with replay.script([{"content": "- first note\n- second no", "finish_reason": "length"}]) as srv:
        answer = ModelClient(settings(srv)).complete(MESSAGES, max_tokens=8)
    assert answer.truncated and answer.finish_reason == "length"
    assert [(a.status, a.finish_reason) for a in answer.attempts] == [("ok", "length")]


def test_retry_after_in_seconds_is_honoured_up_to_the_cap(replay):
    waits: list[float] = []
    script = [{"status": 429, "error": "slow down", "retry_after": 6}, {"status": 429, "retry_after": 0.05},
              {"content": "ok"}]
    with replay.script(script) as srv:
        answer = ModelClient(settings(srv, max_retry_wait=0.2), sleep=waits.append).complete(MESSAGES)
    assert waits == [0.2, 0.05]  # asked 6 s, capped; asked 0.05 s, given exactly (no back-off, no jitter)
    assert [(a.status, a.retry_after, a.wait_seconds) for a in answer.attempts] == [
        ("http_429", 6.0, 0.2), ("http_429", 0.05, 0.05), ("ok", None, 0.0)]


def test_retry_after_as_an_http_date(replay):
    waits: list[float] = []
    with replay.script([{"status": 429, "retry_after_date": 60}, {"content": "ok"}]) as srv:
        answer = ModelClient(settings(srv, max_retry_wait=0.2), sleep=waits.append).complete(MESSAGES)
    asked = answer.attempts[0].retry_after
    assert 50.0 <= asked <= 60.0  # a date has whole seconds, and the reply may take seconds on a loaded machine
    assert waits == [0.2] and answer.attempts[0].wait_seconds == 0.2


def test_zero_prompt_tokens_for_a_prompt_are_estimated_and_flagged(replay):
    with replay.script([{"content": "a note", "usage": {"prompt_tokens": 0, "completion_tokens": 2}}]) as srv:
        client = ModelClient(settings(srv))
        answer = client.complete(MESSAGES)
    # 3 (reply priming) + 3 (message wrapper) + 1 ("user") + 3 ("write notes please"), cl100k_base
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens, answer.usage.estimated) == (10, 2, True)
    assert (client.usage.estimated_calls, client.usage.estimated) == (1, True)
    assert srv.requests[0]["messages"] == MESSAGES


def test_cached_and_reasoning_tokens_are_recorded_apart(replay):
    usage = {"prompt_tokens": 1000, "completion_tokens": 300, "cached_tokens": 900, "reasoning_tokens": 250}
    with replay.script([{"content": "ok", "reasoning_content": "thought it over", "usage": usage}] * 2) as srv:
        client = ModelClient(settings(srv))
        first = client.complete(MESSAGES)
        client.complete(MESSAGES)
    assert (first.usage.cached_tokens, first.usage.reasoning_tokens, first.usage.estimated) == (900, 250, False)
    assert first.reasoning_content == "thought it over" and first.content == "ok"
    total = client.usage
    assert (total.prompt_tokens, total.cached_tokens, total.completion_tokens, total.reasoning_tokens) == (
        2000, 1800, 600, 500)
    assert total.estimated_calls == 0 and len(total.attempts) == 2


def test_a_dropped_connection_is_retried(replay):
    waits: list[float] = []
    with replay.script([{"drop": True}, {"content": "back"}]) as srv:
        answer = ModelClient(settings(srv), sleep=waits.append).complete(MESSAGES)
    assert answer.content == "back" and srv.served == 2
    assert [a.status for a in answer.attempts] == ["connection_error", "ok"]
    assert "RemoteProtocolError" in answer.attempts[0].error and len(waits) == 1


def test_list_models_and_a_dead_endpoint(replay):
    with replay.script([]) as srv:
        assert ModelClient(settings(srv)).list_models() == ["scripted-model"]
        dead = srv.base_url.replace(str(srv.server.port), "9")  # port 9 (discard) is closed on 127.0.0.1
    with pytest.raises(ModelCallError) as info:
        ModelClient(settings(replay, base_url=dead, retries=0)).list_models()
    assert info.value.status == "connection_error" and len(info.value.attempts) == 1
