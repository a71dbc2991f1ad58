"""A test log as a status map {test name: PASSED/FAILED/...}, with swebench's own log parsers.

The log carries SWE-bench's start and end markers; what lies between them is given to the parser of the
repository (``MAP_REPO_TO_PARSER``) or to one named in the environment spec. A log that holds one of
swebench's failure codes (patch did not apply, tests errored or timed out) has no status map, as in
swebench's ``get_logs_eval``.

swebench is imported inside the functions: importing ``swebench.harness`` takes seconds, which every
``takeover`` command would otherwise pay at start-up.
"""

from __future__ import annotations

from collections.abc import Callable

from takeover.errors import EnvironmentUnavailable
from takeover.sources.tasks import SourceTask

#: A swebench log parser: ``(log text, TestSpec) -> {test name: status}``.
LogParser = Callable[..., dict[str, str]]


def resolve_log_parser(name: str | None, repo: str | None) -> LogParser:
    """A swebench log parser function: by name (``pytest``, ``django``, ``sympy``, ``pytest_v2``,
    ``pytest_options``, ``seaborn``, ``matplotlib``, ...), by repository (``sympy/sympy``), or for
    ``repo`` from ``MAP_REPO_TO_PARSER``; ``pytest`` when nothing matches.

    Raises:
        EnvironmentUnavailable: an unknown parser name.
    """
    from swebench.harness import log_parsers
    from swebench.harness.log_parsers import MAP_REPO_TO_PARSER
    from swebench.harness.log_parsers import python as py_parsers

    if name:
        if name in MAP_REPO_TO_PARSER:
            return MAP_REPO_TO_PARSER[name]
        for module in (py_parsers, log_parsers):
            fn = getattr(module, f"parse_log_{name}", None)
            if callable(fn):
                return fn
        known = sorted(n[len("parse_log_"):] for n in dir(py_parsers) if n.startswith("parse_log_"))
        raise EnvironmentUnavailable(f"unknown log parser {name!r}; known: {', '.join(known)} or a repository name")
    if repo and repo in MAP_REPO_TO_PARSER:
        return MAP_REPO_TO_PARSER[repo]
    return py_parsers.parse_log_pytest


def parser_test_spec(task: SourceTask):
    """The swebench ``TestSpec`` a log parser is given: the task's identity and test lists, no scripts.

    Parsers read ``instance_id`` at most (the JavaScript and Ruby ones); the Python ones ignore it. It is
    not made with swebench's ``make_test_spec``, which needs a SWE-bench (repo, version) and downloads
    requirement files from GitHub to write the scripts that are left empty here.
    """
    from swebench.harness.test_spec.test_spec import TestSpec

    return TestSpec(instance_id=task.instance_id, repo=task.repo, version=task.version or "",
                    repo_script_list=[], eval_script_list=[], env_script_list=[], arch="x86_64",
                    FAIL_TO_PASS=task.FAIL_TO_PASS, PASS_TO_PASS=task.PASS_TO_PASS, language="py",
                    docker_specs={}, namespace=None)


def parse_test_log(content: str, task: SourceTask, log_parser: str | None = None) -> tuple[dict[str, str], bool]:
    """Status map of a test log, as swebench's ``get_logs_eval`` computes it.

    Returns ``(status map {test name: PASSED/FAILED/...}, found)``; ``found`` is False (and the map
    empty) when the log holds a swebench failure code (apply failed, tests errored or timed out) or
    lacks the start/end markers.

    Raises:
        EnvironmentUnavailable: ``log_parser`` names no parser.
    """
    from swebench.harness.constants import (
        APPLY_PATCH_FAIL,
        END_TEST_OUTPUT,
        RESET_FAILED,
        START_TEST_OUTPUT,
        TESTS_ERROR,
        TESTS_TIMEOUT,
    )

    if any(code in content for code in (APPLY_PATCH_FAIL, RESET_FAILED, TESTS_ERROR, TESTS_TIMEOUT)):
        return {}, False
    if START_TEST_OUTPUT not in content or END_TEST_OUTPUT not in content:
        return {}, False
    parser = resolve_log_parser(log_parser, task.repo)
    spec = parser_test_spec(task)
    inner = content.split(START_TEST_OUTPUT)[1].split(END_TEST_OUTPUT)[0]
    status = parser(inner, spec) or parser(content, spec)
    return status, True
