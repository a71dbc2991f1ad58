"""The OpenHands runtime (``--agent openhands``; docs/protocol.md section 8.4) against the scripted server's
OpenHands text-protocol replies (``<function=...>`` blocks), on the calculator repository built in the test:
the events as OpenHands records them, the usage of every call, a snapshot after every event (so that
``takeover points`` reads exact checkpoints without replay), the final patch, the exit status at the step
and wall-time limits, a takeover run, and what the runtime refuses before a run."""

from __future__ import annotations

import json

import pytest
from conftest import git
from prerequisites import requires
from test_agent_runs import _checkpoint_folder
from test_agent_runtimes import write_calc_study
from test_agents import bash, events_of, settings, tree_file
from test_cli_points_flags import points_json

from takeover.agent_choice import AgentChoice
from takeover.agents import ExitStatus, RunLimits, read_run
from takeover.agents.runs import run_predecessor, run_takeover
from takeover.errors import InputError
from takeover.experiments import load_experiment, run_experiment
from takeover.experiments.units import load_results
from takeover.sources.repos import RepoSource
from takeover.testing.scripted_server import ScriptedServer, count_words, function_call, prompt_words

#: What an OpenHands run needs: its environment (built once into the cache) and bubblewrap (the test checks
#: the sandboxed setup, whose prompts name /testbed).
needs_openhands = requires("openhands environment", "bubblewrap")

TEST = function_call("terminal", command="python -m pytest -q test_calc.py")
FIX = function_call("file_editor", command="str_replace", path="/testbed/calc.py", old_str="a - b", new_str="a + b")
MALFORMED = {"content": "<function=terminal>\n<parameter=bogus>1</parameter>\n</function>"}
FINISH = function_call("finish", message="add() adds now")
SCRIPT = [function_call("terminal", command="cat calc.py"), TEST, FIX, MALFORMED, TEST, FINISH]


def _calls(run_dir):
    return [json.loads(line) for line in (run_dir / "calls.jsonl").read_text().splitlines()]


@needs_openhands
@pytest.mark.slow
def test_openhands_predecessor_run_records_its_events_usage_snapshots_and_patch(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    out = tmp_path / "run"
    with ScriptedServer(SCRIPT) as srv:
        record = run_predecessor(task, settings(srv), out, repo_source=RepoSource(mirror), agent="openhands")
    assert record.finished and record.agent == "openhands" and record.exit_status is ExitStatus.submitted
    assert record.submission == "add() adds now" and record.snapshots == "recorded"

    # OpenHands' text protocol: no tools in the request, the function-call instructions in the system prompt.
    first = srv.requests[0]
    assert "tools" not in first and "<function=" in first["messages"][0]["content"]

    # Events as OpenHands records them: each tool call an action and its observation; the malformed call
    # a format-error turn (the rejected reply and OpenHands' answer).
    events = events_of(out)
    assert [(e["kind"], e["type"]) for e in events] == [
        ("action", "command"), ("observation", "command"), ("action", "command"), ("observation", "command"),
        ("action", "file_edit"), ("observation", "file_edit"), ("action", "message"), ("observation", "message"),
        ("action", "command"), ("observation", "command"), ("action", "finish"), ("observation", "finish")]
    assert [e["llm_call"] for e in events if e["kind"] == "action"] == [0, 1, 2, 3, 4, 5]
    assert [e["cause"] for e in events if e["kind"] == "observation"] == [0, 2, 4, 6, 8, 10]
    assert events[6]["format_error"] and "bogus" in events[6]["text"] and events[7]["source"] == "user"
    assert events[3]["exit_code"] == 1 and events[9]["exit_code"] == 0 and events[1]["text"].startswith("def add")
    assert (events[4]["path"], events[4]["old_text"], events[4]["new_text"]) == ("/testbed/calc.py", "a - b", "a + b")

    # Usage of every call, the rejected one included, exactly as the endpoint reported it.
    calls = _calls(out)
    assert len(calls) == len(srv.requests) == 6 and [c["format_error"] for c in calls] == [0, 0, 0, 1, 0, 0]
    for call, request, reply in zip(calls, srv.requests, SCRIPT, strict=True):
        assert call["usage"]["prompt_tokens"] == prompt_words(request)
        assert call["usage"]["completion_tokens"] == count_words(reply["content"])
    acc = record.accounting
    assert (acc.llm_calls, acc.agent_events, acc.actions, acc.format_errors) == (6, 12, 6, 1)
    assert acc.prompt_tokens == sum(prompt_words(r) for r in srv.requests) and acc.usage == "reported"
    assert acc.initial_prompt_tokens == prompt_words(first)
    assert acc.initial_prompt_chars == sum(len(m["content"]) for m in first["messages"][:2])

    # A snapshot after every event: the starting state until the edit, the fixed file from the edit on.
    ws = out / "workspace"
    trees = [e["snapshot"] for e in events]
    assert set(trees[:4]) == {record.starting_state} and set(trees[4:]) == {record.final_snapshot}
    assert tree_file(ws, trees[4], "calc.py") == "def add(a, b):\n    return a + b\n"
    refs = git(ws, "for-each-ref", "--format=%(objectname)", "refs/takeover/snapshots/").split()
    assert record.final_snapshot in refs
    assert "+    return a + b" in (out / "patch.diff").read_text()

    # OpenHands' own record is in the run folder; its pinned versions are in run.json.
    assert (out / "openhands" / "conversation").is_dir()
    assert record.versions["openhands:openhands-sdk"] == "1.58.2"
    assert record.environment["agent_environment"]["build_seconds"] > 0
    assert "bubblewrap around OpenHands" in record.sandbox
    traj = read_run(out)
    assert traj.agent_events == 12 and traj.prompt_tokens == acc.prompt_tokens

    # takeover points reads the recorded snapshots: exact checkpoints, no replay.
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    row = points_json(str(out), "--dataset", str(dataset), "--offline", "--mirror", str(mirror))
    assert row["replay"]["method"] == "recorded_snapshot" and row["replay"]["verified"] is True
    # The edit (event 4), and the test run after it (its observation, event 9); the failing run before the
    # edit is no verification result of an edit (docs/protocol.md section 4.3).
    assert [(p["type"], p["event_index"]) for p in row["points"]] == [
        ("after_first_source_edit", 4), ("after_first_verification_result", 9)]


@needs_openhands
@pytest.mark.slow
def test_openhands_stops_at_the_step_limit_and_at_the_wall_time_limit(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    looping = [function_call("terminal", command="ls")] * 5
    with ScriptedServer(looping) as srv:
        record = run_predecessor(task, settings(srv), tmp_path / "steps", repo_source=RepoSource(mirror),
                                 agent="openhands", limits=RunLimits(step_limit=2))
    assert record.exit_status is ExitStatus.step_limit and len(srv.requests) == 2
    assert (record.accounting.llm_calls, record.accounting.agent_events) == (2, 4)

    slow = [{**function_call("terminal", command="ls"), "delay": 4.0}] * 3
    with ScriptedServer(slow) as srv:
        record = run_predecessor(task, settings(srv), tmp_path / "time", repo_source=RepoSource(mirror),
                                 agent="openhands", limits=RunLimits(wall_time_limit_seconds=2))
    assert record.exit_status is ExitStatus.time_limit and len(srv.requests) == 1
    assert record.accounting.agent_events == 2 and record.accounting.wall_seconds < 20
    assert all(e["snapshot"] for e in events_of(tmp_path / "time"))


@needs_openhands
@pytest.mark.slow
def test_openhands_takeover_run_continues_the_checkpoint(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    folder = _checkpoint_folder(tmp_path, task)
    with ScriptedServer([TEST, FINISH]) as srv:
        record = run_takeover(folder, "repo_only", settings(srv), tmp_path / "t", task=task,
                              repo_source=RepoSource(mirror), agent="openhands")
    assert record.kind == "takeover" and record.exit_status is ExitStatus.submitted
    assert "<takeover_instructions>continue" in srv.requests[0]["messages"][1]["content"]
    events = events_of(tmp_path / "t")
    assert events[1]["exit_code"] == 0  # the checkpoint's fix is there: the tests pass
    assert "+    return a + b" in (tmp_path / "t" / "patch.diff").read_text()


def test_openhands_refuses_what_it_cannot_honour_before_the_run(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    openhands = AgentChoice(runtime="openhands")
    for kwargs, field in (({"limits": RunLimits(cost_limit=1.0), "agent": openhands}, "cost_limit"),
                          ({"agent": AgentChoice(runtime="openhands", protocol="tools")}, "protocol"),
                          ({"agent": AgentChoice(runtime="openhands", command_backend="docker")}, "command_backend")):
        with ScriptedServer([]) as srv, pytest.raises(InputError) as exc:
            run_predecessor(task, settings(srv), tmp_path / "run", repo_source=RepoSource(mirror), **kwargs)
        assert exc.value.field == field and srv.requests == [] and not (tmp_path / "run").exists()


# --- an experiment whose successors are mini-swe-agent and OpenHands ------------------------------------

def _reply(request: dict, n: int) -> dict:
    """The predecessor (mini-swe-agent) breaks add() another way; the mini-swe-agent successor fixes it with
    sed, the OpenHands successor with its file editor."""
    messages = request["messages"]
    turns = sum(m["role"] == "assistant" for m in messages)
    if "<function=" in messages[0]["content"]:  # OpenHands' text protocol
        return [function_call("file_editor", command="str_replace", path="/testbed/calc.py", old_str="a * b",
                              new_str="a + b"), FINISH][min(turns, 1)]
    if "<takeover_instructions>" in messages[1]["content"]:
        return [bash("sed -i 's/a [*] b/a + b/' calc.py"), bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")][
            min(turns, 1)]
    return [bash("sed -i 's/a - b/a * b/' calc.py"), bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")][min(turns, 1)]


@needs_openhands
@pytest.mark.slow
def test_an_experiment_with_mini_swe_agent_and_openhands_successors_reports_both(tmp_path):
    write_calc_study(tmp_path)
    with ScriptedServer(_reply) as srv:
        model = f'model = "scripted"\nbase_url = "{srv.base_url}"\napi_key_env = ""\nretries = 0\n'
        (tmp_path / "e.toml").write_text(
            f'out_dir = "out"\nmirror = "mirror"\noffline = true\nviews = ["repo_only"]\n'
            f'point_types = ["after_first_source_edit"]\nbootstrap_resamples = 50\n'
            f'[dataset]\npath = "tasks.jsonl"\ndifficulties = ["15 min - 1 hour"]\n'
            f'[predecessor.model]\n{model}'
            f'[[successors]]\n{model}[[successors]]\n{model}agent = "openhands"\n'
            f'[limits]\nstep_limit = 4\n[grading]\ntimeout = 120\n')
        config = load_experiment(tmp_path / "e.toml")
        summary = run_experiment(config, executor="inline", progress=False)
    assert summary.problems == [], summary.problems_by_reason()
    names = ["scripted (mini-swe-agent)", "scripted (openhands)"]
    assert config.successor_names == names
    report = json.loads((config.out / "report.json").read_text())
    entries = {e["successor"]: e for e in report["summary"]}
    assert sorted(entries) == names
    assert {n: e["solved_rate"] for n, e in entries.items()} == {n: 1.0 for n in names}
    # mini-swe-agent: two steps of a command and its output; OpenHands: the edit and finish, each with its
    # observation: four agent events each, on different prompts.
    assert {n: e["median_agent_events"] for n, e in entries.items()} == {n: 4 for n in names}
    takeovers = load_results(config.out, "takeover")
    by_agent = {AgentChoice.model_validate(r.inputs["agent"]).runtime: r for r in takeovers.values()}
    assert by_agent["openhands"].output["prompt_tokens"] > by_agent["mini-swe-agent"].output["prompt_tokens"] > 0
