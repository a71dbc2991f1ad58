"""``takeover rediscovery``: which of a successor's actions repeat what the predecessor knew at the cut.

A thin layer over :func:`takeover.rediscovery.label_successor` (docs/protocol.md section 9.1).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from takeover._util.redact import redact
from takeover.cli.console import output_console
from takeover.cli.failures import command
from takeover.cli.options import (
    DATASET_HELP,
    POINT_TYPE_HELP,
    EventOption,
    JsonOption,
    PointsFileOption,
    RecordOption,
    SnapshotRepoOption,
    VerboseOption,
    option_groups,
    replay_settings,
    repo_source,
)
from takeover.errors import InputError
from takeover.points import RunPoints, analyze_run, stored_diffs
from takeover.rediscovery import LABELS, label_successor
from takeover.replay_settings import ReplaySettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import load_tasks, not_in_dataset, task_index
from takeover.trajectories import Trajectory, read_trajectories, read_trajectory
from takeover.vocabulary import POINT_TYPES


def _cut_event(predecessor_file: Path, record: int | None, point_type: str | None, event: int | None,
               dataset: Path | None, points_file: Path | None, source: RepoSource, snapshot_repo: Path | None,
               replay: ReplaySettings) -> int:
    """The predecessor's event at the handoff: ``event``, or the event of its ``point_type`` point."""
    if (point_type is None) == (event is None):
        raise InputError("--point-type", "give --point-type TYPE or --event N (one of them)")
    if event is not None:
        return event
    if point_type not in POINT_TYPES:
        raise InputError("--point-type", f"unknown point type {point_type!r}; expected one of {', '.join(POINT_TYPES)}")
    traj = read_trajectory(predecessor_file, record=record)
    if points_file is not None:
        rp = RunPoints.load(points_file, run=traj)
    else:
        if dataset is None:
            raise InputError("--point-type", "finding a point needs the task: give --dataset (or --points-file)")
        task = task_index(load_tasks(dataset)).get(traj.instance_id or "")
        if task is None:
            raise InputError(predecessor_file, not_in_dataset(traj.instance_id, dataset), field="instance_id")
        rp = analyze_run(traj, task, source, snapshot_repo=snapshot_repo, replay=replay)
    found = rp.point(point_type)
    if found is None:
        reason = next((m.reason for m in rp.missing if m.type == point_type), "not found")
        raise InputError(predecessor_file, f"no {point_type} point in this run: {reason}", field="point_type")
    return found.event_index


def _successor_run(successor: Path, successor_record: int | None) -> Trajectory:
    """The successor's run: run ``successor_record`` of its file, or its only run (the refusal names this
    command's flag for it, --successor-record)."""
    if successor_record is None:
        runs = read_trajectories(successor)
        if len(runs) == 1:
            return runs[0]
        if len(runs) > 1:
            raise InputError(successor, f"holds {len(runs)} runs; choose one with --successor-record 0..{len(runs) - 1}")
    return read_trajectory(successor, record=successor_record)


@option_groups(replay=replay_settings, repo_source=repo_source)
def rediscovery(
    predecessor: Annotated[Path, typer.Argument(help="The predecessor's trajectory (any supported format): the run or session that was cut.")],
    successor: Annotated[Path, typer.Argument(help="The successor's trajectory (any supported format): the run or session that resumed the task, or another run of it.")],
    replay: ReplaySettings,
    repo_source: RepoSource,
    point_type: Annotated[str | None, typer.Option("--point-type", help=f"{POINT_TYPE_HELP} The cut is that point's event.")] = None,
    event: EventOption = None,
    dataset: Annotated[Path | None, typer.Option("--dataset", help=f"{DATASET_HELP} Needed to find a --point-type point without --points-file.")] = None,
    points_file: PointsFileOption = None,
    snapshot_repo: SnapshotRepoOption = None,
    record: RecordOption = None,
    successor_record: Annotated[int | None, typer.Option("--successor-record", help="0-based index of the successor's run when its file holds several.")] = None,
    successor_start: Annotated[str, typer.Option("--successor-start", help="Where the successor started: checkpoint (it resumed from the predecessor's repository at the cut) or base (an independent run from the task's starting state).")] = "checkpoint",
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Label each successor action reread, research, rerun, redo_edit or new against what the predecessor
    knew at the cut, and print the run's rediscovery figures (docs/protocol.md section 9.1). A --point-type
    point is found as takeover points finds it (under the replay flags when the run must be replayed).

    With --json, one record: cut_event, figures, labels (event, label, repeats, kind, and for a new action
    the reason) and the unrecognised command parts of the actions left new, with counts.

    Exit status: 0 when labelled; 2 on bad input (no such event or point, an unknown format).

    Examples:

        takeover rediscovery session-a.jsonl session-b.jsonl --event 41 --json

        takeover rediscovery trajs/psf__requests-1766.json runs/successor/ --point-type after_first_source_edit \\
          --dataset swebench_verified.jsonl --mirror /data/mirror
    """
    if successor_start not in ("checkpoint", "base"):
        raise InputError("--successor-start", f"unknown start {successor_start!r}; expected checkpoint or base")
    cut = _cut_event(predecessor, record, point_type, event, dataset, points_file, repo_source,
                     snapshot_repo, replay)
    pred = read_trajectory(predecessor, record=record)
    succ = _successor_run(successor, successor_record)
    # Exact content keys when both runs store their per-event states (docs/protocol.md section 5.1 source (b)).
    result = label_successor(pred, cut, succ, start=successor_start,  # type: ignore[arg-type]
                             predecessor_states=stored_diffs(pred), successor_states=stored_diffs(succ))
    redacted: dict[str, int] = {}
    for part, n in result.unrecognised.items():
        redacted[redact(part)] = redacted.get(redact(part), 0) + n
    result.unrecognised = redacted
    if as_json:
        print(json.dumps(result.to_json()))
        return
    console = output_console()
    f = result.figures
    share = "n/a" if f.rediscovery_share is None else f"{f.rediscovery_share:.0%}"
    console.print(f"[bold]cut after predecessor event {cut}[/bold]: {f.rediscovery_actions} of {f.actions} successor "
                  f"actions rediscover ({f.rediscovery_events} of {f.agent_events} events, {share})")
    table = Table("label", "actions")
    for name in LABELS:
        table.add_row(name, str(f.by_label.get(name, 0)))
    console.print(table)
    tokens = "n/a" if f.rediscovery_prompt_tokens is None else f"{f.rediscovery_prompt_tokens} of {f.prompt_tokens}"
    console.print(f"prompt tokens of rediscovery calls: {tokens}; events until the first new action: "
                  f"{f.events_until_first_new}; until the first edit: {f.events_until_first_edit}")
    for a in result.labels:
        if a.label != "new":
            console.print(f"  event {a.event}: {a.label} (repeats predecessor event {a.repeats})")
    if result.unrecognised:
        console.print(f"not recognised: {escape('; '.join(f'{u} ({n})' for u, n in result.unrecognised.items()))}")


def register(app: typer.Typer) -> None:
    """Add ``takeover rediscovery`` to ``app``."""
    command(app, "rediscovery")(rediscovery)
