"""Model endpoint settings shared by note writing (views) and agent runs.

Only the *name* of the environment variable that holds an API key is ever stored; the key itself is
read at call time and never written to logs, files or error messages.
"""

from __future__ import annotations

import os

from pydantic import BaseModel, Field


class ModelSettings(BaseModel):
    """An OpenAI-compatible endpoint or any provider that ``litellm`` supports.

    Attributes:
        name: model name as the endpoint knows it (``gpt-4o``, ``openai/qwen``, ``ollama/qwen2.5-coder``).
        base_url: endpoint root (``http://127.0.0.1:8080/v1``); ``None`` for the provider's default.
        api_key_env: name of the environment variable holding the key (never the key itself).
        temperature: sampling temperature.
        max_tokens: completion token cap per call (tokens); ``None`` leaves it to the endpoint.
        timeout: seconds per HTTP request.
        retries: attempts after the first on rate limits (429), server errors (5xx) and timeouts.
        backoff: first backoff in seconds; doubles per retry.
    """

    name: str
    base_url: str | None = None
    api_key_env: str | None = "OPENAI_API_KEY"
    temperature: float = 0.0
    max_tokens: int | None = None
    timeout: float = 300.0
    retries: int = 3
    backoff: float = 1.0
    extra: dict = Field(default_factory=dict)

    def api_key(self) -> str | None:
        """The key from the environment at call time (``None`` if unset)."""
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def public(self) -> dict:
        """Settings safe to write into run records: no secrets, only the variable's name."""
        return self.model_dump(mode="json")
