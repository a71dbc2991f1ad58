"""Verification commands, their results and restoring commands (docs/protocol.md section 4).

Pure functions over strings: no file system, no git. Every rule here is written down in docs/protocol.md;
where the protocol is silent, the choice is documented on the function ("extension").
"""

from __future__ import annotations

import re
import shlex

from takeover.points.runner_summaries import summaries
from takeover.vocabulary import VerificationResult

# --- verification commands (docs/protocol.md section 4.1) -------------------------------------------------

_VERIFY_TOOLS = re.compile(
    r"(?<![\w./-])(pytest|py\.test|tox|nox|unittest|ruff|mypy)(?![\w-])"
    r"|\b(npm|pnpm|yarn|cargo|go|make|gradle|mvn)\s+test\b"
    r"|(^|[\s/])(tests/runtests\.py|bin/test)\b"
)
_SCRIPT_WORDS = re.compile(r"repro|reproduce|check|verify|validate|test", re.IGNORECASE)
_PYTHON = re.compile(r"^(?:.*/)?python(?:3(?:\.\d+)?)?$")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1[^\n]*\n.*?\n\s*\2[ \t]*(?=\n|$)", re.DOTALL)
_SEGMENT_SPLIT = re.compile(r"&&|\|\||[;|\n]")
# Options of the python interpreter that take a value (``-m mod`` and ``-c code`` end option parsing).
_PY_OPTS_WITH_VALUE = {"-W", "-X", "--check-hash-based-pycs"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")

#: Extension (docs/protocol.md section 4.1): programs that run tests, builds or linters wherever they are
#: the program of a command segment, whatever their arguments.
RUNNER_PROGRAMS: frozenset[str] = frozenset({
    # tests
    "pytest", "py.test", "tox", "nox", "jest", "vitest", "mocha", "ava", "karma", "ctest", "phpunit", "rspec",
    # builds and type checks
    "tsc", "vue-tsc", "webpack",
    # linters
    "ruff", "mypy", "flake8", "pylint", "pyright", "eslint", "golangci-lint", "stylelint", "shellcheck",
})
#: Extension: programs that run tests, builds or linters when their first argument (a subcommand) is one of
#: these; ``make`` without a target builds.
RUNNER_SUBCOMMANDS: dict[str, frozenset[str]] = {
    "cargo": frozenset({"test", "build", "check", "clippy", "nextest", "bench"}),
    "go": frozenset({"test", "build", "vet"}),
    "make": frozenset({"test", "tests", "check", "lint", "build", "all"}),
    "deno": frozenset({"test", "check", "lint"}),
    "anchor": frozenset({"test", "build"}),
    "forge": frozenset({"test", "build"}),
    "hardhat": frozenset({"test", "compile"}),
    "truffle": frozenset({"test", "compile"}),
    "playwright": frozenset({"test"}),
    "gradle": frozenset({"test", "check", "build"}),
    "gradlew": frozenset({"test", "check", "build"}),
    "mvn": frozenset({"test", "verify", "package", "compile"}),
    "mvnw": frozenset({"test", "verify", "package", "compile"}),
    "dotnet": frozenset({"test", "build"}),
    "vite": frozenset({"build"}),
    "next": frozenset({"build", "lint"}),
    "biome": frozenset({"check", "lint", "ci"}),
    "black": frozenset({"--check"}),
    "prettier": frozenset({"--check"}),
    "django-admin": frozenset({"test"}),
}
#: Extension: package-script names (``npm run NAME``, ``pnpm NAME``, ``yarn NAME``, ``bun run NAME``) that run
#: tests, builds or linters; ``NAME:anything`` counts too (``test:unit``, ``lint:ci``).
RUNNER_SCRIPTS: frozenset[str] = frozenset({"test", "tests", "build", "lint", "typecheck", "type-check", "tsc",
                                            "check", "ci", "e2e", "vitest", "jest"})
_PACKAGE_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun"})
# Words that run the next word as the program: ``npx jest``, ``uv run pytest``, ``timeout 60 pytest``.
_LAUNCHERS = frozenset({"npx", "bunx", "pnpx"})
_RUN_LAUNCHERS = frozenset({"uv", "poetry", "pipenv", "pdm", "hatch", "rye"})
_WRAPPERS = frozenset({"env", "time", "nohup", "sudo", "nice", "stdbuf", "command", "exec", "xvfb-run"})
_WRAPPERS_WITH_VALUE = frozenset({"timeout"})


def strip_heredocs(command: str) -> str:
    """``command`` with here-document bodies removed: text written into a file is not a command run.

    Extension: without this, ``cat <<'EOF' > t.py ... import pytest ... EOF`` would count as running pytest.
    """
    return _HEREDOC.sub(" ", command)


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment, posix=True)
    except ValueError:
        return segment.split()


def _python_script(segment: str) -> str | None:
    """The script path a ``python``/``python3`` segment runs, or ``None`` (``-c``/``-m`` run no script)."""
    tokens = _words(segment)
    i = 0
    # Skip leading environment assignments and wrappers such as ``timeout 60`` or ``env X=1``.
    while i < len(tokens) and not _PYTHON.match(tokens[i]):
        i += 1
    if i >= len(tokens):
        return None
    i += 1
    while i < len(tokens):
        tok = tokens[i]
        if tok in ("-c", "-m") or tok.startswith(("-c", "-m")) and len(tok) > 2 and tok[1] in "cm":
            return None
        if tok in _PY_OPTS_WITH_VALUE:
            i += 2
            continue
        if tok.startswith("-"):
            i += 1
            continue
        return tok
    return None


def _program(words: list[str]) -> tuple[str | None, list[str]]:
    """``(program, its arguments)`` of one segment: variable assignments, wrappers (``timeout 60``, ``env``,
    ``sudo``) and launchers (``npx``, ``uv run``, ``python -m``) skipped; the program by its file name."""
    i = 0
    while i < len(words):
        word = words[i]
        name = word.rsplit("/", 1)[-1]
        if _ASSIGNMENT.match(word):
            i += 1
        elif name in _WRAPPERS:
            i += 1
            while i < len(words) and (words[i].startswith("-") or _ASSIGNMENT.match(words[i])):
                i += 1
        elif name in _WRAPPERS_WITH_VALUE:
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 2 if words[i] in ("-s", "--signal", "-k", "--kill-after") else 1
            i += 1  # the duration
        elif name in _LAUNCHERS:
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 1
        elif name in _RUN_LAUNCHERS and i + 1 < len(words) and words[i + 1] == "run":
            i += 2
            while i < len(words) and words[i].startswith("-"):
                i += 1
        elif _PYTHON.match(word) and i + 1 < len(words) and words[i + 1] == "-m" and i + 2 < len(words):
            return words[i + 2], words[i + 3:]
        elif _PYTHON.match(word) and i + 1 < len(words) and words[i + 1].startswith("-m") and len(words[i + 1]) > 2:
            return words[i + 1][2:], words[i + 2:]
        else:
            return name, words[i + 1:]
    return None, []


def _runs_package_script(program: str, args: list[str]) -> bool:
    """``npm test``, ``npm run test:unit``, ``pnpm lint``, ``yarn build``, ``bun test``, ``bun run typecheck``,
    ``pnpm exec jest``, ``pnpm dlx vitest``: a package script of :data:`RUNNER_SCRIPTS`, or a tool of the
    tables run through the package manager."""
    rest = [a for a in args if not a.startswith("-")]
    if not rest:
        return False
    verb = rest[0]
    if program == "npm" and verb in ("test", "t", "tst"):
        return True
    if verb in ("exec", "dlx", "x") and len(rest) > 1:
        return _runs_tool(rest[1].rsplit("/", 1)[-1], rest[2:])
    if verb in ("run", "run-script"):
        if len(rest) < 2:
            return False
        script, more = rest[1], rest[2:]
    elif program in ("pnpm", "yarn", "bun"):
        script, more = verb, rest[1:]
    else:
        return False
    return script.split(":", 1)[0] in RUNNER_SCRIPTS or _runs_tool(script, more)


# ``make`` options whose value is the next word.
_MAKE_OPTS_WITH_VALUE = frozenset({"-C", "-f", "-I", "-o", "-W", "--directory", "--file", "--makefile"})


def _make_target(args: list[str]) -> str | None:
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _MAKE_OPTS_WITH_VALUE:
            i += 2
        elif arg.startswith("-") or "=" in arg:
            i += 1
        else:
            return arg
    return None


def _runs_tool(program: str, args: list[str]) -> bool:
    """Whether ``program args`` runs a test runner, builder or linter (the tables above)."""
    if program in RUNNER_PROGRAMS:
        return True
    if program == "make":
        target = _make_target(args)
        return target is None or target in RUNNER_SUBCOMMANDS["make"]
    if program in RUNNER_SUBCOMMANDS:
        wanted = RUNNER_SUBCOMMANDS[program]
        sub = next((a for a in args if a in wanted or not a.startswith(("-", "+"))), None)
        return sub in wanted
    if program in _PACKAGE_MANAGERS:
        return _runs_package_script(program, args)
    # Django's own runner run as a program: ``./manage.py test``.
    return program == "manage.py" and bool(args) and args[0] == "test"


def _runs_a_runner(segment: str) -> bool:
    program, args = _program(_words(segment))
    if program is None:
        return False
    if _PYTHON.match(program):  # ``python manage.py test``
        script = _python_script(segment)
        if not script or script.rsplit("/", 1)[-1] != "manage.py" or script not in args:
            return False
        after = args[args.index(script) + 1:]
        return bool(after) and after[0] == "test"
    return _runs_tool(program, args)


def is_verification_command(command: str | None) -> bool:
    """Whether a terminal command is a verification command (docs/protocol.md section 4.1).

    The paper's rules: test runners and linters named anywhere as whole words (``pytest``, ``tox``,
    ``nox``, ``unittest``, ``python -m pytest``, ``python -m unittest``, ``ruff``, ``mypy``,
    ``npm|pnpm|yarn|cargo|go|make|gradle|mvn test``), project runners ``tests/runtests.py`` and ``bin/test``
    (extension), or ``python``/``python3`` running a script whose path contains ``repro``, ``reproduce``,
    ``check``, ``verify``, ``validate`` or ``test``. Extension: a command segment whose program runs the
    tests, the build or a linter of a common ecosystem (:data:`RUNNER_PROGRAMS`, :data:`RUNNER_SUBCOMMANDS`,
    package scripts :data:`RUNNER_SCRIPTS`, ``python manage.py test``), after assignments, wrappers and
    launchers (``npx``, ``uv run``, ``python -m``). Here-document bodies are ignored (extension, see
    :func:`strip_heredocs`).
    """
    if not command:
        return False
    text = strip_heredocs(command)
    if _VERIFY_TOOLS.search(text):
        return True
    for segment in _SEGMENT_SPLIT.split(text):
        if not segment.strip():
            continue
        if _runs_a_runner(segment):
            return True
        if "python" not in segment:
            continue
        script = _python_script(segment)
        if script and _SCRIPT_WORDS.search(script):
            return True
    return False


# --- verification results (docs/protocol.md section 4.2) --------------------------------------------------

FAILED_PATTERN = re.compile(
    r"assertionerror|traceback|(?<![a-z])failed|fail: true|pass: false|\d+ failed|error:|exception", re.IGNORECASE
)
PASSED_PATTERN = re.compile(
    r"all tests passed|tests? passed|pass: true|passed \d+|\d+ passed|\bok\b|successfully fixed|verified", re.IGNORECASE
)
EVIDENCE_LIMIT = 240  # characters, docs/protocol.md section 7 (structured notes: a failure line)


def verification_result(output: str | None, exit_code: int | None = None) -> VerificationResult:
    """Result of a verification command from its observation (docs/protocol.md section 4.2).

    Extension: when the output holds summary lines of a test runner, builder or linter
    (:func:`takeover.points.runner_summaries.summaries`), they decide: ``failed`` if one reports a failure
    or ``exit_code`` is positive; else ``passed`` if one reports a success; else ``unknown`` (nothing ran).
    Otherwise the paper's order: ``failed`` if the output matches the failure pattern (checked first;
    ``failed`` not inside a word such as ``xfailed``) or, extension, ``exit_code`` is non-zero; ``passed`` if
    it matches the pass pattern or ``exit_code`` is 0; otherwise ``unknown`` (no signal).
    """
    text = output or ""
    found = summaries(text)
    if found:
        if any(s.verdict == "failed" for s in found) or (exit_code is not None and exit_code > 0):
            return "failed"
        return "passed" if any(s.verdict == "passed" for s in found) else "unknown"
    if FAILED_PATTERN.search(text):
        return "failed"
    if exit_code is not None and exit_code != 0:
        return "failed"
    if PASSED_PATTERN.search(text) or exit_code == 0:
        return "passed"
    return "unknown"


def _clip(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[: limit - 3] + "..."


def failure_evidence(output: str | None, limit: int = EVIDENCE_LIMIT) -> str | None:
    """A failure line from a verification observation, at most ``limit`` characters (section 7).

    The last summary line that reports a failure (extension: :func:`verification_result`), else the last
    line matching the failure pattern (for a traceback the exception line, for pytest the summary line),
    stripped; ``None`` when no line matches.
    """
    failing = [s.line for s in summaries(output) if s.verdict == "failed"]
    if failing:
        return _clip(failing[-1], limit)
    best = None
    for line in (output or "").splitlines():
        if FAILED_PATTERN.search(line) and line.strip():
            best = line.strip()
    return None if best is None else _clip(best, limit)


# --- commands that restore files (docs/protocol.md section 4.3, post-failure edit) ------------------------

_RESTORE_VERBS = {"stash", "restore", "checkout", "reset", "clean"}
_GIT_OPTS_WITH_VALUE = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"}
#: Extension (docs/protocol.md section 4.3): suffixes of a backup copy; copying or moving one over the file
#: it was taken of (``cp a.py.bak a.py``, ``mv a.py.orig a.py``) restores that file.
BACKUP_SUFFIXES: tuple[str, ...] = (".bak", ".backup", ".orig", ".old", ".save", "~")


def is_git_restore_command(command: str | None) -> bool:
    """Whether a command runs ``git stash``, ``git restore``, ``git checkout``, ``git reset`` or ``git clean``.

    Global git options before the subcommand (``git -C dir checkout``) are skipped; here-document bodies
    are ignored.
    """
    if not command:
        return False
    for segment in _SEGMENT_SPLIT.split(strip_heredocs(command)):
        tokens = _words(segment)
        for i, tok in enumerate(tokens):
            if tok.rsplit("/", 1)[-1] != "git":
                continue
            j = i + 1
            while j < len(tokens) and tokens[j].startswith("-"):
                j += 2 if tokens[j] in _GIT_OPTS_WITH_VALUE else 1
            if j < len(tokens) and tokens[j] in _RESTORE_VERBS:
                return True
    return False


def _restores_backup(segment: str) -> bool:
    """``cp``/``mv`` of a backup copy onto the file it was taken of: the source's file name is the
    destination's plus a :data:`BACKUP_SUFFIXES` suffix (case-insensitive), or the destination is a folder
    (ends with ``/`` or is ``.``) and the source's name ends with such a suffix."""
    program, args = _program(_words(segment))
    if program not in ("cp", "mv"):
        return False
    paths = [a for a in args if not a.startswith("-")]
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
    if is_git_restore_command(command):
        return True
    return any(_restores_backup(s) for s in _SEGMENT_SPLIT.split(strip_heredocs(command or "")) if s.strip())
