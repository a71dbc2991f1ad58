"""Build time of the OpenHands runtime's environment (its own Python 3.12 venv of ``openhands_requirements.lock``).

    .venv/bin/python benchmarks/bench_openhands_env.py [--cold]

Builds the environment into a scratch ``TAKEOVER_CACHE`` (the real cache is left alone) and prints the
seconds the build took and the venv's size, as ``environment.json`` records them. With uv's own cache warm
(the packages downloaded once before, as on a machine that built it already) the build is a copy of about
500 MB; ``--cold`` also gives uv a scratch cache, so every package is downloaded from the index (about
200 MB of wheels) and the figure includes the downloads. A second call in the same cache is timed too: it
finds the environment built and only reads ``environment.json``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

from takeover.environments.openhands_venv import openhands_environment


def _size_mb(path: str) -> float:
    out = subprocess.run(["du", "-sm", path], capture_output=True, text=True, check=False).stdout.split()
    return float(out[0]) if out else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", action="store_true", help="a scratch uv cache too: every package downloaded")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as uv_cache:
        os.environ["TAKEOVER_CACHE"] = cache
        if args.cold:
            os.environ["UV_CACHE_DIR"] = uv_cache
        t0 = time.perf_counter()
        env = openhands_environment()
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        openhands_environment()
        again = time.perf_counter() - t0
        print(f"{'uv cache':<12}{'build s':>10}{'recorded s':>12}{'reuse s':>10}{'venv MB':>10}  python  packages")
        print(f"{'cold' if args.cold else 'warm':<12}{first:>10.1f}{env.description['build_seconds']:>12.1f}"
              f"{again:>10.2f}{_size_mb(str(env.root)):>10.0f}  {env.description['python']}  "
              f"{len(env.description['packages'])}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
