"""The model side of a run: mini-swe-agent's litellm models driven by :class:`takeover.models.ModelSettings`.

Two action protocols (docs/protocol.md section 8):

- ``text`` (default, the paper's): ``LitellmTextbasedModel``; the response must hold exactly one
  ````mswea_bash_command```` block; no native tool calling.
- ``tools``: ``LitellmModel`` with mini-swe-agent's native ``bash`` tool.

Retries follow the settings (``retries`` attempts after the first, ``backoff`` seconds doubling), on rate
limits, server errors, timeouts and refused connections; every other error ends the run at once.
mini-swe-agent's own tenacity retry (10 attempts, 4-60 s waits) is turned off so that the settings are
the only policy. The API key is read from the settings' variable at call time and passed per call, so it
never enters a config that mini-swe-agent serializes into its trajectory.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from takeover.agents import _mswea
from takeover.models import ModelSettings
from takeover.trajectories.events import Usage

_mswea.load()

import litellm
from minisweagent.models.litellm_model import LitellmModel
from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel

RETRYABLE = (
    litellm.exceptions.RateLimitError,
    litellm.exceptions.InternalServerError,
    litellm.exceptions.ServiceUnavailableError,
    litellm.exceptions.APIConnectionError,
    litellm.exceptions.Timeout,
    litellm.exceptions.BadGatewayError,
)


class _SettingsRetry:
    """Mixin: our retry policy around ``_query`` and the API key per call."""

    abort_exceptions: ClassVar[list] = [BaseException]  # tenacity never retries; _query below does
    settings: ModelSettings

    def _query(self, messages: list[dict], **kwargs):
        key = self.settings.api_key()
        if key:
            kwargs["api_key"] = key
        elif self.settings.base_url:
            kwargs["api_key"] = "none"  # local OpenAI-compatible servers accept any key; litellm wants one
        delay = self.settings.backoff
        for attempt in range(self.settings.retries + 1):
            try:
                return super()._query(messages, **kwargs)
            except RETRYABLE:
                if attempt >= self.settings.retries:
                    raise
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")


class TextModel(_SettingsRetry, LitellmTextbasedModel):
    """Text protocol: one bash block per response."""


class ToolsModel(_SettingsRetry, LitellmModel):
    """Native tool calls (mini-swe-agent's ``bash`` tool)."""


def litellm_model_name(settings: ModelSettings) -> str:
    """The name litellm routes by: ``openai/<name>`` for an OpenAI-compatible ``base_url`` when the name
    has no litellm provider prefix (``openai/``, ``hosted_vllm/``, ``ollama/``, ...)."""
    name = settings.name
    provider = name.split("/", 1)[0] if "/" in name else ""
    if settings.base_url and provider not in set(litellm.provider_list):
        return f"openai/{name}"
    return name


def make_model(settings: ModelSettings, protocol: str, model_config: dict[str, Any]):
    """A mini-swe-agent model for ``settings`` and ``protocol``.

    Args:
        settings: endpoint, sampling and retry settings.
        protocol: ``text`` or ``tools``.
        model_config: the ``model`` section of mini-swe-agent's benchmark config (templates).
    """
    kwargs = dict(model_config.get("model_kwargs") or {})
    kwargs.update(
        {"temperature": settings.temperature, "timeout": settings.timeout, "num_retries": 0, "max_retries": 0}
    )
    if settings.max_tokens is not None:
        kwargs["max_tokens"] = settings.max_tokens
    if settings.base_url:
        kwargs["api_base"] = settings.base_url
    kwargs.update(settings.extra or {})
    config = {k: v for k, v in model_config.items() if k not in ("model_name", "model_kwargs", "model_class")}
    config.update(model_name=litellm_model_name(settings), model_kwargs=kwargs, cost_tracking="ignore_errors")
    cls = {"text": TextModel, "tools": ToolsModel}[protocol]
    model = cls(**config)
    model.settings = settings
    return model


def _api_messages(messages: list[dict]) -> list[dict]:
    return [{k: v for k, v in m.items() if k != "extra"} for m in messages if m.get("role") != "exit"]


def _content_text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content or ""


def estimate_tokens(model_name: str, messages: list[dict] | None = None, text: str | None = None) -> int:
    """Tokens of ``messages`` (chat) or ``text`` by litellm's bundled tokenizers (offline; tiktoken's
    ``cl100k_base`` for models it does not know)."""
    try:
        if messages is not None:
            return int(litellm.token_counter(model=model_name, messages=_api_messages(messages)))
        return int(litellm.token_counter(model=model_name, text=text or ""))
    except Exception:  # noqa: BLE001 - an exotic message shape: fall back to the plain text
        joined = "\n".join(_content_text(m) for m in messages or []) if messages is not None else (text or "")
        return int(litellm.token_counter(model="gpt-4", text=joined))


def usage_of(response: Any, *, model_name: str, prompt_messages: list[dict], completion_text: str) -> Usage:
    """The :class:`Usage` of one call from its raw response (``extra.response`` of a message).

    When the endpoint reported no usage (litellm then fills zeros), prompt and completion tokens are
    estimated with :func:`estimate_tokens` and the usage is marked ``estimated``.
    """
    usage = response.get("usage") if isinstance(response, dict) else None
    usage = usage or {}
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    if prompt <= 0:
        return Usage(
            prompt_tokens=estimate_tokens(model_name, messages=prompt_messages),
            completion_tokens=estimate_tokens(model_name, text=completion_text),
            estimated=True,
        )
    details = usage.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if cached is None and usage.get("cache_read_input_tokens") is not None:
        cached = usage.get("cache_read_input_tokens")
    return Usage(prompt_tokens=prompt, completion_tokens=completion, cached_tokens=cached)
