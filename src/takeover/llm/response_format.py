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

An endpoint that refuses the shape it was sent falls back along :data:`FALLBACK`: ``json_schema``, then
``json_object`` with the schema, then ``none``. A refusal is an HTTP error whose error text names
``response_format``, whatever its status (OpenAI answers 400, a server that validates requests 422,
llama-cpp-python's server 500 with its validation error in the body), except the statuses of a busy
endpoint (408, 429), which say nothing about the parameter. A refusal is not retried: the same call is sent
at once in the next shape, and the refused shape is remembered for this endpoint for the rest of the process
(:func:`remember_refusal`), so that later calls start from the shape it accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ResponseFormatMode = Literal["json_schema", "json_object", "none"]
RESPONSE_FORMAT_MODES: tuple[str, ...] = ("json_schema", "json_object", "none")
#: The shape to send after an endpoint refused one (``none`` is never refused: it sends nothing).
FALLBACK: dict[str, str] = {"json_schema": "json_object", "json_object": "none"}
#: HTTP statuses of a busy endpoint: retried under the retry policy, never read as a refusal.
BUSY_STATUSES = ("http_408", "http_429")

# The shapes each endpoint (transport, base_url, model) refused in this process.
_refused: dict[tuple[str, str, str], set[str]] = {}


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
    """Whether a failed attempt is the endpoint refusing the ``response_format`` it was sent: an HTTP error
    (``http_<code>``, any code but 408 and 429) whose error text names the parameter."""
    return status.startswith("http_") and status not in BUSY_STATUSES and "response_format" in (error or "")


def _endpoint(transport: str, base_url: str | None, model: str) -> tuple[str, str, str]:
    return transport, base_url or "", model


def remember_refusal(transport: str, base_url: str | None, model: str, mode: str) -> str:
    """Note that this endpoint refused ``mode`` (for the rest of the process); returns the shape to send
    instead (:data:`FALLBACK`)."""
    _refused.setdefault(_endpoint(transport, base_url, model), set()).add(mode)
    return FALLBACK.get(mode, "none")


def usable_mode(mode: str, transport: str, base_url: str | None, model: str) -> str:
    """``mode``, or the first shape after it along :data:`FALLBACK` that this endpoint has not refused in this
    process (``none`` at the end)."""
    refused = _refused.get(_endpoint(transport, base_url, model), set())
    while mode in refused:
        mode = FALLBACK.get(mode, "none")
    return mode
