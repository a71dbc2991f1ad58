"""File classes, verification commands and verification results (docs/protocol.md sections 3, 4).

Pure functions over strings: no file system, no git. Every rule here is written down in docs/protocol.md;
where the protocol is silent, the choice is documented on the function ("extension").
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection

from takeover.vocabulary import FileClass, VerificationResult

#: docs/protocol.md section 3: suffixes of source files.
SOURCE_SUFFIXES: frozenset[str] = frozenset(
    {".py", ".js", ".jsx", ".ts", ".tsx", ".java", ".go", ".rs", ".c", ".cc", ".cpp", ".h", ".hpp", ".cs",
     ".rb", ".php", ".scala", ".kt"}
)
#: docs/protocol.md section 3.2: a top-level file, or a file in a top-level folder the agent created, whose
#: name starts with one of these is a scratch file.
SCRATCH_PREFIXES: tuple[str, ...] = ("reproduce", "repro", "scratch", "tmp", "debug")
#: docs/protocol.md section 3.3: folders of generated output, wherever they are in a path.
GENERATED_FOLDERS: frozenset[str] = frozenset(
    {"__pycache__", "_build", ".eggs", ".tox", ".nox", ".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
)
#: docs/protocol.md section 3.3: top-level folders of generated output (``build/``, ``dist/``).
GENERATED_TOP_FOLDERS: frozenset[str] = frozenset({"build", "dist"})
#: docs/protocol.md section 3.3: folder suffixes of generated package metadata.
GENERATED_FOLDER_SUFFIXES: tuple[str, ...] = (".egg-info", ".dist-info")
#: docs/protocol.md section 3.3: suffixes of compiled files.
GENERATED_SUFFIXES: frozenset[str] = frozenset({".pyc", ".pyo", ".so", ".pyd", ".o", ".obj", ".a", ".dylib", ".dll"})

_TEST_PATH = re.compile(r"(^|/)(test|tests|testing|spec|specs)(/|_)|(_test|_spec)\.")
_TEST_NAME = re.compile(r"^(test_.*\.py|.*_test\.py)$")


def _normalize_path(path: str) -> str:
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/")


def is_test_file(path: str) -> bool:
    """Test file rule of docs/protocol.md section 3 (repository-relative ``path``)."""
    path = _normalize_path(path)
    name = path.rsplit("/", 1)[-1]
    return bool(_TEST_PATH.search(path) or _TEST_NAME.match(name))


def is_scratch_file(path: str, *, base_top_level: Collection[str] | None = None) -> bool:
    """Scratch file rule of docs/protocol.md section 3.2: the path's first component (a top-level file, or the
    top-level folder it is in) starts with ``reproduce``/``repro``/``scratch``/``tmp``/``debug``
    (case-insensitively, an extension) and ``base_commit`` has no top-level entry of that name.

    ``reproduce.py`` and ``reproduce_issue/run.py`` are scratch files when the agent created them. A file of
    a folder the repository has at ``base_commit`` (``debug_toolbar/``, ``tmp_utils/``, ``scratchpad/`` in
    some projects) never is, and neither is a top-level file ``base_commit`` has: both extensions of the
    paper's top-level file rule.

    Args:
        path: repository-relative path.
        base_top_level: names of the top-level files and folders of ``base_commit``'s tree
            (:func:`takeover.snapshots.top_level_names`); ``None`` when unknown, then the name alone decides
            (a repository folder named like scratch counts as scratch).
    """
    first = _normalize_path(path).split("/", 1)[0]
    if not first.lower().startswith(SCRATCH_PREFIXES):
        return False
    return base_top_level is None or first not in base_top_level


def _suffix(path: str) -> str:
    dot = path.rfind(".")
    return path[dot:].lower() if dot > path.rfind("/") else ""


def is_generated_output(path: str) -> bool:
    """Whether a path is build or tool output that commands generate (docs/protocol.md section 3.3).

    True for a path inside a folder named ``__pycache__``, ``_build`` (Sphinx), ``.eggs``, ``.tox``, ``.nox``,
    ``.hypothesis``, ``.pytest_cache``, ``.mypy_cache`` or ``.ruff_cache``, or ending in ``.egg-info`` or
    ``.dist-info``; inside a top-level ``build/`` or ``dist/``; or a compiled file (``.pyc``, ``.pyo``, ``.so``,
    ``.pyd``, ``.o``, ``.obj``, ``.a``, ``.dylib``, ``.dll``). Case-sensitive, as file systems are.
    """
    parts = _normalize_path(path).split("/")
    folders = parts[:-1]
    if folders and folders[0] in GENERATED_TOP_FOLDERS:
        return True
    if any(f in GENERATED_FOLDERS or f.endswith(GENERATED_FOLDER_SUFFIXES) for f in folders):
        return True
    return _suffix(parts[-1]) in GENERATED_SUFFIXES


def file_class(path: str, *, base_top_level: Collection[str] | None = None) -> FileClass:
    """Class of a repository-relative path (docs/protocol.md section 3).

    Returns ``"test"`` when the test-file rule matches (whatever the suffix), else ``"source"`` when the
    suffix is a source suffix and the path is neither a scratch file (:func:`is_scratch_file`, which
    ``base_top_level`` informs) nor generated output (:func:`is_generated_output`), else ``"artifact"``
    (non-source artifact: scratch scripts, notes, logs, build output, data files).

    Args:
        path: repository-relative path.
        base_top_level: names of the top-level files and folders of ``base_commit``'s tree, or ``None``
            when unknown (see :func:`is_scratch_file`).
    """
    path = _normalize_path(path)
    if is_test_file(path):
        return "test"
    if (_suffix(path) in SOURCE_SUFFIXES and not is_scratch_file(path, base_top_level=base_top_level)
            and not is_generated_output(path)):
        return "source"
    return "artifact"


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
