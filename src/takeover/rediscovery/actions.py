"""What one action of a run does, in the terms of rediscovery (docs/protocol.md section 9.1):
the files it reads (with the lines), the searches it runs, the verification commands it runs, the files it
edits, and whether anything in it is not recognised.

Every recorded shape maps to these effects: shell commands by the grammar of :mod:`takeover.commands`
(mini-swe-agent, OpenHands and Claude Code ``Bash``, SWE-agent's own search tools), editor views and Claude
Code ``Read`` (``file_view`` with a path and lines), Claude Code ``Grep``/``Glob``/``LS`` and editor views of
a folder (searches), and every ``file_edit``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from takeover.commands import (
    Search,
    file_reads,
    is_verification_command,
    repo_path,
    rewrites_worktree,
    searches,
    segments,
)
from takeover.commands.effects import heredoc_targets, is_output_filter, segment_writes
from takeover.commands.grammar import Segment, git_subcommand
from takeover.trajectories.events import Event

#: Programs that neither read, search, verify nor edit the repository's files: they change nothing a
#: successor could learn from the files (``cd``, ``echo`` without a redirection, ``pwd``...).
NEUTRAL: frozenset[str] = frozenset({
    "cd", "pwd", "echo", "printf", "true", "false", "clear", "sleep", "export", "set", "unset", "source", ".",
    "which", "type", "whoami", "date", "wc", "sort", "uniq", "cut", "tr", "column", "exit",
})
#: git subcommands that show the repository's state: a read of the whole state (``git:<subcommand> args``).
GIT_VIEWS: frozenset[str] = frozenset({"diff", "status", "show", "log", "blame"})
#: Output options of test runners that do not change what runs (removed when two verification commands are
#: compared): verbosity, tracebacks, reports, colour, stopping at the first failure.
OUTPUT_FLAGS: frozenset[str] = frozenset({"-q", "-qq", "-v", "-vv", "-vvv", "-s", "-x", "--no-header",
                                          "--disable-warnings", "-p no:cacheprovider", "--verbose", "--quiet"})
_OUTPUT_FLAG_PREFIXES = ("--tb", "-r", "--color", "--capture", "--maxfail", "-W")
_PYTHON = re.compile(r"^python(?:3(?:\.\d+)?)?$")
# SWE-agent's own search tools (bash functions in its shell): pattern first, then a folder or a file.
_SWE_AGENT_SEARCH = {"search_dir": "content", "search_file": "content", "find_file": "names"}
_REMOVERS = frozenset({"rm", "rmdir", "unlink"})
_FOLDER_LISTING = re.compile(r"files and directories|^total \d+$", re.MULTILINE)


@dataclass(frozen=True)
class Read:
    """A read of ``path`` (repository-relative; ``git:...`` for a git view of the whole state), lines
    ``start``..``end`` (``end`` ``None``: to the end; ``start`` negative: the last lines), or the lines a
    ``sed`` script picks by pattern (``selector``)."""

    path: str
    start: int = 1
    end: int | None = None
    selector: str = ""


@dataclass
class ActionEffects:
    """The effects of one action: ``reads``, ``searches`` (:class:`takeover.commands.Search` with its scope
    made repository-relative), ``verifications`` (normalised commands), ``edits`` (repository-relative paths,
    ``"*"`` for a command that may write files it does not name), ``writes_whole`` (paths whose whole new
    content the action wrote: the author knows it), ``created`` and ``removed`` (paths the action may have
    created or removed: a listing or a name search over them may differ), and ``unrecognised`` (parts of a
    command none of the rules reads)."""

    reads: list[Read] = field(default_factory=list)
    searches: list[Search] = field(default_factory=list)
    verifications: list[str] = field(default_factory=list)
    edits: list[str] = field(default_factory=list)
    writes_whole: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unrecognised: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        """``edit``, ``verification``, ``read``, ``search`` (the first that applies) or ``other``."""
        if self.edits:
            return "edit"
        if self.verifications:
            return "verification"
        if self.reads:
            return "read"
        if self.searches:
            return "search"
        return "other"


def _rel(path: str, cwd: str | None, roots: Sequence[str]) -> str | None:
    rel = repo_path(path, cwd, roots)
    return None if rel is None else (rel or ".")


def normalised_verification(segment: Segment) -> str:
    """A verification segment as compared between runs: its program and arguments after wrappers and
    launchers (``python -m pytest`` is ``pytest``, ``python3`` is ``python``), output options
    (:data:`OUTPUT_FLAGS`) removed, ``./`` prefixes removed."""
    program = segment.program or ""
    if _PYTHON.match(program):
        program = "python"
    args = [a.removeprefix("./") for a in segment.args
            if a not in OUTPUT_FLAGS and not a.startswith(_OUTPUT_FLAG_PREFIXES)]
    return " ".join([program, *args])


def _scope(search: Search, cwd: str | None, roots: Sequence[str]) -> Search:
    scope = []
    for s in search.scope:
        if s.startswith("filter:"):
            scope.append(s)
        else:
            scope.append(_rel(s, cwd, roots) or s)
    return Search(search.kind, search.pattern, tuple(scope))


def _swe_agent_search(seg: Segment) -> Search | None:
    kind = _SWE_AGENT_SEARCH.get(seg.program or "")
    if kind is None or not seg.args:
        return None
    return Search(kind, seg.args[0], tuple(seg.args[1:2]) or (".",))


def command_effects(command: str, cwd: str | None, roots: Sequence[str]) -> ActionEffects:
    """The effects of a shell command (module docstring), its paths made relative to the repository whose
    top folder is one of ``roots`` (``cwd``: the command's folder)."""
    fx = ActionEffects()
    if is_verification_command(command):
        for seg in segments(command):
            if is_verification_command(seg.text):
                fx.verifications.append(normalised_verification(seg))
        if not fx.verifications:  # a runner named in a way no single segment shows
            fx.verifications.append(" ".join(command.split()))
    # A program that may write files it does not name: only git's rewrites of the working tree are taken as
    # edits (of any file); other programs are listed as unrecognised.
    if rewrites_worktree(command):
        fx.edits.append("*")
    for seg in segments(command):
        written = segment_writes(seg)
        written = list(seg.writes_files) if written is None else written
        paths = [p for p in (_rel(w, cwd, roots) for w in written) if p]
        fx.edits.extend(paths)
        if seg.program in _REMOVERS:
            fx.removed.extend(paths)
        elif seg.program == "mv":
            fx.removed.extend(paths[1:])
            fx.created.extend(paths[:1])
        elif seg.program not in ("sed", "chmod"):
            fx.created.extend(paths)
    for target, _body in heredoc_targets(command):
        rel = _rel(target, cwd, roots)
        if rel:
            fx.writes_whole.append(rel)
    for r in file_reads(command):
        rel = _rel(r.path, cwd, roots)
        if rel:
            fx.reads.append(Read(rel, r.start, r.end, r.selector))
    fx.searches.extend(_scope(s, cwd, roots) for s in searches(command))
    for seg in segments(command):
        sub = git_subcommand(seg.args) if seg.program == "git" else None
        if sub in GIT_VIEWS:
            fx.reads.append(Read("git:" + " ".join(a for a in seg.args if a not in ("--no-pager",)), 1, None))
        found = _swe_agent_search(seg)
        if found:
            fx.searches.append(_scope(found, cwd, roots))
    for seg in segments(command):
        if seg.program is None or seg.program in NEUTRAL or is_output_filter(seg):
            continue
        if not _segment_recognised(seg):
            fx.unrecognised.append(seg.text)
    return fx


def _segment_recognised(seg: Segment) -> bool:
    """Whether one segment is read by a rule (a read, a search, a verification, a write it names)."""
    text = seg.text
    return bool(
        is_verification_command(text) or file_reads(text) or searches(text) or _swe_agent_search(seg)
        or (seg.program == "git" and git_subcommand(seg.args) in GIT_VIEWS)
        or segment_writes(seg) or rewrites_worktree(text)
    )


def event_effects(event: Event, observation: Event | None, roots: Sequence[str],
                  default_cwd: str | None = None) -> ActionEffects:
    """The effects of one action ``event`` (``observation``: the event that answers it, when recorded).

    Args:
        roots: absolute folders that stand for the repository's top folder.
        default_cwd: the folder of a command that records none (the run's working folder).
    """
    fx = ActionEffects()
    cwd = event.cwd or default_cwd
    if event.kind != "action" or event.not_applied or event.format_error:
        return fx
    if event.type == "command" and event.command and not event.process_input and not event.ipython:
        return command_effects(event.command, cwd, roots)
    if event.type == "command" and event.command:
        fx.unrecognised.append(event.command)
        return fx
    if event.type == "file_edit":
        if event.edit == "not_applied":
            return fx
        rel = _rel(event.path, cwd, roots) if event.path else "*"
        if rel:
            fx.edits.append(rel)
            if event.file_text is not None and event.edit in ("create", "write"):
                fx.writes_whole.append(rel)
                fx.created.append(rel)
        return fx
    if event.type == "file_view":
        text = event.text or ""
        claude_search = re.match(r"(Grep|Glob|LS)\b ?(.*?)(?: in (.*))?$", text) if event.path is None or \
            text.startswith(("Grep ", "Glob ", "LS")) else None
        if claude_search:
            tool, pattern = claude_search.group(1), claude_search.group(2) or ""
            where = _rel(event.path, cwd, roots) if event.path else "."
            kind = {"Grep": "content", "Glob": "names", "LS": "list"}[tool]
            fx.searches.append(Search(kind, "" if tool == "LS" else pattern, (where or ".",)))
            return fx
        if not event.path:
            return fx
        rel = _rel(event.path, cwd, roots)
        if rel is None:
            return fx
        if observation is not None and _FOLDER_LISTING.search(observation.text or "") and "." not in rel.rsplit(
                "/", 1)[-1]:
            fx.searches.append(Search("list", "", (rel,)))
            return fx
        start, end = 1, None
        if event.view_range and len(event.view_range) == 2:
            start, end = event.view_range[0], (None if event.view_range[1] in (-1, None) else event.view_range[1])
        fx.reads.append(Read(rel, max(start, 1), end))
    return fx
