"""The repository state after every event of a run, from the best exact source
(docs/protocol.md section 5).

Sources, best first:

a. snapshot trees recorded by our own runner (``Event.snapshot``), read from the repository that keeps
   their objects;
b. per-step diffs stored in the trajectory (``Event.state_diff``);
c. a replay of the recorded actions in a fresh checkout of ``base_commit``
(:mod:`takeover.repository_states.replay`),
   inside the task's environment when it can be prepared, accepted only when it reproduces the run's
   final patch.

The states are per-file diff maps ``{path: diff against the starting state}``, one per event, with a verdict
that says which source gave them and whether they are exact. The starting state is ``base_commit`` plus the
edits of the task environment's own setup (:mod:`takeover.repository_states.starting_state`, docs/protocol.md
section 5.2),
whichever source the states come from: those edits are never the agent's work. Generated output
(docs/protocol.md section 3.3) is left out of every state.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from takeover._util.patches import first_difference, split_patch
from takeover.environments import prepare_environment
from takeover.errors import RepositoryUnavailable, TakeoverError
from takeover.replay_settings import ReplaySettings
from takeover.repository_states.file_classes import SCRATCH_PREFIXES, file_class
from takeover.repository_states.replay import (
    ReplayResult,
    ReplayVerdict,
    replay_trajectory,
)
from takeover.repository_states.snapshots import join_diffs, snapshot_diff, top_level_names, without_generated
from takeover.repository_states.starting_state import (
    StartingState,
    apply_starting_state,
    environment_edits,
    recorded_form,
    setup_steps,
    tree_with_patch,
)
from takeover.repository_states.unrecorded_output import pin_unrecorded, replay_key, unrecorded_files
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
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


def stored_diffs(trajectory: Trajectory, start: StartingState | None = None) -> list[dict[str, str]] | None:
    """Per-event diffs from ``Event.state_diff`` (docs/protocol.md section 5 source (b)), or ``None`` when the
    trajectory stores none. An event without a stored diff has the state of the previous event.

    A stored diff is text against ``base_commit``: a file whose diff equals the environment's own edit of it
    (``start``) is left out, as is generated output (docs/protocol.md sections 3.3, 5.2)."""
    if not any(ev.state_diff is not None for ev in trajectory.events):
        return None
    setup = start.diffs if start is not None else {}
    out = []
    for text in _forward_fill(trajectory.events, lambda e: e.state_diff):
        diffs = without_generated(split_patch(text) if text else {})[0]
        out.append({p: d for p, d in diffs.items() if first_difference(d, setup.get(p, "")) is not None})
    return out


def recorded_diffs(
    trajectory: Trajectory, snapshot_repo: Path | str, base_commit: str, start: StartingState | None = None
) -> list[dict[str, str]] | None:
    """Per-event diffs from ``Event.snapshot`` tree ids (section 5 source (a)) read from ``snapshot_repo``
    (the repository where our runner kept the run's git objects), or ``None`` when no event has one. Diffs
    are taken against the starting state (``start``'s edits applied to ``base_commit`` in ``snapshot_repo``),
    generated output left out."""
    if not any(ev.snapshot for ev in trajectory.events):
        return None
    base = tree_with_patch(snapshot_repo, base_commit, start.patch) if start is not None and start.diffs else base_commit
    cache: dict[str | None, dict[str, str]] = {None: {}}
    out = []
    for tree in _forward_fill(trajectory.events, lambda e: e.snapshot):
        if tree not in cache:
            cache[tree] = without_generated(snapshot_diff(snapshot_repo, base, tree))[0]
        out.append(cache[tree])
    return out


def _recorded_start(snapshot_repo: Path | str, base_commit: str, tree: str) -> StartingState:
    """The starting state our runner recorded (run.json's ``starting_state``, a tree in ``snapshot_repo``):
    exactly the state the run's agent started from, so nothing is recomputed."""
    diffs = without_generated(snapshot_diff(snapshot_repo, base_commit, tree))[0]
    return StartingState(base_commit=base_commit, tree=tree, diffs=diffs)


def _top_level(repository: Path | str | None, base_commit: str) -> list[str] | None:
    """``base_commit``'s top-level names in ``repository``, or ``None`` when it cannot tell."""
    if repository is None:
        return None
    try:
        return top_level_names(repository, base_commit)
    except TakeoverError:
        return None


def _local_repository(task: SourceTask, repo_source: RepoSource) -> Path | None:
    """A copy of the task's repository on this machine (the mirror or the cache), never a download: stored
    diffs need no repository, only the scratch rule's top-level names (docs/protocol.md section 3.2)."""
    try:
        return RepoSource(repo_source.mirror, offline=True).bare_repo(task.repo, task.base_commit)
    except TakeoverError:
        return None


def _unknown_top_level_note(diffs: Sequence[dict[str, str]]) -> list[str]:
    """A note naming what was judged by its name alone, when ``base_commit``'s top-level names are unknown
    and it matters (docs/protocol.md section 3.2): changed paths in top-level folders named like scratch
    (counted as scratch), and changed top-level files with a source suffix (new ones are helper scripts,
    but whether they are new cannot be told: judged by their names)."""
    changed = {p for d in diffs for p in d}
    folders = sorted({p.split("/", 1)[0] for p in changed if "/" in p and p.lower().startswith(SCRATCH_PREFIXES)})
    files = sorted(p for p in changed if "/" not in p and file_class(p) == "source")
    notes = []
    if folders:
        notes.append(f"base_commit's top-level names are unknown (no copy of the repository on this machine): "
                     f"{', '.join(folders[:5])} counted as scratch folders by name (docs/protocol.md section 3.2)")
    if files:
        notes.append(f"base_commit's top-level names are unknown: top-level files {', '.join(files[:5])} judged by "
                     f"their names, not as new helper scripts (docs/protocol.md section 3.2)")
    return notes


def _setup_edits(task: SourceTask, repo_source: RepoSource, work_dir: Path | str | None,
                 replay: ReplaySettings) -> tuple[StartingState | None, list[str]]:
    """The environment's edits, found in a scratch checkout, for states that were not replayed: ``(None, [])``
    when the task's environment has no setup steps, ``(None, [note])`` when they cannot be found."""
    if not setup_steps(task)[0]:
        return None, []
    with tempfile.TemporaryDirectory(prefix="takeover-setup-", dir=work_dir) as tmp:
        ws = Path(tmp) / "workspace"
        try:
            repo_source.workspace(task.repo, task.base_commit, ws)
            return environment_edits(task, ws, replay=replay), []
        except (TakeoverError, OSError) as exc:
            return None, [f"the environment's setup edits could not be determined ({_reason(exc, ws)})"]


def _reason(exc: BaseException, workspace: Path) -> str:
    """The first line of ``exc`` (at most 300 characters), the temporary workspace named as such: a run's
    record holds no temporary paths."""
    text = str(exc).replace(str(workspace.resolve()), "<workspace>").replace(str(workspace), "<workspace>")
    return f"{type(exc).__name__}: {text.splitlines()[0][:300] if text else ''}"


def _environment_vars(task: SourceTask, workspace: Path) -> tuple[dict[str, str] | None, list[Path], str]:
    """The task environment's variables, the folders of it a sandbox must show again (``readable``) and a
    note naming it, or ``(None, [], note)`` saying why the plain interpreter is used instead."""
    try:
        prepared = prepare_environment(task, workspace)
        # Only the variables the environment sets: the rest of this process's environment (API keys
        # included) is not passed to replayed commands.
        env = prepared.env_vars(base={"PATH": os.environ.get("PATH", os.defpath)})
        return dict(env), prepared.readable, f"task environment for {task.repo} {task.version}"
    except Exception as exc:  # noqa: BLE001 - any failure falls back to the plain interpreter, and says so
        return None, [], f"plain interpreter on PATH (task environment unavailable: {str(exc).splitlines()[0][:160]})"


def event_states(
    trajectory: Trajectory,
    task: SourceTask,
    repo_source: RepoSource | None = None,
    *,
    snapshot_repo: Path | str | None = None,
    work_dir: Path | str | None = None,
    replay: ReplaySettings | None = None,
) -> ReplayResult:
    """The per-event diffs of one run and the verdict on them, from the best source available.

    Recorded snapshots are read from ``snapshot_repo`` (by default the workspace our runner names in
    ``trajectory.metadata["snapshot_repo"]``), against the starting state the run recorded
    (``trajectory.metadata["starting_state"]``) or, for runs that recorded none, the one the task's setup
    steps give; else stored per-step diffs; else the run is replayed in a
    fresh workspace of ``task`` from ``repo_source`` (under ``work_dir``, a temporary folder by default,
    removed afterwards).

    Args:
        replay: how a replay runs (:class:`takeover.replay_settings.ReplaySettings`; default: its defaults):
            its per-command limits, the sandbox (also for finding the environment's setup edits), and
            ``use_environment``: replay inside the task's environment
            (:func:`takeover.environments.prepare_environment`); when it cannot be prepared, the plain
            interpreter is used and the verdict says why.

    Returns:
        :class:`ReplayResult`: ``diffs[i]`` is ``{path: cumulative diff against the starting state}`` after
        event ``i`` (``trees`` and ``steps`` only for a replay); ``verdict.verified`` says whether they are
        exact; ``start`` holds the environment's own edits; ``base_top_level`` the top-level names of
        ``base_commit`` (read from the run's repository, the replay workspace or, for stored diffs, a copy on
        this machine; ``None`` and a note when there is none). A replay that fails for any reason of its own
        (git, the environment's setup, a file it cannot write) is an unreplayable verdict with that reason.

    Raises:
        RepositoryUnavailable: the repository, ``base_commit`` or an object of its tree cannot be obtained
            (checked before any work; replay only).
    """
    if snapshot_repo is None:
        # Our own runs name the workspace that keeps their snapshot trees; use it without being told.
        recorded = trajectory.metadata.get("snapshot_repo")
        if recorded and Path(recorded).is_dir():
            snapshot_repo = recorded
    repo_source = repo_source or RepoSource()
    replay = replay or ReplaySettings()
    stored = any(ev.state_diff is not None for ev in trajectory.events)
    if (snapshot_repo and any(ev.snapshot for ev in trajectory.events)) or stored:
        recorded_start = trajectory.metadata.get("starting_state")
        if snapshot_repo and recorded_start:
            start, notes = _recorded_start(snapshot_repo, task.base_commit, recorded_start), []
        else:
            start, notes = _setup_edits(task, repo_source, work_dir, replay)
        diffs = recorded_diffs(trajectory, snapshot_repo, task.base_commit, start) if snapshot_repo else None
        verdict = ReplayVerdict(verified=True, method="recorded_snapshot", notes=notes)
        top_level = _top_level(snapshot_repo, task.base_commit)
        if diffs is None:
            diffs = stored_diffs(trajectory, start)
            verdict = ReplayVerdict(verified=True, method="stored_diff", notes=notes)
            top_level = _top_level(_local_repository(task, repo_source), task.base_commit)
        if diffs is not None:
            if start is not None and start.diffs:
                verdict.environment_files = start.files
            if trajectory.final_patch is not None:
                # Informational: a stored source is exact by construction (docs/protocol.md section 5).
                verdict.first_mismatch = first_difference(join_diffs(diffs[-1]) if diffs else "",
                                                          _without_setup(trajectory.final_patch, start))
            if top_level is None:
                verdict.notes += _unknown_top_level_note(diffs)
            return ReplayResult(diffs=diffs, verdict=verdict, start=start, base_top_level=top_level)
    with tempfile.TemporaryDirectory(prefix="takeover-points-", dir=work_dir) as tmp:
        ws = repo_source.workspace(task.repo, task.base_commit, Path(tmp) / "workspace")
        try:
            start = environment_edits(task, ws, replay=replay)
            env_vars, readable, note = _environment_vars(task, ws) if replay.use_environment else (None, [], None)
            form = recorded_form(start, trajectory.final_patch)
            apply_starting_state(ws, start, form)
            result = replay_trajectory(
                trajectory, ws, task.base_commit, start=start, form=form, env_vars=env_vars, readable=readable,
                interpreter_note=note, replay=replay,
            )
        except RepositoryUnavailable:
            raise
        except (TakeoverError, OSError) as exc:
            # One run's failure is that run's reason; the caller goes on with the others.
            return ReplayResult(verdict=ReplayVerdict(verified=False, method="replay",
                                                      reason=f"replay failed: {_reason(exc, ws)}"))
        result.start = start
        result.base_top_level = _top_level(ws, task.base_commit)
        if result.verdict.verified:
            # Files filled with a program's output the record never shows: the first replay's bytes on this
            # machine, so that the same run gives the same checkpoint (docs/protocol.md section 5.3).
            found = unrecorded_files(trajectory, [s.action for s in result.steps], result.diffs)
            result.diffs, result.unrecorded = pin_unrecorded(replay_key(trajectory, task.base_commit, start.tree),
                                                             result.diffs, found)
        return result


def _without_setup(patch: str, start: StartingState | None) -> str:
    """``patch`` without the files whose diff is exactly the environment's own edit of them."""
    if start is None or not start.diffs:
        return patch
    return join_diffs({p: d for p, d in split_patch(patch).items() if first_difference(d, start.diffs.get(p, "")) is not None})


def checkpoint_method(verdict: ReplayVerdict) -> CheckpointMethod:
    """The :class:`takeover.checkpoints.Checkpoint` method of a verified verdict (docs/protocol.md section 5).

    Raises:
        ValueError: the verdict's states are not exact (an unverified replay).
    """
    if verdict.method in CHECKPOINT_METHODS:
        return verdict.method  # type: ignore[return-value]
    raise ValueError(f"states from {verdict.method!r} are not exact: {verdict.reason}")
