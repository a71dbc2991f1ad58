"""Resume an interrupted session with a successor agent (docs/protocol.md sections 5, 7 and 8).

The successor is an agent choice (:class:`takeover.agents.AgentChoice`, as ``takeover agent run`` takes it),
by default the study's: mini-swe-agent under the text action protocol, its commands in the sandbox
(bubblewrap: no network, writes only in its workspace, which it sees at ``/testbed``); it is recorded in
takeover's own run format (:mod:`takeover.trajectories.takeover_run`), with the handoff's takeover prompt.
Its commands run on this host (a command backend whose commands run elsewhere, in an image, has no copy of
the user's repository to work on, and is refused).

Decision: the successor works on a copy, never in the user's repository. The copy is what the study calls
a checkpoint workspace: ``git clone --shared`` of the repository (no history copied, nothing written into
the repository; no remote, so nothing can be pushed), the handoff's base commit checked out, and the
repository's state (:mod:`takeover.handoff.worktree`: tracked and untracked changes) applied and checked.
Files ignored by git (virtual environments, build output, ``.env``) are not copied; the successor's commands
use the interpreters on ``PATH``. Reasons: the run's recorder writes its snapshots into the workspace's git
folder; an agent may run ``git stash``, ``git reset --hard`` or ``rm``, which must never reach a person's
uncommitted work; and the sandbox can only confine writes to a folder the run owns.

The user's repository is changed only when asked (``apply=True``), and then only in its working tree:
the successor's own changes (``successor.patch``: the diff from the workspace's first snapshot to its
last) are applied with ``git apply`` when the repository is still in the state the handoff read, which
git does all or nothing. Nothing is ever staged, committed or pushed.

Run folder (``out_dir``): the run's files (``run.json``, ``prompt.md``, ``events.jsonl``, ``calls.jsonl``,
the native trajectory, ``patch.diff`` against the base commit, ``workspace/``) and

- ``handoff.json``: the handoff (:meth:`takeover.handoff.compose.Handoff.public`);
- ``handoff.patch``: the state the successor started from (diff against the base commit);
- ``successor.patch``: what the successor changed on top of it (secrets masked, as in every file);
- ``resume.json``: the repository's folder, the workspace's first snapshot (tree id) and, with ``apply``,
  whether the changes were applied.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from takeover._util.io import atomic_write_bytes, atomic_write_json
from takeover._util.patches import first_difference, patch_files
from takeover._util.redact import redact
from takeover.agent_choice import AgentChoice
from takeover.agents.command_backends import COMMAND_BACKENDS, host_command_backends
from takeover.agents.run_folder import RunSpec, prepare_run_folder, run_inputs
from takeover.agents.runs import run_agent
from takeover.agents.runtimes import checked_choice
from takeover.errors import InputError, TakeoverError
from takeover.handoff.compose import Handoff, compose_handoff
from takeover.handoff.worktree import RepositoryState, repository_state
from takeover.limits import RunLimits
from takeover.llm import ModelSettings
from takeover.repository_states.snapshots import patch_bytes, snapshot_patch, take_snapshot, worktree_patch
from takeover.sources.repos import cache_dir
from takeover.trajectories.takeover_run import RunRecord, TakeoverOrigin
from takeover.view_budgets import ViewBudgets
from takeover.vocabulary import SESSION_END, ViewName

#: ``TakeoverOrigin.method`` of a resumed session: the state was read from the working tree itself.
WORKING_TREE = "working_tree"


class HandoffBlocked(TakeoverError):
    """The handoff has no prompt: its notes were rejected or the note writer failed (the reasons say why);
    nothing was run, but the note writer was."""

    exit_status = 1


class ResumeResult(BaseModel):
    """A finished (or reused) successor run on a copy of the repository.

    Attributes:
        run_dir: the run folder; ``workspace``: the copy the successor worked in (left for review).
        record: the run's :class:`RunRecord`.
        handoff: the handoff the successor was given.
        successor_patch: path of ``successor.patch`` (``None`` when the run left no final snapshot).
        changed_files: the files the successor changed (repository-relative).
        applied: whether the successor's changes were applied to the user's repository; ``apply_note`` says
            what happened when it was asked.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    run_dir: str
    workspace: str
    record: RunRecord
    handoff: Handoff
    successor_patch: str | None = None
    changed_files: list[str] = Field(default_factory=list)
    applied: bool = False
    apply_note: str | None = None


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=False)


def default_run_dir(handoff: Handoff) -> Path:
    """``~/.cache/takeover/resume/<session>-<UTC time>`` (``TAKEOVER_CACHE`` moves the cache)."""
    name = handoff.session.session_id or Path(handoff.session.path).stem
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return cache_dir() / "resume" / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)[:40]}-{stamp}"


def copy_repository(state: RepositoryState, dest: Path) -> Path:
    """A copy of the repository in the new folder ``dest``: ``state.base_commit`` plus ``state.patch``.

    Raises:
        InputError: the copy cannot be made, or it does not reproduce the state (same files, same hunks).
    """
    root = Path(state.root)
    dest.parent.mkdir(parents=True, exist_ok=True)
    steps = [
        (dest.parent, ["clone", "--shared", "--no-checkout", "--quiet", str(root), str(dest)]),
        (dest, ["remote", "remove", "origin"]),
        (dest, ["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", state.base_commit]),
    ]
    for cwd, args in steps:
        proc = _git(cwd, *args)
        if proc.returncode != 0:
            raise InputError(root, f"cannot copy the repository (git {args[0]}): "
                             f"{proc.stderr.decode(errors='replace').strip()[:300]}")
    if state.patch.strip():
        proc = _git(dest, "apply", "--binary", "--whitespace=nowarn", "-", stdin=patch_bytes(state.patch))
        if proc.returncode != 0:
            raise InputError(root, "the repository's changes do not apply to a copy: "
                             f"{proc.stderr.decode(errors='replace').strip()[:300]}")
    mismatch = first_difference(worktree_patch(dest, state.base_commit), state.patch)
    if mismatch is not None:
        raise InputError(root, f"the copy does not reproduce the repository's changes (first difference at "
                         f"{mismatch}); is a file a symbolic link or a submodule?")
    return dest


def apply_to_repository(state: RepositoryState, patch: str, start_commit: str | None) -> tuple[bool, str]:
    """Apply ``patch`` to the working tree of the repository when it is still in ``state``.

    Returns:
        ``(applied, what happened)``. Nothing is changed when the repository moved on since the handoff
        or when ``git apply`` refuses the patch (it applies all of it or nothing).
    """
    root = Path(state.root)
    now = repository_state(root, start_commit)
    if (now.base_commit, now.head, now.patch_sha256) != (state.base_commit, state.head, state.patch_sha256):
        return False, ("the repository changed since the handoff was read, so nothing was applied; review the "
                       "successor's changes and apply them yourself (git apply --3way successor.patch)")
    if not patch.strip():
        return False, "the successor changed nothing"
    proc = _git(root, "apply", "--binary", "--whitespace=nowarn", "-", stdin=patch_bytes(patch))
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip()[:300]
        return False, f"git apply refused the successor's changes, nothing was changed: {detail}"
    return True, "the successor's changes are in the repository's working tree (nothing staged or committed)"


def resume_session(
    session: Path | str,
    repo: Path | str | None,
    model: ModelSettings,
    out_dir: Path | str | None = None,
    *,
    view: ViewName = "structured_notes",
    limits: RunLimits | None = None,
    agent: AgentChoice | None = None,
    apply: bool = False,
    record: int | None = None,
    view_budgets: ViewBudgets | None = None,
) -> ResumeResult:
    """Hand ``session`` over to a successor on a copy of ``repo`` (see module docstring).

    ``model`` writes the notes (docs/protocol.md section 7.3: without a note model, the successor's) and
    runs the successor. A finished run already in ``out_dir`` with the same inputs is returned without
    running again.

    Args:
        session, repo, view, record, view_budgets: as in :func:`takeover.handoff.compose.compose_handoff`.
        out_dir: the run folder (default :func:`default_run_dir`); it must not be inside the repository.
        limits: the run's limits (default: the study's, :class:`takeover.limits.RunLimits`).
        agent: the successor's agent choice (runtime, command backend, action protocol, their options;
            default: the study's), checked by its runtime before anything runs.
        apply: apply the successor's changes to the repository's working tree afterwards
            (:func:`apply_to_repository`).

    Raises:
        HandoffBlocked: the notes were not accepted (nothing was run).
        InputError: bad input, a repository without commits, ``out_dir`` inside the repository or holding
            another run, a copy that does not reproduce the repository's state, an agent choice its runtime
            refuses or whose commands do not run on this host.
        takeover.errors.EnvironmentUnavailable: the sandboxed environment cannot start.
    """
    agent = checked_choice(agent or AgentChoice(), limits or RunLimits())
    if not COMMAND_BACKENDS.named(agent.command_backend).on_host:
        raise InputError("agent", "the successor works on a copy of the repository on this host: use command "
                         f"backend {' or '.join(host_command_backends())}", field="command_backend")
    handoff = compose_handoff(session, repo, model=model, view=view, record=record, view_budgets=view_budgets)
    if handoff.view is None:
        reasons = "; ".join(handoff.failure.reasons[-1:]) if handoff.failure else "no view"
        raise HandoffBlocked(f"{view}: the notes were not accepted ({reasons}); nothing was run "
                             "(use --view raw_trace, or another model)")
    state = handoff.repository
    root = Path(state.root)
    if state.base_source == "empty_tree":
        raise InputError(root, "the repository has no commit yet: commit once, then resume")
    out = Path(out_dir).expanduser().resolve() if out_dir else default_run_dir(handoff)
    if out == root or root in out.parents:
        raise InputError(out, f"the run folder is inside the repository {root}, which must stay as it is; "
                         "choose a folder outside it (--out-dir)")
    spec = RunSpec(
        kind="takeover", instance_id=handoff.view.instance_id, repo=str(root), base_commit=state.base_commit,
        prompt=handoff.prompt, model=model, limits=limits or RunLimits(), agent=agent,
        origin=TakeoverOrigin(
            checkpoint_dir=str(out), instance_id=handoff.view.instance_id, point_type=SESSION_END,
            event_index=handoff.point.event_index, view=view, patch_sha256=state.patch_sha256, method=WORKING_TREE,
        ),
    )
    workspace = out / "workspace"
    done = prepare_run_folder(out, run_inputs(spec))
    if done is None:
        try:
            copy_repository(state, workspace)
            atomic_write_json(out / "handoff.json", handoff.public())
            atomic_write_bytes(out / "handoff.patch", patch_bytes(redact(state.patch)))
            atomic_write_json(out / "resume.json", {"repository": str(root), "start_snapshot": take_snapshot(workspace)})
        except BaseException:
            shutil.rmtree(out, ignore_errors=True)  # no half-made folder blocks the next attempt
            raise
        run = run_agent(spec, out, workspace)
    else:
        run = done
    result = ResumeResult(run_dir=str(out), workspace=str(workspace), record=run, handoff=handoff)
    resumed = json.loads((out / "resume.json").read_text(encoding="utf-8")) if (out / "resume.json").is_file() else {}
    start = resumed.get("start_snapshot")
    if run.final_snapshot and start and workspace.is_dir():
        patch = snapshot_patch(workspace, start, run.final_snapshot)
        atomic_write_bytes(out / "successor.patch", patch_bytes(redact(patch)))
        result.successor_patch = str(out / "successor.patch")
        result.changed_files = patch_files(patch)
        if apply:
            result.applied, result.apply_note = apply_to_repository(state, patch, handoff.session.start_commit)
    elif apply:
        result.apply_note = "the run left no final snapshot, so there is nothing to apply"
    if apply:
        atomic_write_json(out / "resume.json", {**resumed, "applied": result.applied, "apply_note": result.apply_note})
    return result
