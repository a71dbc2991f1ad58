"""Sizes of the four handoff views over saved handoff points (docs/protocol.md section 7: paper medians about
87k characters for raw_trace and about 10k for structured notes).

Usage:

    takeover points TRAJ... --dataset D --mirror M --out-dir POINTS/      # detection (replay needs the mirror)
    python benchmarks/views_sizes.py POINTS/ --dataset D [--model NAME --base-url URL] [--out-dir DIR]

Without ``--model`` a scripted server stands in for the note writer and answers with fixed notes of a
typical length (a 7-bullet summary of about 330 words; structured fields of about 1,000 characters), so
the notes views' sizes measure the prompt around the notes, not a real model's verbosity. With
``--model`` the notes are really written (and cost tokens). Prints, per view, how many points produced it
and the median / min / max characters and estimated tokens; ``--out-dir`` also writes every view.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from takeover.llm import ModelSettings
from takeover.points import RunPoints
from takeover.sources.tasks import SourceTask, load_tasks
from takeover.testing.scripted_server import ScriptedServer
from takeover.trajectories import read_trajectories
from takeover.views import build_view
from takeover.views.leak import LeakGuard
from takeover.vocabulary import VIEWS

SUMMARY = "\n".join(
    "- " + line
    for line in [
        ("The task asks for a behaviour change described in the issue; the agent read the issue and restated "
        "the expected behaviour before looking at the code, and listed the modules it thought were involved."),
        ("It explored the repository layout, searched for the function named in the issue and opened the "
        "module that builds the affected value, reading the surrounding helpers and their callers."),
        ("It wrote a small reproduction script at the repository root that calls the affected code path "
        "directly with a fixed input and prints the value the issue complains about."),
        ("Running the script before any edit printed the old, incorrect value, which matched the report in "
        "the issue; no other errors or warnings were observed in that output."),
        ("The agent then edited one source file to change how the value is built, keeping the rest of the "
        "function unchanged, and did not touch any test file or configuration."),
        ("After the edit it had not yet re-run the reproduction script or the project's test suite, so the "
        "effect of the change on both the reported case and existing behaviour is not observed."),
        ("Open points: confirm the new output with the reproduction script, run the tests of the touched "
        "module, decide whether the scratch script should be removed, and check related code paths."),
    ]
)
STRUCTURED = json.dumps({
    "problem_understanding": "The issue asks for the value produced by the affected function to follow the "
                             "documented format; the current output omits part of it.",
    "work_completed": "Edited the source file that builds the value and added a reproduction script at the "
                      "repository root; no test files were changed.",
    "evidence_observed": "Before the edit the reproduction script printed the old value; after the edit no "
                         "output has been observed yet.",
    "observed_failures": "NONE OBSERVED",
    "remaining_uncertainty": "Whether the change fixes the reported case and keeps existing behaviour is UNKNOWN; "
                             "the test suite was not run after the edit.",
    "rollback_notes": "If the tests of the touched module fail, revert the edit to that file and retry with a "
                      "narrower change; the scratch script can be deleted.",
    "recommended_next_action": "Run the reproduction script, then the tests of the touched module.",
})


def _answer(body: dict, n: int) -> dict:
    return {"content": STRUCTURED if "JSON object" in body["messages"][1]["content"] else SUMMARY}


def _trajectory(record: RunPoints):
    runs = read_trajectories(record.trajectory)
    for run in runs:
        if run.record == record.trajectory_record or len(runs) == 1:
            return run
    raise SystemExit(f"{record.trajectory}: record {record.trajectory_record} not found")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("points", type=Path, help="folder of *.points.json (takeover points --out-dir)")
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--model")
    parser.add_argument("--base-url")
    parser.add_argument("--out-dir", type=Path)
    args = parser.parse_args(argv)
    tasks = {t.instance_id: t for t in load_tasks(args.dataset)}
    server = None
    if args.model:
        settings = ModelSettings(model=args.model, base_url=args.base_url)
    else:
        server = ScriptedServer(_answer).start()
        settings = ModelSettings(model="scripted", base_url=server.base_url, api_key_env=None)
    sizes: dict[str, list[tuple[int, int]]] = {v: [] for v in VIEWS}
    failures: list[str] = []
    points = 0
    try:
        for path in sorted(args.points.glob("*.points.json")):
            record = RunPoints.load(path)
            if not record.points:
                continue
            run = _trajectory(record)
            task = tasks.get(record.instance_id) or SourceTask(
                instance_id=record.instance_id, repo=record.repo, base_commit=record.base_commit,
                problem_statement=run.task_prompt or "",
            )
            for point in record.points:
                points += 1
                patch = record.patches.get(point.type, "")
                guard = LeakGuard(run, point.event_index, task, patch)
                for view in VIEWS:
                    try:
                        result = build_view(view, run, point, task, patch, model=settings, guard=guard)
                    except Exception as exc:  # noqa: BLE001 -- a benchmark reports every failure and goes on
                        failures.append(f"{record.instance_id} {point.type} {view}: {exc}")
                        continue
                    sizes[view].append((result.characters, result.estimated_tokens))
                    if args.out_dir:
                        dest = args.out_dir / record.instance_id / point.type / f"{view}.md"
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        dest.write_text(result.prompt, encoding="utf-8")
    finally:
        if server is not None:
            server.stop()
    print(f"{points} handoff points; note writer: {'scripted notes' if server else args.model}")
    print(f"{'view':18} {'built':>5} {'median chars':>12} {'min':>8} {'max':>8} {'median tokens':>13}")
    for view, rows in sizes.items():
        if not rows:
            print(f"{view:18} {0:>5}")
            continue
        chars = [c for c, _ in rows]
        tokens = [t for _, t in rows]
        print(f"{view:18} {len(rows):>5} {statistics.median(chars):>12,.0f} {min(chars):>8,} {max(chars):>8,} "
              f"{statistics.median(tokens):>13,.0f}")
    for failure in failures:
        print("FAILED", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
