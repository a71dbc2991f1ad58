"""File classes of repository-relative paths: test, source, artifact (docs/protocol.md section 3).

Pure functions over strings: no file system, no git. Every rule here is written down in docs/protocol.md;
where the protocol is silent, the choice is documented on the function ("extension").
"""

from __future__ import annotations

import re
from collections.abc import Collection

from takeover.vocabulary import FileClass

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
    """Scratch file rule of docs/protocol.md section 3.2.

    The paper's rule and its extensions: the path's first component (a top-level file, or the top-level
    folder it is in) starts with ``reproduce``/``repro``/``scratch``/``tmp``/``debug`` (case-insensitively)
    and ``base_commit`` has no top-level entry of that name. Extension (helper scripts): a top-level file
    that ``base_commit`` does not have is a scratch file whatever its name (``fix_datetime.py``,
    ``check_methods.py``), when ``base_commit``'s top level is known and not empty.

    ``reproduce.py``, ``reproduce_issue/run.py`` and a new ``patch_delimited.py`` are scratch files. A file of
    a folder the repository has at ``base_commit`` (``debug_toolbar/``, ``tmp_utils/``, ``scratchpad/`` in
    some projects) never is, and neither is a top-level file ``base_commit`` has (``setup.py``,
    ``conftest.py``).

    Args:
        path: repository-relative path.
        base_top_level: names of the top-level files and folders of ``base_commit``'s tree
            (:func:`takeover.repository_states.snapshots.top_level_names`); ``None`` when unknown: then the
            name alone decides (a repository folder named like scratch counts as scratch) and a new
            top-level file is judged by its name only.
    """
    parts = _normalize_path(path).split("/", 1)
    first = parts[0]
    if base_top_level is not None and first in base_top_level:
        return False
    if first.lower().startswith(SCRATCH_PREFIXES):
        return True
    return len(parts) == 1 and bool(base_top_level)


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
