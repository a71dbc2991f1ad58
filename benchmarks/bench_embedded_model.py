"""Speed of the embedded model on this machine: prompt processing and generation, tokens per second.

Run: ``python benchmarks/bench_embedded_model.py [--n-ctx 16384] [--n-threads N] [--prompt-words 1500 4000]``

Starts the embedded server (assembling the model on first use), sends one long prompt asking for a single
token (prompt speed) and one short prompt asking for up to 128 tokens (generation speed) per prompt
size, prints the figures as JSON lines, and stops the server. These figures set the quickstart's defaults.
"""

from __future__ import annotations

import argparse
import json
import time

from takeover.embedded_model import EmbeddedModel
from takeover.llm import ModelClient, ModelSettings


def measure_speed(settings: ModelSettings, *, prompt_words: int = 1500, max_tokens: int = 128) -> dict:
    """Tokens per second of an endpoint for prompt processing and generation (one request each).

    Prompt speed = prompt tokens / time of a request asking for 1 token; generation speed = completion
    tokens / (time of a request asking for ``max_tokens``). A fresh random-ish prompt defeats the server's
    prefix cache. Returns tokens, seconds and tokens per second (the endpoint's own usage counts).
    """
    filler = " ".join(f"word{i % 97}x{time.time_ns() % 1000}" for i in range(prompt_words))
    settings = settings.model_copy(update={"timeout": 900.0, "temperature": 0.0})
    with ModelClient(settings) as client:
        a = client.complete([{"role": "user", "content": f"{filler}\nSummarize the words above in one sentence."}],
                            max_tokens=1)
        b = client.complete([{"role": "user",
                              "content": "Write a Python function that parses an ISO date, with a docstring."}],
                            max_tokens=max_tokens)
    prompt_s, gen_s = a.attempts[-1].seconds, b.attempts[-1].seconds
    pt, ct = a.usage.prompt_tokens, b.usage.completion_tokens
    return {
        "prompt_tokens": pt, "prompt_seconds": round(prompt_s, 2), "prompt_tokens_per_s": round(pt / prompt_s, 1),
        "completion_tokens": ct, "completion_seconds": round(gen_s, 2),
        "completion_tokens_per_s": round(ct / gen_s, 1) if gen_s > 0 else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-ctx", type=int, default=16384)
    parser.add_argument("--n-threads", type=int, default=None)
    parser.add_argument("--prompt-words", type=int, nargs="+", default=[1500, 4000])
    args = parser.parse_args()
    model = EmbeddedModel(n_ctx=args.n_ctx, n_threads=args.n_threads)
    t0 = time.perf_counter()
    with model as settings:
        print(json.dumps({"start_seconds": round(time.perf_counter() - t0, 1), "n_ctx": model.n_ctx,
                          "threads": model.n_threads, "usage_check": model.usage_check}))
        for words in args.prompt_words:
            print(json.dumps({"prompt_words": words, **measure_speed(settings, prompt_words=words)}))


if __name__ == "__main__":
    main()
