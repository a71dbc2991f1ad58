"""The ``condensed`` view: OpenHands' own LLMSummarizingCondenser, run in OpenHands' environment over the
predecessor's events up to the cut, with the scripted server as its LLM (docs/protocol.md section 7.7)."""

from __future__ import annotations

import json

from _views_support import real_run
from prerequisites import requires

from takeover.llm import ModelSettings
from takeover.testing.scripted_server import ScriptedServer
from takeover.views.condensed import CondenserOptions, condense
from takeover.views.evidence import render_event

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
