"""The one chat-completion client: note writing, agent runs, the embedded server's checks and the doctor.

Contract:

- Configured by :class:`takeover.llm.settings.ModelSettings`; retries follow :mod:`takeover.llm.retry`
  (429, 5xx, timeouts and dropped connections; ``Retry-After`` honoured up to ``max_retry_wait``).
- Every attempt is recorded (:class:`~takeover.llm.usage.CallAttempt`: status, seconds, the wait after
  it, usage), failed ones included, in the call's :class:`~takeover.llm.replies.Completion` or
  :class:`ModelCallError`, and summed in :attr:`ModelClient.usage`.
- Usage is the endpoint's own; missing or zero counts of a non-empty text are estimated and flagged
  (:func:`takeover.llm.usage.complete_usage`).
- A reply with no content and no tool call but reasoning the server split off raises
  :class:`ReasoningOnlyReply` at once (asking again would get the same reply).
- The API key is read from the environment at call time and never appears in an error message, a log
  line or a returned record (everything textual goes through :func:`takeover._util.redact.redact`).
- A call may ask for JSON that follows a schema (``response_schema``, :mod:`takeover.llm.response_format`):
  the request carries the endpoint's ``response_format`` shape; an endpoint that refuses it (an HTTP error of
  any status but 408/429 naming it) is asked at once in the next shape (``json_schema``, ``json_object``
  with the schema, none) and not sent the refused one again in this process. Each attempt records the mode
  it sent (:attr:`~takeover.llm.usage.CallAttempt.response_format`).
- With ``$TAKEOVER_CALL_LOG`` set, every attempt of a completion is also appended to that file as it ends
  (:mod:`takeover.llm.call_log`).

Two transports. For an OpenAI-compatible endpoint (a ``base_url`` with a bare model name, an ``openai/``
prefix, or a prefix that is no litellm provider such as ``Qwen/...``) we send the request ourselves with
``httpx``: litellm would route it through the OpenAI SDK, whose own retries and timeouts would hide the
attempts. Every other provider (``anthropic/...``, ``gemini/...``, ``ollama/...``, or a name without
``base_url``) goes through ``litellm.completion`` with litellm's retries switched off, under the same
policy. litellm is imported only then (it takes seconds), with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` so
that importing it needs no network.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any, Literal, Self, TypeVar

import httpx

from takeover._util.redact import redact
from takeover.errors import TakeoverError
from takeover.llm.call_log import log_call, logged_call
from takeover.llm.replies import Completion, completion_from_payload
from takeover.llm.response_format import (
    ResponseSchema,
    refuses_response_format,
    remember_refusal,
    request_field,
    usable_mode,
)
from takeover.llm.retry import RETRYABLE_STATUSES, AttemptFailed, retry_after_seconds, retrying
from takeover.llm.settings import ModelSettings
from takeover.llm.usage import CallAttempt, ModelUsage, complete_usage, usage_from_payload

Transport = Literal["http", "litellm"]
REASONING_ONLY = ("the endpoint returned only reasoning_content; serve the model without a reasoning parser "
                  "or raise max_tokens")
T = TypeVar("T")
_API_MESSAGE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")


class ModelCallError(TakeoverError):
    """A model call failed for good: a non-retryable error, or every attempt failed.

    Attributes:
        status: status of the last attempt (``http_400``, ``timeout``, ``reasoning_only``...).
        attempts: every attempt of the call (usage included).
    """

    def __init__(self, message: str, *, status: str, attempts: list[CallAttempt]):
        self.status = status
        self.attempts = attempts
        super().__init__(redact(message))

    @property
    def usage(self) -> ModelUsage:
        """Tokens and seconds the failed call spent."""
        return ModelUsage.of(self.attempts)


class ReasoningOnlyReply(ModelCallError):
    """The endpoint answered with reasoning only (``content`` empty, ``reasoning_content`` set): a server
    with a reasoning parser whose model never left its reasoning, often because ``max_tokens`` cut it."""


def import_litellm():
    """litellm, imported offline and quietly (seconds on first import)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else importing fetches a cost map
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def _prefix(name: str) -> str:
    return name.split("/", 1)[0] if "/" in name else ""


def transport_for(settings: ModelSettings) -> Transport:
    """``http`` for an OpenAI-compatible endpoint (``base_url`` and a name that is bare, ``openai/...`` or
    prefixed by something that is no litellm provider), else ``litellm``; ``extra["client"]`` forces one.
    """
    forced = settings.extra.get("client")
    if forced:
        return forced
    if not settings.base_url:
        return "litellm"
    prefix = _prefix(settings.model)
    if prefix in ("", "openai") or prefix not in import_litellm().provider_list:
        return "http"
    return "litellm"


def litellm_model_name(settings: ModelSettings) -> str:
    """The name litellm routes and prices by: ``openai/<name>`` for an OpenAI-compatible ``base_url``
    when the name has no litellm provider prefix, else the name itself."""
    name = settings.model
    if settings.base_url and transport_for(settings) == "http":
        return "openai/" + name.removeprefix("openai/")
    return name


def _api_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The standard keys of each message (a recorded assistant message carries ``reasoning_content``,
    ``provider_specific_fields`` and the like, which some servers refuse)."""
    return [{k: m[k] for k in _API_MESSAGE_KEYS if m.get(k) is not None} for m in messages]


class ModelClient:
    """Chat completions with one retry policy and per-attempt usage.

    Args:
        settings: endpoint, sampling and retry settings.
        sleep: waits between attempts (seconds); ``time.sleep`` by default.

    Attributes:
        usage: sums over every attempt made through this client (tokens, seconds, attempts).
        transport: ``http`` or ``litellm`` (:func:`transport_for`).
    """

    def __init__(self, settings: ModelSettings, *, sleep: Callable[[float], None] = time.sleep):
        self.settings = settings
        self.transport: Transport = transport_for(settings)
        self.usage = ModelUsage()
        self._sleep = sleep
        self._http: httpx.Client | None = None

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        tools: list[dict[str, Any]] | None = None,
        response_schema: ResponseSchema | None = None,
    ) -> Completion:
        """Send one chat request under the retry policy.

        Args:
            messages: OpenAI chat messages (``{"role", "content", ...}``).
            temperature, max_tokens: override the settings for this call (``max_tokens`` in tokens).
            tools: OpenAI tool definitions for native tool calls.
            response_schema: ask for JSON that follows this schema, in the endpoint's ``response_format``
                shape (:meth:`response_format_mode`); a shape the endpoint refuses (an HTTP error naming the
                parameter, :func:`~takeover.llm.response_format.refuses_response_format`) is not retried:
                the request is sent at once in the next shape, and so are later ones to this endpoint.

        Returns:
            the :class:`Completion` of the answered attempt, with every attempt of the call.

        Raises:
            ReasoningOnlyReply: the answer holds only reasoning (the message says what to change).
            ModelCallError: a non-retryable HTTP error (4xx other than 408/429), a malformed answer, or
                every attempt failed. The message is redacted and names the model, never the key.
        """
        s = self.settings
        mode = self.response_format_mode() if response_schema is not None else "none"
        request = {
            "messages": messages,
            "temperature": s.temperature if temperature is None else temperature,
            "max_tokens": s.max_tokens if max_tokens is None else max_tokens,
            "tools": tools,
            "response_format": request_field(mode, response_schema) if response_schema is not None else None,
        }
        send = self._send_http if self.transport == "http" else self._send_litellm
        if self.transport == "litellm":
            import_litellm()  # seconds of import time stay out of the first attempt's seconds

        def attempt() -> tuple[Completion, dict[str, Any]]:
            try:
                completion = self._completion(send(**request), messages)
            except AttemptFailed as exc:
                if request["response_format"] is not None and refuses_response_format(exc.status, str(exc)):
                    exc.retryable = False  # the same request would be refused again
                raise
            return completion, {"finish_reason": completion.finish_reason, "usage": completion.usage}

        attempts: list[CallAttempt] = []
        try:
            while True:
                try:
                    completion = self._retried(attempt, attempts, log=True,
                                               response_format=None if mode == "none" else mode)
                    break
                except AttemptFailed as exc:
                    if mode == "none" or not refuses_response_format(exc.status, str(exc)):
                        raise
                    # The endpoint refuses this shape: the next one at once, and never this one again here.
                    mode = remember_refusal(self.transport, s.base_url, s.model, mode)
                    request["response_format"] = request_field(mode, response_schema)
        except AttemptFailed as exc:
            where = f"model {s.model!r} at {s.base_url or 'provider default'}"
            if exc.status == "reasoning_only":
                raise ReasoningOnlyReply(f"{where}: {exc}", status=exc.status, attempts=attempts) from None
            why = "not retryable" if not exc.retryable else f"gave up after {len(attempts)} attempts"
            raise ModelCallError(f"{where}: {attempts[-1].error} ({why})", status=exc.status,
                                 attempts=attempts) from None
        finally:
            for a in attempts:
                self.usage.add(a)
        completion.attempts = attempts
        return completion

    def response_format_mode(self) -> str:
        """The ``response_format`` shape this endpoint is sent for a schema: the settings'
        ``extra["response_format"]`` (default ``json_schema``), or the shape after it that this endpoint has
        not refused in this process (:func:`~takeover.llm.response_format.usable_mode`)."""
        s = self.settings
        return usable_mode(str(s.extra.get("response_format") or "json_schema"), self.transport, s.base_url, s.model)

    def list_models(self) -> list[str]:
        """The model names an OpenAI-compatible endpoint serves (``GET <base_url>/models``; ``[]`` when its
        JSON answer has no ``data`` list), under the retry policy (not counted in :attr:`usage`).

        Raises:
            ModelCallError: no ``base_url``, an HTTP error, a failed connection, or an answer that is not a
                JSON object (status ``bad_response``).
        """
        s = self.settings
        if not s.base_url:
            raise ModelCallError(f"model {s.model!r}: listing models needs a base_url", status="error", attempts=[])

        def attempt() -> tuple[list[str], dict[str, Any]]:
            data = self._request_http("GET", "/models").get("data")
            return [str(m.get("id", "?")) for m in data if isinstance(m, dict)] if isinstance(data, list) else [], {}

        attempts: list[CallAttempt] = []
        try:
            return self._retried(attempt, attempts)
        except AttemptFailed as exc:
            raise ModelCallError(f"{s.base_url}/models: {attempts[-1].error}", status=exc.status,
                                 attempts=attempts) from None

    def context_tokens(self) -> int | None:
        """The model's context window (tokens) as the endpoint reports it in ``GET <base_url>/models``:
        ``max_model_len`` (vLLM), ``context_length`` (OpenRouter, LM Studio) or ``meta.n_ctx`` /
        ``meta.n_ctx_train`` (llama.cpp's server), of the entry named ``model`` (or the only entry).
        ``None`` when the endpoint says nothing of it or cannot be asked: one attempt, never an error,
        since the answer only decides a warning."""
        if not self.settings.base_url:
            return None
        try:
            data = self._request_http("GET", "/models").get("data")
        except AttemptFailed:
            return None
        entries = [m for m in data if isinstance(m, dict)] if isinstance(data, list) else []
        named = [m for m in entries if m.get("id") == self.settings.model] or (entries if len(entries) == 1 else [])
        for entry in named:
            meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
            for value in (entry.get("max_model_len"), entry.get("context_length"), meta.get("n_ctx"),
                          meta.get("n_ctx_train")):
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    return value
        return None

    def _retried(self, attempt: Callable[[], tuple[T, dict[str, Any]]], attempts: list[CallAttempt], *,
                 log: bool = False, response_format: str | None = None) -> T:
        """``attempt()`` under the retry policy; each attempt is appended to ``attempts`` with its seconds,
        the wait after it, the ``response_format`` mode it sent and the fields ``attempt`` returns beside its
        result (and, with ``log``, to the call log, :mod:`takeover.llm.call_log`). Re-raises the last
        :class:`AttemptFailed`."""

        def record(call: CallAttempt) -> None:
            attempts.append(call)
            if log:
                log_call(logged_call(self.settings.model, call))

        def timed() -> T:
            started = time.monotonic()
            try:
                result, fields = attempt()
            except AttemptFailed as exc:
                record(CallAttempt(
                    attempt=len(attempts) + 1, status=exc.status, seconds=round(time.monotonic() - started, 6),
                    retry_after=exc.retry_after, usage=exc.usage, error=redact(str(exc))[:500],
                    response_format=response_format,
                ))
                raise
            record(CallAttempt(attempt=len(attempts) + 1, status="ok", seconds=round(time.monotonic() - started, 6),
                               response_format=response_format, **fields))
            return result

        def waiting(seconds: float) -> None:
            attempts[-1].wait_seconds = round(seconds, 6)

        return retrying(self.settings, sleep=self._sleep, before_sleep=waiting)(timed)

    def _completion(self, payload: dict[str, Any], messages: list[dict[str, Any]]) -> Completion:
        try:
            completion = completion_from_payload(payload)
        except ValueError as exc:
            raise AttemptFailed("bad_response", str(exc), retryable=False) from None
        completion.usage = complete_usage(usage_from_payload(payload.get("usage")), messages, completion.reply_text())
        if completion.reasoning_only:
            raise AttemptFailed(
                "reasoning_only",
                f"{REASONING_ONLY} (finish_reason {completion.finish_reason!r}, "
                f"{completion.usage.completion_tokens} completion tokens)",
                retryable=False, usage=completion.usage,
            )
        return completion

    def close(self) -> None:
        """Close the HTTP connection pool (the client stays usable: the next call opens a new one)."""
        if self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- transports: each returns the answer as JSON or raises AttemptFailed ---------------------------
    def _request_http(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        s = self.settings
        if self._http is None:
            self._http = httpx.Client(timeout=httpx.Timeout(s.timeout))
        headers = {"Content-Type": "application/json"}
        key = s.api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        url = (s.base_url or "https://api.openai.com/v1").rstrip("/") + path
        try:
            resp = self._http.request(method, url, json=body, headers=headers)
        except httpx.TimeoutException:
            raise AttemptFailed("timeout", f"no answer within {s.timeout} s", retryable=True) from None
        except httpx.TransportError as exc:  # refused, reset, or closed without an answer
            raise AttemptFailed("connection_error", f"connection failed: {type(exc).__name__}: {exc}",
                                retryable=True) from None
        if resp.status_code != 200:
            raise AttemptFailed(
                f"http_{resp.status_code}", f"HTTP {resp.status_code}: {_error_detail(resp)}",
                retryable=resp.status_code in RETRYABLE_STATUSES, retry_after=retry_after_seconds(resp.headers),
            )
        try:
            payload = resp.json()
        except ValueError:
            raise AttemptFailed("bad_response", "answer is not JSON", retryable=False) from None
        if not isinstance(payload, dict):
            raise AttemptFailed("bad_response", "answer is not a JSON object", retryable=False)
        return payload

    def _send_http(self, *, messages, temperature, max_tokens, tools, response_format) -> dict[str, Any]:
        s = self.settings
        body: dict[str, Any] = {"model": s.model.removeprefix("openai/"), "messages": _api_messages(messages),
                                "temperature": temperature}
        if max_tokens is not None:
            body["max_tokens"] = int(max_tokens)
        if tools:
            body["tools"] = tools
        if response_format:
            body["response_format"] = response_format
        body.update(s.extra.get("params") or {})
        return self._request_http("POST", "/chat/completions", body)

    def _send_litellm(self, *, messages, temperature, max_tokens, tools, response_format) -> dict[str, Any]:
        litellm = import_litellm()
        s = self.settings
        kwargs: dict[str, Any] = {"model": litellm_model_name(s), "messages": messages, "temperature": temperature,
                                  "timeout": s.timeout, "num_retries": 0, "max_retries": 0, "drop_params": True}
        if max_tokens is not None:
            kwargs["max_tokens"] = int(max_tokens)
        if tools:
            kwargs["tools"] = tools
        if response_format:
            kwargs["response_format"] = response_format
        if s.base_url:
            kwargs["api_base"] = s.base_url
        key = s.api_key()
        if key:
            kwargs["api_key"] = key
        elif s.base_url:
            kwargs["api_key"] = "no-key"  # local endpoints take none, but the OpenAI SDK insists on one
        kwargs.update(s.extra.get("params") or {})
        try:
            resp = litellm.completion(**kwargs)
        except Exception as exc:  # noqa: BLE001 -- litellm maps provider errors onto many classes
            raise _litellm_failure(exc, s.timeout) from None
        return json.loads(resp.model_dump_json()) if hasattr(resp, "model_dump_json") else dict(resp)


def _error_detail(resp: httpx.Response) -> str:
    """The error text of a failed answer: OpenAI's ``error.message``, else the body (FastAPI servers, such as
    llama-cpp-python's, answer a refused field with ``{"detail": [...]}`` naming it)."""
    try:
        detail = resp.json().get("error", {})
        message = detail.get("message", "") if isinstance(detail, dict) else str(detail)
    except (ValueError, AttributeError):
        message = ""
    return message or " ".join(resp.text.split())[:300]


def _litellm_failure(exc: Exception, timeout: float) -> AttemptFailed:
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    headers = getattr(exc, "litellm_response_headers", None) or getattr(response, "headers", None)
    if "Timeout" in name:
        return AttemptFailed("timeout", f"no answer within {timeout} s", retryable=True)
    if isinstance(status, int) and 400 <= status < 600:
        return AttemptFailed(f"http_{status}", f"{name}: {exc}", retryable=status in RETRYABLE_STATUSES,
                             retry_after=retry_after_seconds(headers))
    if "Connection" in name:
        return AttemptFailed("connection_error", f"{name}: {exc}", retryable=True)
    return AttemptFailed("error", f"{name}: {exc}", retryable=False)
