"""The unit functions of each stage: ``<stage>_unit(inputs, ctx) -> UnitOutcome`` (see :mod:`.units`).

Each function validates its inputs (the stage's record in :mod:`takeover.results`, planned by
:mod:`takeover.experiments.planning`), calls the stage's own API (environments, trajectories, checkpoints,
grading, views, agents), writes its artifacts under ``ctx.work_dir`` and returns the stage's small output
record: the report reads only these. A unit fails on purpose with :class:`UnitFailure` (reason, kind and
the tokens spent); any other exception is recorded as an infrastructure failure by the engine.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from takeover._util.io import atomic_write_text, sha256_file, sha256_text
from takeover.agents.runs import run_predecessor, run_takeover
from takeover.checkpoints import Checkpoint, materialize_checkpoint
from takeover.environments import prepare_environment
from takeover.experiments.units import UnitContext, UnitFailure, UnitOutcome
from takeover.grading import GradeResult, grade, grade_checkpoint
from takeover.grading_settings import GradingSettings
from takeover.points import HandoffPoint, RunPoints, analyze_run, checkpoint_method
from takeover.repository_states.snapshots import SnapshotError, top_level_names
from takeover.results import (
    AgentRunOutput,
    CheckpointInputs,
    CheckpointOutput,
    EnvironmentInputs,
    EnvironmentOutput,
    GradeInputs,
    GradeOutput,
    HandoffStateInputs,
    HandoffStateOutput,
    ImportInputs,
    ImportOutput,
    PointsInputs,
    PointsOutput,
    PredecessorOutput,
    PredecessorRunInputs,
    PredecessorRunOutput,
    TakeoverInputs,
    TakeoverRunOutput,
    ViewOutput,
    ViewUnitInputs,
    checkpoint_diff_preserved,
    only_source_files_changed,
    pass_rate,
)
from takeover.sources.tasks import SourceTask
from takeover.trajectories import read_trajectories
from takeover.trajectories.events import Trajectory
from takeover.trajectories.takeover_run import RunRecord, read_run
from takeover.views import build_view, view_of
from takeover.views.notes import NotesFailed
from takeover.vocabulary import INFRA_EXIT_STATUSES

# Files are read as bytes and decoded: read_text() would turn "\r\n" into "\n" and change patches and
# prompts (real trajectories and repositories contain carriage returns).


def _read(path: Path | str) -> str:
    return Path(path).read_bytes().decode("utf-8")


def _task(path: str) -> SourceTask:
    return SourceTask.model_validate_json(_read(path))


def _read_record(file: str, record: str | None) -> Trajectory:
    """The run ``record`` of a trajectory file (``None``: the file's only run)."""
    trajs = read_trajectories(file)
    for t in trajs:
        if t.record == record:
            return t
    if len(trajs) == 1 and record is None:
        return trajs[0]
    raise UnitFailure(f"record {record!r} not found in {file} (file changed since planning?)")


def _read_trajectory(ref: PredecessorOutput) -> Trajectory:
    """The predecessor run a ``predecessor`` unit's output points at (our run folder, or a file record)."""
    if isinstance(ref, PredecessorRunOutput):
        return read_run(ref.run_dir)
    return _read_record(ref.file, ref.record)


def _fresh(folder: Path) -> Path:
    """Empty ``folder`` (a redo must not see a half-made artifact of an interrupted attempt)."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


# --- environment -----------------------------------------------------------------------------------


def environment_unit(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """Build (or reuse) the task's local test environment, installing a scratch checkout of its
    ``base_commit`` into it; the checkout is removed afterwards. Later stages reuse the cached environment.

    Raises:
        EnvironmentUnavailable: no interpreter of the needed version, a failed install (see
            :func:`takeover.environments.prepare_environment`).
        RepositoryUnavailable: the repository or commit cannot be obtained.
    """
    args = EnvironmentInputs.model_validate(inputs)
    task = _task(args.task)
    with tempfile.TemporaryDirectory(prefix="takeover-env-", dir=ctx.work_dir) as tmp:
        workspace = ctx.repo_source.workspace(task.repo, task.base_commit, Path(tmp) / "workspace")
        env = prepare_environment(task, workspace)
    return UnitOutcome(output=EnvironmentOutput(
        repo=task.repo, version=task.version, interpreter_version=env.interpreter_version, cached=env.cached,
        build_seconds=env.build_seconds, setup_seconds=env.setup_seconds))


# --- predecessor -----------------------------------------------------------------------------------


def import_unit(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """Import a recorded predecessor run: check the file is unchanged, read its record, summarize it."""
    ref = ImportInputs.model_validate(inputs).trajectory
    if sha256_file(ref.file) != ref.sha256:
        raise UnitFailure(f"{ref.file} changed since it was indexed; run again to re-index")
    traj = _read_record(ref.file, ref.record)
    return UnitOutcome(output=ImportOutput(
        file=ref.file, record=ref.record, format=traj.format, agent_events=traj.agent_events,
        prompt_tokens=traj.prompt_tokens, completion_tokens=traj.completion_tokens,
        exit_status=traj.exit_status, final_patch_files=traj.final_patch_files))


def _run_output(record: RunRecord, run_dir: Path) -> dict:
    """The fields every agent run output shares (:class:`~takeover.results.AgentRunOutput`)."""
    acc = record.accounting
    patch = run_dir / "patch.diff"
    return AgentRunOutput(
        run_dir=str(run_dir), exit_status=record.exit_status, exit_detail=record.exit_detail,
        agent_events=acc.agent_events, llm_calls=acc.llm_calls,
        prompt_tokens=acc.prompt_tokens if acc.usage != "unavailable" else None,
        completion_tokens=acc.completion_tokens if acc.usage != "unavailable" else None,
        cached_tokens=acc.cached_tokens,
        reasoning_tokens=acc.reasoning_tokens, usage=acc.usage, estimated_calls=acc.estimated_calls,
        initial_prompt_chars=acc.initial_prompt_chars, initial_prompt_tokens=acc.initial_prompt_tokens,
        wall_seconds=acc.wall_seconds, model_seconds=acc.model_seconds, command_seconds=acc.command_seconds,
        patch_path=str(patch) if patch.exists() else None,
        patch_sha256=sha256_file(patch) if patch.exists() else sha256_text(""),
    ).model_dump()


def _fail_on_infrastructure(kind: str, out: AgentRunOutput) -> None:
    """A run that ended on a model or environment failure is an infrastructure failure of its unit."""
    if out.exit_status in INFRA_EXIT_STATUSES:
        raise UnitFailure(f"{kind} run ended with {out.exit_status}: {out.exit_detail}",
                          prompt_tokens=out.prompt_tokens or 0, completion_tokens=out.completion_tokens or 0)


def predecessor_run_unit(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """Run the predecessor model on the task from ``base_commit`` (snapshots after every event)."""
    args = PredecessorRunInputs.model_validate(inputs)
    run_dir = _fresh(Path(ctx.work_dir) / "run")
    record = run_predecessor(_task(args.task), args.model, run_dir, limits=args.limits, agent=args.agent,
                             repo_source=ctx.repo_source)
    out = PredecessorRunOutput(**_run_output(record, run_dir), workspace=record.workspace)
    _fail_on_infrastructure("predecessor", out)
    return UnitOutcome(output=out, prompt_tokens=out.prompt_tokens or 0, completion_tokens=out.completion_tokens or 0)


# --- points and checkpoints ------------------------------------------------------------------------


def points_unit(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """Handoff points of one predecessor run (docs/protocol.md sections 3-5); ``RunPoints`` saved as JSON."""
    args = PointsInputs.model_validate(inputs)
    ref = args.trajectory
    if ref is None:
        raise UnitFailure("no predecessor run to analyse (its unit failed)")
    traj = _read_trajectory(ref)
    snapshot_repo = ref.workspace if isinstance(ref, PredecessorRunOutput) else None
    rp = analyze_run(traj, _task(args.task), ctx.repo_source, snapshot_repo=snapshot_repo, work_dir=ctx.work_dir,
                     replay=args.replay)
    path = rp.save(Path(ctx.work_dir) / "points.json")
    return UnitOutcome(output=PointsOutput(
        run_points=str(path),
        replay=rp.replay.model_dump(mode="json"),
        points=[p.model_dump(mode="json") for p in rp.points],
        missing=[m.model_dump(mode="json") for m in rp.missing],
        patch_sha256={k: sha256_text(v) for k, v in sorted(rp.patches.items())},
    ))


def checkpoint_unit(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """Materialize one checkpoint folder (``checkpoint.json``, ``checkpoint.patch``, ``workspace/``)."""
    args = CheckpointInputs.model_validate(inputs)
    rp = RunPoints.load(args.run_points)
    point = HandoffPoint.model_validate(args.point.model_dump(mode="json"))
    patch = rp.patches[point.type]
    folder = _fresh(Path(ctx.work_dir) / "checkpoint")
    traj = _read_trajectory(args.trajectory)
    cp = materialize_checkpoint(_task(args.task), traj, point, patch, folder, checkpoint_method(rp.replay),
                                repo_source=ctx.repo_source, environment_files=rp.replay.environment_files)
    return UnitOutcome(output=CheckpointOutput(
        checkpoint_dir=str(folder), patch_sha256=cp.patch_sha256, files=cp.files, method=cp.method,
        event_index=point.event_index, trajectory=args.trajectory))


# --- grading: handoff state and takeover runs ------------------------------------------------------


def _grade(task: SourceTask, patch: str, grading: GradingSettings, ctx: UnitContext, *,
           checkpoint: bool = False) -> GradeResult:
    log_dir = _fresh(Path(ctx.work_dir) / "grading")
    # A checkpoint is graded beside the reference patch (docs/protocol.md section 6: set-aside tests).
    grader = grade_checkpoint if checkpoint else grade
    result = grader(task, patch, grading, repo_source=ctx.repo_source, log_dir=log_dir)
    if result.error:
        # Grading could not finish (environment build, test patch, repository): not the agent's doing.
        raise UnitFailure(f"grading failed: {result.error}", "infrastructure")
    return result


def handoff_state_unit(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """Handoff state of a checkpoint (docs/protocol.md section 6); never shown to the successor."""
    args = HandoffStateInputs.model_validate(inputs)
    patch = _read(Path(args.checkpoint_dir) / "checkpoint.patch")
    r = _grade(_task(args.task), patch, args.grading, ctx, checkpoint=True)
    return UnitOutcome(output=HandoffStateOutput(
        handoff_state=r.handoff_state, resolved=r.resolved,
        fail_to_pass_rate=pass_rate(r.FAIL_TO_PASS.success, r.FAIL_TO_PASS.failure),
        pass_to_pass_rate=pass_rate(r.PASS_TO_PASS.success, r.PASS_TO_PASS.failure),
        network=r.network, warnings=r.warnings + ([r.reference_note] if r.reference_note else []),
        set_aside=r.set_aside, grading_rules=r.grading_rules))


def grade_unit(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """Official grading of a takeover run's final patch (docs/protocol.md section 8)."""
    args = GradeInputs.model_validate(inputs)
    patch = _read(args.patch_path) if args.patch_path else ""
    r = _grade(_task(args.task), patch, args.grading, ctx)
    return UnitOutcome(output=GradeOutput(
        resolved=r.resolved, handoff_state=r.handoff_state,
        fail_to_pass_rate=pass_rate(r.FAIL_TO_PASS.success, r.FAIL_TO_PASS.failure),
        pass_to_pass_rate=pass_rate(r.PASS_TO_PASS.success, r.PASS_TO_PASS.failure),
        network=r.network, warnings=r.warnings, grading_rules=r.grading_rules,
        flaky=r.flaky.describe() if r.flaky else None))


# --- views -----------------------------------------------------------------------------------------


def view_unit(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """One view of one checkpoint: ``checkpoint/views/<view>.md`` (docs/protocol.md section 7).

    Notes views call the note model; their tokens are this unit's tokens, reported apart from the
    successors' (section 9). Notes the writer could not produce acceptably fail the unit as ``agent``;
    an endpoint failure fails it as ``infrastructure``.
    """
    args = ViewUnitInputs.model_validate(inputs)
    cp_dir = Path(args.checkpoint_dir)
    checkpoint = Checkpoint.model_validate_json(_read(cp_dir / "checkpoint.json"))
    patch = _read(cp_dir / "checkpoint.patch")
    traj = _read_trajectory(args.trajectory)
    try:
        result = build_view(view_of(args.view, args.view_file), traj, checkpoint.point, _task(args.task), patch,
                            model=args.notes_model, view_options=args.view_options)
    except NotesFailed as exc:
        raise UnitFailure(str(exc), "infrastructure" if exc.outcome == "model_error" else "agent",
                          prompt_tokens=exc.usage.prompt_tokens,
                          completion_tokens=exc.usage.completion_tokens) from None
    path = atomic_write_text(cp_dir / "views" / f"{args.view}.md", result.prompt)
    usage = result.note_usage
    return UnitOutcome(
        output=ViewOutput(path=str(path), sha256=sha256_text(result.prompt), characters=result.characters,
                          estimated_tokens=result.estimated_tokens, validation=result.validation,
                          attempts=result.attempts, dropped_events=result.dropped_events,
                          structured=result.structured,
                          **({"cached_tokens": usage.cached_tokens, "reasoning_tokens": usage.reasoning_tokens,
                              "estimated_calls": usage.estimated_calls} if usage else {})),
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
    )


# --- takeover runs ---------------------------------------------------------------------------------


def _base_top_level(record: RunRecord) -> list[str] | None:
    """The top-level names of ``base_commit`` in a run's workspace, ``None`` when it is unreadable."""
    try:
        return top_level_names(record.workspace, record.base_commit)
    except SnapshotError:
        return None


def takeover_unit(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """One successor run from a fresh copy of the checkpoint under one view (docs/protocol.md section 8)."""
    args = TakeoverInputs.model_validate(inputs)
    run_dir = _fresh(Path(ctx.work_dir) / "run")
    prompt = _read(args.view_path)
    if sha256_text(prompt) != args.view_sha256:
        raise UnitFailure(f"{args.view_path} changed after its view unit wrote it; run again")
    record = run_takeover(args.checkpoint_dir, args.view, args.model, run_dir, task=_task(args.task), prompt=prompt,
                          limits=args.limits, agent=args.agent, repo_source=ctx.repo_source)
    shared = _run_output(record, run_dir)
    final = _read(shared["patch_path"]) if shared["patch_path"] else ""
    out = TakeoverRunOutput(
        **shared,
        checkpoint_diff_preserved=checkpoint_diff_preserved(_read(Path(args.checkpoint_dir) / "checkpoint.patch"),
                                                            final),
        only_source_files_changed=only_source_files_changed(final, _base_top_level(record)),
    )
    _fail_on_infrastructure("takeover", out)
    return UnitOutcome(output=out, prompt_tokens=out.prompt_tokens or 0, completion_tokens=out.completion_tokens or 0)
