"""A view added by a file alone, through a whole study: ``takeover run`` with ``views = ["repo_only",
"./progress.toml", "trace_digest"]`` (the scripted server as predecessor, note writer and successor, a synthetic
task graded locally), then ``takeover report``: the file's view and trace_digest are in results.csv, in every
table of the report with their paired statistics against repo_only, and in the view sizes table."""

from __future__ import annotations

import csv
import json

import pytest
from test_experiment_e2e import FIX, PREDECESSOR, SUBMIT, _experiment, bash, synthetic  # noqa: F401 - a fixture
from typer.testing import CliRunner

from takeover.cli import app
from takeover.testing.scripted_server import ScriptedServer
from takeover.views import HANDOFF_VIEWS

PROGRESS = '''
name = "progress_file"
inputs = ["task", "checkpoint"]
template = """
Progress file left by the previous agent.
Changed source files: {{ point.changed_source_files | join(", ") or "none" }}
Last check: {{ point.latest_verification_command or "none" }} ({{ point.latest_verification_result or "no result" }})
"""
'''
DIARY = '''
name = "diary"
template = "The previous agent's diary:\\n{{ notes }}"
[writer]
prompt = "Write the diary of this task so far.\\n{{ problem_statement }}\\n{{ rendered_events | join('\\n') }}"
'''
DIARY_ANSWER = "- The agent edited calc.py.\n- It wrote repro.py and ran python repro.py."
# repo_only looks and gives up; the progress file's and the digest's successors fix at once.
SUCCESSOR = {"repo_only": [bash("git diff"), bash(SUBMIT)], "progress_file": [bash(FIX), bash(SUBMIT)],
             "trace_digest": [bash("git diff"), bash(FIX), bash(SUBMIT)], "diary": [bash(FIX), bash(SUBMIT)]}


def script(request: dict, n: int) -> dict:
    messages = request["messages"]
    if messages[0]["content"].startswith("You write handoff notes"):
        return {"content": DIARY_ANSWER}
    first = messages[1]["content"] if len(messages) > 1 else ""
    step = sum(1 for m in messages if m["role"] == "assistant")
    answers = PREDECESSOR
    if "<takeover_instructions>" in first:
        answers = SUCCESSOR["repo_only"]
        for name in ("progress_file", "trace_digest", "diary"):
            if f'<previous_agent view="{name}">' in first:
                answers = SUCCESSOR[name]
    return answers[min(step, len(answers) - 1)]


@pytest.fixture(autouse=True)
def _unregister_the_view_file():
    yield
    HANDOFF_VIEWS.remove("progress_file")
    HANDOFF_VIEWS.remove("diary")


@pytest.mark.slow
def test_a_view_file_goes_through_run_and_report_into_every_table(synthetic):  # noqa: F811 - the imported fixture
    root = synthetic
    (root / "views").mkdir()
    (root / "views" / "progress.toml").write_text(PROGRESS)
    (root / "views" / "diary.toml").write_text(DIARY)
    with ScriptedServer(script) as srv:
        experiment = _experiment(root, "study", srv.base_url)
        experiment.write_text(experiment.read_text().replace(
            'point_types = [', 'views = ["repo_only", "./views/progress.toml", "trace_digest", "views/diary.toml"]\npoint_types = [', 1))
        result = CliRunner().invoke(app, ["run", str(experiment), "--no-report"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
    out = root / "study"
    result = CliRunner().invoke(app, ["report", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    with open(out / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["point_type"], r["view"]) for r in rows] == [
        (p, v) for p in ("after_first_post_failure_edit", "after_first_source_edit")
        for v in ("repo_only", "trace_digest", "diary", "progress_file")]
    solved = {(r["point_type"], r["view"]) for r in rows if r["resolved"] == "True"}
    assert ("after_first_source_edit", "repo_only") not in solved and len(solved) == 7
    prompt = next((out / "work").rglob("views/progress_file.md")).read_text()
    assert "Changed source files: calc.py\nLast check: " in prompt
    report = json.loads((out / "report.json").read_text())
    summary = {e["view"]: e for e in report["summary"]}
    assert list(summary) == ["repo_only", "trace_digest", "diary", "progress_file"]
    assert summary["progress_file"]["solved_rate"] == 1.0
    paired = summary["progress_file"]["vs_repo_only"]
    assert paired["solved_rate"]["new_only"] == 1 and paired["solved_rate"]["comparable_pairs"] == 2
    assert paired["agent_events"]["pairs"] == 2
    assert {e["view"] for e in report["by_handoff_state"]["needs_completion"]} == set(summary)
    assert {e["view"] for e in report["by_point_type"]["after_first_source_edit"]} == set(summary)
    sizes = report["note_writing"]
    assert list(sizes) == ["repo_only", "trace_digest", "diary", "progress_file"]
    assert sizes["diary"]["prompt_tokens"] > 0 and sizes["diary"]["completion_tokens"] > 0
    assert sizes["progress_file"]["units"] == 2 and sizes["progress_file"]["prompt_tokens"] == 0
    assert sizes["trace_digest"]["characters_total"] > sizes["progress_file"]["characters_total"] > 0
    rediscovery = {e["view"]: e for e in report["rediscovery"]["summary"]}
    assert list(rediscovery) == list(summary) and "vs_repo_only" in rediscovery["progress_file"]
    assert [e["view"] for e in report["claims"]["views"]] == ["diary"]  # the one model-written view
    assert report["claims"]["views"][0]["claims"] > 0
    markdown = (out / "report.md").read_text()
    assert markdown.count("| progress_file |") >= 3, markdown
    html = (out / "report.html").read_text()
    assert html.count('data-view="progress_file"') >= 3
