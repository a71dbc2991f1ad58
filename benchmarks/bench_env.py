"""Benchmark: a first environment build against its reuse by a new workspace, side by side.

For each instance (default: one pytest and one sympy instance of the mirror), in a fresh cache folder:
  * workspace creation seconds (``RepoSource.workspace``: shared-object clone + checkout);
  * environment seconds for the first workspace (the shared venv is built and the project installed);
  * environment seconds for each further new workspace (shared venv and project install reused);
  * the ratio first / median reuse (the target is at least 10).

Usage:
  TAKEOVER_MIRROR=/work/mirror python benchmarks/bench_env.py
      [--instance-id pytest-dev__pytest-7432 --instance-id sympy__sympy-20590] [--repeats 3]
      [--dataset ../shared/data/swebench_verified.jsonl] [--cache DIR]

The cache folder (``--cache``, default a new temporary folder) is emptied first, so the first preparation
is a real build; uv's own download cache is left as it is (a build never waits for the network twice).
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
DEFAULT_INSTANCES = ("pytest-dev__pytest-7432", "sympy__sympy-20590")


def bench_one(task, source, tmp: Path, repeats: int) -> dict:
    """Workspace and environment seconds for one instance: the first preparation and ``repeats`` reuses."""
    from takeover.environments import prepare_environment

    ws_times, rows = [], []
    for i in range(repeats + 1):
        start = time.perf_counter()
        ws = source.workspace(task.repo, task.base_commit, tmp / f"{task.instance_id}-{i}")
        ws_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        env = prepare_environment(task, ws)
        rows.append((time.perf_counter() - start, env))
    first, first_env = rows[0]
    reuse = [seconds for seconds, _ in rows[1:]]
    return {"instance": task.instance_id, "version": task.version, "python": first_env.interpreter_version,
            "workspace": statistics.median(ws_times), "first": first, "first_build": first_env.build_seconds,
            "first_cached": first_env.cached, "reuse": statistics.median(reuse), "reuse_max": max(reuse),
            "reused": all(env.cached and env.project_reused for _, env in rows[1:]),
            "ratio": first / statistics.median(reuse)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", type=Path, default=ROOT.parent / "shared" / "data" / "swebench_verified.jsonl")
    ap.add_argument("--instance-id", action="append", dest="instance_ids")
    ap.add_argument("--repeats", type=int, default=3, help="new workspaces after the first (default 3)")
    ap.add_argument("--mirror", type=Path, default=None)
    ap.add_argument("--cache", type=Path, default=None, help="cache folder (TAKEOVER_CACHE) for this run; emptied")
    args = ap.parse_args()
    cache = args.cache or Path(tempfile.mkdtemp(prefix="takeover-bench-cache-"))
    shutil.rmtree(cache, ignore_errors=True)
    os.environ["TAKEOVER_CACHE"] = str(cache)

    from takeover.environments import env_spec_for
    from takeover.sources.repos import RepoSource
    from takeover.sources.tasks import load_tasks

    by_id = {t.instance_id: t for t in load_tasks(args.dataset)}
    tasks = [by_id[i] for i in (args.instance_ids or DEFAULT_INSTANCES)]
    env_spec_for(tasks[0])  # import swebench's constants before timing (a one-off cost of a few seconds)
    source = RepoSource(args.mirror or os.environ.get("TAKEOVER_MIRROR"), offline=True)
    tmp = Path(tempfile.mkdtemp(prefix="takeover-bench-env-"))
    try:
        results = [bench_one(task, source, tmp, args.repeats) for task in tasks]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if args.cache is None:
            shutil.rmtree(cache, ignore_errors=True)
    print(f"{'instance':28} {'version':7} {'python':7} {'workspace s':>11} {'first env s':>11} {'(build s)':>9} "
          f"{'reuse env s':>11} {'max':>6} {'first/reuse':>11}  reused")
    for r in results:
        print(f"{r['instance']:28} {r['version']:7} {r['python']:7} {r['workspace']:11.3f} {r['first']:11.2f} "
              f"{r['first_build']:9.2f} {r['reuse']:11.3f} {r['reuse_max']:6.3f} {r['ratio']:10.1f}x  "
              f"{'yes' if r['reused'] else 'NO'}")
    worst = min(r["ratio"] for r in results)
    print(f"target: reuse at least 10x faster than a first build: {'met' if worst >= 10 else 'NOT met'} "
          f"(lowest ratio {worst:.1f}x over {args.repeats} new workspaces each)")


if __name__ == "__main__":
    main()
