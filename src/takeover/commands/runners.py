"""Commands that run verification: test runners, builders and linters (docs/protocol.md section 4.1).

Pure functions over strings, on the shell grammar of :mod:`takeover.commands.grammar`.
"""

from __future__ import annotations

import re

from takeover.commands.grammar import PYTHON, Segment, segments, strip_heredocs

_VERIFY_TOOLS = re.compile(
    r"(?<![\w./-])(pytest|py\.test|tox|nox|unittest|ruff|mypy)(?![\w-])"
    r"|\b(npm|pnpm|yarn|cargo|go|make|gradle|mvn)\s+test\b"
    r"|(^|[\s/])(tests/runtests\.py|bin/test)\b"
)
_SCRIPT_WORDS = re.compile(r"repro|reproduce|check|verify|validate|test", re.IGNORECASE)
# Options of the python interpreter that take a value (``-m mod`` and ``-c code`` end option parsing).
_PY_OPTS_WITH_VALUE = {"-W", "-X", "--check-hash-based-pycs"}

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


def python_script(tokens: tuple[str, ...] | list[str]) -> str | None:
    """The script path a ``python``/``python3`` segment (its words) runs, or ``None`` (``-c``/``-m`` run no
    script)."""
    i = 0
    # Skip leading environment assignments and wrappers such as ``timeout 60`` or ``env X=1``.
    while i < len(tokens) and not PYTHON.match(tokens[i]):
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


def _runs_a_runner(segment: Segment) -> bool:
    program, args = segment.program, list(segment.args)
    if program is None:
        return False
    if PYTHON.match(program):  # ``python manage.py test``
        script = python_script(segment.words)
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
    if _VERIFY_TOOLS.search(strip_heredocs(command)):
        return True
    for segment in segments(command):
        if _runs_a_runner(segment):
            return True
        if "python" not in segment.text:
            continue
        script = python_script(segment.words)
        if script and _SCRIPT_WORDS.search(script):
            return True
    return False


