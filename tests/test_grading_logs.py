"""Grading logic on SWE-bench log formats: swebench's own parsers and report functions via our code."""

from __future__ import annotations

import json

import pytest
from conftest import DATA
from prerequisites import requires

from takeover.errors import InputError
from takeover.grading import (
    GradeResult,
    TestOutcome,
    grade_log,
    handoff_state,
    parse_test_log,
    read_predictions,
    resolve_log_parser,
    swebench_report,
)
from takeover.sources.tasks import SourceTask

START = ">>>>> Start Test Output"
END = ">>>>> End Test Output"


def _task(repo: str, f2p: list[str], p2p: list[str], iid: str = "x__y-1") -> SourceTask:
    return SourceTask(instance_id=iid, repo=repo, base_commit="0" * 40, problem_statement="p",
                      FAIL_TO_PASS=f2p, PASS_TO_PASS=p2p, version="1.0")


PYTEST_LOG = f"""+ git apply -v -
{START}
============================= test session starts ==============================
collected 4 items

testing/test_capture.py ...F                                              [100%]

=========================== short test summary info ============================
PASSED testing/test_capture.py::test_a
PASSED testing/test_capture.py::TestX::test_b[\\r\\n]
XFAIL testing/test_capture.py::test_xf - reason
FAILED testing/test_capture.py::test_c - AssertionError: assert 1 == 2
========================= 1 failed, 2 passed, 1 xfailed in 0.12s =========================
{END}
"""

DJANGO_LOG = f"""{START}
Testing against Django installed in '/testbed/django'
Importing application queries
test_exists (queries.tests.ExistsSql) ... ok
test_ticket_1 (queries.tests.Queries1Tests) ... FAIL
test_ticket_2 (queries.tests.Queries1Tests) ... ERROR
test_skip (queries.tests.Queries1Tests) ... skipped 'no db'
test_multiline (queries.tests.Queries1Tests) ... System check identified no issues (0 silenced).
ok
======================================================================
FAIL: test_ticket_1 (queries.tests.Queries1Tests)
----------------------------------------------------------------------
Ran 5 tests in 0.1s

FAILED (failures=1, errors=1, skipped=1)
{END}
"""

SYMPY_LOG = f"""{START}
============================= test process starts ==============================
executable:         /usr/bin/python  (3.9.18-final-0) [CPython]

sympy/functions/elementary/tests/test_hyperbolic.py[3]
test_sinh ok
test_coth F
test_tanh E

________________________________________________________________________________
_________ sympy/functions/elementary/tests/test_hyperbolic.py:test_coth _________
Traceback (most recent call last):
AssertionError
============= tests finished: 1 passed, 1 failed, 1 exceptions, in 0.50 seconds ==============
DO *NOT* COMMIT!
{END}
"""


def test_pytest_log_resolved_and_needs_completion():
    task = _task("pytest-dev/pytest", ["testing/test_capture.py::TestX::test_b[\\r\\n]"],
                 ["testing/test_capture.py::test_a", "testing/test_capture.py::test_xf"])
    status, found = parse_test_log(PYTEST_LOG, task)
    assert found
    assert status["testing/test_capture.py::test_c"] == "FAILED"
    assert status["testing/test_capture.py::test_xf"] == "XFAIL"
    r = grade_log(PYTEST_LOG, task)
    assert r.resolved and r.handoff_state == "resolved_preserve"
    assert r.FAIL_TO_PASS.success == ["testing/test_capture.py::TestX::test_b[\\r\\n]"]
    assert r.PASS_TO_PASS.failure == []

    task2 = _task("pytest-dev/pytest", ["testing/test_capture.py::test_c"], ["testing/test_capture.py::test_a"])
    r2 = grade_log(PYTEST_LOG, task2)
    assert not r2.resolved
    assert r2.FAIL_TO_PASS.failure == ["testing/test_capture.py::test_c"]
    assert r2.handoff_state == "needs_completion"


def test_pytest_log_broke_existing_and_missing_test_counts_as_failure():
    task = _task("pallets/flask", ["testing/test_capture.py::test_a"],
                 ["testing/test_capture.py::test_c", "testing/test_capture.py::never_ran"])
    r = grade_log(PYTEST_LOG, task)
    assert r.FAIL_TO_PASS.success == ["testing/test_capture.py::test_a"]
    assert r.PASS_TO_PASS.failure == ["testing/test_capture.py::test_c", "testing/test_capture.py::never_ran"]
    assert r.handoff_state == "broke_existing" and not r.resolved


def test_django_log():
    f2p = ["test_ticket_1 (queries.tests.Queries1Tests)"]
    p2p = ["test_exists (queries.tests.ExistsSql)", "test_multiline (queries.tests.Queries1Tests)"]
    task = _task("django/django", f2p, p2p)
    status, _ = parse_test_log(DJANGO_LOG, task)
    assert status["test_ticket_2 (queries.tests.Queries1Tests)"] == "ERROR"
    assert status["test_skip (queries.tests.Queries1Tests)"] == "SKIPPED"
    r = grade_log(DJANGO_LOG, task)
    assert r.PASS_TO_PASS.success == p2p
    assert r.FAIL_TO_PASS.failure == f2p
    assert r.handoff_state == "needs_completion"


def test_sympy_log_with_named_parser_on_a_custom_repo():
    task = _task("acme/mathlib", ["test_sinh"], ["test_tanh"])
    # a repository swebench does not know: the parser is named explicitly (takeover_env_spec.log_parser)
    r = grade_log(SYMPY_LOG, task, log_parser="sympy")
    assert r.FAIL_TO_PASS.success == ["test_sinh"]
    assert r.PASS_TO_PASS.failure == ["test_tanh"]
    assert r.handoff_state == "broke_existing"
    status, _ = parse_test_log(SYMPY_LOG, task, "sympy/sympy")
    assert status["test_coth"] == "FAILED" and status["test_tanh"] == "ERROR"


def test_timeout_or_missing_markers_give_empty_status():
    task = _task("pytest-dev/pytest", ["testing/test_capture.py::test_a"], [])
    timed_out = PYTEST_LOG.replace(END, ">>>>> Tests Timed Out")
    assert parse_test_log(timed_out, task) == ({}, False)
    assert parse_test_log(PYTEST_LOG.replace(START, ""), task) == ({}, False)
    assert grade_log(timed_out, task).FAIL_TO_PASS.failure == ["testing/test_capture.py::test_a"]


def test_unknown_parser_name_is_reported():
    from takeover.errors import EnvironmentUnavailable

    with pytest.raises(EnvironmentUnavailable, match="unknown log parser 'nosuch'"):
        resolve_log_parser("nosuch", None)
    assert resolve_log_parser(None, "acme/unknown").__name__ == "parse_log_pytest"


def test_handoff_state_order_protocol_section_6():
    both_fail = GradeResult(instance_id="a", applied=True, FAIL_TO_PASS=TestOutcome(failure=["f"]),
                            PASS_TO_PASS=TestOutcome(failure=["p"]))
    assert handoff_state(both_fail) == "needs_completion"  # F2P failing is checked before P2P
    assert handoff_state(GradeResult(instance_id="a", applied=False)) == "invalid"
    assert handoff_state(GradeResult(instance_id="a", applied=True)) == "resolved_preserve"
    assert handoff_state(GradeResult(instance_id="a", applied=True, PASS_TO_PASS=TestOutcome(failure=["p"]))) \
        == "broke_existing"
    assert handoff_state(GradeResult(instance_id="a", applied=True, error="environment: no Python 3.6")) is None


def test_report_json_is_swebench_shaped():
    task = _task("pytest-dev/pytest", ["testing/test_capture.py::test_a"], [])
    r = grade_log(PYTEST_LOG, task)
    rep = swebench_report(r, "diff --git a/x b/x\n")
    inner = rep["x__y-1"]
    assert inner["resolved"] is True and inner["patch_successfully_applied"] is True
    assert inner["tests_status"]["FAIL_TO_PASS"] == {"success": ["testing/test_capture.py::test_a"], "failure": []}
    assert set(inner["tests_status"]) == {"FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL"}


def test_read_predictions_formats(tmp_path):
    rows = [{"instance_id": "a__b-1", "model_name_or_path": "m", "model_patch": "diff"},
            {"instance_id": "a__b-2", "model_name_or_path": "m", "model_patch": None}]
    jl = tmp_path / "preds.jsonl"
    jl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    js = tmp_path / "preds.json"
    js.write_text(json.dumps({r["instance_id"]: r for r in rows}))
    for path in (jl, js):
        preds = read_predictions(path)
        assert [p.instance_id for p in preds] == ["a__b-1", "a__b-2"]
        assert preds[1].model_patch is None and preds[0].model_name_or_path == "m"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"model_patch": "x"}) + "\n")
    with pytest.raises(InputError) as err:
        read_predictions(bad)
    assert "line 1" in str(err.value) and "instance_id" in str(err.value)


@requires("shared:swebench_verified.jsonl")
def test_eval_script_for_a_real_task_uses_swebench_command_and_directives():
    from takeover.environments import env_spec_for
    from takeover.environments.swebench_specs import repo_version_specs
    from takeover.grading import eval_script, test_directives
    from takeover.grading.swebench_rules import END_TEST_OUTPUT, START_TEST_OUTPUT
    from takeover.sources.tasks import load_tasks

    task = {t.instance_id: t for t in load_tasks(DATA / "swebench_verified.jsonl")}["sympy__sympy-13480"]
    assert test_directives(task) == ["sympy/functions/elementary/tests/test_hyperbolic.py"]
    script = eval_script(env_spec_for(task), task)
    test_cmd = repo_version_specs("sympy/sympy", "1.1")["test_cmd"]
    assert f"{test_cmd} sympy/functions/elementary/tests/test_hyperbolic.py" in script
    assert script.index(START_TEST_OUTPUT) < script.index(test_cmd) < script.index(END_TEST_OUTPUT)
