"""The verdict rules of swebench 4.1 and 5.0, one test per changed rule, each showing the verdict under both
(docs/protocol.md section 6, extension "Grading rules"); and the rules written out in
takeover.grading.swebench_rules (their one source) checked against the installed harness's own functions on the
same logs.

This file runs under whichever harness is installed (the shared venv's), and tests/test_harness_versions.py
runs it under the other one, so each version's rendition is checked against the real one."""

from __future__ import annotations

import pytest

from takeover._util import harness_version
from takeover.grading import grade_log, swebench_rules
from takeover.grading.log_parsing import parser_test_spec, resolve_log_parser
from takeover.sources.tasks import SourceTask

START, END = ">>>>> Start Test Output", ">>>>> End Test Output"
FIXED, KEPT = "testing/test_a.py::test_fixed", "testing/test_a.py::test_kept"
# An expected id that SWE-bench Verified carries truncated inside its parameters, and the test's full id.
TRUNCATED, FULL = "testing/test_a.py::test_grammar[log(photon", "testing/test_a.py::test_grammar[log(photon)]"


def _task(fail_to_pass: list[str] = (FIXED,), pass_to_pass: list[str] = (KEPT,)) -> SourceTask:
    return SourceTask(instance_id="pytest-dev__pytest-1", repo="pytest-dev/pytest", base_commit="0" * 40,
                      problem_statement="p", version="5.4", FAIL_TO_PASS=list(fail_to_pass),
                      PASS_TO_PASS=list(pass_to_pass))


def _log(*lines: str, exit_code: int | None = None) -> str:
    tail = f"\n{swebench_rules.TEST_EXIT_CODE}: {exit_code}" if exit_code is not None else ""
    return f"{START}\n" + "\n".join(lines) + f"\n{END}{tail}\n"


def _verdicts(log: str, task: SourceTask) -> dict[str, tuple]:
    out = {}
    for rules in harness_version.GRADING_RULES:
        r = grade_log(log, task, rules=rules)
        assert r.grading_rules == rules
        out[rules] = (r.resolved, r.handoff_state, r.FAIL_TO_PASS.model_dump(), r.PASS_TO_PASS.model_dump())
    return out


def test_a_skipped_pass_to_pass_test_is_maintained_under_5_0_and_counted_nowhere_under_4_1():
    v = _verdicts(_log(f"PASSED {FIXED}", f"SKIPPED {KEPT}"), _task())
    assert v["swebench-4.1"] == (True, "resolved_preserve", {"success": [FIXED], "failure": []},
                                 {"success": [], "failure": []})
    assert v["swebench-5.0"] == (True, "resolved_preserve", {"success": [FIXED], "failure": []},
                                 {"success": [KEPT], "failure": []})


def test_a_skipped_fail_to_pass_test_resolves_under_4_1_and_fails_under_5_0():
    v = _verdicts(_log(f"SKIPPED {FIXED}", f"PASSED {KEPT}"), _task())
    assert v["swebench-4.1"] == (True, "resolved_preserve", {"success": [], "failure": []},
                                 {"success": [KEPT], "failure": []})
    assert v["swebench-5.0"] == (False, "needs_completion", {"success": [], "failure": [FIXED]},
                                 {"success": [KEPT], "failure": []})


def test_a_truncated_parametrized_id_matches_the_test_it_prefixes_only_under_5_0():
    v = _verdicts(_log(f"PASSED {FULL}", f"PASSED {KEPT}"), _task([TRUNCATED]))
    assert v["swebench-4.1"][:3] == (False, "needs_completion", {"success": [], "failure": [TRUNCATED]})
    assert v["swebench-5.0"][:3] == (True, "resolved_preserve", {"success": [TRUNCATED], "failure": []})
    # Two candidates that disagree on pass/fail match nothing: the test fails under both.
    split = _verdicts(_log(f"PASSED {FULL}", f"FAILED {FULL[:-2]}x)]", f"PASSED {KEPT}"), _task([TRUNCATED]))
    assert split["swebench-5.0"][2] == split["swebench-4.1"][2] == {"success": [], "failure": [TRUNCATED]}


def test_a_log_whose_exit_code_contradicts_its_results_is_rejected_only_under_5_0():
    log = _log(f"PASSED {FIXED}", f"PASSED {KEPT}", exit_code=1)
    v = _verdicts(log, _task())
    assert v["swebench-4.1"][:2] == (True, "resolved_preserve")
    assert v["swebench-5.0"] == (False, "needs_completion", {"success": [], "failure": [FIXED]},
                                 {"success": [], "failure": [KEPT]})
    # A failing test explains the exit code: nothing is rejected, and the verdicts agree.
    agree = _verdicts(_log(f"PASSED {FIXED}", f"FAILED {KEPT}", exit_code=1), _task())
    assert agree["swebench-4.1"] == agree["swebench-5.0"]
    assert agree["swebench-5.0"][:2] == (False, "broke_existing")


def test_the_default_rules_are_the_installed_harness_and_unknown_rules_are_refused():
    major = int(harness_version.installed_harness().split(".")[0])
    assert harness_version.grading_rules(None) == ("swebench-5.0" if major >= 5 else "swebench-4.1")
    assert grade_log(_log(f"PASSED {FIXED}"), _task()).grading_rules == harness_version.installed_rules()
    assert grade_log(_log(f"PASSED {FIXED}"), _task()).harness == f"swebench {harness_version.installed_harness()}"
    with pytest.raises(ValueError, match="unknown grading rules 'swebench-6'; known: swebench-4.1, swebench-5.0"):
        harness_version.grading_rules("swebench-6")


RULE_LOGS = {
    "skipped P2P": (_log(f"PASSED {FIXED}", f"SKIPPED {KEPT}"), [FIXED]),
    "skipped F2P": (_log(f"SKIPPED {FIXED}", f"PASSED {KEPT}"), [FIXED]),
    "truncated id": (_log(f"PASSED {FULL}", f"PASSED {KEPT}"), [TRUNCATED]),
    "exit code": (_log(f"PASSED {FIXED}", f"PASSED {KEPT}", exit_code=1), [FIXED]),
    "no test ran": (_log("collected 0 items"), [FIXED]),
    "timed out": (_log(f"PASSED {FIXED}") + f"{swebench_rules.TESTS_TIMEOUT}\n", [FIXED]),
}


@pytest.mark.parametrize("case", sorted(RULE_LOGS))
def test_the_rules_written_out_agree_with_the_installed_harness(case, tmp_path):
    """The rendition of the installed version's rules equals swebench's own ``get_logs_eval`` and
    ``get_eval_tests_report`` on each rule's log."""
    from swebench.harness.constants import EvalType
    from swebench.harness.grading import get_eval_tests_report, get_logs_eval

    log, fail_to_pass = RULE_LOGS[case]
    task = _task(fail_to_pass)
    rules = harness_version.installed_rules()
    path = tmp_path / "test_output.txt"
    path.write_text(log, encoding="utf-8")
    theirs = get_logs_eval(parser_test_spec(task), str(path))
    parser = resolve_log_parser(None, task.repo)
    ours = swebench_rules.logs_eval(log, lambda text: parser(text, parser_test_spec(task)), rules)
    assert ours == theirs
    gold = {"FAIL_TO_PASS": task.FAIL_TO_PASS, "PASS_TO_PASS": task.PASS_TO_PASS}
    assert (swebench_rules.tests_report(ours[0], task.FAIL_TO_PASS, task.PASS_TO_PASS, "pass_and_fail", rules)
            == get_eval_tests_report(theirs[0], gold, eval_type=EvalType.PASS_AND_FAIL))
