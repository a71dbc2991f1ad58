"""What the embedded server's log says about each request: prompt tokens reused from its cache, prompt
tokens evaluated, generated tokens and the milliseconds each took.

llama-cpp-python's server (verbose, its default) prints for every completion, to the log
:class:`~takeover.embedded_model.EmbeddedModel` writes:

- ``Llama.generate: R prefix-match hit, remaining N prompt tokens to eval`` when the request's prompt
  starts with R tokens of the previous request's (kept in the KV cache and not evaluated again), or
  ``Llama.generate: full prompt already cached`` (nothing to evaluate); nothing when no prefix matched;
- llama.cpp's timings: ``prompt eval time = X ms / N tokens``, ``eval time = Y ms / M runs`` (generated
  tokens) and ``total time = Z ms / T tokens``, which ends the request's block.

The usage the server returns has no cached-token count, so this log is where prefix reuse is seen
(``benchmarks/bench_quickstart.py`` joins it with the quickstart's call log, request by request: the
server has one slot and answers requests in the order they arrive).
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")
_CACHED = re.compile(r"Llama\.generate: full prompt already cached")
_PROMPT = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
_EVAL = re.compile(r"\seval time =\s*([\d.]+) ms /\s*(\d+) runs")
_TOTAL = re.compile(r"total time =\s*([\d.]+) ms /\s*(\d+) tokens")


class ServerRequest(BaseModel):
    """One completion as the server's log reports it (units: tokens and milliseconds).

    Attributes:
        reused_tokens: prompt tokens taken from the KV cache (the previous request's prefix).
        evaluated_tokens: prompt tokens evaluated (llama.cpp's ``prompt eval`` count).
        prompt_ms: llama.cpp's ``prompt eval time``.
        generated_tokens, generation_ms: llama.cpp's ``eval`` runs and time (one run per generated token).
        total_ms: llama.cpp's ``total time`` of the request.
        fully_cached: the whole prompt was in the cache.
    """

    reused_tokens: int = 0
    evaluated_tokens: int = 0
    prompt_ms: float = 0.0
    generated_tokens: int = 0
    generation_ms: float = 0.0
    total_ms: float = 0.0
    fully_cached: bool = False


def parse_server_log(text: str) -> list[ServerRequest]:
    """The requests of a server log, in the order the server answered them (a block without its
    ``total time`` line, the request still running, is left out)."""
    requests: list[ServerRequest] = []
    current = ServerRequest()
    for line in text.splitlines():
        if m := _HIT.search(line):
            current.reused_tokens = int(m.group(1))
        elif _CACHED.search(line):
            current.fully_cached = True
        elif m := _PROMPT.search(line):
            current.prompt_ms, current.evaluated_tokens = float(m.group(1)), int(m.group(2))
        elif m := _EVAL.search(line):
            current.generation_ms, current.generated_tokens = float(m.group(1)), int(m.group(2))
        elif m := _TOTAL.search(line):
            current.total_ms = float(m.group(1))
            requests.append(current)
            current = ServerRequest()
    return requests


def read_server_log(path: Path | str, offset: int = 0) -> list[ServerRequest]:
    """:func:`parse_server_log` of the file from byte ``offset`` on (``[]`` when it is missing)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return parse_server_log(fh.read().decode("utf-8", errors="replace"))
    except FileNotFoundError:
        return []
