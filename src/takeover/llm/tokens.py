"""The one token estimator, for prompt sizes and for replies whose endpoint reported no usage.

Offline: tiktoken downloads its vocabularies on first use, but litellm ships ``cl100k_base`` and
``o200k_base`` in its package (``litellm/litellm_core_utils/tokenizers``). We point tiktoken's cache
there (only when the user has not chosen a cache folder) without importing litellm itself, which takes
seconds. The estimate uses ``cl100k_base``; the numbers are estimates for comparing sizes, not the
model's own count. When the vocabulary cannot be loaded, the documented fallback is
``ceil(characters / 4)`` and :func:`estimator_name` says ``chars/4``.

A chat prompt is counted the way OpenAI documents it for ``cl100k_base`` chat models (the cookbook
"How to count tokens with tiktoken"): 3 tokens wrap every message, its role and content are encoded,
a ``name`` costs its tokens plus 1, and 3 tokens prime the reply.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

ENCODING = "cl100k_base"
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING_TOKENS = 3


@lru_cache(maxsize=1)
def _encoding():
    try:
        if not os.environ.get("TIKTOKEN_CACHE_DIR"):
            spec = importlib.util.find_spec("litellm")
            if spec and spec.submodule_search_locations:
                bundled = os.path.join(spec.submodule_search_locations[0], "litellm_core_utils", "tokenizers")
                if os.path.isdir(bundled):
                    os.environ["TIKTOKEN_CACHE_DIR"] = bundled
        import tiktoken

        return tiktoken.get_encoding(ENCODING)
    except Exception:  # noqa: BLE001 -- no tiktoken, or the vocabulary would need the network
        return None


def estimator_name() -> str:
    """``tiktoken:cl100k_base`` or ``chars/4`` (the fallback)."""
    return f"tiktoken:{ENCODING}" if _encoding() is not None else "chars/4"


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text`` (cl100k_base; ``ceil(characters / 4)`` when unavailable)."""
    if not text:
        return 0
    enc = _encoding()
    if enc is None:
        return math.ceil(len(text) / 4)
    return len(enc.encode_ordinary(text))


def message_text(message: dict[str, Any]) -> str:
    """The text of one chat message: its content (the text parts of a list content) and the name and
    arguments of its tool calls."""
    content = message.get("content")
    if isinstance(content, list):
        text = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    else:
        text = content or ""
    for call in message.get("tool_calls") or []:
        function = (call.get("function") or {}) if isinstance(call, dict) else {}
        arguments = function.get("arguments") or ""
        text += f"{function.get('name') or ''}{arguments if isinstance(arguments, str) else json.dumps(arguments)}"
    return text


def estimate_prompt_tokens(messages: Iterable[dict[str, Any]]) -> int:
    """Estimated prompt tokens of a chat request (see the module docstring for the message overhead).

    Returns 0 for no messages. Tool definitions sent beside the messages are not counted.
    """
    messages = list(messages)
    if not messages:
        return 0
    total = REPLY_PRIMING_TOKENS
    for message in messages:
        total += TOKENS_PER_MESSAGE + estimate_tokens(str(message.get("role") or ""))
        total += estimate_tokens(message_text(message))
        if message.get("name"):
            total += estimate_tokens(str(message["name"])) + TOKENS_PER_NAME
    return total
