"""A test log as a status map {test name: PASSED/FAILED/...}, with the installed swebench's own log parsers.

The log carries SWE-bench's start and end markers; what lies between them is given to the parser of the
repository (its name from the table of swebench 4.1's specifications,
:func:`takeover.environments.swebench_specs.parser_name`), to the row's ``log_parser`` (swebench 5.x
rows) or to one named in the environment spec. A log that holds one of swebench's failure codes (patch did
not apply, tests errored or timed out) has no status map, as in swebench's ``get_logs_eval``; under the
``swebench-5.0`` rules neither has a log whose recorded exit code contradicts its results
(:func:`takeover.grading.swebench_rules.logs_eval`).
"""

from __future__ import annotations

from collections.abc import Callable

from takeover._util import harness_version
from takeover._util.harness_version import GradingRules
from takeover.environments.swebench_specs import eval_type, parser_name
from takeover.errors import EnvironmentUnavailable
from takeover.grading import swebench_rules
from takeover.sources.tasks import SourceTask

#: A swebench log parser: ``(log text, TestSpec) -> {test name: status}``.
LogParser = Callable[..., dict[str, str]]
#: The dataset-row field of a swebench 5.x row that names its parser (``parse_log_django``).
ROW_PARSER_FIELD = "log_parser"


def resolve_log_parser(name: str | None, repo: str | None) -> LogParser:
    """The installed swebench's log parser: by name (``pytest``, ``parse_log_django``, ``sympy``,
    ``pytest_v2``, ...), by repository named as ``name`` (``sympy/sympy``), or ``repo``'s own; ``pytest``
    when nothing matches.

    Raises:
        EnvironmentUnavailable: an unknown parser name.
    """
    if name:
        fn = harness_version.log_parser(parser_name(name) or name)
        if fn is None:
            raise EnvironmentUnavailable(f"unknown log parser {name!r}; known: "
                                         f"{', '.join(harness_version.known_parsers())} or a repository name")
        return fn
    return harness_version.log_parser(parser_name(repo) or "parse_log_pytest") or harness_version.log_parser("pytest")


def task_parser_name(task: SourceTask, log_parser: str | None = None) -> str:
    """The parser name a grading of ``task`` uses: ``log_parser`` (the environment spec's), the row's own
    ``log_parser`` (swebench 5.x rows), the repository's (the 4.1 table), else ``parse_log_pytest``."""
    return log_parser or _row_parser(task) or parser_name(task.repo) or "parse_log_pytest"


def task_eval_type(task: SourceTask) -> str:
    """The row's ``eval_type`` (swebench 5.x rows), else the repository's (``fail_only`` for swebench's
    ``FAIL_ONLY_REPOS``, else ``pass_and_fail``)."""
    row = (task.model_extra or {}).get("eval_type")
    return row if row in ("pass_and_fail", "fail_only") else eval_type(task.repo)


def parser_test_spec(task: SourceTask):
    """The installed swebench's ``TestSpec`` a log parser is given: the task's identity and test lists.

    Parsers read ``instance_id`` at most (the JavaScript and Ruby ones); the Python ones ignore it.
    """
    return harness_version.test_spec(instance_id=task.instance_id, repo=task.repo, version=task.version or "",
                                     fail_to_pass=list(task.FAIL_TO_PASS), pass_to_pass=list(task.PASS_TO_PASS),
                                     parser=task_parser_name(task), eval_type=task_eval_type(task))


def parse_test_log(content: str, task: SourceTask, log_parser: str | None = None,
                   rules: GradingRules | None = None) -> tuple[dict[str, str], bool]:
    """Status map of a test log, as swebench's ``get_logs_eval`` of ``rules`` computes it (default: the
    installed harness's).

    Returns ``(status map {test name: PASSED/FAILED/...}, found)``; ``found`` is False (and the map
    empty) when the log holds a swebench failure code (apply failed, tests errored or timed out) or
    lacks the start/end markers, and under ``swebench-5.0`` when its exit code contradicts its results.

    Raises:
        EnvironmentUnavailable: ``log_parser`` names no parser.
    """
    parser = resolve_log_parser(log_parser or _row_parser(task), task.repo)
    spec = parser_test_spec(task)
    return swebench_rules.logs_eval(content, lambda text: parser(text, spec), harness_version.grading_rules(rules))


def _row_parser(task: SourceTask) -> str | None:
    row = (task.model_extra or {}).get(ROW_PARSER_FIELD)
    return row if isinstance(row, str) and row else None
