"""Agreement of the swebench-4.1 and swebench-5.0 verdict rules on real test logs.

    python benchmarks/rules_agreement.py FOLDER... [--dataset FILE]... [--json]

Every grading folder under FOLDER (``result.json`` beside ``test_output.txt``, as the ``local`` and ``docker``
backends leave them, e.g. ``benchmarks/grading_agreement.py --log-dir``) whose instance is in a dataset
(default: ``$TAKEOVER_SHARED/data/swebench_verified.jsonl``, ``../shared`` beside the checkout) is graded again from its log under both rules
(:func:`takeover.grading.grade_log`, with the log parser the grading used) with the installed harness's
parsers. Printed: one line per log (``resolved`` under each rule set, tests whose status differs), then the
totals: logs, logs whose ``resolved`` agrees, tests compared and tests whose status agrees. Logs of a
grading that did not run its tests (an error, a patch that did not apply) are counted apart.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from takeover._util.harness_version import GRADING_RULES, harness_label
from takeover.grading import grade_log
from takeover.sources.tasks import load_tasks

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATASET = Path(os.environ.get("TAKEOVER_SHARED", ROOT.parent / "shared")) / "data" / "swebench_verified.jsonl"


def statuses(result) -> dict[str, bool]:
    """``{"FAIL_TO_PASS test": passed, ...}`` of a result's lists (a test in neither list is left out)."""
    out = {}
    for kind in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        outcome = getattr(result, kind)
        out.update({f"{kind} {t}": True for t in outcome.success} | {f"{kind} {t}": False for t in outcome.failure})
    return out


def compare(folder: Path, task) -> dict:
    """The two rule sets' verdicts on ``folder``'s log, and the tests whose status differs."""
    stored = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    log = (folder / "test_output.txt").read_text(encoding="utf-8", errors="replace")
    graded = {rules: grade_log(log, task, rules=rules) for rules in GRADING_RULES}
    a, b = (statuses(graded[r]) for r in GRADING_RULES)
    tests = sorted(set(a) | set(b))
    differ = [t for t in tests if a.get(t) != b.get(t)]
    return {"log": str(folder / "test_output.txt"), "instance_id": task.instance_id,
            "backend": stored.get("backend"), "stored_resolved": stored.get("resolved"),
            **{f"resolved {r}": graded[r].resolved for r in GRADING_RULES},
            "tests": len(tests), "tests_differing": differ}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--dataset", action="append", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    tasks = {t.instance_id: t for d in (args.dataset or [DEFAULT_DATASET]) for t in load_tasks(d)}
    rows, not_run, unknown = [], 0, 0
    for folder in args.folders:
        for result_file in sorted(folder.rglob("result.json")):
            stored = json.loads(result_file.read_text(encoding="utf-8"))
            task = tasks.get(stored.get("instance_id"))
            if task is None:
                unknown += 1
                continue
            if stored.get("error") or not stored.get("applied") or not (result_file.parent / "test_output.txt").exists():
                not_run += 1
                continue
            rows.append(compare(result_file.parent, task))
    a, b = (f"resolved {r}" for r in GRADING_RULES)
    totals = {"harness": harness_label(), "logs": len(rows), "resolved_agree": sum(r[a] == r[b] for r in rows),
              "tests": sum(r["tests"] for r in rows),
              "tests_agree": sum(r["tests"] - len(r["tests_differing"]) for r in rows),
              "not_run": not_run, "not_in_dataset": unknown}
    for r in rows:
        print(json.dumps(r) if args.json else
              f"{r['instance_id']:<32} {r['backend']:<6} 4.1 resolved={r[a]!s:<5} 5.0 resolved={r[b]!s:<5} "
              f"tests {r['tests'] - len(r['tests_differing'])}/{r['tests']} agree"
              + (f"  differ: {', '.join(r['tests_differing'][:5])}" if r["tests_differing"] else ""))
    print(json.dumps(totals) if args.json else
          f"{totals['logs']} logs ({totals['harness']}): resolved agrees on {totals['resolved_agree']}, "
          f"{totals['tests_agree']}/{totals['tests']} test statuses agree; {not_run} gradings ran no tests, "
          f"{unknown} not in the dataset")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
