"""Structured output: asking an endpoint for JSON that follows a schema (docs/protocol.md section 7.4).

**Extension** (constrained decoding): the structured notes' writer asks the endpoint to decode only JSON
that follows the notes' schema. It changes no validation rule: the answer is validated exactly as any other
(docs/protocol.md section 7.4).

How the request says so is a setting of the endpoint, ``ModelSettings.extra["response_format"]``:

- ``json_schema`` (the default): OpenAI's ``{"type": "json_schema", "json_schema": {"name", "schema",
  "strict": true}}``, which OpenAI, vLLM, llama.cpp's own ``llama-server`` and Ollama accept;
- ``json_object``: ``{"type": "json_object", "schema": {...}}``, the only shape llama-cpp-python's server
  accepts (0.3.x: its ``response_format.type`` is ``text`` or ``json_object``, and a ``schema`` becomes a
  grammar); the embedded model's settings use it;
- ``none``: never send a ``response_format``.

An endpoint that refuses the parameter (HTTP 400, or 422 from a server that validates requests, whose error
names ``response_format``) is asked again once without it, and the refusal is remembered for the rest of
the process (:func:`remember_refusal`), so that later calls do not send it again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ResponseFormatMode = Literal["json_schema", "json_object", "none"]
RESPONSE_FORMAT_MODES: tuple[str, ...] = ("json_schema", "json_object", "none")
#: HTTP statuses with which an endpoint refuses a request parameter (422: FastAPI's request validation).
REFUSAL_STATUSES = ("http_400", "http_422")

# Endpoints (transport, base_url, model) that refused response_format in this process.
_refused: set[tuple[str, str, str]] = set()


@dataclass(frozen=True)
class ResponseSchema:
    """A JSON schema the answer must follow.

    Attributes:
        name: the schema's name (OpenAI's ``json_schema.name``: letters, digits, ``_`` and ``-``).
        schema: the JSON schema (an object schema).
    """

    name: str
    schema: dict[str, Any] = field(hash=False)


def request_field(mode: str, schema: ResponseSchema) -> dict[str, Any] | None:
    """The request's ``response_format`` for ``mode`` (``None``: send none).

    Raises:
        ValueError: an unknown mode.
    """
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": schema.name, "schema": schema.schema, "strict": True}}
    if mode == "json_object":
        return {"type": "json_object", "schema": schema.schema}
    if mode == "none":
        return None
    raise ValueError(f"unknown response_format mode {mode!r}; expected one of {', '.join(RESPONSE_FORMAT_MODES)}")


def refuses_response_format(status: str, error: str | None) -> bool:
    """Whether a failed attempt is the endpoint refusing ``response_format``: HTTP 400 or 422 with an error
    text that names the parameter."""
    return status in REFUSAL_STATUSES and "response_format" in (error or "")


def _endpoint(transport: str, base_url: str | None, model: str) -> tuple[str, str, str]:
    return transport, base_url or "", model


def remember_refusal(transport: str, base_url: str | None, model: str) -> None:
    """Note that this endpoint refused ``response_format`` (for the rest of the process)."""
    _refused.add(_endpoint(transport, base_url, model))


def refused(transport: str, base_url: str | None, model: str) -> bool:
    """Whether this endpoint refused ``response_format`` earlier in this process."""
    return _endpoint(transport, base_url, model) in _refused
