"""The inputs of the views of one handoff point: the trajectory, its task, the point and the checkpoint
patch, from a checkpoint folder, a saved points file or the points stage (in that order), or a cut at an
event the user chose (docs/protocol.md section 4.5).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from takeover.checkpoints import load_checkpoint
from takeover.errors import InputError
from takeover.input_schemas import Cut, refuse_other
from takeover.points import HandoffPoint, RunPoints, analyze_run, cut_at_event
from takeover.replay_settings import ReplaySettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask, task_by_id
from takeover.trajectories import Trajectory, read_trajectory
from takeover.vocabulary import EVENT_CUT, POINT_TYPES


class ViewInputs(BaseModel):
    """Everything a view needs for one handoff point, and where it came from.

    Attributes:
        point_type: the point's type, or ``event`` for a cut at an event (:data:`takeover.vocabulary.EVENT_CUT`).
        point: the handoff point, or ``None`` when the run has no point of that type, or the cut was
            refused (``missing_reason``).
        checkpoint_patch: the cumulative diff at the point.
        handoff_state: the checkpoint's grading label when known (it only feeds the leak guard).
        notes: remarks for the user (e.g. a task built from the trajectory's prompt).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    trajectory: Trajectory
    task: SourceTask
    point_type: str
    point: HandoffPoint | None = None
    checkpoint_patch: str = ""
    missing_reason: str | None = None
    handoff_state: str | None = None
    notes: list[str] = Field(default_factory=list)


def load_inputs(
    file: Path | str,
    point_type: str | None,
    dataset: Path | str,
    *,
    record: int | None = None,
    repo_source: RepoSource | None = None,
    points_file: Path | str | None = None,
    checkpoint_dir: Path | str | None = None,
    event: int | None = None,
    replay: ReplaySettings | None = None,
) -> ViewInputs:
    """Read the trajectory, its task and the handoff point (from a checkpoint folder, ``points_file`` or
    :func:`takeover.points.analyze_run` on ``repo_source``'s repository, in that order).

    With ``checkpoint_dir`` (``checkpoint.json`` + ``checkpoint.patch``), the point, the patch and the
    handoff state come from there (the state only feeds the leak guard); ``point_type`` may be ``None``.
    With ``event`` (0-based) and neither of them, the point is a cut after that event
    (:func:`takeover.points.cut_at_event`; a refused cut gives ``missing_reason``) and ``point_type`` is
    ``None`` or ``event``.

    A run whose ``instance_id`` is not in ``dataset`` (the format samples of other benchmarks) gets a
    stand-in task whose problem statement is the trajectory's own task prompt; ``notes`` says so. A point
    found by replay is found with ``replay`` (:class:`takeover.replay_settings.ReplaySettings`).

    Raises:
        InputError: unknown point type, a file holding several runs without ``record``, a record index
            out of range, or a run not in ``dataset`` (and naming no repository) whose point must be
            detected (neither ``checkpoint_dir`` nor ``points_file``).
        takeover.errors.RepositoryUnavailable: detection needs a replay and the repository is missing.
    """
    checkpoint = None
    patch_text = ""
    if checkpoint_dir is not None:
        checkpoint, patch_text = load_checkpoint(Path(checkpoint_dir))
        if point_type is not None and point_type != checkpoint.point.type:
            raise InputError(Path(checkpoint_dir) / "checkpoint.json",
                             f"checkpoint is at a {checkpoint.point.type} point, not {point_type}", field="point.type")
        point_type = checkpoint.point.type
    elif event is not None:
        if points_file is not None:
            raise InputError("--event", "a cut at an event needs the run's states, which a points file does not "
                             "hold; leave out --points-file")
        if point_type not in (None, EVENT_CUT):
            raise InputError("--event", f"give a point type or an event, not both ({point_type} and event {event})")
        point_type = EVENT_CUT
    if point_type not in POINT_TYPES and not (point_type == EVENT_CUT and (checkpoint is not None or event is not None)):
        raise InputError("--point-type", f"unknown point type {point_type!r}; expected one of {', '.join(POINT_TYPES)}")
    trajectory = read_trajectory(file, record=record)
    notes: list[str] = []
    task = task_by_id(dataset, trajectory.instance_id) if trajectory.instance_id is not None else None
    if task is None:
        notes.append(
            f"{trajectory.instance_id or 'this run'} is not in {dataset}: the trajectory's task prompt stands in "
            "for the problem statement, and the leak guard knows no hidden tests or gold patch"
        )
        task = SourceTask(
            instance_id=trajectory.instance_id or Path(file).stem,
            repo=str(trajectory.metadata.get("repo") or ""),
            base_commit=str(trajectory.metadata.get("base_commit") or ""),
            problem_statement=trajectory.task_prompt or "",
        )
    if checkpoint is not None:
        refuse_other(Path(checkpoint_dir) / "checkpoint.json",
                     Cut(instance_id=checkpoint.instance_id, trajectory_record=checkpoint.trajectory_record),
                     Cut(instance_id=trajectory.instance_id, trajectory_record=trajectory.record),
                     kind="checkpoint", way_out=f"give the checkpoint folder of this run ({file})")
        if len(trajectory.events) <= checkpoint.point.event_index:
            raise InputError(file, f"this run has {len(trajectory.events)} events and the checkpoint's point is after "
                             f"event {checkpoint.point.event_index}: the checkpoint was made from another run",
                             field="point.event_index")
        return ViewInputs(trajectory=trajectory, task=task, point_type=point_type, point=checkpoint.point,
                          checkpoint_patch=patch_text, handoff_state=checkpoint.handoff_state, notes=notes)
    if points_file is not None:
        run_points = RunPoints.load(points_file, run=trajectory)
    else:
        if not (task.repo and task.base_commit):
            # Detection replays the run on the task's repository; a stand-in task has none to clone.
            raise InputError(
                file,
                f"the run's instance {trajectory.instance_id or '(none recorded)'!r} is not in {dataset}, so its "
                "repository and base commit are unknown and the point cannot be detected by replay; give "
                "--checkpoint-dir DIR or --points-file FILE (takeover points --out-dir) instead",
                field="instance_id",
            )
        if event is not None:
            cut = cut_at_event(trajectory, task, event, repo_source, replay=replay)
            return ViewInputs(trajectory=trajectory, task=task, point_type=point_type, point=cut.point,
                              checkpoint_patch=cut.patch, missing_reason=cut.reason, notes=notes)
        run_points = analyze_run(trajectory, task, repo_source, replay=replay)
    point = run_points.point(point_type)
    if point is None:
        return ViewInputs(trajectory=trajectory, task=task, point_type=point_type, notes=notes,
                          missing_reason=run_points.missing_reason(point_type))
    return ViewInputs(
        trajectory=trajectory, task=task, point_type=point_type, point=point,
        checkpoint_patch=run_points.patches.get(point_type, ""), notes=notes,
    )
