"""The one retry policy of model calls, built on tenacity.

- Retried: HTTP 408, 429 and 5xx, timeouts and dropped or refused connections (:class:`AttemptFailed`
  with ``retryable``); anything else fails at once.
- At most ``1 + settings.retries`` attempts per call.
- The wait before the next attempt is what the server asked for in ``Retry-After`` (seconds, or an HTTP
  date, RFC 9110 section 10.2.3; OpenAI's ``retry-after-ms`` too) when it asked; otherwise exponential
  back-off with jitter, ``backoff * 2**(n-1) + uniform(0, backoff)`` seconds before retry ``n``. Every
  wait is capped at ``settings.max_retry_wait`` seconds.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable, Mapping
from datetime import UTC

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from takeover.llm.settings import ModelSettings
from takeover.llm.usage import Usage

RETRYABLE_STATUSES = frozenset({408, 429}) | frozenset(range(500, 600))


class AttemptFailed(Exception):
    """One attempt failed.

    Attributes:
        status: ``http_<code>``, ``timeout``, ``connection_error``, ``bad_response``, ``reasoning_only``...
        retryable: whether the policy may try again.
        retry_after: seconds the server asked to wait (``None``: it did not say).
        usage: tokens the failed attempt reported (a reasoning-only reply has some).
    """

    def __init__(self, status: str, message: str, *, retryable: bool, retry_after: float | None = None,
                 usage: Usage | None = None):
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.usage = usage


def retry_after_seconds(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """Seconds a response asks the client to wait: ``retry-after-ms`` (milliseconds), else ``Retry-After``
    as delta-seconds or as an HTTP date (relative to ``now``, seconds since the epoch). ``None`` when
    there is no such header or it cannot be read; never negative."""
    if not headers:
        return None
    lower = {str(k).lower(): str(v).strip() for k, v in headers.items()}
    try:
        if lower.get("retry-after-ms"):
            return max(0.0, float(lower["retry-after-ms"]) / 1000)
    except ValueError:
        pass
    value = lower.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class _ServerOrBackoff:
    """tenacity wait: the server's ``Retry-After`` when given, else exponential back-off with jitter."""

    def __init__(self, settings: ModelSettings):
        self.cap = settings.max_retry_wait
        self.backoff = wait_exponential_jitter(multiplier=settings.backoff, jitter=settings.backoff, max=self.cap)

    def __call__(self, state: RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome else None
        asked = getattr(failure, "retry_after", None)
        if asked is not None:
            return min(float(asked), self.cap)
        return self.backoff(state)


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, AttemptFailed) and exc.retryable


def retrying(settings: ModelSettings, *, sleep: Callable[[float], None] = time.sleep,
             before_sleep: Callable[[float], None] | None = None) -> Retrying:
    """A tenacity ``Retrying`` for one call under ``settings`` (see the module docstring).

    Args:
        settings: ``retries``, ``backoff`` and ``max_retry_wait`` are read.
        sleep: waits the given seconds (``time.sleep``; tests pass a recorder).
        before_sleep: told the seconds about to be waited, before each wait.

    The last :class:`AttemptFailed` (or any other exception, at once) is re-raised when no attempt is left.
    """
    def announce(state: RetryCallState) -> None:
        if before_sleep is not None and state.next_action is not None:
            before_sleep(state.next_action.sleep)

    return Retrying(
        stop=stop_after_attempt(1 + settings.retries),
        wait=_ServerOrBackoff(settings),
        retry=retry_if_exception(_retryable),
        sleep=sleep,
        before_sleep=announce,
        reraise=True,
    )
