"""``kill -9`` during ``takeover export harbor`` into an earlier export: how often a task is left partial.

    .venv/bin/python benchmarks/export_kill.py [--kills N] [--seed S]

Builds the small flask task's checkpoint (the test suite's builders, ``tests/test_harbor.py``), copies it to
5 points x 4 views (20 tasks), exports them once with ``--agent-timeout 900`` (the earlier export) and once
with 600 (the new one) as references, then N times starts the new export into a copy of the earlier one in
a forked process and kills it with SIGKILL at a random moment of its work (uniform over the time one export
takes). After each kill it counts, over the task folders a user or Harbor sees (not hidden), those that are
neither the old task whole nor the new one whole (a partial task), the tasks missing, and the hidden folders
Harbor would load as a task (they hold ``task.toml``). The same loop is the test
``test_kill_9_during_an_export_into_an_existing_export_never_leaves_a_partial_task`` (20 kills, goal 0).

Measured here (2 shared cores, ``--kills 60``): before (the old task removed with ``rmtree``, then the new one
renamed in), 4 of 60 kills left a partial task and 4 left a hidden folder Harbor would load as a second copy
of a task (a 20-kill run: 2 tasks missing, 2 such folders); after (the two folders exchanged in one step,
built one level down), 0 of 60 on every count.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the suite's builders of the checkpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=20260501)
    args = parser.parse_args()
    from docker_images import tiny_task
    from test_harbor import _checkpoint, _export_in_child, _files, _study

    work = Path(tempfile.mkdtemp(prefix="takeover-export-kill-"))
    os.environ["TAKEOVER_CACHE"] = str(work / "cache")
    try:
        task, source = tiny_task(work / "repo")
        cps, dataset = _checkpoint(work, task, source)
        study = _study(cps / "event-3", work / "study", range(3, 8))
        fork = multiprocessing.get_context("fork")

        def export(out: Path, agent_timeout: float) -> multiprocessing.Process:
            child = fork.Process(target=_export_in_child, args=(study, dataset, source.mirror, out, agent_timeout))
            child.start()
            return child

        references = {}
        for name, agent_timeout in (("old", 900.0), ("new", 600.0)):
            started = time.monotonic()
            child = export(work / name, agent_timeout)
            child.join(600)
            seconds = time.monotonic() - started
            references[name] = {p.name: _files(p) for p in (work / name).iterdir()}
        out = work / "out"
        shutil.copytree(work / "old", out)
        rng = random.Random(args.seed)
        partial_kills = partial = missing = loadable = 0
        for _ in range(args.kills):
            child = export(out, 600.0)
            time.sleep(rng.uniform(0.0, seconds))
            os.kill(child.pid, signal.SIGKILL)
            child.join(60)
            seen = {e.name: e for e in out.iterdir() if not e.name.startswith(".")}
            bad = [n for n, e in seen.items() if _files(e) not in (references["old"].get(n), references["new"].get(n))]
            partial += len(bad)
            partial_kills += bool(bad)
            missing += len(references["old"].keys() - seen.keys())
            loadable += sum(1 for e in out.iterdir() if e.name.startswith(".") and (e / "task.toml").exists())
        print(f"{len(references['old'])} tasks, one export {seconds:.1f} s; {args.kills} kills: {partial_kills} left a "
              f"partial task ({partial} partial tasks in all), {missing} tasks missing, {loadable} hidden folders "
              "Harbor would load")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
