"""Test logs to status maps at their edges: what lies outside SWE-bench's markers, a parser that reads
the task's identity (immutable-js picks its runner by pull request), and the spec parsers are given."""

from __future__ import annotations

import pytest

from takeover._util import harness_version
from takeover.errors import EnvironmentUnavailable
from takeover.grading import parse_test_log, resolve_log_parser
from takeover.grading.log_parsing import parser_test_spec
from takeover.sources.tasks import SourceTask

START, END = ">>>>> Start Test Output", ">>>>> End Test Output"


def _task(repo: str = "acme/calc", iid: str = "acme__calc-1", version: str | None = "1.0") -> SourceTask:
    return SourceTask(instance_id=iid, repo=repo, base_commit="0" * 40, problem_statement="p", version=version,
                      FAIL_TO_PASS=["t::f"], PASS_TO_PASS=["t::p"])


def test_only_what_lies_between_the_markers_is_parsed():
    log = f"PASSED tests/setup.py::test_before\n{START}\nFAILED tests/a.py::test_in - x\n{END}\nPASSED tests/a.py::test_after\n"
    assert parse_test_log(log, _task()) == ({"tests/a.py::test_in": "FAILED"}, True)


def test_the_whole_log_is_parsed_when_nothing_between_the_markers_parses():
    # e.g. the runner's summary came after the end marker
    log = f"{START}\nrunning...\n{END}\nPASSED tests/a.py::test_late\n"
    assert parse_test_log(log, _task()) == ({"tests/a.py::test_late": "PASSED"}, True)


def test_a_parser_that_reads_the_instance_id():
    task = _task("immutable-js/immutable-js", "immutable-js__immutable-js-2006")
    log = f"{START}\n  ✓ merges maps (3 ms)\n  ✕ sorts lists\n{END}\n"
    assert parse_test_log(log, task) == ({"merges maps": "PASSED", "sorts lists": "FAILED"}, True)


def test_the_spec_given_to_parsers():
    spec = parser_test_spec(_task(version=None))
    assert (spec.instance_id, spec.repo, spec.version) == ("acme__calc-1", "acme/calc", "")
    assert (spec.FAIL_TO_PASS, spec.PASS_TO_PASS) == (["t::f"], ["t::p"])
    if harness_version.keeps_repo_specs():  # swebench 4.1's TestSpec, with no scripts
        assert (spec.language, spec.arch) == ("py", "x86_64")
        assert (spec.repo_script_list, spec.eval_script_list, spec.env_script_list, spec.docker_specs) == ([], [], [], {})
    else:  # swebench 5.x's, with the row's parser and eval type
        assert (spec.log_parser, spec.eval_type, spec.image) == ("parse_log_pytest", "pass_and_fail", "")
    assert parser_test_spec(_task()).version == "1.0"


def test_an_unknown_parser_name_lists_the_known_ones():
    with pytest.raises(EnvironmentUnavailable, match=r"known: (\w+, )*django, (\w+, )*pytest, .* or a repository name"):
        resolve_log_parser("nosuch", None)
    assert resolve_log_parser("sympy/sympy", None).__name__ == "parse_log_sympy"  # a repository's name works too
    assert resolve_log_parser("django", "sympy/sympy").__name__ == "parse_log_django"  # the name wins
