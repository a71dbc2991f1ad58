"""The unit functions of each stage: ``fn(inputs, ctx) -> UnitOutcome`` (see :mod:`takeover.experiments.units`).

Each function reads its inputs (paths and small records planned by :mod:`takeover.experiments.runner`),
calls the stage's own API (tasks, trajectories, checkpoints, grading, views, agents), writes its
artifacts under ``ctx.work_dir`` and returns a *small* output record: the report reads only these.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from takeover._io import atomic_write_text, sha256_file, sha256_text
from takeover.errors import EnvironmentUnavailable
from takeover.experiments.units import UnitContext, UnitFailure, UnitOutcome
from takeover.tasks import SourceTask

# Exit statuses of agent runs that are failures of the infrastructure, not of the agent (docs/protocol.md
# section 9: kept in the denominator, reported apart).
INFRA_EXIT_STATUSES = {"model_error", "environment_error"}


# Files are read as bytes and decoded: read_text() would turn "\r\n" into "\n" and change patches and
# prompts (real trajectories and repositories contain carriage returns).


def _task(inputs: dict) -> SourceTask:
    return SourceTask.model_validate_json(Path(inputs["task"]).read_bytes().decode("utf-8"))


def _repo_source(ctx: UnitContext):
    from takeover.repos import RepoSource

    return RepoSource(ctx.context.get("mirror"), allow_network=ctx.context.get("allow_network", True))


def _read_trajectory(ref: dict):
    """The predecessor trajectory a ``predecessor`` unit points at (imported file record or our run)."""
    if ref.get("run_dir"):
        from takeover.trajectories.takeover_run import read_run

        return read_run(ref["run_dir"])
    from takeover.trajectories import read_trajectories

    trajs = read_trajectories(ref["file"])
    for t in trajs:
        if t.record == ref.get("record"):
            return t
    if len(trajs) == 1 and ref.get("record") is None:
        return trajs[0]
    raise UnitFailure(f"record {ref.get('record')!r} not found in {ref['file']} (file changed since planning?)")


def _fresh(folder: Path) -> Path:
    """Empty ``folder`` (a redo must not see a half-made artifact of an interrupted attempt)."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


# --- 2. predecessor --------------------------------------------------------------------------------


def import_predecessor(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """Import a recorded predecessor run: check the file is unchanged, read its record, summarize it."""
    ref = inputs["trajectory"]
    if sha256_file(ref["file"]) != ref["sha256"]:
        raise UnitFailure(f"{ref['file']} changed since it was indexed; run again to re-index")
    traj = _read_trajectory(ref)
    return UnitOutcome(
        output={
            "file": ref["file"],
            "record": ref.get("record"),
            "format": traj.format,
            "agent_events": traj.agent_events,
            "prompt_tokens": traj.prompt_tokens,
            "completion_tokens": traj.completion_tokens,
            "exit_status": traj.exit_status,
            "final_patch_files": traj.final_patch_files,
        }
    )


def _limits(inputs: dict):
    from takeover.limits import RunLimits

    lim = inputs["limits"]
    return RunLimits(step_limit=lim["step_limit"], wall_time_limit_seconds=lim["time_limit"],
                     command_timeout=lim["command_timeout"])


def _model(data: dict):
    from takeover.llm import ModelSettings

    return ModelSettings.model_validate(data)


def _run_output(record: Any, run_dir: Path) -> dict:
    acc = record.accounting
    patch = run_dir / "patch.diff"
    return {
        "run_dir": str(run_dir),
        "exit_status": str(record.exit_status) if record.exit_status is not None else None,
        "exit_detail": record.exit_detail,
        "agent_events": acc.agent_events,
        "llm_calls": acc.llm_calls,
        "prompt_tokens": acc.prompt_tokens,
        "completion_tokens": acc.completion_tokens,
        "cached_tokens": acc.cached_tokens,
        "reasoning_tokens": acc.reasoning_tokens,
        "usage": acc.usage,
        "estimated_calls": acc.estimated_calls,
        "initial_prompt_chars": acc.initial_prompt_chars,
        "initial_prompt_tokens": acc.initial_prompt_tokens,
        "wall_seconds": acc.wall_seconds,
        "model_seconds": acc.model_seconds,
        "command_seconds": acc.command_seconds,
        "patch_path": str(patch) if patch.exists() else None,
        "patch_sha256": sha256_file(patch) if patch.exists() else sha256_text(""),
        "workspace": record.workspace,
    }


def run_predecessor(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """Run the predecessor model on the task from ``base_commit`` (snapshots after every event)."""
    from takeover.agents import run_predecessor as agent_run

    run_dir = _fresh(Path(ctx.work_dir) / "run")
    record = agent_run(_task(inputs), _model(inputs["model"]), run_dir, limits=_limits(inputs),
                       protocol=inputs["limits"].get("protocol", "text"), repo_source=_repo_source(ctx))
    out = _run_output(record, run_dir)
    if out["exit_status"] in INFRA_EXIT_STATUSES:
        exc = UnitFailure(f"predecessor run ended with {out['exit_status']}: {out['exit_detail']}")
        exc.tokens = (out["prompt_tokens"], out["completion_tokens"])  # type: ignore[attr-defined]
        raise exc
    return UnitOutcome(output=out, prompt_tokens=out["prompt_tokens"], completion_tokens=out["completion_tokens"])


# --- 3-4. points and checkpoints -------------------------------------------------------------------


def detect_points(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """Handoff points of one predecessor run (docs/protocol.md sections 3-5); ``RunPoints`` saved as JSON."""
    from takeover.points import analyze_run

    task = _task(inputs)
    ref = inputs["trajectory"]
    traj = _read_trajectory(ref)
    snapshot_repo = ref.get("workspace") if ref.get("run_dir") else None
    options = {"timeout": inputs["replay_timeout"]} if inputs.get("replay_timeout") else {}
    rp = analyze_run(traj, task, _repo_source(ctx), snapshot_repo=snapshot_repo, work_dir=ctx.work_dir, **options)
    path = rp.save(Path(ctx.work_dir) / "points.json")
    return UnitOutcome(
        output={
            "run_points": str(path),
            "replay": rp.replay.model_dump(mode="json"),
            "points": [p.model_dump(mode="json") for p in rp.points],
            "missing": [m.model_dump(mode="json") for m in rp.missing],
            "patch_sha256": {k: sha256_text(v) for k, v in sorted(rp.patches.items())},
        }
    )


def make_checkpoint(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """Materialize one checkpoint folder (``checkpoint.json``, ``checkpoint.patch``, ``workspace/``)."""
    from takeover.checkpoints import materialize_checkpoint
    from takeover.points import HandoffPoint, RunPoints, checkpoint_method

    rp = RunPoints.load(inputs["run_points"])
    point = HandoffPoint.model_validate(inputs["point"])
    patch = rp.patches[point.type]
    folder = _fresh(Path(ctx.work_dir) / "checkpoint")
    traj = _read_trajectory(inputs["trajectory"])
    cp = materialize_checkpoint(_task(inputs), traj, point, patch, folder, checkpoint_method(rp.replay),
                                repo_source=_repo_source(ctx))
    return UnitOutcome(
        output={
            "checkpoint_dir": str(folder),
            "patch_sha256": cp.patch_sha256,
            "files": cp.files,
            "method": cp.method,
            "event_index": point.event_index,
            "trajectory": inputs["trajectory"],
        }
    )


# --- 5, 8. grading ---------------------------------------------------------------------------------


def _grade(task: SourceTask, patch: str, inputs: dict, ctx: UnitContext):
    try:
        from takeover.grading import grade
    except ImportError:
        raise EnvironmentUnavailable("grading (takeover.grading.grade) is not available in this installation") from None
    g = inputs["grading"]
    log_dir = _fresh(Path(ctx.work_dir) / "grading")
    result = grade(task, patch, backend=g["backend"], timeout=g["timeout"], repo_source=_repo_source(ctx),
                   log_dir=log_dir, network=bool(g.get("network", False)))
    if result.error:
        # Grading could not finish (environment build, test patch, repository): not the agent's doing.
        raise UnitFailure(f"grading failed: {result.error}", "infrastructure")
    return result


def _tests(result: Any, name: str) -> tuple[list[str], list[str]]:
    part = getattr(result, name, None)
    if part is None:
        return [], []
    if isinstance(part, dict):
        return list(part.get("success", [])), list(part.get("failure", []))
    return list(getattr(part, "success", [])), list(getattr(part, "failure", []))


def _rate(success: list[str], failure: list[str]) -> float | None:
    return len(success) / (len(success) + len(failure)) if success or failure else None


def grade_checkpoint(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """Handoff state of a checkpoint (docs/protocol.md section 6); never shown to the successor."""
    patch = (Path(inputs["checkpoint_dir"]) / "checkpoint.patch").read_bytes().decode("utf-8")
    result = _grade(_task(inputs), patch, inputs, ctx)
    f2p, p2p = _tests(result, "FAIL_TO_PASS"), _tests(result, "PASS_TO_PASS")
    return UnitOutcome(output={"handoff_state": result.handoff_state, "resolved": bool(result.resolved),
                               "fail_to_pass_rate": _rate(*f2p), "pass_to_pass_rate": _rate(*p2p),
                               "network": bool(getattr(result, "network", False)),
                               "warnings": list(getattr(result, "warnings", []))})


def grade_takeover(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """Official grading of a takeover run's final patch (docs/protocol.md section 8)."""
    patch = Path(inputs["patch_path"]).read_bytes().decode("utf-8") if inputs.get("patch_path") else ""
    result = _grade(_task(inputs), patch, inputs, ctx)
    f2p, p2p = _tests(result, "FAIL_TO_PASS"), _tests(result, "PASS_TO_PASS")
    return UnitOutcome(output={"resolved": bool(result.resolved), "handoff_state": result.handoff_state,
                               "fail_to_pass_rate": _rate(*f2p), "pass_to_pass_rate": _rate(*p2p),
                               "network": bool(getattr(result, "network", False)),
                               "warnings": list(getattr(result, "warnings", []))})


# --- 6. views --------------------------------------------------------------------------------------


def build_view(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """One view of one checkpoint: ``checkpoint/views/<view>.md`` (docs/protocol.md section 7).

    Notes views call the note model; their tokens are this unit's tokens, reported apart from the
    successors' (section 9). Notes the writer could not produce acceptably fail the unit as ``agent``;
    an endpoint failure fails it as ``infrastructure``.
    """
    from takeover.checkpoints import Checkpoint
    from takeover.views import build_view as make_view
    from takeover.views.notes import NotesFailed

    cp_dir = Path(inputs["checkpoint_dir"])
    checkpoint = Checkpoint.model_validate_json((cp_dir / "checkpoint.json").read_bytes().decode("utf-8"))
    patch = (cp_dir / "checkpoint.patch").read_bytes().decode("utf-8")
    traj = _read_trajectory(inputs["trajectory"])
    model = _model(inputs["notes_model"]) if inputs.get("notes_model") else None
    try:
        extra = {"note_max_tokens": inputs["notes_max_tokens"]} if inputs.get("notes_max_tokens") else {}
        result = make_view(inputs["view"], traj, checkpoint.point, _task(inputs), patch, model=model, **extra)
    except NotesFailed as exc:
        failure = UnitFailure(str(exc), "infrastructure" if exc.outcome == "model_error" else "agent")
        failure.tokens = (exc.usage.prompt_tokens, exc.usage.completion_tokens)  # type: ignore[attr-defined]
        raise failure from None
    path = atomic_write_text(cp_dir / "views" / f"{inputs['view']}.md", result.prompt)
    usage = result.note_usage
    return UnitOutcome(
        output={"path": str(path), "sha256": sha256_text(result.prompt), "characters": result.characters,
                "estimated_tokens": result.estimated_tokens, "validation": result.validation,
                "attempts": result.attempts, "dropped_events": result.dropped_events,
                **({"cached_tokens": usage.cached_tokens, "reasoning_tokens": usage.reasoning_tokens,
                    "estimated_calls": usage.estimated_calls} if usage else {})},
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
    )


# --- 7. takeover runs ------------------------------------------------------------------------------


def _preserved(checkpoint_patch: str, final_patch: str) -> bool:
    """Whether the final diff still contains the checkpoint diff: every line the checkpoint added or
    removed is added or removed the same way in the final diff (per file)."""
    from takeover.patches import split_patch

    final = split_patch(final_patch)

    def changed(text: str) -> tuple[set[str], set[str]]:
        add, rem = set(), set()
        for line in text.splitlines():
            if line.startswith("+") and not line.startswith("+++"):
                add.add(line[1:])
            elif line.startswith("-") and not line.startswith("---"):
                rem.add(line[1:])
        return add, rem

    for path, text in split_patch(checkpoint_patch).items():
        if path not in final:
            return False
        a, r = changed(text)
        fa, fr = changed(final[path])
        if not (a <= fa and r <= fr):
            return False
    return True


def _only_source(final_patch: str) -> bool:
    from takeover.classify import file_class
    from takeover.patches import patch_files

    return all(file_class(p) == "source" for p in patch_files(final_patch))


def run_takeover(inputs: dict, ctx: UnitContext) -> UnitOutcome:
    """One successor run from a fresh copy of the checkpoint under one view (docs/protocol.md section 8)."""
    from takeover.agents import run_takeover as agent_run

    run_dir = _fresh(Path(ctx.work_dir) / "run")
    prompt = Path(inputs["view_path"]).read_bytes().decode("utf-8")
    if sha256_text(prompt) != inputs["view_sha256"]:
        raise UnitFailure(f"{inputs['view_path']} changed after its view unit wrote it; run again")
    record = agent_run(inputs["checkpoint_dir"], inputs["view"], _model(inputs["model"]), run_dir,
                       task=_task(inputs), prompt=prompt, limits=_limits(inputs),
                       protocol=inputs["limits"].get("protocol", "text"), repo_source=_repo_source(ctx))
    out = _run_output(record, run_dir)
    final = Path(out["patch_path"]).read_bytes().decode("utf-8") if out["patch_path"] else ""
    cp_patch = (Path(inputs["checkpoint_dir"]) / "checkpoint.patch").read_bytes().decode("utf-8")
    out["checkpoint_diff_preserved"] = _preserved(cp_patch, final)
    out["only_source_files_changed"] = _only_source(final)
    out.pop("workspace", None)
    if out["exit_status"] in INFRA_EXIT_STATUSES:
        exc = UnitFailure(f"takeover run ended with {out['exit_status']}: {out['exit_detail']}")
        exc.tokens = (out["prompt_tokens"], out["completion_tokens"])  # type: ignore[attr-defined]
        raise exc
    return UnitOutcome(output=out, prompt_tokens=out["prompt_tokens"], completion_tokens=out["completion_tokens"])

