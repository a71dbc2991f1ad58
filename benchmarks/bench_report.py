"""Report time and peak memory over synthetic takeover run records, side by side with an older version.

Writes an experiment folder with ``--runs`` takeover runs (default 10,000: 2 successors x 4 views x
1,250 handoff points), each with its takeover unit, grading unit and its point's handoff-state unit, the
way ``takeover run`` lays them out. Then builds the report twice, each in a fresh process measured from
start to exit (imports included): once with this tree, once with the ``takeover`` package of
``--baseline`` (a git revision, checked out into a temporary folder). Printed side by side: wall time,
CPU time and peak resident memory (the process's ``ru_maxrss``, not only Python's traced allocations),
against the targets (under 5 s and under 200 MiB); then whether the outputs are identical.

    .venv/bin/python benchmarks/bench_report.py [--runs 10000] [--resamples 5000] [--baseline 358fcd7] [--keep DIR]

The baseline writes ``results.csv``, ``report.json``, ``report.md`` and the plots; this tree also writes
``report.html``. ``report.json`` may differ in the last binary digit of Wilson interval bounds (now
computed by scipy); everything else must be byte-identical.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
VIEWS = ("repo_only", "raw_trace", "summary_notes", "structured_notes")
TYPES = ("after_first_source_edit", "after_first_verification_result", "after_first_post_failure_edit")
STATES = ("needs_completion", "resolved_preserve", "broke_existing")
OUTPUTS = ("report.md", "results.csv", "report.json")
TARGET_SECONDS, TARGET_MIB = 5.0, 200.0

# Run in the measured process: build the report and say how long build_report itself took.
CHILD = """
import json, sys, time
t0 = time.perf_counter()
import takeover, takeover.report
t1 = time.perf_counter()
takeover.report.build_report(sys.argv[1])
t2 = time.perf_counter()
print(json.dumps({"package": takeover.__file__, "import_seconds": t1 - t0, "build_seconds": t2 - t1}))
"""


def _unit(folder: Path, stage: str, key: str, output: dict, **extra) -> None:
    record = {"stage": stage, "key": key, "status": "done", "reason": None, "failure_kind": None, "labels": {},
              "inputs": {}, "output": output, "started_at": "2026-01-01T00:00:00+00:00", "seconds": 1.0,
              "prompt_tokens": 0, "completion_tokens": 0, **extra}
    (folder / stage / f"{key}.json").write_text(json.dumps(record))


def write_synthetic(out: Path, runs: int, resamples: int, seed: int = 1) -> None:
    """The synthetic experiment: ``runs`` takeover runs with their grading and handoff-state units."""
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


def measure(out: Path, src: Path) -> dict:
    """Build the report of ``out`` in a fresh process importing ``takeover`` from ``src``; returns the
    child's own figures plus ``wall_seconds``, ``cpu_seconds`` and ``peak_rss_mib`` of the whole process."""
    env = {**os.environ, "PYTHONPATH": str(src), "MPLBACKEND": "Agg"}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(out)], env=env, stdout=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    stdout = proc.stdout.read().decode() if proc.stdout else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"report with {src} failed (exit {os.waitstatus_to_exitcode(status)})")
    result = json.loads(stdout.strip().splitlines()[-1])
    result.update(wall_seconds=wall, cpu_seconds=usage.ru_utime + usage.ru_stime, peak_rss_mib=usage.ru_maxrss / 1024)
    return result


def baseline_source(revision: str, into: Path) -> Path | None:
    """``src/`` of ``revision`` exported into ``into`` (``None`` when git or the revision is not there)."""
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "src"], check=True,
                                 capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def _floats_close(a, b) -> tuple[bool, int]:
    """Whether two JSON values are equal up to 1e-12 in floats; and how many floats differ at all."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return False, 0
        results = [_floats_close(a[k], b[k]) for k in a]
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False, 0
        results = [_floats_close(x, y) for x, y in zip(a, b)]
    elif isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-12, int(a != b)
    else:
        return a == b, 0
    return all(ok for ok, _ in results), sum(n for _, n in results)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--resamples", type=int, default=5000)
    ap.add_argument("--baseline", default="358fcd7", help="git revision to compare with ('' to skip)")
    ap.add_argument("--keep", type=Path, help="write the synthetic experiment here and keep it")
    args = ap.parse_args()
    out = args.keep or Path(tempfile.mkdtemp(prefix="takeover-bench-report-"))
    scratch = Path(tempfile.mkdtemp(prefix="takeover-bench-baseline-"))
    try:
        t0 = time.perf_counter()
        if not (out / "plan.json").exists():
            write_synthetic(out, args.runs, args.resamples)
        print(f"{args.runs} synthetic takeover run records in {out} ({time.perf_counter() - t0:.1f} s to write)")
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
        columns = []
        old_src = baseline_source(args.baseline, scratch) if args.baseline else None
        if old_src is not None:
            old = measure(out, old_src)
            for name in OUTPUTS:
                shutil.copy(out / name, scratch / name)
            columns.append((f"baseline {args.baseline}", old))
        elif args.baseline:
            print(f"baseline {args.baseline}: not available (no git checkout or no such revision)")
        new = measure(out, ROOT / "src")
        columns.append(("this tree", new))
        print(f"\n{'takeover report':28s}" + "".join(f"{name:>22s}" for name, _ in columns) + f"{'target':>12s}")
        rows = [("wall time, whole process", "wall_seconds", "s", f"< {TARGET_SECONDS:g} s"),
                ("  of which build_report", "build_seconds", "s", ""),
                ("CPU time (user + system)", "cpu_seconds", "s", ""),
                ("peak RSS", "peak_rss_mib", "MiB", f"< {TARGET_MIB:g} MiB")]
        for label, key, unit, target in rows:
            print(f"{label:28s}" + "".join(f"{r[key]:>18.2f} {unit:3s}" for _, r in columns) + f"{target:>12s}")
        print(f"\nwithin target: time {'yes' if new['wall_seconds'] < TARGET_SECONDS else 'NO'}, "
              f"memory {'yes' if new['peak_rss_mib'] < TARGET_MIB else 'NO'}")
        if old_src is not None:
            for name in OUTPUTS:
                before, after = (scratch / name).read_bytes(), (out / name).read_bytes()
                if before == after:
                    print(f"{name}: identical")
                elif name == "report.json":
                    close, differing = _floats_close(json.loads(before), json.loads(after))
                    print(f"{name}: {'equal' if close else 'DIFFERENT'}; {differing} float(s) differ in the last "
                          f"digits (Wilson interval bounds now from scipy), all within 1e-12")
                else:
                    print(f"{name}: DIFFERENT")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if args.keep is None:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
