"""The verdict of an exported Harbor task, run by its ``tests/test.sh`` inside the task's container
(docs/protocol.md section 6): SWE-bench's test log -> ``reward.txt`` and ``report.json``.

The task ships this file as ``tests/swebench_verdict.py`` with the verdict rules inlined where it imports them:
:func:`takeover.harbor.task_folder.verdict_script` generates it from :mod:`takeover.grading.swebench_rules`,
the one source of the rules grading applies, so the shipped script decides as ``takeover grade`` does. It
runs with the container's system Python (3.6 or later, standard library only) and is never imported by
takeover itself:

- the log becomes a status map with swebench's log parser of the repository (the task ships swebench's own
  ``log_parsers/python.py`` beside this file; ``config.json`` names the parser function), under the verdict
  rules ``config.json`` names (``grading_rules``: those the export was asked for, by default the installed
  swebench's);
- the FAIL_TO_PASS and PASS_TO_PASS report follows from it (``eval_type`` from ``config.json``), and the task
  is resolved when the test patch applied (no ``Patch Apply Failed`` marker) and every listed test passes.

Usage: ``python3 swebench_verdict.py CONFIG LOG OUT_DIR``; writes ``OUT_DIR/reward.txt`` (``1`` or ``0``) and
``OUT_DIR/report.json`` (``{instance_id: {resolved, patch_successfully_applied, grading_rules, tests_status:
{FAIL_TO_PASS: {success, failure}, PASS_TO_PASS: {...}}}}``, swebench's report shape).
"""

import json
import os
import sys

from takeover.grading.swebench_rules import APPLY_PATCH_FAIL, RULES_4_1, is_resolved, logs_eval, tests_report


def _parser(name):
    """swebench's log parser ``name`` from the parsers shipped beside this file."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    from swebench.harness.log_parsers import python as parsers  # shipped beside this file

    return getattr(parsers, name)


def verdict(config, content):
    """``(resolved, report)`` of the test log ``content`` for the task ``config`` (``config.json``)."""
    parse = _parser(config["log_parser"])
    rules = config.get("grading_rules", RULES_4_1)
    applied = APPLY_PATCH_FAIL not in content
    statuses = logs_eval(content, lambda text: parse(text, None), rules)[0] if applied else {}
    tests = tests_report(statuses, config["FAIL_TO_PASS"], config["PASS_TO_PASS"],
                         config.get("eval_type", "pass_and_fail"), rules)
    resolved = applied and is_resolved(tests)
    report = {config["instance_id"]: {"resolved": resolved, "patch_successfully_applied": applied,
                                      "grading_rules": rules,
                                      "tests_status": {k: tests[k] for k in ("FAIL_TO_PASS", "PASS_TO_PASS")}}}
    return resolved, report


def main(argv):
    config_path, log_path, out_dir = argv
    with open(config_path) as fh:
        config = json.load(fh)
    try:
        with open(log_path, errors="replace") as fh:
            content = fh.read()
    except OSError:
        content = ""
    resolved, report = verdict(config, content)
    with open(os.path.join(out_dir, "report.json"), "w") as fh:
        json.dump(report, fh, indent=2)
    with open(os.path.join(out_dir, "reward.txt"), "w") as fh:
        fh.write("1\n" if resolved else "0\n")
    print("resolved" if resolved else "not resolved")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
