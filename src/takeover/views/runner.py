"""Build the views of one handoff point from files and write them to a folder (used by ``takeover views``).

Output folder:

- ``<view>.md``: the full takeover prompt of each view that could be built (exactly ``ViewResult.prompt``).
- ``views.json``: per view ``file``, ``characters`` (of that file's text), ``bytes`` (its UTF-8 size),
  ``estimated_tokens`` (``token_estimator`` names the method), ``note_tokens`` (note-writing usage: prompt,
  completion and cached tokens, calls, seconds; ``null`` for deterministic views), ``validation``
  (``not_applicable``, ``valid``, ``repaired``, ``retried``, or, for a view that was not built,
  ``model_required``, ``rejected``, ``model_error``), ``attempts``, ``rejections``, ``sha256`` and ``key``.

A re-run reuses a view whose ``key`` (inputs: point, checkpoint patch, view, model, templates, budget)
and file hash match, so note-writing tokens are not spent twice; each write is atomic.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from takeover._io import atomic_write_json, atomic_write_text, sha256_text, stable_hash
from takeover.errors import InputError
from takeover.llm import ModelClient, ModelSettings, ModelUsage, estimator_name
from takeover.points import HandoffPoint
from takeover.tasks import SourceTask
from takeover.trajectories.events import Trajectory
from takeover.views.build import ModelRequired, build_view
from takeover.views.leak import LeakGuard
from takeover.views.notes import NotesFailed
from takeover.vocabulary import POINT_TYPES


class ViewInputs(BaseModel):
    """Everything a view needs for one handoff point, and where it came from.

    Attributes:
        point: the handoff point, or ``None`` when the run has no point of that type (``missing_reason``).
        checkpoint_patch: the cumulative diff at the point.
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


def _find_task(dataset: Path, instance_id: str | None) -> SourceTask | None:
    from takeover.tasks import load_tasks

    if instance_id is None:
        return None
    for task in load_tasks(dataset):
        if task.instance_id == instance_id:
            return task
    return None


def load_inputs(
    file: Path | str,
    point_type: str | None,
    dataset: Path | str,
    *,
    record: int | None = None,
    mirror: Path | str | None = None,
    points_file: Path | str | None = None,
    checkpoint_dir: Path | str | None = None,
    allow_network: bool = True,
) -> ViewInputs:
    """Read the trajectory, its task and the handoff point (from a checkpoint folder, ``points_file`` or
    detection, in that order).

    With ``checkpoint_dir`` (``checkpoint.json`` + ``checkpoint.patch``), the point, the patch and the
    handoff state come from there (the state only feeds the leak guard); ``point_type`` may be ``None``.

    A run whose ``instance_id`` is not in ``dataset`` (the format samples of other benchmarks) gets a
    stand-in task whose problem statement is the trajectory's own task prompt; ``notes`` says so.

    Raises:
        InputError: unknown point type, a file holding several runs without ``record``, a record index
            out of range, or a run not in ``dataset`` (and naming no repository) whose point must be
            detected (neither ``checkpoint_dir`` nor ``points_file``).
        takeover.errors.RepositoryUnavailable: detection needs a replay and the repository is missing.
    """
    from takeover.checkpoints import load_checkpoint
    from takeover.trajectories import read_trajectories

    checkpoint = None
    patch_text = ""
    if checkpoint_dir is not None:
        checkpoint, patch_text = load_checkpoint(Path(checkpoint_dir))
        if point_type is not None and point_type != checkpoint.point.type:
            raise InputError(Path(checkpoint_dir) / "checkpoint.json",
                             f"checkpoint is at a {checkpoint.point.type} point, not {point_type}", field="point.type")
        point_type = checkpoint.point.type
    if point_type not in POINT_TYPES:
        raise InputError(file, f"unknown point type {point_type!r}; expected one of {', '.join(POINT_TYPES)}",
                         field="--point")
    runs = read_trajectories(file)
    if record is None and len(runs) != 1:
        raise InputError(file, f"holds {len(runs)} runs; choose one with --record 0..{len(runs) - 1}")
    index = record or 0
    if not 0 <= index < len(runs):
        raise InputError(file, f"has no run {index} (it holds {len(runs)})", record=f"index {index}")
    trajectory = runs[index]
    notes: list[str] = []
    task = _find_task(Path(dataset), trajectory.instance_id)
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
        if trajectory.instance_id and trajectory.instance_id != checkpoint.instance_id:
            raise InputError(file, f"run is {trajectory.instance_id}, the checkpoint is for {checkpoint.instance_id}")
        return ViewInputs(trajectory=trajectory, task=task, point_type=point_type, point=checkpoint.point,
                          checkpoint_patch=patch_text, handoff_state=checkpoint.handoff_state, notes=notes)
    if points_file is not None:
        from takeover.points import RunPoints

        run_points = RunPoints.load(points_file)
    else:
        from takeover.points import analyze_run
        from takeover.repos import RepoSource

        if not (task.repo and task.base_commit):
            # Detection replays the run on the task's repository; a stand-in task has none to clone.
            raise InputError(
                file,
                f"the run's instance {trajectory.instance_id or '(none recorded)'!r} is not in {dataset}, so its "
                "repository and base commit are unknown and the point cannot be detected by replay; give "
                "--checkpoint DIR or --points-file FILE (takeover points --out) instead",
                field="instance_id",
            )
        run_points = analyze_run(trajectory, task, RepoSource(mirror, allow_network=allow_network))
    point = run_points.point(point_type)
    if point is None:
        reasons = [m.reason for m in run_points.missing if m.type == point_type]
        return ViewInputs(trajectory=trajectory, task=task, point_type=point_type, notes=notes,
                          missing_reason=reasons[0] if reasons else "not found")
    return ViewInputs(
        trajectory=trajectory, task=task, point_type=point_type, point=point,
        checkpoint_patch=run_points.patches.get(point_type, ""), notes=notes,
    )


def _templates_hash(template_dir: Path | str | None) -> str | None:
    if template_dir is None:
        return None
    files = sorted(p for p in Path(template_dir).glob("*") if p.is_file())
    return stable_hash({p.name: sha256_text(p.read_text(encoding="utf-8")) for p in files})


def write_views(
    inputs: ViewInputs,
    names: list[str],
    out: Path | str,
    *,
    model: ModelSettings | None = None,
    template_dir: Path | str | None = None,
    max_chars: int | None = None,
    max_tokens: int | None = None,
    handoff_state: str | None = None,
) -> dict[str, Any]:
    """Build ``names`` for ``inputs.point`` and write ``out/<view>.md`` and ``out/views.json``.

    Returns:
        the ``views.json`` content (see module docstring).
    """
    if inputs.point is None:
        raise ValueError(f"no {inputs.point_type} point: {inputs.missing_reason}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    index_path = out / "views.json"
    previous: dict[str, Any] = {}
    if index_path.exists():
        try:
            previous = json.loads(index_path.read_text(encoding="utf-8")).get("views", {})
        except (json.JSONDecodeError, AttributeError):
            previous = {}
    point, task, trajectory = inputs.point, inputs.task, inputs.trajectory
    handoff_state = handoff_state or inputs.handoff_state
    guard = LeakGuard(trajectory, point.event_index, task, inputs.checkpoint_patch, handoff_state=handoff_state)
    client = ModelClient(model) if model is not None else None
    templates = _templates_hash(template_dir)
    rows: dict[str, Any] = {}
    try:
        for name in names:
            key = stable_hash({
                "instance_id": task.instance_id, "point": point.model_dump(mode="json"),
                "patch": sha256_text(inputs.checkpoint_patch), "view": name,
                # the model's name, not its URL: the same model behind another port is the same writer
                "model": model.name if model is not None and name in ("summary_notes", "structured_notes") else None,
                "templates": templates, "max_chars": max_chars, "max_tokens": max_tokens,
            })
            old = previous.get(name) or {}
            path = out / f"{name}.md"
            if old.get("key") == key and old.get("file") and path.exists() and \
                    sha256_text(path.read_text(encoding="utf-8")) == old.get("sha256"):
                rows[name] = {**old, "reused": True}
                continue
            try:
                result = build_view(
                    name, trajectory, point, task, inputs.checkpoint_patch, model=client, template_dir=template_dir,
                    max_chars=max_chars, max_tokens=max_tokens, guard=guard,
                )
            except ModelRequired as exc:
                rows[name] = {"file": None, "validation": "model_required", "error": str(exc), "key": key}
                continue
            except NotesFailed as exc:
                rows[name] = {
                    "file": None, "validation": exc.outcome, "error": str(exc), "attempts": exc.attempts,
                    "rejections": exc.reasons, "note_tokens": exc.usage.model_dump(), "key": key,
                }
                continue
            atomic_write_text(path, result.prompt)
            rows[name] = {
                "file": path.name,
                "characters": result.characters,
                "bytes": result.bytes,
                "estimated_tokens": result.estimated_tokens,
                "note_tokens": result.note_usage.model_dump() if result.note_usage else None,
                "validation": result.validation,
                "attempts": result.attempts,
                "rejections": result.rejections,
                "dropped_events": result.dropped_events,
                "structured": result.structured,
                "summary_shape": result.summary_shape,
                "sha256": sha256_text(result.prompt),
                "key": key,
            }
    finally:
        if client is not None:
            client.close()
    views = {**{k: v for k, v in previous.items() if k not in rows}, **rows}
    total = ModelUsage()
    for row in views.values():
        if row.get("note_tokens"):
            total.merge(ModelUsage.model_validate(row["note_tokens"]))
    summary = {
        "instance_id": task.instance_id,
        "trajectory": trajectory.source_path,
        "trajectory_record": trajectory.record,
        "format": trajectory.format,
        "point": point.model_dump(mode="json"),
        "checkpoint_patch_sha256": sha256_text(inputs.checkpoint_patch),
        "note_model": model.public() if model is not None else None,
        "token_estimator": estimator_name(),
        "note_tokens_total": total.model_dump(),
        "notes": inputs.notes,
        "views": views,
    }
    atomic_write_json(index_path, summary)
    return summary
