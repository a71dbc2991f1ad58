"""Token usage of model calls: one call's :class:`Usage`, one HTTP attempt's :class:`CallAttempt`, and the
sums of many attempts (:class:`ModelUsage`).

Usage comes from the endpoint's own ``usage`` object (:func:`usage_from_payload`). A count the endpoint
left out, or reported as 0 for a non-empty text (a server that served the prompt from its cache may say
``prompt_tokens: 0``), is estimated with :mod:`takeover.llm.tokens` and the usage is flagged ``estimated``
(:func:`complete_usage`); cost metrics count prompt tokens on every call (docs/protocol.md section 8).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_serializer

from takeover.llm.tokens import estimate_prompt_tokens, estimate_tokens


class Usage(BaseModel):
    """Token usage of one LLM call, as the endpoint reported it (units: tokens; docs/protocol.md section 1).

    Attributes:
        prompt_tokens: prompt tokens of the call, cached ones included (OpenAI ``prompt_tokens``,
            response-style ``input_tokens``; for Anthropic-style usage, input + cache read + cache creation).
        completion_tokens: generated tokens, reasoning tokens included.
        cached_tokens: prompt tokens served from the provider's cache (OpenAI
            ``prompt_tokens_details.cached_tokens``, Anthropic ``cache_read_input_tokens``); ``None`` when
            the format does not say.
        cache_creation_tokens: prompt tokens written to the provider's cache (Anthropic
            ``cache_creation_input_tokens``); ``None`` when the format does not say.
        reasoning_tokens: completion tokens spent on reasoning (``completion_tokens_details.reasoning_tokens``,
            response-style ``output_tokens_details.reasoning_tokens``); ``None`` when the format does not say.
        estimated: true when the endpoint reported no usable count (no usage, or a prompt count of 0 for a
            non-empty prompt) and an estimate stands in; such counts are never summed as reported ones.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None
    cache_creation_tokens: int | None = None
    reasoning_tokens: int | None = None
    estimated: bool = False


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _detail(payload: dict[str, Any], key: str, field: str) -> int | None:
    details = payload.get(key)
    return _int(details.get(field)) if isinstance(details, dict) else None


def _first(*values: int | None) -> int | None:
    return next((v for v in values if v is not None), None)


def usage_from_payload(payload: dict[str, Any] | None) -> Usage | None:
    """The :class:`Usage` of one call's ``usage`` object, in any of the shapes the formats record; ``None``
    when there is none (units: tokens; docs/protocol.md section 1).

    Shapes (the first that has a count decides):

    - OpenAI chat completions: ``prompt_tokens``, ``completion_tokens``,
      ``prompt_tokens_details.cached_tokens`` (or ``cache_read_input_tokens`` as litellm passes
      Anthropic's on), cache-creation tokens (``prompt_tokens_details.cache_creation_tokens`` or
      ``cache_creation_input_tokens``), ``completion_tokens_details.reasoning_tokens``;
    - OpenAI Responses (``object: "response"``): ``input_tokens`` (cached ones included),
      ``output_tokens`` (reasoning included), ``input_tokens_details.cached_tokens``,
      ``output_tokens_details.reasoning_tokens``; Codex CLI's token counts name the same parts
      ``cached_input_tokens`` and ``reasoning_output_tokens``;
    - Anthropic Messages: ``input_tokens`` counts only uncached input, so the prompt is ``input_tokens`` +
      ``cache_read_input_tokens`` + ``cache_creation_input_tokens``, with those two as the cached and
      cache-creation parts.

    A missing count reads as 0 (see :func:`complete_usage`).
    """
    if not isinstance(payload, dict):
        return None
    prompt, completion = _int(payload.get("prompt_tokens")), _int(payload.get("completion_tokens"))
    cache_read = _int(payload.get("cache_read_input_tokens"))
    cache_creation = _int(payload.get("cache_creation_input_tokens"))
    if prompt is not None or completion is not None:
        cached = _first(_detail(payload, "prompt_tokens_details", "cached_tokens"), cache_read)
        creation = _first(_detail(payload, "prompt_tokens_details", "cache_creation_tokens"), cache_creation)
        reasoning = _detail(payload, "completion_tokens_details", "reasoning_tokens")
    else:
        prompt, completion = _int(payload.get("input_tokens")), _int(payload.get("output_tokens"))
        if prompt is None and completion is None and cache_read is None and cache_creation is None:
            return None
        if cache_read is not None or cache_creation is not None:  # Anthropic: input excludes the cache
            prompt = (prompt or 0) + (cache_read or 0) + (cache_creation or 0)
            cached, creation, reasoning = cache_read, cache_creation, None
        else:
            cached = _first(_detail(payload, "input_tokens_details", "cached_tokens"),
                            _int(payload.get("cached_input_tokens")))
            creation = None
            reasoning = _first(_detail(payload, "output_tokens_details", "reasoning_tokens"),
                               _int(payload.get("reasoning_output_tokens")))
    return Usage(
        prompt_tokens=prompt or 0,
        completion_tokens=completion or 0,
        cached_tokens=cached,
        cache_creation_tokens=creation,
        reasoning_tokens=reasoning,
    )


def complete_usage(reported: Usage | None, messages: list[dict[str, Any]], reply_text: str) -> Usage:
    """``reported`` with every missing or zero count of a non-empty text estimated and flagged.

    Args:
        reported: what the endpoint reported (``None``: no ``usage`` at all).
        messages: the chat messages sent (estimated by :func:`takeover.llm.tokens.estimate_prompt_tokens`).
        reply_text: everything the reply held (content, reasoning, tool-call arguments), for the completion.
    """
    usage = reported.model_copy() if reported is not None else Usage(estimated=True)
    if usage.prompt_tokens <= 0 and messages:
        usage.prompt_tokens = estimate_prompt_tokens(messages)
        usage.estimated = True
    if usage.completion_tokens <= 0 and reply_text:
        usage.completion_tokens = estimate_tokens(reply_text)
        usage.estimated = True
    return usage


class CallAttempt(BaseModel):
    """One HTTP attempt of one model call.

    Attributes:
        attempt: 1-based attempt number within its call.
        status: ``ok``, ``http_<code>`` (e.g. ``http_429``), ``timeout``, ``connection_error``,
            ``bad_response`` or ``reasoning_only`` (see :class:`takeover.llm.client.ReasoningOnlyReply`).
        seconds: wall time of the attempt (seconds), waiting before the next attempt excluded.
        retry_after: seconds the server asked to wait (its ``Retry-After`` header), before the cap.
        wait_seconds: seconds waited after this attempt before the next one (0 for the last attempt).
        finish_reason: the reply's ``finish_reason`` (``stop``, ``length``, ``tool_calls``...).
        usage: tokens of the attempt (``None`` for failed attempts that reported none).
        error: redacted error text for failed attempts.
        response_format: the ``response_format`` mode the request carried (``json_schema`` or
            ``json_object``, see :mod:`takeover.llm.response_format`); ``None`` (left out of the record):
            none was sent.
    """

    attempt: int
    status: str
    seconds: float
    retry_after: float | None = None
    wait_seconds: float = 0.0
    finish_reason: str | None = None
    usage: Usage | None = None
    error: str | None = None
    response_format: str | None = None

    @model_serializer(mode="wrap")
    def _without_unset_format(self, handler):
        # Records of calls that asked for no structured output stay as they were before the field existed.
        data = handler(self)
        if isinstance(data, dict) and data.get("response_format") is None:
            data.pop("response_format", None)
        return data


class ModelUsage(BaseModel):
    """Sums over HTTP attempts (units: tokens and seconds).

    Attributes:
        calls: HTTP attempts, failed ones included.
        failed_calls: attempts that got no usable answer.
        prompt_tokens, completion_tokens, cached_tokens, cache_creation_tokens, reasoning_tokens: sums of
            the attempts' usage.
        estimated_calls: attempts whose usage holds an estimated count.
        seconds: time inside the attempts; ``wait_seconds``: time waited between them.
        estimated: some count is estimated (``estimated_calls > 0``).
        attempts: every attempt summed here, in order.
    """

    calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cache_creation_tokens: int = 0
    reasoning_tokens: int = 0
    estimated_calls: int = 0
    seconds: float = 0.0
    wait_seconds: float = 0.0
    estimated: bool = False
    attempts: list[CallAttempt] = Field(default_factory=list)

    @classmethod
    def of(cls, attempts: list[CallAttempt]) -> ModelUsage:
        """The sums of ``attempts``."""
        total = cls()
        for attempt in attempts:
            total.add(attempt)
        return total

    def add(self, attempt: CallAttempt) -> None:
        """Count one attempt in."""
        self.calls += 1
        self.seconds = round(self.seconds + attempt.seconds, 6)
        self.wait_seconds = round(self.wait_seconds + attempt.wait_seconds, 6)
        self.failed_calls += attempt.status != "ok"
        if attempt.usage is not None:
            self.prompt_tokens += attempt.usage.prompt_tokens
            self.completion_tokens += attempt.usage.completion_tokens
            self.cached_tokens += attempt.usage.cached_tokens or 0
            self.cache_creation_tokens += attempt.usage.cache_creation_tokens or 0
            self.reasoning_tokens += attempt.usage.reasoning_tokens or 0
            self.estimated_calls += attempt.usage.estimated
            self.estimated = self.estimated or attempt.usage.estimated
        self.attempts.append(attempt)

    def merge(self, other: ModelUsage) -> None:
        """Add the sums and the attempts of ``other``."""
        for field in _COUNTS:
            setattr(self, field, getattr(self, field) + getattr(other, field))
        self.seconds = round(self.seconds + other.seconds, 6)
        self.wait_seconds = round(self.wait_seconds + other.wait_seconds, 6)
        self.estimated = self.estimated or other.estimated
        self.attempts.extend(other.attempts)


_COUNTS = ("calls", "failed_calls", "prompt_tokens", "completion_tokens", "cached_tokens", "cache_creation_tokens",
           "reasoning_tokens", "estimated_calls")
