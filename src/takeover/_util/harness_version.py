"""The one place that knows how the installed SWE-bench harness (swebench 4.1 or 5.0) differs.

Three kinds of difference (docs/protocol.md section 6, extension "Grading rules"):

- **Where things are**: ``TestSpec`` moved from ``swebench.harness.test_spec.test_spec`` (4.1) to
  ``swebench.types`` (5.0) and lost its scripts but for ``eval_script_list``; parsers are looked up by name in
  ``PARSER_REGISTRY`` (5.0) instead of by repository in ``MAP_REPO_TO_PARSER`` (4.1); ``run_instance`` lost
  ``rm_image`` and ``force_rebuild`` (5.0 never removes or builds images: it pulls one only when the daemon
  lacks it); ``make_test_spec`` reads the row's ``image``/``eval_script``/``log_parser``/``eval_type`` (5.0)
  instead of the per-repository specifications (4.1).
- **Verdict rules** (:data:`GRADING_RULES`, a grading's ``grading_rules``): written out once, for both
  versions, in :mod:`takeover.grading.swebench_rules`; the installed harness's own
  ``get_eval_tests_report`` decides under its own rules (:func:`eval_tests_report`).
- **Parsers**: the installed harness's parsers parse every log (5.0's record a few pytest ids otherwise:
  ``SKIPPED [1] file:line`` summaries are no test, an assertion message no longer enters the id); the
  result's ``harness`` names the version that parsed.

swebench is imported inside the functions: importing ``swebench.harness`` takes seconds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from takeover.errors import EnvironmentUnavailable

#: The verdict rules a grading may be decided under: the harness versions whose rules differ.
GradingRules = Literal["swebench-4.1", "swebench-5.0"]
GRADING_RULES: tuple[GradingRules, ...] = ("swebench-4.1", "swebench-5.0")

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


def eval_tests_report(status_map: Mapping[str, str], fail_to_pass: list[str], pass_to_pass: list[str],
                      eval_type: str) -> dict[str, dict[str, list[str]]]:
    """The installed harness's own ``get_eval_tests_report`` (its own verdict rules, :func:`installed_rules`):
    ``{"FAIL_TO_PASS": {"success": [...], "failure": [...]}, "PASS_TO_PASS": ..., ...}``."""
    from swebench.harness.constants import EvalType
    from swebench.harness.grading import get_eval_tests_report

    gold = {"FAIL_TO_PASS": list(fail_to_pass), "PASS_TO_PASS": list(pass_to_pass)}
    return get_eval_tests_report(dict(status_map), gold, eval_type=EvalType(eval_type))


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
