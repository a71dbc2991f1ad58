"""The docker grading backend beside the local one, on stand-ins of official SWE-bench images, measured.

    TAKEOVER_MIRROR=/work/mirror .venv/bin/python benchmarks/docker_grading.py [INSTANCE_ID ...] [--json]

Needs a Docker daemon, debootstrap and root (the stand-in images of ``tests/docker_images.py``; no registry is
needed). For each instance (default: pallets__flask-5014 and pytest-dev__pytest-7521 of the shared SWE-bench
Verified file, and the test suite's small pallets__flask-90001, whose repository is built here): the
stand-in image is made (and how: found in the daemon, imported from the cached root, or built), then the
reference patch and the empty patch are graded with the ``docker`` backend (first, then again: reused) and
with the ``local`` backend, offline from the mirror. Printed: one line per instance and backend (the gold and
empty verdicts, how many FAIL_TO_PASS/PASS_TO_PASS statuses agree with the other backend, seconds of the first
grading and of the reused one) and the stand-in's time. ``--json`` prints JSON Lines.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from docker_images import TINY_INSTANCE, stand_in_image, tiny_task  # the tests' stand-in builder

from takeover.grading import grade
from takeover.grading_settings import GradingSettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import load_tasks

SHARED = ROOT.parent / "shared" / "data" / "swebench_verified.jsonl"
DEFAULT = ["pallets__flask-5014", "pytest-dev__pytest-7521", TINY_INSTANCE]


def statuses(result) -> dict[str, str]:
    out = {}
    for outcome in (result.FAIL_TO_PASS, result.PASS_TO_PASS):
        out.update({t: "pass" for t in outcome.success} | {t: "fail" for t in outcome.failure})
    return out


def _timed(**kwargs):
    start = time.monotonic()
    result = grade(**kwargs)
    return result, time.monotonic() - start


def measure(task, source, work: Path) -> list[dict]:
    stand_in = stand_in_image(task, source)
    rows, graded = [], {}
    for backend in ("docker", "local"):
        row = {"instance_id": task.instance_id, "backend": backend}
        for name, patch in (("gold", task.patch), ("empty", "")):
            args = {"task": task, "patch": patch, "grading": GradingSettings(backend=backend, timeout=900),
                    "repo_source": source, "log_dir": work / backend, "model_name_or_path": name}
            first, seconds = _timed(**args)
            again, reused_seconds = _timed(**args)
            graded[backend, name] = first
            row[name] = ("resolved" if first.resolved else "unresolved") if first.error is None else f"error: {first.error}"
            row[f"{name}_seconds"], row[f"{name}_reused_seconds"] = round(seconds, 1), round(reused_seconds, 2)
            row[f"{name}_reused"] = again.reused
        rows.append(row)
    for row in rows:
        other = "local" if row["backend"] == "docker" else "docker"
        agree = total = 0
        for name in ("gold", "empty"):
            mine, theirs = statuses(graded[row["backend"], name]), statuses(graded[other, name])
            total += len(mine.keys() | theirs.keys())
            agree += sum(mine.get(t) == theirs.get(t) for t in mine.keys() | theirs.keys())
        row["agreement"] = f"{agree}/{total}"
        row["stand_in"] = f"{stand_in.how} {stand_in.seconds:.1f} s"
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("instance_ids", nargs="*", default=DEFAULT)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    mirror = os.environ.get("TAKEOVER_MIRROR")
    with tempfile.TemporaryDirectory(prefix="takeover-docker-bench-") as tmp:
        work = Path(tmp)
        os.chdir(work)  # the harness writes logs/run_evaluation under the current folder
        tasks = {t.instance_id: t for t in load_tasks(SHARED)} if SHARED.exists() else {}
        rows = []
        for instance_id in args.instance_ids:
            if instance_id == TINY_INSTANCE:
                task, source = tiny_task(work / "tiny")
            elif instance_id in tasks and mirror:
                task, source = tasks[instance_id], RepoSource(mirror, offline=True)
            else:
                print(f"skipped {instance_id}: not in {SHARED} or TAKEOVER_MIRROR is not set", file=sys.stderr)
                continue
            rows += measure(task, source, work / instance_id)
    for row in rows:
        if args.json:
            print(json.dumps(row))
        else:
            print(f"{row['instance_id']:26} {row['backend']:6} gold {row['gold']:10} empty {row['empty']:10} "
                  f"agree {row['agreement']:7} first {row['gold_seconds']:6.1f}/{row['empty_seconds']:6.1f} s "
                  f"reused {row['gold_reused_seconds']:4.2f}/{row['empty_reused_seconds']:4.2f} s  "
                  f"stand-in {row['stand_in']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
