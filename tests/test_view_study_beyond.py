"""``condensed`` and ``self_notes`` through a whole study: ``takeover run`` with ``views = ["repo_only",
"condensed", "self_notes"]`` (the scripted server as predecessor, note writer, OpenHands' condenser's LLM and
successor; a synthetic task graded locally), then ``takeover report``: both views are in results.csv and in the
report's tables with their paired statistics, their note-writing tokens and their records."""

from __future__ import annotations

import csv
import json

import pytest
from prerequisites import requires
from test_experiment_e2e import FIX, PREDECESSOR, SUBMIT, _experiment, bash, synthetic  # noqa: F401 - a fixture
from typer.testing import CliRunner

from takeover.cli import app
from takeover.testing.scripted_server import ScriptedServer

SUMMARY = "USER_CONTEXT: make add() add\nCOMPLETED: edited calc.py, wrote repro.py\nPENDING: fix the operator"
SELF_NOTE = "- I changed calc.py's add() and wrote repro.py.\n- repro.py fails; the operator is still wrong.\n- Next: fix it."
SUCCESSOR = {"repo_only": [bash("git diff"), bash(SUBMIT)], "condensed": [bash(FIX), bash(SUBMIT)],
             "self_notes": [bash(FIX), bash(SUBMIT)]}
#: What each side was asked: the condenser's and the self-note writer's requests, by their own texts.
ASKED: dict[str, list[dict]] = {"condenser": [], "self_notes": []}


def script(request: dict, n: int) -> dict:
    messages = request["messages"]
    if "context-aware state summary" in json.dumps(messages[0]):  # OpenHands' summarizing prompt
        ASKED["condenser"].append(request)
        return {"content": SUMMARY}
    if "write your handoff note" in json.dumps(messages[-1]):
        ASKED["self_notes"].append(request)
        return {"content": SELF_NOTE}
    first = messages[1]["content"] if len(messages) > 1 else ""
    step = sum(1 for m in messages if m["role"] == "assistant")
    answers = PREDECESSOR
    if "<takeover_instructions>" in first:
        answers = SUCCESSOR["repo_only"]
        for name in ("condensed", "self_notes"):
            if f'<previous_agent view="{name}">' in first:
                answers = SUCCESSOR[name]
    return answers[min(step, len(answers) - 1)]


@pytest.mark.slow
@requires("openhands environment")
def test_condensed_and_self_notes_go_through_run_and_report(synthetic):  # noqa: F811 - the imported fixture
    root = synthetic
    with ScriptedServer(script) as srv:
        experiment = _experiment(root, "study", srv.base_url)
        experiment.write_text(experiment.read_text().replace(
            'point_types = [', 'views = ["repo_only", "condensed", "self_notes"]\npoint_types = [', 1)
            + "\n[view_options.condensed]\nkeep_first = 1\n")
        result = CliRunner().invoke(app, ["run", str(experiment), "--no-report"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
    out = root / "study"
    result = CliRunner().invoke(app, ["report", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    with open(out / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert {(r["point_type"], r["view"]) for r in rows} == {
        (p, v) for p in ("after_first_post_failure_edit", "after_first_source_edit")
        for v in ("repo_only", "condensed", "self_notes")}
    solved = {(r["point_type"], r["view"]) for r in rows if r["resolved"] == "True"}
    assert ("after_first_source_edit", "repo_only") not in solved
    assert {(p, v) for p, v in solved if v != "repo_only"} == {
        (p, v) for p in ("after_first_post_failure_edit", "after_first_source_edit") for v in ("condensed", "self_notes")}
    # Each point's condenser and self-note writer were asked once, with nothing after the cut.
    assert len(ASKED["condenser"]) == 2 and len(ASKED["self_notes"]) == 2
    for request in ASKED["self_notes"]:
        assert request["messages"][0]["role"] == "system" and "<takeover_instructions>" not in json.dumps(request)
    report = json.loads((out / "report.json").read_text())
    summary = {e["view"]: e for e in report["summary"]}
    assert list(summary) == ["repo_only", "condensed", "self_notes"]
    assert summary["self_notes"]["vs_repo_only"]["solved_rate"]["comparable_pairs"] == 2
    sizes = report["note_writing"]
    assert sizes["condensed"]["prompt_tokens"] > 0 and sizes["self_notes"]["completion_tokens"] > 0
    assert {e["view"] for e in report["claims"]["views"]} == {"condensed", "self_notes"}
    # The view units keep their records: the condenser's settings and versions, who wrote the note.
    outputs = [json.loads(p.read_text())["output"] for p in (out / "units" / "view").glob("*.json")]
    condensers = [o["structured"]["condenser"] for o in outputs if "condenser" in (o.get("structured") or {})]
    writers = [o["structured"]["writer"] for o in outputs if "writer" in (o.get("structured") or {})]
    assert len(condensers) == 2 and condensers[0]["keep_first"] == 1 and condensers[0]["versions"]["openhands-sdk"]
    assert writers == 2 * [{"writer": "scripted", "predecessor_model": "scripted", "predecessor_wrote": True}]
