"""Checkpoint materialization (docs/protocol.md section 5).

A checkpoint folder holds ``checkpoint.json`` (:class:`Checkpoint`), ``checkpoint.patch`` (the
predecessor's cumulative diff against the task's starting state after the handoff event), ``workspace/``
(``base_commit`` + that patch) and, once views are built, ``views/<view>.md`` with each view's full
takeover prompt. The points and their patches come from the points stage (:mod:`takeover.points`); the
handoff state is set by the caller from grading (:mod:`takeover.grading`), never here.

The edits the task environment's own setup makes (docs/protocol.md section 5.2) are not in the patch: they
are the environment's, and it makes them again wherever it is prepared (SWE-bench's images hold them;
the local environment runs the same setup steps in a workspace). ``checkpoint.json`` names the files.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from takeover._util.folders import building_beside, own_output, swap_in
from takeover._util.io import atomic_write_bytes, atomic_write_json, read_json, sha256_bytes
from takeover._util.patches import first_difference, split_patch
from takeover.errors import InputError, json_type
from takeover.points import HandoffPoint
from takeover.repository_states.snapshots import (
    join_diffs,
    patch_bytes,
    patch_sha256,
    snapshot_patch,
    take_snapshot,
)
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.trajectories.events import Trajectory
from takeover.vocabulary import EVENT_CUT, CheckpointMethod, HandoffState


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
        environment_files: files the task environment's setup changes before any agent starts
            (docs/protocol.md section 5.2); the environment makes those edits, the patch never holds them.
        unrecorded_files: files of the patch whose content the record does not determine: a replayed command
            filled them with a program's output that the record never shows (docs/protocol.md section 5.3,
            extension "Unrecorded output"). A checkpoint of the same point made on another machine may
            differ in these files, and only in them.
        recorded_patch_sha256: sha256 of the patch without the ``unrecorded_files`` (``patch_sha256`` when
            there are none): the same for every checkpoint of this point, wherever it was made.
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
    environment_files: list[str] = Field(default_factory=list)
    unrecorded_files: list[str] = Field(default_factory=list)
    recorded_patch_sha256: str | None = None

    def save(self, folder: Path | str) -> Path:
        """Write this record as ``folder/checkpoint.json``, atomically; returns that path."""
        return atomic_write_json(Path(folder) / "checkpoint.json", self)


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
    doc = read_json(cp_path)
    if not isinstance(doc, dict):
        raise InputError(cp_path, f"not a checkpoint record: expected a JSON object, got {json_type(doc)}")
    try:
        checkpoint = Checkpoint.model_validate(doc)
    except ValidationError as exc:
        error = InputError.from_validation(cp_path, exc)
        raise InputError(cp_path, f"not a checkpoint record: {error.reason}", field=error.field) from None
    data = patch_path.read_bytes()
    if sha256_bytes(data) != checkpoint.patch_sha256:
        raise InputError(patch_path, "sha256 differs from checkpoint.json", field="patch_sha256")
    return checkpoint, data.decode("utf-8", "surrogateescape")


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
    ``checkpoint.patch`` (docs/protocol.md section 5.5: the predecessor's later events are never visible).

    The patch is against the task's starting state and never holds the environment's setup edits
    (docs/protocol.md section 5.2): preparing the task's environment in ``dest`` makes them, and the agent
    runner (:func:`takeover.agents.run_agent`) then commits them as the starting state, so that a
    successor's final patch is the checkpoint's edits plus its own.

    Raises:
        InputError: the checkpoint is invalid or its patch does not apply.
        RepositoryUnavailable: the repository cannot be obtained.
    """
    checkpoint, patch = load_checkpoint(checkpoint_dir)
    workspace = (repo_source or RepoSource()).workspace(checkpoint.repo, checkpoint.base_commit, dest)
    apply_patch(workspace, patch)
    return workspace


def _held_checkpoint(folder: Path) -> Checkpoint | None:
    try:
        return Checkpoint.model_validate_json((folder / "checkpoint.json").read_bytes())
    except (OSError, ValueError):
        return None


def refuse_other_checkpoint(folder: Path | str, instance_id: str, point_type: str,
                            patch_sha256: str | None = None, *, event_index: int | None = None) -> Checkpoint | None:
    """The checkpoint ``folder`` holds when it is the same one (same instance, point type and, when given,
    patch and event: a cut at an event, point type ``event``, is the same only at the same event), or
    ``None`` for an absent or empty folder: the rule every command's output follows
    (:func:`takeover._util.folders.own_output`).

    Raises:
        InputError: ``folder`` holds another checkpoint, or files that are not one, or is a file; the message
            names it, and nothing has been written.
    """
    wanted = f"{point_type} (event {event_index})" if event_index is not None else point_type
    return own_output(
        folder, read=_held_checkpoint, record="checkpoint.json",
        identity=lambda c: {"instance_id": c.instance_id, "point_type": c.point.type, "patch_sha256": c.patch_sha256,
                            "event_index": c.point.event_index},
        wanted={"instance_id": instance_id, "point_type": point_type, "patch_sha256": patch_sha256,
                "event_index": event_index},
        describe=lambda c: f"the checkpoint of {c.instance_id} {c.point.type} (event {c.point.event_index})",
        what=f"{instance_id} {wanted}")


def _trajectory_path(path: str | None) -> str | None:
    """The predecessor's path as ``checkpoint.json`` records it: absolute when the file is here, so that a
    reader elsewhere never resolves it against another folder (where the same name may be another run)."""
    return str(Path(path).resolve()) if path and Path(path).is_file() else path


def _verified_workspace(ws: Path, task: SourceTask, patch: str, repo_source: RepoSource | None) -> None:
    """Check out ``base_commit`` + ``patch`` in ``ws`` unless it holds files, then check that its snapshot
    gives exactly ``patch`` again."""
    if not (ws.exists() and any(ws.iterdir())):
        (repo_source or RepoSource()).workspace(task.repo, task.base_commit, ws)
        apply_patch(ws, patch)
    got = snapshot_patch(ws, task.base_commit, take_snapshot(ws))
    mismatch = first_difference(got, patch)
    if mismatch is not None:
        raise InputError(ws, f"workspace does not reproduce checkpoint.patch (first difference at {mismatch}); "
                         "remove the folder to rebuild it")


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
    environment_files: Sequence[str] = (),
) -> Checkpoint:
    """Write a checkpoint folder (docs/protocol.md section 5): ``checkpoint.patch``, ``checkpoint.json`` and,
    unless ``workspace`` is false, ``workspace/`` = ``base_commit`` + ``patch``.

    The workspace is verified: after ``git apply`` its snapshot (untracked files included) must give
    exactly ``patch`` again (same files, same hunks). A new folder is built beside ``out_dir`` and renamed
    into place whole (:func:`takeover._util.folders.swap_in`), so a failure or a kill leaves ``out_dir`` as
    it was, and of two commands writing one folder at once one wins and the other is refused. A folder that
    holds this same checkpoint (instance, point type, patch) is kept: its workspace is reused if it passes
    the same check (built beside and swapped in if absent), and its ``handoff_state`` stays. ``handoff_state``
    is otherwise left unset: a caller that grades the checkpoint (:func:`takeover.grading.grade`,
    docs/protocol.md section 6) sets it and saves the record again (:meth:`Checkpoint.save`).
    ``environment_files`` (``RunPoints.replay.environment_files``) are recorded in ``checkpoint.json``.

    Raises:
        InputError: ``out_dir`` holds another checkpoint or files that are not one (nothing is written),
            another command wrote ``out_dir`` meanwhile, the patch does not apply or the workspace does not
            reproduce it.
        RepositoryUnavailable: the repository cannot be obtained.
    """
    out = Path(out_dir)
    held = refuse_other_checkpoint(out, task.instance_id, point.type, patch_sha256(patch),
                                   event_index=point.event_index if point.type == EVENT_CUT else None)
    ws = out / "workspace"
    checkpoint = Checkpoint(
        instance_id=task.instance_id, repo=task.repo, base_commit=task.base_commit, point=point,
        files=sorted(split_patch(patch)) if patch.strip() else [], patch_sha256=patch_sha256(patch),
        method=method, trajectory=_trajectory_path(trajectory.source_path) if trajectory else None,
        trajectory_record=trajectory.record if trajectory else None, workspace=str(ws) if workspace else None,
        environment_files=sorted(environment_files), unrecorded_files=list(point.unrecorded_files),
        recorded_patch_sha256=patch_sha256(join_diffs({p: d for p, d in split_patch(patch).items()
                                                       if p not in point.unrecorded_files})
                                           if point.unrecorded_files else patch),
        handoff_state=held.handoff_state if held is not None else None,
    )
    if held is not None:
        if workspace and ws.exists() and any(ws.iterdir()):
            _verified_workspace(ws, task, patch, repo_source)
        elif workspace:
            with building_beside(ws) as built:
                _verified_workspace(built, task, patch, repo_source)
                if not swap_in(built, ws):
                    raise InputError(ws, "was written by another command meanwhile; run this one again")
        checkpoint.save(out)
        return checkpoint
    with building_beside(out) as built:
        atomic_write_bytes(built / "checkpoint.patch", patch_bytes(patch))
        if workspace:
            try:
                _verified_workspace(built / "workspace", task, patch, repo_source)
            except InputError as exc:  # named by the folder the user gave, not the one being built beside it
                raise InputError(out, f"the checkpoint of {task.instance_id} {point.type} (event {point.event_index}) "
                                 f"cannot be built on {task.repo} at {task.base_commit[:12]}: {exc.reason}; nothing "
                                 "was written") from None
        checkpoint.save(built)
        if not swap_in(built, out):
            raise InputError(out, "another command wrote a checkpoint here meanwhile; nothing of this one was "
                             "kept: give another folder or remove this one")
    return checkpoint
