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
"""

from takeover.llm.client import (
    REASONING_ONLY,
    ModelCallError,
    ModelClient,
    ReasoningOnlyReply,
    litellm_model_name,
    transport_for,
)
from takeover.llm.replies import Completion, strip_thinking
from takeover.llm.retry import RETRYABLE_STATUSES, retry_after_seconds
from takeover.llm.settings import ModelSettings
from takeover.llm.tokens import estimate_prompt_tokens, estimate_tokens, estimator_name
from takeover.llm.usage import CallAttempt, ModelUsage, Usage, complete_usage, usage_from_payload

__all__ = [
    "REASONING_ONLY",
    "RETRYABLE_STATUSES",
    "CallAttempt",
    "Completion",
    "ModelCallError",
    "ModelClient",
    "ModelSettings",
    "ModelUsage",
    "ReasoningOnlyReply",
    "Usage",
    "complete_usage",
    "estimate_prompt_tokens",
    "estimate_tokens",
    "estimator_name",
    "litellm_model_name",
    "retry_after_seconds",
    "strip_thinking",
    "transport_for",
    "usage_from_payload",
]
