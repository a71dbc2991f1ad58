"""Every rule of docs/protocol.md sections 3 and 4 that classify.py implements, with the edge cases."""

from __future__ import annotations

import pytest

from takeover.points.verification import (
    failure_evidence,
    is_git_restore_command,
    is_verification_command,
    verification_result,
)
from takeover.repository_states.file_classes import file_class, is_generated_output

# --- section 3: file classes -------------------------------------------------------------------------


# docs/protocol.md section 3.2, written out (not taken from classify.py, so a dropped suffix fails here)
@pytest.mark.parametrize("suffix", [".py", ".js", ".jsx", ".ts", ".tsx", ".java", ".go", ".rs", ".c", ".cc", ".cpp",
                                    ".h", ".hpp", ".cs", ".rb", ".php", ".scala", ".kt"])
def test_every_source_suffix_is_source(suffix):
    assert file_class(f"pkg/module{suffix}") == "source"


@pytest.mark.parametrize(
    "path",
    [
        "tests/test_auth.py",  # (^|/)tests/
        "src/pkg/tests/helpers.py",
        "test/unit.c",
        "testing/conftest.py",  # testing/
        "spec/models/user_spec.rb",
        "specs/a.js",
        "pkg/test_utils/x.py",  # test_ directory
        "pkg/tests_data.py",  # (^|/)tests_
        "pkg/auth_test.go",  # _test.
        "web/button_spec.tsx",  # _spec.
        "test_requests.py",  # test_*.py
        "pkg/sub/feature_test.py",  # *_test.py
        "tests/data/input.json",  # a test path, whatever the suffix
        "./tests/test_x.py",
    ],
)
def test_test_files(path):
    assert file_class(path) == "test"


@pytest.mark.parametrize(
    "path",
    [
        "reproduce.py",
        "reproduce_issue.py",
        "repro.py",
        "repro_bug.js",
        "scratch.py",
        "scratch_pad.go",
        "tmp.py",
        "tmp_check.py",
        "debug.py",
        "debug_output.c",
        "Reproduce_Issue.py",  # case-insensitive (extension)
        "notes.md",
        "run.log",
        "build/lib/out.txt",
        "reproduce_issue/run.py",  # the scratch rule applies to the first path component (a folder)
        "tmp_check/helper.py",
        "Debug_Tools/trace.js",
        "doc/_build/html/_static/searchtools.js",  # Sphinx build output
        "build/lib/pkg/mod.py",
        "dist/pkg/mod.py",
        "src/pkg/__pycache__/mod.py",
        "src/widget.egg-info/setup.py",
        "setup.cfg",
        "docs/changes.rst",
        "Makefile",
    ],
)
def test_artifacts(path):
    assert file_class(path) == "artifact"


@pytest.mark.parametrize(
    "path",
    [
        "sympy/core/reproduce.py",  # scratch names count only at the top level
        "pkg/reproduce_issue/run.py",
        "sympy/build/tools.py",  # build/ and dist/ are generated only at the top level
        "src/pkg/dist.py",
        "docs/builders/html.py",
        "pkg/debug.py",
        "requests/auth.py",
        "src/_pytest/capture.py",
        "check_numpy_behavior.py",  # not one of the scratch prefixes: a source file by the rule
        "run_tests.py",  # 'tests' without a leading / or start of path
        "src/contest.py",
    ],
)
def test_source_files(path):
    assert file_class(path) == "source"


@pytest.mark.parametrize(
    ("path", "generated"),
    [
        ("doc/_build/html/index.html", True),
        ("build/lib.linux-x86_64-3.9/astropy/wcs/_wcs.cpython-39-x86_64-linux-gnu.so", True),
        ("astropy/wcs/_wcs.cpython-39-x86_64-linux-gnu.so", True),
        ("requests.egg-info/PKG-INFO", True),
        ("src/Sphinx.egg-info/SOURCES.txt", True),
        ("pkg/__pycache__/mod.cpython-39.pyc", True),
        ("mod.pyc", True),
        ("dist/widget-1.0.tar.gz", True),
        (".tox/py39/log.txt", True),
        (".hypothesis/examples/x", True),
        ("ext/module.o", True),
        ("pkg/mod.py", False),
        ("sympy/build/tools.py", False),
        ("docs/Build/index.rst", False),
        ("setup.py", False),
        ("tests/roots/test-build/conf.py", False),
    ],
)
def test_generated_output(path, generated):
    assert is_generated_output(path) is generated


# --- section 4: verification commands ----------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "pytest",
        "pytest tests/test_x.py -q",
        "cd /testbed && python -m pytest -x tests/ 2>&1 | tail -20",
        "python -m unittest discover",
        "python3 -m unittest tests.test_x",
        "tox -e py39",
        "nox -s tests",
        "ruff check src",
        "mypy src/pkg",
        "npm test",
        "pnpm test -- --watch=false",
        "yarn test",
        "cargo test --all",
        "go test ./...",
        "make test",
        "gradle test",
        "mvn test -q",
        "./tests/runtests.py admin_views",
        "python tests/runtests.py queries",
        "bin/test sympy/core/tests/test_args.py",
        "python reproduce.py",
        "python3 reproduce_issue.py",
        "python repro.py",
        "python check_fix.py",
        "python3 /tmp/verify_output.py",
        "python validate.py --all",
        "python test_requests.py",
        "timeout 60 python3 -u reproduce_bug.py",
        "PYTHONPATH=. python3 my_test_script.py",
        "python3.9 -W ignore check.py",
    ],
)
def test_verification_commands(command):
    assert is_verification_command(command)


@pytest.mark.parametrize(
    "command",
    [
        None,
        "",
        "ls -R",
        "cat reproduce.py",
        "sed -i 's/a/b/' requests/auth.py",
        "python -c \"print('test passed')\"",  # -c runs no script
        "python -m pip install numpy",
        "python setup.py develop",
        "grep -rn 'def test' src",
        "ls tests/",
        "git diff",
        "cat <<'EOF' > helper.py\nimport pytest\nprint('tox')\nEOF",  # text written into a file is not run
    ],
)
def test_not_verification_commands(command):
    assert not is_verification_command(command)


def test_heredoc_followed_by_a_run_is_verification():
    assert is_verification_command("cat <<'EOF' > reproduce.py\nprint(1)\nEOF\npython reproduce.py")


# --- section 4: verification results ----------------------------------------------------------------


@pytest.mark.parametrize(
    "output",
    [
        "AssertionError: 1 != 2",
        "Traceback (most recent call last):",
        "FAILED tests/test_x.py::test_a",
        "fail: true",
        "PASS: false",
        "=== 2 failed, 10 passed in 0.3s ===",
        "error: could not compile",
        "ValueError: Exception raised",
    ],
)
def test_failed_patterns_win_even_with_exit_code_zero(output):
    # The failure pattern is checked first, so a pass pattern or exit code 0 cannot override it.
    assert verification_result(output + "\n10 passed\nall tests passed", 0) == "failed"


def test_nonzero_exit_code_fails_without_a_failure_pattern():
    assert verification_result("some output\n", 2) == "failed"


@pytest.mark.parametrize(
    "output",
    ["all tests passed", "Test passed", "tests passed!", "PASS: true", "passed 12", "12 passed in 1.0s",
     "Ran 3 tests\n\nOK", "Successfully fixed", "Behaviour verified"],
)
def test_passed_patterns(output):
    assert verification_result(output, None) == "passed"


def test_exit_code_zero_passes_a_silent_command():
    assert verification_result("", 0) == "passed"


def test_unknown_without_signal():
    assert verification_result("Digest realm=x", None) == "unknown"
    assert verification_result("", None) == "unknown"
    assert verification_result("broken token", None) == "unknown"  # 'ok' only as a word


def test_failure_evidence_is_a_failure_line_of_at_most_240_characters():
    out = "collected 3 items\nE   AssertionError: x\n" + "=" * 10 + " 1 failed, 2 passed " + "=" * 300
    ev = failure_evidence(out)
    assert ev.startswith("========== 1 failed, 2 passed") and len(ev) == 240
    # the last failure line: for a traceback, the exception line
    assert failure_evidence("Traceback (most recent call last):\n  File x\nKeyError: 'a'") == "KeyError: 'a'"
    assert failure_evidence("ValueError: bad\nall good") == "ValueError: bad"
    assert failure_evidence("3 passed") is None


# --- section 4: git commands that restore files -------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "git stash",
        "git stash pop",
        "git restore requests/auth.py",
        "git checkout -- requests/auth.py",
        "git checkout requests/auth.py",
        "git reset --hard",
        "git reset HEAD~1",
        "git clean -fd",
        "cd /testbed && git checkout sympy/core/add.py && python reproduce.py",
        "git -C /testbed restore .",
        "/usr/bin/git stash",
    ],
)
def test_git_restore_commands(command):
    assert is_git_restore_command(command)


@pytest.mark.parametrize(
    "command",
    [None, "git diff", "git status", "git log --oneline -- checkout.py", "git add -A && git diff --cached",
     "echo 'git checkout'", "grep -rn stash src", "sed -i 's/reset/clean/' a.py"],
)
def test_not_git_restore_commands(command):
    assert not is_git_restore_command(command)
