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
  with no output redirection other than to ``/dev/null`` or another descriptor; or
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

import posixpath
import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from takeover._util.patches import split_patch
from takeover._util.redact import redact, redact_obj
from takeover.errors import InputError
from takeover.points import HandoffPoint, point_at, verifications
from takeover.points.verification import is_verification_command, strip_heredocs
from takeover.repository_states.file_classes import SOURCE_SUFFIXES, file_class
from takeover.sources.tasks import SourceTask
from takeover.trajectories import Trajectory, read_trajectory
from takeover.trajectories.events import Event
from takeover.vocabulary import EVENT_CUT, SESSION_END

NOT_APPLIED = "not_applied"
#: Programs that only read files (with the write options of ``sed``, ``awk``, ``find`` and ``git`` checked
#: apart).
READ_ONLY = frozenset({
    "cat", "bat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ag", "ack", "wc", "ls",
    "stat", "file", "diff", "cmp", "nl", "echo", "printf", "pwd", "cd", "tree", "which", "type", "sort",
    "uniq", "cut", "tr", "column", "true", "false", "test", "[", "realpath", "dirname", "basename", "date",
    "sed", "awk", "gawk", "find", "git", "xxd", "od", "hexdump", "md5sum", "sha256sum", "du", "df",
})
_READ_ONLY_GIT = frozenset({
    "diff", "show", "log", "status", "blame", "grep", "ls-files", "ls-tree", "rev-parse", "describe",
    "shortlog", "cat-file", "reflog", "branch", "remote", "config", "help", "version", "whatchanged",
})
_WORKTREE_GIT = frozenset({
    "checkout", "restore", "reset", "stash", "clean", "apply", "am", "merge", "rebase", "cherry-pick", "pull",
    "revert", "switch",
})
_GIT_OPTS_WITH_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"})
_WRAPPERS = frozenset({"sudo", "env", "time", "nice", "nohup", "command", "builtin", "exec"})
_SEGMENT = re.compile(r"&&|\|\||[;|\n]")
_REDIRECT = re.compile(r"(?<![<>])(\d*)>>?\|?\s*(&\d+|&-|[^\s;&|<>]+)")
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


def repo_path(path: str, cwd: str | None, roots: Sequence[str]) -> str | None:
    """The repository-relative form of a path an agent wrote, or ``None`` when it is outside the repository.

    Args:
        path: as recorded (absolute, or relative to ``cwd``).
        cwd: the folder the path is relative to (an event's ``cwd``), when known.
        roots: absolute folders that stand for the repository's top folder, in order of preference.
    """
    p = path.replace("\\", "/")
    if p.startswith("~"):
        return None
    if not p.startswith("/"):
        if not (cwd and cwd.startswith("/")):
            rel = posixpath.normpath(p)
            return None if rel.startswith("../") or rel == ".." else rel.removeprefix("./")
        p = posixpath.join(cwd, p)
    p = posixpath.normpath(p)
    for root in roots:
        r = posixpath.normpath(root)
        if p == r:
            return ""
        if p.startswith(r.rstrip("/") + "/"):
            return p[len(r.rstrip("/")) + 1 :]
    return None


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment, posix=True)
    except ValueError:
        return segment.split()


def _program(words: list[str]) -> tuple[str, list[str]]:
    """The program a command segment runs (its file name) and its arguments."""
    i = 0
    while i < len(words):
        w = words[i]
        if re.fullmatch(r"[A-Za-z_]\w*=.*", w) or w in _WRAPPERS or w.startswith("-") and i > 0:
            i += 1
        elif w == "timeout" and i + 1 < len(words):
            i += 2
        else:
            break
    if i >= len(words):
        return "", []
    return words[i].rsplit("/", 1)[-1], words[i + 1 :]


def _git_subcommand(args: list[str]) -> str | None:
    j = 0
    while j < len(args) and args[j].startswith("-"):
        j += 2 if args[j] in _GIT_OPTS_WITH_VALUE else 1
    return args[j] if j < len(args) else None


def _writes(program: str, args: list[str]) -> bool:
    """Whether a reading program was given an option that makes it write (``sed -i``, ``find -delete``...)."""
    if program == "sed":
        return any(a.startswith(("-i", "--in-place")) or re.fullmatch(r"-[a-hj-zA-Z]*i\S*", a) for a in args)
    if program in ("awk", "gawk"):
        return "inplace" in args
    if program == "find":
        return any(a in ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprintf", "-fls") for a in args)
    if program == "git":
        return _git_subcommand(args) not in _READ_ONLY_GIT
    return False


def _read_only(command: str) -> bool:
    for segment in _SEGMENT.split(strip_heredocs(command)):
        if not segment.strip():
            continue
        for m in _REDIRECT.finditer(segment):
            if not (m.group(2).startswith("&") or m.group(2) == "/dev/null"):
                return False
        program, args = _program(_words(_REDIRECT.sub(" ", segment)))
        if program and (program not in READ_ONLY or _writes(program, args)):
            return False
    return True


def rewrites_worktree(command: str | None) -> bool:
    """Whether ``command`` runs a git subcommand that rewrites the working tree (see module docstring)."""
    for segment in _SEGMENT.split(strip_heredocs(command or "")):
        program, args = _program(_words(segment))
        if program == "git" and _git_subcommand(args) in _WORKTREE_GIT:
            return True
    return False


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
    return names_source and not _read_only(event.command)


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
