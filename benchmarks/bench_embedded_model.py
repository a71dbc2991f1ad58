"""Speed of the embedded model on this machine: prompt processing and generation, tokens per second.

Run: ``python benchmarks/bench_embedded_model.py [--n-ctx 16384] [--threads N] [--prompt-words 1500 4000]``

Starts the embedded server (assembling the model on first use), sends one long prompt asking for a single
token (prompt speed) and one short prompt asking for up to 128 tokens (generation speed) per prompt
size, prints the figures as JSON lines, and stops the server. These figures set the quickstart's defaults.
"""

from __future__ import annotations

import argparse
import json
import time

from takeover.embedded_model import EmbeddedModel, measure_speed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-ctx", type=int, default=16384)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--prompt-words", type=int, nargs="+", default=[1500, 4000])
    args = parser.parse_args()
    model = EmbeddedModel(n_ctx=args.n_ctx, n_threads=args.threads)
    t0 = time.perf_counter()
    with model as settings:
        print(json.dumps({"start_seconds": round(time.perf_counter() - t0, 1), "n_ctx": model.n_ctx,
                          "threads": model.n_threads, "usage_check": model.usage_check}))
        for words in args.prompt_words:
            print(json.dumps({"prompt_words": words, **measure_speed(settings.base_url, model.spec.alias,
                                                                     prompt_words=words)}))


if __name__ == "__main__":
    main()
