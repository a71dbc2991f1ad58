"""Replay of imported runs on small git repositories: exact editor actions, sandboxed shell commands with
time and memory limits, and acceptance only when the run's own final patch is reproduced."""

from __future__ import annotations

import time

import pytest
from conftest import git, make_repo
from prerequisites import requires

from takeover._util import sandbox
from takeover._util.patches import first_difference
from takeover.points import detect_points
from takeover.replay_settings import ReplaySettings
from takeover.repository_states.replay import replay_trajectory
from takeover.trajectories.events import Event, Trajectory

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"
needs_sandbox = requires("bubblewrap")


def traj(steps, *, final_patch=None, working_dir="/testbed", fmt="mini-swe-agent") -> Trajectory:
    """``steps``: list of (command or Event-field dict, observation text, exit code)."""
    events = []
    for action, output, code in steps:
        i = len(events)
        fields = {"type": "command", "command": action} if isinstance(action, str) else action
        events.append(Event(index=i, kind="action", source="agent", **fields))
        events.append(Event(index=i + 1, kind="observation", source="environment", type=events[-1].type,
                            text=output, exit_code=code, cause=i))
    return Trajectory(format=fmt, events=events, final_patch=final_patch, working_dir=working_dir)


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "ws", {"pkg/mod.py": "def f():\n    return 1\n", "README": "r\n", ".gitignore": "*.log\n"})


def expected_patch(tmp_path, files: dict[str, str]) -> str:
    """The patch a real run would submit: make the change in a scratch clone and diff (git add -A)."""
    other, _ = make_repo(tmp_path / "expected", {"pkg/mod.py": "def f():\n    return 1\n", "README": "r\n", ".gitignore": "*.log\n"})
    for rel, text in files.items():
        (other / rel).parent.mkdir(parents=True, exist_ok=True)
        (other / rel).write_text(text)
    git(other, "add", "-A")
    return git(other, "diff", "--cached")


def test_mini_swe_agent_style_run_replays_and_verifies(repo, tmp_path):
    ws, sha = repo
    final = expected_patch(tmp_path, {"pkg/mod.py": "def f():\n    return 2\n", "reproduce.py": "from pkg.mod import f\nprint(f())\n"})
    t = traj([
        ("ls -R", "", 0),
        ("cat <<'EOF' > /testbed/reproduce.py\nfrom pkg.mod import f\nprint(f())\nEOF", "", 0),
        ("python3 reproduce.py", "1", 0),
        ("sed -i 's/return 1/return 2/' pkg/mod.py", "", 0),
        ("cd /testbed && python3 reproduce.py > run.log; cat run.log", "2", 0),  # run.log is ignored
        (SUBMIT, final, None),
    ], final_patch=final)
    result = replay_trajectory(t, ws, sha, replay=ReplaySettings(timeout=30))
    assert result.verdict.verified, result.verdict
    assert result.verdict.method == "verified_replay" and result.verdict.first_mismatch is None
    assert len(result.trees) == len(result.diffs) == len(t.events)
    assert result.diffs[1] == {}
    assert list(result.diffs[3]) == ["reproduce.py"]
    assert sorted(result.diffs[7]) == ["pkg/mod.py", "reproduce.py"]
    assert result.steps[8].output.strip() == "2"  # the command really ran in the workspace
    assert result.trees[7] == result.trees[8]  # an observation does not change the state
    points, _ = detect_points(t.events, result.diffs)
    assert points[0].type == "after_first_source_edit" and points[0].event_index == 6
    assert points[0].non_source_artifacts == ["reproduce.py"]
    # The submission staged files in the workspace's index; the snapshots did not care.
    assert git(ws, "diff", "--cached", "--name-only").split() == ["pkg/mod.py", "reproduce.py"]


def test_rewrite_mode_without_sandbox(repo, tmp_path):
    ws, sha = repo
    final = expected_patch(tmp_path, {"pkg/mod.py": "def f():\n    return 3\n"})
    t = traj([("sed -i 's/return 1/return 3/' /testbed/pkg/mod.py && cat /testbed/pkg/mod.py", "", 0)], final_patch=final)
    result = replay_trajectory(t, ws, sha, replay=ReplaySettings(use_sandbox=False, timeout=30))
    assert result.verdict.verified and result.verdict.mode == "rewrite"
    assert "unconfined" in result.verdict.sandbox
    assert "return 3" in result.steps[0].output


def test_unreproducible_run_is_unreplayable_with_the_first_differing_file(repo, tmp_path):
    ws, sha = repo
    # The recorded run claims a change to README and pkg/mod.py, but its commands only change pkg/mod.py
    # differently (e.g. the run depended on network access or on state we do not have).
    final = expected_patch(tmp_path, {"README": "changed\n", "pkg/mod.py": "def f():\n    return 9\n"})
    t = traj([("sed -i 's/return 1/return 2/' pkg/mod.py", "", 0), (SUBMIT, final, None)], final_patch=final)
    result = replay_trajectory(t, ws, sha, replay=ReplaySettings(timeout=30))
    assert not result.verdict.verified
    assert result.verdict.method == "replay"
    assert result.verdict.first_mismatch == "README"
    assert "first at README" in result.verdict.reason


def test_run_without_final_patch_is_unreplayable(repo):
    ws, sha = repo
    result = replay_trajectory(traj([("true", "", 0)]), ws, sha, replay=ReplaySettings(timeout=30))
    assert not result.verdict.verified and "no final patch" in result.verdict.reason


def test_a_hanging_command_is_killed_and_the_run_is_unreplayable(repo):
    ws, sha = repo
    t = traj([("sleep 600 & sleep 600", "", 0), ("touch after.py", "", 0)], final_patch="")
    start = time.monotonic()
    result = replay_trajectory(t, ws, sha, replay=ReplaySettings(timeout=1))
    assert time.monotonic() - start < 20
    assert result.steps[0].killed == "timeout"
    assert not result.verdict.verified
    assert "killed at the 1 s time limit" in result.verdict.reason
    assert not (ws / "after.py").exists()  # replay stopped at the failure


def test_a_command_that_timed_out_in_the_recorded_run_may_time_out_again(repo, tmp_path):
    ws, sha = repo
    final = expected_patch(tmp_path, {"pkg/mod.py": "def f():\n    return 2\n"})
    t = traj([
        ("sleep 600", "The last command <command>sleep 600</command> timed out and has been killed.", None),
        ("sed -i 's/return 1/return 2/' pkg/mod.py", "", 0),
    ], final_patch=final)
    result = replay_trajectory(t, ws, sha, replay=ReplaySettings(timeout=1))
    assert result.steps[0].killed == "timeout"
    assert result.verdict.verified, result.verdict


def test_a_command_eating_memory_is_killed(repo):
    ws, sha = repo
    eat = "python3 -c \"import time; b = [bytearray(8 << 20) for _ in range(200)]; [x.__setitem__(slice(None), b'x' * len(x)) for x in b]; time.sleep(30)\""
    t = traj([(eat, "", 0)], final_patch="")
    start = time.monotonic()
    result = replay_trajectory(t, ws, sha, replay=ReplaySettings(timeout=60, memory_mb=200))
    assert time.monotonic() - start < 30
    assert result.steps[0].killed == "memory"
    assert "200 MiB memory limit" in result.verdict.reason and not result.verdict.verified


@needs_sandbox
def test_writes_outside_the_workspace_fail_in_the_sandbox(repo, tmp_path):
    ws, sha = repo
    outside = tmp_path / "outside"
    outside.mkdir()
    home_target = "/root/takeover-replay-escape.txt"
    t = traj([
        (f"echo pwned > {outside}/x.txt; echo pwned > {home_target}; echo pwned > /tmp/scratch.txt; cat /tmp/scratch.txt", "", 0),
        ("cat /tmp/scratch.txt", "pwned", 0),  # /tmp persists between the commands of one replay
    ], final_patch="")
    result = replay_trajectory(t, ws, sha, replay=ReplaySettings(timeout=30))
    assert not (outside / "x.txt").exists()
    assert not __import__("os").path.exists(home_target)
    # Folders outside the task are not shown at all (docs/protocol.md section 8.6). A run without a task
    # environment is shown the host interpreter's installation read-only (here under /root, pyenv's); the
    # folders above it are the sandbox's own empty root, so a write there never reaches this machine.
    assert f"{outside}/x.txt: No such file or directory" in result.steps[0].output
    assert result.steps[2].output.strip() == "pwned"
    assert result.verdict.verified  # nothing changed in the workspace, and the final patch is empty


@needs_sandbox
def test_the_workspace_is_mounted_at_the_recorded_root(repo):
    ws, sha = repo
    t = traj([("pwd; ls /testbed", "", 0)], final_patch="")
    result = replay_trajectory(t, ws, sha, replay=ReplaySettings(timeout=30))
    assert result.verdict.mode == "bind"
    assert result.steps[0].output.splitlines()[0] == "/testbed"
    assert "pkg" in result.steps[0].output


def test_can_bind_at():
    assert sandbox.can_mount_at("/testbed") is True
    assert sandbox.can_mount_at("/workspace/django__django__3.0") is True
    assert sandbox.can_mount_at("/usr/src/app") is False  # inside an existing top-level folder
    assert sandbox.can_mount_at("/tmp/x") is True
    assert sandbox.can_mount_at(None) is False and sandbox.can_mount_at("relative") is False


def test_editor_actions_are_applied_exactly(repo, tmp_path):
    ws, sha = repo
    final = expected_patch(tmp_path, {
        "pkg/mod.py": "import os\ndef f():\n    return 42\n",
        "pkg/new.py": "X = 1\n",
    })
    edit = {"type": "file_edit"}
    t = traj([
        ({**edit, "path": "/testbed/pkg/new.py", "edit": "create", "file_text": "X = 0\n"}, "File created", None),
        ({**edit, "path": "/testbed/pkg/new.py", "edit": "str_replace", "old_text": "X = 0", "new_text": "X = 1"}, "", None),
        ({**edit, "path": "/testbed/pkg/mod.py", "edit": "str_replace", "old_text": "e", "new_text": "E"}, "", None),
        ({**edit, "path": "/testbed/pkg/mod.py", "edit": "str_replace", "old_text": "return 1", "new_text": "return 42"}, "", None),
        ({**edit, "path": "/testbed/pkg/mod.py", "edit": "insert", "insert_line": 0, "new_text": "import sys"}, "", None),
        ({**edit, "path": "/testbed/pkg/mod.py", "edit": "undo_edit"}, "", None),
        ({**edit, "path": "pkg/mod.py", "edit": "insert", "insert_line": 0, "new_text": "import os"}, "", None),
        ({**edit, "path": "/etc/passwd", "edit": "create", "file_text": "x"}, "", None),  # outside: skipped
    ], final_patch=final, fmt="openhands-v0")
    result = replay_trajectory(t, ws, sha, replay=ReplaySettings(timeout=30))
    assert result.verdict.verified, (result.verdict, result.final_patch)
    assert result.steps[4].detail == "str_replace: old_str occurs 2 times: no change"  # as the editor refuses
    assert result.steps[14].action == "skipped"


def test_swe_agent_create_and_line_edits(repo, tmp_path):
    ws, sha = repo
    final = expected_patch(tmp_path, {"pkg/mod.py": "def f():\n    return 5\n", "reproduce.py": "print('x')\n"})
    t = traj([
        ({"type": "file_edit", "path": "reproduce.py", "edit": "create", "file_text": ""}, "[File: reproduce.py]", None),
        ({"type": "file_edit", "path": "/testbed/reproduce.py", "edit": "edit", "new_text": "print('x')",
          "view_range": [1, 1]}, "File updated.", None),
        ({"type": "file_edit", "path": "/testbed/pkg/mod.py", "edit": "edit", "new_text": "    return (",
          "view_range": [2, 2]}, "Your proposed edit has introduced new syntax error(s).", None),
        ({"type": "file_edit", "path": "/testbed/pkg/mod.py", "edit": "edit", "new_text": "    return 5",
          "view_range": [2, 2]}, "File updated.", None),
        ("open pkg/mod.py", "", None),
    ], final_patch=final, fmt="swe-agent")
    result = replay_trajectory(t, ws, sha, replay=ReplaySettings(timeout=30))
    assert result.verdict.verified, (result.verdict, result.final_patch)
    assert first_difference(result.final_patch, final) is None
