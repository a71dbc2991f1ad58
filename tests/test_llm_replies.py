"""What a reply holds, read without a server: thinking blocks kept out of answers, Retry-After read in both
forms, usage details, the token estimator pinned to counts published by OpenAI, strict settings."""

from __future__ import annotations

import email.utils

import pytest
from pydantic import ValidationError

from takeover.llm import (
    ModelSettings,
    retry_after_seconds,
    strip_thinking,
    usage_from_payload,
)

NOTES_JSON = '{"problem_understanding": "quote qop"}'


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        (f'<think>Maybe {{"a": 1}} or {{"b": 2}}?</think>\n{NOTES_JSON}', NOTES_JSON),
        (f"<thinking>\nfirst {{ then }}\n</thinking>{NOTES_JSON}", NOTES_JSON),
        (f"<THINK>upper case</THINK> {NOTES_JSON}", NOTES_JSON),
        (f"the template opened the block {{x}}</think>\n\n{NOTES_JSON}", NOTES_JSON),  # opening tag in the prompt
        ("<think>cut while thinking {", ""),  # never closed: nothing after it is an answer
        ("- a note\n<think>aside</think>\n- another note", "- a note\n\n- another note"),
        ("  plain answer with no thinking  ", "plain answer with no thinking"),
        ("", ""),
    ],
)
def test_thinking_blocks_never_reach_the_answer(reply, answer):
    assert strip_thinking(reply) == answer


def test_retry_after_in_seconds_milliseconds_and_as_an_http_date():
    assert retry_after_seconds({"Retry-After": "6"}) == 6.0
    assert retry_after_seconds({"retry-after": "0.5"}) == 0.5
    assert retry_after_seconds({"retry-after-ms": "250", "Retry-After": "9"}) == 0.25  # OpenAI's finer header
    now = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC
    date = email.utils.formatdate(now + 6, usegmt=True)
    assert date == "Thu, 01 Jan 2026 00:00:06 GMT"
    assert retry_after_seconds({"Retry-After": date}, now=now) == 6.0
    assert retry_after_seconds({"Retry-After": date}, now=now + 60) == 0.0  # a date in the past: no wait
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds({}) is None and retry_after_seconds(None) is None


def test_usage_details_are_read_apart():
    usage = usage_from_payload({
        "prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
        "prompt_tokens_details": {"cached_tokens": 100}, "completion_tokens_details": {"reasoning_tokens": 20},
    })
    assert (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens, usage.reasoning_tokens) == (120, 30, 100, 20)
    assert usage.estimated is False
    anthropic = usage_from_payload({"prompt_tokens": 10, "completion_tokens": 2, "cache_read_input_tokens": 8})
    assert (anthropic.cached_tokens, anthropic.reasoning_tokens) == (8, None)
    assert usage_from_payload({}) is None and usage_from_payload(None) is None
    assert usage_from_payload({"total_tokens": 5}) is None


def test_settings_refuse_unknown_keys_with_the_key_named():
    with pytest.raises(ValidationError, match="base_ur"):
        ModelSettings.model_validate({"model": "m", "base_ur": "http://h/v1"})
    with pytest.raises(ValidationError, match="unknown key 'top_p' in extra"):
        ModelSettings(model="m", extra={"top_p": 0.9})
    with pytest.raises(ValidationError, match="extra.client is 'grpc'"):
        ModelSettings(model="m", extra={"client": "grpc"})
    settings = ModelSettings(model="m", extra={"client": "http", "params": {"top_p": 0.9}})
    assert settings.public()["max_retry_wait"] == 60.0 and "api_key" not in settings.public()
