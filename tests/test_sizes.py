"""Sizes nobody could use: a command's long output stays clipped in the agent's native trajectory as it is
in the events (the observation the model saw), instead of being kept whole beside it."""

from __future__ import annotations

import json

from test_agents import bash, events_of, settings

from takeover.agents import run_predecessor
from takeover.agents.mini_swe_agent.loop import RAW_OUTPUT_MAX_CHARS
from takeover.sources.repos import RepoSource
from takeover.testing.scripted_server import ScriptedServer


def test_a_long_command_output_is_clipped_in_the_native_trajectory(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    script = [bash("seq 1 400000"), bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")]
    with ScriptedServer(script) as srv:
        record = run_predecessor(task, settings(srv), tmp_path / "run", repo_source=RepoSource(mirror))
    assert record.finished
    native = tmp_path / "run" / f"{task.instance_id}.traj.json"
    (observation,) = [m for m in json.loads(native.read_text())["messages"]
                      if str((m.get("extra") or {}).get("raw_output", "")).startswith("1\n2\n3\n")]
    raw = observation["extra"]["raw_output"]
    full = "".join(f"{n}\n" for n in range(1, 400001))
    assert raw.startswith(full[: RAW_OUTPUT_MAX_CHARS // 2]) and raw.endswith(full[-(RAW_OUTPUT_MAX_CHARS // 2):])
    assert f"[... {len(full) - RAW_OUTPUT_MAX_CHARS} characters of {len(full)} left out of the native trajectory" in raw
    assert native.stat().st_size < 100_000  # the whole output is 2.7 MB
    event = events_of(tmp_path / "run")[1]
    assert event["kind"] == "observation" and len(event["text"]) < 20_000
