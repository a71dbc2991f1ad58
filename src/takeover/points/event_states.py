"""The repository state after every event of a run, from the best exact source
(docs/protocol.md section 5).

Sources, best first:

a. snapshot trees recorded by our own runner (``Event.snapshot``), read from the repository that keeps
   their objects;
b. per-step diffs stored in the trajectory (``Event.state_diff``);
c. a replay of the recorded actions in a fresh checkout of ``base_commit`` (:mod:`takeover.replay`),
   inside the task's environment when it can be prepared, accepted only when it reproduces the run's
   final patch.

The states are per-file diff maps ``{path: diff against base_commit}``, one per event, with a verdict that
says which source gave them and whether they are exact.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from takeover.environments import prepare_environment
from takeover.patches import first_difference, split_patch
from takeover.replay import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, ReplayResult, ReplayVerdict, replay_trajectory
from takeover.repos import RepoSource
from takeover.snapshots import join_diffs, snapshot_diff
from takeover.tasks import SourceTask
from takeover.trajectories.events import Event, Trajectory
from takeover.vocabulary import CHECKPOINT_METHODS, CheckpointMethod

_T = TypeVar("_T")


def _forward_fill(events: Sequence[Event], value: Callable[[Event], _T | None]) -> list[_T | None]:
    out: list[_T | None] = []
    current: _T | None = None
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


def _environment_vars(task: SourceTask, workspace: Path) -> tuple[dict[str, str] | None, str]:
    """The task environment's variables and a note naming it, or ``(None, note)`` saying why the plain
    interpreter is used instead."""
    try:
        prepared = prepare_environment(task, workspace)
        # Only the variables the environment sets: the rest of this process's environment (API keys
        # included) is not passed to replayed commands.
        env = prepared.env_vars(base={"PATH": os.environ.get("PATH", os.defpath)})
        return dict(env), f"task environment for {task.repo} {task.version}"
    except Exception as exc:  # noqa: BLE001 - any failure falls back to the plain interpreter, and says so
        return None, f"plain interpreter on PATH (task environment unavailable: {str(exc).splitlines()[0][:160]})"


def event_states(
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
) -> ReplayResult:
    """The per-event diffs of one run and the verdict on them, from the best source available.

    Recorded snapshots are read from ``snapshot_repo`` (by default the workspace our runner names in
    ``trajectory.metadata["snapshot_repo"]``); else stored per-step diffs; else the run is replayed in a
    fresh workspace of ``task`` from ``repo_source`` (under ``work_dir``, a temporary folder by default,
    removed afterwards).

    Args:
        use_environment: replay inside the task's environment
            (:func:`takeover.environments.prepare_environment`); when it cannot be prepared, the plain
            interpreter is used and the verdict says why.
        timeout, memory_mb: per-command limits for replay (seconds, MiB).
        use_sandbox: confine replayed commands with bubblewrap when available.

    Returns:
        :class:`ReplayResult`: ``diffs[i]`` is ``{path: cumulative diff against base_commit}`` after event
        ``i`` (``trees`` and ``steps`` only for a replay); ``verdict.verified`` says whether they are exact.

    Raises:
        RepositoryUnavailable: the repository or ``base_commit`` cannot be obtained (replay only).
    """
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
            verdict.first_mismatch = first_difference(join_diffs(diffs[-1]) if diffs else "", trajectory.final_patch)
        return ReplayResult(diffs=diffs, verdict=verdict)
    repo_source = repo_source or RepoSource()
    with tempfile.TemporaryDirectory(prefix="takeover-points-", dir=work_dir) as tmp:
        ws = repo_source.workspace(task.repo, task.base_commit, Path(tmp) / "workspace")
        env_vars, note = _environment_vars(task, ws) if use_environment else (None, None)
        return replay_trajectory(
            trajectory, ws, task.base_commit, env_vars=env_vars, interpreter_note=note,
            timeout=timeout, memory_mb=memory_mb, use_sandbox=use_sandbox,
        )


def checkpoint_method(verdict: ReplayVerdict) -> CheckpointMethod:
    """The :class:`takeover.checkpoints.Checkpoint` method of a verified verdict (docs/protocol.md section 5).

    Raises:
        ValueError: the verdict's states are not exact (an unverified replay).
    """
    if verdict.method in CHECKPOINT_METHODS:
        return verdict.method  # type: ignore[return-value]
    raise ValueError(f"states from {verdict.method!r} are not exact: {verdict.reason}")
