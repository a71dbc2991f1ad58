"""An interrupted session as a handoff point: its events (secrets masked), its task, its source edits and the
point at its last event (docs/protocol.md sections 3, 4 and 7).

The session is any file a reader of :mod:`takeover.trajectories` detects by content (Claude Code session
logs, Codex CLI rollouts, and every study format). What the study takes from a source task comes from the
session itself:

- The task is the session's first user request (:attr:`Trajectory.task_prompt`): outside SWE-bench there
  is no problem statement. The leak guard therefore knows no hidden tests and no gold patch; it still
  rejects grading vocabulary and handoff states (docs/protocol.md section 7.5).
- The handoff point is the session's last event (``session_end``): every event is visible.
- Secrets (keys, tokens, key-shaped strings and the values of this machine's credential variables) are
  masked in every string of the session (:func:`takeover._util.redact.redact_obj`) before anything is built
  from
  it, so no model and no output ever sees them.

Source edits (**Extension** of docs/protocol.md section 3.4; reason: an interactive session records no
repository state per event, and replaying a person's session would re-run its commands). An event is a
source edit when it is

- an applied ``file_edit`` action (not ``not_applied``) whose path is a source file of the repository, or
  has no path (a patch that could not be parsed), or
- a ``command`` action that is not a verification command (section 4.1) and names a source file of the
  repository (a word with a source suffix, heredoc bodies included), unless it is plainly read-only:
  every part of it (split at ``&&``, ``||``, ``;``, ``|`` and line breaks) runs a reading program (``cat``,
  ``grep``, ``sed`` without ``-i``, ``git diff``/``show``/``log``/``status``/..., see :data:`READ_ONLY`)
  with no output redirection other than to ``/dev/null`` or another descriptor
  (:func:`takeover.commands.effects.is_read_only`); or
- a ``command`` action that runs a git subcommand rewriting the working tree (``checkout``, ``restore``,
  ``reset``, ``stash``, ``clean``, ``apply``, ``am``, ``merge``, ``rebase``, ``cherry-pick``, ``pull``,
  ``revert``, ``switch``).

Paths are made repository-relative against the repository's folder, then the session's working folder
(a session recorded on another machine or in another clone); a relative path is taken from the command's
folder. A file outside the repository is never a source file of it. The rule errs on the side of
counting: a source edit the rule counts that changed nothing only makes the validation status after the
latest source change ``none`` (continuation label ``needs verification``). What it cannot see is a program
that writes a source file it does not name (a script editing files, a subagent of Claude Code's ``Task``
tool): then the latest verification may be older than the latest change.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from takeover._util.patches import split_patch
from takeover._util.redact import redact, redact_obj
from takeover.commands.effects import READ_ONLY, is_read_only, repo_path, rewrites_worktree
from takeover.commands.runners import is_verification_command
from takeover.errors import InputError
from takeover.points import HandoffPoint, point_at, verifications
from takeover.repository_states.file_classes import SOURCE_SUFFIXES, file_class
from takeover.sources.tasks import SourceTask
from takeover.trajectories import Trajectory, read_trajectory
from takeover.trajectories.events import Event
from takeover.vocabulary import EVENT_CUT, SESSION_END

__all__ = [
    "READ_ONLY",
    "is_source_edit",
    "read_session",
    "redacted_trajectory",
    "repo_path",
    "rewrites_worktree",
    "session_point",
    "session_source_edits",
    "session_task",
]

NOT_APPLIED = "not_applied"
_SOURCE_WORD = re.compile(
    r"[\w./~+@-]*\.(?:" + "|".join(sorted(s[1:] for s in SOURCE_SUFFIXES)) + r")(?![\w.])", re.IGNORECASE
)


def redacted_trajectory(trajectory: Trajectory) -> Trajectory:
    """A copy of ``trajectory`` with every string masked by :func:`takeover._util.redact.redact_obj`."""
    return Trajectory.model_validate(redact_obj(trajectory.model_dump(mode="json")))


def read_session(path: Path | str, *, record: int | None = None) -> Trajectory:
    """Read a session (format detected by content) with its secrets masked.

    Args:
        path: the session file (or run folder).
        record: which run, for a file that holds several (0-based).

    Raises:
        InputError: unknown format, a broken record, several runs without ``record``, or a session without
            events (nothing to hand over).
    """
    trajectory = redacted_trajectory(read_trajectory(path, record=record))
    if not trajectory.events:
        raise InputError(path, "the session has no events: there is no work to hand over")
    return trajectory


def session_task(trajectory: Trajectory, repository: str, base_commit: str) -> SourceTask:
    """The task of a session: its first user request as the problem statement (see module docstring).

    The extra fields ``session_format`` and ``session_dir`` (the session's working folder) feed the task
    prompt template of :mod:`takeover.handoff`.

    Raises:
        InputError: the session has no user request.
    """
    prompt = (trajectory.task_prompt or "").strip()
    if not prompt:
        raise InputError(trajectory.source_path or "session", "the session has no user request to take the task "
                         "from", field="task_prompt")
    name = trajectory.metadata.get("session_id") or trajectory.instance_id or Path(trajectory.source_path or "x").stem
    return SourceTask(
        instance_id=str(name), repo=repository, base_commit=base_commit, problem_statement=redact(prompt),
        session_format=trajectory.format, session_dir=trajectory.working_dir,
    )


def _is_source(path: str, cwd: str | None, roots: Sequence[str]) -> bool:
    rel = repo_path(path, cwd, roots)
    return bool(rel) and file_class(rel) == "source"


def is_source_edit(event: Event, roots: Sequence[str], default_cwd: str | None = None) -> bool:
    """Whether ``event`` counts as a source edit of the repository (the rule of the module docstring).

    Args:
        roots: absolute folders that stand for the repository's top folder (see :func:`repo_path`).
        default_cwd: the folder of an event that records none (the session's working folder).
    """
    if event.kind != "action":
        return False
    cwd = event.cwd or default_cwd
    if event.type == "file_edit":
        if event.edit == NOT_APPLIED:
            return False
        return event.path is None or _is_source(event.path, cwd, roots)
    if event.type != "command" or not event.command or is_verification_command(event.command):
        return False
    if rewrites_worktree(event.command):
        return True
    names_source = any(_is_source(m.group(0), cwd, roots) for m in _SOURCE_WORD.finditer(event.command))
    return names_source and not is_read_only(event.command)


def session_source_edits(trajectory: Trajectory, root: str) -> list[int]:
    """Indices of the session's source edits (module docstring), for the repository at ``root``."""
    roots = [root] + ([trajectory.working_dir] if trajectory.working_dir else [])
    return [e.index for e in trajectory.events if is_source_edit(e, roots, trajectory.working_dir)]


def session_point(trajectory: Trajectory, root: str, patch: str, event: int | None = None) -> tuple[HandoffPoint, list[int]]:
    """The handoff point at the session's last event (or, with ``event``, a cut after that event: type
    ``event``, docs/protocol.md section 4.5), and the session's source edits.

    The point records what docs/protocol.md section 4.4 asks, computed as the study computes it
    (:func:`takeover.points.point_at`): file classes of ``patch`` (the repository's state), the latest
    verification and its result, and the validation after the latest source edit.

    Args:
        root: the repository's top folder (absolute).
        patch: the repository's cumulative diff at the handoff.
        event: the event of a cut (0-based); ``None``: the last event.
    """
    edits = session_source_edits(trajectory, root)
    kind, index = (SESSION_END, len(trajectory.events) - 1) if event is None else (EVENT_CUT, event)
    point = point_at(kind, index, split_patch(patch), edits, verifications(trajectory.events))
    return point, edits
