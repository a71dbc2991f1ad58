"""Sizes nobody could use: a command's long output stays clipped in the agent's native trajectory as it is
in the events (the observation the model saw), instead of being kept whole beside it; a handoff prompt
larger than the model's context (as its endpoint reports it) is warned about, naming the way out."""

from __future__ import annotations

import json

from conftest import make_repo
from test_agents import bash, events_of, settings
from test_claude_code import Log, tool, usage
from user_commands import files_under, takeover

from takeover.agents.mini_swe_agent.loop import RAW_OUTPUT_MAX_CHARS
from takeover.agents.runs import run_predecessor
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


def test_a_view_larger_than_the_models_context_is_warned_with_the_way_out(tmp_path):
    log = Log()
    log.user("Count the lines.")
    for k in range(1, 5):
        log.assistant(f"msg_{k}", [tool(f"t{k}", "Bash", command=f"seq {k}000 {k}999")], usage(1, 2, 3, 85))
        log.result(f"t{k}", "".join(f"{n}\n" for n in range(k * 1000, k * 1000 + 1000)))
    session = log.write(tmp_path / "session.jsonl")
    repo, _ = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    before = files_under(tmp_path)
    with ScriptedServer([], context_tokens=6000) as srv:
        model = ["--model", "scripted-model", "--base-url", srv.base_url, "--api-key-env", "", "--view", "raw_trace"]
        big = takeover("handoff", session, "--repo", repo, *model)
        small = takeover("handoff", session, "--repo", repo, *model, "--raw-trace-max-tokens", "3000")
        assert srv.requests == []  # raw_trace writes no notes: only the endpoint's model list was read
    assert big.exit_code == 0, big.stderr
    (warning,) = [line for line in big.stderr.splitlines() if line.startswith("warning: ")]
    assert warning.startswith("warning: the raw_trace prompt is ")
    assert "more than the model's context of 6,000 tokens (as its endpoint reports it); --raw-trace-max-tokens N " \
           "keeps the newest events that fit (the handoff event always)" in warning
    assert f"- Note: {warning.removeprefix('warning: ')}" in big.stdout
    assert small.exit_code == 0 and "warning:" not in small.stderr
    assert files_under(tmp_path) == before
