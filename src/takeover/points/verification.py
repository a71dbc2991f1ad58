"""Verification commands, their results and git restore commands (docs/protocol.md section 4).

Pure functions over strings: no file system, no git. Every rule here is written down in docs/protocol.md;
where the protocol is silent, the choice is documented on the function ("extension").
"""

from __future__ import annotations

import re
import shlex

from takeover.vocabulary import VerificationResult

# --- verification commands (docs/protocol.md section 4) ---------------------------------------------------

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


def strip_heredocs(command: str) -> str:
    """``command`` with here-document bodies removed: text written into a file is not a command run.

    Extension: without this, ``cat <<'EOF' > t.py ... import pytest ... EOF`` would count as running pytest.
    """
    return _HEREDOC.sub(" ", command)


def _python_script(segment: str) -> str | None:
    """The script path a ``python``/``python3`` segment runs, or ``None`` (``-c``/``-m`` run no script)."""
    try:
        tokens = shlex.split(segment, posix=True)
    except ValueError:
        tokens = segment.split()
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


def is_verification_command(command: str | None) -> bool:
    """Whether a terminal command is a verification command (docs/protocol.md section 4).

    Matches test runners and linters (``pytest``, ``tox``, ``nox``, ``unittest``, ``python -m pytest``,
    ``python -m unittest``, ``ruff``, ``mypy``, ``npm|pnpm|yarn|cargo|go|make|gradle|mvn test``), project
    runners ``tests/runtests.py`` and ``bin/test`` (extension), or ``python``/``python3`` running a script
    whose path contains ``repro``, ``reproduce``, ``check``, ``verify``, ``validate`` or ``test``.
    Here-document bodies are ignored (extension, see :func:`strip_heredocs`).
    """
    if not command:
        return False
    text = strip_heredocs(command)
    if _VERIFY_TOOLS.search(text):
        return True
    for segment in _SEGMENT_SPLIT.split(text):
        if "python" not in segment:
            continue
        script = _python_script(segment)
        if script and _SCRIPT_WORDS.search(script):
            return True
    return False


# --- verification results (docs/protocol.md section 4) ----------------------------------------------------

FAILED_PATTERN = re.compile(
    r"assertionerror|traceback|failed|fail: true|pass: false|\d+ failed|error:|exception", re.IGNORECASE
)
PASSED_PATTERN = re.compile(
    r"all tests passed|tests? passed|pass: true|passed \d+|\d+ passed|\bok\b|successfully fixed|verified", re.IGNORECASE
)
EVIDENCE_LIMIT = 240  # characters, docs/protocol.md section 7 (structured notes: a failure line)


def verification_result(output: str | None, exit_code: int | None = None) -> VerificationResult:
    """Result of a verification command from its observation (docs/protocol.md section 4).

    ``failed`` if the output matches the failure pattern (checked first) or, extension, ``exit_code`` is
    non-zero; otherwise ``passed`` if the output matches the pass pattern or ``exit_code`` is 0; otherwise
    ``unknown`` (no signal, e.g. a format without exit codes and a silent script).
    """
    text = output or ""
    if FAILED_PATTERN.search(text):
        return "failed"
    if exit_code is not None and exit_code != 0:
        return "failed"
    if PASSED_PATTERN.search(text) or exit_code == 0:
        return "passed"
    return "unknown"


def failure_evidence(output: str | None, limit: int = EVIDENCE_LIMIT) -> str | None:
    """A failure line from a verification observation, at most ``limit`` characters (section 7).

    The last line matching the failure pattern (for a traceback this is the exception line, for pytest
    the summary line), stripped; ``None`` when no line matches.
    """
    best = None
    for line in (output or "").splitlines():
        if FAILED_PATTERN.search(line) and line.strip():
            best = line.strip()
    if best is None:
        return None
    return best if len(best) <= limit else best[: limit - 3] + "..."


# --- git commands that restore files (docs/protocol.md section 4, post-failure edit) ----------------------

_RESTORE_VERBS = {"stash", "restore", "checkout", "reset", "clean"}
_GIT_OPTS_WITH_VALUE = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"}


def is_git_restore_command(command: str | None) -> bool:
    """Whether a command runs ``git stash``, ``git restore``, ``git checkout``, ``git reset`` or ``git clean``.

    Such events are not counted as the post-failure edit (docs/protocol.md section 4). Global git options
    before the subcommand (``git -C dir checkout``) are skipped; here-document bodies are ignored.
    """
    if not command:
        return False
    for segment in _SEGMENT_SPLIT.split(strip_heredocs(command)):
        try:
            tokens = shlex.split(segment, posix=True)
        except ValueError:
            tokens = segment.split()
        for i, tok in enumerate(tokens):
            if tok.rsplit("/", 1)[-1] != "git":
                continue
            j = i + 1
            while j < len(tokens) and tokens[j].startswith("-"):
                j += 2 if tokens[j] in _GIT_OPTS_WITH_VALUE else 1
            if j < len(tokens) and tokens[j] in _RESTORE_VERBS:
                return True
    return False
