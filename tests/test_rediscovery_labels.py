"""Rediscovery labels (docs/protocol.md section 9.1) on small crafted pairs in each recorded
shape: mini-swe-agent text commands, SWE-agent and OpenHands editor views, Claude Code Read/Grep/Bash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_claude_code import Log, tool, usage
from typer.testing import CliRunner

from takeover.cli import app
from takeover.errors import InputError
from takeover.limits import RunLimits
from takeover.rediscovery import label_successor
from takeover.trajectories import Event, LLMCall, Trajectory, Usage, read_trajectory
from takeover.trajectories.takeover_run import RunAccounting, RunRecord

ROOT = "/testbed"


def _run(actions: list[dict], fmt: str = "mini-swe-agent", outputs: dict[int, str] | None = None) -> Trajectory:
    """A run whose actions are ``actions`` (event fields), each answered by an observation; one call each."""
    events, calls = [], []
    for n, fields in enumerate(actions):
        a = len(events)
        events.append(Event(index=a, kind="action", source="agent", llm_call=n, text=fields.get("text", ""),
                            **{k: v for k, v in fields.items() if k != "text"}))
        events.append(Event(index=a + 1, kind="observation", source="environment", type=fields["type"], cause=a,
                            text=(outputs or {}).get(n, "ok"), exit_code=0))
        calls.append(LLMCall(index=n, usage=Usage(prompt_tokens=100 * (n + 1), completion_tokens=1)))
    return Trajectory(format=fmt, working_dir=ROOT, events=events, llm_calls=calls)


def cmd(command: str) -> dict:
    return {"type": "command", "command": command, "text": command}


def view(path: str, rng: list[int] | None = None) -> dict:
    return {"type": "file_view", "path": path, "view_range": rng}


def edit(path: str, old: str, new: str) -> dict:
    return {"type": "file_edit", "path": path, "edit": "str_replace", "old_text": old, "new_text": new}


def _labels(result) -> list[tuple[int, str, int | None]]:
    return [(a.event, a.label, a.repeats) for a in result.labels]


def test_mini_swe_agent_text_commands():
    pred = _run([
        cmd("cd /testbed && grep -rn 'def add' src"),  # 0
        cmd("sed -n '1,40p' src/calc.py"),  # 2
        cmd("sed -i 's/a - b/a + b/' src/calc.py"),  # 4
        cmd("python -m pytest tests/test_calc.py -q"),  # 6
        cmd("cat README.md"),  # 8
    ])
    succ = _run([
        cmd("grep -rn 'def add' src/"),  # 0: same search, but src/calc.py changed after it
        cmd("nl -ba src/calc.py | sed -n '10,20p'"),  # 2: calc.py changed by the edit: new content
        cmd("head -n 20 README.md"),  # 4: README unchanged, lines 1-20 seen
        cmd("timeout 60 pytest tests/test_calc.py"),  # 6: same command, same state
        cmd("sed -i 's/a - b/a + b/' src/calc.py"),  # 8: the checkpoint's own edit again
        cmd("python -m pytest tests/test_calc.py -q"),  # 10: state changed by event 8's edit
        cmd("cat docs/x.md && python -c 'print(1)'"),  # 12: a part no rule reads
        cmd("grep -rn 'def add' docs"),  # 14: never searched
    ])
    result = label_successor(pred, 8, succ)
    assert _labels(result) == [
        (0, "new", None), (2, "new", None), (4, "reread", 8), (6, "rerun", 6), (8, "redo_edit", 4),
        (10, "new", None), (12, "new", None), (14, "new", None),
    ]
    f = result.figures
    assert (f.actions, f.rediscovery_actions, f.rediscovery_events, f.agent_events) == (8, 3, 6, 16)
    assert f.by_label == {"reread": 1, "research": 0, "rerun": 1, "redo_edit": 1, "new": 5}
    assert f.rediscovery_prompt_tokens == 300 + 400 + 500 and f.prompt_tokens == sum(100 * n for n in range(1, 9))
    assert f.events_until_first_new == 0 and f.events_until_first_edit == 8
    assert result.unrecognised == {"python -c 'print(1)'": 1}


def test_a_search_repeats_only_over_unchanged_files():
    """A content search depends on the content of its scope; a listing or a name search on the files created or
    removed in it."""
    pred = _run([cmd("grep -rn foo src"), cmd("ls tests"), cmd("find . -name '*.py'")])
    succ = _run([cmd("rg -n foo src"), cmd("ls tests/"), cmd("find . -name '*.py'"),
                 cmd("sed -i 's/a/b/' src/old.py"),  # 6: an existing file changes, no name does
                 cmd("find . -name '*.py'"),  # 8: the same names
                 cmd("grep -rn foo src"),  # 10: src's content changed
                 cmd("echo x > src/new.py"),  # 12: a new file
                 cmd("find . -name '*.py'"),  # 14: the names may differ
                 cmd("ls tests"),  # 16: nothing created under tests
                 cmd("rm tests/a.py"), cmd("ls tests")])  # 18, 20: a removal
    assert _labels(label_successor(pred, 5, succ)) == [
        (0, "research", 0), (2, "research", 2), (4, "research", 4), (6, "new", None), (8, "research", 4),
        (10, "new", None), (12, "new", None), (14, "new", None), (16, "research", 2), (18, "new", None),
        (20, "new", None)]


def test_editor_views_swe_agent_and_openhands():
    pred = _run([view(f"{ROOT}/src/calc.py", [1, 50]), view(f"{ROOT}/src/calc.py", [40, 120]),
                 edit(f"{ROOT}/src/util.py", "x = 1", "x = 2"), view(f"{ROOT}/src"),
                 view(f"{ROOT}/src/util.py")], fmt="openhands-v1",
                outputs={3: "Here's the files and directories up to 2 levels deep in /testbed/src"})
    succ = _run([view(f"{ROOT}/src/calc.py", [30, 100]),  # covered by the two ranges together
                 view(f"{ROOT}/src/calc.py"),  # the whole file was never seen
                 view(f"{ROOT}/src/util.py", [1, 5]),  # seen whole after the edit
                 view(f"{ROOT}/src"),  # a folder listing again
                 edit(f"{ROOT}/src/util.py", "x = 1", "x = 2"),  # the checkpoint's edit again
                 edit(f"{ROOT}/src/util.py", "x = 2", "x = 2")],  # leaves the file as it is
                fmt="openhands-v1", outputs={3: "Here's the files and directories up to 2 levels deep in /testbed/src"})
    result = label_successor(pred, 9, succ)
    assert _labels(result) == [(0, "reread", 2), (2, "new", None), (4, "reread", 8), (6, "research", 6),
                               (8, "redo_edit", 4), (10, "redo_edit", None)]
    assert [a.kind for a in result.labels] == ["read", "read", "read", "search", "edit", "edit"]


def test_swe_agent_search_tools_and_open():
    pred = _run([cmd('find_file "calc.py"'), cmd('search_dir "def add" src'), view("src/calc.py")], fmt="swe-agent")
    succ = _run([cmd('search_dir "def add" src'), cmd('find_file "calc.py"'), view("src/calc.py"),
                 cmd('search_file "def sub" src/calc.py')], fmt="swe-agent")
    assert _labels(label_successor(pred, 5, succ)) == [
        (0, "research", 2), (2, "research", 0), (4, "reread", 4), (6, "new", None)]


def _claude(path: Path, steps: list[tuple[str, dict, str]]) -> Trajectory:
    log = Log()
    log.user("Fix sub() in calc.py.")
    for n, (name, tool_input, result) in enumerate(steps, start=1):
        log.assistant(f"msg_{n:02d}", [tool(f"t{n}", name, **tool_input)], usage(5, 100 * n, 10, 5))
        log.result(f"t{n}", result)
    return read_trajectory(log.write(path))


def test_claude_code_read_grep_bash(tmp_path):
    from test_claude_code import ROOT as CC_ROOT

    pred = _claude(tmp_path / "a.jsonl", [
        ("Read", {"file_path": f"{CC_ROOT}/calc.py"}, "1→def add"),
        ("Grep", {"pattern": "def sub", "path": CC_ROOT}, "calc.py"),
        ("Bash", {"command": "python -m pytest -q"}, "1 failed, 1 passed"),
        ("Edit", {"file_path": f"{CC_ROOT}/calc.py", "old_string": "a + b  # sub", "new_string": "a - b  # sub"},
         "updated"),
    ])
    succ = _claude(tmp_path / "b.jsonl", [
        ("Grep", {"pattern": "def sub", "path": CC_ROOT}, "calc.py"),  # calc.py changed since the search
        ("Read", {"file_path": f"{CC_ROOT}/calc.py", "offset": 1, "limit": 5}, "1→def add"),  # new content
        ("Bash", {"command": "python -m pytest -q"}, "2 passed"),  # the state changed since the run
        ("Glob", {"pattern": "**/*.md"}, "README.md"),
        ("Read", {"file_path": f"{CC_ROOT}/test_calc.py"}, "def test"),
    ])
    pred_cut = len(pred.events) - 1
    labels = [(a.label, a.kind) for a in label_successor(pred, pred_cut, succ).labels]
    assert labels == [("new", "search"), ("new", "read"), ("new", "verification"), ("new", "search"),
                      ("new", "read")]
    # Cut before the edit: the successor's search, read and run repeat the predecessor's.
    before_edit = next(e.index for e in pred.events if e.type == "file_edit") - 1
    labels = [(a.label, a.repeats) for a in label_successor(pred, before_edit, succ).labels]
    reads = [e.index for e in pred.events if e.kind == "action" and e.type == "file_view"]
    runs = [e.index for e in pred.events if e.kind == "action" and e.type == "command"]
    assert labels == [("research", reads[1]), ("reread", reads[0]), ("rerun", runs[0]), ("new", None),
                      ("new", None)]


def test_a_git_view_is_a_read_of_the_whole_state():
    pred = _run([cmd("git diff"), cmd("git status")])
    succ = _run([cmd("git --no-pager diff"), cmd("git diff src/calc.py")])
    assert _labels(label_successor(pred, 3, succ)) == [(0, "reread", 0), (2, "new", None)]


def test_a_cut_outside_the_run_is_refused():
    pred = _run([cmd("ls")])
    with pytest.raises(InputError, match="event 5 is not an event of the run"):
        label_successor(pred, 5, pred)


def _run_folder(folder: Path, run: Trajectory) -> Path:
    """``run`` written as a run folder of takeover's own format."""
    folder.mkdir()
    (folder / "events.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in run.events))
    (folder / "calls.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in run.llm_calls))
    record = RunRecord(run_id="r", kind="predecessor", instance_id="acme__calc-1", repo="acme/calc", base_commit="abc",
                       workspace=ROOT, model={"model": "m"}, limits=RunLimits(),
                       accounting=RunAccounting(agent_events=len(run.events), llm_calls=len(run.llm_calls)),
                       exit_status="submitted", started_at="t", finished=True)
    (folder / "run.json").write_text(record.model_dump_json())
    return folder


def test_cli_json_record(tmp_path):
    pred = _run_folder(tmp_path / "p", _run([cmd("cat a.py"), cmd("pytest -q"), cmd("ls")]))
    succ = _run_folder(tmp_path / "s", _run([cmd("cat a.py"), cmd("echo hi > a.py"), cmd("pytest -q")]))
    result = CliRunner().invoke(app, ["rediscovery", str(pred), str(succ), "--event", "3", "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert record["cut_event"] == 3
    assert [(x["event"], x["label"], x["repeats"], x["reason"]) for x in record["labels"]] == [
        (0, "reread", 0, None), (2, "new", None, "edit"), (4, "new", None, "verification")]
    assert record["unrecognised"] == {}
    assert record["figures"]["rediscovery_actions"] == 1 and record["figures"]["events_until_first_edit"] == 2
    result = CliRunner().invoke(app, ["rediscovery", str(pred), str(succ), "--point-type", "after_first_source_edit"])
    needs_task = "error: --point-type: finding a point needs the task: give --dataset (or --points-file)"
    assert (result.exit_code, result.stderr) == (2, needs_task + "\n")
    result = CliRunner().invoke(app, ["rediscovery", str(pred), str(succ)])
    assert (result.exit_code, result.stderr) == (
        2, "error: --point-type: give --point-type TYPE or --event N (one of them)\n")
    readable = CliRunner().invoke(app, ["rediscovery", str(pred), str(succ), "--event", "3"])
    assert "1 of 3 successor actions rediscover" in readable.output


def test_per_event_states_decide_contents_when_both_runs_have_them():
    """With states, a script that rewrote a file it does not name changes that file's content; a successor's
    edit that leaves the state as the checkpoint has it is redo_edit."""
    pred = _run([cmd("cat a.py"), cmd("python fix.py"), cmd("cat b.py")])
    succ = _run([cmd("cat a.py"), cmd("cat b.py"), edit("b.py", "x", "y")])
    pred_states = [{}, {}, {"a.py": "diff-a"}, {"a.py": "diff-a"}, {"a.py": "diff-a"}, {"a.py": "diff-a"}]
    succ_states = [{"a.py": "diff-a"}] * 6
    assert _labels(label_successor(pred, 5, succ)) == [(0, "reread", 0), (2, "reread", 4), (4, "new", None)]
    with_states = label_successor(pred, 5, succ, predecessor_states=pred_states, successor_states=succ_states)
    assert _labels(with_states) == [(0, "new", None), (2, "reread", 4), (4, "redo_edit", None)]
