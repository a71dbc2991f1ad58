"""The ``condensed`` view: OpenHands' own LLMSummarizingCondenser, run in OpenHands' environment over the
predecessor's events up to the cut, with the scripted server as its LLM (docs/protocol.md section 7.9)."""

from __future__ import annotations

import json

import pytest
from _views_support import real_run, real_task, requests_1766_points
from prerequisites import requires

from takeover.claims.note_checks import note_block
from takeover.errors import InputError
from takeover.llm import ModelSettings
from takeover.testing.scripted_server import ScriptedServer
from takeover.views import build_view
from takeover.views.condensed import CondenserOptions, condense
from takeover.views.evidence import render_event
from takeover.views.notes import NotesFailed
from takeover.views.view_registry import HANDOFF_VIEWS, view_options

ID = "psf__requests-1766"
SUMMARY = "USER_CONTEXT: quote qop in the digest header\nCOMPLETED: reproduced with reproduce_issue.py\nPENDING: run tests"
LATER_LINE = "must be callable"  # event 23's output (after the cut)

needs_openhands = requires("openhands environment")


@needs_openhands
def test_the_condensers_request_reaches_the_server_and_its_summary_is_the_block():
    run = real_run(ID)
    with ScriptedServer([{"content": SUMMARY}]) as server:
        writer = ModelSettings(model="scripted-model", base_url=server.base_url, api_key_env=None)
        result = condense(run, 14, run.task_prompt, writer, CondenserOptions(keep_first=2))
        [request] = server.requests
    system, user = request["messages"]
    assert "context-aware state summary" in json.dumps(system)  # OpenHands' own summarizing prompt
    sent = json.dumps(user)
    assert "reproduce_issue.py" in sent and LATER_LINE not in sent
    assert result.summary == SUMMARY and SUMMARY in result.block
    # A requested condensation keeps the first events and the newer half; the last action, whose
    # observation comes after the cut, is dropped by OpenHands (a tool call without its result).
    assert result.kept == [-1, 0, 1, 10, 11, 12, 13] and result.forgotten == 8
    assert result.usage.calls == 1 and result.usage.completion_tokens == len(SUMMARY.split())
    assert result.condenser == {"name": "LLMSummarizingCondenser", "trigger": "request", "max_size": 240,
                                "keep_first": 2, "max_output_tokens": 1600,
                                "versions": result.condenser["versions"]}
    assert result.condenser["versions"]["openhands-sdk"] == "1.58.2"
    assert render_event(run.events[13]) in result.block and render_event(run.events[1]) in result.block
    assert render_event(run.events[14]) not in result.block and render_event(run.events[5]) not in result.block


@needs_openhands
def test_the_registered_view_carries_the_condensation_its_record_and_its_tokens(checkpoint_patch):
    run, task = real_run(ID), real_task(ID)
    point = requests_1766_points()["after_first_source_edit"]
    with ScriptedServer([{"content": SUMMARY}]) as server:
        writer = ModelSettings(model="scripted-model", base_url=server.base_url, api_key_env=None)
        result = build_view("condensed", run, point, task, checkpoint_patch, model=writer,
                            view_options={"max_size": 80, "keep_first": 1})
        assert len(server.requests) == 1
    assert SUMMARY in result.block and '<previous_agent view="condensed">' in result.prompt
    assert result.structured["condenser"]["max_size"] == 80 and result.structured["condenser"]["keep_first"] == 1
    assert result.structured["summary"] == SUMMARY and max(result.structured["kept_events"]) < point.event_index
    assert result.note_usage.calls == 1 and result.note_model["model"] == "scripted-model"
    assert result.validation == "valid"
    # The claims check reads the summary alone: the kept events are the trace itself.
    assert note_block(result.prompt, "condensed") == SUMMARY


@needs_openhands
def test_a_failing_condenser_fails_the_view_as_an_endpoint_failure(checkpoint_patch):
    run, task = real_run(ID), real_task(ID)
    point = requests_1766_points()["after_first_source_edit"]
    with ScriptedServer([{"status": 400, "error": "bad request"}]) as server:
        writer = ModelSettings(model="scripted-model", base_url=server.base_url, api_key_env=None, retries=0)
        with pytest.raises(NotesFailed, match="condensed: .*model_error.*Summarization LLM call failed"):
            build_view("condensed", run, point, task, checkpoint_patch, model=writer)


def test_options_openhands_would_refuse_are_refused_before_any_work():
    with pytest.raises(InputError, match=r"keep_first \(4\) must be below max_size // 2 - 1 \(4\)") as refused:
        view_options(HANDOFF_VIEWS.named("condensed"), None, {"max_size": 10, "keep_first": 4})
    assert refused.value.field == "view_options.condensed"
    assert view_options(HANDOFF_VIEWS.named("condensed"), None, {"max_size": 10, "keep_first": 3}) == {
        "max_size": 10, "keep_first": 3}
