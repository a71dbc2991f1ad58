"""Verification beyond pytest (docs/protocol.md sections 4.1 and 4.2): the test, build and lint runs of the
common ecosystems, in the sessions agents record today (a Claude Code session log and a Codex CLI rollout,
written in their native layouts on a small JavaScript project), and the summaries of real runners read by
their grammar, in a SWE-agent 1.x ``.traj`` whose pytest run stops at collection."""

from __future__ import annotations

import json

import pytest
from conftest import make_repo
from handoff_sessions import Log, Rollout, tool, usage, user_item

from takeover.handoff import compose_handoff
from takeover.points import detect_points, verifications
from takeover.points.verification import is_verification_command, verification_result
from takeover.trajectories import read_trajectories

PACKAGE = json.dumps({"name": "sum", "scripts": {"test": "jest", "build": "tsc -p .", "lint": "eslint src"}})
SRC = "export function sum(a: number, b: number) {\n  return a - b;\n}\n"
JEST_FAIL = ("FAIL src/sum.test.ts\n  ● sum › adds\n    expect(received).toBe(expected)\n\n"
             "Test Suites: 1 failed, 1 total\nTests:       1 failed, 2 passed, 3 total\nTime:        0.8 s\n")
JEST_PASS = "PASS src/sum.test.ts\n\nTest Suites: 1 passed, 1 total\nTests:       3 passed, 3 total\n"


def js_repo(tmp_path):
    return make_repo(tmp_path / "sum", {"package.json": PACKAGE, "src/sum.ts": SRC, "tsconfig.json": "{}\n"})


def test_a_claude_code_session_that_ran_jest_and_the_build_has_failing_validation(tmp_path):
    root, _ = js_repo(tmp_path)
    r = str(root)
    log = Log()
    log.user("sum() subtracts; make the tests pass.")
    log.assistant("msg_01", [tool("t1", "Bash", command="npx jest")], usage(10, 0, 1500, 40))
    log.result("t1", "Exit code 1\n" + JEST_FAIL, is_error=True)
    log.assistant("msg_02", [tool("t2", "Edit", file_path=f"{r}/src/sum.ts", old_string="a - b", new_string="a * b")],
                  usage(5, 1500, 100, 30))
    log.result("t2", f"The file {r}/src/sum.ts has been updated.")
    log.assistant("msg_03", [tool("t3", "Bash", command="npm run build")], usage(5, 1600, 50, 20))
    log.result("t3", "\n> sum@1.0.0 build\n> tsc -p .\n")
    log.assistant("msg_04", [tool("t4", "Bash", command="npm test -- --runInBand")], usage(5, 1650, 50, 20))
    log.result("t4", "Exit code 1\n" + JEST_FAIL, is_error=True)
    for rec in log.records:
        rec["cwd"] = r
    (root / "src" / "sum.ts").write_text(SRC.replace("a - b", "a * b"))
    (traj,) = read_trajectories(log.write(tmp_path / "session.jsonl"))
    found = [(traj.events[v.event_index - 1].command, v.result, v.evidence) for v in verifications(traj.events)]
    assert found == [("npx jest", "failed", "Tests:       1 failed, 2 passed, 3 total"),
                     ("npm run build", "passed", None),
                     ("npm test -- --runInBand", "failed", "Tests:       1 failed, 2 passed, 3 total")]
    h = compose_handoff(tmp_path / "session.jsonl", root)
    assert h.point.changed_source_files == ["src/sum.ts"]
    assert (h.facts.validation_status, h.facts.continuation_label) == ("failed", "source change with failing validation")
    assert h.facts.latest_validation_command == "npm test -- --runInBand"


def test_a_codex_rollout_that_ran_vitest_and_the_linter_is_validated(tmp_path):
    root, base = js_repo(tmp_path)
    r = str(root)
    out = Rollout()
    out.add("session_meta", {"id": "0199a3c4-5e6f-7a80-91b2-c3d4e5f60719", "timestamp": "2025-10-20T08:00:00.000Z",
                             "cwd": r, "originator": "codex_cli_rs", "cli_version": "0.46.0", "instructions": None,
                             "source": "cli", "model_provider": "openai", "git": {"commit_hash": base, "branch": "main"}})
    out.add("turn_context", {"cwd": r, "approval_policy": "on-request", "model": "gpt-5-codex"})
    out.item(user_item("sum() subtracts; fix it."))
    patch = "*** Begin Patch\n*** Update File: src/sum.ts\n@@\n-  return a - b;\n+  return a + b;\n*** End Patch\n"
    out.item({"type": "custom_tool_call", "status": "completed", "call_id": "c1", "name": "apply_patch", "input": patch})
    out.count(5000, 0, 300, 100)
    out.output("c1", "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM src/sum.ts\n",
               kind="custom_tool_call_output")
    out.call("c2", "shell", command=["bash", "-lc", "pnpm vitest run"], workdir=r)
    out.count(5400, 4900, 40, 0)
    out.output("c2", json.dumps({"output": " Test Files  1 passed (1)\n      Tests  3 passed (3)\n",
                                 "metadata": {"exit_code": 0}}))
    out.call("c3", "shell", command=["bash", "-lc", "npx eslint src && npx tsc --noEmit"], workdir=r)
    out.count(5600, 5300, 40, 0)
    out.output("c3", json.dumps({"output": "", "metadata": {"exit_code": 0}}))
    (root / "src" / "sum.ts").write_text(SRC.replace("a - b", "a + b"))
    session = out.write(tmp_path / "rollout-2025-10-20T08-00-00-y.jsonl")
    (traj,) = read_trajectories(session)
    assert [(c.command, c.result) for c in verifications(traj.events)] == [
        ("pnpm vitest run", "passed"), ("npx eslint src && npx tsc --noEmit", "passed")]
    h = compose_handoff(session, root)
    assert (h.facts.validation_status, h.facts.continuation_label) == ("passed", "validated by predecessor")


@pytest.mark.parametrize("command", [
    "npx hardhat test", "npm run test", "npx jest", "npx vitest run", "pnpm vitest", "bun test", "anchor test",
    "forge test -vvv", "cargo test", "go test ./...", "python manage.py test", "tox -e py", "nox -s tests",
    "make test", "npm run build", "npm run lint", "tsc --noEmit", "ruff check .", "mypy src", "yarn test:unit",
    "./gradlew check", "uv run pytest -q", "cargo clippy", "eslint src", "make",
])
def test_test_build_and_lint_runs_of_the_common_ecosystems_are_verification(command):
    assert is_verification_command(command)


@pytest.mark.parametrize("command", [
    "npm install", "npm ci", "pnpm install", "yarn", "cat package.json", "grep jest package.json", "make install",
    "cargo run", "go run main.go", "python manage.py migrate", "npm run dev", "npx create-react-app app",
])
def test_installs_runs_and_reads_are_not_verification(command):
    assert not is_verification_command(command)


@pytest.mark.parametrize(("output", "exit_code", "expected"), [
    ("=========== 600 passed, 100 skipped, 1 xfailed in 5.43s ===========", 0, "passed"),
    ("XFAIL tests/test_a.py::test_b - reason: flaky\n1 xpassed, 3 passed in 0.20s", None, "passed"),
    ("!!!!!!!!!!!!!!!!!!! Interrupted: 3 errors during collection !!!!!!!!!!!!!!!!!!!", None, "failed"),
    ("Ran 12 tests in 0.041s\n\nFAILED (failures=1, errors=2)", None, "failed"),
    ("Ran 12 tests in 0.041s\n\nOK (skipped=1, expected failures=1)", None, "passed"),
    ("tests finished: 10 passed, 1 failed, 2 skipped, in 1.23 seconds\nDO *NOT* COMMIT!", None, "failed"),
    ("  12 passing (340ms)\n  2 failing", None, "failed"),
    ("test result: ok. 5 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s", 0, "passed"),
    ("--- FAIL: TestSum (0.00s)\nFAIL\texample.com/sum\t0.004s", 1, "failed"),
    ("Suite result: ok. 3 passed; 0 failed; 0 skipped; finished in 1.02ms", 0, "passed"),
    ("Success: no issues found in 12 source files", 0, "passed"),
    ("src/a.ts(3,5): error TS2322: Type 'string' is not assignable to type 'number'.", 2, "failed"),
    ("✖ 3 problems (2 errors, 1 warning)", 1, "failed"),
    ("5 skipped in 0.10s", 0, "unknown"),  # nothing ran
    ("=== 3 passed in 0.1s ===\n./check.sh: line 2: boom", 1, "failed"),  # the command failed after pytest
])
def test_runner_summaries_are_read_by_their_grammar(output, exit_code, expected):
    assert verification_result(output, exit_code) == expected


def test_a_swe_agent_run_whose_pytest_stops_at_collection_keeps_its_post_failure_point(tmp_path):
    from test_replay_recorded_tools import swe_agent_traj

    interrupted = ("==================================== ERRORS ====================================\n"
                   "_________________ ERROR collecting tests/test_calc.py _________________\n"
                   "E   ImportError: cannot import name 'sub' from 'calc'\n"
                   "!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!")
    steps = [("str_replace_editor str_replace /testbed/calc.py --old_str 'x' --new_str 'y'", "The file was edited."),
             ("python -m pytest tests/test_calc.py", interrupted),
             ("str_replace_editor str_replace /testbed/calc.py --old_str 'y' --new_str 'z'", "The file was edited."),
             ("submit", "")]
    (traj,) = read_trajectories(swe_agent_traj(tmp_path / "acme__calc-1.traj", steps, ""))
    diffs = [{}, {"calc.py": "1"}, {"calc.py": "1"}, {"calc.py": "1"}, {"calc.py": "2"}, {"calc.py": "2"},
             {"calc.py": "2"}, {"calc.py": "2"}]
    assert [(v.result, v.evidence) for v in verifications(traj.events)] == [
        ("failed", "!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!")]
    points = {p.type: p.event_index for p in detect_points(traj.events, diffs)[0]}
    assert points == {"after_first_source_edit": 1, "after_first_verification_result": 3,
                      "after_first_post_failure_edit": 4}
