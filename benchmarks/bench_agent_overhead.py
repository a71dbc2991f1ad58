"""Harness overhead per agent step on a sympy-sized repository, with a scripted model.

    TAKEOVER_MIRROR=/work/mirror /work/venv/bin/python benchmarks/bench_agent_overhead.py [--step-limit N]

A real mini-swe-agent loop (text protocol) runs against the scripted OpenAI-compatible server on a fresh
sympy workspace (sympy__sympy-15809's base commit, from the mirror). The script mixes what agents do:
reading and grepping files, appending to a source file, creating and deleting a scratch file, running a
short Python command, ``git status``. The run's own accounting (``run.json``) splits every step's wall
time into model time, command time and harness time; harness time = snapshot after the command
(``take_snapshot``) + bookkeeping (events, calls, ``run.json`` and the native trajectory written with
fsync every step, the native trajectory every 10 steps). Printed per step (milliseconds) and as a ratio of the step's wall time.

With a scripted model a step takes tens of milliseconds, so the ratio here is an upper bound: a real
model call takes seconds, and the harness time per step does not depend on the model.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from takeover.agents import RunLimits
from takeover.agents.runs import run_predecessor
from takeover.llm import ModelSettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.testing.scripted_server import ScriptedServer

ROOT = Path(__file__).resolve().parents[1]
DATASET = ROOT.parent / "shared" / "data" / "swebench_verified.jsonl"
INSTANCE = "sympy__sympy-15809"

COMMANDS = [
    "grep -n 'def _eval_is_real' sympy/functions/elementary/miscellaneous.py | head -5",
    "sed -n 1,60p sympy/core/basic.py",
    "echo '# benchmark edit {i}' >> sympy/functions/elementary/miscellaneous.py",
    "echo 'print({i})' > scratch_{i}.py && python scratch_{i}.py",
    "rm -f scratch_{i}.py && git status --short | head",
    "grep -rn 'class Min' sympy/functions/elementary/ | head -3",
]


def _task() -> SourceTask:
    with open(DATASET, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row["instance_id"] == INSTANCE:
                # The host interpreter is enough for these commands: no environment build in the timing.
                row["takeover_env_spec"] = {"python": None, "test_cmd": "bin/test", "log_parser": "sympy"}
                return SourceTask.model_validate(row)
    sys.exit(f"{INSTANCE} not in {DATASET}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step-limit", type=int, default=60, help="model calls (each runs one command)")
    args = parser.parse_args()
    if not os.environ.get("TAKEOVER_MIRROR"):
        sys.exit("set TAKEOVER_MIRROR to a folder with sympy__sympy.git")
    task = _task()
    script = [
        {
            "content": f"THOUGHT: step {i}\n\n```mswea_bash_command\n{COMMANDS[i % len(COMMANDS)].format(i=i)}\n```"
        }
        for i in range(args.step_limit)
    ]
    with tempfile.TemporaryDirectory(prefix="takeover-bench-agent-") as tmp, ScriptedServer(script) as srv:
        t0 = time.perf_counter()
        record = run_predecessor(
            task,
            ModelSettings(model="scripted", base_url=srv.base_url, api_key_env=None, retries=0),
            Path(tmp) / "run",
            limits=RunLimits(step_limit=args.step_limit),
            repo_source=RepoSource(os.environ["TAKEOVER_MIRROR"], offline=True),
        )
        total = time.perf_counter() - t0
        files = sum(1 for _ in (Path(tmp) / "run" / "workspace").rglob("*.py"))
        traj_bytes = (Path(tmp) / "run" / f"{task.instance_id}.traj.json").stat().st_size
    acc = record.accounting
    n = acc.llm_calls
    per = lambda s: 1000 * s / n  # milliseconds per step
    bookkeeping = acc.overhead_seconds - acc.snapshot_seconds
    print(
        f"sympy workspace ({files} .py files), {n} steps, exit {record.exit_status.value}, {record.sandbox}"
    )
    print(
        f"setup (workspace checkout + first snapshot + start-up), outside the run clock: {total - acc.wall_seconds:.2f} s"
    )
    print(
        f"per step: wall {per(acc.wall_seconds):.1f} ms = model {per(acc.model_seconds):.1f} ms"
        f" + command {per(acc.command_seconds):.1f} ms + harness {per(acc.overhead_seconds):.1f} ms"
    )
    print(
        f"harness per step: snapshot {per(acc.snapshot_seconds):.1f} ms + bookkeeping {per(bookkeeping):.1f} ms"
        f" (native trajectory at the end: {traj_bytes / 1e6:.2f} MB, rewritten every 10 steps)"
    )
    print(
        f"harness / step wall time = {acc.overhead_seconds / acc.wall_seconds:.3f}"
        f" (snapshot alone {acc.snapshot_seconds / acc.wall_seconds:.3f})"
    )
    print(
        f"with a 5 s model call per step the ratio would be "
        f"{per(acc.overhead_seconds) / (per(acc.wall_seconds) - per(acc.model_seconds) + 5000):.4f}"
    )


if __name__ == "__main__":
    main()
