"""The tests that fail with each task's reference patch on this machine: the PASS_TO_PASS tests a checkpoint's
handoff state sets aside there (docs/protocol.md section 6), and the FAIL_TO_PASS tests no checkpoint can pass.

    TAKEOVER_MIRROR=/work/mirror .venv/bin/python benchmarks/reference_failures.py [--repo OWNER/NAME ...]
        [--instance-id ID ...] [--network] [--readme docs/usage.md]

Every dataset instance of the given repositories (default: every repository in the mirror) has its reference
patch graded with the ``local`` backend, as :func:`takeover.grading.grade_checkpoint` grades it (results are
stored under the cache and reused). Printed: one line per instance with a failing test (the tests, by list),
the instances whose grading did not finish (with the reason), and the counts. ``--readme FILE`` also writes
the list into FILE between the lines ``<!-- reference-failures:start -->`` and ``<!-- reference-failures:end
-->``, so the list in docs/usage.md is this output, never written by hand.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from takeover.grading import grade
from takeover.grading.evaluation import REFERENCE_MODEL
from takeover.grading_settings import GradingSettings
from takeover.sources.repos import RepoSource, cache_dir
from takeover.sources.tasks import load_tasks

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
START, END = "<!-- reference-failures:start -->", "<!-- reference-failures:end -->"


def _mirrored(mirror: Path) -> set[str]:
    return {p.name[: -len(".git")].replace("__", "/", 1) for p in mirror.iterdir() if p.name.endswith(".git")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=DATA / "swebench_verified.jsonl")
    parser.add_argument("--repo", action="append", help="only these repositories (owner/name)")
    parser.add_argument("--instance-id", action="append", help="only these instances")
    parser.add_argument("--network", action="store_true", help="let the tests use the network")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per test run")
    parser.add_argument("--readme", type=Path, help="write the list into this file between the markers")
    args = parser.parse_args()
    if not os.environ.get("TAKEOVER_MIRROR"):
        sys.exit("set TAKEOVER_MIRROR to a folder of bare repositories (owner__name.git)")
    mirror = Path(os.environ["TAKEOVER_MIRROR"])
    repos = set(args.repo or _mirrored(mirror))
    tasks = [t for t in load_tasks(args.dataset) if t.repo in repos
             and (not args.instance_id or t.instance_id in args.instance_id)]
    source = RepoSource(mirror, offline=True)
    lines, errors = [], []
    for task in tasks:
        r = grade(task, task.patch, GradingSettings(timeout=args.timeout, network=args.network), repo_source=source,
                  log_dir=cache_dir() / "grading", model_name_or_path=REFERENCE_MODEL)
        if r.error is not None or not r.applied:
            errors.append(f"{task.instance_id}: {(r.error or r.apply_error or '').splitlines()[0][:160]}")
            print(f"{task.instance_id:<32} not graded: {errors[-1].split(': ', 1)[1]}", flush=True)
            continue
        failing = [(kind, t) for kind, outcome in (("PASS_TO_PASS", r.PASS_TO_PASS), ("FAIL_TO_PASS", r.FAIL_TO_PASS))
                   for t in outcome.failure]
        print(f"{task.instance_id:<32} {len(failing)} failing with the reference patch", flush=True)
        if failing:
            shown = "; ".join(f"{kind} `{t}`" for kind, t in failing)
            lines.append(f"- `{task.instance_id}`: {shown}")
    summary = (f"{len(lines)} of {len(tasks) - len(errors)} graded instances ({', '.join(sorted(repos))}, network "
               f"{'on' if args.network else 'off'}) have tests that fail with the reference patch here")
    print(f"\n{summary}:")
    print("\n".join(lines) or "(none)")
    if errors:
        print("\nnot graded:\n" + "\n".join(errors))
    if args.readme:
        text = args.readme.read_text(encoding="utf-8")
        block = f"{START}\n{summary} (`benchmarks/reference_failures.py`):\n\n" + "\n".join(lines) + f"\n{END}"
        new, n = re.subn(re.escape(START) + r".*?" + re.escape(END), lambda _: block, text, flags=re.DOTALL)
        if n != 1:
            sys.exit(f"{args.readme}: expected one block between {START} and {END}")
        args.readme.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    main()
