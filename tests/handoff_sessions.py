"""Builders for the handoff tests: a small calculator repository and the sessions of two agents that worked
on it, written in their native layouts (Claude Code session log, Codex CLI rollout) with the builders of
test_claude_code.py and test_codex_cli.py. Each builder also leaves the repository as the session left it."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

from conftest import git, make_repo
from test_claude_code import Log, tool, usage
from test_codex_cli import Rollout, user_item

CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b  # sub\n"
CALC_FIXED = CALC.replace("return a + b  # sub", "return a - b  # sub")
CALC_WRONG = CALC.replace("return a + b  # sub", "return b - a  # sub")
TESTS = "from calc import add, sub\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n"
# Secrets the sessions carry: neither a model nor any output may ever see them.
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
OPENAI_KEY = "sk-proj-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1"
SECRETS = (GITHUB_TOKEN, OPENAI_KEY)
CLAUDE_TASK = f"Fix sub() in calc.py: it adds. Use my token {GITHUB_TOKEN} if you need to push."

# A note that passes the structured notes' validation for the Claude Code session.
GOOD_NOTE = {
    "problem_understanding": "sub() in calc.py added its arguments instead of subtracting them.",
    "work_completed": "Changed calc.py so that sub returns a - b; wrote NOTES.md.",
    "evidence_observed": "Before the edit pytest reported 1 failed, 1 passed; after it, 2 passed.",
    "observed_failures": "test_sub failed before the edit with assert 4 == 2.",
    "remaining_uncertainty": "NOTES.md is a scratch note; whether it should be kept is not known.",
    "rollback_notes": "NONE OBSERVED",
    "recommended_next_action": "Run python -m pytest -q once more, then decide whether to delete NOTES.md.",
}


def note(**changes) -> dict:
    """A scripted server entry answering with the good note, ``changes`` applied."""
    return {"content": json.dumps({**GOOD_NOTE, **changes})}


def calc_repo(root: Path) -> tuple[Path, str]:
    """The calculator repository (``calc.py`` with the bug, ``test_calc.py``, ``*.log`` ignored)."""
    return make_repo(root, {"calc.py": CALC, "test_calc.py": TESTS, ".gitignore": "*.log\n"})


def claude_session(path: Path, root: Path, *, sed_after_tests: bool = False) -> Path:
    """A Claude Code session that fixed sub() with Edit, saw the tests pass and wrote NOTES.md (with
    ``sed_after_tests``, it then changed calc.py again with sed, untested); the repository is left so."""
    r = str(root)
    log = Log()
    log.add("file-history-snapshot", messageId="m0", snapshot={"trackedFileBackups": {}}, isSnapshotUpdate=False)
    log.user(CLAUDE_TASK)
    log.assistant("msg_01", [tool("t1", "Bash", command="python -m pytest -q")], usage(10, 0, 2000, 50))
    log.result("t1", "Exit code 1\nF.\nFAILED test_calc.py::test_sub - assert 4 == 2\n1 failed, 1 passed in 0.02s",
               is_error=True)
    log.assistant("msg_02", [tool("t2", "Read", file_path=f"{r}/calc.py")], usage(5, 2000, 100, 20))
    log.result("t2", "     1→def add(a, b):\n")
    log.assistant(
        "msg_03",
        [{"type": "text", "text": "sub() uses +."},
         tool("t3", "Edit", file_path=f"{r}/calc.py", old_string="    return a + b  # sub",
              new_string="    return a - b  # sub")],
        usage(5, 2100, 100, 80),
    )
    log.result("t3", f"The file {r}/calc.py has been updated.")
    log.assistant("msg_04", [tool("t4", "Bash", command="python -m pytest -q")], usage(5, 2200, 50, 30))
    log.result("t4", "..\n2 passed in 0.01s")
    log.assistant("msg_05", [tool("t5", "Write", file_path=f"{r}/NOTES.md", content="sub fixed\n")],
                  usage(5, 2250, 50, 30))
    log.result("t5", f"File created successfully at: {r}/NOTES.md")
    log.assistant("msg_06", [tool("t6", "Bash", command="env | grep OPENAI")], usage(5, 2300, 50, 30))
    log.result("t6", f"OPENAI_API_KEY={OPENAI_KEY}")
    calc = CALC_FIXED
    if sed_after_tests:
        log.assistant("msg_07", [tool("t7", "Bash", command="sed -i 's/# sub/# subtract/' calc.py")],
                      usage(5, 2350, 50, 30))
        log.result("t7", "")
        calc = CALC_FIXED.replace("# sub", "# subtract")
    for record in log.records:
        record["cwd"] = r
    (root / "calc.py").write_text(calc)
    (root / "NOTES.md").write_text("sub fixed\n")
    (root / "pytest.log").write_text("ignored by git\n")
    return log.write(path)


def codex_session(path: Path, root: Path, start_commit: str) -> Path:
    """A Codex CLI rollout started at ``start_commit`` that changed calc.py with apply_patch (wrongly), wrote
    repro_sub.py, committed its work, and saw the tests fail; the repository is left so."""
    r = str(root)
    out = Rollout()
    out.add("session_meta", {
        "id": "0199a3c4-5e6f-7a80-91b2-c3d4e5f60718", "timestamp": "2025-10-20T08:00:00.000Z", "cwd": r,
        "originator": "codex_cli_rs", "cli_version": "0.46.0", "instructions": None, "source": "cli",
        "model_provider": "openai", "git": {"commit_hash": start_commit, "branch": "main"},
    })
    out.item(user_item(f"<environment_context>\n  <cwd>{r}</cwd>\n</environment_context>"))
    out.add("turn_context", {"cwd": r, "approval_policy": "on-request", "model": "gpt-5-codex"})
    out.item(user_item("Fix sub() in calc.py."))
    out.event({"type": "user_message", "message": "Fix sub() in calc.py.", "images": None})
    patch = ("*** Begin Patch\n*** Add File: repro_sub.py\n+from calc import sub\n+print(sub(3, 1))\n"
             "*** Update File: calc.py\n@@ def sub(a, b):\n-    return a + b  # sub\n+    return b - a  # sub\n"
             "*** End Patch\n")
    out.item({"type": "custom_tool_call", "status": "completed", "call_id": "c1", "name": "apply_patch",
              "input": patch})
    out.count(5000, 0, 300, 100)
    out.output("c1", "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\n"
               "A repro_sub.py\nM calc.py\n", kind="custom_tool_call_output")
    out.call("c2", "shell", command=["bash", "-lc", "git commit -qam wip"], workdir=r)
    out.count(5400, 4900, 40, 0)
    out.output("c2", json.dumps({"output": "", "metadata": {"exit_code": 0, "duration_seconds": 0.1}}))
    out.call("c3", "shell", command=["bash", "-lc", "python -m pytest -q"], workdir=r)
    out.count(5600, 5300, 40, 0)
    out.output("c3", json.dumps({"output": "F.\nE       assert -2 == 2\nFAILED test_calc.py::test_sub\n"
                                           "1 failed, 1 passed\n", "metadata": {"exit_code": 1}}))
    (root / "calc.py").write_text(CALC_WRONG)
    git(root, "commit", "-qam", "wip")
    (root / "repro_sub.py").write_text("from calc import sub\nprint(sub(3, 1))\n")
    return out.write(path)


def fingerprint(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (``.git`` included) and of ``git status --porcelain``."""
    found = {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(root.rglob("*")) if p.is_file()}
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root, capture_output=True,
                            text=True, check=True, env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    found["<git status>"] = status.stdout
    return found
