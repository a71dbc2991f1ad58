"""Readers of other tools' records never crash and never drop a record silently (docs/protocol.md section 9).

``takeover report`` on a folder of Harbor trials or Inspect logs: a trial whose ``result.json`` is cut short,
empty, not UTF-8, a list or has a field of another type than Harbor writes, whose verifier report or ATIF
trajectory cannot be read, and an Inspect log cut short or a sample with a wrong-typed score, is a row
marked ``unreadable`` with the file and the reason (not solved, counted in its cell's ``infra fail``),
listed in report.md and report.json, and the command exits 2 with one line saying so. A trial Harbor recorded
as interrupted (``CancelledError`` with no message) is a failed run whose reason says so, not a crash.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from prerequisites import requires
from user_commands import takeover

TASK = "acme__calc-1__after_first_source_edit-4__{view}"
GOOD = {"rewards": {"reward": 1.0}}


def _trial(job: Path, name: str, view: str, **fields) -> Path:
    """A Harbor trial folder of the exported task of ``view``: ``result.json`` (the fields the report reads)
    and ``config.json`` as Harbor writes them."""
    folder = job / name
    folder.mkdir(parents=True)
    task = TASK.format(view=view)
    result = {"task_name": task, "trial_name": name, "task_id": {"path": f"/nowhere/{task}"},
              "agent_info": {"name": "codex", "version": "1", "model_info": {"name": "gpt-5", "provider": "openai"}},
              "agent_result": None, "verifier_result": GOOD, "exception_info": None,
              "agent_execution": {"started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:01:30Z"},
              **fields}
    (folder / "result.json").write_text(json.dumps(result))
    (folder / "config.json").write_text(json.dumps({"trial_name": name, "task": {"path": f"/nowhere/{task}"},
                                                    "agent": {"name": "codex", "model_name": "openai/gpt-5"}}))
    return folder


def _cut(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


#: (damage, the file it is in, what the reason says) for the trial of the raw_trace task.
DAMAGES = [
    ("cut short", "result.json", lambda t: _cut(t / "result.json"),
     "not valid JSON"),
    ("empty", "result.json", lambda t: (t / "result.json").write_bytes(b""), "empty file"),
    ("not UTF-8", "result.json",
     lambda t: (t / "result.json").write_bytes((t / "result.json").read_bytes().replace(b"codex", b"cod\xffx")),
     "not UTF-8 text"),
    ("a list", "result.json", lambda t: (t / "result.json").write_text("[]"), "expected a JSON object, got a list"),
    ("reward a string", "result.json",
     lambda t: _rewrite(t / "result.json", verifier_result={"rewards": {"reward": "1.0"}}),
     "field 'verifier_result.rewards.reward'"),
    ("exception message a number", "result.json",
     lambda t: _rewrite(t / "result.json", exception_info={"exception_type": "RuntimeError", "exception_message": 7,
                                                           "exception_traceback": "", "occurred_at": "x"}),
     "field 'exception_info.exception_message'"),
    ("start time not a time", "result.json",
     lambda t: _rewrite(t / "result.json", agent_execution={"started_at": "yesterday", "finished_at": None}),
     "field 'agent_execution.started_at'"),
    ("verifier report cut short", "verifier/report.json", lambda t: _write(t / "verifier" / "report.json", "{\"acme"),
     "not valid JSON"),
    ("verifier report of another instance", "verifier/report.json",
     lambda t: _write(t / "verifier" / "report.json", json.dumps({"other-1": {"resolved": True}})),
     "holds no entry for acme__calc-1"),
    ("trajectory not JSON", "agent/trajectory.json", lambda t: _write(t / "agent" / "trajectory.json", "{\"steps\": ["),
     "agent/trajectory.json"),
]


def _rewrite(path: Path, **fields) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.mark.parametrize(("damage", "file", "make", "says"), DAMAGES, ids=[d[0] for d in DAMAGES])
def test_a_damaged_harbor_trial_is_an_unreadable_row_counted_listed_and_exit_status_2(tmp_path, damage, file, make,
                                                                                        says):
    job = tmp_path / "jobs" / "codex"
    _trial(job, "a__1", "repo_only")
    damaged = _trial(job, "a__2", "raw_trace")
    make(damaged)
    done = takeover("report", tmp_path / "jobs", "--no-plots")
    assert done.exit_code == 2, (done.stdout, done.stderr)
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: 1 record(s) of other tools could not be read (listed under \"Unreadable "
                           "records\" in report.md"), line
    assert f"{damaged / file}" in line and says in line, line
    data = json.loads((tmp_path / "jobs" / "report.json").read_text())
    (record,) = data["unreadable_records"]
    assert (record["source"], record["path"], record["takeover_key"]) == ("Harbor trial", str(damaged / file),
                                                                           "codex/a__2")
    rows = {r["view"]: r for r in csv.DictReader((tmp_path / "jobs" / "results.csv").open())}
    assert (rows["raw_trace"]["status"], rows["raw_trace"]["resolved"]) == ("unreadable", "False")
    assert rows["raw_trace"]["reason"] == record["reason"]
    assert (rows["repo_only"]["status"], rows["repo_only"]["resolved"]) == ("done", "True")
    summary = {s["view"]: s for s in data["summary"]}
    assert (summary["raw_trace"]["points"], summary["raw_trace"]["solved"]) == (1, 0)
    assert (summary["raw_trace"]["infrastructure_failures"], summary["raw_trace"]["unreadable"]) == (1, 1)
    report_md = (tmp_path / "jobs" / "report.md").read_text()
    assert "| 1 (1 unreadable) |" in report_md and f"- {record['reason']}\n" in report_md
    assert "Unreadable records" in done.stdout  # the console's part of report.md says it too


def test_an_unreadable_trial_that_names_no_task_is_listed_and_a_foreign_one_is_skipped(tmp_path):
    job = tmp_path / "jobs" / "codex"
    _trial(job, "a__1", "repo_only")
    lost = job / "b__1"
    lost.mkdir()
    (lost / "result.json").write_bytes(b"{\"task_na")  # and no config.json: which task it was cannot be told
    foreign = job / "c__1"
    foreign.mkdir()
    (foreign / "result.json").write_text("")
    (foreign / "config.json").write_text(json.dumps({"trial_name": "c__1", "task": {"path": "/x/hello-world"}}))
    done = takeover("report", tmp_path / "jobs", "--no-plots")
    assert done.exit_code == 2
    data = json.loads((tmp_path / "jobs" / "report.json").read_text())
    (record,) = data["unreadable_records"]
    assert record["path"] == str(lost / "result.json") and record["takeover_key"] is None
    assert "(the file ends too early: cut while it was written?)" in record["reason"]
    assert [r["view"] for r in csv.DictReader((tmp_path / "jobs" / "results.csv").open())] == ["repo_only"]
    assert f"- {record['reason']} (not in the tables)\n" in (tmp_path / "jobs" / "report.md").read_text()


def test_an_interrupted_harbor_trial_is_a_failed_run_that_says_so(tmp_path):
    job = tmp_path / "jobs" / "codex"
    _trial(job, "a__1", "repo_only", verifier_result=None, exception_info={
        "exception_type": "CancelledError", "exception_message": "", "exception_traceback": "Traceback ...",
        "occurred_at": "2026-01-01T00:00:10Z"})
    done = takeover("report", tmp_path / "jobs", "--no-plots")
    assert done.exit_code == 0, done.stderr
    (row,) = csv.DictReader((tmp_path / "jobs" / "results.csv").open())
    assert (row["status"], row["failure_kind"], row["resolved"]) == ("failed", "infrastructure", "False")
    assert row["reason"] == ("CancelledError: the trial was interrupted before it finished (Harbor recorded no "
                             "message; harbor run was stopped); run it again")


@requires("inspect_ai")
def test_a_damaged_inspect_log_and_a_wrong_typed_sample_are_unreadable_and_the_rest_is_read(tmp_path):
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSample, EvalSpec, write_eval_log
    from inspect_ai.scorer import Score

    meta = {"instance_id": "acme__calc-1", "point_type": "event", "event_index": 3, "view": "repo_only",
            "point_key": "acme__calc-1@event:3"}
    spec = EvalSpec(created="2026-01-01T00:00:00+00:00", task="handoff", dataset=EvalDataset(samples=2, sample_ids=["a", "b"]), model="openai/m",
                    config=EvalConfig())
    good = EvalSample(id="a", epoch=1, input="prompt", target="", metadata=meta, scores={"handoff_scorer": Score(
        value={"resolved": 1.0, "agent_events": 4, "prompt_tokens": 100})})
    wrong = EvalSample(id="b", epoch=1, input="prompt", target="", metadata={**meta, "view": "raw_trace"},
                       scores={"handoff_scorer": Score(value={"resolved": "yes", "agent_events": 4, "prompt_tokens": 9})})
    out = tmp_path / "study"
    write_eval_log(EvalLog(eval=spec, samples=[good, wrong], status="success"), str(out / "logs" / "one.eval"))
    (out / "logs" / "two.eval").write_bytes((out / "logs" / "one.eval").read_bytes()[:300])
    done = takeover("report", out, "--no-plots")
    assert done.exit_code == 2
    data = json.loads((out / "report.json").read_text())
    reasons = sorted(r["reason"] for r in data["unreadable_records"])
    assert reasons[0].startswith(f"{out / 'logs' / 'one.eval'}: sample b: scores.handoff_scorer.value.resolved: ")
    assert reasons[1].startswith(f"{out / 'logs' / 'two.eval'}: not a readable Inspect log (")
    rows = {r["view"]: r for r in csv.DictReader((out / "results.csv").open())}
    assert (rows["repo_only"]["status"], rows["repo_only"]["resolved"]) == ("done", "True")
    assert (rows["raw_trace"]["status"], rows["raw_trace"]["resolved"]) == ("unreadable", "False")


def test_a_second_attempt_of_a_harbor_trial_is_listed_as_not_counted(tmp_path):
    """The tables hold one run per (successor, point, view): a second attempt of the same task by the same
    agent (``harbor run -k 2``) is left out, and report.md and report.json say which and why."""
    job = tmp_path / "jobs" / "codex"
    _trial(job, "a__1", "repo_only")
    _trial(job, "a__2", "repo_only", verifier_result={"rewards": {"reward": 0.0}})
    done = takeover("report", tmp_path / "jobs", "--no-plots")
    assert done.exit_code == 0, done.stderr
    data = json.loads((tmp_path / "jobs" / "report.json").read_text())
    assert data["repeated_runs"] == [{"takeover_key": "codex/a__2", "counted": "codex/a__1",
                                      "successor": "codex openai/gpt-5 (harbor)",
                                      "point_key": "acme__calc-1@after_first_source_edit:4", "view": "repo_only"}]
    (row,) = csv.DictReader((tmp_path / "jobs" / "results.csv").open())
    assert row["resolved"] == "True"
    assert ("- codex/a__2 (codex openai/gpt-5 (harbor), acme__calc-1@after_first_source_edit:4, repo_only): "
            "codex/a__1 is counted\n") in (tmp_path / "jobs" / "report.md").read_text()
