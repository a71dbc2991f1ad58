"""When a command run again is the same run (docs/protocol.md section 9.1): its normal form, what its output
depends on besides the files (the time, randomness, the network), and whether it changes the environment
(installs packages).

Pure functions over strings, on the grammar of :mod:`takeover.commands.grammar`. The normal form keeps what
decides what a command does (its words, the files it redirects, the here-documents and input it is given) and
drops what only shapes how its output is shown (spacing, quoting, ``2>&1``, ``> /dev/null``, a trailing
``| head``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from takeover.commands.grammar import (
    PYTHON,
    program_of,
    redirects,
    segments,
    split_heredocs,
    split_segments,
    words,
)
from takeover.commands.runners import python_script

#: Programs that, at the end of a pipeline and without a file argument, only cut or page what it printed.
DISPLAY_FILTERS: frozenset[str] = frozenset({"head", "tail", "cat", "less", "more"})

#: Programs whose output depends on the time (``time`` also as the wrapper ``time cmd``).
TIME_PROGRAMS: frozenset[str] = frozenset({"date", "uptime", "time", "hyperfine", "timeit", "perf"})
#: Programs whose output depends on randomness.
RANDOM_PROGRAMS: frozenset[str] = frozenset({"shuf", "mktemp", "uuidgen"})
#: Programs that reach the network whatever their arguments.
NETWORK_PROGRAMS: frozenset[str] = frozenset({
    "curl", "wget", "ping", "ssh", "scp", "sftp", "rsync", "nc", "netcat", "telnet", "ftp", "dig", "nslookup",
    "host", "http", "https", "aria2c", "gh",
})
#: Package managers, and their subcommands that fetch from the network; the ones marked as changing the
#: environment (:data:`INSTALLING`) change what a later command can import or run.
PACKAGE_MANAGERS: dict[str, frozenset[str]] = {
    "pip": frozenset({"install", "download", "wheel", "index", "search"}),
    "pip3": frozenset({"install", "download", "wheel", "index", "search"}),
    "pipx": frozenset({"install", "run", "upgrade"}),
    "uv": frozenset({"pip", "add", "sync", "lock", "tool"}),
    "poetry": frozenset({"add", "install", "update", "lock"}),
    "conda": frozenset({"install", "create", "update", "search"}),
    "mamba": frozenset({"install", "create", "update", "search"}),
    "micromamba": frozenset({"install", "create", "update"}),
    "npm": frozenset({"install", "i", "ci", "add", "update", "upgrade", "view", "info"}),
    "pnpm": frozenset({"install", "i", "add", "update", "dlx"}),
    "yarn": frozenset({"install", "add", "upgrade", "dlx"}),
    "bun": frozenset({"install", "i", "add", "update", "x"}),
    "gem": frozenset({"install", "update", "fetch"}),
    "cargo": frozenset({"install", "fetch", "update", "add", "search"}),
    "go": frozenset({"get", "install", "mod"}),
    "apt": frozenset({"install", "update", "upgrade", "download"}),
    "apt-get": frozenset({"install", "update", "upgrade", "download", "source"}),
    "brew": frozenset({"install", "update", "upgrade", "fetch"}),
    "apk": frozenset({"add", "update", "upgrade", "fetch"}),
    "yum": frozenset({"install", "update", "upgrade"}),
    "dnf": frozenset({"install", "update", "upgrade"}),
    "composer": frozenset({"install", "require", "update"}),
    "git": frozenset({"clone", "fetch", "pull", "push", "ls-remote", "submodule"}),
}
#: Subcommands of :data:`PACKAGE_MANAGERS` that change the installed packages (the environment).
INSTALLING: frozenset[str] = frozenset({
    "install", "i", "ci", "add", "update", "upgrade", "sync", "uninstall", "remove", "rm", "create",
})
# In code a command runs (``python -c``, a here-document fed to an interpreter, a script the run wrote): calls
# whose result depends on the time, randomness or the network.
_TIME_CODE = re.compile(
    r"\b(?:time\.(?:time|time_ns|perf_counter|perf_counter_ns|monotonic|monotonic_ns|process_time|ctime|localtime"
    r"|gmtime|strftime|asctime)|datetime\.(?:now|today|utcnow)|date\.today|timeit\.)\s*\(|\bimport\s+timeit\b"
    r"|\$(?:SECONDS|EPOCHSECONDS|EPOCHREALTIME)\b")
_RANDOM_CODE = re.compile(
    r"\b(?:random\.\w+|uuid\.uuid[14]|secrets\.\w+|os\.urandom|randint|randn|rand)\s*\(|/dev/u?random\b"
    r"|\$S?RANDOM\b|\bopenssl\s+rand\b")
_NETWORK_CODE = re.compile(
    r"\b(?:urlopen|urlretrieve|create_connection|HTTPS?Connection|requests\.(?:get|post|put|patch|delete|head"
    r"|options|request)|httpx\.\w+|socket\.socket|smtplib\.SMTP\w*|ftplib\.FTP\w*)\s*\(|\baiohttp\.ClientSession\b")
# Interpreters whose first operand is a script file.
_SCRIPT_RUNNERS = frozenset({"bash", "sh", "zsh", "node", "ruby", "perl", "Rscript", "php"})


@dataclass(frozen=True)
class NormalForm:
    """A command as compared between runs: ``folder`` (the target of its leading ``cd`` segments, as written;
    ``None`` when it has none) and ``text`` (the rest: each segment's words joined by single spaces with its
    file redirections, the operators between segments, and every here-document's body)."""

    folder: str | None
    text: str


def normal_form(command: str) -> NormalForm:
    """The normal form of a shell command (docs/protocol.md section 9.1).

    Removed: spacing, quoting and line continuations (words are compared, not characters); redirections to a
    descriptor or to ``/dev/null`` (``2>&1``, ``>/dev/null``), ``|&`` read as ``|``; at the end of each
    pipeline, segments of :data:`DISPLAY_FILTERS` without a file argument (``| head -50``, ``| tail -n 20``,
    ``| cat``); the leading ``cd DIR`` segments, whose last target becomes :attr:`NormalForm.folder`. Kept:
    every other word (options, ``-c`` code, arguments), redirections to or from files, the operators, and
    the bodies of here-documents (input is part of the run), line ends trimmed.
    """
    text, docs = split_heredocs(command)
    parts: list[tuple[str, list[str], bool]] = []  # (operator, words with file redirections, only displays)
    pending: list[str] = []  # a reserved word alone on its line (``do``, ``then``): part of the next command
    for op, seg in split_segments(text):
        bare, redirs = redirects(seg)
        tokens = words(bare)
        if tokens in (["do"], ["then"], ["else"], ["{"]) and not redirs:
            pending += tokens
            continue
        tokens, pending = pending + tokens, []
        program, args = program_of(tokens)
        kept = [f"{r.fd}{r.op}{r.target}" for r in redirs if r.to_file]
        display = program in DISPLAY_FILTERS and not kept and not _file_operands(program, args)
        parts.append(("|" if op == "|&" else op, [*tokens, *kept], display))
    out = [(op, tokens) for n, (op, tokens, _display) in enumerate(parts)
           if not (op == "|" and all(d for o, _t, d in _pipeline_rest(parts, n)))]
    folder = None
    while out and out[0][1][:1] == ["cd"] and (len(out) == 1 or out[1][0] in ("&&", ";")):
        folder = out[0][1][1] if len(out[0][1]) > 1 else "~"
        out = [("", out[1][1]), *out[2:]] if len(out) > 1 else []
    body = " ".join(f"{op} {shlex.join(tokens)}" if op else shlex.join(tokens) for op, tokens in out)
    for doc in docs:
        body += "\n<<\n" + "\n".join(line.rstrip() for line in doc.body.split("\n")).strip("\n")
    return NormalForm(folder, body)


def _pipeline_rest(parts: Sequence[tuple[str, list[str], bool]], n: int) -> list[tuple[str, list[str], bool]]:
    """Segment ``n`` and the segments after it that its pipeline feeds."""
    rest = [parts[n]]
    for part in parts[n + 1:]:
        if part[0] != "|":
            break
        rest.append(part)
    return rest


def _file_operands(program: str | None, args: Sequence[str]) -> list[str]:
    """The file arguments of a display filter (``head -n 5`` has none; ``tail -f log`` has ``log``)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if program in ("head", "tail") and a in ("-n", "-c", "--lines", "--bytes"):
            i += 2
            continue
        if not a.startswith(("-", "+")):
            out.append(a)
        i += 1
    return out


def scripts_run(command: str) -> list[str]:
    """The script files a command runs, as written: ``python x.py`` (not ``-c``/``-m``), ``bash x.sh``,
    ``node x.js`` and the like, and a program given by a path (``./run.sh``); inside loops and blocks too."""
    out: list[str] = []
    for seg in segments(command):
        program, args = seg.program, seg.args
        if program is None:
            continue
        first = next((a for a in args if not a.startswith("-")), None)
        if PYTHON.match(program):
            script = python_script(seg.words)
            if script:
                out.append(script)
        elif program in _SCRIPT_RUNNERS and first and "-c" not in args:
            out.append(first)
        else:
            word = next((t for t in seg.words if t.rsplit("/", 1)[-1] == program), "")
            if "/" in word:
                out.append(word)
    return out


def varying_output(command: str, script_texts: Sequence[str] = ()) -> str | None:
    """What the output of ``command`` depends on besides the files it runs on: ``"time"``, ``"randomness"``
    or ``"network"`` (the first found, in that order), or ``None``.

    Recognised from the command's words and code (docs/protocol.md section 9.1): a program of
    :data:`TIME_PROGRAMS`, :data:`RANDOM_PROGRAMS` or :data:`NETWORK_PROGRAMS` (``time`` also as a
    wrapper), a package manager's subcommand that fetches (:data:`PACKAGE_MANAGERS`), ``python -m pip
    install``; in the command's text (its here-documents and ``-c`` code included) and ``script_texts`` (the
    text of the scripts it runs, where known), calls that read the clock (``time.time()``,
    ``datetime.now()``), draw random numbers (``random.choice()``, ``uuid.uuid4()``, ``$RANDOM``,
    ``/dev/urandom``) or open a connection (``urlopen()``, ``requests.get()``, ``socket.socket()``).
    """
    found: set[str] = set()
    for seg in segments(command):
        program, args = seg.program, seg.args
        leading = [t.rsplit("/", 1)[-1] for t in seg.words[: len(seg.words) - len(args)]]
        if program in TIME_PROGRAMS or "time" in leading:
            found.add("time")
        if program in RANDOM_PROGRAMS:
            found.add("randomness")
        if program in NETWORK_PROGRAMS or _fetches(program, args):
            found.add("network")
    code = "\n".join([command, *script_texts])
    for reason, pattern in (("time", _TIME_CODE), ("randomness", _RANDOM_CODE), ("network", _NETWORK_CODE)):
        if pattern.search(code):
            found.add(reason)
    return next((r for r in ("time", "randomness", "network") if r in found), None)


def _subcommand(args: Sequence[str]) -> str | None:
    return next((a for a in args if not a.startswith("-")), None)


def _fetches(program: str | None, args: Sequence[str]) -> bool:
    return program in PACKAGE_MANAGERS and _subcommand(args) in PACKAGE_MANAGERS[program]


def changes_environment(command: str) -> bool:
    """Whether ``command`` installs, updates or removes packages (a package manager's :data:`INSTALLING`
    subcommand, ``python setup.py install|develop``, ``make install``): what later commands can import or run
    is then another environment, whatever the files."""
    for seg in segments(command):
        program, args = seg.program, list(seg.args)
        sub = _subcommand(args)
        if program in PACKAGE_MANAGERS and program != "git" and (sub in INSTALLING or (
                program == "uv" and sub == "pip" and _subcommand(args[1:]) in INSTALLING)):
            return True
        if program is not None and PYTHON.match(program) and args[:2] in (["setup.py", "install"],
                                                                         ["setup.py", "develop"]):
            return True
        if program == "make" and "install" in args:
            return True
    return False
