"""``takeover views``: files written, views.json sizes equal to the files, resume, the notes views without a
model, budgets, missing points, checkpoint folders."""

from __future__ import annotations

import json
import re

import pytest
from _views_support import (
    Replay,
    real_run,
    real_task,
    requests_1766_patches,
    requests_1766_points,
    requests_1766_points_file,
)
from conftest import DATASET, TRAJ
from prerequisites import requires
from typer.testing import CliRunner

from takeover._util.io import atomic_write_json, sha256_text
from takeover.checkpoints import Checkpoint, materialize_checkpoint
from takeover.cli import app
from takeover.llm import estimate_tokens

ID = "psf__requests-1766"
FILE = TRAJ / "mini-swe-agent" / f"{ID}.json"
STRUCTURED = json.dumps({
    "problem_understanding": "Quote the qop value in the Digest Authorization header.",
    "work_completed": "Edited requests/auth.py to write qop=\"auth\".",
    "evidence_observed": "reproduce_issue.py printed qop=auth before the edit.",
    "observed_failures": "NONE OBSERVED",
    "remaining_uncertainty": "Effect of the edit not yet observed.",
    "rollback_notes": "NONE OBSERVED",
    "recommended_next_action": "Re-run reproduce_issue.py.",
})
SUMMARY = "- The agent quoted qop in requests/auth.py.\n- It has not re-run its reproduction script."


@pytest.fixture
def points_file(tmp_path):
    """A saved RunPoints record for the run, with the hand-checked point (detection needs the mirror)."""
    return requests_1766_points_file(tmp_path)


def invoke(*args: str):
    return CliRunner().invoke(app, ["views", str(FILE), "--dataset", str(DATASET), *args], catch_exceptions=False)


def test_all_views_are_written_and_views_json_sizes_match_the_files(tmp_path, points_file):
    out = tmp_path / "views"
    replay = Replay().script([{"content": SUMMARY, "usage": {"prompt_tokens": 900, "completion_tokens": 40}},
                              {"content": STRUCTURED, "usage": {"prompt_tokens": 800, "completion_tokens": 120}}])
    with replay.server:
        result = invoke("--point-type", "after_first_source_edit", "--points-file", str(points_file), "--out-dir", str(out),
                        "--model", "writer", "--base-url", replay.base_url, "--api-key-env", "NO_SUCH_KEY_VAR")
    assert result.exit_code == 0, result.output
    index = json.loads((out / "views.json").read_text())
    assert list(index["views"]) == ["repo_only", "raw_trace", "summary_notes", "structured_notes"]
    for name, row in index["views"].items():
        text = (out / f"{name}.md").read_text(encoding="utf-8")
        assert row["file"] == f"{name}.md"
        assert row["characters"] == len(text) and row["bytes"] == len(text.encode("utf-8"))
        assert row["estimated_tokens"] == estimate_tokens(text)
    assert index["views"]["raw_trace"]["validation"] == "not_applicable"
    assert index["views"]["repo_only"]["note_tokens"] is None
    assert index["views"]["summary_notes"]["note_tokens"]["prompt_tokens"] == 900
    assert index["views"]["structured_notes"]["note_tokens"]["completion_tokens"] == 120
    assert index["views"]["structured_notes"]["validation"] == "valid"
    assert index["note_tokens_total"]["prompt_tokens"] == 1700 and index["note_tokens_total"]["calls"] == 2
    assert index["point"]["event_index"] == 14 and index["instance_id"] == ID
    assert "[step 15 | agent | command]" in (out / "raw_trace.md").read_text()

    # a re-run with the same inputs reuses every view and spends no note tokens
    again = Replay()
    with again.server:
        rerun = invoke("--point-type", "after_first_source_edit", "--points-file", str(points_file), "--out-dir", str(out),
                       "--model", "writer", "--base-url", again.base_url, "--api-key-env", "NO_SUCH_KEY_VAR")
    assert rerun.exit_code == 0 and again.served == 0
    assert all(row.get("reused") for row in json.loads((out / "views.json").read_text())["views"].values())


def test_without_a_model_the_notes_views_say_a_model_is_needed(tmp_path, points_file):
    out = tmp_path / "views"
    result = invoke("--point-type", "after_first_source_edit", "--points-file", str(points_file), "--out-dir", str(out))
    assert result.exit_code == 1, result.output  # requested views were not built
    index = json.loads((out / "views.json").read_text())
    assert {n: r["validation"] for n, r in index["views"].items()} == {
        "repo_only": "not_applicable", "raw_trace": "not_applicable",
        "summary_notes": "model_required", "structured_notes": "model_required"}
    assert sorted(p.name for p in out.iterdir()) == ["raw_trace.md", "repo_only.md", "views.json"]
    assert "a model is needed" in result.output
    assert "summary_notes: summary_notes" not in result.output


def test_one_view_with_a_budget(tmp_path, points_file):
    out = tmp_path / "v"
    result = invoke("--point-type", "after_first_source_edit", "--points-file", str(points_file), "--out-dir", str(out),
                    "--view", "raw_trace", "--raw-trace-max-chars", "3000")
    assert result.exit_code == 0, result.output
    row = json.loads((out / "views.json").read_text())["views"]["raw_trace"]
    assert row["dropped_events"] > 0 and "earlier events omitted" in (out / "raw_trace.md").read_text()


def test_a_missing_point_exits_1_with_the_reason(tmp_path, points_file):
    result = invoke("--point-type", "after_first_post_failure_edit", "--points-file", str(points_file), "--out-dir",
                    str(tmp_path / "views"))
    assert result.exit_code == 1
    assert "no after_first_post_failure_edit point" in result.output


def test_unknown_view_is_a_usage_error(tmp_path, points_file):
    result = invoke("--point-type", "after_first_source_edit", "--points-file", str(points_file), "--out-dir",
                    str(tmp_path / "views"), "--view", "diary")
    assert result.exit_code == 2 and "unknown view 'diary'" in result.output


@pytest.mark.mirror
@pytest.mark.slow
@requires("mirror", f"shared:trajectories/mini-swe-agent/{ID}.json", "shared:swebench_verified.jsonl",
          counterpart="test_experiment_e2e.py::test_experiment_end_to_end_then_killed_and_resumed")
def test_detected_point_with_the_mirror_equals_the_hand_checked_one(tmp_path, mirror_dir):
    """Real detection (replay in the mirror) finds the points the other tests use without the mirror."""
    out = tmp_path / "views"
    result = invoke("--point-type", "after_first_verification_result", "--mirror", str(mirror_dir), "--offline",
                    "--out-dir", str(out), "--view", "raw_trace")
    assert result.exit_code == 0, result.output
    index = json.loads((out / "views.json").read_text())
    expected = requests_1766_points()["after_first_verification_result"]
    assert index["point"] == expected.model_dump(mode="json")
    assert index["checkpoint_patch_sha256"] == sha256_text(requests_1766_patches()[expected.type])
    assert index["views"]["raw_trace"]["characters"] == len((out / "raw_trace.md").read_text())


@pytest.fixture
def checkpoint_dir(tmp_path):
    """A checkpoint folder as ``takeover checkpoint --no-workspace`` writes it, graded needs_completion."""
    task = real_task(ID)
    point = requests_1766_points()["after_first_source_edit"]
    folder = tmp_path / "cp"
    materialize_checkpoint(task, real_run(ID), point, requests_1766_patches()[point.type], folder,
                           "verified_replay", workspace=False)
    record = Checkpoint.model_validate_json((folder / "checkpoint.json").read_text())
    atomic_write_json(folder / "checkpoint.json", record.model_copy(update={"handoff_state": "needs_completion"}))
    return folder


def test_checkpoint_folder_gives_point_patch_and_output_folder(checkpoint_dir):
    result = CliRunner().invoke(app, ["views", str(FILE), "--dataset", str(DATASET), "--checkpoint-dir",
                                      str(checkpoint_dir), "--view", "repo_only", "--view", "raw_trace"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    index = json.loads((checkpoint_dir / "views" / "views.json").read_text())
    assert index["point"]["type"] == "after_first_source_edit" and index["point"]["event_index"] == 14
    assert sorted(index["views"]) == ["raw_trace", "repo_only"]
    assert len(re.findall(r"^\[step \d+ \|", (checkpoint_dir / "views" / "raw_trace.md").read_text(), re.MULTILINE)) == 15


def test_the_checkpoint_handoff_state_is_kept_out_of_views(tmp_path, checkpoint_dir):
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "preamble.md.j2").write_text("This repository needs_completion.\n")
    # A template that would leak it is refused (ViewLeakError, one error line and exit status 2), no view written.
    result = CliRunner().invoke(app, ["views", str(FILE), "--dataset", str(DATASET), "--checkpoint-dir",
                                      str(checkpoint_dir), "--view", "repo_only", "--template-dir", str(templates)])
    assert result.exit_code == 2 and result.stderr.startswith("error: ") and "handoff_state: needs_completion" in result.stderr
    assert not (checkpoint_dir / "views" / "repo_only.md").exists()
