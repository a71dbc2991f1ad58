"""The replay flags (``--replay-timeout``, ``--memory-mb``, ``--use-sandbox/--no-sandbox``,
``--use-environment/--no-environment``: the replay record, ``[replay]``) reach the replay on every command that may
replay a run: ``points``, ``checkpoint``, ``views``, ``rediscovery``, ``export atif`` (a run with no recorded
states is replayed to find its point) and ``handoff --event`` (the session is replayed in a copy of the
repository). The calculator task's runs each start with a command that a flag's limit stops: a ``sleep`` the
time limit kills, an allocation the memory limit kills; the refusal names the limit the flag set."""

from __future__ import annotations

import json

import pytest
from conftest import make_repo
from handoff_sessions import calc_repo, claude_session
from test_cli_points_flags import write_run
from test_grading import CALC, GOLD, SPEC, TEST_PATCH, TESTS
from typer.testing import CliRunner

from takeover.cli import app

FIX = "sed -i 's/a - b/a + b/' calc.py"
SLOW = ("sleep 30", "", 0)
HUNGRY = ("python3 -c 'x = bytearray(400 * 2**20); print(len(x))'", "419430400", 0)
POINT = ["--point-type", "after_first_source_edit"]


@pytest.fixture
def calc(tmp_path, monkeypatch):
    """``(common flags, slow run, hungry run)``: the calculator task in a mirror, and two recorded runs."""
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    _, sha = make_repo(tmp_path / "src" / "calc", {"calc.py": CALC, "tests/test_calc.py": TESTS, "conftest.py": ""},
                       bare_mirror=tmp_path / "mirror" / "acme__calc.git")
    row = {"instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": sha, "problem_statement": "add subtracts",
           "version": "0.1", "patch": GOLD, "test_patch": TEST_PATCH, "FAIL_TO_PASS": ["tests/test_calc.py::test_add"],
           "PASS_TO_PASS": ["tests/test_calc.py::test_mul"], "takeover_env_spec": SPEC}
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(json.dumps(row) + "\n")
    slow = write_run(tmp_path / "slow.json", "acme__calc-1", [SLOW, (FIX, "", 0)], GOLD)
    hungry = write_run(tmp_path / "hungry.json", "acme__calc-1", [HUNGRY, (FIX, "", 0)], GOLD)
    common = ["--dataset", str(dataset), "--mirror", str(tmp_path / "mirror"), "--offline"]
    return common, slow, hungry


#: The flags of one replay: the time limit stops the slow run's first command (the memory limit stays high).
STOP_AT_TIME = ["--replay-timeout", "2", "--memory-mb", "4096", "--no-sandbox", "--no-environment"]
#: ... and the memory limit stops the hungry run's (the time limit stays high).
STOP_AT_MEMORY = ["--replay-timeout", "120", "--memory-mb", "128", "--use-sandbox", "--no-environment"]
AT_TIME = "command at event 0 was killed at the 2 s time limit"
AT_MEMORY = "command at event 0 was killed at the 128 MiB memory limit"


def _run(*args: str):
    return CliRunner().invoke(app, [*map(str, args)], env={"COLUMNS": "400"})


def test_points_replays_under_the_replay_flags(calc):
    common, slow, hungry = calc
    timed = _run("points", slow, *common, *STOP_AT_TIME)
    assert timed.exit_code == 0 and AT_TIME in " ".join(timed.stdout.split())
    # --no-sandbox and --no-environment: the replay says it ran unconfined, with the plain interpreter.
    assert "sandbox off: commands run unconfined" in timed.stdout and "plain interpreter on PATH" in timed.stdout
    fed = _run("points", hungry, *common, *STOP_AT_MEMORY, "--json")
    assert fed.exit_code == 0 and json.loads(fed.stdout)["replay"]["reason"].startswith(AT_MEMORY)


@pytest.mark.parametrize("flags", [STOP_AT_TIME, STOP_AT_MEMORY], ids=["time", "memory"])
def test_checkpoint_views_rediscovery_and_export_atif_replay_under_the_replay_flags(calc, flags, tmp_path):
    common, slow, hungry = calc
    run, why = (slow, AT_TIME) if flags is STOP_AT_TIME else (hungry, AT_MEMORY)
    missing = f"no after_first_source_edit point in this run: run is unreplayable: {why}"
    checkpoint = _run("checkpoint", run, *common, *POINT, "--out-dir", tmp_path / "cp", *flags)
    assert checkpoint.exit_code == 1 and missing in " ".join(checkpoint.stderr.split())
    views = _run("views", run, *common, *POINT, "--out-dir", tmp_path / "views", "--view", "repo_only", *flags)
    assert views.exit_code == 1 and missing in " ".join(views.stderr.split())
    rediscovery = _run("rediscovery", run, run, *common, *POINT, *flags)
    assert rediscovery.exit_code == 2 and missing in " ".join(rediscovery.stderr.split())
    atif = _run("export", "atif", run, *common, *POINT, *flags)
    assert atif.exit_code == 1 and missing in " ".join(atif.stderr.split())


def test_handoff_replays_the_session_under_the_replay_flags(tmp_path):
    """A session handed over after an earlier event is replayed in a copy of the repository (its own
    interpreters: the environment flag is not one of handoff's); the note says how it ran."""
    root, _ = calc_repo(tmp_path / "calc")
    session = claude_session(tmp_path / "session.jsonl", root)
    unconfined = _run("handoff", session, "--repo", root, "--event", "5", "--json", "--replay-timeout", "120",
                      "--memory-mb", "2048", "--no-sandbox")
    assert unconfined.exit_code == 0, unconfined.output
    (note,) = [n for n in json.loads(unconfined.stdout)["notes"] if n.startswith("handoff after event 5")]
    assert note.endswith("(sandbox off: commands run unconfined)")
    stopped = _run("handoff", session, "--repo", root, "--event", "5", "--replay-timeout", "0.001", "--use-sandbox")
    assert stopped.exit_code == 2 and "time limit" in stopped.stderr and "cannot be rebuilt exactly" in stopped.stderr
