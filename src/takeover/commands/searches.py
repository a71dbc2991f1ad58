"""What a shell command searches (docs/protocol.md section 9.1): content searches (``grep`` and its kin, and the
idioms that hand them files: ``find -exec grep``, ``find | xargs grep``, ``grep ... $(find ...)``), name
searches (``find``, ``git ls-files``, ``ag -g``) and folder listings (``ls``, ``tree``).

Pure functions over strings, on the grammar of :mod:`takeover.commands.grammar`. Scopes are returned as
written; the caller makes them repository-relative.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from takeover.commands.grammar import (
    Segment,
    command_substitutions,
    git_arguments,
    git_subcommand,
    program_of,
    redirects,
    segments,
    words,
)

#: Programs that search file contents for a pattern.
CONTENT_SEARCHERS: frozenset[str] = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack"})
#: Programs that list files.
LISTERS: frozenset[str] = frozenset({"ls", "tree"})

_GREP_WITH_VALUE = frozenset({
    "-A", "-B", "-C", "-m", "--max-count", "--context", "--after-context", "--before-context", "-d",
    "--directories", "-D", "--devices", "--binary-files", "--label", "--exclude", "--exclude-dir",
    "--exclude-from", "--max-depth", "--threads",
})
#: Options of each tool whose value is the next word (pattern, filter and type options apart).
_WITH_VALUE: dict[str, frozenset[str]] = {
    "grep": _GREP_WITH_VALUE,
    "rg": frozenset({
        "-A", "-B", "-C", "-m", "--max-count", "--context", "--after-context", "--before-context", "-T",
        "--type-not", "-M", "--max-columns", "-j", "--threads", "--color", "--colors", "--max-depth", "-d",
        "--type-add", "--type-clear", "-E", "--encoding", "--ignore-file", "-r", "--replace", "--sort",
        "--sortr", "--max-filesize", "--pre", "--pre-glob", "--path-separator", "--context-separator", "--engine",
    }),
    "ag": frozenset({
        "-A", "-B", "-C", "-m", "--max-count", "--context", "--after", "--before", "--ignore", "--ignore-dir",
        "-p", "--path-to-ignore", "--depth", "--color-line-number", "--color-match", "--color-path", "--pager",
        "-W", "--width",
    }),
    "ack": frozenset({
        "-A", "-B", "-C", "-m", "--max-count", "--context", "--after-context", "--before-context",
        "--ignore-dir", "--noignore-dir", "--ignore-file", "--output", "--color-filename", "--color-match",
        "--color-lineno", "--pager", "--type-add", "--type-set",
    }),
}
#: Options that give the pattern.
_PATTERN_OPTS: dict[str, frozenset[str]] = {"ack": frozenset({"-e", "--regexp", "--match"})}
_DEFAULT_PATTERN_OPTS = frozenset({"-e", "--regexp"})
#: Options that read the patterns from a file (the search's pattern is ``file:<path>``).
_PATTERN_FILE_OPTS = frozenset({"-f", "--file"})
#: Options whose value narrows the files searched by name (a ``filter:`` entry of the scope).
_FILTER_OPTS: dict[str, frozenset[str]] = {
    "grep": frozenset({"--include"}), "rg": frozenset({"-g", "--glob", "--iglob"}),
    "ag": frozenset({"-G", "--file-search-regex"}),
}
#: Options whose value narrows the files searched by type (a ``filter:type:`` entry).
_TYPE_OPTS: dict[str, frozenset[str]] = {"rg": frozenset({"-t", "--type"}), "ack": frozenset({"-t", "--type"})}
#: Options that make the tool search file names for their value instead of contents.
_NAME_OPTS: dict[str, frozenset[str]] = {"ag": frozenset({"-g"}), "ack": frozenset({"-g"})}
#: ``find`` tests on names and types (a name search's pattern); ``-name``/``-iname`` also filter a content
#: search the found files are handed to.
_FIND_NAME_TESTS = frozenset({"-name", "-iname", "-path", "-ipath", "-regex", "-iregex", "-type", "-wholename"})
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# ``xargs`` options whose value is the next word.
_XARGS_WITH_VALUE = frozenset({
    "-n", "--max-args", "-L", "--max-lines", "-P", "--max-procs", "-s", "--max-chars", "-d", "--delimiter",
    "-E", "-I", "-a", "--arg-file",
})


@dataclass(frozen=True)
class Search:
    """A search a command runs: ``kind`` (``content``: files whose text matches ``pattern``; ``names``: file
    names matching ``pattern``; ``list``: a folder's listing), the ``pattern`` (``""`` for a listing) and the
    ``scope``: the paths searched, as written (``.`` when none is named), and file filters (``filter:*.py``
    for ``--include``, ``-g``, ``find -name``; ``filter:type:py`` for ``rg -t``, ``ack --type``)."""

    kind: str
    pattern: str
    scope: tuple[str, ...]


def _paths(args: Sequence[str]) -> list[str]:
    return [a for a in args if not a.startswith("-")]


def _unknown(path: str) -> bool:
    """Whether a path is computed by the shell (a variable, a command substitution): the files are unknown."""
    return "$" in path or "`" in path


def content_search(tool: str, args: Sequence[str]) -> Search | None:
    """The search of a content searcher (``grep``, ``egrep``, ``fgrep``, ``rg``, ``ag``, ``ack``, ``git`` for
    ``git grep``) run with ``args``: its pattern (the first operand, or ``-e``), the paths after it (``.``
    when none) and its filters; ``None`` without a pattern or when a path is computed by the shell."""
    key = "grep" if tool in ("egrep", "fgrep", "git") else tool
    with_value = _WITH_VALUE.get(key, _GREP_WITH_VALUE)
    pattern_opts = _PATTERN_OPTS.get(key, _DEFAULT_PATTERN_OPTS)
    filter_opts, type_opts = _FILTER_OPTS.get(key, frozenset()), _TYPE_OPTS.get(key, frozenset())
    name_opts = _NAME_OPTS.get(key, frozenset())
    pattern: str | None = None
    names: str | None = None
    rest: list[str] = []
    filters: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            rest.extend(args[i + 1 :])
            break
        opt, eq, attached = a.partition("=") if a.startswith("--") else (a, "", "")
        takes = opt in pattern_opts | _PATTERN_FILE_OPTS | filter_opts | type_opts | name_opts | with_value
        if takes:
            if not eq and i + 1 >= len(args):
                break
            value = attached if eq else args[i + 1]
            i += 1 if eq else 2
            if opt in pattern_opts:
                pattern = value
            elif opt in _PATTERN_FILE_OPTS:
                pattern = f"file:{value}"
            elif opt in filter_opts:
                filters.append(value)
            elif opt in type_opts:
                filters.append(f"type:{value}")
            elif opt in name_opts:
                names = value
            continue
        if a.startswith("-") and len(a) > 1:
            i += 1
        else:
            rest.append(a)
            i += 1
    if names is not None:
        pattern, rest = names, ([pattern] if pattern else []) + rest
    elif pattern is None:
        if not rest:
            return None
        pattern, rest = rest[0], rest[1:]
    if any(_unknown(p) for p in rest):
        return None
    return Search("names" if names is not None else "content", pattern,
                  tuple(rest or ["."]) + tuple(f"filter:{f}" for f in filters))


@dataclass(frozen=True)
class _Find:
    """A ``find`` call: its ``roots``, its name and type ``tests`` (``-name *.py``), the globs of its
    ``-name``/``-iname`` tests, and the command of its ``-exec`` (``None`` without one)."""

    roots: tuple[str, ...]
    tests: tuple[str, ...]
    globs: tuple[str, ...]
    exec_words: tuple[str, ...] | None


def _find(args: Sequence[str]) -> _Find:
    roots: list[str] = []
    tests: list[str] = []
    globs: list[str] = []
    exec_words: list[str] | None = None
    i = 0
    while i < len(args) and not args[i].startswith(("-", "(", "!")):
        roots.append(args[i])
        i += 1
    while i < len(args):
        a = args[i]
        if a in _FIND_NAME_TESTS and i + 1 < len(args):
            tests.append(f"{a} {args[i + 1]}")
            if a in ("-name", "-iname"):
                globs.append(args[i + 1])
            i += 2
        elif a in _FIND_EXEC:
            j = i + 1
            while j < len(args) and args[j] not in (";", "+"):
                j += 1
            exec_words = list(args[i + 1 : j])
            i = j + 1
        else:
            i += 1
    return _Find(tuple(roots or ["."]), tuple(tests), tuple(globs), None if exec_words is None else tuple(exec_words))


def _handed(search: Search, roots: Sequence[str], globs: Sequence[str]) -> Search:
    """``search`` run over the files another command found: the finder's roots and name filters, and the
    search's own filters."""
    own = tuple(s for s in search.scope if s.startswith("filter:"))
    return Search(search.kind, search.pattern, tuple(roots) + tuple(f"filter:{g}" for g in globs) + own)


def _searcher(tokens: Sequence[str]) -> tuple[str, list[str]] | None:
    """``(tool, arguments)`` when ``tokens`` run a content searcher (``git grep`` included), else ``None``."""
    program, args = program_of(list(tokens))
    if program in CONTENT_SEARCHERS:
        return program, args
    if program == "git" and git_subcommand(args) == "grep":
        return "git", git_arguments(args)
    return None


def _exec_search(found: _Find) -> Search | None:
    """The content search a ``find -exec grep PATTERN {} ;`` runs over the files found."""
    run = _searcher(found.exec_words or ())
    if run is None:
        return None
    search = content_search(run[0], [a for a in run[1] if a != "{}"])
    return None if search is None else _handed(search, found.roots, found.globs)


def _finder_scope(seg: Segment) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """``(roots, name filters)`` of the files a pipeline's first segment lists for ``xargs``: ``find`` (without
    ``-exec``), ``git ls-files``, or a content search that lists the files it matched (``grep -l``)."""
    if seg.program == "find":
        found = _find(seg.args)
        return None if found.exec_words is not None else (found.roots, found.globs)
    if seg.program == "git" and git_subcommand(seg.args) == "ls-files":
        specs = _paths(git_arguments(seg.args))
        globs = tuple(s for s in specs if any(c in s for c in "*?["))
        return tuple(s for s in specs if s not in globs) or (".",), globs
    run = _searcher(seg.words) if seg.program in CONTENT_SEARCHERS or seg.program == "git" else None
    if run and any(a in ("-l", "--files-with-matches") or (a.startswith("-") and not a.startswith("--") and "l" in a)
                   for a in run[1]):
        search = content_search(*run)
        if search is not None:
            return tuple(s for s in search.scope if not s.startswith("filter:")), tuple(
                s.removeprefix("filter:") for s in search.scope if s.startswith("filter:"))
    return None


def _xargs_command(args: Sequence[str]) -> list[str]:
    """The command ``xargs`` runs, after its own options."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _XARGS_WITH_VALUE else 1
    return list(args[i:])


def _substituted_search(seg: Segment) -> Search | None | bool:
    """The search of a content searcher whose files are a command substitution (``grep -n x $(find . -name
    '*.py')``, ``$(git ls-files)``): ``False`` when the segment has no substitution, ``None`` when a
    substitution is of another command (the files are unknown)."""
    subs = command_substitutions(seg.text)
    if not subs:
        return False
    text, scopes = seg.text, []
    for n, (start, end, inner) in reversed(list(enumerate(subs))):
        inner_segs = segments(inner)
        scope = _finder_scope(inner_segs[0]) if len(inner_segs) == 1 else None
        if scope is None:
            return None
        scopes.append(scope)
        text = text[:start] + f" __found{n}__ " + text[end:]
    run = _searcher(words(redirects(text)[0]))
    search = content_search(run[0], [a for a in run[1] if not a.startswith("__found")]) if run else None
    if search is None:
        return None
    roots = [r for rs, _ in scopes for r in rs]
    globs = [g for _, gs in scopes for g in gs]
    return _handed(search, roots, globs)


def segment_searches(segs: Sequence[Segment]) -> dict[int, list[Search]]:
    """The searches of a command's segments, by the index of the segment that runs each. A segment that only
    lists files for another's search (the ``find`` of ``find | xargs grep``) maps to ``[]``; a segment that
    searches nothing is absent."""
    out: dict[int, list[Search]] = {}
    for i, seg in enumerate(segs):
        program, args = seg.program, list(seg.args)
        if program in CONTENT_SEARCHERS and not (seg.piped and len(_paths(args)) <= 1):
            found = _substituted_search(seg)
            found = content_search(program, args) if found is False else found
            if found:
                out[i] = [found]
        elif program == "git" and git_subcommand(args) == "grep":
            found = content_search("git", git_arguments(args))
            if found:
                out[i] = [found]
        elif program == "xargs" and seg.piped:
            run = _searcher(_xargs_command(args))
            first = i
            while first > 0 and segs[first].piped:
                first -= 1
            scope = _finder_scope(segs[first]) if run else None
            found = content_search(run[0], [a for a in run[1] if a != "{}"]) if run and scope else None
            if found and scope:
                out[i] = [_handed(found, *scope)]
                feeder = segs[first]
                if feeder.program == "find" or (feeder.program == "git" and git_subcommand(feeder.args) == "ls-files"):
                    out[first] = []  # its listing goes to xargs, not to the agent
        elif program == "git" and git_subcommand(args) == "ls-files":
            out[i] = [Search("names", " ".join(_paths(git_arguments(args))), (".",))]
        elif program == "find":
            found_call = _find(args)
            if found_call.exec_words is None:
                out[i] = [Search("names", " ".join(found_call.tests), found_call.roots)]
            elif (search := _exec_search(found_call)) is not None:
                out[i] = [search]
        elif program in LISTERS and not seg.piped and not any(_unknown(p) for p in _paths(args)):
            out[i] = [Search("list", "", tuple(_paths(args) or ["."]))]
    return out


def searches(command: str | None) -> list[Search]:
    """Searches ``command`` runs over the repository's files, in order: ``grep``/``egrep``/``fgrep``/``rg``/
    ``ag``/``ack`` and ``git grep`` (``content``; a searcher fed by a pipe searches no file), with the files
    ``find -exec``, ``find | xargs``, ``$(find ...)`` or ``$(git ls-files)`` hand them; ``find``,
    ``git ls-files``, ``ag -g``/``ack -g`` (``names``); ``ls`` and ``tree`` (``list``). The ``find`` or
    ``git ls-files`` that hands its files to ``xargs`` is no search of its own."""
    found = segment_searches(segments(command))
    return [s for i in sorted(found) for s in found[i]]
