"""The handoff points of one predecessor run: the one way to find them, and the record later stages read
(docs/protocol.md sections 3-5).

:func:`analyze_run` takes the repository state after every event from the best exact source
(:func:`takeover.points.event_states.event_states`) and detects the points on it
(:func:`takeover.points.detection.detect_points`). A run whose states are not exact has no qualifying
point: every point type is reported missing with the reason.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from takeover._util.io import atomic_write_text, read_json
from takeover.errors import InputError, json_type
from takeover.input_schemas import Cut, refuse_other
from takeover.points.detection import HandoffPoint, MissingPoint, detect_points
from takeover.points.event_states import event_states
from takeover.replay_settings import ReplaySettings
from takeover.repository_states.replay import ReplayResult, ReplayVerdict
from takeover.repository_states.snapshots import join_diffs
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.trajectories.events import Trajectory
from takeover.vocabulary import POINT_TYPES


class RunPoints(BaseModel):
    """Everything later stages need about one predecessor run: the replay verdict, its handoff points,
    the missing ones with their reasons, and the cumulative patch at each point.

    Written as JSON (:meth:`save`) and read back (:meth:`load`) without recomputation. Deterministic: the
    same trajectory and repository give byte-identical JSON (no times, no temporary paths).

    Attributes:
        instance_id, repo, base_commit: the source task.
        trajectory, trajectory_record, format: where the run came from.
        events: number of events (agent events).
        replay: how the per-event states were obtained and whether they are exact.
        points: qualifying handoff points (empty when the states are not exact).
        missing: point types that do not exist or do not qualify, with the reason.
        patches: ``{point type: cumulative patch at the point}`` (the future ``checkpoint.patch``), against
            the task's starting state.
        environment_patch: the edits the task environment's own setup made before the agent started
            (docs/protocol.md section 5.2): the starting state is ``base_commit`` plus this patch; empty when
            the setup changes nothing. Never part of a point's patch.
    """

    instance_id: str
    repo: str
    base_commit: str
    trajectory: str | None = None
    trajectory_record: str | None = None
    format: str | None = None
    events: int = 0
    replay: ReplayVerdict
    points: list[HandoffPoint] = Field(default_factory=list)
    missing: list[MissingPoint] = Field(default_factory=list)
    patches: dict[str, str] = Field(default_factory=dict)
    environment_patch: str = ""

    def point(self, point_type: str) -> HandoffPoint | None:
        """The point of type ``point_type``, or ``None`` when it is missing."""
        return next((p for p in self.points if p.type == point_type), None)

    def missing_reason(self, point_type: str) -> str:
        """Why the run has no point of type ``point_type`` (``"not found"`` when no reason is recorded)."""
        return next((m.reason for m in self.missing if m.type == point_type), "not found")

    def save(self, path: Path | str) -> Path:
        """Write this record as JSON, atomically."""
        return atomic_write_text(path, self.model_dump_json(indent=2) + "\n")

    def made_for(self) -> Cut:
        """The run this record was made for: its task, its record in the file, its format and length."""
        return Cut(instance_id=self.instance_id, trajectory_record=self.trajectory_record, format=self.format,
                   events=self.events)

    @classmethod
    def load(cls, path: Path | str, *, run: Trajectory | None = None) -> RunPoints:
        """Read a record written by :meth:`save`; with ``run``, check that it was made for that run (its task,
        record, format and number of events, docs/protocol.md section 5.5): a points file of another task or
        run is refused, never applied.

        Raises:
            InputError: the file is not such a record, or it was made for another run than ``run`` (names the
                file and the field that differs).
        """
        doc = read_json(path)
        if not isinstance(doc, dict):
            raise InputError(path, f"not a points file (takeover points --out-dir): expected a JSON object, got "
                             f"{json_type(doc)}")
        try:
            points = cls.model_validate(doc)
        except ValidationError as exc:
            error = InputError.from_validation(path, exc)
            raise InputError(path, f"not a points file (takeover points --out-dir): {error.reason}",
                             field=error.field) from None
        if run is not None:
            refuse_other(path, points.made_for(), Cut(instance_id=run.instance_id, trajectory_record=run.record,
                                                      format=run.format, events=len(run.events)),
                         kind="points file",
                         way_out=f"give the points file of this run (takeover points {run.source_path} --out-dir DIR)")
        return points


def _unqualified(verdict: ReplayVerdict) -> list[MissingPoint]:
    why = verdict.reason or "the run's states are not exact"
    return [MissingPoint(type=t, reason=f"run is unreplayable: {why}") for t in POINT_TYPES]


def analyze_run(
    trajectory: Trajectory,
    task: SourceTask,
    repo_source: RepoSource | None = None,
    *,
    snapshot_repo: Path | str | None = None,
    work_dir: Path | str | None = None,
    replay: ReplaySettings | None = None,
    result_out: list | None = None,
) -> RunPoints:
    """Per-event states, verdict and handoff points of one predecessor run (docs/protocol.md sections 3-5).

    States come from the best source available (:func:`~takeover.points.event_states.event_states`):
    recorded snapshots (``snapshot_repo``, by default the workspace our runner names in
    ``trajectory.metadata["snapshot_repo"]``), stored per-step diffs, or a replay in a fresh workspace of
    ``task`` from ``repo_source`` (under ``work_dir``, a temporary folder by default, removed afterwards).
    A replay is accepted only when it reproduces the run's final patch; otherwise every point is reported
    missing with the reason.

    Args:
        replay: how a replay runs (:class:`takeover.replay_settings.ReplaySettings`, the ``replay`` option
            group and the experiment file's ``[replay]``; default: its defaults): per-command limits, the
            sandbox, and whether the task's environment is used.
        result_out: when a list is given, the :class:`ReplayResult` (per-event trees and diffs) is appended.

    Raises:
        RepositoryUnavailable: the repository or ``base_commit`` cannot be obtained (replay only).
    """
    base = {
        "instance_id": task.instance_id, "repo": task.repo, "base_commit": task.base_commit,
        "trajectory": trajectory.source_path, "trajectory_record": trajectory.record, "format": trajectory.format,
        "events": len(trajectory.events),
    }
    result: ReplayResult = event_states(
        trajectory, task, repo_source, snapshot_repo=snapshot_repo, work_dir=work_dir,
        replay=replay,
    )
    if result_out is not None:
        result_out.append(result)
    base["environment_patch"] = result.start.patch if result.start is not None else ""
    if not result.verdict.verified:
        return RunPoints(**base, replay=result.verdict, missing=_unqualified(result.verdict))
    points, missing = detect_points(trajectory.events, result.diffs, base_top_level=result.base_top_level)
    for point in points:
        point.unrecorded_files = result.unrecorded[point.event_index] if result.unrecorded else []
    patches = {p.type: join_diffs(result.diffs[p.event_index]) for p in points}
    return RunPoints(**base, replay=result.verdict, points=points, missing=missing, patches=patches)
