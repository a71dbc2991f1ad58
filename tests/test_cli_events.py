"""The command line of cuts at an event and of ATIF: ``points --all-events`` lists the events a user copies
N from, ``checkpoint``/``views``/``handoff --event N`` cut there (refused with the reason past the end),
and ``export atif`` writes a run whole or cut, read back by ``inspect`` as format atif."""

from __future__ import annotations

import json

import pytest
from _mini_swe_agent import write_1x
from conftest import CALC_BUGGY, CALC_TEST, git, make_repo
from handoff_sessions import calc_repo, claude_session
from prerequisites import requires
from typer.testing import CliRunner

from takeover.cli import app
from takeover.sources.tasks import SourceTask

STEPS = [
    ("ls", "calc.py", 0),
    ("sed -i 's/a - b/a * b/' calc.py", "", 0),
    ("python3 check_calc.py", "1 failed", 1),
    ("sed -i 's/a \\* b/a + b/' calc.py", "", 0),
]


@pytest.fixture
def run(tmp_path):
    """``(run file, dataset, mirror, diff after event 2)``: a mini-swe-agent run on the calculator."""
    src, sha = make_repo(tmp_path / "src", {"calc.py": CALC_BUGGY, "test_calc.py": CALC_TEST},
                         bare_mirror=tmp_path / "mirror" / "acme__calc.git")
    (src / "calc.py").write_text(CALC_BUGGY.replace("a - b", "a * b"))
    times = git(src, "diff", "--full-index")
    (src / "calc.py").write_text(CALC_BUGGY.replace("a - b", "a + b"))
    fixed = git(src, "diff", "--full-index")
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(SourceTask(instance_id="acme__calc-1", repo="acme/calc", base_commit=sha,
                                  problem_statement="add subtracts").model_dump_json() + "\n")
    return write_1x(tmp_path / "run.json", "acme__calc-1", STEPS, fixed), dataset, tmp_path / "mirror", times


def _invoke(*args: str, code: int = 0):
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    assert result.exit_code == code, (result.output, result.exception)
    return result


def test_points_all_events_lists_every_event_with_its_changes(run, tmp_path):
    path, dataset, mirror, _ = run
    out = _invoke("points", str(path), "--dataset", str(dataset), "--mirror", str(mirror), "--offline",
                  "--no-environment", "--all-events", "--json", "--out-dir", str(tmp_path / "ev"))
    (row,) = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert row["replay"]["verified"] and len(row["events"]) == 10
    assert [e["index"] for e in row["events"] if e["source_edit"]] == [2, 6]
    assert row["events"][5]["verification"] == "failed"
    saved = json.loads((tmp_path / "ev" / "acme__calc-1.events.json").read_text())
    assert saved["rows"][2]["changed_files"] == ["calc.py"]
    table = _invoke("points", str(path), "--dataset", str(dataset), "--mirror", str(mirror), "--offline",
                    "--no-environment", "--all-events").stdout
    assert "source edit" in table and "verification failed" in table and "action command" in table


def test_checkpoint_and_views_at_an_event_and_the_refusal_past_the_end(run, tmp_path):
    path, dataset, mirror, times = run
    common = ["--dataset", str(dataset), "--mirror", str(mirror), "--offline"]
    out = _invoke("checkpoint", str(path), "--event", "3", *common, "--out-dir", str(tmp_path / "cp"), "--no-workspace")
    assert "acme__calc-1 event 3 (verified_replay)" in out.stdout
    record = json.loads((tmp_path / "cp" / "checkpoint.json").read_text())
    assert (record["point"]["type"], record["point"]["event_index"]) == ("event", 3)
    assert (tmp_path / "cp" / "checkpoint.patch").read_text() == times
    past = _invoke("checkpoint", str(path), "--event", "10", *common, "--out-dir", str(tmp_path / "no"), code=1)
    assert "event 10 is past the end of the run: it has 10 events (0 to 9)" in past.output
    both = CliRunner().invoke(app, ["checkpoint", str(path), "--event", "3", "--point-type", "after_first_source_edit",
                                    *common, "--out-dir", str(tmp_path / "x")])
    assert both.exit_code == 2 and "one of them" in both.stderr
    views = _invoke("views", str(path), "--event", "3", *common, "--view", "raw_trace", "--out-dir", str(tmp_path / "v"))
    assert "(event 3)" in views.stdout
    summary = json.loads((tmp_path / "v" / "views.json").read_text())
    assert (summary["point"]["type"], summary["point"]["event_index"]) == ("event", 3)


def test_handoff_at_an_earlier_event(tmp_path):
    root, _ = calc_repo(tmp_path / "calc")
    session = claude_session(tmp_path / "session.jsonl", root)
    out = _invoke("handoff", str(session), "--repo", str(root), "--event", "5", "--json")
    record = json.loads(out.stdout)
    assert (record["point"]["type"], record["point"]["event_index"]) == ("event", 5)
    assert record["facts"]["changed_source_files"] == ["calc.py"]


@requires("atif")
def test_export_atif_whole_cut_at_an_event_and_at_a_point(run, tmp_path):
    path, dataset, mirror, _ = run
    printed = json.loads(_invoke("export", "atif", str(path), "--record", "0").stdout)
    assert printed["schema_version"] == "ATIF-v1.7" and printed["extra"]["instance_id"] == "acme__calc-1"
    _invoke("export", "atif", str(path), "--event", "5", "--out-dir", str(tmp_path / "cut"))
    inspected = json.loads(_invoke("inspect", str(tmp_path / "cut" / "trajectory.json"), "--json").stdout)
    assert (inspected["format"], inspected["agent_events"], inspected["actions"]) == ("atif", 6, 3)
    _invoke("points", str(path), "--dataset", str(dataset), "--mirror", str(mirror), "--offline", "--no-environment",
            "--out-dir", str(tmp_path / "pts"))
    _invoke("export", "atif", str(path), "--point-type", "after_first_verification_result",
            "--points-file", str(tmp_path / "pts" / "acme__calc-1.points.json"), "--out-dir", str(tmp_path / "p"))
    assert json.loads((tmp_path / "p" / "trajectory.json").read_text())["extra"]["cut_at_event"] == 5
    _invoke("export", "atif", str(path), "--point-type", "after_first_source_edit", "--dataset", str(dataset),
            "--mirror", str(mirror), "--offline", "--out-dir", str(tmp_path / "q"))
    assert json.loads((tmp_path / "q" / "trajectory.json").read_text())["extra"]["cut_at_event"] == 2
