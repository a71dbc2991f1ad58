"""A session killed while its log was written is the handoff use case: its complete lines are read and
handed over, and the cut last line is named (Claude Code sessions, Codex CLI rollouts, OpenHands 1.x
conversation folders). A line damaged anywhere else, or a cut line in a format that is not a session log,
is still one error naming the file and the line."""

from __future__ import annotations

import json

from conftest import make_repo
from test_claude_code import session_file
from test_codex_cli import rollout_file
from user_commands import files_under, takeover

from takeover.trajectories import CUT_LAST_LINE, read_trajectories


def _cut_last_line(path, keep: float = 0.5):
    """``path`` with its last line cut in the middle (no newline after it), as a killed writer leaves it;
    and the same file with that line dropped (what the complete lines say)."""
    lines = path.read_bytes().splitlines(keepends=True)
    cut = path.with_name("cut-" + path.name)
    cut.write_bytes(b"".join(lines[:-1]) + lines[-1][: int(len(lines[-1]) * keep)])
    complete = path.with_name("complete-" + path.name)
    complete.write_bytes(b"".join(lines[:-1]))
    return cut, complete, len(lines)


def _events(path):
    (traj,) = read_trajectories(path)
    return [e.model_dump() for e in traj.events], [c.model_dump() for c in traj.llm_calls], traj


def test_a_session_log_cut_mid_write_is_read_up_to_its_last_complete_line(tmp_path):
    for full in (session_file(tmp_path), rollout_file(tmp_path)):
        cut, complete, n = _cut_last_line(full)
        before = files_under(tmp_path)
        events, calls, traj = _events(cut)
        assert (events, calls) == _events(complete)[:2]
        assert traj.metadata[CUT_LAST_LINE].startswith(f"{cut}: line {n}, the last line, was cut off mid-write (")
        assert traj.metadata[CUT_LAST_LINE].endswith(f"the {n - 1} complete lines before it are read")

        shown = takeover("inspect", cut, "--json")
        assert shown.exit_code == 0, shown.stderr
        assert json.loads(shown.stdout)["agent_events"] == len(events)
        assert shown.stderr.splitlines() == [f"note: {traj.metadata[CUT_LAST_LINE]}"]
        assert files_under(tmp_path) == before


def test_handoff_of_a_cut_session_says_what_was_left_out(tmp_path):
    cut, _, n = _cut_last_line(session_file(tmp_path))
    repo, _ = make_repo(tmp_path / "calc", {"calc.py": "def sub(a, b):\n    return a + b\n"})
    before = files_under(tmp_path)
    done = takeover("handoff", cut, "--repo", repo)
    assert done.exit_code == 0, done.stderr
    assert f"- Note: {cut}: line {n}, the last line, was cut off mid-write" in done.stdout
    assert "<previous_agent" in done.stdout
    assert files_under(tmp_path) == before


def test_a_damaged_line_before_the_last_is_still_one_error(tmp_path):
    path = session_file(tmp_path)
    lines = path.read_text().splitlines(keepends=True)
    lines[4] = lines[4][: len(lines[4]) // 2] + "\n"
    path.write_text("".join(lines))
    before = files_under(tmp_path)
    done = takeover("inspect", path)
    assert done.exit_code == 2
    assert done.errors == [f"error: {path}: line 5: not valid JSON: " + done.errors[0].split("not valid JSON: ")[1]]
    assert done.errors[0].endswith("(truncated or malformed line)")
    assert files_under(tmp_path) == before


def test_a_cut_last_line_of_a_file_of_finished_runs_is_an_error(tmp_path):
    # OpenHands 0.x output.jsonl holds one finished run per line: a cut line is a lost run, never a handoff.
    row = {"instance_id": "acme__calc-1", "instruction": "fix", "history": [
        {"id": 0, "source": "user", "message": "fix", "action": "message", "args": {"content": "fix"}}]}
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(row) + "\n" + json.dumps(row)[:30])
    done = takeover("inspect", path)
    assert done.exit_code == 2
    assert done.errors[0].startswith(f"error: {path}: line 2: not valid JSON: ")


def test_an_openhands_conversation_cut_in_its_last_event_file_is_read_up_to_it(tmp_path):
    conv = tmp_path / "conversation"
    (conv / "events").mkdir(parents=True)
    (conv / "base_state.json").write_text(json.dumps({"id": "c0ffee", "agent": {"llm": {"model": "m"}},
                                                      "workspace": {"working_dir": "/workspace"}}))
    events = [
        {"kind": "MessageEvent", "id": "e0", "source": "user",
         "llm_message": {"role": "user", "content": [{"type": "text", "text": "count to 2"}]}},
        {"kind": "ActionEvent", "id": "e1", "source": "agent", "tool_name": "execute_bash", "tool_call_id": "c1",
         "llm_response_id": "r1", "thought": [], "action": {"kind": "ExecuteBashAction", "command": "echo 1"}},
        {"kind": "ObservationEvent", "id": "e2", "source": "environment", "tool_name": "execute_bash",
         "tool_call_id": "c1", "action_id": "e1",
         "observation": {"kind": "ExecuteBashObservation", "output": "1", "exit_code": 0}},
        {"kind": "ActionEvent", "id": "e3", "source": "agent", "tool_name": "execute_bash", "tool_call_id": "c2",
         "llm_response_id": "r2", "thought": [], "action": {"kind": "ExecuteBashAction", "command": "echo 2"}},
    ]
    for i, ev in enumerate(events):
        (conv / "events" / f"event-{i:05d}-{ev['id']}.json").write_text(json.dumps(ev))
    (full,) = read_trajectories(conv)
    last = conv / "events" / "event-00003-e3.json"
    last.write_text(last.read_text()[:50])
    (traj,) = read_trajectories(conv)
    assert [e.model_dump() for e in traj.events] == [e.model_dump() for e in full.events][:-1]
    assert traj.metadata[CUT_LAST_LINE].startswith(f"{last}, the last event file, was cut off mid-write (")
    assert traj.metadata[CUT_LAST_LINE].endswith("the 3 complete event files before it are read")
    shown = takeover("inspect", conv)
    assert shown.exit_code == 0 and shown.stderr.splitlines() == [f"note: {traj.metadata[CUT_LAST_LINE]}"]
