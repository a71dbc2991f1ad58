"""What a shell command does to the repository's files: what it reads, writes and restores, and whether it is
plainly read-only (docs/protocol.md sections 4.3 and 9.1). What it searches is :mod:`takeover.commands.searches`.

Pure functions over strings, on the grammar of :mod:`takeover.commands.grammar`. Paths are returned as
written; :func:`repo_path` makes them repository-relative.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from takeover.commands.grammar import Segment, git_subcommand, program_of, segments, split_heredocs

#: Programs that only read files (with the write options of ``sed``, ``awk``, ``find`` and ``git`` checked
#: apart).
READ_ONLY: frozenset[str] = frozenset({
    "cat", "bat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ag", "ack", "wc", "ls",
    "stat", "file", "diff", "cmp", "nl", "echo", "printf", "pwd", "cd", "tree", "which", "type", "sort",
    "uniq", "cut", "tr", "column", "true", "false", "test", "[", "realpath", "dirname", "basename", "date",
    "sed", "awk", "gawk", "find", "git", "xxd", "od", "hexdump", "md5sum", "sha256sum", "du", "df",
})
READ_ONLY_GIT: frozenset[str] = frozenset({
    "diff", "show", "log", "status", "blame", "grep", "ls-files", "ls-tree", "rev-parse", "describe",
    "shortlog", "cat-file", "reflog", "branch", "remote", "config", "help", "version", "whatchanged",
})
#: git subcommands that rewrite the working tree.
WORKTREE_GIT: frozenset[str] = frozenset({
    "checkout", "restore", "reset", "stash", "clean", "apply", "am", "merge", "rebase", "cherry-pick", "pull",
    "revert", "switch",
})
#: git subcommands that restore files (docs/protocol.md section 4.3).
RESTORE_GIT: frozenset[str] = frozenset({"stash", "restore", "checkout", "reset", "clean"})
#: Extension (docs/protocol.md section 4.3): suffixes of a backup copy; copying or moving one over the file
#: it was taken of (``cp a.py.bak a.py``, ``mv a.py.orig a.py``) restores that file.
BACKUP_SUFFIXES: tuple[str, ...] = (".bak", ".backup", ".orig", ".old", ".save", "~")
#: Programs that print files (whole, or a range for ``head``, ``tail``, ``sed -n``).
READERS: frozenset[str] = frozenset({"cat", "bat", "batcat", "nl", "less", "more", "head", "tail", "sed"})

_NUMBER = re.compile(r"^\d+$")
_SED_RANGE = re.compile(r"^\s*(\d+)\s*(?:,\s*(\d+|\$)\s*)?p\s*;?\s*(?:\d*q)?\s*$")


@dataclass(frozen=True)
class FileRead:
    """A file a command prints: ``path`` as written, and lines ``start``..``end`` (1-based, inclusive;
    ``end`` ``None``: to the end; ``start`` negative: the last ``-start`` lines); ``selector``: a ``sed``
    script that picks lines by pattern (``/def f/,/return/p``), ``""`` for a range of lines."""

    path: str
    start: int = 1
    end: int | None = None
    selector: str = ""


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


# --- writing and restoring ---------------------------------------------------------------------------------


def writes_by_option(program: str, args: Sequence[str]) -> bool:
    """Whether a reading program was given an option that makes it write (``sed -i``, ``find -delete``...)."""
    if program == "sed":
        return any(a.startswith(("-i", "--in-place")) or re.fullmatch(r"-[a-hj-zA-Z]*i\S*", a) for a in args)
    if program in ("awk", "gawk"):
        return "inplace" in args
    if program == "find":
        return _find_writes(args)
    if program == "git":
        return git_subcommand(args) not in READ_ONLY_GIT
    return False


def _find_writes(args: Sequence[str]) -> bool:
    """Whether a ``find`` call writes: ``-delete``, ``-fprint``/``-fprintf``/``-fls``, or an ``-exec`` (or
    ``-execdir``, ``-ok``, ``-okdir``) of a program that is not plainly read-only (``-exec grep -l x {} ;``
    only reads)."""
    if any(a in ("-delete", "-fprint", "-fprint0", "-fprintf", "-fls") for a in args):
        return True
    for i, a in enumerate(args):
        if a in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(args) and args[j] not in (";", "+"):
                j += 1
            program, rest = program_of(args[i + 1 : j])
            if program is None or program not in READ_ONLY or writes_by_option(program, rest):
                return True
    return False


def _segment_read_only(seg: Segment) -> bool:
    if any(r.op.startswith(">") and r.to_file for r in seg.redirects):
        return False
    return not seg.program or (seg.program in READ_ONLY and not writes_by_option(seg.program, seg.args))


def is_read_only(command: str | None) -> bool:
    """Whether every segment of ``command`` runs a reading program (:data:`READ_ONLY`, without a write
    option) with no output redirection other than to ``/dev/null`` or another descriptor."""
    return all(_segment_read_only(s) for s in segments(command))


def rewrites_worktree(command: str | None) -> bool:
    """Whether ``command`` runs a git subcommand that rewrites the working tree (:data:`WORKTREE_GIT`)."""
    return any(s.program == "git" and git_subcommand(s.args) in WORKTREE_GIT for s in segments(command))


def is_git_restore_command(command: str | None) -> bool:
    """Whether a command runs ``git stash``, ``git restore``, ``git checkout``, ``git reset`` or ``git clean``
    (docs/protocol.md section 4.3), in any segment, after git's global options and any wrapper."""
    for seg in segments(command):
        tokens = seg.words
        for i, tok in enumerate(tokens):
            if tok.rsplit("/", 1)[-1] == "git" and git_subcommand(tokens[i + 1 :]) in RESTORE_GIT:
                return True
    return False


def _restores_backup(seg: Segment) -> bool:
    """``cp``/``mv`` of a backup copy onto the file it was taken of: the source's file name is the
    destination's plus a :data:`BACKUP_SUFFIXES` suffix (case-insensitive), or the destination is a folder
    (ends with ``/`` or is ``.``) and the source's name ends with such a suffix."""
    if seg.program not in ("cp", "mv"):
        return False
    paths = [a for a in seg.args if not a.startswith("-")]
    if len(paths) != 2:
        return False
    source, target = (p.rstrip("/").rsplit("/", 1)[-1] for p in paths)
    lower = source.lower()
    suffix = next((s for s in BACKUP_SUFFIXES if lower.endswith(s)), None)
    if suffix is None:
        return False
    if paths[1] in (".", "./") or paths[1].endswith("/"):
        return True
    return source[: len(source) - len(suffix)] == target


def is_restore_command(command: str | None) -> bool:
    """Whether a command undoes work: git's restoring commands (:func:`is_git_restore_command`) or,
    extension, copying a backup over the file it was taken of (``cp a.py.bak a.py``, ``mv a.py.orig
    a.py``, :data:`BACKUP_SUFFIXES`). Such events are not counted as the post-failure edit
    (docs/protocol.md section 4.3); here-document bodies are ignored.
    """
    return is_git_restore_command(command) or any(_restores_backup(s) for s in segments(command))


def _paths(args: Sequence[str]) -> list[str]:
    return [a for a in args if not a.startswith("-")]


def segment_writes(seg: Segment) -> list[str] | None:
    """Files one segment writes, as written (see :func:`written_files`); ``None`` when it may write files it
    does not name."""
    out = list(seg.writes_files)
    program, args = seg.program, list(seg.args)
    if program is None or _segment_read_only(seg) or (program in READ_ONLY and program not in ("sed", "awk", "gawk",
                                                                                             "git")):
        return out
    paths = _paths(args)
    if program == "sed" and writes_by_option(program, args):
        out.extend(_sed_files(args))
    elif program == "tee":
        out.extend(paths)
    elif program in ("cp", "mv", "install") and len(paths) >= 2:
        out.append(paths[-1])
        if program == "mv":
            out.extend(paths[:-1])
    elif program in ("rm", "touch", "truncate", "mkdir", "rmdir", "chmod"):
        out.extend(p for p in paths if not _NUMBER.match(p) and "=" not in p)
    else:
        return None
    return out


def written_files(command: str | None) -> list[str] | None:
    """Files ``command`` writes, as written: output redirections, ``tee``, ``sed -i``, ``cp``/``mv``/``install``
    destinations, ``rm``, ``touch``, ``truncate``; ``[]`` for a read-only command; ``None`` when it may write
    files it does not name (a script, ``git checkout``, ``patch``, any program this grammar does not know)."""
    out: list[str] = []
    for seg in segments(command):
        found = segment_writes(seg)
        if found is None:
            return None
        out.extend(found)
    return out


# --- reading and searching ---------------------------------------------------------------------------------


def _sed_files(args: Sequence[str]) -> list[str]:
    """The files of a ``sed`` call: its arguments after the script (``-e``/``-f`` give the script)."""
    rest: list[str] = []
    script_given = False
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-e", "--expression", "-f", "--file"):
            script_given = True
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        rest.append(a)
        i += 1
    return rest if script_given else rest[1:]


def _sed_script(args: Sequence[str]) -> str | None:
    for i, a in enumerate(args):
        if a in ("-e", "--expression") and i + 1 < len(args):
            return args[i + 1]
    rest = [a for a in args if not a.startswith("-")]
    return rest[0] if rest else None


def _count(args: Sequence[str], default: int) -> tuple[int, bool, list[str]]:
    """``head``/``tail`` options: (lines, from the start for ``tail -n +N``, the file arguments);
    ``-c`` (bytes) is taken as the whole file's read."""
    n, plus, files = default, False, []
    i = 0
    while i < len(args):
        a = args[i]
        value = None
        if a in ("-n", "--lines") and i + 1 < len(args):
            value, i = args[i + 1], i + 2
        elif a.startswith("--lines="):
            value, i = a.split("=", 1)[1], i + 1
        elif a.startswith("-n") and len(a) > 2:
            value, i = a[2:], i + 1
        elif re.fullmatch(r"-\d+", a):
            value, i = a[1:], i + 1
        elif a in ("-c", "--bytes") and i + 1 < len(args):
            return -1, False, [x for x in args[i + 2 :] if not x.startswith("-")]
        elif a.startswith("-"):
            i += 1
        else:
            files.append(a)
            i += 1
        if value is not None:
            plus = value.startswith("+")
            digits = value.lstrip("+-")
            n = int(digits) if digits.isdigit() else default
    return n, plus, files


def _segment_reads(seg: Segment) -> list[FileRead]:
    program, args = seg.program, list(seg.args)
    inputs = [r.target for r in seg.redirects if r.op == "<" and r.to_file]
    if program not in READERS:
        return []
    reads = _reader_reads(program, args, inputs)
    # A file computed by the shell (``cat $f``, ``head $(ls *.py)``): what it reads is not known.
    return [] if any("$" in r.path or "`" in r.path for r in reads) else reads


def _reader_reads(program: str, args: list[str], inputs: list[str]) -> list[FileRead]:
    if program == "sed":
        if writes_by_option(program, args):
            return []
        script = _sed_script(args) or ""
        files = _sed_files(args) or inputs
        m = _SED_RANGE.match(script) if "-n" in args or "--quiet" in args else None
        if m:
            start = int(m.group(1))
            end = None if m.group(2) == "$" else int(m.group(2) or start)
            return [FileRead(f, start, end) for f in files]
        if "-n" in args and re.search(r"p\s*;?\s*}?\s*$", script):
            return [FileRead(f, 1, None, " ".join(script.split())) for f in files]
        return [FileRead(f) for f in files] if "-n" not in args else []
    if program in ("head", "tail"):
        n, plus, files = _count(args, 10)
        files = files or inputs
        if n < 0:
            return [FileRead(f) for f in files]
        if program == "head":
            return [FileRead(f, 1, n) for f in files]
        return [FileRead(f, n, None) if plus else FileRead(f, -n, None) for f in files]
    files = _paths(args) if program != "nl" else [a for a in _paths(args)]
    return [FileRead(f) for f in (files or inputs)]


def file_reads(command: str | None) -> list[FileRead]:
    """Files ``command`` prints (:data:`READERS`: ``cat``, ``nl``, ``head``, ``tail``, ``sed -n 'A,Bp'``, ``sed``
    without ``-n``/``-i``), with the lines printed; a reader fed by a pipe reads no file."""
    out: list[FileRead] = []
    last: list[FileRead] = []
    for seg in segments(command):
        if seg.piped and is_output_filter(seg):
            narrowed = [_narrow(r, seg) for r in last]
            out[len(out) - len(last):] = narrowed
            last = narrowed
            continue
        last = _segment_reads(seg)
        out.extend(last)
    return out


#: Programs that, fed by a pipe without a file argument, only filter what the previous segment printed.
OUTPUT_FILTERS: frozenset[str] = frozenset({
    "head", "tail", "sed", "grep", "egrep", "fgrep", "rg", "wc", "sort", "uniq", "cut", "tr", "awk", "gawk", "less",
    "more", "cat", "nl", "column", "tee", "fold", "fmt",
})


def is_output_filter(seg: Segment) -> bool:
    """Whether a piped segment only filters its input: an :data:`OUTPUT_FILTERS` program with no file argument
    (``tee`` writes its files: those are a write, see :func:`written_files`)."""
    if not seg.piped or seg.program not in OUTPUT_FILTERS or writes_by_option(seg.program, seg.args):
        return False
    if seg.program in ("sed", "awk", "gawk", "grep", "egrep", "fgrep", "rg"):
        return len(_paths(seg.args)) <= 1
    if seg.program in ("head", "tail"):
        return not _count(list(seg.args), 10)[2]
    return seg.program == "tee" or not _paths(seg.args)


def _narrow(read: FileRead, seg: Segment) -> FileRead:
    """A read whose output went through ``seg`` (``head -n N``, ``sed -n 'A,Bp'`` on numbered lines)."""
    args = list(seg.args)
    if read.start < 0:
        return read
    if seg.program == "head":
        n = _count(args, 10)[0]
        if n > 0:
            end = read.start + n - 1
            return FileRead(read.path, read.start, end if read.end is None else min(end, read.end))
    if seg.program == "sed" and ("-n" in args or "--quiet" in args):
        m = _SED_RANGE.match(_sed_script(args) or "")
        if m and read.start == 1:
            start = int(m.group(1))
            end = None if m.group(2) == "$" else int(m.group(2) or start)
            if read.end is not None:
                end = read.end if end is None else min(end, read.end)
            return FileRead(read.path, start, end)
    return read


def heredoc_targets(command: str | None) -> list[tuple[str, str]]:
    """``(file, body)`` for each here-document written into a file (``cat > f <<EOF``, ``cat <<EOF > f``)."""
    out: list[tuple[str, str]] = []
    for doc in split_heredocs(command or "")[1]:
        for seg in segments(doc.line):
            for target in seg.writes_files:
                out.append((target, doc.body))
    return out
