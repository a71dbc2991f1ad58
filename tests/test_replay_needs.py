"""Replay knows the recording tool only through what its reader declares (docs/protocol.md section 5.6): a
reader's ``ReplayNeeds`` (editor flavor, edits inside a shown file window, the tool's own file commands),
looked up by the run's format; replay never tests a format's name. A reader registered here with SWE-agent's
needs gets SWE-agent's replay; the same run under a reader that declares nothing gets the plain rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_repo

from takeover.replay_settings import ReplaySettings
from takeover.repository_states.replay import replay_trajectory
from takeover.trajectories import (
    Reader,
    ReplayNeeds,
    read_trajectories,
    register_reader,
    replay_needs,
    unregister_reader,
)

SWE_AGENT = ReplayNeeds(editor_flavor="swe-agent", edit_window=True, tool_commands=True)


def swe_agent_run(path: Path, steps: list[tuple[str, str, str]]) -> Path:
    """A SWE-agent 1.x ``.traj`` of ``(action, observation, open file)`` steps that submits nothing."""
    trajectory = [{"action": action, "observation": observation, "response": action, "thought": "",
                   "execution_time": 0.1, "state": {"open_file": open_file, "working_dir": "/testbed"},
                   "query": [], "extra_info": {}} for action, observation, open_file in steps]
    doc = {"environment": "main", "trajectory": trajectory,
           "history": [{"role": "system", "content": "sys", "agent": "main", "message_type": "system_prompt"}],
           "info": {"exit_status": "submitted", "submission": "", "swe_agent_version": "1.0.1"},
           "replay_config": json.dumps({"problem_statement": {"id": "acme__calc-1"}})}
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def toy_readers():
    """Readers that read nothing (detection never picks them) and only declare what replay needs."""
    names = []

    def register(name: str, **declared) -> str:
        register_reader(Reader(name=name, detect=lambda source: False, read=lambda source: [], **declared))
        names.append(name)
        return name

    yield register
    for name in names:
        unregister_reader(name)


def test_the_builtin_readers_declare_their_tools_needs():
    assert replay_needs("swe-agent") == SWE_AGENT
    assert {fmt: replay_needs(fmt).editor_flavor for fmt in (
        "openhands-v0", "openhands-v0-messages", "openhands-v1", "openhands-v1-dir", "claude-code", "codex-cli",
        "mini-swe-agent", "takeover")} == {
        "openhands-v0": "openhands", "openhands-v0-messages": "openhands", "openhands-v1": "openhands-sdk",
        "openhands-v1-dir": "openhands-sdk", "claude-code": "claude-code", "codex-cli": "generic",
        "mini-swe-agent": "generic", "takeover": "generic"}
    assert not any(replay_needs(f).edit_window or replay_needs(f).tool_commands for f in ("openhands-v1", "takeover"))
    assert replay_needs("a format no reader has") == ReplayNeeds()


def test_replay_follows_the_editor_flavor_its_reader_declares(tmp_path, toy_readers):
    # SWE-agent's str_replace_editor refuses to create a file that exists; the plain editor overwrites it.
    steps = [("str_replace_editor create /testbed/a.py --file_text 'x = 9'",
              "File already exists at: /testbed/a.py. Cannot overwrite files using command `create`.", "n/a")]
    (recorded,) = read_trajectories(swe_agent_run(tmp_path / "run.traj", steps))
    for fmt, expected in (
        (toy_readers("toy-anthropic", replay=ReplayNeeds(editor_flavor="swe-agent")), "x = 1\n"),
        (toy_readers("toy-plain"), "x = 9"),
    ):
        ws, sha = make_repo(tmp_path / fmt, {"a.py": "x = 1\n"})
        replay_trajectory(recorded.model_copy(update={"format": fmt}), ws, sha, replay=ReplaySettings(use_sandbox=False, timeout=30))
        assert (ws / "a.py").read_text() == expected, fmt


def test_a_reader_that_declares_swe_agents_window_gets_its_windowed_edit(tmp_path, toy_readers):
    base = {"w.py": "a = 0\nb = 0\nc = 0\nb = 0\n"}
    steps = [
        ('open "w.py" 3', "[File: w.py (4 lines total)]\n3:c = 0\n4:b = 0", "/testbed/w.py"),
        ("edit 'b = 0' 'b = 1'", "Text replaced. Please review the changes and make sure they are correct",
         "/testbed/w.py"),
    ]
    (recorded,) = read_trajectories(swe_agent_run(tmp_path / "run.traj", steps))
    fmt = toy_readers("toy-windowed", replay=SWE_AGENT)
    ws, sha = make_repo(tmp_path / "ws", base)
    result = replay_trajectory(recorded.model_copy(update={"format": fmt}), ws, sha, replay=ReplaySettings(use_sandbox=False, timeout=30))
    assert [s.action for s in result.steps[::2]] == ["noop", "edit"]
    assert result.steps[2].detail == "edit w.py (lines 3-4 shown)"
    assert (ws / "w.py").read_text() == "a = 0\nb = 0\nc = 0\nb = 1\n"  # the last b, inside the window
