"""Grading's verdict on a captured log and the report.json written beside it, written out as literal
records (docs/protocol.md section 6; swebench's report shape)."""

from __future__ import annotations

from takeover.grading import GradeResult, TestOutcome, grade_log, swebench_report
from takeover.grading.verdict import set_aside_by_reference
from takeover.sources.tasks import SourceTask

START, END = ">>>>> Start Test Output", ">>>>> End Test Output"
LOG = f"""{START}
PASSED tests/test_a.py::test_fixed
FAILED tests/test_a.py::test_kept
{END}
"""


def _task(repo: str) -> SourceTask:
    return SourceTask(instance_id="o__r-1", repo=repo, base_commit="0" * 40, problem_statement="p", version="1.0",
                      FAIL_TO_PASS=["tests/test_a.py::test_fixed"],
                      PASS_TO_PASS=["tests/test_a.py::test_kept", "tests/test_a.py::test_not_in_log"])


def test_a_patch_that_did_not_apply_fails_every_test_whatever_the_log_says():
    r = grade_log(LOG, _task("acme/calc"), log_parser="pytest", applied=False)
    assert (r.applied, r.resolved, r.handoff_state, r.backend) == (False, False, "invalid", "local")
    assert r.FAIL_TO_PASS == TestOutcome(success=[], failure=["tests/test_a.py::test_fixed"])
    assert r.PASS_TO_PASS == TestOutcome(success=[], failure=["tests/test_a.py::test_kept", "tests/test_a.py::test_not_in_log"])
    assert grade_log(LOG, _task("acme/calc"), log_parser="pytest", backend="docker").backend == "docker"


def test_pass_to_pass_tests_missing_from_the_log_pass_only_for_swebench_fail_only_repositories():
    # swebench grades chartjs/Chart.js, markedjs/marked and processing/p5.js on FAIL_TO_PASS only: a
    # PASS_TO_PASS test the log does not mention is not a failure there.
    usual = grade_log(LOG, _task("acme/calc"), log_parser="pytest")
    assert usual.PASS_TO_PASS == TestOutcome(success=[], failure=["tests/test_a.py::test_kept", "tests/test_a.py::test_not_in_log"])
    fail_only = grade_log(LOG, _task("markedjs/marked"), log_parser="pytest")
    assert fail_only.PASS_TO_PASS == TestOutcome(success=["tests/test_a.py::test_not_in_log"],
                                                 failure=["tests/test_a.py::test_kept"])
    assert fail_only.FAIL_TO_PASS.success == ["tests/test_a.py::test_fixed"]


def test_report_json_written_out():
    result = GradeResult(instance_id="o__r-1", applied=True, resolved=True,
                         FAIL_TO_PASS=TestOutcome(success=["f"]), PASS_TO_PASS=TestOutcome(success=["p"], failure=["q"]))
    assert swebench_report(result, "diff --git a/x b/x\n") == {"o__r-1": {
        "patch_is_None": False,
        "patch_exists": True,
        "patch_successfully_applied": True,
        "resolved": True,
        "tests_status": {
            "FAIL_TO_PASS": {"success": ["f"], "failure": []},
            "PASS_TO_PASS": {"success": ["p"], "failure": ["q"]},
            "FAIL_TO_FAIL": {"success": [], "failure": []},
            "PASS_TO_FAIL": {"success": [], "failure": []},
        },
    }}
    no_patch = swebench_report(GradeResult(instance_id="o__r-1"), None)["o__r-1"]
    assert (no_patch["patch_is_None"], no_patch["patch_exists"], no_patch["patch_successfully_applied"]) == (True, False, False)


def test_a_patch_counts_as_applied_only_when_it_applied_and_the_tests_ran_to_the_end():
    def applied(**fields) -> bool:
        return swebench_report(GradeResult(instance_id="o__r-1", **fields), "d")["o__r-1"]["patch_successfully_applied"]

    assert applied(applied=True) is True
    assert applied(applied=True, timed_out=True) is False
    assert applied(applied=True, error="environment") is False
    assert applied(applied=False) is False
    assert applied(applied=False, timed_out=True) is False


def test_a_reference_patch_that_passes_every_pass_to_pass_test_leaves_no_note_to_warn_of():
    # What the report lists under "Warnings" comes from reference_note: a reference passing all is no warning.
    checkpoint = GradeResult(instance_id="acme__calc-1", applied=True, handoff_state="resolved_preserve",
                             FAIL_TO_PASS=TestOutcome(success=["t::f2p"]), PASS_TO_PASS=TestOutcome(success=["t::p"]))
    passing = set_aside_by_reference(checkpoint, checkpoint.model_copy())
    assert (passing.reference_note, passing.set_aside, passing.handoff_state) == (None, [], "resolved_preserve")
    failing_reference = checkpoint.model_copy(update={"PASS_TO_PASS": TestOutcome(failure=["t::p"])})
    failing_here = checkpoint.model_copy(update={"PASS_TO_PASS": TestOutcome(failure=["t::p"])})
    noted = set_aside_by_reference(failing_here, failing_reference)
    assert noted.reference_note == ("the reference patch fails 1 PASS_TO_PASS test(s) here (t::p); set aside from "
                                    "the handoff state")
    assert (noted.set_aside, noted.handoff_state) == (["t::p"], "resolved_preserve")
