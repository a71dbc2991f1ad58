"""Trajectory readers against every real file in ../shared/data/trajectories.

The expected counts and token sums are computed here, straight from the raw JSON, by small counting code
that does not import the readers (one ``expected_*`` function per native format).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import TRAJ
from prerequisites import requires, shared_files

from takeover.errors import InputError
from takeover.trajectories import (
    Reader,
    Trajectory,
    detect_format,
    iter_trajectories,
    read_trajectories,
    register_reader,
    summarize,
    unregister_reader,
)

HERE = Path(__file__).parent
MINI_11 = HERE / "data" / "mini_swe_agent_11.traj.json"

MINI_FILES = shared_files("trajectories/mini-swe-agent", "*__*.json")
V0_FILES = shared_files("trajectories/openhands/v0", "*.jsonl")
V0M_FILES = shared_files("trajectories/openhands/v0-messages", "*.json")
V1_FILES = shared_files("trajectories/openhands/v1", "*.jsonl")
SWE_FILES = shared_files("trajectories/swe-agent", "*.traj")



def counts(t: Trajectory) -> dict:
    return {
        "instance_id": t.instance_id,
        "events": t.agent_events,
        "actions": t.actions,
        "observations": t.observations,
        "llm_calls": len(t.llm_calls),
        "prompt_tokens": summarize(t).prompt_tokens,
        "completion_tokens": summarize(t).completion_tokens,
    }


# ---------------------------------------------------------------- independent counting from raw JSON


def expected_mini(doc: dict) -> dict:
    # messages[0] = system, messages[1] = task; each later assistant message = 1 action + 1 LLM call,
    # each later user message = 1 observation (format-error replies and the final bare diff included).
    msgs = doc["messages"][2:]
    assistant = [m for m in msgs if m["role"] == "assistant"]
    users = [m for m in msgs if m["role"] == "user"]
    prompt = sum(m["extra"]["response"]["usage"]["prompt_tokens"] for m in assistant)
    completion = sum(m["extra"]["response"]["usage"]["completion_tokens"] for m in assistant)
    return {
        "instance_id": doc["instance_id"],
        "events": len(assistant) + len(users),
        "actions": len(assistant),
        "observations": len(users),
        "llm_calls": len(assistant),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
    }


def expected_v0(row: dict) -> dict:
    actions = observations = 0
    first_user_message_seen = False
    for ev in row["history"]:
        if "action" in ev:
            if ev["action"] in ("system", "recall"):
                continue
            if ev["action"] == "message" and ev["source"] == "user" and not first_user_message_seen:
                first_user_message_seen = True
                continue
            actions += 1
        elif ev["observation"] != "recall":
            observations += 1
    usages = row["metrics"].get("token_usages") or []
    if usages:
        prompt = sum(u["prompt_tokens"] for u in usages)
        completion = sum(u["completion_tokens"] for u in usages)
        calls = len(usages)
    else:
        responses = {}
        for ev in row["history"]:
            meta = ev.get("tool_call_metadata")
            if "action" in ev and meta:
                responses[meta["model_response"]["id"]] = meta["model_response"]["usage"]
        prompt = sum(u["prompt_tokens"] for u in responses.values())
        completion = sum(u["completion_tokens"] for u in responses.values())
        calls = len(responses)
    return {
        "instance_id": row["instance_id"],
        "events": actions + observations,
        "actions": actions,
        "observations": observations,
        "llm_calls": calls,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
    }


def expected_v0_messages(run: dict) -> dict:
    msgs = run["messages"]
    assistant = [m for m in msgs if m["role"] == "assistant"]
    actions = sum(max(1, len(m.get("tool_calls") or [])) for m in assistant)
    tools = sum(1 for m in msgs if m["role"] == "tool")
    later_users = sum(1 for m in msgs if m["role"] == "user") - 1
    return {
        "instance_id": run["instance_id"].rsplit("_", 1)[0],
        "events": actions + tools + later_users,
        "actions": actions,
        "observations": tools + later_users,
        "llm_calls": len(assistant),
        "prompt_tokens": None,  # the format records no usage: unknown, not zero
        "completion_tokens": None,
    }


def expected_v1(row: dict) -> dict:
    hist = row["history"]
    action_events = [e for e in hist if e["kind"] == "ActionEvent"]
    agent_messages = [e for e in hist if e["kind"] == "MessageEvent" and e["source"] == "agent"]
    observations = [e for e in hist if e["kind"] in ("ObservationEvent", "AgentErrorEvent")]
    return {
        "instance_id": row["instance_id"],
        "events": len(action_events) + len(agent_messages) + len(observations),
        "actions": len(action_events) + len(agent_messages),
        "observations": len(observations),
        "llm_calls": len({e["llm_response_id"] for e in action_events}) + len(agent_messages),
        "prompt_tokens": None,  # metrics is null in these rows: unknown, not zero
        "completion_tokens": None,
    }


def expected_swe(doc: dict, name: str) -> dict:
    steps = doc["trajectory"]
    stats = doc["info"]["model_stats"]
    rc = doc.get("replay_config")
    rc = json.loads(rc) if isinstance(rc, str) else rc
    instance_id = rc["problem_statement"]["id"] if rc else name.split(".")[0]
    recorded = bool(stats["tokens_sent"] or stats["tokens_received"] or stats["api_calls"])
    return {
        "instance_id": instance_id,
        "events": 2 * len(steps),
        "actions": len(steps),
        "observations": len(steps),
        "llm_calls": len(steps),
        # All zeros: a demonstration replayed without a model recorded no usage (unknown, not 0).
        "prompt_tokens": stats["tokens_sent"] if recorded else None,
        "completion_tokens": stats["tokens_received"] if recorded else None,
    }


# ---------------------------------------------------------------- every real file


@requires("shared:trajectories")
def test_every_shared_trajectory_file_is_covered():
    covered = set(MINI_FILES + V0_FILES + V0M_FILES + V1_FILES + SWE_FILES)
    support = {"index.json", "run_results_summary.json"}
    on_disk = {
        p
        for p in TRAJ.rglob("*")
        if p.is_file() and p.name not in support and "eval_reports" not in p.parts and p.suffix != ".md"
    }
    assert on_disk == covered
    assert (len(MINI_FILES), len(V0_FILES), len(V0M_FILES), len(V1_FILES), len(SWE_FILES)) == (16, 2, 1, 2, 6)


@pytest.mark.parametrize("path", MINI_FILES, ids=lambda p: p.stem)
def test_mini_swe_agent_counts(path):
    doc = json.loads(path.read_text())
    (traj,) = read_trajectories(path)
    assert traj.format == "mini-swe-agent"
    assert traj.format_version == "mini-swe-agent-1"
    assert counts(traj) == expected_mini(doc)
    assert len(traj.llm_calls) == doc["info"]["model_stats"]["api_calls"]
    assert traj.final_patch == doc["info"]["submission"]
    assert traj.exit_status == "Submitted"
    assert traj.working_dir == "/testbed"
    assert {e.cwd for e in traj.events if e.kind == "action" and not e.format_error} == {"/testbed"}
    assert traj.task_prompt == doc["messages"][1]["content"]
    # Every <returncode> observation carries that exit code; the others (format errors, timeouts, diff) none.
    raw_codes = [
        int(m.group(1))
        for msg in doc["messages"][2:]
        if msg["role"] == "user" and (m := re.match(r"<returncode>(-?\d+)</returncode>", msg["content"]))
    ]
    assert [e.exit_code for e in traj.events if e.exit_code is not None] == raw_codes


@requires("shared:trajectories/mini-swe-agent/django__django-11066.json")
def test_mini_swe_agent_format_errors_and_submission():
    path = TRAJ / "mini-swe-agent" / "django__django-11066.json"
    doc = json.loads(path.read_text())
    (traj,) = read_trajectories(path)
    rejected = [
        i
        for i, m in enumerate(doc["messages"])
        if m["role"] == "user" and "EXACTLY ONE action" in m["content"]
    ]
    assert len(rejected) == 2
    errors = [e for e in traj.events if e.format_error]
    assert len(errors) == 2 and all(e.kind == "action" and e.type == "message" for e in errors)
    replies = [traj.events[e.index + 1] for e in errors]
    assert all(
        r.kind == "observation" and r.source == "user" and r.cause == e.index for r, e in zip(replies, errors)
    )
    assert sum(c.format_error for c in traj.llm_calls) == 2
    assert all(traj.llm_calls[e.llm_call].format_error for e in errors)
    # The submission: a finish action answered by the bare diff.
    assert (
        traj.events[-2].type == "finish"
        and "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in traj.events[-2].command
    )
    assert traj.events[-1].kind == "observation" and traj.events[-1].text == doc["info"]["submission"]
    assert traj.final_patch_files == ["django/contrib/contenttypes/management/__init__.py"]
    first = traj.events[0]
    assert first.kind == "action" and first.type == "command" and first.llm_call == 0
    usage = doc["messages"][2]["extra"]["response"]["usage"]
    assert traj.llm_calls[0].usage.prompt_tokens == usage["prompt_tokens"]
    assert traj.llm_calls[0].usage.cached_tokens == usage["prompt_tokens_details"]["cached_tokens"]


def test_mini_swe_agent_11_tool_calls():
    """A real mini-swe-agent 2.4 (format 1.1) run, made by tests/data/make_mini_swe_agent_11.py."""
    doc = json.loads(MINI_11.read_text())
    (traj,) = read_trajectories(MINI_11)
    assert traj.format_version == "mini-swe-agent-1.1"
    msgs = doc["messages"]
    assistant = [m for m in msgs if m["role"] == "assistant"]
    format_replies = [m for m in msgs if (m.get("extra") or {}).get("interrupt_type") == "FormatError"]
    tool_results = [m for m in msgs if m["role"] == "tool"]
    # Tool calls: one action per call; a 1.1 format error stores only the harness's reply (action rebuilt).
    n_actions = sum(len(m["extra"]["actions"]) for m in assistant) + len(format_replies)
    assert traj.actions == n_actions == 5
    assert traj.observations == len(tool_results) + len(format_replies) + 1 == 5  # + the exit message (diff)
    assert len(traj.llm_calls) == len(assistant) + len(format_replies) == 4
    usages = [m["extra"]["response"]["usage"] for m in assistant + format_replies]
    assert traj.prompt_tokens == sum(u["prompt_tokens"] for u in usages)
    assert traj.completion_tokens == sum(u["completion_tokens"] for u in usages)
    kinds = [(e.kind, e.source, e.type, e.exit_code, e.format_error) for e in traj.events]
    assert kinds == [
        ("action", "agent", "command", None, False),
        ("observation", "environment", "command", 0, False),
        ("action", "agent", "message", None, True),
        ("observation", "user", "message", None, False),
        ("action", "agent", "command", None, False),
        ("action", "agent", "command", None, False),
        ("observation", "environment", "command", 0, False),
        ("observation", "environment", "command", 1, False),
        ("action", "agent", "finish", None, False),
        ("observation", "environment", "finish", None, False),
    ]
    assert traj.events[4].llm_call == traj.events[5].llm_call == 2  # two tool calls of one response
    assert [traj.events[6].cause, traj.events[7].cause] == [4, 5]
    assert traj.final_patch_files == ["a.py"] and traj.exit_status == "Submitted"


@pytest.mark.parametrize("path", V0_FILES, ids=lambda p: p.stem)
def test_openhands_v0_counts(path):
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    trajs = read_trajectories(path)
    assert len(trajs) == len(rows)
    for n, (traj, row) in enumerate(zip(trajs, rows), start=1):
        assert traj.format == "openhands-v0"
        assert traj.record == f"line {n}"
        assert counts(traj) == expected_v0(row)
        assert traj.final_patch == row["test_result"]["git_patch"]
        raw_codes = [
            (ev["extras"].get("metadata") or {}).get("exit_code", ev["extras"].get("exit_code"))
            for ev in row["history"]
            if ev.get("observation") == "run"
        ]
        assert [
            e.exit_code for e in traj.events if e.kind == "observation" and e.type == "command"
        ] == raw_codes
        # A command's cwd: the working_dir the previous command observation reported (the shell persists).
        cwds, last = [], None
        for ev in row["history"]:
            if ev.get("action") == "run":
                cwds.append(last)
            elif ev.get("observation") == "run":
                last = ev["extras"]["metadata"]["working_dir"] or last  # a timed-out command reports none
        assert [e.cwd for e in traj.events if e.kind == "action" and e.type == "command"] == cwds


@requires("shared:trajectories/openhands/v0/alibaba__fastjson2-2775.output.jsonl",
          "shared:trajectories/openhands/v0/multi_swe_bench_examples.output.jsonl")
def test_openhands_v0_event_details():
    path = TRAJ / "openhands" / "v0" / "alibaba__fastjson2-2775.output.jsonl"
    row = json.loads(path.read_text().splitlines()[0])
    (traj,) = read_trajectories(path)
    assert traj.working_dir == "/home/fastjson2"
    assert traj.task_prompt.startswith("<uploaded_files>")
    raw_edits = [ev["args"] for ev in row["history"] if ev.get("action") == "edit"]
    edits = [e for e in traj.events if e.kind == "action" and e.type == "file_edit"]
    assert [(e.path, e.edit, e.new_text) for e in edits] == [
        (a["path"], a["command"], a["new_str"]) for a in raw_edits
    ]
    views = [e for e in traj.events if e.kind == "action" and e.type == "file_view"]
    assert all(v.path.startswith("/home/fastjson2/") for v in views)
    assert traj.events[-1].type == "finish" and traj.exit_status == "finished"
    ponyc = read_trajectories(TRAJ / "openhands" / "v0" / "multi_swe_bench_examples.output.jsonl")
    assert ponyc[2].exit_status == "RuntimeError"
    assert "maximum iteration" in ponyc[2].metadata["error"]
    assert ponyc[0].working_dir == "/workspace/ponylang__ponyc__0.1"


@pytest.mark.parametrize("path", V0M_FILES, ids=lambda p: p.stem)
def test_openhands_v0_messages_counts(path):
    runs = json.loads(path.read_text())
    trajs = read_trajectories(path)
    assert [counts(t) for t in trajs] == [expected_v0_messages(r) for r in runs]
    for i, (traj, run) in enumerate(zip(trajs, runs)):
        assert traj.format == "openhands-v0-messages"
        assert traj.record == f"index {i}"
        assert traj.metadata["native_instance_id"] == run["instance_id"]
        assert all(c.usage is None for c in traj.llm_calls)
        assert traj.final_patch == run["test_result"]["git_patch"]
        texts = [m["content"] for m in run["messages"] if m["role"] == "tool"]
        raw_codes = [
            int(m.group(1))
            for t in texts
            if (m := re.search(r"\[Command finished with exit code (-?\d+)\]", t))
        ]
        assert [e.exit_code for e in traj.events if e.exit_code is not None] == raw_codes
    assert trajs[0].instance_id == "python__mypy-15976"
    assert trajs[0].working_dir == "/workspace/python__mypy__1.6"
    assert trajs[0].final_patch_files == [
        "mypy/plugins/attrs.py",
        "mypy/plugins/dataclasses.py",
        "reproduce_error.py",
    ]


@pytest.mark.parametrize("path", V1_FILES, ids=lambda p: p.stem)
def test_openhands_v1_counts(path):
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    trajs = read_trajectories(path)
    assert [counts(t) for t in trajs] == [expected_v1(r) for r in rows]
    for traj, row in zip(trajs, rows):
        assert traj.format == "openhands-v1"
        raw_codes = [
            ev["observation"]["exit_code"]
            if ev["observation"].get("exit_code") is not None
            else ev["observation"]["metadata"]["exit_code"]
            for ev in row["history"]
            if ev["kind"] == "ObservationEvent" and ev["tool_name"] == "execute_bash"
        ]
        assert [
            e.exit_code for e in traj.events if e.kind == "observation" and e.type == "command"
        ] == raw_codes


@requires("shared:trajectories/openhands/v1/openagentsafety.v1_with_file_editor.output.jsonl")
def test_openhands_v1_file_editor_and_folder_form(tmp_path):
    path = TRAJ / "openhands" / "v1" / "openagentsafety.v1_with_file_editor.output.jsonl"
    row = json.loads(path.read_text().splitlines()[0])
    (from_row, *_) = read_trajectories(path)
    edit = next(e for e in from_row.events if e.type == "file_edit" and e.kind == "action")
    assert (edit.path, edit.edit, edit.file_text) == ("/workspace/code.txt", "create", "45312")
    # The same run persisted the SDK way: base_state.json + events/event-NNNNN-<id>.json (one run).
    conv = tmp_path / "conversation"
    (conv / "events").mkdir(parents=True)
    (conv / "base_state.json").write_text(
        json.dumps(
            {"id": "c0ffee", "agent": {"llm": {"model": "m"}}, "workspace": {"working_dir": "/workspace"}}
        )
    )
    for i, ev in enumerate(row["history"]):
        (conv / "events" / f"event-{i:05d}-{ev['id']}.json").write_text(json.dumps(ev))
    for given in (conv, conv / "events"):
        assert detect_format(given) == "openhands-v1-dir"
        (from_dir,) = read_trajectories(given)
        assert counts(from_dir) | {"instance_id": None} == counts(from_row) | {"instance_id": None}
        assert [e.model_dump() for e in from_dir.events] == [e.model_dump() for e in from_row.events]
        assert from_dir.working_dir == "/workspace" and from_dir.model == "m"
    broken = sorted((conv / "events").iterdir())[1]
    broken.write_text(broken.read_text()[:40])
    with pytest.raises(InputError) as info:
        read_trajectories(conv)
    assert (info.value.path, info.value.record) == (str(broken), "line 1")


@pytest.mark.parametrize("path", SWE_FILES, ids=lambda p: p.name)
def test_swe_agent_counts(path):
    doc = json.loads(path.read_text())
    (traj,) = read_trajectories(path)
    assert traj.format == "swe-agent"
    assert counts(traj) == expected_swe(doc, path.name)
    assert all(c.usage is None for c in traj.llm_calls)  # only run totals exist
    stats = doc["info"]["model_stats"]
    if stats["tokens_sent"] or stats["tokens_received"] or stats["api_calls"]:
        assert traj.metadata["usage_totals"] == {"prompt_tokens": stats["tokens_sent"], "api_calls": stats["api_calls"],
                                                 "completion_tokens": stats["tokens_received"], "per_call": False}
    else:  # a demonstration replayed without a model: nothing was recorded, so nothing is known
        assert traj.metadata["usage_totals"] is None
    assert traj.final_patch == doc["info"]["submission"]
    assert traj.exit_status == doc["info"]["exit_status"]
    assert traj.format_version == ("0.x" if isinstance(doc["trajectory"][0]["state"], str) else "1.x")
    assert [e.command for e in traj.events if e.kind == "action" and e.type == "command"] == [
        s["action"].strip()
        for s in doc["trajectory"]
        if s["action"].split()[0]
        not in (
            "edit",
            "insert",
            "create",
            "open",
            "goto",
            "scroll_up",
            "scroll_down",
            "submit",
            "str_replace_editor",
        )
    ]


@requires("shared:trajectories/swe-agent/pydicom__pydicom-1458.gpt4-0x.traj",
          "shared:trajectories/swe-agent/sweagenttestrepo-1c2844.gpt4.traj")
def test_swe_agent_action_parsing():
    (old,) = read_trajectories(TRAJ / "swe-agent" / "pydicom__pydicom-1458.gpt4-0x.traj")
    edits = [e for e in old.events if e.kind == "action" and e.type == "file_edit"]
    assert edits[0].edit == "create" and edits[0].path == "reproduce_bug.py"
    assert edits[1].edit == "edit" and edits[1].view_range == [1, 1]
    assert edits[1].path == "/pydicom__pydicom/reproduce_bug.py"
    assert edits[1].new_text.startswith("import numpy as np\n") and "end_of_edit" not in edits[1].new_text
    assert [e.view_range for e in edits[2:]] == [[287, 295], [287, 295], [287, 295], [287, 296]]
    assert old.working_dir == "/pydicom__pydicom" and old.instance_id == "pydicom__pydicom-1458"
    (new,) = read_trajectories(TRAJ / "swe-agent" / "sweagenttestrepo-1c2844.gpt4.traj")
    edit = next(e for e in new.events if e.type == "file_edit")
    assert edit.edit == "str_replace" and edit.path == "/SWE-agent__test-repo/tests/missing_colon.py"
    assert edit.old_text == "def division(a: float, b: float) -> float"
    assert edit.new_text == "def division(a: float, b: float) -> float:"
    assert new.events[-2].type == "finish"
    assert summarize(new).prompt_tokens == 7141 and summarize(new).usage_per_call is False


@requires("shared:trajectories/swe-agent/sweagenttestrepo-1c2844.gpt4.traj")
def test_swe_agent_state_diff(tmp_path):
    doc = json.loads((TRAJ / "swe-agent" / "sweagenttestrepo-1c2844.gpt4.traj").read_text())
    doc["trajectory"][2]["state"]["diff"] = "diff --git a/x b/x\n"
    path = tmp_path / "run.traj"
    path.write_text(json.dumps(doc))
    (traj,) = read_trajectories(path)
    assert [e.state_diff for e in traj.events] == [None] * 4 + ["diff --git a/x b/x\n"] * 2 + [None] * 4


# ---------------------------------------------------------------- registry and detection


@requires("shared:trajectories/mini-swe-agent",
          "shared:trajectories/openhands/v0",
          "shared:trajectories/openhands/v0-messages",
          "shared:trajectories/openhands/v1",
          "shared:trajectories/swe-agent")
def test_detection_is_by_content_not_name(tmp_path):
    for src, fmt in (
        (MINI_FILES[0], "mini-swe-agent"),
        (V0_FILES[0], "openhands-v0"),
        (V0M_FILES[0], "openhands-v0-messages"),
        (V1_FILES[0], "openhands-v1"),
        (SWE_FILES[0], "swe-agent"),
    ):
        dest = tmp_path / (src.name.split(".")[0] + ".data")  # SWE-agent ids come from the name
        shutil.copyfile(src, dest)
        assert detect_format(dest) == fmt
        assert [counts(t) for t in read_trajectories(dest)] == [counts(t) for t in read_trajectories(src)]


def test_register_reader_plugs_in_a_format(tmp_path):
    def detect(source):
        first = source.first()
        return isinstance(first, dict) and first.get("kind") == "toy-run"

    def read(source):
        return [
            Trajectory(format="toy", instance_id=row["id"], record=label) for label, row in source.records()
        ]

    path = tmp_path / "runs.jsonl"
    path.write_text('{"kind": "toy-run", "id": "a"}\n{"kind": "toy-run", "id": "b"}\n')
    with pytest.raises(InputError, match="unknown trajectory format"):
        read_trajectories(path)
    register_reader(Reader(name="toy", detect=detect, read=read, priority=5))
    try:
        assert [(t.instance_id, t.record) for t in read_trajectories(path)] == [
            ("a", "line 1"),
            ("b", "line 2"),
        ]
        with pytest.raises(ValueError, match="already registered"):
            register_reader(Reader(name="toy", detect=detect, read=read))
    finally:
        unregister_reader("toy")


@requires("shared:trajectories/mini-swe-agent",
          "shared:trajectories/openhands/v0",
          "shared:trajectories/swe-agent")
def test_iter_trajectories_many_files():
    paths = [MINI_FILES[0], V0_FILES[1], SWE_FILES[0]]
    got = [(t.format, t.instance_id) for t in iter_trajectories(paths)]
    assert got == [
        ("mini-swe-agent", "django__django-11066"),
        ("openhands-v0", "ponylang__ponyc-4595"),
        ("openhands-v0", "ponylang__ponyc-4593"),
        ("openhands-v0", "ponylang__ponyc-4588"),
        ("swe-agent", "marshmallow-code__marshmallow-1867"),
    ]


# ---------------------------------------------------------------- bad input


@requires("shared:trajectories/mini-swe-agent")
def test_truncated_json_names_file_and_line(tmp_path):
    text = MINI_FILES[0].read_text()
    cut = text[: len(text) // 2]
    path = tmp_path / "cut.json"
    path.write_text(cut)
    try:
        json.loads(cut)
    except json.JSONDecodeError as exc:
        line = exc.lineno
    with pytest.raises(InputError) as info:
        read_trajectories(path)
    assert info.value.path == str(path) and info.value.record == f"line {line}"
    assert "truncated or malformed" in str(info.value)


@requires("shared:trajectories/openhands/v1")
def test_truncated_jsonl_names_the_broken_line(tmp_path):
    lines = V1_FILES[1].read_text().splitlines()
    path = tmp_path / "cut.jsonl"
    path.write_text("\n".join(lines[:2] + [lines[2][:500]]))
    with pytest.raises(InputError) as info:
        read_trajectories(path)
    assert (info.value.path, info.value.record) == (str(path), "line 3")


@requires("shared:trajectories/openhands/v0",
          "shared:trajectories/mini-swe-agent",
          "shared:trajectories/swe-agent")
def test_missing_field_names_record_and_field(tmp_path):
    rows = [json.loads(line) for line in V0_FILES[1].read_text().splitlines()]
    k = next(i for i, ev in enumerate(rows[1]["history"]) if ev.get("action") == "edit")
    del rows[1]["history"][k]["action"]
    path = tmp_path / "out.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError) as info:
        read_trajectories(path)
    assert (info.value.record, info.value.field) == ("line 2", f"history[{k}].action")

    doc = json.loads(MINI_FILES[0].read_text())
    del doc["messages"][5]["role"]
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        read_trajectories(path)
    assert (info.value.record, info.value.field) == ("messages[5]", "role")

    doc = json.loads(SWE_FILES[0].read_text())
    del doc["trajectory"][3]["action"]
    path = tmp_path / "x.traj"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        read_trajectories(path)
    assert (info.value.record, info.value.field) == ("trajectory[3]", "action")


@requires("shared:trajectories/mini-swe-agent/index.json")
def test_unknown_format(tmp_path):
    path = tmp_path / "index.json"
    shutil.copyfile(TRAJ / "mini-swe-agent" / "index.json", path)
    with pytest.raises(InputError) as info:
        read_trajectories(path)
    assert info.value.path == str(path) and "unknown trajectory format" in info.value.reason
    with pytest.raises(InputError, match="not a run directory"):
        read_trajectories(tmp_path)


@requires("shared:trajectories/openhands/v0")
def test_openhands_v0_early_pair_history(tmp_path):
    row = json.loads(V0_FILES[1].read_text().splitlines()[0])
    hist = row["history"]
    paired = dict(row, history=[hist[i : i + 2] for i in range(0, len(hist), 2)])
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(paired) + "\n")
    (old,) = read_trajectories(path)
    assert counts(old) == expected_v0(row)


@pytest.mark.parametrize(
    ("action", "open_file", "expected"),
    [
        ("submit\n", None, {"type": "finish", "command": "submit"}),
        (
            "edit 3:4\n    return 2\nend_of_edit\n",
            "/r/a.py",
            {
                "type": "file_edit",
                "edit": "edit",
                "path": "/r/a.py",
                "new_text": "    return 2",
                "view_range": [3, 4],
            },
        ),
        (
            "str_replace_editor str_replace /testbed/mod.py   --old_str '    return 1' --new_str 'x = \"it'\"'\"'s\"'",
            None,
            {
                "type": "file_edit",
                "edit": "str_replace",
                "path": "/testbed/mod.py",
                "old_text": "    return 1",
                "new_text": 'x = "it\'s"',
            },
        ),
        (
            "str_replace_editor create /testbed/r.py --file_text 'print(1)\nprint(2)'",
            None,
            {
                "type": "file_edit",
                "edit": "create",
                "path": "/testbed/r.py",
                "file_text": "print(1)\nprint(2)",
            },
        ),
        (
            "str_replace_editor insert /testbed/r.py --insert_line 7 --new_str 'y = 2'",
            None,
            {
                "type": "file_edit",
                "edit": "insert",
                "path": "/testbed/r.py",
                "new_text": "y = 2",
                "insert_line": 7,
            },
        ),
        (
            "str_replace_editor view /testbed/r.py --view_range 10 20",
            None,
            {"type": "file_view", "path": "/testbed/r.py", "view_range": [10, 20]},
        ),
        (
            "insert 'a = 1' 5",
            "/r/b.py",
            {"type": "file_edit", "edit": "insert", "path": "/r/b.py", "new_text": "a = 1", "insert_line": 5},
        ),
        ("open src/x.py 120", "/r/y.py", {"type": "file_view", "path": "src/x.py"}),
        ("scroll_down", "/r/y.py", {"type": "file_view", "path": "/r/y.py"}),
        ("python -m pytest -x tests/", None, {"type": "command", "command": "python -m pytest -x tests/"}),
    ],
)
def test_swe_agent_parse_action(action, open_file, expected):
    from takeover.trajectories.swe_agent import parse_action

    assert parse_action(action, open_file) == expected


@requires("shared:trajectories/openhands/v1")
def test_openhands_v1_newer_tool_names(tmp_path):
    """Newer SDK builds call the tools terminal/file_editor (FORMATS.md); the events must read the same."""
    path = V1_FILES[1]
    text = path.read_text()
    renamed = (
        text.replace('"execute_bash"', '"terminal"')
        .replace('"ExecuteBashAction"', '"TerminalAction"')
        .replace('"ExecuteBashObservation"', '"TerminalObservation"')
        .replace('"str_replace_editor"', '"file_editor"')
    )
    assert renamed != text
    new = tmp_path / "new.jsonl"
    new.write_text(renamed)
    old_events = [
        [(e.kind, e.type, e.command, e.path, e.exit_code) for e in t.events] for t in read_trajectories(path)
    ]
    new_events = [
        [(e.kind, e.type, e.command, e.path, e.exit_code) for e in t.events] for t in read_trajectories(new)
    ]
    assert new_events == old_events
    assert any(k[1] == "file_edit" for run in new_events for k in run)
