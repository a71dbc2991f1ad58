"""Structured notes ask the endpoint for JSON of their schema (constrained decoding, docs/protocol.md
section 7.4, Extension), summary notes ask for nothing, an endpoint that refuses a shape (any status, an error
naming the parameter) is asked at once in the next shape (json_object with the schema, then none) and never
in the refused one again, and the answer is validated as before either way: the scripted server
records every request's ``response_format``."""

from __future__ import annotations

import json

import pytest
from _views_support import Replay, real_run, real_task, requests_1766_points
from test_views_notes import CONSISTENT, GOOD, SUMMARY, answer, failing_point

from takeover.llm import ModelClient, ModelSettings
from takeover.llm.response_format import refuses_response_format
from takeover.testing.scripted_server import ScriptedServer
from takeover.views import NotesFailed, build_view
from takeover.views.structured import MODEL_FIELDS, notes_json_schema

ID = "psf__requests-1766"
JSON_SCHEMA = {"type": "json_schema",
               "json_schema": {"name": "structured_notes", "schema": notes_json_schema(), "strict": True}}
JSON_OBJECT = {"type": "json_object", "schema": notes_json_schema()}


@pytest.fixture(scope="module")
def replay():
    r = Replay()
    with r.server:
        yield r


@pytest.fixture(scope="module")
def run():
    return real_run(ID)


@pytest.fixture(scope="module")
def task():
    return real_task(ID)


@pytest.fixture(scope="module")
def point():
    return requests_1766_points()["after_first_source_edit"]


def writer(base_url: str, **extra) -> ModelSettings:
    return ModelSettings(model="writer", base_url=base_url, api_key_env=None, backoff=0.01, timeout=5.0,
                         extra=extra)


def test_the_notes_schema_is_the_seven_fields_as_strings():
    schema = notes_json_schema()
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert list(schema["properties"]) == schema["required"] == list(MODEL_FIELDS)
    assert {p["type"] for p in schema["properties"].values()} == {"string"}


def test_structured_notes_send_their_schema_and_summary_notes_send_none(replay, run, task, point, checkpoint_patch):
    replay.script([{"content": answer()}, {"content": SUMMARY}])
    structured = build_view("structured_notes", run, point, task, checkpoint_patch, model=writer(replay.base_url))
    summary = build_view("summary_notes", run, point, task, checkpoint_patch, model=writer(replay.base_url))
    assert [r.get("response_format") for r in replay.requests] == [JSON_SCHEMA, None]
    assert (structured.validation, summary.validation) == ("valid", "valid")
    assert [a.response_format for a in structured.note_usage.attempts] == ["json_schema"]
    assert [a.response_format for a in summary.note_usage.attempts] == [None]
    assert "response_format" not in summary.note_usage.attempts[0].model_dump()  # records as before


def test_llama_cpp_python_is_sent_its_own_shape(replay, run, task, point, checkpoint_patch):
    replay.script([{"content": answer()}])
    build_view("structured_notes", run, point, task, checkpoint_patch,
               model=writer(replay.base_url, response_format="json_object"))
    assert replay.server.response_formats[-1] == {"type": "json_object", "schema": notes_json_schema()}


def test_response_format_none_sends_nothing(replay, run, task, point, checkpoint_patch):
    replay.script([{"content": answer()}])
    result = build_view("structured_notes", run, point, task, checkpoint_patch,
                        model=writer(replay.base_url, response_format="none"))
    assert replay.requests[0].get("response_format") is None and result.validation == "valid"


@pytest.mark.parametrize("refusal", [400, 422, 500])  # OpenAI; a server validating requests; any other status
def test_an_endpoint_that_refuses_every_shape_is_asked_in_the_next_at_once_then_without_and_not_again(
        run, task, point, checkpoint_patch, refusal):
    with ScriptedServer([{"content": answer()}, {"content": answer()}],
                        refuse_response_format=refusal) as srv:
        first = build_view("structured_notes", run, point, task, checkpoint_patch, model=writer(srv.base_url))
        second = build_view("structured_notes", run, point, task, checkpoint_patch, model=writer(srv.base_url))
    # No retry of a refused shape (not even of a 500): json_schema, json_object with the schema, then none.
    assert srv.response_formats == [JSON_SCHEMA, JSON_OBJECT, None, None]
    assert srv.refused == 2 and srv.served == 2
    assert [(a.status, a.response_format) for a in first.note_usage.attempts] == [
        (f"http_{refusal}", "json_schema"), (f"http_{refusal}", "json_object"), ("ok", None)]
    assert (first.validation, first.attempts) == ("valid", 1)  # a refused parameter is no rejected note
    assert [(a.status, a.response_format) for a in second.note_usage.attempts] == [("ok", None)]
    assert ModelClient(writer(srv.base_url)).response_format_mode() == "none"


def test_llama_cpp_python_refusing_json_schema_with_a_500_gets_json_object_with_the_schema(
        run, task, point, checkpoint_patch):
    # llama-cpp-python's server answers json_schema with HTTP 500 naming response_format (scripted_server).
    with ScriptedServer([{"content": answer()}, {"content": answer()}],
                        refuse_response_format="json_schema") as srv:
        first = build_view("structured_notes", run, point, task, checkpoint_patch, model=writer(srv.base_url))
        second = build_view("structured_notes", run, point, task, checkpoint_patch, model=writer(srv.base_url))
    assert srv.response_formats == [JSON_SCHEMA, JSON_OBJECT, JSON_OBJECT]
    assert [(a.status, a.response_format) for a in first.note_usage.attempts] == [
        ("http_500", "json_schema"), ("ok", "json_object")]
    assert [(a.status, a.response_format) for a in second.note_usage.attempts] == [("ok", "json_object")]
    assert (first.validation, second.validation) == ("valid", "valid")
    assert ModelClient(writer(srv.base_url)).response_format_mode() == "json_object"
    # Another endpoint is not affected by this one's refusal.
    assert ModelClient(writer(srv.base_url + "/other")).response_format_mode() == "json_schema"


def test_a_500_that_does_not_name_the_parameter_is_retried_with_the_same_shape(replay, run, task, point,
                                                                                checkpoint_patch):
    replay.script([{"status": 500, "error": "out of memory"}, {"content": answer()}])
    result = build_view("structured_notes", run, point, task, checkpoint_patch, model=writer(replay.base_url))
    assert [(a.status, a.response_format) for a in result.note_usage.attempts] == [
        ("http_500", "json_schema"), ("ok", "json_schema")]
    assert [r.get("response_format") for r in replay.requests] == [JSON_SCHEMA, JSON_SCHEMA]


def test_a_400_that_does_not_name_the_parameter_is_a_model_error(replay, run, task, point, checkpoint_patch):
    replay.script([{"status": 400, "error": "model not found"}, {"content": answer()}])
    with pytest.raises(NotesFailed) as info:
        build_view("structured_notes", run, point, task, checkpoint_patch, model=writer(replay.base_url))
    assert (info.value.outcome, info.value.usage.calls, replay.served) == ("model_error", 1, 1)
    assert ModelClient(writer(replay.base_url)).response_format_mode() == "json_schema"


def test_a_schema_valid_note_that_denies_the_failure_is_still_rejected(replay, run, task, checkpoint_patch):
    # Both answers follow the schema exactly; the first contradicts the failing validation the predecessor saw.
    contradicting = answer(observed_failures="NONE OBSERVED")
    assert set(json.loads(contradicting)) == set(notes_json_schema()["required"])
    replay.script([{"content": contradicting}, {"content": answer(**CONSISTENT)}])
    result = build_view("structured_notes", run, failing_point(), task, checkpoint_patch,
                        model=writer(replay.base_url))
    assert (result.validation, result.attempts) == ("retried", 2)
    [rejection] = result.rejections
    assert rejection.startswith("attempt 1: contradiction: field observed_failures says 'NONE OBSERVED' but the "
                                "predecessor saw validation fail after the latest source change")
    assert [r.get("response_format") for r in replay.requests] == [JSON_SCHEMA, JSON_SCHEMA]  # the retry too
    assert result.structured["notes"]["observed_failures"] == CONSISTENT["observed_failures"]
    assert GOOD["problem_understanding"] == result.structured["notes"]["problem_understanding"]


@pytest.mark.parametrize(("status", "error", "refusal"), [
    ("http_400", "Unrecognized request argument supplied: response_format", True),
    ("http_500", "1 validation error ... response_format.type Input should be 'text' or 'json_object'", True),
    ("http_500", "out of memory", False),  # names nothing: an ordinary server error, retried
    ("http_429", "too many requests with response_format", False),  # busy: retried, never a refusal
    ("timeout", "response_format", False),
])
def test_a_refusal_is_an_http_error_naming_the_parameter_whatever_its_status(status, error, refusal):
    assert refuses_response_format(status, error) is refusal
