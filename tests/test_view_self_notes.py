"""The ``self_notes`` view: the predecessor's own message history up to the cut, then the handoff question,
sent to the note writer; nothing after the cut (docs/protocol.md section 7.10)."""

from __future__ import annotations

import json

import pytest
from _views_support import real_run, real_run_path, real_task, requests_1766_patches, requests_1766_points
from prerequisites import shared

from takeover.errors import InputError
from takeover.llm import ModelClient, ModelSettings
from takeover.testing.scripted_server import ScriptedServer
from takeover.trajectories import read_trajectories
from takeover.trajectories.histories import message_history
from takeover.views import LeakGuard, build_view
from takeover.views.prompt import takeover_prompt
from takeover.views.self_notes import write_self_notes, writer_record

ID = "psf__requests-1766"
LATER_LINE = "must be callable"  # event 23's output (the failing test run, after the point)
NOTE = ("- The task: quote the qop value in the digest auth header (requests/auth.py).\n"
        "- I edited build_digest_header to write qop=\"auth\" and ran reproduce_issue.py, which printed the "
        "header; I have not run the test suite yet.\n- Next: run the tests.")


def _native_messages() -> list[dict]:
    return json.loads(real_run_path(ID).read_text(encoding="utf-8"))["messages"]


def test_the_history_is_the_runs_own_messages_up_to_the_cut_and_nothing_later():
    run = real_run(ID)
    history = message_history(run, 14)  # event 14: the sed that quotes qop (an action; its output is event 15)
    native = _native_messages()
    assert [m["content"] for m in history] == [m["content"] for m in native[: len(history)]]
    assert history[-1]["role"] == "assistant" and "sed" in history[-1]["content"]
    assert native[len(history)]["role"] == "user"  # the next message holds event 15, after the cut
    assert not any(LATER_LINE in m["content"] for m in history)
    # A cut after the observation takes its message too.
    assert len(message_history(run, 15)) == len(history) + 1


def test_the_writer_is_sent_the_history_and_the_handoff_question_and_its_note_is_the_block():
    run, task = real_run(ID), real_task(ID)
    point = requests_1766_points()["after_first_source_edit"]
    patch = requests_1766_patches()["after_first_source_edit"]
    guard = LeakGuard(run, point.event_index, task, patch, handoff_state="needs_completion")
    with ScriptedServer([{"content": NOTE}]) as server:
        client = ModelClient(ModelSettings(model="scripted-model", base_url=server.base_url, api_key_env=None))
        outcome = write_self_notes(client, run, point, patch, guard,
                                   lambda block: takeover_prompt("summary_notes", block, task))
        record = writer_record(run, client)
        client.close()
        [request] = server.requests
    history = message_history(run, point.event_index)
    sent = request["messages"]
    assert [m["content"] for m in sent[:-1]] == [m["content"] for m in history]
    assert sent[-1]["role"] == "user" and "write your handoff note" in sent[-1]["content"]
    assert LATER_LINE not in json.dumps(request)
    assert outcome.block == NOTE and outcome.validation == "valid" and outcome.usage.calls == 1
    assert record == {"writer": "scripted-model", "predecessor_model": run.model, "predecessor_wrote": False}


def test_the_predecessors_own_model_is_named_as_the_writer_when_it_writes():
    run = real_run(ID)
    own = ModelClient(ModelSettings(model=f"openai/{run.model.rsplit('/', 1)[-1]}", base_url="http://127.0.0.1:9"))
    assert writer_record(run, own)["predecessor_wrote"] is True
    own.close()


@pytest.mark.parametrize("relative", ["openhands/v1/openagentsafety.v1.output.jsonl",
                                      "swe-agent/marshmallow-code__marshmallow-1867.demo-default.traj"])
def test_a_format_without_the_models_messages_is_refused_naming_it(relative):
    run = read_trajectories(shared(f"trajectories/{relative}"))[0]
    with pytest.raises(InputError, match=f"a {run.format} run keeps no message history.*only mini-swe-agent"):
        message_history(run, 0)


def test_the_registered_view_records_who_wrote_the_note():
    run, task = real_run(ID), real_task(ID)
    point = requests_1766_points()["after_first_source_edit"]
    patch = requests_1766_patches()["after_first_source_edit"]
    with ScriptedServer([{"content": NOTE}]) as server:
        writer = ModelSettings(model="scripted-model", base_url=server.base_url, api_key_env=None)
        result = build_view("self_notes", run, point, task, patch, model=writer)
        [request] = server.requests
    assert result.block == NOTE and '<previous_agent view="self_notes">' in result.prompt
    assert result.structured == {"writer": {"writer": "scripted-model", "predecessor_model": run.model,
                                            "predecessor_wrote": False}}
    assert result.summary_shape == {"bullets": 3, "words": len(NOTE.split())}
    assert result.note_usage.calls == 1 and len(request["messages"]) == len(message_history(run, 14)) + 1


def test_a_note_that_leaks_a_later_event_is_rejected_and_asked_again():
    run, task = real_run(ID), real_task(ID)
    point = requests_1766_points()["after_first_source_edit"]
    patch = requests_1766_patches()["after_first_source_edit"]
    leaking = NOTE + "\n- Running test_requests.py later fails: TypeError: 'requests.post(url, data=\\'[{\"some\": \"data\"}]\\', files={\\'some\\': f})' object (type: <class 'str'>) must be callable"
    with ScriptedServer([{"content": leaking}, {"content": NOTE}]) as server:
        writer = ModelSettings(model="scripted-model", base_url=server.base_url, api_key_env=None)
        result = build_view("self_notes", run, point, task, patch, model=writer)
        assert len(server.requests) == 2
    assert result.block == NOTE and result.validation == "retried" and "leak" in result.rejections[0]


def test_a_takeover_run_without_mini_swe_agents_record_is_refused(tmp_path):
    run = real_run(ID).model_copy(update={"format": "takeover", "metadata": {"run_dir": str(tmp_path)}})
    with pytest.raises(InputError, match="this takeover run keeps no message history"):
        message_history(run, 14)
    # A record whose events are not the run's is not cut with the run's index.
    (tmp_path / f"{ID}.traj.json").write_text(real_run_path(ID).read_text(encoding="utf-8"), encoding="utf-8")
    shifted = run.model_copy(update={"events": run.events[1:]})
    with pytest.raises(InputError, match="its events differ from the run's events up to the cut"):
        message_history(shifted, 14)
    assert len(message_history(run, 14)) == len(message_history(real_run(ID), 14))
