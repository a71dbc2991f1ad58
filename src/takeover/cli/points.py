"""``takeover points`` and ``takeover checkpoint``: handoff points of predecessor runs and one checkpoint.

A thin layer over :func:`takeover.points.analyze_run` and
:func:`takeover.checkpoints.materialize_checkpoint` (docs/protocol.md sections 3-5).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from takeover._util import sandbox
from takeover._util.folders import check_writable
from takeover.checkpoints import materialize_checkpoint, refuse_other_checkpoint
from takeover.cli.console import is_watched, output_console, progress_line
from takeover.cli.failures import command
from takeover.cli.options import (
    OUT_DIR_HELP,
    POINT_TYPE_HELP,
    DatasetOption,
    EventOption,
    JsonOption,
    PointsFileOption,
    RecordOption,
    SnapshotRepoOption,
    VerboseOption,
    grading_settings,
    option_groups,
    replay_settings,
    repo_source,
)
from takeover.errors import InputError, RepositoryUnavailable, TakeoverError
from takeover.grading import grade_handoff_state
from takeover.grading_settings import GradingSettings
from takeover.points import RunEvents, RunPoints, analyze_run, checkpoint_method, cut_at_event, run_events
from takeover.replay_settings import ReplaySettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import load_tasks, not_in_dataset, task_index
from takeover.trajectories import CUT_LAST_LINE, read_trajectories, read_trajectory
from takeover.trajectories.registry import expand_paths, is_unknown_format
from takeover.vocabulary import EVENT_CUT, POINT_TYPES


def _expanded(paths: list[Path]) -> list[Path]:
    """Folders of trajectories expanded (:func:`takeover.trajectories.registry.expand_paths`); a missing
    path stays, so that reading it reports the error beside the others."""
    out: list[Path] = []
    for p in paths:
        out.extend(expand_paths([p]) if p.exists() else [p])
    return out


def _points_path(out_dir: Path, rp: RunPoints) -> Path:
    """Where ``--out-dir`` saves ``rp``: ``<instance_id>.points.json``, or, when that file holds another run of
    the same instance (another trajectory file or record), ``<instance_id>.N.points.json`` with the first N
    from 2 that is free or holds this run: a run's file is replaced by its rerun, never by another run."""
    for n in range(1, 10_000):
        path = out_dir / (f"{rp.instance_id}.points.json" if n == 1 else f"{rp.instance_id}.{n}.points.json")
        if not path.exists():
            return path
        try:
            stored = RunPoints.load(path)
        except InputError:
            continue
        if (stored.trajectory, stored.trajectory_record) == (rp.trajectory, rp.trajectory_record):
            return path
    raise InputError(out_dir, f"too many runs of {rp.instance_id} in the folder")


def points_json(rp: RunPoints) -> dict:
    """The ``takeover points --json`` record of one :class:`~takeover.points.RunPoints`: instance_id,
    replay (verified, method, first_mismatch), points (type, event_index, changed_source_files,
    patch_sha256) and missing (type, reason)."""
    return {
        "instance_id": rp.instance_id,
        "replay": {"verified": rp.replay.verified, "method": rp.replay.method, "rule": rp.replay.rule,
                   "first_mismatch": rp.replay.first_mismatch, "reason": rp.replay.reason,
                   "environment_files": rp.replay.environment_files, "environment": rp.replay.environment,
                   "notes": rp.replay.notes},
        "points": [
            {"type": p.type, "event_index": p.event_index, "changed_source_files": p.changed_source_files,
             "patch_sha256": p.patch_sha256}
            for p in rp.points
        ],
        "missing": [{"type": m.type, "reason": m.reason} for m in rp.missing],
    }


def _print_run(console: Console, rp: RunPoints, where: str) -> None:
    v = rp.replay
    if v.verified:
        verdict = f"[green]verified[/green] ({v.method}{', rule ' + v.rule if v.rule else ''})"
    else:
        verdict = f"[red]unreplayable[/red] ({escape(str(v.reason))})"
    console.print(f"[bold]{escape(str(rp.instance_id))}[/bold]  {escape(where)}  {rp.events} events  replay: {verdict}")
    if v.mode or v.interpreter:
        console.print(escape(f"  replay: {v.sandbox}; mode {v.mode}; {v.interpreter}"), style="dim")
    if v.environment_files:
        kept = {"committed": "committed by the recording image", "working_tree": "left in the working tree"}
        how = f"; {kept[v.environment]}" if v.environment else ""
        console.print(escape(f"  environment setup changed {', '.join(v.environment_files)} before the agent "
                             f"started (starting state, not the agent's work{how})"))
    for note in v.notes:
        console.print(escape(f"  note: {note}"), style="dim")
    if rp.points:
        table = Table(show_edge=False, pad_edge=False)
        for column, justify in (("point", "left"), ("event", "right"), ("changed source files", "left"),
                                ("patch lines", "right"), ("latest verification", "left")):
            table.add_column(column, justify=justify, overflow="fold")
        for p in rp.points:
            table.add_row(p.type, str(p.event_index), escape(", ".join(p.changed_source_files)) or "-",
                          str(p.patch_lines), escape(p.latest_verification_result or "-"))
        console.print(table)
    for m in rp.missing:
        console.print(f"  [yellow]missing[/yellow] {m.type}: {escape(m.reason)}")


def events_json(re: RunEvents) -> dict:
    """The ``takeover points --all-events --json`` record of one run: instance_id, replay (verified,
    method, reason), reason (why the run has no exact states) and one row per event."""
    return {"instance_id": re.instance_id,
            "replay": {"verified": re.replay.verified, "method": re.replay.method, "reason": re.replay.reason},
            "reason": re.reason, "events": [r.model_dump() for r in re.rows]}


def _print_events(console: Console, re: RunEvents, where: str) -> None:
    v = re.replay
    verdict = f"[green]verified[/green] ({v.method})" if v.verified else f"[red]unreplayable[/red] ({escape(str(v.reason))})"
    console.print(f"[bold]{escape(re.instance_id)}[/bold]  {escape(where)}  {re.events} events  replay: {verdict}")
    if not re.rows:
        console.print(f"  [yellow]no exact state at any event:[/yellow] {escape(str(re.reason))}")
        return
    table = Table(show_edge=False, pad_edge=False)
    for column, justify in (("event", "right"), ("", "left"), ("what", "left"), ("changed files", "left"),
                            ("", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    for r in re.rows:
        notes = [n for n in ("source edit" if r.source_edit else "",
                             f"verification {r.verification}" if r.verification else "") if n]
        table.add_row(str(r.index), f"{r.kind} {r.type}", escape(r.summary[:60]) if r.kind == "action" else "",
                      escape(", ".join(r.changed_files)) or "-", "; ".join(notes))
    console.print(table)


@option_groups(replay=replay_settings, repo_source=repo_source)
def points(
    files: Annotated[list[Path], typer.Argument(help="Predecessor trajectory files or folders of them (any supported format; other JSON in a folder is skipped with a note).")],
    dataset: DatasetOption,
    replay: ReplaySettings,
    repo_source: RepoSource,
    as_json: JsonOption = False,
    out_dir: Annotated[Path | None, typer.Option("--out-dir", help=f"{OUT_DIR_HELP}: each run's full result as DIR/<instance_id>.points.json (for --points-file); another run of the same instance gets DIR/<instance_id>.2.points.json.")] = None,
    snapshot_repo: SnapshotRepoOption = None,
    all_events: Annotated[bool, typer.Option("--all-events", help="List every event instead (0-based index, the files it changed, source edit, verification result), to choose one for --event.")] = False,
    verbose: VerboseOption = False,
) -> None:
    """Print each run's replay verdict and its handoff points (or why each is missing).

    With --all-events, every event of each run instead, from the same exact states: its 0-based index
    (what checkpoint/views --event N take), kind and type, the files it changed, whether it is a source
    edit and its verification result; --json prints instance_id, replay, reason and events, and
    --out-dir saves DIR/<instance_id>.events.json.

    With --json, one line per run, in the order of the files given: instance_id, replay (verified,
    method, first_mismatch), points (type, event_index, changed_source_files, patch_sha256) and
    missing (type, reason).

    With output to a file or pipe, one line per analysed run also goes to stderr (time, file count,
    verdict, points, seconds). A run whose instance is not in the dataset, or whose repository cannot be
    obtained, is reported on stderr and skipped. Unreadable files are reported too; the exit status is then 2. When no run
    at all could be analysed (every one skipped), the exit status is 1.

    Examples:

        takeover points trajs/*.json --dataset swebench_verified.jsonl --mirror /data/mirror --json

        takeover points trajs/ --dataset swebench_verified.jsonl --offline --out-dir points/
    """
    err = output_console(stderr=True)
    console = output_console()
    lines = not is_watched(err)
    if out_dir is not None:
        check_writable(out_dir)  # before the replays, which may take minutes
    tasks = task_index(load_tasks(dataset))
    st = sandbox.status()
    if not st.available:
        err.print(f"[yellow]note:[/yellow] {escape(st.message)}")
    bad = analysed = 0
    paths = _expanded(files)
    for number, path in enumerate(paths, 1):
        try:
            runs = read_trajectories(path)
        except InputError as exc:
            if path not in files and is_unknown_format(exc):  # reports and indexes beside the runs
                print(f"note: skipped {path}: not a trajectory file of any known format", file=sys.stderr)
            else:
                print(f"error: {exc}", file=sys.stderr)
                bad += 1
            continue
        except TakeoverError as exc:
            print(f"error: {exc}", file=sys.stderr)
            bad += 1
            continue
        for traj in runs:
            where = f"{path}" + (f" {traj.record}" if traj.record else "")
            if traj.metadata.get(CUT_LAST_LINE):
                print(f"note: {traj.metadata[CUT_LAST_LINE]}", file=sys.stderr)
            task = tasks.get(traj.instance_id or "")
            if task is None:
                print(f"skipped: {where}: {not_in_dataset(traj.instance_id, dataset)}", file=sys.stderr)
                continue
            started = time.monotonic()
            try:
                if all_events:
                    listed = run_events(traj, task, repo_source, snapshot_repo=snapshot_repo, replay=replay)
                else:
                    rp = analyze_run(traj, task, repo_source, snapshot_repo=snapshot_repo, replay=replay)
            except RepositoryUnavailable as exc:
                print(f"skipped: {where}: {exc}", file=sys.stderr)
                continue
            except Exception as exc:  # noqa: BLE001 - one run's failure is that run's reason; the others go on
                detail = str(exc).splitlines()[0][:300] if str(exc) else ""
                print(f"error: {where}: {type(exc).__name__}: {detail}", file=sys.stderr)
                bad += 1
                continue
            analysed += 1
            if all_events:
                if out_dir is not None:
                    listed.save(out_dir / f"{listed.instance_id}.events.json")
                if as_json:
                    print(json.dumps(events_json(listed), ensure_ascii=False), flush=True)
                else:
                    _print_events(console, listed, where)
                continue
            if lines:
                verdict = f"verified ({rp.replay.method})" if rp.replay.verified else "unreplayable"
                progress_line(f"points {number}/{len(paths)} files: {rp.instance_id} replay {verdict}, "
                              f"{len(rp.points)} point(s), {len(rp.missing)} missing, "
                              f"{time.monotonic() - started:.1f} s: {where}")
            if out_dir is not None:
                target = _points_path(out_dir, rp)
                if target.name != f"{rp.instance_id}.points.json":
                    print(f"note: {where}: another run of {rp.instance_id} is in {out_dir}; saved as {target.name}",
                          file=sys.stderr)
                rp.save(target)
            if as_json:
                print(json.dumps(points_json(rp), ensure_ascii=False), flush=True)
            else:
                _print_run(console, rp, where)
    if bad:
        raise typer.Exit(2)
    if not analysed:
        print("error: no trajectory could be analysed (every run was skipped)", file=sys.stderr)
        raise typer.Exit(1)


@option_groups(replay=replay_settings, grading=grading_settings, repo_source=repo_source)
def checkpoint(
    file: Annotated[Path, typer.Argument(help="Predecessor trajectory file (any supported format).")],
    out_dir: Annotated[Path, typer.Option("--out-dir", help=f"{OUT_DIR_HELP}: the checkpoint folder (checkpoint.json, checkpoint.patch, workspace/).")],
    dataset: DatasetOption,
    replay: ReplaySettings,
    grading: GradingSettings,
    repo_source: RepoSource,
    point_type: Annotated[str | None, typer.Option("--point-type", help=POINT_TYPE_HELP)] = None,
    event: EventOption = None,
    state: Annotated[bool, typer.Option("--state", help="Grade the checkpoint and record its handoff state (docs/protocol.md section 6).")] = False,
    record: RecordOption = None,
    points_file: PointsFileOption = None,
    snapshot_repo: SnapshotRepoOption = None,
    workspace: Annotated[bool, typer.Option("--workspace/--no-workspace", help="Also write the workspace (base_commit + the patch), or only checkpoint.json and checkpoint.patch.")] = True,
    verbose: VerboseOption = False,
) -> None:
    """Materialize one checkpoint: base_commit + the run's cumulative diff at the handoff point, or after
    event N (--event N: the same exact states and rules as the point types; checkpoint.json then names
    the event, point type "event").

    A folder that holds another checkpoint is refused before any work and left as it was; the new
    folder is built beside OUT and renamed into place whole. The run's states come from a replay under the
    replay flags when it records none; --state grades under the grading flags (--backend, --grading-timeout,
    --network, --hash-seed, --grading-rules, --backend-option), as takeover grade does.

    Exit status: 0 when written; 1 when the run has no such point or no exact state after that event
    (the reason is printed); 2 on bad input or an OUT that holds another checkpoint.

    Examples:

        takeover checkpoint trajs/psf__requests-1766.json --point-type after_first_source_edit \\
          --dataset swebench_verified.jsonl --mirror /data/mirror --out-dir cp/ --state

        takeover checkpoint trajs/psf__requests-1766.json --event 17 --dataset swebench_verified.jsonl \\
          --mirror /data/mirror --out-dir cp-17/
    """
    point = point_type
    if (point is None) == (event is None):
        raise InputError("--point-type", "give --point-type TYPE or --event N (one of them)")
    if point is not None and point not in POINT_TYPES:
        raise InputError("--point-type", f"unknown point type {point!r}; expected one of {', '.join(POINT_TYPES)}")
    if event is not None and points_file is not None:
        raise InputError("--points-file", "a cut at an event needs the run's states, which a points file does "
                         "not hold; leave out --points-file")
    check_writable(out_dir)
    traj = read_trajectory(file, record=record)
    task = task_index(load_tasks(dataset)).get(traj.instance_id or "")
    if task is None:
        raise InputError(file, not_in_dataset(traj.instance_id, dataset), field="instance_id")
    # Before the replay, which may take minutes.
    refuse_other_checkpoint(out_dir, task.instance_id, point or EVENT_CUT, event_index=event)
    if event is not None:
        cut = cut_at_event(traj, task, event, repo_source, snapshot_repo=snapshot_repo, replay=replay)
        if cut.point is None:
            output_console(stderr=True).print(f"[red]no exact state after event {event}:[/red] {escape(str(cut.reason))}")
            raise typer.Exit(1)
        found, patch, verdict, label = cut.point, cut.patch, cut.replay, f"event {event}"
    else:
        rp = RunPoints.load(points_file, run=traj) if points_file else analyze_run(
            traj, task, repo_source, snapshot_repo=snapshot_repo, replay=replay)
        found = rp.point(point)
        if found is None:
            reason = next((m.reason for m in rp.missing if m.type == point), "not found")
            output_console(stderr=True).print(f"[red]no {point} point in this run:[/red] {escape(reason)}")
            raise typer.Exit(1)
        patch, verdict, label = rp.patches.get(point, ""), rp.replay, f"{point} at event {found.event_index}"
    cp = materialize_checkpoint(task, traj, found, patch, out_dir, checkpoint_method(verdict),
                                repo_source=repo_source, workspace=workspace,
                                environment_files=verdict.environment_files)
    if state:
        cp.handoff_state = grade_handoff_state(task, patch, grading, repo_source=repo_source)
        cp.save(out_dir)
    console = output_console()
    console.print(f"[bold]{escape(cp.instance_id)}[/bold] {label} ({cp.method})")
    console.print(f"  files: {escape(', '.join(cp.files)) or '(none)'}")
    console.print(f"  patch sha256 {cp.patch_sha256[:16]}..., {found.patch_lines} lines")
    if cp.handoff_state:
        console.print(f"  handoff state: {cp.handoff_state}")
    console.print(escape(f"  wrote {out_dir / 'checkpoint.json'}, {out_dir / 'checkpoint.patch'}"
                         + (f", {cp.workspace}" if cp.workspace else "")))


def register(app: typer.Typer) -> None:
    """Add ``takeover points`` and ``takeover checkpoint`` to ``app``."""
    command(app, "points")(points)
    command(app, "checkpoint")(checkpoint)
