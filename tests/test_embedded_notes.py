"""The embedded 0.5B model against its real llama-cpp-python server (docs/protocol.md section 7.4).

- At the quickstart's handoff point (pytest-dev__pytest-7521, after_first_source_edit, as the verified
  replay finds it today: event 24, whose latest verification, ``python3 verify_newline.py``, passed), written
  after the summary notes as the quickstart writes them (the server's prompt cache holds their shared opening),
  it writes structured notes that validate at the first attempt under the quickstart's completion cap, asking
  for JSON of the notes' schema in llama-cpp-python's shape; the facts they were checked against are the
  point's own (whatever its latest verification: the test states the point it ran at instead of assuming
  one, so a change of the point rules shows in its output, not as a broken precondition).
- Asked for ``json_schema`` (as a user pointing ``takeover views`` at ``takeover serve-model`` does), the
  server answers HTTP 500 naming ``response_format``; the client falls back at once to ``json_object`` with
  the schema, which the server decodes under, and keeps that shape for later calls.

Needs the cached weights and llama-cpp-python (and the mirror for the point); CI has none of them, and the
same paths run there against the scripted server (the counterparts). ``tests/test_mirror_inventory.py``
checks in CI that these tests would start."""

from __future__ import annotations

import json
import os

import pytest
from prerequisites import requires, shared

from takeover.embedded_model import EmbeddedModel
from takeover.llm import ModelClient, ResponseSchema
from takeover.points import analyze_run
from takeover.quickstart import EMBEDDED_NOTE_MAX_TOKENS
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import task_by_id
from takeover.trajectories import read_trajectories
from takeover.view_budgets import ViewBudgets
from takeover.views import build_view
from takeover.views.structured import compute_fields

INSTANCE = "pytest-dev__pytest-7521"


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a verified replay and a 5,000-token prompt on a CPU: minutes, more on a shared machine
@requires("embedded model weights", "llama-cpp-python", "mirror", f"shared:trajectories/mini-swe-agent/{INSTANCE}.json",
          "shared:swebench_verified.jsonl",
          counterpart="test_views_structured_output.py::test_structured_notes_send_their_schema_and_summary_notes_send_none")
def test_the_embedded_model_writes_structured_notes_that_validate_at_the_first_attempt(tmp_path):
    run = read_trajectories(shared(f"trajectories/mini-swe-agent/{INSTANCE}.json"))[0]
    task = task_by_id(shared("swebench_verified.jsonl"), INSTANCE)
    points = analyze_run(run, task, RepoSource(os.environ["TAKEOVER_MIRROR"], offline=True), work_dir=tmp_path)
    point = points.point("after_first_source_edit")
    with EmbeddedModel(log_path=tmp_path / "server.log") as settings:
        # As the quickstart builds them: summary notes first, so that the structured request finds their shared
        # opening (system prompt and issue) in the server's prompt cache. The 0.5B model's answer depends on
        # that state: from an empty cache its structured notes at this point were rejected three times.
        build_view("summary_notes", run, point, task, points.patches[point.type], model=settings, view_budgets=ViewBudgets(note_max_tokens=EMBEDDED_NOTE_MAX_TOKENS))
        result = build_view("structured_notes", run, point, task, points.patches[point.type], model=settings, view_budgets=ViewBudgets(note_max_tokens=EMBEDDED_NOTE_MAX_TOKENS))
    at = (point.event_index, point.latest_verification_result)
    assert (result.validation, result.attempts, result.rejections) == ("valid", 1, []), at
    assert [a.response_format for a in result.note_usage.attempts] == ["json_object"]
    # The notes were checked against this point's facts (the rule that rejects a denied failure or an
    # unhedged success claim reads them): today no verification follows the point's source edit ("none").
    facts = compute_fields(point, points.patches[point.type])
    assert result.structured["facts"]["validation_status"] == facts.validation_status, at


@pytest.mark.slow
@requires("embedded model weights", "llama-cpp-python",
          counterpart="test_views_structured_output.py::"
                      "test_llama_cpp_python_refusing_json_schema_with_a_500_gets_json_object_with_the_schema")
def test_the_real_server_refuses_json_schema_with_a_500_and_the_client_falls_back_to_json_object(tmp_path):
    schema = ResponseSchema("answer", {"type": "object", "properties": {"answer": {"type": "string"}},
                                       "required": ["answer"], "additionalProperties": False})
    messages = [{"role": "user", "content": "Reply with a JSON object whose field answer is the word yes."}]
    with EmbeddedModel(log_path=tmp_path / "server.log") as settings:
        # What a user's settings say for an OpenAI-compatible endpoint: the default json_schema.
        asked = settings.model_copy(update={"extra": {**settings.extra, "response_format": "json_schema"}})
        client = ModelClient(asked)
        first = client.complete(messages, max_tokens=32, response_schema=schema)
        second = client.complete(messages, max_tokens=32, response_schema=schema)
    refused, answered = first.attempts
    assert (refused.status, refused.response_format, answered.status, answered.response_format) == (
        "http_500", "json_schema", "ok", "json_object")
    assert "response_format" in refused.error
    assert set(json.loads(first.answer)) == {"answer"}  # decoded under the schema
    assert [(a.status, a.response_format) for a in second.attempts] == [("ok", "json_object")]
