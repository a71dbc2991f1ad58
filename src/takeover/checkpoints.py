"""Checkpoint materialization (docs/protocol.md section 5).

A checkpoint folder holds ``checkpoint.json`` (:class:`Checkpoint`), ``checkpoint.patch`` (the
predecessor's cumulative diff against ``base_commit`` after the handoff event) and, once views are
built, ``views/<view>.md`` with each view's full takeover prompt. Materialization is implemented in
issue 4; the record is shared.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from takeover._io import atomic_write_bytes, atomic_write_json, atomic_write_text, sha256_bytes
from takeover.errors import EnvironmentUnavailable, InputError
from takeover.patches import first_difference, split_patch
from takeover.points import POINT_TYPES, HandoffPoint, MissingPoint, cumulative_patch, detect_points
from takeover.replay import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, ReplayResult, ReplayVerdict, replay_trajectory
from takeover.repos import RepoSource
from takeover.snapshots import patch_bytes, patch_sha256, snapshot_diff, snapshot_patch, take_snapshot
from takeover.tasks import SourceTask
from takeover.trajectories.events import Event, Trajectory

CheckpointMethod = Literal["recorded_snapshot", "stored_diff", "verified_replay"]
HandoffState = Literal["invalid", "resolved_preserve", "needs_completion", "broke_existing"]


class Checkpoint(BaseModel):
    """The frozen repository state at a handoff point.

    Attributes:
        instance_id, repo, base_commit: the source task.
        point: the handoff point (type, event index, files, verification context).
        files: paths changed by ``checkpoint.patch``.
        patch_sha256: sha256 of ``checkpoint.patch`` bytes.
        method: how the diff was obtained, best first: ``recorded_snapshot`` (our runner),
            ``stored_diff`` (per-step diffs in the trajectory), ``verified_replay``.
        trajectory: path of the predecessor trajectory file and the record in it.
        handoff_state: official grading label (section 6), when graded; never shown to the successor.
        workspace: folder of the materialized workspace (``base_commit`` + the patch), when made.
    """

    instance_id: str
    repo: str
    base_commit: str
    point: HandoffPoint
    files: list[str] = Field(default_factory=list)
    patch_sha256: str
    method: CheckpointMethod
    trajectory: str | None = None
    trajectory_record: str | None = None
    handoff_state: HandoffState | None = None
    workspace: str | None = None


# --- materialization and run analysis (issue 4) ------------------------------------------------------


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
        patches: ``{point type: cumulative patch at the point}`` (the future ``checkpoint.patch``).
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

    def point(self, point_type: str) -> HandoffPoint | None:
        """The point of type ``point_type``, or ``None`` when it is missing."""
        return next((p for p in self.points if p.type == point_type), None)

    def save(self, path: Path | str) -> Path:
        """Write this record as JSON, atomically."""
        return atomic_write_text(path, self.model_dump_json(indent=2) + "\n")

    @classmethod
    def load(cls, path: Path | str) -> RunPoints:
        """Read a record written by :meth:`save` (raises :class:`InputError` on a bad file)."""
        try:
            return cls.model_validate_json(Path(path).read_text(encoding="utf-8"))
        except ValueError as exc:
            raise InputError(path, f"not a RunPoints record: {str(exc).splitlines()[0]}") from None


def _forward_fill(events: Sequence[Event], value) -> list:
    out, current = [], None
    for ev in events:
        v = value(ev)
        if v is not None:
            current = v
        out.append(current)
    return out


def stored_diffs(trajectory: Trajectory) -> list[dict[str, str]] | None:
    """Per-event diffs from ``Event.state_diff`` (docs/protocol.md section 5 source (b)), or ``None`` when the
    trajectory stores none. An event without a stored diff has the state of the previous event."""
    if not any(ev.state_diff is not None for ev in trajectory.events):
        return None
    return [split_patch(d) if d else {} for d in _forward_fill(trajectory.events, lambda e: e.state_diff)]


def load_checkpoint(checkpoint_dir: Path | str) -> tuple[Checkpoint, str]:
    """``(Checkpoint, patch text)`` of a checkpoint folder, the patch checked against ``patch_sha256``.

    Raises:
        InputError: a file is missing, invalid, or the patch does not match its recorded hash.
    """
    checkpoint_dir = Path(checkpoint_dir)
    cp_path, patch_path = checkpoint_dir / "checkpoint.json", checkpoint_dir / "checkpoint.patch"
    for p in (cp_path, patch_path):
        if not p.is_file():
            raise InputError(p, "missing: a checkpoint folder holds checkpoint.json and checkpoint.patch")
    try:
        checkpoint = Checkpoint.model_validate_json(cp_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(cp_path, f"not a checkpoint record ({str(exc).splitlines()[0]})") from None
    data = patch_path.read_bytes()
    if sha256_bytes(data) != checkpoint.patch_sha256:
        raise InputError(patch_path, "sha256 differs from checkpoint.json", field="patch_sha256")
    return checkpoint, data.decode("utf-8", "surrogateescape")


def recorded_diffs(trajectory: Trajectory, snapshot_repo: Path | str, base_commit: str) -> list[dict[str, str]] | None:
    """Per-event diffs from ``Event.snapshot`` tree ids (section 5 source (a)) read from ``snapshot_repo``
    (the repository where our runner kept the run's git objects), or ``None`` when no event has one."""
    if not any(ev.snapshot for ev in trajectory.events):
        return None
    cache: dict[str | None, dict[str, str]] = {None: {}}
    out = []
    for tree in _forward_fill(trajectory.events, lambda e: e.snapshot):
        if tree not in cache:
            cache[tree] = snapshot_diff(snapshot_repo, base_commit, tree)
        out.append(cache[tree])
    return out


def _unqualified(verdict: ReplayVerdict) -> list[MissingPoint]:
    why = verdict.reason or "the run's states are not exact"
    return [MissingPoint(type=t, reason=f"run is unreplayable: {why}") for t in POINT_TYPES]


def _environment_vars(task: SourceTask, workspace: Path) -> tuple[dict[str, str] | None, str | None]:
    """The task environment's variables (issue 3) when that stage is available, else ``(None, note)``."""
    try:
        from takeover.environments import prepare_environment  # type: ignore[attr-defined]
    except ImportError:
        return None, None
    try:
        prepared = prepare_environment(task, workspace)
        # Only the variables the environment sets: the rest of this process's environment (API keys
        # included) is not passed to replayed commands.
        env = prepared.env_vars(base={"PATH": os.environ.get("PATH", os.defpath)})
        return dict(env), f"task environment for {task.repo} {task.version}"
    except Exception as exc:  # noqa: BLE001 - any failure falls back to the plain interpreter, and says so
        return None, f"plain interpreter on PATH (task environment unavailable: {str(exc).splitlines()[0][:160]})"


def analyze_run(
    trajectory: Trajectory,
    task: SourceTask,
    repo_source: RepoSource | None = None,
    *,
    snapshot_repo: Path | str | None = None,
    work_dir: Path | str | None = None,
    use_environment: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    memory_mb: int = DEFAULT_MEMORY_MB,
    use_sandbox: bool = True,
    result_out: list | None = None,
) -> RunPoints:
    """Per-event states, verdict and handoff points of one predecessor run (docs/protocol.md sections 3-5).

    States come from the best source available: recorded snapshots (``snapshot_repo``, by default the
    workspace our runner names in ``trajectory.metadata["snapshot_repo"]``), stored
    per-step diffs, or a replay in a fresh workspace of ``task`` from ``repo_source`` (under ``work_dir``,
    a temporary folder by default, removed afterwards). A replay is accepted only when it reproduces the
    run's final patch; otherwise every point is reported missing with the reason.

    Args:
        use_environment: replay inside the task's environment (issue 3) when it can be prepared.
        timeout, memory_mb: per-command limits for replay (seconds, MiB).
        result_out: when a list is given, the :class:`ReplayResult` (per-event trees and diffs) is appended.

    Raises:
        RepositoryUnavailable: the repository or ``base_commit`` cannot be obtained (replay only).
    """
    base = {
        "instance_id": task.instance_id, "repo": task.repo, "base_commit": task.base_commit,
        "trajectory": trajectory.source_path, "trajectory_record": trajectory.record, "format": trajectory.format,
        "events": len(trajectory.events),
    }
    if snapshot_repo is None:
        # Our own runs name the workspace that keeps their snapshot trees; use it without being told.
        recorded = trajectory.metadata.get("snapshot_repo")
        if recorded and Path(recorded).is_dir():
            snapshot_repo = recorded
    diffs = recorded_diffs(trajectory, snapshot_repo, task.base_commit) if snapshot_repo else None
    if diffs is not None:
        verdict = ReplayVerdict(verified=True, method="recorded_snapshot")
    else:
        diffs = stored_diffs(trajectory)
        if diffs is not None:
            verdict = ReplayVerdict(verified=True, method="stored_diff")
    if diffs is not None:
        if trajectory.final_patch is not None:
            # Informational: a stored source is exact by construction (docs/protocol.md section 5).
            verdict.first_mismatch = first_difference(cumulative_patch(diffs[-1]) if diffs else "", trajectory.final_patch)
        result = ReplayResult(diffs=diffs, verdict=verdict)
    else:
        repo_source = repo_source or RepoSource()
        with tempfile.TemporaryDirectory(prefix="takeover-points-", dir=work_dir) as tmp:
            ws = repo_source.workspace(task.repo, task.base_commit, Path(tmp) / "workspace")
            env_vars, note = _environment_vars(task, ws) if use_environment else (None, None)
            result = replay_trajectory(
                trajectory, ws, task.base_commit, env_vars=env_vars, interpreter_note=note,
                timeout=timeout, memory_mb=memory_mb, use_sandbox=use_sandbox,
            )
    if result_out is not None:
        result_out.append(result)
    if not result.verdict.verified:
        return RunPoints(**base, replay=result.verdict, missing=_unqualified(result.verdict))
    points, missing = detect_points(trajectory.events, result.diffs)
    patches = {p.type: cumulative_patch(result.diffs[p.event_index]) for p in points}
    return RunPoints(**base, replay=result.verdict, points=points, missing=missing, patches=patches)


def _git(args: list[str], cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=False)


def apply_patch(workspace: Path | str, patch: str) -> None:
    """``git apply`` ``patch`` (binary hunks included) onto the working tree of ``workspace``.

    Raises:
        InputError: the patch does not apply (git's message).
    """
    if not patch.strip():
        return
    proc = _git(["apply", "--binary", "--whitespace=nowarn", "-"], Path(workspace), patch_bytes(patch))
    if proc.returncode != 0:
        raise InputError(workspace, f"checkpoint patch does not apply: {proc.stderr.decode(errors='replace').strip()[:300]}")


def checkpoint_workspace(checkpoint_dir: Path | str, dest: Path, *, repo_source: RepoSource | None = None) -> Path:
    """A fresh copy of a checkpoint's repository in the new folder ``dest``: ``base_commit`` plus
    ``checkpoint.patch`` (docs/protocol.md section 5: the predecessor's later events are never visible).

    Raises:
        InputError: the checkpoint is invalid or its patch does not apply.
        RepositoryUnavailable: the repository cannot be obtained.
    """
    checkpoint, patch = load_checkpoint(checkpoint_dir)
    workspace = (repo_source or RepoSource()).workspace(checkpoint.repo, checkpoint.base_commit, dest)
    apply_patch(workspace, patch)
    return workspace


def materialize_checkpoint(
    task: SourceTask,
    trajectory: Trajectory | None,
    point: HandoffPoint,
    patch: str,
    out_dir: Path | str,
    method: CheckpointMethod,
    *,
    repo_source: RepoSource | None = None,
    workspace: bool = True,
    state: bool = False,
    grade_options: dict | None = None,
) -> Checkpoint:
    """Write a checkpoint folder (docs/protocol.md section 5): ``checkpoint.patch``, ``checkpoint.json`` and,
    unless ``workspace`` is false, ``workspace/`` = ``base_commit`` + ``patch``.

    The workspace is verified: after ``git apply`` its snapshot (untracked files included) must give
    exactly ``patch`` again (same files, same hunks). An existing workspace folder is reused only if it
    passes the same check. With ``state``, the checkpoint is graded by the project's grading (issue 3,
    ``takeover.grading.grade``) and labelled with its handoff state (section 6).

    Raises:
        InputError: the patch does not apply or the workspace does not reproduce it.
        FileExistsError: ``out_dir/workspace`` exists with other content.
        RepositoryUnavailable: the repository cannot be obtained.
        EnvironmentUnavailable: ``state`` was asked and grading is not available.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out / "checkpoint.patch", patch_bytes(patch))
    ws_path = None
    if workspace:
        ws = out / "workspace"
        if not (ws.exists() and any(ws.iterdir())):
            (repo_source or RepoSource()).workspace(task.repo, task.base_commit, ws)
            apply_patch(ws, patch)
        got = snapshot_patch(ws, task.base_commit, take_snapshot(ws))
        mismatch = first_difference(got, patch)
        if mismatch is not None:
            raise InputError(ws, f"workspace does not reproduce checkpoint.patch (first difference at {mismatch}); "
                             "remove the folder to rebuild it")
        ws_path = str(ws)
    handoff_state = None
    if state:
        handoff_state = grade_handoff_state(task, patch, **(grade_options or {}))
    checkpoint = Checkpoint(
        instance_id=task.instance_id, repo=task.repo, base_commit=task.base_commit, point=point,
        files=sorted(split_patch(patch)) if patch.strip() else [], patch_sha256=patch_sha256(patch),
        method=method, trajectory=trajectory.source_path if trajectory else None,
        trajectory_record=trajectory.record if trajectory else None, handoff_state=handoff_state,
        workspace=ws_path,
    )
    atomic_write_json(out / "checkpoint.json", checkpoint)
    return checkpoint


def grade_handoff_state(task: SourceTask, patch: str, **options) -> HandoffState:
    """Handoff state of a checkpoint patch from the project's grading (issue 3, docs/protocol.md section 6).

    Raises:
        EnvironmentUnavailable: grading is not available here (the message says why).
    """
    try:
        from takeover.grading import grade  # type: ignore[attr-defined]
    except ImportError:
        raise EnvironmentUnavailable("grading is not available in this installation (takeover.grading.grade)") from None
    result = grade(task, patch, **options)
    if result.handoff_state is None:
        raise EnvironmentUnavailable(f"grading of {task.instance_id} did not finish: {result.error or 'no result'}")
    return result.handoff_state


def checkpoint_method(verdict: ReplayVerdict) -> CheckpointMethod:
    """The :class:`Checkpoint` method for a verified verdict."""
    if verdict.method in ("recorded_snapshot", "stored_diff", "verified_replay"):
        return verdict.method  # type: ignore[return-value]
    raise ValueError(f"states from {verdict.method!r} are not exact: {verdict.reason}")
