"""Snapshot cost per event on a large repository (sympy) and checkpoint materialization time.

    TAKEOVER_MIRROR=/work/mirror /work/venv/bin/python benchmarks/bench_snapshots.py [--events N]

The agent runner (`takeover.agents`) takes a snapshot after every executed action, so its cost per event matters.
This script checks out sympy (sympy__sympy-15809's base commit) from the mirror, then simulates N events
of a typical run: most events change nothing (reading, grepping, running tests), some edit one source
file, some create or delete an untracked scratch file. It prints, in milliseconds: the first snapshot
(seeds the private index), the per-event ``take_snapshot`` cost (median, p90, max) for unchanged and
changed trees, the per-file diff of a changed tree (``snapshot_diff``), and the wall time of
``materialize_checkpoint`` (fresh workspace + ``git apply`` + verification by snapshot).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from takeover.checkpoints import materialize_checkpoint
from takeover.points import HandoffPoint
from takeover.repository_states.snapshots import snapshot_diff, snapshot_patch, take_snapshot
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask

ROOT = Path(__file__).resolve().parents[1]
DATASET = ROOT.parent / "shared" / "data" / "swebench_verified.jsonl"
INSTANCE = "sympy__sympy-15809"


def _task() -> SourceTask:
    with open(DATASET, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row["instance_id"] == INSTANCE:
                return SourceTask.model_validate(row)
    sys.exit(f"{INSTANCE} not in {DATASET}")


def _ms(values: list[float]) -> str:
    if not values:
        return "n/a"
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"median {statistics.median(values) * 1000:.1f} ms, p90 {p90 * 1000:.1f} ms, max {max(values) * 1000:.1f} ms (n={len(values)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200)
    args = parser.parse_args()
    if not os.environ.get("TAKEOVER_MIRROR"):
        sys.exit("set TAKEOVER_MIRROR to a folder holding sympy__sympy.git")
    task = _task()
    source = RepoSource(os.environ["TAKEOVER_MIRROR"], offline=True)
    with tempfile.TemporaryDirectory(prefix="bench-snapshots-") as tmp:
        start = time.perf_counter()
        ws = source.workspace(task.repo, task.base_commit, Path(tmp) / "ws")
        checkout = time.perf_counter() - start
        files = sum(1 for _ in (ws / "sympy").rglob("*.py"))
        start = time.perf_counter()
        take_snapshot(ws)
        first = time.perf_counter() - start

        target = ws / "sympy" / "functions" / "elementary" / "miscellaneous.py"
        original = target.read_text()
        unchanged, changed, diffs = [], [], []
        for i in range(args.events):
            kind = i % 10
            if kind == 3:  # a source edit
                target.write_text(original + f"\n# edit {i}\n")
            elif kind == 6:  # a scratch file appears
                (ws / f"reproduce_{i}.py").write_text(f"print({i})\n")
            elif kind == 8:  # and goes away
                for p in ws.glob("reproduce_*.py"):
                    p.unlink()
            start = time.perf_counter()
            tree = take_snapshot(ws)
            took = time.perf_counter() - start
            (changed if kind in (3, 6, 8) else unchanged).append(took)
            if kind in (3, 6, 8):
                start = time.perf_counter()
                snapshot_diff(ws, task.base_commit, tree)
                diffs.append(time.perf_counter() - start)
        patch = snapshot_patch(ws, task.base_commit, take_snapshot(ws))

        out = Path(tmp) / "checkpoint"
        point = HandoffPoint(type="after_first_source_edit", event_index=0)
        start = time.perf_counter()
        cp = materialize_checkpoint(task, None, point, patch, out, "recorded_snapshot", repo_source=source)
        materialize = time.perf_counter() - start

    print(f"repository: {task.repo} @ {task.base_commit[:12]} ({files} .py files under sympy/)")
    print(f"workspace checkout (git clone --shared + checkout): {checkout:.2f} s")
    print(f"first snapshot (seeds the private index): {first * 1000:.0f} ms")
    print(f"take_snapshot per event, tree unchanged: {_ms(unchanged)}")
    print(f"take_snapshot per event, tree changed:   {_ms(changed)}")
    print(f"snapshot_diff of a changed tree:         {_ms(diffs)}")
    all_events = unchanged + changed + diffs
    print(f"mean snapshot cost per event (incl. diffs when changed): {sum(all_events) / args.events * 1000:.1f} ms")
    print(f"materialize_checkpoint ({len(cp.files)} files, workspace + apply + verify): {materialize:.2f} s")


if __name__ == "__main__":
    main()
