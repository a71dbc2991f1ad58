"""Predecessor and takeover runs (docs/protocol.md sections 5, 7 and 8): the entry points.

:func:`run_predecessor` starts from ``base_commit`` with the task prompt, :func:`run_takeover` from a
checkpoint with a view's takeover prompt; both prepare the run folder (:mod:`takeover.agents.run_folder`)
and a workspace, then :func:`run_agent` prepares the run (``run.json``, the task's environment, the
starting state, the initial snapshot), hands it to the agent runtime the spec names
(:data:`takeover.agents.runtimes.RUNTIMES`, :class:`takeover.agents.runtime.AgentRuntime`) and finishes
the run folder (:mod:`takeover.trajectories.takeover_run`): the final snapshot, ``patch.diff``, the
snapshot refs.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from takeover._util.io import atomic_write_bytes, atomic_write_json, atomic_write_text
from takeover._util.redact import redact, redact_obj
from takeover._util.versions import package_versions
from takeover.agents.command_backend import WorkspaceRequest
from takeover.agents.command_backends import COMMAND_BACKENDS
from takeover.agents.isolation import probe_run, task_folders
from takeover.agents.recorder import SNAPSHOT_REF_PREFIX, RunRecorder, git
from takeover.agents.run_folder import RunSpec, inputs_key, prepare_run_folder, run_inputs
from takeover.agents.runtime import AgentChoice, AgentRun
from takeover.agents.runtimes import RUNTIMES, checked_choice
from takeover.checkpoints import checkpoint_workspace, load_checkpoint
from takeover.errors import EnvironmentFailure, EnvironmentUnavailable, InputError
from takeover.limits import RunLimits
from takeover.llm import ModelSettings
from takeover.repository_states import snapshots
from takeover.repository_states.starting_state import (
    StartingState,
)
from takeover.sources.repos import RepoSource, alternates  # noqa: F401 - one reader of alternates
from takeover.sources.tasks import SourceTask
from takeover.trajectories.takeover_run import RunRecord, TakeoverOrigin
from takeover.views import task_prompt


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def check_run(spec: RunSpec) -> RunSpec:
    """``spec`` with its agent choice checked (:func:`takeover.agents.runtimes.checked_choice`: the names
    registered, the runtime's options in its own form, its limits, protocol and command backend accepted).

    Raises:
        InputError: an unknown runtime or command backend, options or settings the runtime refuses.
    """
    return spec.model_copy(update={"agent": checked_choice(spec.agent, spec.limits)})


def _finish(record: RunRecord, workspace: Path, out_dir: Path, start: StartingState, trees: set[str]) -> None:
    """The final state: one more snapshot (background processes may have written since the last command),
    ``patch.diff`` against the starting state, and a ref for every snapshot tree of the run."""
    if not workspace.is_dir():
        return
    try:
        final = snapshots.take_snapshot(workspace)
        record.final_snapshot = final
        # Against the starting state: the environment's setup edits are not the agent's, and grading
        # makes them again (docs/protocol.md section 5.2).
        patch = snapshots.snapshot_patch(workspace, start.tree, final)
        atomic_write_bytes(out_dir / "patch.diff", snapshots.patch_bytes(redact(patch)))
        git(
            workspace,
            "update-ref",
            "--stdin",
            input="".join(f"update {SNAPSHOT_REF_PREFIX}{t} {t}\n" for t in sorted(trees | {final, start.tree})),
        )
    except Exception as exc:  # noqa: BLE001 - the agent destroyed its repository: say so, keep the rest
        record.exit_detail = (record.exit_detail or "") + redact(f" final snapshot failed: {exc}")[:500]


def _new_record(spec: RunSpec, out_dir: Path, workspace: Path) -> RunRecord:
    """The run's :class:`RunRecord` as it starts (nothing run yet), written to ``out_dir/run.json`` before
    anything can fail, so that a re-run recognizes (and redoes) an aborted attempt."""
    commands = COMMAND_BACKENDS.named(spec.agent.command_backend)
    inputs = run_inputs(spec)
    root = commands.root(workspace)
    path_note = None
    if root == str(workspace):
        path_note = (
            "no sandbox could mount the workspace at /testbed: the prompt names the host path of the "
            "workspace, so prompt characters and tokens depend on the output folder"
        )
    record = RunRecord(
        run_id=out_dir.name,
        kind=spec.kind,
        instance_id=spec.instance_id,
        repo=spec.repo,
        base_commit=spec.base_commit,
        agent=spec.agent.runtime,
        protocol=spec.agent.protocol,
        command_backend=spec.agent.command_backend,
        sandbox=commands.description(),
        workspace=str(workspace),
        command_root=root,
        path_note=path_note,
        inputs=inputs,
        inputs_key=inputs_key(inputs),
        model=spec.model.public(),
        limits=spec.limits,
        origin=spec.origin,
        versions=package_versions(),
        started_at=_now(),
    )
    atomic_write_json(out_dir / "run.json", redact_obj(record.model_dump(mode="json")))
    return record


def run_agent(
    spec: RunSpec, out_dir: Path, workspace: Path, *, setup_started: float | None = None
) -> RunRecord:
    """Run the agent runtime ``spec.agent.runtime`` on a prepared ``workspace`` as ``spec`` says and write the run
    folder ``out_dir``.

    ``workspace`` must be a git checkout (at ``base_commit``, plus a checkpoint patch for takeover runs)
    inside ``out_dir``. Once the task's environment is prepared in it, its starting state (``base_commit``
    plus the environment's setup edits, docs/protocol.md section 5.2) becomes ``HEAD``, and ``patch.diff``
    is the final state's diff against it (run.json's ``starting_state``). run.json records
    :func:`~takeover.agents.run_folder.run_inputs` of ``spec`` with its key. ``setup_started`` (a
    ``time.perf_counter()`` value, seconds) starts the setup clock (default: now). When the command
    backend sees the workspace at ``/testbed`` (docker, or bubblewrap mounting it there), the prompt is the
    same whatever the output folder; without a sandbox the prompt names the host path instead and run.json
    says so (``path_note``).

    Returns:
        The final :class:`RunRecord` (also in ``out_dir/run.json``).
    Raises:
        InputError: an unknown runtime or command backend, or settings the runtime cannot honour (before
            anything is written).
        EnvironmentUnavailable: the backend cannot start (no Docker daemon) or the task environment fails.
    """
    setup_started = time.perf_counter() if setup_started is None else setup_started
    spec = check_run(spec)
    runtime = RUNTIMES.named(spec.agent.runtime)
    commands = COMMAND_BACKENDS.named(spec.agent.command_backend)
    record = _new_record(spec, out_dir, workspace)
    commands.check()
    task_env, described, start = commands.prepare(spec.task, spec.base_commit, workspace, out_dir)
    record.environment = described
    record.starting_state, record.environment_files = start.tree, start.files
    if start.notes:
        record.environment["starting_state_notes"] = start.notes
    tmp_dir = out_dir / "tmp"
    tmp_dir.mkdir(exist_ok=True)
    recorder = RunRecorder(out_dir, record)
    recorder.write_record()
    atomic_write_text(out_dir / "prompt.md", redact(spec.prompt))
    (out_dir / "events.jsonl").touch()
    (out_dir / "calls.jsonl").touch()
    try:
        initial = recorder.take_snapshot()
    except EnvironmentFailure as exc:
        raise EnvironmentUnavailable(str(exc)) from None
    run = AgentRun(
        spec=spec, out_dir=out_dir, workspace=workspace, starting_state=start, commands=commands,
        command_root=record.command_root, task_env=task_env,
        readable=task_folders(workspace, described),
        tmp_dir=tmp_dir, recorder=recorder, setup_started=setup_started,
    )
    record.isolation = probe_run(run).model_dump(mode="json")  # in the agent's confinement, before it starts
    recorder.write_record()
    crashed: BaseException | None = None
    try:
        outcome = runtime.run(run)
    except BaseException as exc:  # noqa: BLE001 - a bug or an interrupt: keep what was recorded, then re-raise
        crashed = exc
    else:
        record.exit_status = outcome.exit_status
        if outcome.exit_detail:
            record.exit_detail = redact(outcome.exit_detail)[:2000]
        record.submission = redact(outcome.submission or "") or None
    run.start_clock()  # a runtime that failed before its agent started: the setup time is still known
    _finish(record, workspace, out_dir, start, {e.snapshot for e in recorder.events if e.snapshot} | {initial})
    shutil.rmtree(tmp_dir, ignore_errors=True)
    record.ended_at = _now()
    record.finished = crashed is None
    recorder.update_totals()
    recorder.write_record()
    if crashed is not None:
        raise crashed
    return record


def _start(
    spec: RunSpec, out_dir: Path, checkout: Callable[[Path], Path], patch: str, setup_started: float
) -> RunRecord:
    """The run of ``spec`` in ``out_dir``: the finished one found there, or a new one in the workspace its
    command backend makes in ``out_dir / "workspace"`` (:meth:`~takeover.agents.command_backend.CommandBackend.workspace`:
    ``checkout``, the mirror's checkout with ``patch`` applied, or the backend's own repository), once what
    a killed earlier attempt left running is removed.

    Raises:
        InputError: the runtime or the command backend is unknown, or refuses the settings (before the
            run folder or the workspace is touched).
    """
    spec = check_run(spec)
    commands = COMMAND_BACKENDS.named(spec.agent.command_backend)
    if out_dir.exists():  # before an unfinished attempt's folder is removed: its commands may still run
        commands.remove_stale(out_dir)
    done = prepare_run_folder(out_dir, run_inputs(spec))
    if done is not None:
        return done
    _new_record(spec, out_dir, out_dir / "workspace")  # an attempt that fails making the workspace is known too
    request = WorkspaceRequest(instance_id=spec.instance_id, base_commit=spec.base_commit, dest=out_dir / "workspace",
                               patch=patch, checkout=checkout)
    workspace = commands.workspace(request, commands.Options.model_validate(spec.agent.command_backend_options))
    return run_agent(spec, out_dir, workspace, setup_started=setup_started)


def run_predecessor(
    task: SourceTask,
    model: ModelSettings,
    out_dir: Path | str,
    *,
    limits: RunLimits | None = None,
    agent: AgentChoice | str | None = None,
    prompt: str | None = None,
    repo_source: RepoSource | None = None,
) -> RunRecord:
    """A predecessor run: a fresh workspace at ``task.base_commit`` and the original task prompt
    (docs/protocol.md section 8). A finished run already in ``out_dir`` is returned without re-running.

    Args:
        task: the source task.
        model: endpoint settings; ``model.public()`` goes into ``run.json``.
        out_dir: the run folder (created).
        limits: default :class:`RunLimits` (the paper's: 500 steps, 4 hours).
        agent: the :class:`~takeover.agent_choice.AgentChoice`, or a runtime's name alone (default:
            mini-swe-agent, commands sandboxed on this host, the text protocol); its runtime checks it
            before anything is written.
        prompt: override of the task prompt (default :func:`takeover.views.task_prompt`).
        repo_source: where repositories come from (default ``RepoSource()``: no mirror, GitHub).
    Raises:
        InputError: ``out_dir`` holds another run; an unknown runtime or command backend, or settings the
            runtime cannot honour (nothing is written).
        RepositoryUnavailable, EnvironmentUnavailable: the workspace or backend cannot be prepared.
    """
    setup_started = time.perf_counter()
    spec = RunSpec(
        kind="predecessor",
        instance_id=task.instance_id,
        repo=task.repo,
        base_commit=task.base_commit,
        prompt=task_prompt(task) if prompt is None else prompt,
        model=model,
        limits=limits or RunLimits(),
        agent=agent or AgentChoice(),
        task=task,
    )
    source = repo_source or RepoSource()
    return _start(
        spec,
        Path(out_dir).resolve(),
        lambda dest: source.workspace(task.repo, task.base_commit, dest),
        "",
        setup_started,
    )


def run_takeover(
    checkpoint_dir: Path | str,
    view: str,
    model: ModelSettings,
    out_dir: Path | str,
    *,
    task: SourceTask | None = None,
    prompt: str | None = None,
    limits: RunLimits | None = None,
    agent: AgentChoice | str | None = None,
    repo_source: RepoSource | None = None,
) -> RunRecord:
    """A takeover run: a fresh copy of the checkpoint workspace and the full takeover prompt of ``view``
    (docs/protocol.md sections 5, 7 and 8). A finished run already in ``out_dir`` is returned without
    re-running.

    Args:
        checkpoint_dir: folder with ``checkpoint.json``, ``checkpoint.patch`` and ``views/<view>.md``.
        view: ``repo_only``, ``raw_trace``, ``summary_notes`` or ``structured_notes``.
        task: the source task (for its execution environment); optional.
        prompt: the takeover prompt text; default: ``checkpoint_dir/views/<view>.md``.
        Other arguments as in :func:`run_predecessor`.
    Raises:
        InputError: the checkpoint is invalid, its patch does not apply, the view's prompt is missing,
            ``task`` is another task's, ``out_dir`` holds another run, or the runtime or command backend is
            unknown or refuses the settings.
        RepositoryUnavailable, EnvironmentUnavailable: the workspace or backend cannot be prepared.
    """
    setup_started = time.perf_counter()
    checkpoint_dir = Path(checkpoint_dir).resolve()
    checkpoint, checkpoint_patch = load_checkpoint(checkpoint_dir)
    if prompt is None:
        view_path = checkpoint_dir / "views" / f"{view}.md"
        if not view_path.is_file():
            raise InputError(
                view_path,
                f"no takeover prompt for view {view!r}; build it with `takeover views` or pass a prompt file",
            )
        prompt = view_path.read_text(encoding="utf-8")
    if task is not None and task.instance_id != checkpoint.instance_id:
        raise InputError(
            checkpoint_dir / "checkpoint.json",
            f"checkpoint is for {checkpoint.instance_id}, not {task.instance_id}",
            field="instance_id",
        )
    origin = TakeoverOrigin(
        checkpoint_dir=str(checkpoint_dir),
        instance_id=checkpoint.instance_id,
        point_type=checkpoint.point.type,
        event_index=checkpoint.point.event_index,
        view=view,
        patch_sha256=checkpoint.patch_sha256,
        method=checkpoint.method,
    )
    spec = RunSpec(
        kind="takeover",
        instance_id=checkpoint.instance_id,
        repo=checkpoint.repo,
        base_commit=checkpoint.base_commit,
        prompt=prompt,
        model=model,
        limits=limits or RunLimits(),
        agent=agent or AgentChoice(),
        origin=origin,
        task=task,
    )
    source = repo_source or RepoSource()
    return _start(
        spec,
        Path(out_dir).resolve(),
        lambda dest: checkpoint_workspace(checkpoint_dir, dest, repo_source=source),
        checkpoint_patch,
        setup_started,
    )
