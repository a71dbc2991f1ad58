"""Report time and peak memory over synthetic takeover run records (issue 7).

Writes an experiment folder with ``--runs`` takeover runs (default 10,000: 2 successors x 4 views x
1,250 handoff points), each with its takeover unit, grading unit and its point's handoff-state unit, the
way ``takeover run`` lays them out; then times ``build_report`` (tables, 5,000-resample paired
bootstraps for every successor x view and every breakdown, plots) and reports peak memory.

    /work/venv/bin/python benchmarks/bench_report.py [--runs 10000] [--resamples 5000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from takeover.report import build_report

VIEWS = ("repo_only", "raw_trace", "summary_notes", "structured_notes")
TYPES = ("after_first_source_edit", "after_first_verification_result", "after_first_post_failure_edit")
STATES = ("needs_completion", "resolved_preserve", "broke_existing")


def _unit(folder: Path, stage: str, key: str, output: dict, **extra) -> None:
    record = {"stage": stage, "key": key, "status": "done", "reason": None, "failure_kind": None, "labels": {},
              "inputs": {}, "output": output, "started_at": "2026-01-01T00:00:00+00:00", "seconds": 1.0,
              "prompt_tokens": 0, "completion_tokens": 0, **extra}
    (folder / stage / f"{key}.json").write_text(json.dumps(record))


def write_synthetic(out: Path, runs: int, resamples: int, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    successors = ("model-a", "model-b")
    points = runs // (len(successors) * len(VIEWS))
    units = out / "units"
    for stage in ("handoff_state", "takeover", "grade", "view"):
        (units / stage).mkdir(parents=True, exist_ok=True)
    plan = {"name": "synthetic", "bootstrap": {"resamples": resamples, "seed": 20260430},
            "stages": {"handoff_state": [], "view": [], "takeover": [], "grade": []}}
    for p in range(points):
        pkey = f"p{p:06d}"
        ptype = TYPES[p % 3]
        plan["stages"]["handoff_state"].append({"key": f"h{p:06d}", "labels": {"point_key": pkey, "point_type": ptype}})
        _unit(units, "handoff_state", f"h{p:06d}", {"handoff_state": STATES[int(rng.integers(0, 3))]})
        for v, view in enumerate(VIEWS):
            if view.endswith("notes"):
                vkey = f"v{p:06d}{v}"
                plan["stages"]["view"].append({"key": vkey, "labels": {"view": view}})
                _unit(units, "view", vkey, {"characters": 4000}, prompt_tokens=3000, completion_tokens=400)
            for s, succ in enumerate(successors):
                tkey, gkey = f"t{p:06d}{v}{s}", f"g{p:06d}{v}{s}"
                labels = {"successor": succ, "instance_id": f"repo__x-{p}", "point_type": ptype, "point_key": pkey,
                          "view": view}
                plan["stages"]["takeover"].append({"key": tkey, "labels": labels})
                plan["stages"]["grade"].append({"key": gkey, "labels": {"takeover_key": tkey}})
                events = int(rng.lognormal(4.0 - 0.4 * (v > 0), 0.6))
                _unit(units, "takeover", tkey, {
                    "agent_events": events, "prompt_tokens": events * 15000, "completion_tokens": events * 120,
                    "initial_prompt_chars": 3000 + v * 20000, "initial_prompt_tokens": 800 + v * 5000,
                    "wall_seconds": events * 3.0, "exit_status": "submitted", "checkpoint_diff_preserved": True,
                    "only_source_files_changed": True})
                _unit(units, "grade", gkey, {"resolved": bool(rng.random() < 0.4 + 0.05 * v),
                                             "fail_to_pass_rate": 1.0, "pass_to_pass_rate": 1.0})
    (out / "plan.json").write_text(json.dumps(plan))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--resamples", type=int, default=5000)
    ap.add_argument("--keep", type=Path, help="write the synthetic experiment here and keep it")
    args = ap.parse_args()
    out = args.keep or Path(tempfile.mkdtemp(prefix="takeover-bench-report-"))
    t0 = time.perf_counter()
    write_synthetic(out, args.runs, args.resamples)
    print(f"wrote {args.runs} synthetic takeover runs in {time.perf_counter() - t0:.1f} s: {out}")
    try:
        tracemalloc.start()
        t0 = time.perf_counter()
        report = build_report(out)
        seconds = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"build_report: {len(report.rows)} rows, {seconds:.2f} s "
              f"({args.resamples} bootstrap resamples per comparison)")
        print(f"peak Python allocations (tracemalloc): {peak / 2**20:.1f} MiB; peak RSS of the process: {rss_mb:.0f} MiB")
    finally:
        if args.keep is None:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
