"""The shell grammar every rule about commands reads: here-documents, command segments, words, redirections,
the program a segment runs and git's subcommand.

Pure functions over strings (no file system, no process). A command is what an agent sent to a shell; a
*segment* is one simple command of it, cut at ``&&``, ``||``, ``;``, ``|`` and line breaks outside quotes,
``$(...)`` and here-documents. The program of a segment is found after variable assignments, wrappers
(:data:`WRAPPERS`, ``timeout DURATION``) and launchers (``npx``, ``uv run``, ``python -m``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

#: Words that run the rest of the segment as another command (``sudo pytest``, ``env X=1 cat f``,
#: ``stdbuf -oL pytest``, ``xvfb-run -a pytest``, ``builtin cd``); their own options are skipped.
WRAPPERS: frozenset[str] = frozenset({
    "env", "time", "nohup", "sudo", "nice", "stdbuf", "command", "builtin", "exec", "xvfb-run", "timeout",
})
#: Options of a wrapper whose value is the next word (``nice -n 5``, ``sudo -u user``).
_WRAPPER_OPTS_WITH_VALUE: dict[str, frozenset[str]] = {
    "nice": frozenset({"-n", "--adjustment"}),
    "sudo": frozenset({"-u", "-g", "--user", "--group", "-C", "-D"}),
    "env": frozenset({"-u", "--unset", "-C", "--chdir"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "xvfb-run": frozenset({"-s", "--server-args", "-n", "--server-num", "-e", "--error-file", "-f", "--auth-file",
                           "-p", "--xauth-protocol"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
}
#: Wrappers followed by a value before the command (``timeout 60 pytest``).
_WRAPPERS_WITH_ARGUMENT = frozenset({"timeout"})
#: Words that run the next word as the program: ``npx jest``.
LAUNCHERS: frozenset[str] = frozenset({"npx", "bunx", "pnpx"})
#: Tools whose ``run`` subcommand runs the next word: ``uv run pytest``.
RUN_LAUNCHERS: frozenset[str] = frozenset({"uv", "poetry", "pipenv", "pdm", "hatch", "rye"})
#: git's global options whose value is the next word (``git -C dir status``).
GIT_OPTS_WITH_VALUE: frozenset[str] = frozenset({
    "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path",
})

PYTHON = re.compile(r"^(?:.*/)?python(?:3(?:\.\d+)?)?$")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_HEREDOC_START = re.compile(r"<<(-?)[ \t]*(['\"]?)([\w.-]+)\2")
_OUTPUT_REDIRECT = re.compile(r"(?<![<>&])(\d*|&)(>>?\|?)[ \t]*(&\d+|&-|[^\s;&|<>()]+)")
_INPUT_REDIRECT = re.compile(r"(?<![<\d&])(\d*)<(?![<(&])[ \t]*([^\s;&|<>()]+)")


@dataclass(frozen=True)
class HereDocument:
    """One here-document: ``marker`` (its delimiter), ``body`` (the text between the lines) and ``line`` (the
    command line that opened it, without its body)."""

    marker: str
    body: str
    line: str


def split_heredocs(command: str) -> tuple[str, list[HereDocument]]:
    """``command`` without its here-document bodies (each ``<<MARK`` replaced by a space, the rest of its line
    kept), and the here-documents in order. A document without its closing line runs to the end."""
    out: list[str] = []
    docs: list[HereDocument] = []
    lines = command.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        markers = list(_HEREDOC_START.finditer(line))
        if not markers or _quoted_at(line, markers[0].start()):
            out.append(line)
            i += 1
            continue
        out.append(_HEREDOC_START.sub(" ", line))
        i += 1
        for m in markers:
            body: list[str] = []
            strip_tabs = m.group(1) == "-"
            while i < len(lines) and (lines[i].lstrip("\t") if strip_tabs else lines[i]).strip() != m.group(3):
                body.append(lines[i])
                i += 1
            i += 1  # the closing line
            docs.append(HereDocument(m.group(3), "\n".join(body), line))
    return "\n".join(out), docs


def strip_heredocs(command: str) -> str:
    """``command`` with here-document bodies removed: text written into a file is not a command run
    (``cat <<'EOF' > t.py ... import pytest ... EOF`` runs no pytest)."""
    return split_heredocs(command)[0]


def _quoted_at(text: str, pos: int) -> bool:
    """Whether position ``pos`` of ``text`` is inside quotes."""
    quote = None
    escaped = False
    for ch in text[:pos]:
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
    return quote is not None


def split_segments(text: str) -> list[tuple[str, str]]:
    """``text`` (here-documents already removed) cut into ``(operator before, segment)`` pairs at ``&&``,
    ``||``, ``;``, ``|``, ``&`` (not a redirection's) and line breaks outside quotes and ``$(...)``;
    backslash-newline joins lines. The first operator is ``""``; empty segments are dropped."""
    pieces: list[tuple[str, str]] = []
    buf: list[str] = []
    op = ""
    quote: str | None = None
    depth = 0
    i = 0
    n = len(text)

    def flush(next_op: str) -> None:
        nonlocal op
        seg = "".join(buf).strip()
        if seg:
            pieces.append((op, seg))
        buf.clear()
        op = next_op

    while i < n:
        ch = text[i]
        if ch == "\\" and quote != "'":
            if i + 1 < n and text[i + 1] == "\n":
                i += 2
                continue
            buf.append(text[i : i + 2])
            i += 2
            continue
        if quote:
            quote = None if ch == quote else quote
            buf.append(ch)
        elif ch in "'\"`":
            quote = ch
            buf.append(ch)
        elif ch == "$" and text.startswith("$(", i):
            depth += 1
            buf.append("$(")
            i += 2
            continue
        elif ch == ")" and depth:
            depth -= 1
            buf.append(ch)
        elif depth:
            buf.append(ch)
        elif text.startswith(("&&", "||"), i):
            flush(text[i : i + 2])
            i += 2
            continue
        elif ch == "|" and not (buf and buf[-1] == ">"):
            flush("|&" if text.startswith("|&", i) else "|")
            i += 2 if text.startswith("|&", i) else 1
            continue
        elif ch in ";\n":
            flush(";")
        elif ch == "&" and not (buf and buf[-1] in "<>") and not text.startswith("&>", i):
            flush("&")
        else:
            buf.append(ch)
        i += 1
    flush("")
    return pieces


def words(segment: str) -> list[str]:
    """Shell words of one segment (quotes removed); on unbalanced quotes, split at blanks."""
    try:
        return shlex.split(segment, posix=True)
    except ValueError:
        return segment.split()


@dataclass(frozen=True)
class Redirect:
    """One redirection of a segment: ``op`` (``>``, ``>>``, ``<``), ``fd`` (the descriptor written, ``""`` for
    the default) and ``target`` (a path, ``/dev/null`` or ``&N``)."""

    op: str
    fd: str
    target: str

    @property
    def to_file(self) -> bool:
        """Whether the redirection names a file (not a descriptor, not ``/dev/null``)."""
        return not self.target.startswith("&") and self.target != "/dev/null"


@dataclass(frozen=True)
class Segment:
    """One simple command: its ``text`` (as written), the ``operator`` before it (``|`` when it reads the
    previous segment's output), its ``words`` (redirections removed), its ``redirects``, and ``program`` and
    ``args`` after assignments, wrappers and launchers (``program`` is a file name, ``None`` for a segment
    of assignments only)."""

    text: str
    operator: str
    words: tuple[str, ...]
    redirects: tuple[Redirect, ...]
    program: str | None
    args: tuple[str, ...]

    @property
    def piped(self) -> bool:
        """Whether the segment's input is the previous segment's output."""
        return self.operator in ("|", "|&")

    @property
    def writes_files(self) -> tuple[str, ...]:
        """Files the segment's output redirections write."""
        return tuple(r.target for r in self.redirects if r.op.startswith(">") and r.to_file)


def redirects(segment: str) -> tuple[str, tuple[Redirect, ...]]:
    """``segment`` with its redirections removed (outside quotes), and the redirections in order."""
    found: list[tuple[int, Redirect]] = []

    def out(m: re.Match[str]) -> str:
        if _quoted_at(segment, m.start()):
            return m.group(0)
        found.append((m.start(), Redirect(m.group(2).rstrip("|"), m.group(1), m.group(3))))
        return " "

    def inp(m: re.Match[str]) -> str:
        if _quoted_at(segment, m.start()):
            return m.group(0)
        found.append((m.start(), Redirect("<", m.group(1), m.group(2))))
        return " "

    text = _OUTPUT_REDIRECT.sub(out, segment)
    text = _INPUT_REDIRECT.sub(inp, text)
    return text, tuple(r for _, r in sorted(found, key=lambda p: p[0]))


def program_of(tokens: list[str] | tuple[str, ...]) -> tuple[str | None, list[str]]:
    """``(program, its arguments)`` of one segment's words: variable assignments, wrappers (``timeout 60``,
    ``env X=1``, ``sudo -u u``, ``stdbuf -oL``, ``xvfb-run -a``, ``builtin``) and launchers (``npx``,
    ``uv run``, ``python -m``) skipped; the program by its file name. ``(None, [])`` when no word is left."""
    toks = list(tokens)
    i = 0
    while i < len(toks):
        word = toks[i]
        name = word.rsplit("/", 1)[-1]
        if ASSIGNMENT.match(word):
            i += 1
        elif name in WRAPPERS:
            with_value = _WRAPPER_OPTS_WITH_VALUE.get(name, frozenset())
            i += 1
            while i < len(toks) and (toks[i].startswith("-") or ASSIGNMENT.match(toks[i])):
                i += 2 if toks[i] in with_value else 1
            if name in _WRAPPERS_WITH_ARGUMENT:
                i += 1
        elif name in LAUNCHERS:
            i += 1
            while i < len(toks) and toks[i].startswith("-"):
                i += 1
        elif name in RUN_LAUNCHERS and i + 1 < len(toks) and toks[i + 1] == "run":
            i += 2
            while i < len(toks) and toks[i].startswith("-"):
                i += 1
        elif PYTHON.match(word) and i + 2 < len(toks) and toks[i + 1] == "-m":
            return toks[i + 2], toks[i + 3 :]
        elif PYTHON.match(word) and i + 1 < len(toks) and toks[i + 1].startswith("-m") and len(toks[i + 1]) > 2:
            return toks[i + 1][2:], toks[i + 2 :]
        else:
            return name, toks[i + 1 :]
    return None, []


def segments(command: str | None) -> list[Segment]:
    """The segments of ``command`` (here-document bodies removed), each with its program and redirections."""
    out: list[Segment] = []
    for op, text in split_segments(strip_heredocs(command or "")):
        bare, redirs = redirects(text)
        tokens = words(bare)
        program, args = program_of(tokens)
        out.append(Segment(text, op, tuple(tokens), redirs, program, tuple(args)))
    return out


def git_subcommand(args: list[str] | tuple[str, ...]) -> str | None:
    """git's subcommand from its arguments, after global options (``-C dir``, ``-c k=v``, ``--no-pager``)."""
    j = 0
    while j < len(args) and args[j].startswith("-"):
        j += 2 if args[j] in GIT_OPTS_WITH_VALUE else 1
    return args[j] if j < len(args) else None


def git_arguments(args: list[str] | tuple[str, ...]) -> list[str]:
    """The arguments after git's subcommand."""
    j = 0
    while j < len(args) and args[j].startswith("-"):
        j += 2 if args[j] in GIT_OPTS_WITH_VALUE else 1
    return list(args[j + 1 :])
