"""The rule for missing prerequisites (tests/prerequisites.py): a skip names what is missing, CI turns it
into a failure, and only what no CI machine here can have may skip there, each such test with a
counterpart that runs in CI."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from prerequisites import ALLOWED_IN_CI, PREREQUISITES, missing, prerequisite, requires

TESTS = Path(__file__).resolve().parent

RULE_TESTS = '''
from prerequisites import need


def test_needs_a_missing_file():
    need("shared:no/such/file.json")


def test_needs_the_mirror():
    need("mirror", counterpart="test_checkpoints.py::test_analyze_run_by_verified_replay")


def test_needs_git():
    need("git")
'''


def _run_rule_tests(tmp_path: Path, ci: str | None) -> str:
    (tmp_path / "test_rule.py").write_text(RULE_TESTS)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "TAKEOVER_MIRROR")}
    env.update(PYTHONPATH=str(TESTS), TAKEOVER_SHARED=str(tmp_path / "shared"), **({"CI": ci} if ci else {}))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "test_rule.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc.stdout


def test_a_missing_prerequisite_skips_naming_it_and_fails_under_ci(tmp_path):
    local = _run_rule_tests(tmp_path, None)
    assert "1 passed, 2 skipped" in local
    assert f"needs shared data no/such/file.json: {tmp_path}/shared/data/no/such/file.json does not exist" in local
    assert "needs mirror: TAKEOVER_MIRROR is not set" in local
    assert "its counterpart test_checkpoints.py::test_analyze_run_by_verified_replay runs in CI" in local

    ci = _run_rule_tests(tmp_path, "true")
    assert "1 failed, 1 passed, 1 skipped" in ci
    assert "FAILED test_rule.py::test_needs_a_missing_file" in ci
    assert "CI=true and a prerequisite is missing: needs shared data no/such/file.json" in ci
    assert "SKIPPED" in ci and "needs mirror" in ci  # the mirror is in the allowed class


def test_names_are_checked_and_the_allowed_class_needs_a_counterpart():
    with pytest.raises(ValueError, match="unknown prerequisite 'bwrap'"):
        requires("bwrap")
    with pytest.raises(ValueError, match="must name its counterpart"):
        from prerequisites import need

        need("mirror")
    assert ALLOWED_IN_CI == {"mirror", "embedded model weights", "llama-cpp-python"}
    assert prerequisite("shared:swebench_verified.jsonl").name == "shared data swebench_verified.jsonl"


def test_checks_ask_the_machine_not_the_code_under_test(monkeypatch):
    """The sandbox check reads only bwrap and the switch that turns the sandbox off; it never calls
    takeover._util.sandbox (a regression there must fail a test, not skip it)."""
    source = (TESTS / "prerequisites.py").read_text()
    assert "takeover._util.sandbox" not in source.replace('``takeover._util.sandbox.status()``', "")
    monkeypatch.setenv("TAKEOVER_NO_SANDBOX", "1")
    assert PREREQUISITES["bubblewrap"].check() == "TAKEOVER_NO_SANDBOX is set (the sandbox is turned off on purpose)"
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("TAKEOVER_NO_SANDBOX")
    assert PREREQUISITES["bubblewrap"].check() == "bwrap is not on PATH"
    assert PREREQUISITES["git"].check() == "git is not on PATH"
    assert missing("git") is None or missing("git") == "git is not on PATH"


def _requires_calls(path: Path) -> list[tuple[str, list[str], str | None]]:
    """``(test function, prerequisite names, counterpart)`` of each ``requires(...)`` in a test file; a
    module-level ``pytestmark`` applies to every test of the file."""
    tree = ast.parse(path.read_text())
    found = []

    def read(call: ast.Call) -> tuple[list[str], str | None]:
        names = [a.value for a in call.args if isinstance(a, ast.Constant)]
        names += [a.values[0].value for a in call.args if isinstance(a, ast.JoinedStr)]  # f"shared:..."
        counterpart = next((k.value.value for k in call.keywords if k.arg == "counterpart"), None)
        return names, counterpart

    def calls(node: ast.AST):
        return [n for n in ast.walk(node) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "requires"]

    tests = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in stmt.targets):
            for call in calls(stmt):
                found += [(t.name, *read(call)) for t in tests]
    for test in tests:
        for deco in test.decorator_list:
            found += [(test.name, *read(call)) for call in calls(deco)]
    return found


def allowed_skips() -> list[tuple[str, list[str], str]]:
    """Every test that may skip under CI: ``(file.py::test, its allowed prerequisites, counterpart)``."""
    out = []
    for path in sorted(TESTS.glob("test_*.py")):
        for test, names, counterpart in _requires_calls(path):
            allowed = [n for n in names if n in ALLOWED_IN_CI]
            if allowed:
                out.append((f"{path.name}::{test}", allowed, counterpart))
    return out


def test_every_test_that_may_skip_in_ci_has_a_counterpart_that_runs_there():
    skips = allowed_skips()
    assert len(skips) >= 5  # the mirror tests, and the hash of the real model weights
    for test, names, counterpart in skips:
        assert counterpart, f"{test} needs {names} and names no counterpart"
        file, name = counterpart.split("::")
        tree = ast.parse((TESTS / file).read_text())
        assert name in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}, f"{test}: {counterpart} not found"
        own = [names for t, names, _ in _requires_calls(TESTS / file) if t == name]
        assert not any(n in ALLOWED_IN_CI for names in own for n in names), f"{counterpart} may skip in CI itself"
