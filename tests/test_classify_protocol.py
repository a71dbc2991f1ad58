"""The rules of docs/protocol.md sections 3 and 4 written out from the protocol's text, not from
classify.py's constants, and the edge cases of how commands are read (quoting, interpreter options,
wrappers, git's global options, malformed shell)."""

from __future__ import annotations

import pytest

from takeover.points.verification import failure_evidence, is_git_restore_command, is_verification_command
from takeover.repository_states.file_classes import SOURCE_SUFFIXES, file_class, is_generated_output

# docs/protocol.md section 3.2, copied: ".py .js .jsx .ts .tsx .java .go .rs .c .cc .cpp .h .hpp .cs .rb .php
# .scala .kt"
PROTOCOL_SOURCE_SUFFIXES = (".py", ".js", ".jsx", ".ts", ".tsx", ".java", ".go", ".rs", ".c", ".cc", ".cpp", ".h",
                            ".hpp", ".cs", ".rb", ".php", ".scala", ".kt")
# Section 3.1: `(^|/)(test|tests|testing|spec|specs)(/|_)` or `(_test|_spec)\.`, or a file name `test_*.py`
# or `*_test.py`.
PROTOCOL_TEST_DIRS = ("test", "tests", "testing", "spec", "specs")
# Section 3.2: a path whose first component (top-level file or folder) starts with these is a scratch file.
PROTOCOL_SCRATCH_PREFIXES = ("reproduce", "repro", "scratch", "tmp", "debug")
# Section 3.3: generated output.
PROTOCOL_GENERATED_FOLDERS = ("__pycache__", "_build", ".eggs", ".tox", ".nox", ".hypothesis", ".pytest_cache",
                              ".mypy_cache", ".ruff_cache")
PROTOCOL_GENERATED_TOP_FOLDERS = ("build", "dist")
PROTOCOL_COMPILED_SUFFIXES = (".pyc", ".pyo", ".so", ".pyd", ".o", ".obj", ".a", ".dylib", ".dll")


def test_the_source_suffixes_are_the_protocols():
    assert SOURCE_SUFFIXES == frozenset(PROTOCOL_SOURCE_SUFFIXES)


@pytest.mark.parametrize("suffix", PROTOCOL_SOURCE_SUFFIXES)
def test_each_protocol_suffix_makes_a_source_file_in_either_case(suffix):
    assert file_class(f"pkg/module{suffix}") == "source"
    assert file_class(f"pkg/Module{suffix.upper()}") == "source"  # compared case-insensitively (extension)


@pytest.mark.parametrize("suffix", [".pyc", ".pyi", ".txt", ".md", ".json", ".cfg", ".toml", ".sh", ".c~", ".kts"])
def test_other_suffixes_are_artifacts(suffix):
    assert file_class(f"pkg/module{suffix}") == "artifact"


@pytest.mark.parametrize("directory", PROTOCOL_TEST_DIRS)
@pytest.mark.parametrize("separator", ["/", "_"])
def test_every_test_directory_word_at_the_start_or_after_a_slash(directory, separator):
    assert file_class(f"{directory}{separator}x.py") == "test"
    assert file_class(f"pkg/{directory}{separator}x.py") == "test"
    # the word must begin the path or follow a slash, and be followed by / or _
    assert file_class(f"pkg/con{directory}{separator}x.py") == "source"
    assert file_class(f"pkg/{directory}x/y.py") == "source"


@pytest.mark.parametrize("path", ["pkg/auth_test.go", "pkg/auth_spec.rb", "auth_test.c", "web/button_spec.tsx",
                                  "test_auth.py", "pkg/auth_test.py", "pkg/test_auth.py"])
def test_test_name_rules(path):
    assert file_class(path) == "test"


@pytest.mark.parametrize("path", ["pkg/auth_testing.py", "pkg/latest.py", "pkg/contest_x.py", "pkg/attest.py"])
def test_names_that_only_contain_test_are_source(path):
    assert file_class(path) == "source"


@pytest.mark.parametrize("prefix", PROTOCOL_SCRATCH_PREFIXES)
def test_scratch_prefixes_only_in_the_first_path_component(prefix):
    assert file_class(f"{prefix}_case.py") == "artifact"
    assert file_class(f"{prefix.upper()}_case.py") == "artifact"
    assert file_class(f"{prefix}/case.py") == "artifact"  # a top-level folder counts too (extension)
    assert file_class(f"{prefix}_issue/sub/case.py") == "artifact"
    assert file_class(f"pkg/{prefix}_case.py") == "source"
    assert file_class(f"pkg/{prefix}/case.py") == "source"


@pytest.mark.parametrize("folder", PROTOCOL_GENERATED_FOLDERS)
def test_generated_folders_anywhere_in_the_path(folder):
    assert is_generated_output(f"{folder}/x.py") and is_generated_output(f"pkg/{folder}/sub/x.py")
    assert file_class(f"pkg/{folder}/x.py") == "artifact"
    assert not is_generated_output(f"pkg/{folder}x/y.py") and not is_generated_output(f"pkg/{folder}.py")
    assert not is_generated_output(f"pkg/{folder.upper()}/x.py")  # folder names compared as written


@pytest.mark.parametrize("folder", PROTOCOL_GENERATED_TOP_FOLDERS)
def test_build_and_dist_only_at_the_top(folder):
    assert is_generated_output(f"{folder}/lib/pkg/mod.py") and file_class(f"{folder}/lib/pkg/mod.py") == "artifact"
    assert not is_generated_output(f"pkg/{folder}/mod.py") and file_class(f"pkg/{folder}/mod.py") == "source"
    assert not is_generated_output(folder)  # a file named build


@pytest.mark.parametrize("suffix", PROTOCOL_COMPILED_SUFFIXES)
def test_compiled_files_are_generated_output(suffix):
    assert is_generated_output(f"pkg/mod{suffix}") and is_generated_output(f"mod{suffix}")
    assert not is_generated_output(f"pkg/mod{suffix}/README")  # a folder with that suffix holds no compiled file


@pytest.mark.parametrize("path", ["pkg.egg-info/PKG-INFO", "src/pkg.egg-info/SOURCES.txt", "pkg-1.0.dist-info/RECORD",
                                  "docs/_build/html/searchindex.js"])
def test_package_metadata_and_sphinx_output_are_generated(path):
    assert is_generated_output(path) and file_class(path) == "artifact"


@pytest.mark.parametrize(("path", "expected"), [
    ("pkg\\tests\\helpers.py", "test"),  # backslashes become slashes
    ("./reproduce.py", "artifact"),  # leading ./ removed
    ("././tmp.py", "artifact"),
    ("/reproduce.py", "artifact"),  # leading / removed
    ("//debug.py", "artifact"),
    ("static/jquery.min.js", "source"),  # the suffix is the last one
    ("pkg.d/Makefile", "artifact"),  # a dot in a folder name is no suffix
    ("Makefile", "artifact"),
])
def test_paths_are_normalized_before_classifying(path, expected):
    assert file_class(path) == expected


def test_failure_evidence_keeps_a_line_of_exactly_240_characters():
    line = "E   AssertionError: " + "x" * 220
    assert len(line) == 240 and failure_evidence(line) == line
    longer = line + "y"
    assert failure_evidence(longer) == line[:237] + "..."


@pytest.mark.parametrize(("command", "expected"), [
    ("python scripts/check_fix.py", True),  # a script in a folder
    ("python3 'bug check.py'", True),  # quoted path with a space
    ("python reproduce.py \"unterminated", True),  # unbalanced quote: split on white space instead
    ("python -W ignore check.py", True),
    ("python3 -W ignore -c \"import checks\"", False),  # -W takes a value, then -c: no script
    ("python3 -X importtime -m checks", False),
    ("python3 -m validate_pyproject pyproject.toml", False),  # -m: no script, whatever the module's name
    ("python -mvalidate_pyproject tests/pyproject.toml", False),  # -m attached to its module
    ("python -c'import sys' check.py", False),  # -c attached to its code
    ("python3 --version", False),  # options only
    ("cat python_notes.txt", False),  # "python" in a word is no interpreter
    ("/usr/local/bin/python3.11 verify.py", True),
])
def test_how_python_commands_are_read(command, expected):
    assert is_verification_command(command) is expected


@pytest.mark.parametrize(("command", "expected"), [
    ("sudo git stash", True),  # words before git
    ("GIT_PAGER=cat git checkout -- a.py", True),
    ("git --no-pager stash", True),  # a global option without a value
    ("git -c core.pager=cat reset --hard", True),  # one with a value
    ("git --work-tree /testbed --git-dir /testbed/.git clean -fd", True),
    ("git checkout \"requests/auth.py", True),  # unbalanced quote: split on white space instead
    ("git 'restore' requests/auth.py", True),  # quotes removed as the shell does
    ("git --version", False),
    ("git -C /testbed", False),
    ("git", False),
    ("git -c stash=1 status", False),  # "stash" is the value of -c here
])
def test_how_git_commands_are_read(command, expected):
    assert is_git_restore_command(command) is expected
