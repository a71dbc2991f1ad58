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
from dataclasses import dataclass, field

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
    return [(op, seg) for op, seg, _start, _end in _split(text)]


def _split(text: str) -> list[tuple[str, str, int, int]]:
    """:func:`split_segments` with each segment's span in ``text`` (``start``, ``end``)."""
    pieces: list[tuple[str, str, int, int]] = []
    buf: list[str] = []
    op = ""
    quote: str | None = None
    depth = 0
    start = 0
    i = 0
    n = len(text)

    def flush(next_op: str, end: int) -> None:
        nonlocal op
        seg = "".join(buf).strip()
        if seg:
            span = text[start:end]
            pieces.append((op, seg, start + len(span) - len(span.lstrip()), end - len(span) + len(span.rstrip())))
        buf.clear()
        op = next_op

    while i < n:
        if not buf:
            start = i
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
            flush(text[i : i + 2], i)
            i += 2
            continue
        elif ch == "|" and not (buf and buf[-1] == ">"):
            flush("|&" if text.startswith("|&", i) else "|", i)
            i += 2 if text.startswith("|&", i) else 1
            continue
        elif ch in ";\n":
            flush(";", i)
        elif ch == "&" and not (buf and buf[-1] in "<>") and not text.startswith("&>", i):
            flush("&", i)
        else:
            buf.append(ch)
        i += 1
    flush("", n)
    return pieces


def command_substitutions(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, inner command)`` of each outermost command substitution of ``text`` (``$(...)`` and
    backquotes) outside single quotes, in order."""
    out: list[tuple[int, int, str]] = []
    quote: str | None = None
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\" and quote != "'":
            i += 2
            continue
        if quote == "'":
            quote = None if ch == "'" else quote
        elif text.startswith("$(", i) and not text.startswith("$((", i):
            depth, j = 1, i + 2
            while j < n and depth:
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                j += 1
            out.append((i, j, text[i + 2 : j - 1]))
            i = j
            continue
        elif ch == "`":
            j = text.find("`", i + 1)
            j = n if j < 0 else j
            out.append((i, min(j + 1, n), text[i + 1 : j]))
            i = j + 1
            continue
        elif ch == "'" and quote is None:
            quote = "'"
        elif ch == '"':
            quote = None if quote == '"' else '"'
        i += 1
    return out


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
    """One simple command: its ``text`` (as written, without the reserved words of a compound command before
    it), the ``operator`` before it (``|`` when it reads the previous segment's output), its ``words``
    (redirections removed), its ``redirects``, and ``program`` and ``args`` after assignments, wrappers and
    launchers (``program`` is a file name, ``None`` for a segment of assignments only); ``block``: the text
    of the outermost compound command (``for``/``while``/``until``/``select`` loop, ``if``, ``case``,
    ``{ ...; }``) the segment is part of, ``None`` outside one."""

    text: str
    operator: str
    words: tuple[str, ...]
    redirects: tuple[Redirect, ...]
    program: str | None
    args: tuple[str, ...]
    block: str | None = None

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
    """The segments of ``command`` (here-document bodies removed), each with its program and redirections.

    A compound command is read through: the reserved words before a command (``if``, ``then``, ``else``,
    ``elif``, ``do``, ``while``, ``until``, ``!``, ``{``) are not part of it, a loop's header (``for f in
    ...``) and the closing words (``done``, ``fi``, ``esac``, ``}``) are no segment, a ``case`` pattern
    (``a)``) is not part of the command after it, and each segment names its outermost compound command
    (:attr:`Segment.block`). The body of a ``for`` loop over literal words (``for f in a.py b.py``) is
    repeated once per word with ``$f``/``${f}`` replaced (outside single quotes); over anything else
    (``$(ls)``, ``*.py``) it is kept once, its variable unexpanded.
    """
    out: list[Segment] = []
    for op, text, block in _compound_pieces(strip_heredocs(command or "")):
        bare, redirs = redirects(text)
        tokens = words(bare)
        program, args = program_of(tokens)
        out.append(Segment(text, op, tuple(tokens), redirs, program, tuple(args), block))
    return out


# --- compound commands -------------------------------------------------------------------------------------

#: Reserved words that open a compound command, and the word that closes it.
_OPENERS: dict[str, str] = {"if": "fi", "while": "done", "until": "done", "{": "}"}
_PREFIX = re.compile(r"^(if|then|else|elif|do|while|until|!|\{)(?=\s|$)\s*")
_CLOSER = re.compile(r"^(fi|done|esac|\})(?=[\s;&|<>)]|$)\s*")
_LOOP_HEADER = re.compile(r"^(?:for|select)\s+([A-Za-z_][A-Za-z0-9_]*)(?:\s+in\b(.*))?$", re.DOTALL)
_CASE_HEADER = re.compile(r"^case\s+\S+\s+in(?=\s|$)\s*")
_CASE_PATTERN = re.compile(r"^\(?[^\s()]*\)\s*")
_LITERAL_WORD = re.compile(r"^[\w./:@%+=,-]+$")
#: At most this many words of a loop are expanded (a longer list is kept once, unexpanded).
_MAX_LOOP_WORDS = 100


@dataclass
class _Frame:
    """An open compound command: the word that closes it, where it starts, a literal loop's variable and
    words, and the pieces read inside it so far."""

    closer: str
    start: int
    var: str | None = None
    values: tuple[str, ...] | None = None
    pieces: list[tuple[str, str]] = field(default_factory=list)


def _compound_pieces(text: str) -> list[tuple[str, str, str | None]]:
    """``(operator, command text, block)`` for each command of ``text``: :func:`split_segments` read through
    compound commands (see :func:`segments`)."""
    out: list[tuple[str, str, str | None]] = []
    stack: list[_Frame] = []

    def close(frame: _Frame, end: int) -> None:
        pieces = frame.pieces
        if frame.var is not None and frame.values is not None:
            pieces = [(o, substitute(t, frame.var, v)) for v in frame.values for o, t in pieces]
        if stack:
            stack[-1].pieces.extend(pieces)
        else:
            out.extend((o, t, text[frame.start:end]) for o, t in pieces)

    for op, seg, start, end in _split(text):
        rest = seg
        closer = _CLOSER.match(rest)
        if closer:
            rest = rest[closer.end():]
            if stack:
                frame = stack.pop()
                if rest:  # redirections of the whole compound command (``done < list``, ``} > out``)
                    frame.pieces.append((op, rest))
                close(frame, end)
                continue
        while (prefix := _PREFIX.match(rest)) is not None:
            if prefix.group(1) in _OPENERS:
                stack.append(_Frame(_OPENERS[prefix.group(1)], start))
            rest = rest[prefix.end():]
        loop = _LOOP_HEADER.match(rest)
        if loop:
            values = tuple(words(loop.group(2))) if loop.group(2) is not None else None
            literal = values is not None and len(values) <= _MAX_LOOP_WORDS and all(
                _LITERAL_WORD.match(v) for v in values)
            stack.append(_Frame("done", start, loop.group(1), values if literal else None))
            continue
        case = _CASE_HEADER.match(rest)
        if case:
            stack.append(_Frame("esac", start))
            rest = rest[case.end():]
        if stack and stack[-1].closer == "esac":
            rest = _CASE_PATTERN.sub("", rest, count=1)
        if rest:
            (stack[-1].pieces if stack else out).append((op, rest) if stack else (op, rest, None))  # type: ignore[arg-type]
    while stack:  # a compound command cut short: what was read of it
        close(stack.pop(), len(text))
    return out


def substitute(text: str, name: str, value: str) -> str:
    """``text`` with the shell variable ``name`` (``$name``, ``${name}``) replaced by ``value``, outside single
    quotes."""
    pattern = re.compile(r"\$(?:\{" + re.escape(name) + r"\}|" + re.escape(name) + r"(?![A-Za-z0-9_]))")
    out: list[str] = []
    quote = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote != "'" and (m := pattern.match(text, i)):
            out.append(value)
            i = m.end()
            continue
        if ch == "\\" and quote != "'" and i + 1 < len(text):
            out.append(text[i : i + 2])
            i += 2
            continue
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        out.append(ch)
        i += 1
    return "".join(out)


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
