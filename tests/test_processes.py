"""No child survives its command: the process runner and each of its users (environment build, replayed
command, agent command; the grading's test run is in test_grading.py) leave no process behind after a
time-out. Each command starts a ``sleep`` with a unique duration, looked for in /proc afterwards."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from prerequisites import requires

from takeover._util.processes import run_process
from takeover.replay_settings import ReplaySettings


def unique_sleep() -> str:
    """A sleep duration no other process on this machine uses (seconds, so the sleep outlives any test)."""
    return f"{uuid.uuid4().int % 10**6 + 10**6}.{os.getpid()}"


def processes_with(token: str) -> list[int]:
    """Pids whose command line holds ``token`` (this test process excepted)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:  # the process exited while we looked
                continue
    return found


def test_time_out_kills_the_whole_process_group(tmp_path):
    token = unique_sleep()
    started = tmp_path / "started"
    done = run_process(["bash", "-c", f"sleep {token} & sleep {token} & touch {started}; wait"], timeout=2)
    assert started.exists()  # the sleeps really ran
    assert done.killed == "timeout" and done.timed_out and done.exit_code is None
    assert 2 <= done.seconds < 60
    assert processes_with(token) == []


def test_children_left_behind_by_a_finished_command_are_killed(tmp_path):
    token = unique_sleep()
    done = run_process(["bash", "-c", f"sleep {token} >/dev/null 2>&1 & echo started"], timeout=60)
    assert done.exit_code == 0 and done.killed is None and done.output == "started\n"
    assert processes_with(token) == []


def test_output_goes_to_the_log_and_is_cut_at_the_limit(tmp_path):
    log = tmp_path / "logs" / "out.txt"
    log.parent.mkdir()
    log.write_text("before\n")
    done = run_process(["bash", "-c", "echo out; echo err >&2; exit 3"], timeout=60, log_path=log)
    assert done.exit_code == 3 and done.output == "" and done.log_path == log
    assert log.read_text() == "before\nout\nerr\n"
    cut = run_process(["bash", "-c", "printf 'abcdef'"], timeout=60, output_limit=4)
    assert cut.output == "abcd"


def test_memory_limit_kills_the_group():
    eat = "import time; b = [bytearray(8 << 20) for _ in range(100)]; [x.__setitem__(slice(None), b'x' * len(x)) for x in b]; time.sleep(60)"
    done = run_process(["python3", "-c", eat], timeout=60, memory_mb=100)
    assert done.killed == "memory"
    assert done.seconds < 60


def test_a_command_that_cannot_start_raises(tmp_path):
    with pytest.raises(OSError):
        run_process(["/nonexistent/program"], timeout=10)
    with pytest.raises(OSError):
        run_process(["true"], timeout=10, cwd=tmp_path / "missing")


@requires("uv")
def test_environment_build_step_leaves_no_child(tmp_path, monkeypatch):
    from takeover.environments import prepare_environment
    from takeover.errors import EnvironmentUnavailable
    from takeover.sources.tasks import SourceTask

    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    token = unique_sleep()
    started = tmp_path / "started"
    spec = {"python": None, "pre_install": [f"sleep {token} & sleep {token} & touch {started}; wait"], "seed": False}
    task = SourceTask(instance_id="me__lib-1", repo="me/lib", base_commit="", problem_statement="",
                      takeover_env_spec=spec)
    (tmp_path / "ws").mkdir()
    with pytest.raises(EnvironmentUnavailable, match="timed out after 2 s"):
        prepare_environment(task, tmp_path / "ws", timeout=2)
    assert started.exists()
    assert processes_with(token) == []


def test_replayed_command_leaves_no_child(tmp_path):
    from conftest import make_repo

    from takeover.repository_states.replay import replay_trajectory
    from takeover.trajectories.events import Event, Trajectory

    ws, sha = make_repo(tmp_path / "ws", {"a.py": "x = 1\n"})
    token = unique_sleep()
    command = f"sleep {token} & sleep {token} & touch started; wait"
    events = [Event(index=0, kind="action", source="agent", type="command", command=command),
              Event(index=1, kind="observation", source="environment", type="command", text="", exit_code=0, cause=0)]
    result = replay_trajectory(Trajectory(format="mini-swe-agent", events=events, final_patch=""), ws, sha, replay=ReplaySettings(timeout=2))
    assert result.steps[0].killed == "timeout"
    assert (ws / "started").exists()
    assert processes_with(token) == []


def test_agent_command_leaves_no_child(tmp_path):
    from takeover.agents.mini_swe_agent.environments import SandboxedLocalEnvironment

    env = SandboxedLocalEnvironment(cwd=str(tmp_path), workspace=str(tmp_path), env={}, timeout=30)
    token = unique_sleep()
    out = env.execute({"command": f"sleep {token} & sleep {token} & touch started; wait"}, timeout=2)
    assert out["returncode"] == -1 and "timed out after 2 seconds" in out["exception_info"]
    assert (tmp_path / "started").exists()
    assert processes_with(token) == []
    left = env.execute({"command": f"sleep {token} >/dev/null 2>&1 & echo 'one\r\ntwo'"})
    assert left == {"output": "one\ntwo\n", "returncode": 0, "exception_info": ""}
    assert processes_with(token) == []
