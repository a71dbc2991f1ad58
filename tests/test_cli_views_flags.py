"""``takeover views`` flags on a run of a repository built here: the point detected by replay in --mirror,
the run chosen by --record, the raw_trace budget in tokens (--raw-trace-max-tokens), and the note writer's request
timeout and retries (--timeout, --retries) read back from views.json (docs/protocol.md section 7)."""

from __future__ import annotations

import json

import pytest
from test_checkpoints import _final_patch, _steps, mirror  # noqa: F401  (mirror is a fixture)
from test_cli_points_flags import write_run
from typer.testing import CliRunner

from takeover.cli import app
from takeover.testing.scripted_server import ScriptedServer

SUMMARY = "- The agent wrote reproduce.py to check f.\n- It edited pkg/mod.py so that f returns 3."


@pytest.fixture
def widget_run(mirror, tmp_path):  # noqa: F811
    """(run file, dataset, mirror folder) of the small run of test_checkpoints.py on acme/widget."""
    mirror_dir, task = mirror
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    final = _final_patch(tmp_path, {"pkg/mod.py": "def f():\n    return 2\n"})
    return write_run(tmp_path / "run.json", task.instance_id, _steps(), final), dataset, mirror_dir


def views(run, dataset, out, *args: str):
    return CliRunner().invoke(app, ["views", str(run), "--dataset", str(dataset), "--point-type",
                                    "after_first_source_edit", "--out-dir", str(out), "--offline", *args])


def test_mirror_lets_detection_replay_the_run_and_record_picks_it(widget_run, tmp_path, monkeypatch):
    run, dataset, mirror_dir = widget_run
    monkeypatch.delenv("TAKEOVER_MIRROR", raising=False)
    without = views(run, dataset, tmp_path / "none", "--view", "repo_only")
    assert without.exit_code == 2 and "acme/widget" in without.stderr  # no repository to replay in
    result = views(run, dataset, tmp_path / "v", "--view", "raw_trace", "--mirror", str(mirror_dir), "--record", "0")
    assert result.exit_code == 0, result.output
    index = json.loads((tmp_path / "v" / "views.json").read_text())
    assert (index["point"]["type"], index["point"]["event_index"]) == ("after_first_source_edit", 4)
    assert index["point"]["changed_source_files"] == ["pkg/mod.py"]
    other = views(run, dataset, tmp_path / "r1", "--view", "raw_trace", "--mirror", str(mirror_dir), "--record", "1")
    assert other.exit_code == 2 and "has no run 1 (it holds 1)" in other.stderr


def test_raw_trace_max_tokens_cuts_the_raw_trace_to_its_newest_events(widget_run, tmp_path):
    run, dataset, mirror_dir = widget_run
    common = ["--view", "raw_trace", "--mirror", str(mirror_dir)]
    assert views(run, dataset, tmp_path / "full", *common).exit_code == 0
    result = views(run, dataset, tmp_path / "cut", *common, "--raw-trace-max-tokens", "120")
    assert result.exit_code == 0, result.output
    full = json.loads((tmp_path / "full" / "views.json").read_text())["views"]["raw_trace"]
    cut = json.loads((tmp_path / "cut" / "views.json").read_text())["views"]["raw_trace"]
    assert full["dropped_events"] == 0 and cut["dropped_events"] > 0
    assert cut["estimated_tokens"] < full["estimated_tokens"]
    assert "earlier events omitted" in (tmp_path / "cut" / "raw_trace.md").read_text()


def test_timeout_and_retries_of_the_note_writer(widget_run, tmp_path):
    run, dataset, mirror_dir = widget_run
    common = ["--view", "summary_notes", "--mirror", str(mirror_dir), "--model", "writer", "--api-key-env", "",
              "--max-retry-wait", "0.01"]
    with ScriptedServer([{"status": 500, "error": "busy"}, {"content": SUMMARY}]) as srv:
        refused = views(run, dataset, tmp_path / "r0", *common, "--base-url", srv.base_url, "--retries", "0")
    assert refused.exit_code == 1 and srv.served == 1  # no retry: the view is not built
    assert json.loads((tmp_path / "r0" / "views.json").read_text())["views"]["summary_notes"].get("file") is None

    # The first answer comes after the 3 s timeout; one retry gets the note.
    with ScriptedServer([{"delay": 60, "content": "too late"}, {"content": SUMMARY}]) as srv:
        result = views(run, dataset, tmp_path / "t", *common, "--base-url", srv.base_url, "--retries", "1",
                       "--timeout", "3")
    assert result.exit_code == 0, result.output
    notes = json.loads((tmp_path / "t" / "views.json").read_text())["views"]["summary_notes"]["note_tokens"]
    assert [a["status"] for a in notes["attempts"]] == ["timeout", "ok"]
    assert notes["attempts"][0]["seconds"] >= 3 and (notes["calls"], notes["failed_calls"]) == (2, 1)


def test_view_is_repeatable_and_the_note_cap_reaches_the_writer(widget_run, tmp_path):
    run, dataset, mirror_dir = widget_run
    common = ["--mirror", str(mirror_dir)]
    both = views(run, dataset, tmp_path / "r", *common, "--view", "repo_only", "--view", "raw_trace")
    assert both.exit_code == 0, both.output
    assert sorted(json.loads((tmp_path / "r" / "views.json").read_text())["views"]) == ["raw_trace", "repo_only"]
    assert "warning" not in both.stderr

    with ScriptedServer([{"content": SUMMARY}]) as srv:
        capped = views(run, dataset, tmp_path / "n", *common, "--view", "summary_notes", "--model", "writer",
                       "--base-url", srv.base_url, "--api-key-env", "", "--note-max-tokens", "321")
    assert capped.exit_code == 0, capped.output
    assert [r["max_tokens"] for r in srv.requests] == [321]
