"""Agreement of takeover's local grading with the official SWE-bench harness, on real agent submissions.

    TAKEOVER_MIRROR=/work/mirror .venv/bin/python benchmarks/grading_agreement.py [--network] [--json]

The shared mini-swe-agent runs (``../shared/data/trajectories/mini-swe-agent/*.json``) come with the official
harness's report of each submission (``eval_reports/<instance_id>.report.json``). Each run's submission
(``info.submission``) is graded with the ``local`` backend and compared with the official report: ``resolved``,
and the status (pass or fail) of every FAIL_TO_PASS and PASS_TO_PASS test. Instances whose repository is not
in the mirror are skipped, with the reason; they count neither as agreement nor as disagreement.

Other runs with official reports in the same layout are compared with ``--runs FOLDER``.

Each instance's reference patch is graded too (``--no-reference`` leaves it out): the official harness passes
every listed test under the reference patch (SWE-bench's own validation), so a test that fails under it here
fails because of this machine (a test that needs the internet, a missing system package), whatever the
patch. Such tests and instances are shown as ``env`` and counted apart: agreement is printed over all tests
and over the tests gradable here.

Printed: one line per instance (official and local ``resolved``, tests agreeing), every disagreeing test with
both statuses and its cause when known, the totals, and the skipped instances. ``--json`` prints the same as
JSON Lines (one record per instance, then the totals). Results are stored under ``--log-dir`` and reused on
the next run when nothing that decides them changed (``--force`` grades again).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from takeover.grading import NETWORK_REPOS, GradeResult, Prediction, grade_predictions
from takeover.grading_settings import GradingSettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask, load_tasks

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
KINDS = ("FAIL_TO_PASS", "PASS_TO_PASS")


def official_entry(path: Path, instance_id: str) -> dict[str, Any]:
    """The official report's entry for ``instance_id``: the file holds it as is or under its instance id."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return data.get(instance_id, data)


def statuses_of(tests_status: dict[str, Any]) -> dict[tuple[str, str], bool]:
    """``{(kind, test): passed}`` of a ``tests_status`` (FAIL_TO_PASS / PASS_TO_PASS success and failure)."""
    out = {}
    for kind in KINDS:
        part = tests_status.get(kind) or {}
        out.update({(kind, t): True for t in part.get("success", [])})
        out.update({(kind, t): False for t in part.get("failure", [])})
    return out


def local_statuses(result: GradeResult) -> dict[tuple[str, str], bool]:
    """:func:`statuses_of` of a local :class:`GradeResult` (empty when grading did not finish)."""
    if result.error is not None:
        return {}
    return statuses_of({k: getattr(result, k).model_dump() for k in KINDS})


def compare(task: SourceTask, official: dict[str, Any], local: GradeResult, reference: GradeResult | None,
            network: bool) -> dict[str, Any]:
    """One instance's comparison record: ``resolved`` both ways, per-test agreement, each disagreement with
    its cause (``env``: fails here under the reference patch too; ``error``: local grading did not finish)."""
    want = statuses_of(official.get("tests_status") or {})
    got = local_statuses(local)
    env_tests = set()
    if reference is not None and reference.error is None:
        env_tests = {k for k, passed in local_statuses(reference).items() if not passed}
    served_httpbin = any("local httpbin" in note for note in local.notes)
    disagreements = []
    for key, passed in sorted(want.items()):
        mine = got.get(key)
        if mine is passed:
            continue
        if local.error is not None:
            cause = "error"
        elif key in env_tests:
            cause = "env"
            if task.repo in NETWORK_REPOS and not network and served_httpbin:
                cause = "env (network off: the test reaches past HTTPBIN_URL, to https or another host)"
            elif task.repo in NETWORK_REPOS and not network:
                cause = "env (network off)"
            elif task.repo in NETWORK_REPOS:
                cause = "env (network on, internet unreachable?)"
        else:
            cause = "unexplained"
        disagreements.append({"kind": key[0], "test": key[1], "official": passed, "local": mine, "cause": cause})
    # the reference patch cannot be graded here (environment build): none of the instance's tests can
    reference_failed = reference is not None and reference.error is not None
    env_limited = bool(env_tests & set(want)) or reference_failed
    return {
        "instance_id": task.instance_id, "repo": task.repo,
        "official_resolved": bool(official.get("resolved")), "local_resolved": local.resolved,
        "resolved_agrees": bool(official.get("resolved")) == local.resolved and local.error is None,
        "tests": len(want), "tests_agree": len(want) - len(disagreements),
        "tests_gradable": 0 if reference_failed else len(set(want) - env_tests),
        "env_tests": sorted(f"{k}::{t}" for k, t in env_tests & set(want)),
        "resolved_gradable": not env_limited, "disagreements": disagreements,
        "error": local.error, "reference_error": reference.error if reference is not None else None,
        "local_reused": local.reused, "test_seconds": round(local.test_seconds, 1),
        "env_seconds": round(local.env_seconds, 1), "env_cached": local.env_cached,
    }


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.1f}%)" if d else "0/0"


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals over the compared instances: resolved and per-test agreement, over all and over what is
    gradable here (no ``env`` test, reference patch graded)."""
    gradable = [r for r in rows if r["resolved_gradable"]]
    env_free = sum(r["tests_gradable"] for r in rows)
    env_free_agree = sum(r["tests_gradable"] - sum(1 for d in r["disagreements"] if not d["cause"].startswith("env"))
                         for r in rows if r["tests_gradable"])
    return {
        "instances": len(rows),
        "resolved_agree": sum(r["resolved_agrees"] for r in rows),
        "tests": sum(r["tests"] for r in rows), "tests_agree": sum(r["tests_agree"] for r in rows),
        "instances_gradable": len(gradable), "resolved_agree_gradable": sum(r["resolved_agrees"] for r in gradable),
        "tests_gradable": env_free, "tests_agree_gradable": env_free_agree,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=Path, default=SHARED / "trajectories" / "mini-swe-agent",
                    help="folder of mini-swe-agent runs (*.json) with eval_reports/")
    ap.add_argument("--dataset", type=Path, default=SHARED / "swebench_verified.jsonl")
    ap.add_argument("--mirror", type=Path, default=os.environ.get("TAKEOVER_MIRROR"),
                    help="folder of bare repositories owner__name.git (default: $TAKEOVER_MIRROR)")
    ap.add_argument("--log-dir", type=Path, default=Path("grading-agreement"),
                    help="where the local gradings go (reused on the next run)")
    ap.add_argument("--instance-id", action="append", help="only these instances (repeatable)")
    ap.add_argument("--network", action="store_true", help="let the tests use the network")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds allowed for each test run")
    ap.add_argument("--no-reference", action="store_true", help="do not grade the reference patches")
    ap.add_argument("--force", action="store_true", help="grade again even when stored results could be reused")
    ap.add_argument("--json", action="store_true", help="JSON Lines: one record per instance, then the totals")
    args = ap.parse_args(argv)
    if args.mirror is None or not Path(args.mirror).is_dir():
        ap.error("give --mirror or set TAKEOVER_MIRROR to a folder of bare repositories")
    tasks = {t.instance_id: t for t in load_tasks(args.dataset)}
    source = RepoSource(args.mirror, offline=True)
    log_dir = args.log_dir / ("network" if args.network else "offline")
    rows, skipped = [], []
    for path in sorted(args.runs.glob("*.json")):
        run = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(run, dict) or not isinstance(run.get("info"), dict):
            continue  # not a run (e.g. the run's results summary)
        iid = run.get("instance_id") or path.stem
        if args.instance_id and iid not in args.instance_id:
            continue
        task = tasks.get(iid)
        report = args.runs / "eval_reports" / f"{iid}.report.json"
        if task is None:
            skipped.append((iid, f"not in {args.dataset}"))
            continue
        if not (Path(args.mirror) / f"{task.repo_slug}.git").exists():
            skipped.append((iid, f"repository {task.repo} is not in the mirror {args.mirror}"))
            continue
        if not report.exists():
            skipped.append((iid, f"no official report at {report}"))
            continue
        print(f"grading {iid} ...", file=sys.stderr, flush=True)
        options = {"grading": GradingSettings(timeout=args.timeout, network=args.network), "repo_source": source,
                   "log_dir": log_dir, "force": args.force}
        sub = Prediction(instance_id=iid, model_name_or_path="mini-swe-agent",
                         model_patch=(run.get("info") or {}).get("submission") or "")
        local = grade_predictions([task], [sub], **options)[0]
        reference = None
        if not args.no_reference:
            gold = Prediction(instance_id=iid, model_name_or_path="gold", model_patch=task.patch)
            reference = grade_predictions([task], [gold], **options)[0]
        rows.append(compare(task, official_entry(report, iid), local, reference, args.network))
        if args.json:
            print(json.dumps(rows[-1]), flush=True)
    totals = summarize(rows)
    totals["skipped"] = [{"instance_id": i, "reason": why} for i, why in skipped]
    totals["network"] = args.network
    if args.json:
        print(json.dumps({"totals": totals}))
        return 0
    print(f"{'instance_id':32} {'official':>8} {'local':>6} {'agree':>5} {'tests agree':>12}  env s (cached)  test s")
    for r in rows:
        env = f"{r['env_seconds']:.1f} ({'yes' if r['env_cached'] else 'no'})"
        print(f"{r['instance_id']:32} {r['official_resolved']!s:>8} {r['local_resolved']!s:>6} "
              f"{'yes' if r['resolved_agrees'] else 'NO':>5} {r['tests_agree']:>5}/{r['tests']:<6}  {env:>14}  "
              f"{r['test_seconds']:.1f}{'  (reused)' if r['local_reused'] else ''}")
        if r["error"]:
            print(f"    local grading failed: {r['error'][:300]}")
        if r["reference_error"]:
            print(f"    reference patch grading failed: {r['reference_error'][:300]}")
        groups: dict[tuple[str, str, str], list[str]] = {}
        for d in r["disagreements"]:
            word = {True: "pass", False: "fail", None: "missing"}
            how = (f"official {word[d['official']]}, local {word[d['local']]}", d["cause"], d["kind"])
            groups.setdefault(how, []).append(d["test"])
        for (how, cause, kind), tests in groups.items():
            print(f"    {len(tests)} {kind} ({how}) [{cause}]: {', '.join(tests)}")
    t = totals
    print(f"\nresolved agreement: {_pct(t['resolved_agree'], t['instances'])}; "
          f"per-test agreement: {_pct(t['tests_agree'], t['tests'])}")
    print(f"gradable here (reference patch graded, no test failing under it on this machine): resolved "
          f"{_pct(t['resolved_agree_gradable'], t['instances_gradable'])}; per-test "
          f"{_pct(t['tests_agree_gradable'], t['tests_gradable'])}")
    print(f"network for the tests: {'on' if args.network else 'off'}")
    for iid, why in skipped:
        print(f"skipped {iid}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
