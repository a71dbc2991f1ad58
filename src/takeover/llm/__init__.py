"""Talking to a model endpoint: settings, the one client, its retry policy, usage and token estimates.

Foundation layer: nothing here imports a later stage of ``takeover``. Note writing (:mod:`takeover.views`),
agent runs (:mod:`takeover.agents`, through mini-swe-agent's model interface), the embedded model's
checks and ``takeover doctor`` all call models through :class:`ModelClient`.

Modules:

- ``settings.py``: :class:`ModelSettings` (endpoint, sampling, retries; the API key's variable name only).
- ``client.py``: :class:`ModelClient` (httpx for OpenAI-compatible endpoints, litellm for other providers),
  :class:`ModelCallError`, :class:`ReasoningOnlyReply`.
- ``retry.py``: the retry policy (tenacity; ``Retry-After`` honoured up to a cap; back-off with jitter).
- ``replies.py``: :class:`Completion`; reasoning kept apart from the answer (:func:`strip_thinking`).
- ``usage.py``: :class:`Usage` of one call, :class:`CallAttempt`, sums in :class:`ModelUsage`.
- ``tokens.py``: the one token estimator (:func:`estimate_tokens`, :func:`estimate_prompt_tokens`).
- ``response_format.py``: structured output (:class:`ResponseSchema`; the request shapes, the refusal rule).
- ``call_log.py``: one JSON line per attempt in ``$TAKEOVER_CALL_LOG`` (:class:`LoggedCall`), for progress.
"""

from takeover.llm.call_log import CALL_LOG_ENV, LoggedCall, read_calls, serving_unit
from takeover.llm.client import (
    REASONING_ONLY,
    ModelCallError,
    ModelClient,
    ReasoningOnlyReply,
    litellm_model_name,
    transport_for,
)
from takeover.llm.replies import Completion, strip_thinking
from takeover.llm.response_format import RESPONSE_FORMAT_MODES, ResponseSchema
from takeover.llm.retry import RETRYABLE_STATUSES, retry_after_seconds
from takeover.llm.settings import ModelSettings
from takeover.llm.tokens import estimate_prompt_tokens, estimate_tokens, estimator_name
from takeover.llm.usage import CallAttempt, ModelUsage, Usage, complete_usage, usage_from_payload

__all__ = [
    "CALL_LOG_ENV",
    "REASONING_ONLY",
    "RESPONSE_FORMAT_MODES",
    "RETRYABLE_STATUSES",
    "CallAttempt",
    "Completion",
    "LoggedCall",
    "ModelCallError",
    "ModelClient",
    "ModelSettings",
    "ModelUsage",
    "ReasoningOnlyReply",
    "ResponseSchema",
    "Usage",
    "complete_usage",
    "estimate_prompt_tokens",
    "estimate_tokens",
    "estimator_name",
    "litellm_model_name",
    "read_calls",
    "retry_after_seconds",
    "serving_unit",
    "strip_thinking",
    "transport_for",
    "usage_from_payload",
]
