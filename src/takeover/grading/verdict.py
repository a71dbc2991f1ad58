"""From a status map to a verdict: the FAIL_TO_PASS / PASS_TO_PASS report, ``resolved`` and the handoff state.

The report and ``resolved`` are swebench's own (``get_eval_tests_report``, ``get_resolution_status``) under
the rules of a named harness version (``grading_rules``, :mod:`takeover._util.harness_version`); the
handoff state is docs/protocol.md section 6. :class:`GradeResult` is what every backend returns, and
:func:`swebench_report` the ``report.json`` written beside the test log. Pure functions: nothing here
runs tests.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from takeover._util import harness_version
from takeover._util.harness_version import GradingRules
from takeover.grading import swebench_rules
from takeover.grading.log_parsing import parse_test_log, task_eval_type
from takeover.grading.reuse import GradingKey
from takeover.grading.seeds import HASH_SEED_VARIABLE
from takeover.sources.tasks import SourceTask
from takeover.vocabulary import HandoffState


class TestOutcome(BaseModel):
    """Tests of one class (FAIL_TO_PASS or PASS_TO_PASS) split by outcome, as in swebench's report."""

    __test__ = False  # not a pytest test class despite the name

    success: list[str] = Field(default_factory=list)
    failure: list[str] = Field(default_factory=list)


class FlakyVerdict(BaseModel):
    """Two gradings (:mod:`takeover.grading.flaky`) of one patch under two hash seeds that disagree.

    Attributes:
        seeds: the two ``PYTHONHASHSEED`` values, in the order graded.
        resolved: whether each grading resolved the task, in the same order.
        flipped: the tests (FAIL_TO_PASS or PASS_TO_PASS) that passed under one seed and failed under the other.
        second_log: the second grading's test log.
    """

    seeds: list[int]
    resolved: list[bool]
    flipped: list[str]
    second_log: str | None = None

    def describe(self) -> str:
        """One line for a table cell or a warning: the tests that flipped and both seeds."""
        shown = ", ".join(self.flipped[:5]) + (f" and {len(self.flipped) - 5} more" if len(self.flipped) > 5 else "")
        a, b = self.seeds
        return (f"{shown} flipped with the hash seed ({HASH_SEED_VARIABLE}={a}: "
                f"{'resolved' if self.resolved[0] else 'not resolved'}; {HASH_SEED_VARIABLE}={b}: "
                f"{'resolved' if self.resolved[1] else 'not resolved'})")


class GradeResult(BaseModel):
    """The grading of one patch for one task (docs/protocol.md sections 6 and 8).

    Attributes:
        resolved: swebench ``get_resolution_status`` is ``RESOLVED_FULL``.
        handoff_state: docs/protocol.md section 6 label; None when grading itself failed (see ``error``).
        FAIL_TO_PASS, PASS_TO_PASS: the swebench report lists.
        backend: ``local`` or ``docker``.
        env_seconds, test_seconds: wall seconds for preparing the environment (``docker``: finding or pulling
            the image) and running the tests (``docker``: the harness's own test time, 0 when no test ran).
        env_cached: the task's shared venv existed already; env_build_seconds: wall seconds spent building it.
        log_path: the test log (``test_output.txt``) with SWE-bench's markers; ``report.json`` is beside it.
        applied: the candidate patch applied; ``apply_error`` names the failing file/hunk when not.
        timed_out: the test command hit the limit and its process group was killed.
        error: why grading could not finish (environment build, test patch, repository), else None.
        sandboxed: the tests ran inside the sandbox (:mod:`takeover._util.sandbox`).
        patch_sha256: sha256 of the candidate patch.
        notes: the environment's adaptations (skipped system steps, conda to pip, a locale fallback).
        network: the tests ran with the network on (``local``: as asked; ``docker``: measured, whether the
            harness's container had a network).
        warnings: reasons the result may not match the official harness, e.g. the repository's tests need
            the network (:data:`~takeover.grading.NETWORK_REPOS`) and it was off.
        grading_key: everything that decided the verdict; a stored result is reused only under an equal key
            (:mod:`takeover.grading.reuse`).
        graded_at: when the grading finished (UTC, ISO 8601, seconds).
        reused: this result was read back from an earlier grading (``graded_at`` says when), not graded now.
        reuse_note: what happened to a stored result: reused, or graded again and why; None without one.
        set_aside: PASS_TO_PASS tests that fail with the task's reference patch in the same environment
            (docs/protocol.md section 6, extension): left out of ``handoff_state``, which they cannot decide.
        reference_note: what the reference patch's grading for ``set_aside`` found that needs saying (the
            PASS_TO_PASS tests it fails here, or why it could not be graded); None when it was not asked for
            or passes every PASS_TO_PASS test here (nothing to warn of: ``set_aside`` is then empty).
        setup_commit: the commit the environment's requirement files were read at (``local`` backend;
            None when no environment was built), and ``setup_commit_source`` how it was chosen:
            ``environment_setup_commit`` (the task's own), ``stand-in`` (the shipped table, when the dataset
            lacks it) or ``base_commit`` (:mod:`takeover.environments.setup_commit`).
        image, image_id: the image the tests ran in and its content id (``docker``; None otherwise).
        grading_rules: the harness version whose verdict rules decided it (``swebench-4.1`` or
            ``swebench-5.0``, docs/protocol.md section 6, extension "Grading rules"); None in results
            written before it was recorded (graded under ``swebench-4.1``).
        harness: the installed harness that parsed the log (``swebench 5.0.2``).
        eval_script_source: ``dataset`` (the row's own ``eval_script``, a swebench 5.x row) or ``generated``
            (made from swebench 4.1's specifications and rules); None where the backend runs its own script.
        hash_seed: the ``PYTHONHASHSEED`` the tests ran under (:mod:`takeover.grading.seeds`); None in results
            graded before seeds were recorded. hash_seeds: every seed this patch was graded under (two when a
            test that passes with the reference patch failed and it was graded again).
        flaky: the two gradings disagreed (:class:`FlakyVerdict`: seeds, verdicts,
            the tests that flipped); such a verdict is neither solved nor a failure (docs/protocol.md section 6,
            extension).
    """

    model_config = ConfigDict(populate_by_name=True)

    instance_id: str
    model_name_or_path: str | None = None
    resolved: bool = False
    handoff_state: HandoffState | None = None
    FAIL_TO_PASS: TestOutcome = Field(default_factory=TestOutcome)
    PASS_TO_PASS: TestOutcome = Field(default_factory=TestOutcome)
    backend: str = "local"
    env_seconds: float = 0.0
    test_seconds: float = 0.0
    env_cached: bool | None = None
    env_build_seconds: float = 0.0
    log_path: str | None = None
    applied: bool = False
    apply_error: str | None = None
    timed_out: bool = False
    error: str | None = None
    sandboxed: bool = False
    patch_sha256: str | None = None
    notes: list[str] = Field(default_factory=list)
    network: bool = False
    warnings: list[str] = Field(default_factory=list)
    grading_key: GradingKey | None = None
    graded_at: str | None = None
    reused: bool = False
    reuse_note: str | None = None
    setup_commit: str | None = None
    setup_commit_source: str | None = None
    set_aside: list[str] = Field(default_factory=list)
    reference_note: str | None = None
    image: str | None = None
    image_id: str | None = None
    grading_rules: GradingRules | None = None
    harness: str | None = None
    eval_script_source: str | None = None
    hash_seed: int | None = None
    hash_seeds: list[int] = Field(default_factory=list)
    flaky: FlakyVerdict | None = None

    def summary(self) -> dict[str, Any]:
        """The fields printed by ``takeover grade --json``."""
        return self.model_dump(mode="json", include={
            "instance_id", "resolved", "handoff_state", "FAIL_TO_PASS", "PASS_TO_PASS", "backend",
            "env_seconds", "env_cached", "env_build_seconds", "test_seconds", "log_path", "applied", "apply_error",
            "timed_out", "error", "network", "warnings", "graded_at", "reused", "reuse_note", "setup_commit",
            "setup_commit_source", "set_aside", "reference_note", "image", "image_id", "grading_rules", "harness",
            "eval_script_source", "hash_seed", "hash_seeds", "flaky"})


def handoff_state(result: GradeResult) -> HandoffState | None:
    """docs/protocol.md section 6, in order: patch does not apply -> ``invalid``; all FAIL_TO_PASS and
    PASS_TO_PASS pass -> ``resolved_preserve``; some FAIL_TO_PASS fail -> ``needs_completion``; else some
    PASS_TO_PASS fail -> ``broke_existing``. None when grading failed for another reason (``error``).

    Extension: the PASS_TO_PASS tests of ``result.set_aside`` (they fail with the reference patch in the
    same environment, :func:`set_aside_by_reference`) are left out: an environment's failure is no state of
    the checkpoint."""
    if result.error is not None:
        return None
    if not result.applied:
        return "invalid"
    aside = set(result.set_aside)
    p2p_failing = [t for t in result.PASS_TO_PASS.failure if t not in aside]
    if not result.FAIL_TO_PASS.failure and not p2p_failing:
        return "resolved_preserve"
    if result.FAIL_TO_PASS.failure:
        return "needs_completion"
    return "broke_existing"


def set_aside_by_reference(result: GradeResult, reference: GradeResult) -> GradeResult:
    """``result`` with the PASS_TO_PASS tests that ``reference`` (the task's reference patch graded the same
    way: same backend, environment, network and time limit) fails set aside, and its handoff state computed
    without them (docs/protocol.md section 6, extension). A reference grading that did not finish, or whose
    patch did not apply, sets nothing aside and says so in ``reference_note``; FAIL_TO_PASS tests the
    reference fails are never set aside (a checkpoint cannot be resolved without them), only warned of."""
    out = result.model_copy(deep=True)
    if reference.error is not None or not reference.applied:
        why = reference.error or f"it does not apply: {reference.apply_error}"
        out.reference_note = f"the reference patch could not be graded here ({why.splitlines()[0][:200]}): nothing set aside"
        return out
    out.set_aside = sorted(set(reference.PASS_TO_PASS.failure) & set(out.PASS_TO_PASS.failure))
    failing = sorted(reference.PASS_TO_PASS.failure)
    if failing:  # a reference that passes them all is what is expected: no note, so no report warning
        out.reference_note = (f"the reference patch fails {len(failing)} PASS_TO_PASS test(s) here "
                              f"({', '.join(failing[:5])}{' ...' if len(failing) > 5 else ''}); set aside from "
                              "the handoff state")
    if reference.FAIL_TO_PASS.failure:
        out.warnings.append(f"the reference patch fails {len(reference.FAIL_TO_PASS.failure)} FAIL_TO_PASS test(s) "
                            f"here too ({', '.join(reference.FAIL_TO_PASS.failure[:5])}): this environment cannot "
                            f"resolve the task")
    out.handoff_state = handoff_state(out)
    return out


def tests_report(status_map: Mapping[str, str], task: SourceTask,
                 rules: GradingRules | None = None) -> dict[str, dict[str, list[str]]]:
    """swebench ``get_eval_tests_report`` of a status map against the task's FAIL_TO_PASS/PASS_TO_PASS under
    ``rules`` (default: the installed harness's): ``{"FAIL_TO_PASS": {"success": [...], "failure": [...]},
    "PASS_TO_PASS": ..., ...}``; the row's ``eval_type`` or the repository's. The installed harness's own
    function decides under its own rules, :func:`takeover.grading.swebench_rules.tests_report` under the
    other version's."""
    rules = harness_version.grading_rules(rules)
    if rules == harness_version.installed_rules():
        return harness_version.eval_tests_report(status_map, task.FAIL_TO_PASS, task.PASS_TO_PASS,
                                                 task_eval_type(task))
    return swebench_rules.tests_report(dict(status_map), task.FAIL_TO_PASS, task.PASS_TO_PASS, task_eval_type(task),
                                       rules)


def is_resolved(report: Mapping[str, Any]) -> bool:
    """swebench ``get_resolution_status(report) == RESOLVED_FULL``."""
    return swebench_rules.is_resolved(report)


def report_outcomes(status_map: Mapping[str, str], task: SourceTask,
                    rules: GradingRules | None = None) -> tuple[TestOutcome, TestOutcome, bool]:
    """``(FAIL_TO_PASS, PASS_TO_PASS, fully resolved)`` of a status map: :func:`tests_report` and
    :func:`is_resolved` of it."""
    report = tests_report(status_map, task, rules)
    return TestOutcome(**report["FAIL_TO_PASS"]), TestOutcome(**report["PASS_TO_PASS"]), is_resolved(report)


def grade_log(content: str, task: SourceTask, *, log_parser: str | None = None, applied: bool = True,
              backend: str = "local", rules: GradingRules | None = None) -> GradeResult:
    """Grade a captured test log (SWE-bench markers) for ``task`` under ``rules`` (default: the installed
    harness's); no tests are run. Under ``swebench-5.0`` a log whose exit code contradicts its results
    has no status map, so every listed test fails.

    Raises:
        EnvironmentUnavailable: ``log_parser`` names no parser.
    """
    rules = harness_version.grading_rules(rules)
    status, _found = parse_test_log(content, task, log_parser, rules) if applied else ({}, False)
    fail_to_pass, pass_to_pass, resolved = report_outcomes(status, task, rules)
    result = GradeResult(instance_id=task.instance_id, backend=backend, applied=applied, FAIL_TO_PASS=fail_to_pass,
                         PASS_TO_PASS=pass_to_pass, resolved=applied and resolved, grading_rules=rules,
                         harness=harness_version.harness_label())
    result.handoff_state = handoff_state(result)
    return result


#: bash's exit statuses for a command it found but could not execute (126) and one it did not find (127).
_DID_NOT_START = (126, 127)
_NOT_STARTED_LINE = re.compile(r"(?:command not found|No such file or directory|Permission denied|not found)\s*$")
_PYTHON_MODULE = re.compile(r"(?:^|\s)(?:\S*/)?python[\d.]*\s+(?:-\S+\s+)*-m\s*(\S+)")


def runner_not_started(log: str, exit_code: int | None, test_command: str) -> str | None:
    """Why the test runner did not start, or ``None`` (docs/protocol.md section 6, extension: a runner that
    does not start gives no verdict, only an error).

    It did not start when the test command exits 126 or 127 (bash could not execute or find it:
    ``pytest: command not found``), or when it runs ``python -m MODULE`` and the output says ``No module named
    MODULE``. ``log`` is the test output, ``test_command`` the specification's test command.
    """
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    if exit_code in _DID_NOT_START:
        line = next((ln for ln in reversed(lines) if _NOT_STARTED_LINE.search(ln)), lines[-1] if lines else "")
        return f"the test command did not start (exit {exit_code}): {line[:240]}"
    m = _PYTHON_MODULE.search(test_command)
    if m:
        module = re.escape(m.group(1).split(".")[0])
        line = next((ln for ln in lines if re.search(rf"No module named '?{module}\b", ln)), None)
        if line is not None:
            return f"the test runner did not start: {line[:240]}"
    return None


# pytest's short summary of a skip: ``SKIPPED [1] xarray/tests/test_dataarray.py:3000: requires cdms2``.
_SKIPPED = re.compile(r"^SKIPPED \[\d+\] (?P<file>[^\s:]+):(?P<line>\d+): (?P<reason>.+)$", re.MULTILINE)
# The module a skip reason says is missing: ``No module named 'cdms2'``, ``could not import 'cdms2'``,
# ``requires cdms2`` (xarray's and pandas' ``requires_*`` marks).
_MISSING_MODULE = re.compile(r"No module named '?(?P<a>[\w.]+)|could not import '(?P<b>[\w.]+)'|\brequires (?P<c>[\w.]+)")
_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)")


def _normalized_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _defined_at(lines: list[str], line: int) -> str | None:
    """The function defined at 1-based ``line`` or just below it (Python 3.8 and later report a decorated
    function at its first decorator)."""
    for text in lines[max(line - 1, 0):line + 40]:
        m = _DEF.match(text)
        if m:
            return m.group(1)
    return None


def missing_module_skips(log: str, failing: list[str], packages: list[str],
                         source: Callable[[str], list[str] | None]) -> dict[str, list[str]]:
    """FAIL_TO_PASS / PASS_TO_PASS tests skipped for a missing module that the environment's specification
    installs but this environment lacks (docs/protocol.md section 6, extension): ``{package: [test, ...]}``.

    A pytest skip (``SKIPPED [1] FILE:LINE: REASON``) whose reason names a missing module (``No module named
    'X'``, ``could not import 'X'``, ``requires X``) that is one of ``packages`` (the specification's
    packages this environment left out, compared by normalized name) covers the failing tests of
    ``failing`` in ``FILE`` whose function is the one defined at ``LINE`` (``source(file)`` gives the
    checkout's lines of that file; ``None`` when it cannot).
    """
    wanted = {_normalized_name(p): p for p in packages}
    found: dict[str, list[str]] = {}
    for m in _SKIPPED.finditer(log):
        reason = _MISSING_MODULE.search(m.group("reason"))
        module = next((g for g in reason.groups() if g), None) if reason else None
        package = wanted.get(_normalized_name(module.split(".")[0])) if module else None
        lines = source(m.group("file")) if package else None
        name = _defined_at(lines, int(m.group("line"))) if lines else None
        if package is None or name is None:
            continue
        for test in failing:
            path, _, rest = test.partition("::")
            if path == m.group("file") and rest.split("::")[-1].split("[")[0] == name:
                tests = found.setdefault(package, [])
                if test not in tests:
                    tests.append(test)
    return found


def missing_module_warning(skips: dict[str, list[str]]) -> list[str]:
    """One warning per package of :func:`missing_module_skips`, naming it and the tests."""
    return [f"{len(tests)} FAIL_TO_PASS/PASS_TO_PASS test(s) were skipped because {package} is missing: the "
            f"environment's specification installs it, this environment could not (the official image would "
            f"run them; grade with --backend docker): {', '.join(tests[:5])}{' ...' if len(tests) > 5 else ''}"
            for package, tests in sorted(skips.items())]


def swebench_report(result: GradeResult, model_patch: str | None) -> dict[str, Any]:
    """The ``report.json`` content swebench's ``get_eval_report`` writes (``{instance_id: {...}}``)."""
    return {result.instance_id: {
        "patch_is_None": model_patch is None,
        "patch_exists": model_patch is not None,
        "patch_successfully_applied": result.applied and result.error is None and not result.timed_out,
        "resolved": result.resolved,
        "tests_status": {
            "FAIL_TO_PASS": result.FAIL_TO_PASS.model_dump(),
            "PASS_TO_PASS": result.PASS_TO_PASS.model_dump(),
            "FAIL_TO_FAIL": {"success": [], "failure": []},
            "PASS_TO_FAIL": {"success": [], "failure": []},
        },
    }}
