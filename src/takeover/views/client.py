"""A chat-completion client for note writing: any OpenAI-compatible endpoint, or any provider litellm knows.

Contract:

- Configured by :class:`takeover.models.ModelSettings` (name, base URL, name of the API-key variable,
  temperature, max tokens, timeout in seconds, retries, first backoff in seconds).
- Retries, with exponential backoff (``backoff * 2**k`` seconds before retry ``k+1``), on HTTP 429, HTTP 5xx,
  timeouts and connection errors; any other 4xx fails at once. At most ``1 + retries`` attempts per call.
- Every attempt is recorded (:class:`CallAttempt`: status, seconds, tokens), failed ones included, and
  summed in :attr:`ModelClient.usage` (:class:`ModelUsage`).
- The API key is read from the environment at call time and never appears in an error message, a log
  line or a returned record (everything textual goes through :func:`takeover.redact.redact`).

Why two transports. For an OpenAI-compatible endpoint (a ``base_url`` with a bare model name or an
``openai/`` prefix) we send the request ourselves with ``httpx``: litellm routes such calls through the
OpenAI SDK, which carries its own retry loop (``max_retries``) and its own timeout defaults, so the
number of attempts, the seconds of each attempt and the usage of failed attempts could not be recorded
exactly. Every other provider (``anthropic/...``, ``gemini/...``, ``ollama/...``, or a bare name without
``base_url``) goes through ``litellm.completion`` with litellm's own retries switched off
(``num_retries=0``, ``max_retries=0``) and the same retry loop around it. litellm is imported lazily
(it takes seconds) with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` so that importing it needs no network.
``settings.extra["client"]`` (``"http"`` or ``"litellm"``) forces a transport;
``settings.extra["params"]`` (a dict) is merged into every request body.
"""

from __future__ import annotations

import os
import time
from typing import Any, Literal, Self

from pydantic import BaseModel, Field

from takeover.errors import TakeoverError
from takeover.models import ModelSettings
from takeover.redact import redact
from takeover.trajectories.events import Usage

Transport = Literal["http", "litellm"]
RETRYABLE_STATUSES = frozenset({429}) | frozenset(range(500, 600))


class CallAttempt(BaseModel):
    """One HTTP attempt of one model call.

    Attributes:
        attempt: 1-based attempt number within its call.
        status: ``ok``, ``http_<code>`` (e.g. ``http_429``), ``timeout``, ``connection_error`` or ``bad_response``.
        seconds: wall time of the attempt (seconds), backoff sleep excluded.
        usage: tokens the endpoint reported (``None`` for failed attempts that reported none).
        error: redacted error text for failed attempts.
    """

    attempt: int
    status: str
    seconds: float
    usage: Usage | None = None
    error: str | None = None


class ModelUsage(BaseModel):
    """Summed usage over calls (units: tokens and seconds); ``calls`` counts HTTP attempts, failed included."""

    calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    seconds: float = 0.0
    estimated: bool = False

    def add(self, attempt: CallAttempt) -> None:
        self.calls += 1
        self.seconds = round(self.seconds + attempt.seconds, 6)
        if attempt.status != "ok":
            self.failed_calls += 1
        if attempt.usage is not None:
            self.prompt_tokens += attempt.usage.prompt_tokens
            self.completion_tokens += attempt.usage.completion_tokens
            self.cached_tokens += attempt.usage.cached_tokens or 0
            self.estimated = self.estimated or attempt.usage.estimated

    def merge(self, other: ModelUsage) -> None:
        self.calls += other.calls
        self.failed_calls += other.failed_calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cached_tokens += other.cached_tokens
        self.seconds = round(self.seconds + other.seconds, 6)
        self.estimated = self.estimated or other.estimated


class Completion(BaseModel):
    """The answer of one successful call: text, its usage, and every attempt it took."""

    content: str
    finish_reason: str | None = None
    model: str | None = None
    usage: Usage = Field(default_factory=Usage)
    attempts: list[CallAttempt] = Field(default_factory=list)


class ModelCallError(TakeoverError):
    """A model call failed for good: a non-retryable error, or retries exhausted.

    Attributes:
        status: status of the last attempt (``http_400``, ``timeout``...).
        attempts: every attempt of the call (usage included).
    """

    def __init__(self, message: str, *, status: str, attempts: list[CallAttempt]):
        self.status = status
        self.attempts = attempts
        super().__init__(redact(message))


class _AttemptFailed(Exception):
    def __init__(self, status: str, message: str, retryable: bool, usage: Usage | None = None):
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.usage = usage


def _import_litellm():
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else importing fetches a cost map
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def transport_for(settings: ModelSettings) -> Transport:
    """``http`` for an OpenAI-compatible endpoint (``base_url`` + bare or ``openai/`` name), else ``litellm``."""
    forced = settings.extra.get("client")
    if forced in ("http", "litellm"):
        return forced
    if settings.base_url and ("/" not in settings.name or settings.name.startswith("openai/")):
        return "http"
    return "litellm"


def _usage_from(payload: dict | None) -> Usage | None:
    if not payload:
        return None
    details = payload.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if cached is None and payload.get("cache_read_input_tokens") is not None:
        cached = payload.get("cache_read_input_tokens")
    return Usage(
        prompt_tokens=int(payload.get("prompt_tokens") or 0),
        completion_tokens=int(payload.get("completion_tokens") or 0),
        cached_tokens=int(cached) if cached is not None else None,
    )


class ModelClient:
    """Chat completions with exact retry control and per-attempt usage.

    Args:
        settings: endpoint and limits (:class:`takeover.models.ModelSettings`).
        sleep: the function used to wait between attempts (seconds); ``time.sleep`` by default.

    Attributes:
        usage: sums over every attempt made through this client (tokens, seconds, attempts).
        attempts: every attempt made through this client, in order.
    """

    def __init__(self, settings: ModelSettings, *, sleep=time.sleep):
        self.settings = settings
        self.transport: Transport = transport_for(settings)
        self.usage = ModelUsage()
        self.attempts: list[CallAttempt] = []
        self._sleep = sleep
        self._http = None

    # -- public -------------------------------------------------------------------------------------
    def complete(
        self, messages: list[dict[str, Any]], *, temperature: float | None = None, max_tokens: int | None = None
    ) -> Completion:
        """Send one chat request; retry on 429/5xx/timeouts/connection errors with exponential backoff.

        Args:
            messages: OpenAI chat messages (``{"role", "content"}``).
            temperature, max_tokens: override the settings for this call (tokens for ``max_tokens``).

        Returns:
            :class:`Completion` with the text, the usage of the successful attempt and all attempts.

        Raises:
            ModelCallError: non-retryable HTTP error (4xx other than 429), a malformed answer, or every
                attempt failed. The message is redacted and names the model, never the key.
        """
        s = self.settings
        temperature = s.temperature if temperature is None else temperature
        max_tokens = s.max_tokens if max_tokens is None else max_tokens
        attempts: list[CallAttempt] = []
        total = 1 + max(0, int(s.retries))
        if self.transport == "http" and self._http is None:
            import httpx  # imported and connected outside the timed attempt

            self._http = httpx.Client(timeout=httpx.Timeout(s.timeout))
        if self.transport == "litellm":
            _import_litellm()  # seconds of import time stay out of the first attempt's seconds
        for n in range(1, total + 1):
            started = time.monotonic()
            try:
                if self.transport == "http":
                    content, finish, model, usage = self._http_call(messages, temperature, max_tokens)
                else:
                    content, finish, model, usage = self._litellm_call(messages, temperature, max_tokens)
            except _AttemptFailed as exc:
                rec = CallAttempt(
                    attempt=n,
                    status=exc.status,
                    seconds=round(time.monotonic() - started, 6),
                    usage=exc.usage,
                    error=redact(str(exc))[:500],
                )
                self._record(rec, attempts)
                if not exc.retryable or n == total:
                    why = "not retryable" if not exc.retryable else f"gave up after {n} attempts"
                    raise ModelCallError(
                        f"model {s.name!r} at {s.base_url or 'provider default'}: {rec.error} ({why})",
                        status=exc.status,
                        attempts=attempts,
                    ) from None
                self._sleep(s.backoff * (2 ** (n - 1)))
                continue
            if usage is None:
                usage = self._estimate_usage(messages, content)
            rec = CallAttempt(attempt=n, status="ok", seconds=round(time.monotonic() - started, 6), usage=usage)
            self._record(rec, attempts)
            return Completion(content=content, finish_reason=finish, model=model, usage=usage, attempts=attempts)
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------------------------
    def _record(self, rec: CallAttempt, attempts: list[CallAttempt]) -> None:
        attempts.append(rec)
        self.attempts.append(rec)
        self.usage.add(rec)

    @staticmethod
    def _estimate_usage(messages: list[dict[str, Any]], content: str) -> Usage:
        from takeover.views.tokens import estimate_tokens

        prompt = sum(estimate_tokens(str(m.get("content") or "")) for m in messages)
        return Usage(prompt_tokens=prompt, completion_tokens=estimate_tokens(content), estimated=True)

    def _request_body(self, messages, temperature, max_tokens, model_name: str) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model_name, "messages": messages, "temperature": temperature}
        if max_tokens is not None:
            body["max_tokens"] = int(max_tokens)
        body.update(self.settings.extra.get("params") or {})
        return body

    def _http_call(self, messages, temperature, max_tokens):
        import httpx

        s = self.settings
        name = s.name.removeprefix("openai/")
        url = (s.base_url or "https://api.openai.com/v1").rstrip("/") + "/chat/completions"
        headers = {"Content-Type": "application/json"}
        key = s.api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        try:
            resp = self._http.post(url, json=self._request_body(messages, temperature, max_tokens, name), headers=headers)
        except httpx.TimeoutException:
            raise _AttemptFailed("timeout", f"no answer within {s.timeout} s", True) from None
        except httpx.TransportError as exc:
            raise _AttemptFailed("connection_error", f"connection failed: {type(exc).__name__}: {exc}", True) from None
        if resp.status_code != 200:
            try:
                detail = resp.json().get("error", {})
                detail = detail.get("message", "") if isinstance(detail, dict) else str(detail)
            except ValueError:
                detail = resp.text[:300]
            raise _AttemptFailed(
                f"http_{resp.status_code}",
                f"HTTP {resp.status_code}: {detail}",
                resp.status_code in RETRYABLE_STATUSES,
            )
        try:
            payload = resp.json()
            choice = payload["choices"][0]
            content = choice["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise _AttemptFailed("bad_response", "answer is not an OpenAI chat completion", False) from None
        return content, choice.get("finish_reason"), payload.get("model"), _usage_from(payload.get("usage"))

    def _litellm_call(self, messages, temperature, max_tokens):
        litellm = _import_litellm()
        s = self.settings
        kwargs: dict[str, Any] = {
            "model": s.name,
            "messages": messages,
            "temperature": temperature,
            "timeout": s.timeout,
            "num_retries": 0,
            "max_retries": 0,
        }
        if max_tokens is not None:
            kwargs["max_tokens"] = int(max_tokens)
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
            status_code = getattr(exc, "status_code", None)
            name = type(exc).__name__
            if "Timeout" in name:
                raise _AttemptFailed("timeout", f"no answer within {s.timeout} s", True) from None
            if isinstance(status_code, int) and 400 <= status_code < 600:
                raise _AttemptFailed(
                    f"http_{status_code}", f"{name}: {exc}", status_code in RETRYABLE_STATUSES
                ) from None
            if "Connection" in name:
                raise _AttemptFailed("connection_error", f"{name}: {exc}", True) from None
            raise _AttemptFailed("error", f"{name}: {exc}", False) from None
        data = resp.model_dump() if hasattr(resp, "model_dump") else dict(resp)
        try:
            choice = data["choices"][0]
            content = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise _AttemptFailed("bad_response", "answer is not a chat completion", False) from None
        return content, choice.get("finish_reason"), data.get("model"), _usage_from(data.get("usage"))
