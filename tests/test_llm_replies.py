"""What a reply holds, read without a server: thinking blocks kept out of answers, Retry-After read in both
forms, usage details, the token estimator pinned to counts published by OpenAI, strict settings."""

from __future__ import annotations

import email.utils

import pytest
from prerequisites import requires
from pydantic import ValidationError

from takeover.llm import (
    ModelSettings,
    estimate_prompt_tokens,
    estimate_tokens,
    estimator_name,
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


@requires("tiktoken vocabulary")
def test_token_estimates_match_the_counts_openai_publishes():
    """Counts from OpenAI's cookbook "How to count tokens with tiktoken" (cl100k_base): a sentence, and the
    example conversation the API itself counted as 129 prompt tokens (gpt-3.5-turbo-0613, gpt-4)."""
    assert estimator_name() == "tiktoken:cl100k_base"  # the vocabulary is there: no fallback to chars/4
    assert estimate_tokens("tiktoken is great!") == 6
    assert estimate_tokens("") == 0
    example = [
        {"role": "system", "content": "You are a helpful, pattern-following assistant that translates corporate "
                                      "jargon into plain English."},
        {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
        {"role": "system", "name": "example_assistant",
         "content": "Things working well together will increase revenue."},
        {"role": "system", "name": "example_user",
         "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased "
                    "leverage."},
        {"role": "system", "name": "example_assistant",
         "content": "Let's talk later when we're less busy about how to do better."},
        {"role": "user", "content": "This late pivot means we don't have time to boil the ocean for the client "
                                    "deliverable."},
    ]
    assert estimate_prompt_tokens(example) == 129
    assert estimate_prompt_tokens([]) == 0


def test_settings_refuse_unknown_keys_with_the_key_named():
    with pytest.raises(ValidationError, match="base_ur"):
        ModelSettings.model_validate({"model": "m", "base_ur": "http://h/v1"})
    with pytest.raises(ValidationError, match="unknown key 'top_p' in extra"):
        ModelSettings(model="m", extra={"top_p": 0.9})
    with pytest.raises(ValidationError, match="extra.client is 'grpc'"):
        ModelSettings(model="m", extra={"client": "grpc"})
    settings = ModelSettings(model="m", extra={"client": "http", "params": {"top_p": 0.9}})
    assert settings.public()["max_retry_wait"] == 60.0 and "api_key" not in settings.public()
