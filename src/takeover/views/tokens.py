"""Token estimates for prompt sizes (``views.json``), without network access.

tiktoken downloads its vocabularies on first use; litellm ships the ``cl100k_base`` and ``o200k_base``
files in its package (``litellm/litellm_core_utils/tokenizers``). We point tiktoken's cache there (only
when the user has not chosen a cache folder) without importing litellm itself, which takes seconds.
The estimate uses ``cl100k_base``; the numbers are estimates for comparing views, not the successor
model's own count. When the vocabulary cannot be loaded, the documented fallback is
``ceil(characters / 4)`` and :func:`estimator_name` says ``chars/4``.
"""

from __future__ import annotations

import importlib.util
import math
import os
from functools import lru_cache

ENCODING = "cl100k_base"


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
    """Estimated tokens of ``text`` (cl100k_base; ``ceil(len/4)`` when unavailable)."""
    if not text:
        return 0
    enc = _encoding()
    if enc is None:
        return math.ceil(len(text) / 4)
    return len(enc.encode_ordinary(text))
