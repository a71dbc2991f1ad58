"""Settings of one model endpoint, shared by note writing (views) and agent runs.

Only the *name* of the environment variable that holds an API key is ever stored; the key itself is
read at call time and never written to logs, files or error messages.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from takeover.llm.response_format import RESPONSE_FORMAT_MODES

#: Keys :attr:`ModelSettings.extra` may hold.
EXTRA_KEYS = ("client", "params", "response_format", "identity")


class ModelSettings(BaseModel):
    """An OpenAI-compatible endpoint or any provider that ``litellm`` supports.

    Unknown keys are refused (a typo in an experiment file must not fall back to a default silently).

    Attributes:
        model: model name as the endpoint knows it (``gpt-4o``, ``openai/qwen``, ``anthropic/claude-...``):
            the OpenAI request's ``model`` field, the ``--model`` flag and the experiment file's ``model`` key.
        base_url: endpoint root (``http://127.0.0.1:8080/v1``); ``None`` for the provider's default.
        api_key_env: name of the environment variable holding the key (never the key itself).
        temperature: sampling temperature.
        max_tokens: completion token cap per call (tokens); ``None`` leaves it to the endpoint.
        timeout: seconds per HTTP request.
        retries: attempts after the first on rate limits (429), server errors (5xx), timeouts and dropped
            connections.
        backoff: first back-off (seconds) when the server does not say how long to wait; it doubles per
            retry, plus a random jitter of up to ``backoff`` seconds.
        max_retry_wait: cap (seconds) on any wait between two attempts, a server's ``Retry-After``
            included.
        extra: ``{"client": "http" | "litellm"}`` forces a transport (see
            :func:`takeover.llm.client.transport_for`); ``{"params": {...}}`` is merged into every request;
            ``{"response_format": "json_schema" | "json_object" | "none"}`` is the shape in which a request
            asks for JSON that follows a schema (:mod:`takeover.llm.response_format`; default
            ``json_schema``); ``{"identity": "..."}`` names the model behind ``base_url`` when its address
            changes from run to run (the embedded model: its weights' sha256 and server settings), so that
            unit keys use it instead of the address (:func:`key_form`).
    """

    model_config = ConfigDict(extra="forbid")

    model: str
    base_url: str | None = None
    api_key_env: str | None = "OPENAI_API_KEY"
    temperature: float = 0.0
    max_tokens: int | None = None
    timeout: float = Field(300.0, gt=0)
    retries: int = Field(3, ge=0)
    backoff: float = Field(1.0, ge=0)
    max_retry_wait: float = Field(60.0, ge=0)
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("extra")
    @classmethod
    def _known_extra(cls, value: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(value) - set(EXTRA_KEYS))
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r} in extra; expected {' or '.join(EXTRA_KEYS)}")
        if value.get("client") not in (None, "http", "litellm"):
            raise ValueError(f"extra.client is {value['client']!r}; expected 'http' or 'litellm'")
        if not isinstance(value.get("params", {}), dict):
            raise ValueError("extra.params must be a table of request parameters")  # noqa: TRY004 - pydantic reports ValueError only
        if value.get("response_format", "json_schema") not in RESPONSE_FORMAT_MODES:
            raise ValueError(f"extra.response_format is {value['response_format']!r}; expected one of "
                             f"{', '.join(RESPONSE_FORMAT_MODES)}")
        if not isinstance(value.get("identity", ""), str):
            raise ValueError("extra.identity must be a string")  # noqa: TRY004 - pydantic reports ValueError only
        return value

    def api_key(self) -> str | None:
        """The key from the environment at call time (``None`` if unset)."""
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def public(self) -> dict:
        """Settings safe to write into run records: no secrets, only the variable's name."""
        return self.model_dump(mode="json")


def key_form(data: dict[str, Any]) -> dict[str, Any]:
    """An endpoint's settings (a :meth:`ModelSettings.model_dump`) as unit keys hash them: without
    ``base_url`` when ``extra.identity`` says which model answers there (the embedded model is served on a
    free port, a new one each run; its identity is its weights' sha256 and server settings)."""
    identified = bool((data.get("extra") or {}).get("identity"))
    return {k: v for k, v in data.items() if not (identified and k == "base_url")}
