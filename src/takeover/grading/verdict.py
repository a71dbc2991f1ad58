"""From a status map to a verdict: the FAIL_TO_PASS / PASS_TO_PASS report, ``resolved`` and the handoff state.

The report and ``resolved`` are swebench's own (``get_eval_tests_report``, ``get_resolution_status``);
the handoff state is docs/protocol.md section 6. :class:`GradeResult` is what every backend returns, and
:func:`swebench_report` the ``report.json`` written beside the test log. Pure functions: nothing here
runs tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from takeover.grading.log_parsing import parse_test_log
from takeover.grading.reuse import GradingKey
from takeover.sources.tasks import SourceTask
from takeover.vocabulary import HandoffState


class TestOutcome(BaseModel):
    """Tests of one class (FAIL_TO_PASS or PASS_TO_PASS) split by outcome, as in swebench's report."""

    __test__ = False  # not a pytest test class despite the name

    success: list[str] = Field(default_factory=list)
    failure: list[str] = Field(default_factory=list)


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
        setup_commit: the commit the environment's requirement files were read at (``local`` backend;
            None when no environment was built), and ``setup_commit_source`` how it was chosen:
            ``environment_setup_commit`` (the task's own), ``stand-in`` (the shipped table, when the dataset
            lacks it) or ``base_commit`` (:mod:`takeover.environments.setup_commit`).
        image, image_id: the image the tests ran in and its content id (``docker``; None otherwise).
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
    image: str | None = None
    image_id: str | None = None

    def summary(self) -> dict[str, Any]:
        """The fields printed by ``takeover grade --json``."""
        return self.model_dump(mode="json", include={
            "instance_id", "resolved", "handoff_state", "FAIL_TO_PASS", "PASS_TO_PASS", "backend",
            "env_seconds", "env_cached", "env_build_seconds", "test_seconds", "log_path", "applied", "apply_error",
            "timed_out", "error", "network", "warnings", "graded_at", "reused", "reuse_note", "setup_commit",
            "setup_commit_source", "image", "image_id"})


def handoff_state(result: GradeResult) -> HandoffState | None:
    """docs/protocol.md section 6, in order: patch does not apply -> ``invalid``; all FAIL_TO_PASS and
    PASS_TO_PASS pass -> ``resolved_preserve``; some FAIL_TO_PASS fail -> ``needs_completion``; else some
    PASS_TO_PASS fail -> ``broke_existing``. None when grading failed for another reason (``error``)."""
    if result.error is not None:
        return None
    if not result.applied:
        return "invalid"
    if not result.FAIL_TO_PASS.failure and not result.PASS_TO_PASS.failure:
        return "resolved_preserve"
    if result.FAIL_TO_PASS.failure:
        return "needs_completion"
    return "broke_existing"


def tests_report(status_map: Mapping[str, str], task: SourceTask) -> dict[str, dict[str, list[str]]]:
    """swebench ``get_eval_tests_report`` of a status map against the task's FAIL_TO_PASS/PASS_TO_PASS:
    ``{"FAIL_TO_PASS": {"success": [...], "failure": [...]}, "PASS_TO_PASS": ..., ...}``."""
    from swebench.harness.constants import FAIL_ONLY_REPOS, EvalType  # slow to import: only when needed
    from swebench.harness.grading import get_eval_tests_report

    eval_type = EvalType.FAIL_ONLY if task.repo in FAIL_ONLY_REPOS else EvalType.PASS_AND_FAIL
    gold = {"FAIL_TO_PASS": task.FAIL_TO_PASS, "PASS_TO_PASS": task.PASS_TO_PASS}
    return get_eval_tests_report(dict(status_map), gold, eval_type=eval_type)


def is_resolved(report: Mapping[str, Any]) -> bool:
    """swebench ``get_resolution_status(report) == RESOLVED_FULL``."""
    from swebench.harness.constants import ResolvedStatus  # slow to import: only when needed
    from swebench.harness.grading import get_resolution_status

    return get_resolution_status(dict(report)) == ResolvedStatus.FULL.value


def report_outcomes(status_map: Mapping[str, str], task: SourceTask) -> tuple[TestOutcome, TestOutcome, bool]:
    """``(FAIL_TO_PASS, PASS_TO_PASS, fully resolved)`` of a status map: :func:`tests_report` and
    :func:`is_resolved` of it."""
    report = tests_report(status_map, task)
    return TestOutcome(**report["FAIL_TO_PASS"]), TestOutcome(**report["PASS_TO_PASS"]), is_resolved(report)


def grade_log(content: str, task: SourceTask, *, log_parser: str | None = None, applied: bool = True,
              backend: str = "local") -> GradeResult:
    """Grade a captured test log (SWE-bench markers) for ``task``; no tests are run.

    Raises:
        EnvironmentUnavailable: ``log_parser`` names no parser.
    """
    status, _found = parse_test_log(content, task, log_parser) if applied else ({}, False)
    fail_to_pass, pass_to_pass, resolved = report_outcomes(status, task)
    result = GradeResult(instance_id=task.instance_id, backend=backend, applied=applied, FAIL_TO_PASS=fail_to_pass,
                         PASS_TO_PASS=pass_to_pass, resolved=applied and resolved)
    result.handoff_state = handoff_state(result)
    return result


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
