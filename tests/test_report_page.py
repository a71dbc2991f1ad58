"""What report.html holds, section by section, on a small hand-written experiment with real run folders;
and `takeover show` on a takeover run folder and on imported trajectories."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import DATA
from prerequisites import requires
from typer.testing import CliRunner

from takeover.cli import app
from takeover.limits import RunLimits
from takeover.report import build_report
from takeover.report.drilldown import point_sections
from takeover.report.page import build_page, decode_section
from takeover.report.rows import collect_rows, read_units
from takeover.report.run_page import write_run_page
from takeover.report.transcript import read_transcripts
from takeover.trajectories import Event, LLMCall, Usage
from takeover.trajectories.takeover_run import RunAccounting, RunRecord, TakeoverOrigin

CHECKPOINT_PATCH = "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-return a - b\n+return a * b\n"
FINAL_PATCH = "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-return a - b\n+return a + b\n"
LONG_OUTPUT = "x" * 9000


def _unit(out: Path, stage: str, key: str, output: dict, status: str = "done", **extra) -> None:
    path = out / "units" / stage / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"stage": stage, "key": key, "status": status, "output": output, "labels": {},
                                "inputs": extra.pop("inputs", {}), "started_at": "t", "seconds": 1.0, **extra}))


def _run_folder(folder: Path, *, view: str, checkpoint_dir: Path, estimated: bool) -> None:
    """A takeover run folder: git diff (observed), one fix, submit; the second call has cached tokens."""
    folder.mkdir(parents=True)
    events = [
        Event(index=0, kind="action", source="agent", type="command", text="THOUGHT: look.\n\ngit diff",
              thought="THOUGHT: look.", command="git diff", llm_call=0),
        Event(index=1, kind="observation", source="environment", type="command", text=LONG_OUTPUT, cause=0,
              exit_code=0),
        Event(index=2, kind="action", source="agent", type="file_edit", text="fix", edit="str_replace",
              path="calc.py", old_text="a - b", new_text="a + b", llm_call=1),
        Event(index=3, kind="observation", source="environment", type="file_edit", text="edited", cause=2),
        Event(index=4, kind="action", source="agent", type="finish", text="submit", command="submit", llm_call=2),
    ]
    calls = [LLMCall(index=0, usage=Usage(prompt_tokens=100, completion_tokens=5, cached_tokens=0)),
             LLMCall(index=1, usage=Usage(prompt_tokens=150, completion_tokens=9, cached_tokens=90, reasoning_tokens=4)),
             LLMCall(index=2, usage=Usage(prompt_tokens=170, completion_tokens=3, estimated=estimated))]
    (folder / "events.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in events))
    (folder / "calls.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in calls))
    (folder / "prompt.md").write_text(f"prompt of {view} (redacted copy)")
    (folder / "patch.diff").write_text(FINAL_PATCH)
    record = RunRecord(run_id="run", kind="takeover", instance_id="acme__calc-1", repo="acme/calc",
                       base_commit="abc", workspace=str(folder / "workspace"), model={"model": "m"},
                       limits=RunLimits(), accounting=RunAccounting(agent_events=5, llm_calls=3),
                       exit_status="submitted", started_at="t", finished=True,
                       origin=TakeoverOrigin(checkpoint_dir=str(checkpoint_dir), instance_id="acme__calc-1",
                                             point_type="after_first_source_edit", event_index=0, view=view,
                                             patch_sha256="0", method="recorded_snapshot"))
    (folder / "run.json").write_text(record.model_dump_json())


@pytest.fixture
def experiment(tmp_path) -> Path:
    """Two handoff points of acme__calc-1 x two views (repo_only, raw_trace) for successor m.

    p1 (after_first_source_edit, needs_completion): both runs solve it; raw_trace's run folder was moved
    (its record names a path that no longer exists, the folder is under OUT/work). p2
    (after_first_post_failure_edit, resolved_preserve): repo_only solves it, raw_trace's run failed at
    the endpoint. Also a predecessor import that failed for a second instance, and a blocked view."""
    out = tmp_path / "exp"
    task = {"instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": "abc",
            "problem_statement": "add() returns a - b; it must return a + b."}
    (out / "tasks").mkdir(parents=True)
    (out / "tasks" / "acme__calc-1.json").write_text(json.dumps(task))
    plan: dict = {"name": "page", "bootstrap": {"resamples": 100, "seed": 1}, "stages": {
        "predecessor": [], "checkpoint": [], "handoff_state": [], "view": [], "takeover": [], "grade": []}}
    plan["stages"]["predecessor"].append({"key": "pred-2", "labels": {"instance_id": "acme__calc-2"}})
    _unit(out, "predecessor", "pred-2", {}, status="failed", failure_kind="infrastructure",
          reason="acme__calc-2.json changed since it was indexed")
    points = {"p1": ("after_first_source_edit", "needs_completion", 0),
              "p2": ("after_first_post_failure_edit", "resolved_preserve", 6)}
    for p, (ptype, state, event_index) in points.items():
        labels = {"instance_id": "acme__calc-1", "point_type": ptype}
        cp_dir = out / "work" / "checkpoint" / p / "checkpoint"
        (cp_dir / "views").mkdir(parents=True)
        (cp_dir / "checkpoint.patch").write_text(CHECKPOINT_PATCH)
        point = {"type": ptype, "event_index": event_index, "changed_source_files": ["calc.py"],
                 "changed_test_files": [], "non_source_artifacts": ["repro.py"],
                 "latest_verification_command": "python repro.py" if p == "p2" else None,
                 "latest_verification_result": "failed" if p == "p2" else None,
                 "validation_after_latest_source_change": "none"}
        plan["stages"]["checkpoint"].append({"key": p, "labels": labels})
        _unit(out, "checkpoint", p, {"checkpoint_dir": str(cp_dir), "method": "recorded_snapshot",
                                     "files": ["calc.py"], "event_index": event_index},
              inputs={"point": point, "task": str(out / "tasks" / "acme__calc-1.json")})
        plan["stages"]["handoff_state"].append({"key": f"hs-{p}", "labels": {**labels, "point_key": p}})
        _unit(out, "handoff_state", f"hs-{p}", {"handoff_state": state, "resolved": state == "resolved_preserve",
                                               "fail_to_pass_rate": 0.0, "pass_to_pass_rate": 1.0})
        result = out / "work" / "handoff_state" / f"hs-{p}" / "grading" / "takeover" / "acme__calc-1" / "result.json"
        result.parent.mkdir(parents=True)
        result.write_text(json.dumps({"FAIL_TO_PASS": {"success": [], "failure": ["test_calc.py::test_add"]},
                                      "PASS_TO_PASS": {"success": ["test_calc.py::test_sub"], "failure": []}}))
        for view in ("repo_only", "raw_trace"):
            (cp_dir / "views" / f"{view}.md").write_text(f"<takeover_instructions>{view} of {p}</takeover_instructions>")
            vkey, tkey, gkey = f"v-{view}-{p}", f"t-{view}-{p}", f"g-{view}-{p}"
            vlabels = {**labels, "point_key": p, "view": view}
            plan["stages"]["view"].append({"key": vkey, "labels": vlabels})
            _unit(out, "view", vkey, {"path": str(cp_dir / "views" / f"{view}.md"), "characters": 50})
            tlabels = {**vlabels, "successor": "m"}
            plan["stages"]["takeover"].append({"key": tkey, "labels": tlabels})
            plan["stages"]["grade"].append({"key": gkey, "labels": {**tlabels, "takeover_key": tkey}})
            if (view, p) == ("raw_trace", "p2"):
                plan["stages"]["grade"][-1]["blocked"] = f"takeover {tkey} failed"
                _unit(out, "takeover", tkey, {}, status="failed", failure_kind="infrastructure",
                      reason="takeover run ended with model_error: APIConnectionError: endpoint refused <b>502</b>")
                continue
            run_dir = out / "work" / "takeover" / tkey / "run"
            _run_folder(run_dir, view=view, checkpoint_dir=cp_dir, estimated=view == "raw_trace")
            recorded = str(run_dir) if (view, p) != ("raw_trace", "p1") else "/moved/away/run"
            _unit(out, "takeover", tkey, {"run_dir": recorded, "exit_status": "submitted", "agent_events": 5,
                                          "llm_calls": 3, "prompt_tokens": 420, "completion_tokens": 17,
                                          "cached_tokens": 90, "initial_prompt_chars": 40 if view == "repo_only" else 90,
                                          "patch_path": str(run_dir / "patch.diff")})
            _unit(out, "grade", gkey, {"resolved": True, "handoff_state": "resolved_preserve",
                                       "fail_to_pass_rate": 1.0, "pass_to_pass_rate": 1.0})
    # The note writer's tokens of a summary_notes view (no takeover run uses it here).
    plan["stages"]["view"].append({"key": "v-notes-p1", "labels": {"instance_id": "acme__calc-1", "point_key": "p1",
                                                                   "view": "summary_notes"}})
    _unit(out, "view", "v-notes-p1", {"characters": 900, "cached_tokens": 30, "reasoning_tokens": 12,
                                      "estimated_calls": 1}, prompt_tokens=500, completion_tokens=80)
    plan["stages"]["view"].append({"key": "v-blocked", "blocked": "checkpoint p3 failed",
                                   "labels": {"instance_id": "acme__calc-1", "point_key": "p3",
                                              "view": "summary_notes"}})
    (out / "plan.json").write_text(json.dumps(plan))
    return out


def _page(out: Path):
    units = read_units(out)
    rows = collect_rows(units)
    report = build_report(out, plots=False, html=False)
    return build_page(units, rows, report.data)


def test_summary_sections_hold_tables_charts_tokens_and_unfinished_units(experiment):
    page, blobs = _page(experiment)
    assert page.name == "page" and page.data["takeover_runs"] == 4
    summary = {e["view"]: e for e in page.data["summary"]}
    assert summary["repo_only"]["solved"] == 2 and summary["raw_trace"]["solved"] == 1
    assert set(page.data["by_handoff_state"]) == {"needs_completion", "resolved_preserve"}
    # Charts: inline SVG, one mark per (successor, view), tooltips with the exact figures.
    assert set(page.charts) == {"solved_rate", "agent_events", "prompt_tokens", "diff_agent_events",
                                "diff_prompt_tokens"}
    assert all(svg.startswith("<svg") and svg.endswith("</svg>") for svg in page.charts.values())
    assert "m · raw_trace: 1/2 solved (50.0%, 95% CI" in page.charts["solved_rate"]
    assert "over 1 points" in page.charts["diff_agent_events"]
    # The run table: every planned run, counts from the unit records, calls with estimated usage from the
    # run folders (raw_trace's last call), the failed run with its reason.
    runs = {r.takeover_key: r for r in page.runs}
    assert len(runs) == 4
    assert (runs["t-repo_only-p1"].prompt_tokens, runs["t-repo_only-p1"].cached_tokens) == (420, 90)
    assert runs["t-repo_only-p1"].estimated_calls == 0 and runs["t-raw_trace-p1"].estimated_calls == 1
    failed = runs["t-raw_trace-p2"]
    assert (failed.status, failed.failure_kind, failed.resolved) == ("failed", "infrastructure", False)
    assert "APIConnectionError" in failed.reason and failed.estimated_calls is None
    # Token accounting per (successor, view): cached prompt tokens beside prompt tokens.
    tokens = {t.view: t for t in page.tokens}
    assert (tokens["repo_only"].runs, tokens["repo_only"].prompt_tokens, tokens["repo_only"].cached_tokens) == (2, 840, 180)
    assert tokens["raw_trace"].estimated_calls == 1 and tokens["raw_trace"].llm_calls == 3
    assert tokens["raw_trace"].reasoning_tokens == 4  # the unit record does not say; its run folder does
    # The note writer's tokens, apart: cached and reasoning tokens and estimated calls from the view units.
    notes = {t.view: t for t in page.note_tokens}
    assert (notes["summary_notes"].prompt_tokens, notes["summary_notes"].cached_tokens) == (500, 30)
    assert (notes["summary_notes"].reasoning_tokens, notes["summary_notes"].estimated_calls) == (12, 1)
    assert notes["repo_only"].runs == 2 and notes["repo_only"].cached_tokens is None
    # Unfinished units and why, with a link to what they belong to.
    problems = {(g.stage, g.status): g for g in page.problems}
    assert set(problems) == {("predecessor", "failed"), ("view", "blocked"), ("takeover", "failed"),
                             ("grade", "blocked")}
    assert problems[("takeover", "failed")].units[0].link == "#run-t-raw_trace-p2"
    assert problems[("grade", "blocked")].units[0].link == "#run-t-raw_trace-p2"
    assert problems[("view", "blocked")].reason == "checkpoint p3 failed"
    assert problems[("view", "blocked")].units[0].link == "#point-p3"
    assert problems[("predecessor", "failed")].units[0].instance_id == "acme__calc-2"
    # Filters and the closed lines of the drill-down.
    assert page.filters == {"view": ["repo_only", "raw_trace"], "successor": ["m"],
                            "state": ["needs_completion", "resolved_preserve"],
                            "ptype": ["after_first_source_edit", "after_first_post_failure_edit"]}
    assert [(p.point_key, p.handoff_state) for p in page.points] == [("p1", "needs_completion"),
                                                                     ("p2", "resolved_preserve")]
    assert set(blobs) == {"p1", "p2"}


def test_drill_down_of_a_point_holds_task_point_diff_state_prompts_steps_patch_and_grading(experiment):
    _, blobs = _page(experiment)
    p1 = decode_section(blobs["p1"])
    assert (p1["instance_id"], p1["repo"], p1["base_commit"]) == ("acme__calc-1", "acme/calc", "abc")
    assert p1["problem_statement"].startswith("add() returns a - b")
    assert (p1["point_type"], p1["event_index"], p1["changed_source_files"]) == ("after_first_source_edit", 0, ["calc.py"])
    assert p1["non_source_artifacts"] == ["repro.py"] and p1["checkpoint_method"] == "recorded_snapshot"
    assert p1["checkpoint_patch"] == CHECKPOINT_PATCH
    assert p1["handoff"]["handoff_state"] == "needs_completion"
    assert p1["handoff"]["fail_to_pass"] == {"success": [], "failure": ["test_calc.py::test_add"]}
    assert p1["handoff"]["pass_to_pass"] == {"success": ["test_calc.py::test_sub"], "failure": []}
    # The exact prompt each view gave (the view file, not the run folder's redacted copy), views in order.
    assert list(p1["prompts"]) == ["repo_only", "raw_trace"]
    assert p1["prompts"]["raw_trace"] == "<takeover_instructions>raw_trace of p1</takeover_instructions>"
    runs = {r["view"]: r for r in p1["runs"]}
    assert [r["view"] for r in p1["runs"]] == ["repo_only", "raw_trace"]
    raw = runs["raw_trace"]  # its record names a moved folder: found under OUT/work/takeover/<key>/run
    assert raw["run_dir"].endswith("work/takeover/t-raw_trace-p1/run")
    assert [s["type"] for s in raw["steps"]] == ["command", "file_edit", "finish"]
    first, edit = raw["steps"][0], raw["steps"][1]
    assert (first["action"], first["thought"], first["exit_code"]) == ("git diff", "THOUGHT: look.", 0)
    assert first["observation"] == LONG_OUTPUT  # whole: the page clips it, the full text one click away
    assert first["usage"] == {"prompt_tokens": 100, "completion_tokens": 5, "cached_tokens": 0, "estimated": False}
    assert edit["action"] == "str_replace calc.py" and "+++ new\na + b" in edit["detail"]
    assert edit["usage"]["cached_tokens"] == 90 and raw["steps"][2]["usage"]["estimated"] is True
    assert raw["final_patch"] == FINAL_PATCH and raw["grading"]["resolved"] is True
    assert (raw["prompt_tokens"], raw["cached_tokens"], raw["estimated_calls"]) == (420, 90, 1)
    assert raw["reasoning_tokens"] == 4 and edit["usage"]["reasoning_tokens"] == 4
    # A failed run: no folder, the reason instead of steps.
    p2 = decode_section(blobs["p2"])
    failed = {r["view"]: r for r in p2["runs"]}["raw_trace"]
    assert failed["status"] == "failed" and "endpoint refused" in failed["reason"]
    assert failed.get("steps", []) == [] and failed["note"] == "no run folder"
    assert failed["grading"] == {"status": "blocked", "reason": "takeover t-raw_trace-p2 failed", "warnings": []}
    assert p2["latest_verification_command"] == "python repro.py"


def test_point_sections_without_steps_read_only_unit_records(experiment):
    units = read_units(experiment)
    sections = list(point_sections(units, collect_rows(units), steps=False))
    assert [s.point_key for s in sections] == ["p1", "p2"]
    assert all(not c.steps and c.run_dir is None and c.note is None for s in sections for c in s.runs)
    assert sections[0].runs[0].prompt_tokens == 420  # from the unit record


def test_report_html_is_one_self_contained_file(experiment):
    report = build_report(experiment, plots=False)
    html = Path(report.files["report.html"]).read_text(encoding="utf-8")
    # Nothing is fetched: no external script, style, font or image; links are anchors within the page.
    assert not re.search(r"<(link|img|iframe)\b|\bsrc=|@import|url\(", html)
    assert not re.findall(r'href="(?!#)', html)
    assert html.count('<script type="application/octet-stream" id="data-') == 2
    # The run table and the list of points are built in the page from one JSON index.
    index = json.loads(re.search(r'<script type="application/json" id="page-index">(.*?)</script>', html).group(1))
    columns = index["runs"]["columns"]
    failed = next(r for r in index["runs"]["rows"] if r[columns.index("takeover_key")] == "t-raw_trace-p2")
    assert failed[columns.index("status")] == "failed" and failed[columns.index("cached_tokens")] is None
    assert [p[:4] for p in index["points"]] == [["p1", "acme__calc-1", "after_first_source_edit", "needs_completion"],
                                                ["p2", "acme__calc-1", "after_first_post_failure_edit",
                                                 "resolved_preserve"]]
    assert index["points"][1][4] == [["m", "repo_only", True, "done", "t-repo_only-p2"],
                                     ["m", "raw_trace", False, "failed", "t-raw_trace-p2"]]
    # Markup in run texts cannot end the script element that holds the index.
    assert "endpoint refused \\u003cb\\u003e502" in html
    assert 'data-set="{&#34;successor&#34;: &#34;m&#34;, &#34;view&#34;: &#34;raw_trace&#34;}"' in html
    assert "<b>502" not in html
    # The same files give the same page, byte for byte.
    first = Path(report.files["report.html"]).read_bytes()
    build_report(experiment, plots=False)
    assert Path(report.files["report.html"]).read_bytes() == first


@requires("shared:trajectories/mini-swe-agent/psf__requests-1766.json", "shared:trajectories/openhands/v0-messages")
def test_show_a_takeover_run_folder_and_imported_trajectories(experiment, tmp_path):
    data_dir = DATA
    run_dir = experiment / "work" / "takeover" / "t-repo_only-p1" / "run"
    out = write_run_page(run_dir, tmp_path / "run.html")
    html = out.read_text(encoding="utf-8")
    blob = re.search(r'id="data-r0">([^<]+)<', html).group(1)
    section = decode_section(blob)
    # Where the successor started (its checkpoint folder) and what it did.
    assert section["role"] == "successor" and section["point_type"] == "after_first_source_edit"
    assert section["checkpoint_patch"] == CHECKPOINT_PATCH
    assert section["prompts"] == {"repo_only": "prompt of repo_only (redacted copy)"}
    cell = section["runs"][0]
    assert (cell["view"], cell["successor"], len(cell["steps"])) == ("repo_only", "m", 3)
    assert cell["grading"]["status"] == "not_graded"
    # Any imported format, through the trajectory readers; a file of several runs gives one section each.
    mini = data_dir / "trajectories" / "mini-swe-agent" / "psf__requests-1766.json"
    result = CliRunner().invoke(app, ["show", str(mini), "--out-dir", str(tmp_path / "pages")])
    assert result.exit_code == 0, result.output
    mini_html = (tmp_path / "pages" / "psf__requests-1766.html").read_text(encoding="utf-8")
    section = decode_section(re.search(r'id="data-r0">([^<]+)<', mini_html).group(1))
    (transcript,) = read_transcripts(mini)
    assert section["role"] == "agent" and len(section["runs"][0]["steps"]) == len(transcript.steps) == 25
    assert section["runs"][0]["cached_tokens"] == transcript.cached_tokens > 0
    several = next((data_dir / "trajectories" / "openhands" / "v0-messages").glob("*.json"))
    html = write_run_page(several, tmp_path / "several.html").read_text(encoding="utf-8")
    assert html.count('<details class="point"') == len(read_transcripts(several)) > 1
    assert html.count("<details class=\"point\" id=\"point-r0\" data-point=\"r0\" open>") == 1


def test_show_reports_a_bad_path_as_one_error_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"nothing": "here"}')
    result = CliRunner().invoke(app, ["show", str(bad), "--out-dir", str(tmp_path / "pages")])
    assert result.exit_code != 0 and not (tmp_path / "pages" / "bad.html").exists()
    assert result.exit_code == 2 and "unknown trajectory format" in result.stderr
