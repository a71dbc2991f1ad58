"""The one place that knows how the installed SWE-bench harness (swebench 4.1 or 5.0) differs.

Three kinds of difference (docs/protocol.md section 6, extension "Grading rules"):

- **Where things are**: ``TestSpec`` moved from ``swebench.harness.test_spec.test_spec`` (4.1) to
  ``swebench.types`` (5.0) and lost its scripts but for ``eval_script_list``; parsers are looked up by name in
  ``PARSER_REGISTRY`` (5.0) instead of by repository in ``MAP_REPO_TO_PARSER`` (4.1); ``run_instance`` lost
  ``rm_image`` and ``force_rebuild`` (5.0 never removes or builds images: it pulls one only when the daemon
  lacks it); ``make_test_spec`` reads the row's ``image``/``eval_script``/``log_parser``/``eval_type`` (5.0)
  instead of the per-repository specifications (4.1).
- **Verdict rules** (:data:`GRADING_RULES`, a grading's ``grading_rules``). Under ``swebench-5.0``, unlike
  ``swebench-4.1``: a skipped PASS_TO_PASS test is maintained (4.1: counted in neither list); a skipped
  FAIL_TO_PASS test fails (4.1: in neither list, so an instance whose FAIL_TO_PASS tests all skip is
  resolved); an expected id truncated inside its parameters (more ``[`` than ``]``) matches the one test
  id it prefixes, or several that agree on pass/fail; a log whose recorded test exit code is non-zero
  while no test failed or errored is rejected (no status map), as is a log with no status map and no sign
  that a runner ran.
- **Parsers**: the installed harness's parsers parse every log (5.0's record a few pytest ids otherwise:
  ``SKIPPED [1] file:line`` summaries are no test, an assertion message no longer enters the id); the
  result's ``harness`` names the version that parsed.

The verdict rules of the installed harness are its own functions (``get_eval_tests_report``); those of
the other version are written out here (:func:`tests_report`), and ``tests/test_grading_rules.py`` checks
both renditions against the harness that has them, under each version.

swebench is imported inside the functions: importing ``swebench.harness`` takes seconds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from takeover.errors import EnvironmentUnavailable

#: The verdict rules a grading may be decided under: the harness versions whose rules differ.
GradingRules = Literal["swebench-4.1", "swebench-5.0"]
GRADING_RULES: tuple[GradingRules, ...] = ("swebench-4.1", "swebench-5.0")

PASSED, FAILED, SKIPPED, ERROR, XFAIL = "PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL"
#: swebench's markers (the same in 4.1 and 5.0); the exit-code line is 5.0's, written after the end marker.
APPLY_PATCH_FAIL = ">>>>> Patch Apply Failed"
RESET_FAILED = ">>>>> Reset Failed"
TESTS_ERROR = ">>>>> Tests Errored"
TESTS_TIMEOUT = ">>>>> Tests Timed Out"
START_TEST_OUTPUT = ">>>>> Start Test Output"
END_TEST_OUTPUT = ">>>>> End Test Output"
TEST_EXIT_CODE = ">>>>> Test Exit Code"
_EXIT_CODE = re.compile(rf"{re.escape(TEST_EXIT_CODE)}:\s*(-?\d+)")
# What 5.0 takes as a sign that a runner ran when a log yields no status map: a non-zero count in a
# runner's own summary line (karma, mocha, jest, tap, jasmine; openlayers' per-case "': ok").
_RUNNER_RAN = re.compile(r"Executed [1-9]\d* of \d+|TOTAL: [1-9]\d* (?:SUCCESS|FAILED)|[1-9]\d* passing"
                         r"|Tests:\s+[1-9]\d*|Test Suites:\s+(?:\d+ \w+, )*[1-9]\d* total|^# tests [1-9]\d*"
                         r"|[1-9]\d* specs?, \d+ failures?|': ok$", re.MULTILINE)


def installed_harness() -> str:
    """The installed swebench's version (``"4.1.0"``, ``"5.0.2"``).

    Raises:
        EnvironmentUnavailable: swebench is not installed.
    """
    try:
        return metadata.version("swebench")
    except metadata.PackageNotFoundError:
        raise EnvironmentUnavailable("swebench is not installed (pip install 'swebench>=4.1,<5.1')") from None


def installed_rules() -> GradingRules:
    """The verdict rules of the installed harness: ``swebench-5.0`` for 5.x, else ``swebench-4.1``."""
    return "swebench-5.0" if int(installed_harness().split(".")[0]) >= 5 else "swebench-4.1"


def keeps_repo_specs() -> bool:
    """The installed harness still has the per-repository specifications and ``harness.test_spec`` (4.x)."""
    return installed_rules() == "swebench-4.1"


def grading_rules(name: str | None) -> GradingRules:
    """``name`` checked to be one of :data:`GRADING_RULES`; None = :func:`installed_rules`.

    Raises:
        ValueError: another name (the message lists the known ones).
    """
    if name is None:
        return installed_rules()
    if name not in GRADING_RULES:
        raise ValueError(f"unknown grading rules {name!r}; known: {', '.join(GRADING_RULES)}")
    return name  # type: ignore[return-value]


def log_parser(name: str) -> Callable[..., dict[str, str]] | None:
    """The installed harness's log parser called ``name`` (``parse_log_django`` or ``django``), None when
    it has none of that name."""
    full = name if name.startswith("parse_log_") else f"parse_log_{name}"
    if not keeps_repo_specs():
        from swebench.harness.log_parsers import PARSER_REGISTRY

        return PARSER_REGISTRY.get(full)
    from swebench.harness.log_parsers import c, go, java, javascript, php, python, ruby, rust

    for module in (python, javascript, c, go, java, php, ruby, rust):  # 4.1: a module per language, no registry
        fn = getattr(module, full, None)
        if callable(fn):
            return fn
    return None


def known_parsers() -> list[str]:
    """The installed harness's Python log parser names, short (``django``, ``pytest_v2``, ...)."""
    from swebench.harness.log_parsers import python as py_parsers

    return sorted(n[len("parse_log_"):] for n in dir(py_parsers) if n.startswith("parse_log_"))


def test_spec(*, instance_id: str, repo: str, version: str, fail_to_pass: list[str], pass_to_pass: list[str],
              image: str = "", eval_script: str = "", parser: str = "", eval_type: str = "pass_and_fail") -> Any:
    """The installed harness's ``TestSpec`` of one instance: 5.0's from the row's fields (``make_test_spec``,
    which also makes the script record the test exit code), 4.1's with the identity and tests only (what
    its parsers read; no scripts)."""
    if not keeps_repo_specs():
        from swebench.harness.utils import make_test_spec

        return make_test_spec({"instance_id": instance_id, "repo": repo, "version": version, "image": image,
                               "eval_script": eval_script, "FAIL_TO_PASS": fail_to_pass,
                               "PASS_TO_PASS": pass_to_pass, "log_parser": parser, "eval_type": eval_type})
    from swebench.harness.test_spec.test_spec import TestSpec

    return TestSpec(instance_id=instance_id, repo=repo, version=version, repo_script_list=[], eval_script_list=[],
                    env_script_list=[], arch="x86_64", FAIL_TO_PASS=fail_to_pass, PASS_TO_PASS=pass_to_pass,
                    language="py", docker_specs={}, namespace=None)


test_spec.__test__ = False  # not a pytest test despite the name


def test_exit_code(log: str) -> int | None:
    """The test command's exit status a 5.0 eval script records after the end marker, None without one."""
    m = _EXIT_CODE.search(log)
    return int(m.group(1)) if m else None


test_exit_code.__test__ = False


def logs_eval(content: str, parse: Callable[[str], dict[str, str]], rules: GradingRules) -> tuple[dict[str, str], bool]:
    """``(status map, found)`` of a test log as the harness of ``rules`` computes it (``get_logs_eval``).

    Both: a failure marker (patch, reset, error, timeout) or a missing start/end marker gives ``({}, False)``;
    the text between the markers is parsed (``parse``), the whole log when that yields nothing. 5.0 also
    gives ``({}, False)`` for an empty status map without a sign a runner ran, and for a recorded non-zero
    test exit code when no test failed or errored.
    """
    if any(code in content for code in (APPLY_PATCH_FAIL, RESET_FAILED, TESTS_ERROR, TESTS_TIMEOUT)):
        return {}, False
    if START_TEST_OUTPUT not in content or END_TEST_OUTPUT not in content:
        return {}, False
    status = parse(content.split(START_TEST_OUTPUT)[1].split(END_TEST_OUTPUT)[0]) or parse(content)
    if rules == "swebench-5.0":
        if not status and not _RUNNER_RAN.search(content):
            return {}, False
        code = test_exit_code(content)
        if code not in (None, 0) and status and not any(s in (FAILED, ERROR) for s in status.values()):
            return {}, False
    return status, True


def _key(case: str, sm: Mapping[str, str], rules: GradingRules) -> str | None:
    if case in sm:
        return case
    if rules == "swebench-5.0" and case.count("[") > case.count("]"):
        matches = [k for k in sm if k.startswith(case)]
        if matches and len({sm[k] in (PASSED, XFAIL) for k in matches}) == 1:
            return matches[0]
    return None


def _split(tests: list[str], sm: Mapping[str, str], rules: GradingRules, *, maintained: bool) -> dict[str, list[str]]:
    success: list[str] = []
    failure: list[str] = []
    for case in tests:
        key = _key(case, sm, rules)
        status = sm.get(key) if key is not None else None
        passing = [PASSED, XFAIL] + ([SKIPPED] if maintained and rules == "swebench-5.0" else [])
        failing = [FAILED, ERROR] + ([SKIPPED] if rules == "swebench-5.0" else [])
        if status in passing:
            success.append(case)
        elif key is None or status in failing:
            failure.append(case)
    return {"success": success, "failure": failure}


def tests_report(status_map: Mapping[str, str], fail_to_pass: list[str], pass_to_pass: list[str], eval_type: str,
                 rules: GradingRules) -> dict[str, dict[str, list[str]]]:
    """swebench's ``get_eval_tests_report`` under ``rules``: ``{"FAIL_TO_PASS": {"success": [...], "failure":
    [...]}, "PASS_TO_PASS": ..., "FAIL_TO_FAIL": ..., "PASS_TO_FAIL": ...}`` (the last two empty).

    The installed harness's own function decides under its own rules; the other version's rules are the
    ones of the module docstring. ``eval_type`` is ``pass_and_fail`` or ``fail_only`` (only a listed test
    the map says ``FAILED`` fails; the same in both versions).
    """
    if rules == installed_rules():
        from swebench.harness.constants import EvalType
        from swebench.harness.grading import get_eval_tests_report

        gold = {"FAIL_TO_PASS": list(fail_to_pass), "PASS_TO_PASS": list(pass_to_pass)}
        return get_eval_tests_report(dict(status_map), gold, eval_type=EvalType(eval_type))
    return rules_report(status_map, fail_to_pass, pass_to_pass, eval_type, rules)


def rules_report(status_map: Mapping[str, str], fail_to_pass: list[str], pass_to_pass: list[str], eval_type: str,
                 rules: GradingRules) -> dict[str, dict[str, list[str]]]:
    """:func:`tests_report` as written out here for either version's rules (the module docstring), whichever
    harness is installed."""
    sm = dict(status_map)
    gold = {"FAIL_TO_PASS": list(fail_to_pass), "PASS_TO_PASS": list(pass_to_pass)}
    empty = {"success": [], "failure": []}
    if eval_type == "fail_only":
        out = {k: {"success": [t for t in v if sm.get(t) != FAILED], "failure": [t for t in v if sm.get(t) == FAILED]}
               for k, v in gold.items()}
    else:
        out = {"FAIL_TO_PASS": _split(gold["FAIL_TO_PASS"], sm, rules, maintained=False),
               "PASS_TO_PASS": _split(gold["PASS_TO_PASS"], sm, rules, maintained=True)}
    return {**out, "FAIL_TO_FAIL": dict(empty), "PASS_TO_FAIL": dict(empty)}


def is_resolved(report: Mapping[str, Any]) -> bool:
    """swebench's ``get_resolution_status(report) == RESOLVED_FULL`` (the same rule in 4.1 and 5.0): every
    FAIL_TO_PASS and PASS_TO_PASS test counted is a success (a class with none counted is complete)."""
    return all(not report[k]["failure"] for k in ("FAIL_TO_PASS", "PASS_TO_PASS"))


def run_evaluation_log_dir() -> Path:
    """The installed harness's ``RUN_EVALUATION_LOG_DIR`` (``logs/run_evaluation``, under the current folder)."""
    from swebench.harness.constants import RUN_EVALUATION_LOG_DIR

    return Path(RUN_EVALUATION_LOG_DIR)


def run_instance(spec: Any, prediction: dict[str, Any], *, client: Any, run_id: str, timeout: int | None,
                 rewrite_reports: bool = False) -> Any:
    """The installed harness's ``run_instance`` on an existing image, which is kept: 4.1 with
    ``rm_image=False, force_rebuild=False``; 5.0 has neither (it never removes an image, and pulls one only
    when the daemon lacks it). ``rewrite_reports`` grades the test log already in the run's folder again
    (no container)."""
    from swebench.harness.run_evaluation import run_instance as harness_run_instance

    if keeps_repo_specs():
        return harness_run_instance(spec, prediction, rm_image=False, force_rebuild=False, client=client,
                                    run_id=run_id, timeout=timeout, rewrite_reports=rewrite_reports)
    return harness_run_instance(spec, prediction, client=client, run_id=run_id, timeout=timeout,
                                rewrite_reports=rewrite_reports)


@cache
def harness_label() -> str:
    """``swebench 5.0.2``: the harness that parses and runs, as a result records it."""
    return f"swebench {installed_harness()}"
