"""Notes that restate the trace exactly are wholly supported (docs/protocol.md section 7.6): on every shared
run (each format), and through the note writer for the three points of psf__requests-1766 with their real
checkpoints, as the scripted server writes them and as ``takeover views --json`` reports them."""

from __future__ import annotations

import json
import os

import pytest
from _views_support import (
    real_run,
    real_task,
    requests_1766_patches,
    requests_1766_points,
    requests_1766_points_file,
)
from conftest import DATASET, TRAJ
from prerequisites import requires, shared, shared_files
from typer.testing import CliRunner

from takeover.claims import check_note, check_prompt, trace_facts
from takeover.cli import app
from takeover.llm import ModelSettings
from takeover.points import stored_diffs
from takeover.testing.restating_notes import restated_fields, restated_summary, restating_writer
from takeover.testing.scripted_server import ScriptedServer
from takeover.trajectories import read_trajectories
from takeover.views import build_view

RUNS = [*shared_files("trajectories/mini-swe-agent", "*__*.json"), *shared_files("trajectories/swe-agent", "*.traj"),
        *shared_files("trajectories/openhands", "*/*.json*")]


def _cuts(n: int) -> list[int]:
    return sorted({n // 3, 2 * n // 3, n - 1} - {-1})


def _stored_patch(run, cut: int) -> str | None:
    """The checkpoint patch a run's stored per-step diffs give at ``cut`` (SWE-agent), else ``None``."""
    diffs = stored_diffs(run)
    return "".join(diffs[cut].values()) if diffs else None


@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.name)
def test_restating_notes_are_wholly_supported_on_every_shared_run(path):
    runs = read_trajectories(path)[:2]
    claims = 0
    for run in runs:
        for cut in _cuts(len(run.events)):
            patch = _stored_patch(run, cut)
            facts = trace_facts(run, cut, checkpoint_patch=patch)
            for note, fields in ((restated_summary(run, cut, patch), None), ("", restated_fields(run, cut, patch))):
                check = check_note(note, facts, fields=fields)
                wrong = [(c.claim.text, c.verdict, c.reason) for c in check.claims if c.verdict != "supported"]
                assert wrong == [], (run.record, cut)
                claims += len(check.claims)
    assert claims > 0


@requires("shared:trajectories/mini-swe-agent/psf__requests-1766.json", "shared:swebench_verified.jsonl")
@pytest.mark.parametrize("point_type", ["after_first_source_edit", "after_first_verification_result",
                                        "after_first_post_failure_edit"])
def test_the_scripted_writer_restating_the_trace_gets_both_notes_views_wholly_supported(point_type):
    run, task = real_run("psf__requests-1766"), real_task("psf__requests-1766")
    point, patch = requests_1766_points()[point_type], requests_1766_patches()[point_type]
    with ScriptedServer(restating_writer(run, point.event_index, patch)) as server:
        model = ModelSettings(model="writer", base_url=server.base_url, api_key_env=None)
        for view in ("summary_notes", "structured_notes"):
            result = build_view(view, run, point, task, patch, model=model)
            check = check_prompt(view, result.prompt, run, point.event_index, checkpoint_patch=patch,
                                 problem_statement=task.problem_statement,
                                 fields=(result.structured or {}).get("notes"))
            f = check["figures"]
            assert f["claims"] >= 3 and f["supported"] == f["claims"], [c for c in check["claims"]
                                                                          if c["verdict"] != "supported"]
    if point_type == "after_first_post_failure_edit":
        # The edit of requests/auth.py was undone at the cut, and the note says so.
        reverted = [c for c in check["claims"] if c["kind"] == "edit" and c["action"] == "revert"]
        assert [(c["subject"], c["event"]) for c in reverted] == [("requests/auth.py", 24)]


@requires("shared:trajectories/mini-swe-agent/psf__requests-1766.json", "shared:swebench_verified.jsonl")
def test_views_json_carries_the_check_of_one_point(tmp_path):
    run = real_run("psf__requests-1766")
    point_type = "after_first_post_failure_edit"
    points_file = requests_1766_points_file(tmp_path, point_type)
    out = tmp_path / "views"
    with ScriptedServer(restating_writer(run, 24, requests_1766_patches()[point_type])) as server:
        result = CliRunner().invoke(app, [
            "views", str(TRAJ / "mini-swe-agent" / "psf__requests-1766.json"), "--dataset", str(DATASET),
            "--point-type", point_type, "--points-file", str(points_file), "--out-dir", str(out),
            "--view", "summary_notes", "--view", "structured_notes", "--view", "raw_trace",
            "--model", "writer", "--base-url", server.base_url, "--api-key-env", "NO_SUCH_KEY_VAR", "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert set(printed["claims"]) == {"summary_notes", "structured_notes"}  # raw_trace is no model's note
    for view, check in printed["claims"].items():
        assert check["cut_event"] == 24 and check["figures"]["contradicted"] == 0, view
        assert check["figures"]["supported"] == check["figures"]["claims"] > 5, view
        assert all(str(c["event"]) in check["events"] for c in check["claims"] if c["event"] is not None)
    assert json.loads((out / "claims.json").read_text())["views"] == printed["claims"]
    assert "claims of summary_notes:" in result.stderr


@requires("mirror", "shared:swebench_verified.jsonl",
          counterpart="test_claims_restated.py::test_the_scripted_writer_restating_the_trace_gets_both_notes_views_wholly_supported")
@pytest.mark.parametrize("instance", ["psf__requests-1921", "psf__requests-2317", "pallets__flask-5014"])
def test_restating_notes_at_the_detected_points_with_their_checkpoints(instance, tmp_path):
    from takeover.points import analyze_run
    from takeover.sources.repos import RepoSource
    from takeover.sources.tasks import task_by_id

    run = read_trajectories(shared(f"trajectories/mini-swe-agent/{instance}.json"))[0]
    task = task_by_id(shared("swebench_verified.jsonl"), instance)
    found = analyze_run(run, task, RepoSource(os.environ["TAKEOVER_MIRROR"], offline=True), work_dir=tmp_path)
    assert found.points
    for point in found.points:
        patch = found.patches[point.type]
        facts = trace_facts(run, point.event_index, checkpoint_patch=patch, problem_statement=task.problem_statement)
        for note, fields in ((restated_summary(run, point.event_index, patch), None),
                             ("", restated_fields(run, point.event_index, patch))):
            check = check_note(note, facts, fields=fields)
            assert [c.claim.text for c in check.claims if c.verdict != "supported"] == [], point.type
