"""The verdict of an exported Harbor task, run by its ``tests/test.sh`` inside the task's container
(docs/protocol.md section 6): SWE-bench's test log -> ``reward.txt`` and ``report.json``.

This file is copied into every exported task as ``tests/swebench_verdict.py`` and runs with the container's
system Python (3.6 or later, standard library only), never imported by takeover itself. It follows swebench's
own grading (``swebench.harness.grading``):

- a log holding one of swebench's failure codes (patch apply failed, reset failed, tests errored or timed
  out), or missing the start/end markers, has no status map: nothing passes;
- the text between the markers goes to swebench's log parser of the repository (the task ships swebench's
  own ``log_parsers/python.py`` beside this file; ``config.json`` names the parser function); when it finds
  no test there, the whole log is parsed, as swebench does;
- a FAIL_TO_PASS or PASS_TO_PASS test passes when its status is ``PASSED`` or ``XFAIL``, fails when it is
  missing or ``FAILED``/``ERROR``; a ``SKIPPED`` one is in neither list under ``swebench-4.1`` rules, while
  under ``swebench-5.0`` rules (``config.json``'s ``grading_rules``, those of the swebench that exported the
  task) a skipped PASS_TO_PASS test passes and a skipped FAIL_TO_PASS test fails, and a log whose recorded
  test exit code is non-zero while no test failed or errored has no status map. 5.0's prefix match of
  truncated parametrized ids is not reproduced here (such an id counts as missing);
- the task is resolved when every FAIL_TO_PASS and every PASS_TO_PASS test passes (an empty list counts as
  all passing, swebench's rate of 1).

Usage: ``python3 swebench_verdict.py CONFIG LOG OUT_DIR``; writes ``OUT_DIR/reward.txt`` (``1`` or ``0``) and
``OUT_DIR/report.json`` (``{instance_id: {resolved, patch_successfully_applied, tests_status: {FAIL_TO_PASS:
{success, failure}, PASS_TO_PASS: {...}}}}``, swebench's report shape).
"""

import json
import os
import re
import sys

FAILURE_CODES = (">>>>> Patch Apply Failed", ">>>>> Reset Failed", ">>>>> Tests Errored", ">>>>> Tests Timed Out")
START, END = ">>>>> Start Test Output", ">>>>> End Test Output"
PASSING, FAILING, SKIPPED = ("PASSED", "XFAIL"), ("FAILED", "ERROR"), "SKIPPED"
EXIT_CODE = re.compile(r">>>>> Test Exit Code:\s*(-?\d+)")


def status_map(content, parser):
    """``({test: status}, log usable)`` of a test log, as swebench's ``get_logs_eval``."""
    if any(code in content for code in FAILURE_CODES) or not (START in content and END in content):
        return {}, False
    between = content.split(START)[1].split(END)[0]
    return parser(between, None) or parser(content, None), True


def outcomes(tests, statuses, skipped_passes=None):
    """``{"success": [...], "failure": [...]}`` of ``tests`` under ``statuses`` (swebench's pass/fail rule);
    ``skipped_passes``: None leaves a skipped test out of both lists (4.1), True/False counts it (5.0)."""
    passing = PASSING + ((SKIPPED,) if skipped_passes is True else ())
    failing = FAILING + ((SKIPPED,) if skipped_passes is False else ())
    success = [t for t in tests if statuses.get(t) in passing]
    failure = [t for t in tests if t not in statuses or statuses[t] in failing]
    return {"success": success, "failure": failure}


def exit_code_contradicts(content, statuses):
    """5.0's rule: the log records a non-zero test exit code while no test failed or errored."""
    match = EXIT_CODE.search(content)
    return bool(match) and int(match.group(1)) != 0 and not any(v in FAILING for v in statuses.values())


def _parser(name):
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    from swebench.harness.log_parsers import python as parsers  # shipped beside this file

    return getattr(parsers, name)


def main(argv):
    config_path, log_path, out_dir = argv
    with open(config_path) as fh:
        config = json.load(fh)
    try:
        with open(log_path, errors="replace") as fh:
            content = fh.read()
    except OSError:
        content = ""
    statuses, applied = status_map(content, _parser(config["log_parser"]))
    rules_50 = config.get("grading_rules") == "swebench-5.0"
    if rules_50 and exit_code_contradicts(content, statuses):
        statuses = {}
    f2p = outcomes(config["FAIL_TO_PASS"], statuses, skipped_passes=False if rules_50 else None)
    p2p = outcomes(config["PASS_TO_PASS"], statuses, skipped_passes=True if rules_50 else None)
    resolved = applied and not f2p["failure"] and not p2p["failure"]
    report = {config["instance_id"]: {"resolved": resolved, "patch_successfully_applied": applied,
                                      "grading_rules": config.get("grading_rules", "swebench-4.1"),
                                      "tests_status": {"FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p}}}
    with open(os.path.join(out_dir, "report.json"), "w") as fh:
        json.dump(report, fh, indent=2)
    with open(os.path.join(out_dir, "reward.txt"), "w") as fh:
        fh.write("1\n" if resolved else "0\n")
    print("resolved" if resolved else "not resolved")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
