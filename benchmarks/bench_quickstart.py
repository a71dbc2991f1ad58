"""Quickstart time with the embedded model: stage and per-call figures, the server's memory and throughput.

Runs ``takeover quickstart`` (embedded 0.5B model, local inputs, offline) in a fresh process, once with this
tree and, with ``--baseline REV``, once with the ``takeover`` package of that git revision (exported into a
temporary folder and put first on ``PYTHONPATH``), one after the other in the same session. For each run it
prints:

- the wall time of every stage (from ``OUT/quickstart.json``), the total wall time, the load average at
  start and at end (the machine may be shared: compare CPU seconds first, wall times with the load beside
  them), the CPU seconds of the model server (user + system, sampled from ``/proc`` every 0.5 s) and of the
  whole process tree;
- the model server's peak resident memory (``VmRSS``, sampled every 0.5 s) and its prompt and generation
  throughput (tokens per second of llama.cpp's own timings, from ``OUT/model-server.log``);
- prompt tokens evaluated and reused from the server's KV cache (the log's ``prefix-match hit`` per
  request) and the cache reuse ratio (reused / all prompt tokens);
- note-writing attempts per notes view (from the view units);
- one row per model call: the unit it served (from ``OUT/model-calls.jsonl``; a revision without that log
  gets the server's rows alone), prompt tokens, of them reused and evaluated, completion tokens, seconds,
  and the ``response_format`` it was sent with.

    .venv/bin/python benchmarks/bench_quickstart.py --dataset DATA/swebench_verified.jsonl \\
        --trajectories DATA/trajectories/mini-swe-agent/pytest-dev__pytest-7521.json --mirror /work/mirror \\
        [--baseline main] [--keep DIR] [--json] [--write-work src/takeover/quickstart/known_work.json]

With ``--write-work FILE`` it writes this tree's run as the quickstart's known work (the reference its
estimate scales to the user's machine: :func:`takeover.quickstart.measure_work`), with this machine's CPU,
its load and how the figures were measured. Run it with the defaults, the model and the task environment
cached, on a machine as idle as can be had, with ``-- --wall-time-limit-seconds 3600`` so that no takeover
run is stopped by its limit: the estimate applies the limit of each run call by call.

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

from takeover.embedded_model import STARTUP_REQUESTS, ServerRequest, read_server_log
from takeover.llm import LoggedCall, read_calls
from takeover.quickstart import measure_work

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


def _rss_mib(pid: int) -> float | None:
    """Resident memory of one process (``VmRSS``, MiB), ``None`` when gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _is_server(pid: int) -> bool:
    try:
        return b"llama_cpp.server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


class ServerCpu(threading.Thread):
    """Samples the CPU seconds and the resident memory of every llama.cpp server process below ``pid``
    until ``stop`` is set; ``seconds`` is the sum of each server's last CPU sample (a server's last sample
    is taken at most 0.5 s before it exits), ``peak_rss_mib`` the largest resident memory seen."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid = pid
        self.last: dict[int, float] = {}
        self.peak_rss_mib = 0.0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.5):
            for child in _descendants(self.pid):
                if child in self.last or _is_server(child):
                    cpu = _cpu_seconds(child)
                    if cpu is not None:
                        self.last[child] = cpu
                    rss = _rss_mib(child)
                    if rss is not None:
                        self.peak_rss_mib = max(self.peak_rss_mib, rss)

    @property
    def seconds(self) -> float:
        return sum(self.last.values())


def baseline_source(revision: str, into: Path) -> Path:
    """``src/`` of ``revision`` exported into ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "src"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def _note_attempts(out: Path) -> dict[str, str]:
    """``{view: "N (validation)"}`` of the notes views, from their unit files."""
    found = {}
    for path in sorted((out / "units" / "view").glob("*.json")):
        unit = json.loads(path.read_text())
        view = unit.get("labels", {}).get("view", "?")
        if unit["status"] == "done" and unit["output"].get("attempts"):
            found[view] = f"{unit['output']['attempts']} ({unit['output'].get('validation')})"
        elif unit["status"] != "done":
            found[view] = f"failed: {(unit.get('reason') or '')[:100]}"
    return found


def per_call(calls: list[LoggedCall], served: list[ServerRequest]) -> list[dict]:
    """One row per request the server answered, joined in order with the call log's answered attempts (the
    server has one slot and answers in arrival order; its first requests are the start-up usage check and
    speed measurement, which are not in the call log). Without a call log (an earlier revision) the rows
    are the server's alone."""
    answered = [c for c in calls if c.status == "ok"]
    rows = []
    for i, request in enumerate(served[STARTUP_REQUESTS:]):
        call = answered[i] if i < len(answered) else None
        unit = " ".join(str(call.unit[k]) for k in ("stage", "view") if call.unit.get(k)) if call else "?"
        rows.append({
            "unit": unit,
            "prompt_tokens": call.prompt_tokens if call else request.reused_tokens + request.evaluated_tokens,
            "reused_tokens": request.reused_tokens,
            "evaluated_tokens": request.evaluated_tokens,
            "completion_tokens": call.completion_tokens if call else request.generated_tokens,
            "seconds": round(call.seconds if call else request.total_ms / 1000, 1),
            "response_format": call.response_format if call else None,
        })
    return rows


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
    served = read_server_log(out / "model-server.log")
    calls, _ = read_calls(out / "model-calls.jsonl")
    answered = served[STARTUP_REQUESTS:]
    evaluated = sum(r.evaluated_tokens for r in answered)
    reused = sum(r.reused_tokens for r in answered)
    prompt_s = sum(r.prompt_ms for r in answered) / 1000
    generated = sum(r.generated_tokens for r in answered)
    generation_s = sum(r.generation_ms for r in answered) / 1000
    rows = per_call(calls, served)
    return {
        "label": label,
        "exit_status": os.waitstatus_to_exitcode(status),
        "wall_seconds": round(wall, 1),
        "server_cpu_seconds": round(sampler.seconds, 1),
        "tree_cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
        "server_peak_rss_mib": round(sampler.peak_rss_mib),
        "load_start": [round(x, 2) for x in load_start],
        "load_end": [round(x, 2) for x in os.getloadavg()],
        "stages": {s["stage"]: s["seconds"] for s in result.get("stages", [])},
        "details": {s["stage"]: s["detail"] for s in result.get("stages", [])},
        "problems": result.get("problems", []),
        "model_calls": len(rows),
        "prompt_tokens_evaluated": evaluated,
        "prompt_tokens_reused": reused,
        "cache_reuse_ratio": round(reused / (reused + evaluated), 3) if reused + evaluated else None,
        "prompt_tokens_per_second": round(evaluated / prompt_s, 1) if prompt_s else None,
        "completion_tokens": generated,
        "generation_tokens_per_second": round(generated / generation_s, 2) if generation_s else None,
        "note_attempts": _note_attempts(out),
        "calls": rows,
        "log": str(out.parent / f"{out.name}.log"),
        "out": str(out),
    }


def machine_phrase(load_start: list[float], load_end: list[float]) -> str:
    """``a 2-core Intel(R) Xeon(R) ... (load average 1.9 at start, 2.4 at end)``: this machine, for the record."""
    model = "x86 CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = " ".join(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0))
    return (f"a {cores}-core {model} (1-minute load average {load_start[0]:.1f} at start, "
            f"{load_end[0]:.1f} at end)")


def write_work(run: dict, dest: Path, flags: list[str]) -> None:
    """This tree's run as the quickstart's known work (JSON), with how it was measured."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "src"], capture_output=True,
                           text=True, check=False).stdout.strip()
    measured = (f"benchmarks/bench_quickstart.py {' '.join(Path(f).name if '/' in f else f for f in flags)} at "
                f"{commit}{' with uncommitted changes' if dirty else ''} on {time.strftime('%Y-%m-%d')}: the "
                "quickstart's defaults but for a wall-time limit no takeover run reaches (every step's work is "
                "known), embedded model and task environment cached; tokens and model seconds from the server's "
                "log, wall time from the model being ready to the report, CPU seconds of the whole process tree")
    work = measure_work(run["out"], machine=machine_phrase(run["load_start"], run["load_end"]),
                        measured=measured, cpu_seconds=run["tree_cpu_seconds"])
    dest.write_text(work.model_dump_json(indent=2) + "\n")
    print(f"known work written to {dest}")


def _cell(value, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}{unit}" if abs(value) >= 1 else f"{value:.3f}{unit}"
    if isinstance(value, int):
        return f"{value:,}{unit}"
    return f"{value}{unit}"


FIGURES = (("total wall", "wall_seconds", " s"), ("server CPU seconds", "server_cpu_seconds", " s"),
           ("process tree CPU", "tree_cpu_seconds", " s"), ("server peak RSS", "server_peak_rss_mib", " MiB"),
           ("model calls", "model_calls", ""), ("prompt tokens evaluated", "prompt_tokens_evaluated", ""),
           ("prompt tokens reused", "prompt_tokens_reused", ""), ("cache reuse ratio", "cache_reuse_ratio", ""),
           ("prompt tokens per second", "prompt_tokens_per_second", ""), ("completion tokens", "completion_tokens", ""),
           ("generation tokens per second", "generation_tokens_per_second", ""))


def _print(runs: list[dict]) -> None:
    stages: list[str] = []
    for r in runs:
        stages += [s for s in r["stages"] if s not in stages]
    width = max(len(s) for s in [*stages, *(name for name, _, _ in FIGURES)]) + 2
    print("".ljust(width) + "".join(r["label"].rjust(24) for r in runs))
    for s in stages:
        print(s.ljust(width) + "".join(
            (f"{r['stages'][s]:.1f} s" if s in r["stages"] else "-").rjust(24) for r in runs))
    for name, key, unit in FIGURES:
        print(name.ljust(width) + "".join(_cell(r[key], unit).rjust(24) for r in runs))
    for name, key in (("load at start", "load_start"), ("load at end", "load_end")):
        print(name.ljust(width) + "".join(" ".join(f"{x:.2f}" for x in r[key]).rjust(24) for r in runs))
    print("exit status".ljust(width) + "".join(str(r["exit_status"]).rjust(24) for r in runs))
    for r in runs:
        print(f"\n{r['label']}: log {r['log']}")
        for view, attempts in r["note_attempts"].items():
            print(f"  note attempts, {view}: {attempts}")
        for s, d in r["details"].items():
            if d:
                print(f"  {s}: {d}")
        for p in r["problems"]:
            print(f"  problem: {p}")
        print(f"  {'#':>3} {'unit':<26} {'prompt':>8} {'reused':>8} {'evaluated':>9} {'completion':>10} "
              f"{'seconds':>8}  response_format")
        for i, c in enumerate(r["calls"], 1):
            print(f"  {i:>3} {c['unit']:<26} {c['prompt_tokens']:>8,} {c['reused_tokens']:>8,} "
                  f"{c['evaluated_tokens']:>9,} {c['completion_tokens']:>10,} {c['seconds']:>8.1f}  "
                  f"{c['response_format'] or '-'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--trajectories", required=True)
    ap.add_argument("--mirror", required=True)
    ap.add_argument("--baseline", default="", help="git revision to compare with (run first; '' to skip)")
    ap.add_argument("--keep", type=Path, default=None, help="folder to keep the output folders in")
    ap.add_argument("--json", action="store_true", help="also print each run's figures as one JSON line")
    ap.add_argument("--write-work", type=Path, default=None,
                    help="write this tree's run as the quickstart's known work (src/takeover/quickstart/known_work.json)")
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
        if args.write_work:
            write_work(runs[-1], args.write_work, flags)
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
