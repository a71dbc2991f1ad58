"""ATIF in and out: every shared trajectory exported as ATIF validates against the format's model and its
JSON Schema and reads back with the same events, commands and token counts; a file written here in the
spec's layout (tool calls, observations, per-step metrics, copied context, several calls in one step, an
earlier version) reads with exact counts; a cut keeps the events and tokens up to the cut."""

from __future__ import annotations

import json

import pytest
from prerequisites import requires, shared_files

from takeover.errors import InputError
from takeover.trajectories import read_trajectories, read_trajectory, summarize
from takeover.trajectories.atif_writer import SCHEMA_VERSION, to_atif, write_atif
from takeover.trajectories.events import Event, LLMCall, Trajectory
from takeover.trajectories.registry import detect_format

SHARED_RUNS = [
    *shared_files("trajectories/mini-swe-agent", "*__*.json"),
    *shared_files("trajectories/swe-agent", "*.traj"),
    *shared_files("trajectories/openhands/v0", "*.jsonl"),
    *shared_files("trajectories/openhands/v0-messages", "*.json"),
    *shared_files("trajectories/openhands/v1", "*.jsonl"),
]
COUNTS = ("agent_events", "actions", "observations", "llm_calls", "prompt_tokens", "completion_tokens",
          "cached_tokens", "reasoning_tokens", "final_patch_files")


def _validate(doc: dict) -> None:
    """The document validates against the ``atif`` model (the spec's rules) and its JSON Schema."""
    import atif
    import jsonschema

    atif.Trajectory.model_validate(doc)
    jsonschema.validate(doc, atif.Trajectory.model_json_schema())


@requires("atif")
@pytest.mark.parametrize("path", SHARED_RUNS, ids=lambda p: p.name)
def test_each_shared_run_exported_as_atif_validates_and_reads_back_the_same(path, tmp_path):
    for run in read_trajectories(path):
        out = write_atif(run, tmp_path / "trajectory.json")
        doc = json.loads(out.read_text())
        _validate(doc)
        assert doc["schema_version"] == SCHEMA_VERSION and detect_format(out) == "atif"
        back = read_trajectory(out)
        want, got = summarize(run).json_row(), summarize(back).json_row()
        assert {k: got[k] for k in COUNTS} == {k: want[k] for k in COUNTS}, run.record
        assert [e.model_dump() for e in back.events] == [e.model_dump() for e in run.events]
        assert [c.usage for c in back.llm_calls] == [c.usage for c in run.llm_calls]
        assert (back.instance_id, back.final_patch, back.task_prompt) == (run.instance_id, run.final_patch, run.task_prompt)


@requires("atif")
def test_a_cut_keeps_the_events_and_the_tokens_up_to_the_cut(tmp_path):
    run = read_trajectory(shared_files("trajectories/mini-swe-agent", "psf__requests-1766.json")[0])
    doc = to_atif(run, through_event=9)
    _validate(doc)
    (tmp_path / "cut.json").write_text(json.dumps(doc))
    back = read_trajectory(tmp_path / "cut.json")
    assert [e.model_dump() for e in back.events] == [e.model_dump() for e in run.events[:10]]
    kept = {e.llm_call for e in run.events[:10] if e.llm_call is not None}
    assert back.prompt_tokens == sum(run.llm_calls[i].usage.prompt_tokens for i in kept)
    assert doc["extra"]["cut_at_event"] == 9 and back.metadata["cut_at_event"] == 9
    assert (back.final_patch, back.exit_status) == (None, None)  # what the run did after the cut stays out
    with pytest.raises(InputError, match="event 50 is not in the run: it has 50 events"):
        to_atif(run, through_event=50)


#: A trajectory in the RFC's layout, as Harbor's converters write it (Claude Code-style tool names and a
#: mini-swe-agent text-protocol step among them).
SPEC_LAYOUT = {
    "schema_version": "ATIF-v1.6",
    "session_id": "sess-1",
    "agent": {"name": "claude-code", "version": "2.0.1", "model_name": "claude-sonnet"},
    "steps": [
        {"step_id": 1, "source": "system", "message": "You are a coding agent."},
        {"step_id": 2, "source": "user", "message": "Old request", "is_copied_context": True},
        {"step_id": 3, "source": "agent", "message": "Old answer", "is_copied_context": True,
         "metrics": {"prompt_tokens": 5000, "completion_tokens": 500}},
        {"step_id": 4, "source": "user", "message": "Fix add() in calc.py"},
        {"step_id": 5, "source": "agent", "message": "Let me look.", "reasoning_content": "Read first.",
         "tool_calls": [{"tool_call_id": "t1", "function_name": "Bash", "arguments": {"command": "cat calc.py"}},
                        {"tool_call_id": "t2", "function_name": "Read", "arguments": {"file_path": "/w/test_calc.py"}}],
         "observation": {"results": [{"source_call_id": "t1", "content": "def add(a, b): return a - b"},
                                     {"source_call_id": "t2", "content": [{"type": "text", "text": "assert add(1, 2) == 3"}]}]},
         "metrics": {"prompt_tokens": 1200, "completion_tokens": 80, "cached_tokens": 1000,
                     "extra": {"reasoning_tokens": 30}}},
        {"step_id": 6, "source": "agent", "message": "Fixing.", "llm_call_count": 2,
         "tool_calls": [{"tool_call_id": "t3", "function_name": "Edit",
                         "arguments": {"file_path": "/w/calc.py", "old_string": "a - b", "new_string": "a + b"}}],
         "observation": {"results": [{"source_call_id": "t3", "content": "edited"}]},
         "metrics": {"prompt_tokens": 2600, "completion_tokens": 150}},
        {"step_id": 7, "source": "user", "message": "Also run the tests."},
        {"step_id": 8, "source": "agent", "message": "THOUGHT: test.\n\n```bash\npython -m pytest -q\n```",
         "observation": {"results": [{"content": "1 passed"}]}, "metrics": {"prompt_tokens": 1500, "completion_tokens": 20}},
        {"step_id": 9, "source": "agent", "message": "Dispatched by the harness.", "llm_call_count": 0,
         "tool_calls": [{"tool_call_id": "t4", "function_name": "web_search", "arguments": {"query": "x"}}]},
    ],
    "final_metrics": {"total_prompt_tokens": 10300, "total_completion_tokens": 750, "total_steps": 9},
}


def test_an_atif_file_in_the_specs_layout_reads_with_exact_counts(tmp_path):
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(SPEC_LAYOUT))
    run = read_trajectory(path)
    assert (run.format, run.format_version, run.model) == ("atif", "ATIF-v1.6", "claude-sonnet")
    assert run.task_prompt == "Fix add() in calc.py"
    assert [(e.kind, e.source, e.type) for e in run.events] == [
        ("action", "agent", "command"), ("action", "agent", "file_view"),
        ("observation", "environment", "command"), ("observation", "environment", "file_view"),
        ("action", "agent", "file_edit"), ("observation", "environment", "file_edit"),
        ("observation", "user", "message"),
        ("action", "agent", "command"), ("observation", "environment", "command"),
        ("action", "agent", "message")]
    assert [e.command for e in run.events if e.type == "command" and e.kind == "action"] == ["cat calc.py", "python -m pytest -q"]
    edit = run.events[4]
    assert (edit.path, edit.edit, edit.old_text, edit.new_text) == ("/w/calc.py", "str_replace", "a - b", "a + b")
    assert [e.cause for e in run.events if e.kind == "observation"] == [0, 1, 4, 4, 7]
    assert run.events[3].text == "assert add(1, 2) == 3" and run.events[0].thought == "Read first."
    summary = summarize(run)
    # Copied context (5,000 + 500 tokens) is left out; step 6 is two calls; step 9 made none.
    assert (summary.agent_events, summary.actions, summary.observations, summary.llm_calls) == (10, 5, 5, 4)
    assert (summary.prompt_tokens, summary.completion_tokens) == (5300, 250)
    assert (summary.cached_tokens, summary.reasoning_tokens) == (1000, 30)
    assert run.metadata["copied_context_steps"] == 2 and run.events[9].llm_call is None


def test_earlier_versions_and_run_totals_read_too(tmp_path):
    doc = {"schema_version": "ATIF-v1.2", "session_id": "s", "agent": {"name": "terminus", "version": "1"},
           "steps": [{"step_id": 1, "source": "user", "message": "task"},
                     {"step_id": 2, "source": "agent", "message": "run",
                      "tool_calls": [{"tool_call_id": "a", "function_name": "bash", "arguments": {"command": "ls"}}],
                      "observation": {"results": [{"source_call_id": "a", "content": "x.py"}]}}],
           "final_metrics": {"total_prompt_tokens": 700, "total_completion_tokens": 7}}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    summary = summarize(read_trajectory(path))
    assert (summary.agent_events, summary.llm_calls, summary.prompt_tokens, summary.usage_per_call) == (2, 1, 700, False)


def test_a_broken_step_is_named_by_file_record_and_field(tmp_path):
    doc = {**SPEC_LAYOUT, "steps": [{"step_id": 1, "message": "no source"}]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"bad\.json.*steps\[0\].*source.*missing required field"):
        read_trajectory(path)


@requires("atif")
def test_a_run_without_recorded_calls_and_a_message_with_one_fenced_block_round_trip(tmp_path):
    events = [Event(index=0, kind="action", source="agent", type="message", text="Plan:\n```bash\nls\n```"),
              Event(index=1, kind="observation", source="user", type="message", text="go on", cause=0),
              Event(index=2, kind="action", source="agent", type="command", command="ls", text="ls", cwd="/repo"),
              Event(index=3, kind="observation", source="environment", type="command", text="a.py", exit_code=0,
                    cause=2, timed_out=True)]
    run = Trajectory(format="swe-agent", events=events, task_prompt="t",
                     llm_calls=[LLMCall(index=0), LLMCall(index=1)])
    run.events[0].llm_call, run.events[2].llm_call = 0, 1
    doc = to_atif(run)
    _validate(doc)
    (tmp_path / "t.json").write_text(json.dumps(doc))
    back = read_trajectory(tmp_path / "t.json")
    assert [e.model_dump() for e in back.events] == [e.model_dump() for e in run.events]
    assert summarize(back).prompt_tokens is None and len(back.llm_calls) == 2
