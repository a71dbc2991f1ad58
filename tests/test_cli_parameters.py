"""Every parameter of the ``takeover`` command tree is passed by at least one test, so that a new option
cannot go untested. The invocations are recorded while the suite runs (``tests/cli_invocations.py``);
this check runs last."""

from __future__ import annotations

import pytest
from cli_invocations import INVOCATIONS, parameters, passed, takeover_argv, uncovered, whole_suite
from prerequisites import ALLOWED_IN_CI, SKIPPED_FOR


def test_every_cli_parameter_is_passed_by_a_test(request):
    """The tests that may skip in CI (a mirror, a Docker daemon, the model weights) each have a counterpart
    that runs there, so every parameter must be passed by a test that runs without them."""
    if not whole_suite(request.config):
        pytest.skip("needs the CLI invocations of the whole suite (run pytest on the whole tests folder)")
    unmet = sorted(SKIPPED_FOR - ALLOWED_IN_CI)
    if unmet:
        pytest.skip(f"tests skipped for missing prerequisites ({', '.join(unmet)}); their CLI invocations are unknown")
    missing = uncovered(INVOCATIONS)
    assert missing == [], (f"{len(missing)} of {len(parameters())} CLI parameters are passed by no test "
                           "(add a test that passes each and checks its effect):\n" + "\n".join(missing))


def test_the_recorder_reads_flags_and_aliases():
    assert passed(["grade", "--dataset", "d.jsonl", "--gold", "--json"]) == {
        ("takeover grade", "dataset"), ("takeover grade", "gold"), ("takeover grade", "as_json")}
    # A shared option (cli/options.py) is found under the command that declares it, a short flag as its name.
    assert passed(["run", "exp.toml", "-w", "2"]) == {("takeover run", "experiment"), ("takeover run", "workers")}
    # --flag=value too.
    assert passed(["agent", "run", "--wall-time-limit-seconds=5"]) == {("takeover agent run", "wall_time_limit_seconds")}
    assert passed(["--version"]) == {("takeover", "show_version")}
    assert passed(["tasks", "select", "--limit", "2"]) == {("takeover tasks select", "limit")}
    # An environment variable is not the command line; an unknown option makes the invocation fail.
    assert passed(["doctor"]) == set()
    assert passed(["grade", "--no-such-flag"]) == set()


def test_subprocess_invocations_of_takeover_are_recognised():
    assert takeover_argv(["/usr/bin/python3", "-m", "takeover", "run", "x.toml"]) == ["run", "x.toml"]
    assert takeover_argv(["/venv/bin/takeover", "doctor", "--json"]) == ["doctor", "--json"]
    assert takeover_argv(["git", "status"]) is None and takeover_argv("takeover doctor") is None


def test_uncovered_lists_parameters_in_help_order():
    everything = [(p, n) for p, n, _ in parameters()]
    assert everything[0] == ("takeover", "show_version")
    assert ("takeover agent run", "cost_limit") in everything and ("takeover serve-model", "port") in everything
    listed = uncovered([("t", ("serve-model", "--port", "8001"))])
    assert "takeover serve-model --port" not in listed and "takeover serve-model --n-ctx" in listed
    assert len(listed) == len(everything) - 1
