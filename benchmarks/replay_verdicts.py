"""Replay verdicts over real trajectories, the points they give, and the cost of replay next to its floor.

    TAKEOVER_MIRROR=/work/mirror .venv/bin/python benchmarks/replay_verdicts.py [PATH ...] [--no-floor]
        [--no-environment] [--only TEXT] [--out FILE.jsonl] [--before FILE.jsonl]

PATH defaults to ``../shared/data/trajectories`` (every file in it is read; reports and indexes that no
reader recognizes are skipped). For each run it prints the verdict as ``takeover points`` gives it
(docs/protocol.md section 5: verified and by which rule, or the reason it is not), the number of points,
the replay's wall seconds, and the *floor*: the same commands run plainly, one after the other with
``bash -c`` in a fresh workspace of the same starting state and task environment, without sandbox,
snapshots, diffs or verification (only without network, as in the replay, through ``unshare --net`` when it
works: a test suite that reaches for the internet otherwise waits for its time-outs). Runs that cannot be replayed on this machine are listed with the
reason (the instance is not in the dataset, or its repository is not in the mirror). Then, per format:
runs, verified, unverified, not replayable here, the verified rate over the replayable runs and the
median replay seconds per run; and the total replay time over the total floor time (target: at most
1.3). Preparing the task environment is timed apart and is in neither figure.

Then, per format: the refusals by reason (the reason's kind: an exit the replay did not reproduce, a final
state that differs, a command killed at a limit...), the points the verified runs give, and the points the
helper-script rule moves (docs/protocol.md section 3.2: a new top-level file is a scratch file): each point
found with the rule is compared with the point the same states give when the new top-level files the
agent wrote count as the repository's own, and ``moved`` counts the point types whose event differs (or
that exist in one and not the other). Sessions without a SWE-bench task (Claude Code, Codex CLI) are not
replayed: for them the table counts commands, verification commands (docs/protocol.md section 4.1) and
their results (section 4.2). ``--out`` writes one JSON record per run; ``--before FILE`` (such records
written by an earlier version) prints the per-format table of that version beside this one.

The verdict comes from the same steps as :func:`takeover.points.event_states` (fresh workspace,
environment edits, task environment, starting state, replay), run here one by one so that the replay
itself can be timed. Needs a mirror (``TAKEOVER_MIRROR``); the network is never used.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from takeover._util.processes import run_process
from takeover.environments import prepare_environment
from takeover.errors import InputError, RepositoryUnavailable, TakeoverError
from takeover.points import detect_points, verifications
from takeover.replay_settings import ReplaySettings
from takeover.repository_states.file_classes import SCRATCH_PREFIXES
from takeover.repository_states.replay import RECORDED_TIMEOUT_LIMIT, replay_trajectory
from takeover.repository_states.snapshots import top_level_names
from takeover.repository_states.starting_state import apply_starting_state, environment_edits, recorded_form
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask, load_tasks
from takeover.trajectories import read_trajectories
from takeover.trajectories.events import Trajectory
from takeover.trajectories.registry import expand_paths, is_unknown_format

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
# The same test as the replay's for a command the recorded run saw time out.
_RECORDED_TIMEOUT = re.compile(r"timed out and has been killed|timed out after|command timed out|TimeoutError|"
                               r"exit code 124|\[Command timed out", re.IGNORECASE)


def _environment(task: SourceTask, ws: Path, use: bool) -> tuple[dict[str, str] | None, str | None, float]:
    if not use:
        return None, None, 0.0
    start = time.monotonic()
    try:
        prepared = prepare_environment(task, ws)
        env = prepared.env_vars(base={"PATH": os.environ.get("PATH", os.defpath)})
        return dict(env), f"task environment for {task.repo} {task.version}", time.monotonic() - start
    except TakeoverError as exc:
        note = f"plain interpreter on PATH (task environment unavailable: {str(exc).splitlines()[0][:160]})"
        return None, note, time.monotonic() - start


def _workspace(traj: Trajectory, task: SourceTask, source: RepoSource, folder: Path, use_environment: bool):
    ws = source.workspace(task.repo, task.base_commit, folder / "workspace")
    start = environment_edits(task, ws)
    env, note, env_seconds = _environment(task, ws, use_environment)
    form = recorded_form(start, traj.final_patch)
    apply_starting_state(ws, start, form)
    return ws, start, form, env, note, env_seconds


def _floor(traj: Trajectory, ws: Path, env: dict[str, str] | None) -> float:
    """Seconds to run the run's shell commands plainly in ``ws``: ``bash -c``, in order, with the replay's
    time limits, no sandbox, no snapshot, no verification."""
    root = (traj.working_dir or "").rstrip("/")
    plain_env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "TERM") if k in os.environ}
    plain_env.update({"HOME": str(ws.parent), "PAGER": "cat", "GIT_PAGER": "cat", "PYTHONDONTWRITEBYTECODE": "1",
                      "TQDM_DISABLE": "1", **(env or {})})
    events = traj.events
    offline = ["unshare", "--net"] if run_process(["unshare", "--net", "true"], timeout=10).exit_code == 0 else []
    total = 0.0
    for i, ev in enumerate(events):
        if ev.kind != "action" or ev.format_error or ev.type not in ("command", "finish") or not ev.command:
            continue
        command = ev.command.replace(root, str(ws)) if root else ev.command
        obs = next((o for o in events[i + 1:] if o.kind == "observation"), None)
        limit = RECORDED_TIMEOUT_LIMIT if obs is not None and _RECORDED_TIMEOUT.search(obs.text or "") else ReplaySettings().timeout
        started = time.monotonic()
        run_process([*offline, "bash", "-c", command], cwd=ws, env=plain_env, timeout=limit, output_limit=200_000)
        total += time.monotonic() - started
    return total


def _one(traj: Trajectory, task: SourceTask, source: RepoSource, args) -> dict:
    record = {"replayable": True}
    with tempfile.TemporaryDirectory(prefix="replay-verdicts-") as tmp:
        ws, start, form, env, note, env_seconds = _workspace(traj, task, source, Path(tmp) / "replay", not args.no_environment)
        started = time.monotonic()
        result = replay_trajectory(traj, ws, task.base_commit, start=start, form=form, env_vars=env, interpreter_note=note)
        record["replay_seconds"] = time.monotonic() - started
        # As takeover points does (points/event_states.py): the scratch rule needs base_commit's top level.
        result.base_top_level = top_level_names(ws, task.base_commit)
        record["environment_seconds"] = env_seconds
        v = result.verdict
        record.update(verified=v.verified, rule=v.rule, reason=v.reason, notes=v.notes, interpreter=v.interpreter,
                      environment_files=v.environment_files)
        record["points"], record["moved"], record["point_events"] = _points(traj, result) if v.verified else (0, [], {})
    if not args.no_floor:
        with tempfile.TemporaryDirectory(prefix="replay-floor-") as tmp:
            ws, _, _, env, _, _ = _workspace(traj, task, source, Path(tmp) / "floor", not args.no_environment)
            record["floor_seconds"] = _floor(traj, ws, env)
    return record


def _points(traj: Trajectory, result) -> tuple[int, list[str], dict[str, int]]:
    """``(points, point types the helper-script rule moves, {point type: event})`` of a verified replay: the
    points with the rules as they are, against the points of the same states when the agent's new top-level
    files (other than those the name rule already calls scratch) count as files of ``base_commit``."""
    top = result.base_top_level
    found = {p.type: p.event_index for p in detect_points(traj.events, result.diffs, base_top_level=top)[0]}
    if top is None:
        return len(found), [], found
    new_top = {path for d in result.diffs for path in d if "/" not in path and path not in top
               and not path.lower().startswith(SCRATCH_PREFIXES)}
    without = {p.type: p.event_index
               for p in detect_points(traj.events, result.diffs, base_top_level=[*top, *new_top])[0]}
    return len(found), sorted(t for t in set(found) | set(without) if found.get(t) != without.get(t)), found


def _session(traj: Trajectory) -> dict:
    """Commands, verification commands and their results of a run that is not replayed here."""
    checks = verifications(traj.events)
    results: dict[str, int] = defaultdict(int)
    for check in checks:
        results[check.result] += 1
    commands = sum(1 for e in traj.events if e.kind == "action" and e.type in ("command", "finish") and e.command)
    return {"commands": commands, "verification_commands": len(checks), "results": dict(results)}


#: The kind of a refusal, from the start of its reason (docs/protocol.md sections 5.3 and 5.4).
_REASON_KINDS = (
    ("exited 0 in the replay but", "an exit the replay did not reproduce"),
    ("was killed at the", "a command killed at a limit"),
    ("cannot be replayed exactly", "an action that cannot be replayed"),
    ("records no final patch", "no final patch"),
    ("output of the submitting command", "the submission printed differs"),
    ("inside the submitted files", "a submitted file differs"),
    ("differs from the run's final patch", "the final state differs"),
    ("no submitting command was replayed", "no submitting command"),
    ("replay failed", "the replay failed"),
)


def reason_kind(reason: str | None) -> str:
    """The kind of refusal a verdict's reason names (:data:`_REASON_KINDS`), else the reason's first words."""
    text = reason or ""
    for needle, kind in _REASON_KINDS:
        if needle in text:
            return kind
    return " ".join(text.split()[:6]) or "no reason given"


def _runs(paths: list[Path]):
    for path in expand_paths(paths):
        try:
            runs = read_trajectories(path)
        except InputError as exc:
            if not is_unknown_format(exc):
                print(f"error: {exc}", file=sys.stderr)
            continue
        yield from runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[DATA / "trajectories"])
    parser.add_argument("--dataset", type=Path, default=DATA / "swebench_verified.jsonl")
    parser.add_argument("--no-floor", action="store_true", help="skip the plain run of the commands")
    parser.add_argument("--no-environment", action="store_true", help="replay with the plain interpreter")
    parser.add_argument("--only", help="only runs whose file or instance_id contains this text")
    parser.add_argument("--out", type=Path, help="also write one JSON record per run to this file")
    parser.add_argument("--before", type=Path, help="records (--out) of an earlier version, shown beside these")
    args = parser.parse_args()
    if not os.environ.get("TAKEOVER_MIRROR"):
        sys.exit("set TAKEOVER_MIRROR to a folder of bare repositories (owner__name.git)")
    tasks = {t.instance_id: t for t in load_tasks(args.dataset)}
    source = RepoSource(os.environ["TAKEOVER_MIRROR"], offline=True)
    records = []
    print(f"{'format':<22} {'run':<44} {'verdict':<40} {'pts':>3} {'replay s':>9} {'floor s':>8} {'ratio':>6}")
    for traj in _runs(args.paths):
        where = Path(traj.source_path or "").name + (f" {traj.record}" if traj.record else "")
        if args.only and args.only not in where and args.only not in (traj.instance_id or ""):
            continue
        record = {"format": traj.format, "run": where, "instance_id": traj.instance_id}
        task = tasks.get(traj.instance_id or "")
        if task is None:
            record.update(replayable=False, reason=f"instance {traj.instance_id!r} is not in the dataset (no base commit)",
                          **_session(traj))
        else:
            try:
                source.bare_repo(task.repo, task.base_commit)
                record.update(_one(traj, task, source, args))
            except RepositoryUnavailable as exc:
                record.update(replayable=False, reason=str(exc).split(";")[0])
        records.append(record)
        if not record["replayable"]:
            verdict = "not replayable here"
        elif record["verified"]:
            verdict = f"verified ({record['rule']})"
        else:
            verdict = "UNVERIFIED"
        floor = record.get("floor_seconds")
        replay = record.get("replay_seconds")
        ratio = f"{replay / floor:.2f}" if replay and floor else "-"
        print(f"{traj.format:<22} {where[:44]:<44} {verdict:<40} {record.get('points', '-'):>3} "
              f"{_seconds(replay):>9} {_seconds(floor):>8} {ratio:>6}", flush=True)
        if record.get("reason"):
            print(f"{'':<22}   reason: {record['reason']}", flush=True)
        for note in record.get("notes") or []:
            print(f"{'':<22}   note: {note}", flush=True)
    _summary(records)
    if args.before:
        print(f"\nbefore ({args.before}):")
        _summary([json.loads(line) for line in args.before.read_text(encoding="utf-8").splitlines() if line.strip()],
                 timing=False)
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _summary(records: list[dict], timing: bool = True) -> None:
    by_format: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_format[r["format"]].append(r)
    print()
    print(f"{'format':<22} {'runs':>5} {'verified':>9} {'refused':>8} {'not here':>9} {'verified rate':>14} "
          f"{'points':>7} {'moved':>6} {'median replay s':>16}")
    for fmt, rs in sorted(by_format.items()):
        here = [r for r in rs if r["replayable"]]
        ok = [r for r in here if r["verified"]]
        rate = f"{len(ok) / len(here):.0%} ({len(ok)}/{len(here)})" if here else "-"
        median = f"{statistics.median(r['replay_seconds'] for r in here):.1f}" if here else "-"
        points = sum(r.get("points") or 0 for r in ok)
        moved = sum(len(r.get("moved") or []) for r in ok)
        print(f"{fmt:<22} {len(rs):>5} {len(ok):>9} {len(here) - len(ok):>8} {len(rs) - len(here):>9} {rate:>14} "
              f"{points:>7} {moved:>6} {median:>16}")
    refused = [r for r in records if r["replayable"] and not r["verified"]]
    if refused:
        print("\nrefused, by reason:")
        kinds: dict[tuple[str, str], list[str]] = defaultdict(list)
        for r in refused:
            kinds[(r["format"], reason_kind(r.get("reason")))].append(r["run"])
        for (fmt, kind), runs in sorted(kinds.items()):
            print(f"  {fmt:<22} {kind:<40} {len(runs):>3}: {', '.join(runs[:6])}{' ...' if len(runs) > 6 else ''}")
    moved_runs = [r for r in records if r.get("moved")]
    if moved_runs:
        print("\npoints moved by the helper-script rule:")
        for r in moved_runs:
            events = r.get("point_events") or {}
            print(f"  {r['format']:<22} {r['run']:<50} "
                  + ", ".join(f"{t} (now event {events.get(t, '-')})" for t in r["moved"]))
    sessions = [r for r in records if "verification_commands" in r]
    if sessions:
        print(f"\n{'format (not replayed)':<22} {'runs':>5} {'commands':>9} {'verification':>13} {'passed':>7} "
              f"{'failed':>7} {'unknown':>8}")
        for fmt in sorted({r["format"] for r in sessions}):
            rs = [r for r in sessions if r["format"] == fmt]
            res = defaultdict(int)
            for r in rs:
                for k, n in r["results"].items():
                    res[k] += n
            print(f"{fmt:<22} {len(rs):>5} {sum(r['commands'] for r in rs):>9} "
                  f"{sum(r['verification_commands'] for r in rs):>13} {res['passed']:>7} {res['failed']:>7} "
                  f"{res['unknown']:>8}")
    timed = [r for r in records if r.get("floor_seconds")]
    if timing and timed:
        replay = sum(r["replay_seconds"] for r in timed)
        floor = sum(r["floor_seconds"] for r in timed)
        print(f"\nreplay {replay:.1f} s, floor {floor:.1f} s over {len(timed)} runs: ratio {replay / floor:.2f} "
              f"(target at most 1.3); environment preparation, apart: "
              f"{sum(r['environment_seconds'] for r in timed):.1f} s")


if __name__ == "__main__":
    main()
