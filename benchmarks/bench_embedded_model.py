"""Speed of the embedded model on this machine: prompt processing and generation, tokens per second.

Run: ``python benchmarks/bench_embedded_model.py [--n-ctx 16384] [--n-threads N] [--prompt-words 1500 4000]``

Starts the embedded server (fetching the model on first use), prints the speed it measured at start-up
(a short prompt), then per prompt size sends one long prompt asking for a single token (prompt speed)
and one counting prompt asking for up to 128 tokens (generation speed), prints the figures as JSON lines,
and stops the server. These figures set the quickstart's defaults.
"""

from __future__ import annotations

import argparse
import json
import time

from takeover.embedded_model import EmbeddedModel, measure_speed
from takeover.llm import ModelSettings


def long_prompt_speed(settings: ModelSettings, *, prompt_words: int = 1500, max_tokens: int = 128) -> dict:
    """:func:`takeover.embedded_model.measure_speed` with a prompt of ``prompt_words`` words (the quickstart's
    prompts are thousands of tokens long; the server's start-up measures a short one). A fresh prompt
    defeats the server's prefix cache."""
    filler = " ".join(f"word{i % 97}x{time.time_ns() % 1000}" for i in range(prompt_words))
    speed = measure_speed(settings.model_copy(update={"timeout": 900.0}),
                          prompt=f"{filler}\nSummarize the words above in one sentence.", generated_tokens=max_tokens)
    return speed.model_dump()


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
                          "threads": model.n_threads, "usage_check": model.usage_check,
                          "start_up_speed": model.speed.model_dump() if model.speed else model.speed_error}))
        for words in args.prompt_words:
            print(json.dumps({"prompt_words": words, **long_prompt_speed(settings, prompt_words=words)}))


if __name__ == "__main__":
    main()
