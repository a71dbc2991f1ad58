"""The embedded 0.5B model writes structured notes that validate at the first attempt at the quickstart's
handoff point (pytest-dev__pytest-7521, after_first_source_edit, the predecessor's latest validation
failed), under the quickstart's completion cap, asking for JSON of the notes' schema in llama-cpp-python's
shape (docs/protocol.md section 7.4). Needs the cached weights, llama-cpp-python and the mirror (the point
comes from the verified replay); CI has none of them, and the same path runs there against the scripted
server (the counterpart)."""

from __future__ import annotations

import os

import pytest
from prerequisites import requires, shared

from takeover.embedded_model import EmbeddedModel
from takeover.points import analyze_run
from takeover.quickstart import EMBEDDED_NOTE_MAX_TOKENS
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import task_by_id
from takeover.trajectories import read_trajectories
from takeover.views import build_view

INSTANCE = "pytest-dev__pytest-7521"


@pytest.mark.slow
@requires("embedded model weights", "llama-cpp-python", "mirror", f"shared:trajectories/mini-swe-agent/{INSTANCE}.json",
          "shared:swebench_verified.jsonl",
          counterpart="test_views_structured_output.py::test_structured_notes_send_their_schema_and_summary_notes_send_none")
def test_the_embedded_model_writes_structured_notes_that_validate_at_the_first_attempt(tmp_path):
    run = read_trajectories(shared(f"trajectories/mini-swe-agent/{INSTANCE}.json"))[0]
    task = task_by_id(shared("swebench_verified.jsonl"), INSTANCE)
    points = analyze_run(run, task, RepoSource(os.environ["TAKEOVER_MIRROR"], offline=True), work_dir=tmp_path)
    point = points.point("after_first_source_edit")
    assert point.latest_verification_result == "failed"  # the case a small writer got wrong
    with EmbeddedModel(log_path=tmp_path / "server.log") as settings:
        result = build_view("structured_notes", run, point, task, points.patches[point.type], model=settings,
                            note_max_tokens=EMBEDDED_NOTE_MAX_TOKENS)
    assert (result.validation, result.attempts, result.rejections) == ("valid", 1, [])
    assert [a.response_format for a in result.note_usage.attempts] == ["json_object"]
