"""SWE-bench's verdict rules, written out once for both harness versions (docs/protocol.md section 6, extension
"Grading rules"): from a test log to a status map, from a status map to the FAIL_TO_PASS / PASS_TO_PASS report,
and from the report to ``resolved``.

This module is the one source of the rules takeover applies itself. Grading decides with the installed
harness's own ``get_eval_tests_report`` under the installed harness's rules and with :func:`tests_report` under
the other version's (:mod:`takeover.grading.verdict`); a test log becomes a status map with
:func:`logs_eval` under either (:mod:`takeover.grading.log_parsing`); and the verdict script an exported
Harbor task runs in its own container is generated from this file (:mod:`takeover.harbor.verdict_script`).
So it imports nothing but the standard library and runs on Python 3.6 (the system Python of SWE-bench's
images), which is why it has no annotations. ``tests/test_grading_rules.py`` checks each rule against the
harness that has it, under both versions, and ``tests/test_harbor_verdict.py`` that the shipped script gives
the verdicts grading gives.

The rules (``swebench-4.1`` unless said otherwise):

- a log holding one of swebench's failure markers (patch apply failed, reset failed, tests errored or timed
  out), or missing the start/end markers, has no status map; the text between the markers is parsed, the
  whole log when that yields nothing. ``swebench-5.0`` also rejects an empty status map without a sign that a
  runner ran, and a log whose recorded test exit code is non-zero while no test failed or errored;
- a listed test passes when its status is ``PASSED`` or ``XFAIL`` and fails when it is missing or
  ``FAILED``/``ERROR``; a ``SKIPPED`` one is in neither list. Under ``swebench-5.0`` a skipped PASS_TO_PASS
  test passes (it is maintained) and a skipped FAIL_TO_PASS test fails, and an expected id truncated inside its
  parameters (more ``[`` than ``]``) matches the one test id it prefixes, or several that agree on pass/fail;
- with ``eval_type`` ``fail_only``, only a listed test the map says ``FAILED`` fails (both versions);
- the task is resolved when every counted FAIL_TO_PASS and PASS_TO_PASS test passes (an empty list is complete).
"""

import re

#: The verdict rules of the two harness versions.
RULES_4_1, RULES_5_0 = "swebench-4.1", "swebench-5.0"
PASSED, FAILED, SKIPPED, ERROR, XFAIL = "PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL"
#: swebench's markers (the same in 4.1 and 5.0); the exit-code line is 5.0's, written after the end marker.
APPLY_PATCH_FAIL = ">>>>> Patch Apply Failed"
RESET_FAILED = ">>>>> Reset Failed"
TESTS_ERROR = ">>>>> Tests Errored"
TESTS_TIMEOUT = ">>>>> Tests Timed Out"
START_TEST_OUTPUT = ">>>>> Start Test Output"
END_TEST_OUTPUT = ">>>>> End Test Output"
TEST_EXIT_CODE = ">>>>> Test Exit Code"
_EXIT_CODE = re.compile(re.escape(TEST_EXIT_CODE) + r":\s*(-?\d+)")
# What 5.0 takes as a sign that a runner ran when a log yields no status map: a non-zero count in a
# runner's own summary line (karma, mocha, jest, tap, jasmine; openlayers' per-case "': ok").
_RUNNER_RAN = re.compile(r"Executed [1-9]\d* of \d+|TOTAL: [1-9]\d* (?:SUCCESS|FAILED)|[1-9]\d* passing"
                         r"|Tests:\s+[1-9]\d*|Test Suites:\s+(?:\d+ \w+, )*[1-9]\d* total|^# tests [1-9]\d*"
                         r"|[1-9]\d* specs?, \d+ failures?|': ok$", re.MULTILINE)


def test_exit_code(log):
    """The test command's exit status a 5.0 eval script records after the end marker (an int), None without
    one."""
    m = _EXIT_CODE.search(log)
    return int(m.group(1)) if m else None


test_exit_code.__test__ = False  # not a pytest test despite the name


def logs_eval(content, parse, rules):
    """``(status map, found)`` of a test log under ``rules`` (``get_logs_eval``): ``parse(text)`` is the
    repository's log parser, giving ``{test: status}``; ``({}, False)`` for a log with no status map (the
    module docstring's rules)."""
    if any(code in content for code in (APPLY_PATCH_FAIL, RESET_FAILED, TESTS_ERROR, TESTS_TIMEOUT)):
        return {}, False
    if START_TEST_OUTPUT not in content or END_TEST_OUTPUT not in content:
        return {}, False
    status = parse(content.split(START_TEST_OUTPUT)[1].split(END_TEST_OUTPUT)[0]) or parse(content)
    if rules == RULES_5_0:
        if not status and not _RUNNER_RAN.search(content):
            return {}, False
        code = test_exit_code(content)
        if code not in (None, 0) and status and not any(s in (FAILED, ERROR) for s in status.values()):
            return {}, False
    return status, True


def _key(case, status_map, rules):
    """The status map's id of the listed test ``case`` (5.0: the id a truncated one prefixes), or None."""
    if case in status_map:
        return case
    if rules == RULES_5_0 and case.count("[") > case.count("]"):
        matches = [k for k in status_map if k.startswith(case)]
        if matches and len({status_map[k] in (PASSED, XFAIL) for k in matches}) == 1:
            return matches[0]
    return None


def _split(tests, status_map, rules, maintained):
    """``{"success": [...], "failure": [...]}`` of the listed ``tests`` (``maintained``: PASS_TO_PASS)."""
    success, failure = [], []
    passing = [PASSED, XFAIL] + ([SKIPPED] if maintained and rules == RULES_5_0 else [])
    failing = [FAILED, ERROR] + ([SKIPPED] if rules == RULES_5_0 else [])
    for case in tests:
        key = _key(case, status_map, rules)
        status = status_map.get(key) if key is not None else None
        if status in passing:
            success.append(case)
        elif key is None or status in failing:
            failure.append(case)
    return {"success": success, "failure": failure}


def tests_report(status_map, fail_to_pass, pass_to_pass, eval_type, rules):
    """swebench's ``get_eval_tests_report`` under ``rules``: ``{"FAIL_TO_PASS": {"success": [...], "failure":
    [...]}, "PASS_TO_PASS": ..., "FAIL_TO_FAIL": ..., "PASS_TO_FAIL": ...}`` (the last two empty);
    ``eval_type`` is ``pass_and_fail`` or ``fail_only``."""
    gold = {"FAIL_TO_PASS": list(fail_to_pass), "PASS_TO_PASS": list(pass_to_pass)}
    if eval_type == "fail_only":
        out = {k: {"success": [t for t in v if status_map.get(t) != FAILED],
                   "failure": [t for t in v if status_map.get(t) == FAILED]} for k, v in gold.items()}
    else:
        out = {"FAIL_TO_PASS": _split(gold["FAIL_TO_PASS"], status_map, rules, maintained=False),
               "PASS_TO_PASS": _split(gold["PASS_TO_PASS"], status_map, rules, maintained=True)}
    out["FAIL_TO_FAIL"] = {"success": [], "failure": []}
    out["PASS_TO_FAIL"] = {"success": [], "failure": []}
    return out


def is_resolved(report):
    """swebench's ``get_resolution_status(report) == RESOLVED_FULL`` (the same rule in 4.1 and 5.0): every
    FAIL_TO_PASS and PASS_TO_PASS test counted is a success (a class with none counted is complete)."""
    return all(not report[k]["failure"] for k in ("FAIL_TO_PASS", "PASS_TO_PASS"))
