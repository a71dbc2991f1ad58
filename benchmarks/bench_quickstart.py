"""Quickstart time with the embedded model: stage wall times, the llama.cpp server's CPU seconds, load.

Runs ``takeover quickstart`` (embedded 0.5B model, local inputs, offline) in a fresh process, once with this
tree and, with ``--baseline REV``, once with the ``takeover`` package of that git revision (exported into a
temporary folder and put first on ``PYTHONPATH``), one after the other in the same session. For each run it
prints: the wall time of every stage (from ``OUT/quickstart.json``), the total wall time, the CPU seconds of
the model server process (user + system, sampled from ``/proc`` every 0.5 s until it exits; what the model
itself cost, independent of other jobs on the machine), the CPU seconds of the whole quickstart process tree,
the load average at start and at end, and the quickstart's own outcome (units done/failed per stage, solved
runs per view). The machine may be shared: compare CPU seconds first, wall times with the load beside them.

    .venv/bin/python benchmarks/bench_quickstart.py --dataset DATA/swebench_verified.jsonl \\
        --trajectories DATA/trajectories/mini-swe-agent/pytest-dev__pytest-7521.json --mirror /work/mirror \\
        [--baseline main] [--keep DIR] [--json]

Needs the ``quickstart`` extra (llama-cpp-python) and the embedded model in the cache (it is fetched on
first use otherwise, which is then part of the time).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TICKS = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(c) for c in text.split()]


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        for child in _children(todo.pop()):
            out.append(child)
            todo.append(child)
    return out


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of one process (``/proc/PID/stat`` fields 14 and 15), ``None`` when gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def _is_server(pid: int) -> bool:
    try:
        return b"llama_cpp.server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


class ServerCpu(threading.Thread):
    """Samples the CPU seconds of every llama.cpp server process below ``pid`` until ``stop`` is set;
    ``seconds`` is the sum of each server's last sample (a server's last sample is taken at most 0.5 s
    before it exits)."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid = pid
        self.last: dict[int, float] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.5):
            for child in _descendants(self.pid):
                if child in self.last or _is_server(child):
                    cpu = _cpu_seconds(child)
                    if cpu is not None:
                        self.last[child] = cpu

    @property
    def seconds(self) -> float:
        return sum(self.last.values())


def baseline_source(revision: str, into: Path) -> Path:
    """``src/`` of ``revision`` exported into ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "src"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def run_once(label: str, src: Path, out: Path, flags: list[str]) -> dict:
    """One quickstart with ``takeover`` imported from ``src``; its figures."""
    env = {**os.environ, "PYTHONPATH": str(src), "MPLBACKEND": "Agg", "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-m", "takeover", "quickstart", "--offline", "--out-dir", str(out), *flags]
    load_start = os.getloadavg()
    log = (out.parent / f"{out.name}.log").open("wb")
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    sampler = ServerCpu(proc.pid)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    sampler.stop.set()
    sampler.join()
    log.close()
    result = json.loads((out / "quickstart.json").read_text()) if (out / "quickstart.json").exists() else {}
    return {
        "label": label,
        "exit_status": os.waitstatus_to_exitcode(status),
        "wall_seconds": round(wall, 1),
        "server_cpu_seconds": round(sampler.seconds, 1),
        "tree_cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
        "load_start": [round(x, 2) for x in load_start],
        "load_end": [round(x, 2) for x in os.getloadavg()],
        "stages": {s["stage"]: s["seconds"] for s in result.get("stages", [])},
        "details": {s["stage"]: s["detail"] for s in result.get("stages", [])},
        "problems": result.get("problems", []),
        "log": str(out.parent / f"{out.name}.log"),
    }


def _print(runs: list[dict]) -> None:
    stages: list[str] = []
    for r in runs:
        stages += [s for s in r["stages"] if s not in stages]
    width = max(len(s) for s in stages + ["server CPU seconds"]) + 2
    print("".ljust(width) + "".join(r["label"].rjust(22) for r in runs))
    for s in stages:
        print(s.ljust(width) + "".join(
            (f"{r['stages'][s]:.1f} s" if s in r["stages"] else "-").rjust(22) for r in runs))
    for name, key, unit in (("total wall", "wall_seconds", " s"), ("server CPU seconds", "server_cpu_seconds", " s"),
                            ("process tree CPU", "tree_cpu_seconds", " s")):
        print(name.ljust(width) + "".join(f"{r[key]:.1f}{unit}".rjust(22) for r in runs))
    for name, key in (("load at start", "load_start"), ("load at end", "load_end")):
        print(name.ljust(width) + "".join(" ".join(f"{x:.2f}" for x in r[key]).rjust(22) for r in runs))
    print("exit status".ljust(width) + "".join(str(r["exit_status"]).rjust(22) for r in runs))
    for r in runs:
        print(f"\n{r['label']}: log {r['log']}")
        for s, d in r["details"].items():
            if d:
                print(f"  {s}: {d}")
        for p in r["problems"]:
            print(f"  problem: {p}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--trajectories", required=True)
    ap.add_argument("--mirror", required=True)
    ap.add_argument("--baseline", default="", help="git revision to compare with (run first; '' to skip)")
    ap.add_argument("--keep", type=Path, default=None, help="folder to keep the output folders in")
    ap.add_argument("--json", action="store_true", help="also print each run's figures as one JSON line")
    ap.add_argument("extra", nargs="*", help="more quickstart flags (after --)")
    args = ap.parse_args()
    flags = ["--dataset", args.dataset, "--trajectories", args.trajectories, "--mirror", args.mirror, *args.extra]
    scratch = Path(tempfile.mkdtemp(prefix="takeover-bench-quickstart-"))
    where = args.keep or scratch
    where.mkdir(parents=True, exist_ok=True)
    runs = []
    try:
        if args.baseline:
            (scratch / "baseline").mkdir()
            old = baseline_source(args.baseline, scratch / "baseline")
            runs.append(run_once(f"baseline {args.baseline}", old, where / "baseline-out", flags))
        runs.append(run_once("this tree", ROOT / "src", where / "this-out", flags))
    finally:
        if args.keep is None:
            print("(output folders and logs are removed; keep them with --keep DIR)")
            shutil.rmtree(scratch, ignore_errors=True)
    _print(runs)
    if args.json:
        for r in runs:
            print(json.dumps(r))


if __name__ == "__main__":
    main()
