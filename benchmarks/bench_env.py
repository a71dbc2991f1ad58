"""Benchmark: workspace creation and cached-environment reuse (issue 3).

Prints, for one SWE-bench instance of the mirror:
  * workspace creation seconds (``RepoSource.workspace``: shared-object clone + checkout), N times;
  * environment seconds for the first workspace (a build when the cache lacks it) and for each further
    workspace (shared venv reused: only the per-workspace venv and the install step).

Usage:
  TAKEOVER_MIRROR=/work/mirror python benchmarks/bench_env.py --instance pytest-dev__pytest-5631 [--repeats 3]
      [--dataset ../shared/data/swebench_verified.jsonl] [--cache DIR]

``--cache DIR`` uses a separate cache folder, so that the first preparation is a real build.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", type=Path, default=ROOT.parent / "shared" / "data" / "swebench_verified.jsonl")
    ap.add_argument("--instance", default="pytest-dev__pytest-5631")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--mirror", type=Path, default=None)
    ap.add_argument("--cache", type=Path, default=None, help="cache folder (TAKEOVER_CACHE) for this run")
    args = ap.parse_args()
    if args.cache:
        os.environ["TAKEOVER_CACHE"] = str(args.cache)

    from takeover.environments import env_spec_for, prepare_environment
    from takeover.repos import RepoSource
    from takeover.tasks import load_tasks

    task = {t.instance_id: t for t in load_tasks(args.dataset)}[args.instance]
    env_spec_for(task)  # import swebench's constants before timing (a one-off cost of a few seconds)
    source = RepoSource(args.mirror, offline=True)
    tmp = Path(tempfile.mkdtemp(prefix="takeover-bench-env-"))
    try:
        ws_times, env_rows = [], []
        for i in range(args.repeats + 1):
            start = time.perf_counter()
            ws = source.workspace(task.repo, task.base_commit, tmp / f"ws{i}")
            ws_times.append(time.perf_counter() - start)
            start = time.perf_counter()
            env = prepare_environment(task, ws)
            env_rows.append((time.perf_counter() - start, env.cached, env.build_seconds, env.setup_seconds))
        print(f"instance {task.instance_id} ({task.repo} {task.version}), python {env.interpreter_version}")
        print(f"workspace creation: median {statistics.median(ws_times):.3f} s, "
              f"min {min(ws_times):.3f} s, max {max(ws_times):.3f} s over {len(ws_times)}")
        total, cached, build, setup = env_rows[0]
        print(f"environment, first workspace: {total:.2f} s (cached={cached}, shared-venv build {build:.2f} s, "
              f"workspace venv + install {setup:.2f} s)")
        reuse = [r[0] for r in env_rows[1:]]
        print(f"environment, cached reuse: median {statistics.median(reuse):.2f} s, min {min(reuse):.2f} s, "
              f"max {max(reuse):.2f} s over {len(reuse)} workspaces (all cached: {all(r[1] for r in env_rows[1:])})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
