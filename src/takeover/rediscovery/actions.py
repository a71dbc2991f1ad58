"""What one action of a run does, in the terms of rediscovery (docs/protocol.md section 9.1):
the files it reads (with the lines), the searches it runs, the verification commands it runs, the files it
edits (inside the repository and outside it), the packages it installs, and whether anything in it is not
recognised; and what identifies a shell command between runs (its folder and normal form).

Every recorded shape maps to these effects: shell commands by the grammar of :mod:`takeover.commands`
(mini-swe-agent, OpenHands and Claude Code ``Bash``, SWE-agent's own search tools), editor views and Claude
Code ``Read`` (``file_view`` with a path and lines), Claude Code ``Grep``/``Glob``/``LS`` and editor views of
a folder (searches), and every ``file_edit``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from takeover.commands import (
    Search,
    file_reads,
    is_verification_command,
    repo_path,
    rewrites_worktree,
    segments,
)
from takeover.commands.effects import READERS, heredoc_targets, is_output_filter, segment_writes
from takeover.commands.grammar import Segment, git_subcommand
from takeover.commands.repeats import NormalForm, changes_environment, normal_form, scripts_run
from takeover.commands.searches import segment_searches
from takeover.trajectories.events import Event

#: Programs that neither read, search, verify nor edit the repository's files: they change nothing a
#: successor could learn from the files (``cd``, ``echo`` without a redirection, ``pwd``...).
NEUTRAL: frozenset[str] = frozenset({
    "cd", "pwd", "echo", "printf", "true", "false", "clear", "sleep", "export", "set", "unset", "source", ".",
    "which", "type", "whoami", "date", "wc", "sort", "uniq", "cut", "tr", "column", "exit", ":", "read",
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
    created or removed: a listing or a name search over them may differ), ``outside`` (absolute paths of
    files written outside the repository: scratch files a later command may run), ``texts`` (path, repository-
    relative or absolute outside it, -> the text the action wrote into it: a here-document's body, an editor's
    new text), ``environment`` (the action installs or removes packages) and ``unrecognised`` (parts of a
    command none of the rules reads; a compound command's whole text when a part of it is such)."""

    reads: list[Read] = field(default_factory=list)
    searches: list[Search] = field(default_factory=list)
    verifications: list[str] = field(default_factory=list)
    edits: list[str] = field(default_factory=list)
    writes_whole: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    environment: bool = False
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


def _outside(path: str, cwd: str | None, roots: Sequence[str]) -> str | None:
    """The absolute path of a file outside the repository (``/tmp/x.py``), ``None`` for a file inside it or
    one whose folder is not known."""
    if repo_path(path, cwd, roots) is not None or path.startswith("~") or _computed(path):
        return None
    if not path.startswith("/"):
        if not (cwd and cwd.startswith("/")):
            return None
        path = posixpath.join(cwd, path)
    return posixpath.normpath(path)


def _computed(path: str) -> bool:
    """Whether a path is computed by the shell (``$f``, ``$(...)``): the file is not known."""
    return "$" in path or "`" in path


def file_key(path: str, cwd: str | None, roots: Sequence[str]) -> str | None:
    """How a file a command names is known between events: repository-relative inside the repository, an
    absolute path outside it, ``None`` when it cannot be told."""
    return _rel(path, cwd, roots) or _outside(path, cwd, roots)


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
    segs = segments(command)
    if is_verification_command(command):
        for seg in segs:
            if is_verification_command(seg.text):
                fx.verifications.append(normalised_verification(seg))
        if not fx.verifications:  # a runner named in a way no single segment shows
            fx.verifications.append(" ".join(command.split()))
    # A program that may write files it does not name: only git's rewrites of the working tree are taken as
    # edits (of any file); other programs are listed as unrecognised.
    if rewrites_worktree(command):
        fx.edits.append("*")
    fx.environment = changes_environment(command)
    unknown: set[int] = set()
    for i, seg in enumerate(segs):
        written = segment_writes(seg)
        written = list(seg.writes_files) if written is None else written
        if any(_computed(w) for w in written):
            unknown.add(i)
        paths = [p for p in (_rel(w, cwd, roots) for w in written if not _computed(w)) if p]
        fx.edits.extend(paths)
        fx.outside.extend(p for p in (_outside(w, cwd, roots) for w in written) if p)
        if seg.program in _REMOVERS:
            fx.removed.extend(paths)
        elif seg.program == "mv":
            fx.removed.extend(paths[1:])
            fx.created.extend(paths[:1])
        elif seg.program not in ("sed", "chmod"):
            fx.created.extend(paths)
    for target, body in heredoc_targets(command):
        key = file_key(target, cwd, roots)
        if key:
            fx.texts[key] = body
            if not key.startswith("/"):
                fx.writes_whole.append(key)
    for r in file_reads(command):
        rel = _rel(r.path, cwd, roots)
        if rel:
            fx.reads.append(Read(rel, r.start, r.end, r.selector))
    found = segment_searches(segs)
    fx.searches.extend(_scope(s, cwd, roots) for i in sorted(found) for s in found[i])
    for seg in segs:
        sub = git_subcommand(seg.args) if seg.program == "git" else None
        if sub in GIT_VIEWS:
            fx.reads.append(Read("git:" + " ".join(a for a in seg.args if a not in ("--no-pager",)), 1, None))
        swe_agent = _swe_agent_search(seg)
        if swe_agent:
            fx.searches.append(_scope(swe_agent, cwd, roots))
    blocks: list[str] = []
    for i, seg in enumerate(segs):
        if seg.program is None or seg.program in NEUTRAL or is_output_filter(seg) or _prints_its_input(seg):
            continue
        if i in unknown or not (i in found or _segment_recognised(seg)):
            if seg.block is None:
                fx.unrecognised.append(seg.text)
            elif seg.block not in blocks:  # a compound command is one command: listed once, whole
                blocks.append(seg.block)
                fx.unrecognised.append(seg.block)
    return fx


def _prints_its_input(seg: Segment) -> bool:
    """A reader given no file (``cat <<EOF | python``, ``cat -``): it prints its input, it reads no file."""
    return seg.program in READERS and seg.program != "sed" and not file_reads(seg.text) and not any(
        r.op == "<" for r in seg.redirects) and all(a.startswith("-") for a in seg.args)


def _segment_recognised(seg: Segment) -> bool:
    """Whether one segment is read by a rule (a read, a verification, a write it names; searches are told
    by :func:`takeover.commands.searches.segment_searches` over the whole command)."""
    text = seg.text
    return bool(
        is_verification_command(text) or file_reads(text) or _swe_agent_search(seg)
        or (seg.program == "git" and git_subcommand(seg.args) in GIT_VIEWS)
        or segment_writes(seg) or rewrites_worktree(text)
    )


def command_form(event: Event, roots: Sequence[str], default_cwd: str | None = None) -> tuple[str, NormalForm] | None:
    """What identifies a shell command between runs (docs/protocol.md section 9.1): the folder it runs in
    (repository-relative, or absolute outside the repository) and its normal form without its leading ``cd``
    (:func:`takeover.commands.repeats.normal_form`); ``None`` for an action that is no shell command (a
    message, an editor call, input to a running process, an IPython cell)."""
    if event.type != "command" or not event.command or event.process_input or event.ipython or event.not_applied \
            or event.format_error:
        return None
    form = normal_form(event.command)
    cwd = event.cwd or default_cwd
    folder = cwd or ""
    if form.folder is not None:
        folder = posixpath.normpath(posixpath.join(cwd or "", form.folder)) if not form.folder.startswith("~") \
            else form.folder
    where = repo_path(folder, None, roots) if folder.startswith("/") else None
    return (where if where is not None else folder), NormalForm(None, form.text)


def script_keys(command: str, cwd: str | None, roots: Sequence[str]) -> list[str]:
    """The files (as :func:`file_key` knows them) of the scripts a command runs (``python debug.py``)."""
    return [k for k in (file_key(p, cwd, roots) for p in scripts_run(command)) if k]


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
            text = event.file_text if event.file_text is not None else event.new_text
            if text is not None and rel != "*":
                fx.texts[rel] = text
        elif event.path and (out := _outside(event.path, cwd, roots)):
            fx.outside.append(out)
            text = event.file_text if event.file_text is not None else event.new_text
            if text is not None:
                fx.texts[out] = text
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
