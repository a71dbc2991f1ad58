"""What a chat completion holds: the answer, the model's reasoning kept apart, and how the reply ended.

The answer comes from ``content`` only. Reasoning a server's reasoning parser split off
(``reasoning_content``, or ``reasoning`` in newer servers) is kept apart and never taken for the answer;
reasoning a model writes inline (``<think>...</think>``, ``<thinking>...</thinking>``) is removed from
the answer by :func:`strip_thinking`. ``finish_reason: "length"`` marks an answer cut at the completion
token cap (:attr:`Completion.truncated`).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from takeover.llm.usage import CallAttempt, Usage, usage_from_payload

_TAGS = "think|thinking"
_BLOCK = re.compile(rf"<({_TAGS})\s*>.*?</\1\s*>", re.DOTALL | re.IGNORECASE)
_OPEN = re.compile(rf"<(?:{_TAGS})\s*>", re.IGNORECASE)
_CLOSE = re.compile(rf"</(?:{_TAGS})\s*>", re.IGNORECASE)


def strip_thinking(text: str) -> str:
    """``text`` without its thinking blocks, stripped of surrounding white space.

    Removes every ``<think>...</think>`` and ``<thinking>...</thinking>`` block (tags in any case); a
    closing tag with no opening tag before it (chat templates that open the block in the prompt) removes
    everything up to it; an opening tag that is never closed (a reply cut while thinking) removes
    everything after it.
    """
    if not text:
        return ""
    first_close, first_open = _CLOSE.search(text), _OPEN.search(text)
    if first_close and (first_open is None or first_close.start() < first_open.start()):
        text = text[first_close.end():]
    text = _BLOCK.sub("", text)
    unclosed = _OPEN.search(text)
    if unclosed:
        text = text[: unclosed.start()]
    return text.strip()


class Completion(BaseModel):
    """One answered model call.

    Attributes:
        content: the reply's ``content`` as sent (``""`` for ``null``), inline thinking included.
        reasoning_content: reasoning the server returned apart from the content (``None``: none).
        finish_reason: ``stop``, ``length``, ``tool_calls``... as the endpoint said.
        tool_calls: native tool calls, OpenAI-shaped (``[{"id", "type", "function": {"name", "arguments"}}]``).
        model: the model name the endpoint answered with.
        usage: tokens of the answered attempt (estimated counts flagged, see :mod:`takeover.llm.usage`).
        attempts: every attempt of this call, failed ones first.
        response: the endpoint's JSON answer (a litellm response as JSON for litellm providers).
    """

    content: str = ""
    reasoning_content: str | None = None
    finish_reason: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    model: str | None = None
    usage: Usage = Field(default_factory=Usage)
    attempts: list[CallAttempt] = Field(default_factory=list)
    response: dict[str, Any] = Field(default_factory=dict)

    @property
    def answer(self) -> str:
        """The content without thinking blocks (:func:`strip_thinking`): what notes are made of."""
        return strip_thinking(self.content)

    @property
    def truncated(self) -> bool:
        """The reply was cut at the completion token cap (``finish_reason == "length"``)."""
        return self.finish_reason == "length"

    @property
    def reasoning_only(self) -> bool:
        """No answer and no tool call, only reasoning the server split off."""
        return not self.content.strip() and not self.tool_calls and bool((self.reasoning_content or "").strip())

    def reply_text(self) -> str:
        """Everything the reply held (content, reasoning, tool-call names and arguments), for estimates."""
        calls = "".join(
            f"{(c.get('function') or {}).get('name') or ''}{(c.get('function') or {}).get('arguments') or ''}"
            for c in self.tool_calls
        )
        return (self.reasoning_content or "") + self.content + calls


def completion_from_payload(payload: dict[str, Any]) -> Completion:
    """The :class:`Completion` of an OpenAI chat-completion answer (usage as reported, not yet completed).

    Raises:
        ValueError: the answer has no ``choices[0].message``.
    """
    try:
        choice = payload["choices"][0]
        message = choice["message"]
        if not isinstance(message, dict):
            raise TypeError("message is not an object")
    except (KeyError, IndexError, TypeError) as exc:
        raise ValueError(f"answer is not an OpenAI chat completion ({type(exc).__name__}: {exc})") from None
    reasoning = message.get("reasoning_content")
    if reasoning is None and isinstance(message.get("reasoning"), str):
        reasoning = message["reasoning"]
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return Completion(
        content=content or "",
        reasoning_content=reasoning if isinstance(reasoning, str) else None,
        finish_reason=choice.get("finish_reason"),
        tool_calls=[c for c in message.get("tool_calls") or [] if isinstance(c, dict)],
        model=payload.get("model"),
        usage=usage_from_payload(payload.get("usage")) or Usage(),
        response=payload,
    )
