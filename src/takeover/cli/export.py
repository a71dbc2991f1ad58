"""``takeover export atif FILE``: a run of any supported format as ATIF (Harbor's trajectory format), whole
or cut at a handoff point or after an event. A thin layer over :func:`takeover.trajectories.atif_writer.write_atif`.
``takeover export harbor CHECKPOINT_DIR``: handoff points x views as Harbor tasks
(:func:`takeover.harbor.task_folder.export_tasks`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from takeover._util.folders import own_file
from takeover.cli.failures import command
from takeover.cli.options import (
    DATASET_HELP,
    OUT_DIR_HELP,
    POINT_TYPE_HELP,
    VIEW_HELP,
    DatasetOption,
    EventOption,
    PointsFileOption,
    RecordOption,
    VerboseOption,
    grading_settings,
    only_flags,
    option_groups,
    replay_settings,
    repo_source,
)
from takeover.errors import InputError
from takeover.grading_settings import GradingSettings
from takeover.harbor.task_folder import export_tasks
from takeover.points import RunPoints, analyze_run
from takeover.replay_settings import ReplaySettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import load_tasks, not_in_dataset, task_by_id, task_index
from takeover.trajectories import read_trajectory
from takeover.trajectories.atif_writer import to_atif, write_atif
from takeover.vocabulary import POINT_TYPES

#: The file name Harbor gives an ATIF trajectory.
ATIF_FILE = "trajectory.json"
export_app = typer.Typer(help="Write runs in other tools' formats.", no_args_is_help=True)


@command(export_app, "atif")
@option_groups(replay=replay_settings, repo_source=repo_source)
def atif(
    file: Annotated[Path, typer.Argument(help="Trajectory file or run folder (any supported format).")],
    replay: ReplaySettings,
    repo_source: RepoSource,
    out_dir: Annotated[Path | None, typer.Option("--out-dir", help=f"{OUT_DIR_HELP}: the document as DIR/{ATIF_FILE}, Harbor's file name (default: print it).")] = None,
    event: EventOption = None,
    point_type: Annotated[str | None, typer.Option("--point-type", help=f"{POINT_TYPE_HELP} Cut there instead (needs --dataset, or --points-file).")] = None,
    dataset: Annotated[Path | None, typer.Option("--dataset", help=f"{DATASET_HELP} For --point-type: the run's task, to find the point by replay.")] = None,
    points_file: PointsFileOption = None,
    record: RecordOption = None,
    verbose: VerboseOption = False,
) -> None:
    """Write FILE as an ATIF trajectory (ATIF-v1.7, validated with the atif package), whole or cut.

    A cut keeps events 0..N (--event N) or the events up to a handoff point (--point-type, found as
    takeover points finds it, under the replay flags), with the tokens of the model calls that produced them. The document
    carries instance_id, final_patch and the cut in its root extra; takeover reads it back as a run of
    format atif. The trace alone: the repository at the cut is takeover checkpoint --event N.

    Examples:

        takeover export atif trajs/psf__requests-1766.json --event 17 --out-dir requests-1766-cut17/

        takeover export atif trajs/psf__requests-1766.json --point-type after_first_source_edit \\
          --dataset swebench_verified.jsonl --mirror /data/mirror --out-dir cut/
    """
    if event is not None and point_type is not None:
        raise InputError("--event", "give --event N or --point-type TYPE, not both")
    traj = read_trajectory(file, record=record)
    through = event
    if point_type is not None:
        if point_type not in POINT_TYPES:
            raise InputError("--point-type", f"unknown point type {point_type!r}; expected one of {', '.join(POINT_TYPES)}")
        if points_file is not None:
            run_points = RunPoints.load(points_file, run=traj)
        else:
            if dataset is None:
                raise InputError("--dataset", "finding a point needs the run's task: give --dataset (or --points-file)")
            task = task_by_id(dataset, traj.instance_id or "")
            if task is None:
                raise InputError(file, not_in_dataset(traj.instance_id, dataset), field="instance_id")
            run_points = analyze_run(traj, task, repo_source, replay=replay)
        found = run_points.point(point_type)
        if found is None:
            print(f"error: no {point_type} point in this run: {run_points.missing_reason(point_type)}", file=sys.stderr)
            raise typer.Exit(1)
        through = found.event_index
    if out_dir is None:
        print(json.dumps(to_atif(traj, through_event=through), indent=2, ensure_ascii=False))
        return
    own_file(out_dir / ATIF_FILE, is_own=lambda path: _atif_of(path) == traj.instance_id, what="an ATIF trajectory of "
             f"{traj.instance_id or 'this run'}")
    out = write_atif(traj, out_dir / ATIF_FILE, through_event=through)
    kept = len(traj.events) if through is None else through + 1
    print(f"wrote {out}: {kept} of {len(traj.events)} events as ATIF", file=sys.stderr)


def _atif_of(path: Path) -> str | None | bool:
    """The instance of the ATIF document takeover wrote at ``path`` (``None``: it names none), or ``False`` when
    the file is not one."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    ours = isinstance(doc, dict) and str(doc.get("schema_version", "")).startswith("ATIF") and \
        isinstance(doc.get("extra"), dict) and "final_patch" in doc["extra"]
    return doc["extra"].get("instance_id") if ours else False


#: The grading flags a Harbor task's verifier honours: its tests run in the task's own container, under Harbor, so
#: the backend, its options and the network are not takeover's to choose there.
verifier_grading = only_flags(grading_settings, "grading_timeout", "hash_seed", "grading_rules")


@command(export_app, "harbor")
@option_groups(grading=verifier_grading, repo_source=repo_source)
def harbor(
    checkpoint_dir: Annotated[Path, typer.Argument(help="A checkpoint folder (takeover checkpoint, views built), or a folder holding many: a study's output folder.")],
    dataset: DatasetOption,
    grading: GradingSettings,
    repo_source: RepoSource,
    view: Annotated[list[str] | None, typer.Option("--view", help=f"{VIEW_HELP} Repeatable; default: every view built for the checkpoint.")] = None,
    out_dir: Annotated[Path, typer.Option("--out-dir", help=f"{OUT_DIR_HELP}: one Harbor task folder per (point, view).")] = Path("harbor-tasks"),
    image: Annotated[str | None, typer.Option("--image", help="Base image of every task's environment (default: SWE-bench's image of the instance).")] = None,
    seed_trajectory: Annotated[bool, typer.Option("--seed-trajectory/--no-seed-trajectory", help="Ship the predecessor's run as a raw_trace task's trajectory.json, which Harbor seeds the agent's session with; only agents that can load ATIF run such a task (Claude Code, Codex CLI). The trace is in the instruction either way.")] = True,
    agent_timeout: Annotated[float | None, typer.Option("--agent-timeout", help="Seconds Harbor gives the successor agent ([agent] timeout_sec; default: Harbor's).", min=1)] = None,
    verbose: VerboseOption = False,
) -> None:
    """Write handoff points x views as Harbor tasks, so that any Harbor agent can be the successor.

    Each task's instruction is the view's takeover prompt (views/VIEW.md); a raw_trace task also ships the
    predecessor's run up to the cut as trajectory.json (ATIF, every step marked copied context); the
    environment is the instance's SWE-bench image with the checkpoint's repository at /testbed, its history
    frozen; tests/test.sh grades the final repository with SWE-bench's tests and writes the reward and
    report.json: --grading-timeout is the verifier's timeout, --grading-rules and --hash-seed reach its
    verdict (the tests run in the task's own container, SWE-bench's image, as Harbor runs it: where and with
    what network is Harbor's). Without --view, every view built for a checkpoint is exported. Then run them with
    `harbor run -p OUT_DIR -a AGENT -m MODEL` and read the trials back with `takeover report JOBS_DIR`
    (docs/harbor.md).

    Examples:

        takeover export harbor study/ --dataset swebench_verified.jsonl --out-dir harbor-tasks/

        takeover export harbor cps/requests-1766/ --view raw_trace --dataset verified.jsonl --mirror /data/mirror
    """
    tasks = task_index(load_tasks(dataset))
    written = export_tasks(checkpoint_dir, view, tasks, out_dir, repo_source=repo_source,
                           image=image, grading=grading, agent_timeout=agent_timeout,
                           seed_trajectory=seed_trajectory)
    for folder in written:
        print(folder)
    print(f"wrote {len(written)} Harbor task(s) under {out_dir}", file=sys.stderr)


def register(app: typer.Typer) -> None:
    """Add ``takeover export`` to ``app``."""
    app.add_typer(export_app, name="export")
