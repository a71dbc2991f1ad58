"""Agent runs over a REAL mini-swe-agent loop, driven by the scripted model server on a small git repo.

Every test asserts exact values: event counts, the prompt-token sum recomputed from the requests the
server received (its usage = word counts), snapshot trees read back from the workspace, the final patch,
and one exit status per limit.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest
from conftest import CALC_BUGGY, CALC_ENV_SPEC, CALC_TEST, git, make_repo
from prerequisites import missing, requires

from takeover.agents import AgentChoice, ExitStatus, RunLimits, read_run
from takeover.agents.runs import run_predecessor, run_takeover
from takeover.errors import InputError
from takeover.llm import ModelSettings
from takeover.replay_settings import ReplaySettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.testing.scripted_server import ScriptedServer, count_words, prompt_words

BUGGY = CALC_BUGGY
FIXED = "def add(a, b):\n    return a + b\n"
TEST = CALC_TEST
ENV_SPEC = CALC_ENV_SPEC


def bash(command: str, thought: str = "THOUGHT: next step") -> dict:
    return {"content": f"{thought}\n\n```mswea_bash_command\n{command}\n```"}


FIX = "sed -i 's/a - b/a + b/' calc.py"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt"
SOLVE = [
    bash("cat calc.py"),
    {"content": "I think I should edit the file but I forgot the block."},
    bash(FIX),
    bash("python -m pytest -q test_calc.py 2>&1 | tail -3"),
    bash("git diff -- calc.py > patch.txt"),
    bash(SUBMIT),
]


def settings(srv: ScriptedServer, **kw) -> ModelSettings:
    return ModelSettings(model="scripted", base_url=srv.base_url, api_key_env=None, retries=0, **kw)


def events_of(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def tree_file(ws: Path, tree: str, path: str) -> str | None:
    proc = subprocess.run(
        ["git", "cat-file", "-p", f"{tree}:{path}"], cwd=ws, capture_output=True, text=True, check=False
    )
    return proc.stdout if proc.returncode == 0 else None


def test_predecessor_run_records_exact_events_tokens_snapshots_and_patch(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    out = tmp_path / "run"
    with ScriptedServer(SOLVE) as srv:
        record = run_predecessor(task, settings(srv), out, repo_source=RepoSource(mirror))
    ws = out / "workspace"

    assert record.exit_status is ExitStatus.submitted and record.finished
    acc = record.accounting
    # 6 calls: 5 executed actions (action + observation each) + 1 format-error turn (action + reminder).
    assert (acc.agent_events, acc.actions, acc.observations) == (12, 6, 6)
    assert (acc.llm_calls, acc.format_errors, acc.failed_calls) == (6, 1, 0)
    assert len(srv.requests) == 6
    assert acc.prompt_tokens == sum(prompt_words(r) for r in srv.requests)
    assert acc.completion_tokens == sum(count_words(e["content"]) for e in SOLVE)
    assert acc.usage == "reported" and acc.cached_tokens is None
    first = srv.requests[0]["messages"]
    assert acc.initial_prompt_tokens == prompt_words(srv.requests[0])
    assert acc.initial_prompt_chars == len(first[0]["content"]) + len(first[1]["content"])
    # With bubblewrap the workspace is mounted at /testbed: the prompt never names the host folder.
    root = "/testbed" if missing("bubblewrap") is None else str(ws.resolve())
    assert record.command_root == root and (record.path_note is None) == (root == "/testbed")
    assert task.problem_statement in first[1]["content"] and f"files in {root} (this is" in first[1]["content"]
    assert root == str(ws.resolve()) or str(ws.resolve()) not in first[1]["content"]
    assert acc.wall_seconds >= acc.model_seconds + acc.command_seconds - 1e-3

    calls = [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]
    assert [c["usage"]["prompt_tokens"] for c in calls] == [prompt_words(r) for r in srv.requests]
    assert [c["format_error"] for c in calls] == [False, True, False, False, False, False]

    events = events_of(out)
    assert [e["index"] for e in events] == list(range(12))
    assert [(e["kind"], e["type"]) for e in events[:4]] == [
        ("action", "command"),
        ("observation", "command"),
        ("action", "message"),
        ("observation", "message"),
    ]
    assert events[2]["format_error"] and events[3]["source"] == "user"
    assert events[4]["command"] == FIX and events[5]["cause"] == 4 and events[5]["exit_code"] == 0
    assert "1 passed" in events[7]["text"]
    assert events[10]["type"] == "finish" and events[11]["type"] == "finish"
    assert [e["llm_call"] for e in events if e["kind"] == "action"] == [0, 1, 2, 3, 4, 5]

    # A snapshot on every event; trees read back from the workspace's git objects.
    base_tree = git(ws, "rev-parse", f"{task.base_commit}^{{tree}}").strip()
    trees = [e["snapshot"] for e in events]
    assert trees[:4] == [base_tree] * 4  # cat and the format error change nothing
    assert trees[4] == trees[5] == trees[6] == trees[7] != base_tree
    assert tree_file(ws, trees[4], "calc.py") == FIXED and tree_file(ws, trees[4], "patch.txt") is None
    assert tree_file(ws, trees[8], "patch.txt").startswith("diff --git a/calc.py b/calc.py")
    assert trees[8] == trees[11] == record.final_snapshot
    refs = git(ws, "for-each-ref", "--format=%(objectname)", "refs/takeover/snapshots/").split()
    assert set(refs) == set(trees)

    patch = (out / "patch.diff").read_text()
    assert patch.startswith("diff --git a/calc.py b/calc.py") and "+    return a + b" in patch
    assert "diff --git a/patch.txt b/patch.txt" in patch  # untracked files are part of the final diff
    assert record.submission == git(ws, "diff", "--", "calc.py")

    run_json = json.loads((out / "run.json").read_text())
    assert run_json["model"]["api_key_env"] is None and run_json["versions"]["mini-swe-agent"].startswith(
        "2.4"
    )
    native = json.loads((out / "acme__calc-1.traj.json").read_text())
    assert (
        native["trajectory_format"] == "mini-swe-agent-1.1" and native["info"]["exit_status"] == "Submitted"
    )
    assert (out / "prompt.md").read_text() != ""
    assert not (out / "tmp").exists()

    traj = read_run(out)
    assert traj.format == "takeover" and traj.agent_events == 12 and traj.prompt_tokens == acc.prompt_tokens
    assert traj.final_patch == patch and traj.metadata["snapshot_repo"] == str(ws)

    # A re-run of a finished run directory returns the record without calling the model again.
    with ScriptedServer([]) as srv2:
        again = run_predecessor(task, settings(srv2), out, repo_source=RepoSource(mirror))
    assert again == record and srv2.requests == []


def test_tools_protocol_runs_native_tool_calls(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    script = [
        {"content": "Fix it.", "tool_calls": [{"name": "bash", "arguments": {"command": FIX}}]},
        {"content": "", "tool_calls": [{"name": "bash", "arguments": {"command": "git diff > patch.txt"}}]},
        {"content": "", "tool_calls": [{"name": "bash", "arguments": {"command": SUBMIT}}]},
    ]
    with ScriptedServer(script) as srv:
        record = run_predecessor(task, settings(srv), tmp_path / "run", repo_source=RepoSource(mirror),
                                 agent=AgentChoice(protocol="tools"))
    assert record.exit_status is ExitStatus.submitted
    assert srv.requests[0]["tools"][0]["function"]["name"] == "bash"
    assert (record.accounting.agent_events, record.accounting.llm_calls) == (6, 3)
    assert record.accounting.prompt_tokens == sum(prompt_words(r) for r in srv.requests)
    events = events_of(tmp_path / "run")
    assert events[0]["command"] == FIX and "```bash\n" + FIX in events[0]["text"]
    assert "+    return a + b" in record.submission


LIMIT_CASES = {
    "step_limit": (RunLimits(step_limit=2), [bash("ls")] * 3, {}, (2, 4)),
    # The first answer comes after the limit, whatever the load: the second call is never made.
    "time_limit": (RunLimits(wall_time_limit_seconds=3), [{**bash("ls"), "delay": 4}, bash("ls")], {}, (1, 2)),
    "token_limit": (RunLimits(prompt_token_limit=1), [bash("ls")] * 2, {}, (1, 2)),
    "cost_limit": (RunLimits(cost_limit=1e-9), [bash("ls")] * 2, {"model": "gpt-4o"}, (1, 2)),
    "format_errors": (RunLimits(max_consecutive_format_errors=3), [{"content": "no action"}] * 4, {}, (3, 6)),
    "model_error": (
        RunLimits(),
        [{"status": 500, "error": "boom"}] * 2,
        {"retries": 1, "backoff": 0.01},
        (0, 0),
    ),
    # The command ran (action + observation recorded), then the snapshot after it failed.
    "environment_error": (RunLimits(), [bash("rm -rf .git")], {}, (1, 2)),
}


@pytest.mark.parametrize("status", list(LIMIT_CASES))
def test_each_limit_stops_the_run_with_its_own_status(tmp_path, task_and_mirror, status):
    task, mirror = task_and_mirror
    limits, script, model_kw, (calls, n_events) = LIMIT_CASES[status]
    name = model_kw.pop("model", "scripted")
    with ScriptedServer(script) as srv:
        model = ModelSettings(
            model=name, base_url=srv.base_url, api_key_env=None, **{"retries": 0, **model_kw}
        )
        record = run_predecessor(task, model, tmp_path / "run", repo_source=RepoSource(mirror), limits=limits)
    assert record.exit_status == ExitStatus(status)
    assert record.finished
    assert record.accounting.llm_calls == calls
    assert record.accounting.agent_events == n_events == len(events_of(tmp_path / "run"))
    assert record.accounting.prompt_tokens == sum(prompt_words(r) for r in srv.requests[:calls])
    if status == "model_error":
        assert srv.served == 2 and record.accounting.failed_calls == 1 and "boom" in record.exit_detail
    if status == "cost_limit":
        assert record.accounting.cost > 0
    if status == "environment_error":
        assert "snapshot" in record.exit_detail


def test_missing_usage_is_estimated_with_a_local_tokenizer(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    with ScriptedServer([{**bash("ls"), "usage": None}] * 2) as srv:
        record = run_predecessor(
            task, settings(srv), tmp_path / "run", repo_source=RepoSource(mirror), limits=RunLimits(step_limit=2)
        )
    acc = record.accounting
    assert acc.usage == "estimated" and record.exit_status is ExitStatus.step_limit
    assert acc.estimated_calls == 2
    # cl100k_base counts 18 tokens in bash("ls")'s reply (tiktoken, counted once by hand)
    assert acc.completion_tokens == 2 * 18
    calls = [json.loads(line) for line in (tmp_path / "run" / "calls.jsonl").read_text().splitlines()]
    prompts = [c["usage"]["prompt_tokens"] for c in calls]
    assert all(c["usage"]["estimated"] for c in calls) and 0 < prompts[0] < prompts[1]  # the history grows
    assert acc.prompt_tokens == sum(prompts) > sum(prompt_words(r) for r in srv.requests)
    assert read_run(tmp_path / "run").usage_estimated


def _checkpoint(tmp_path: Path, task: SourceTask, patch: str, prompt: str) -> Path:
    from takeover._util.io import atomic_write_json, sha256_text
    from takeover.checkpoints import Checkpoint
    from takeover.points import HandoffPoint

    folder = tmp_path / "ckpt"
    (folder / "views").mkdir(parents=True)
    (folder / "checkpoint.patch").write_text(patch)
    (folder / "views" / "repo_only.md").write_text(prompt)
    atomic_write_json(
        folder / "checkpoint.json",
        Checkpoint(
            instance_id=task.instance_id,
            repo=task.repo,
            base_commit=task.base_commit,
            point=HandoffPoint(type="after_first_source_edit", event_index=4),
            files=["calc.py"],
            patch_sha256=sha256_text(patch),
            method="recorded_snapshot",
        ),
    )
    return folder


def test_takeover_run_starts_from_the_checkpoint_with_the_view_prompt(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    ws = tmp_path / "scratch"
    make_repo(ws, {"calc.py": BUGGY, "test_calc.py": TEST})
    (ws / "calc.py").write_text(FIXED)
    (ws / "notes.txt").write_text("half done\n")
    git(ws, "add", "-N", "notes.txt")
    patch = git(ws, "diff")
    prompt = "<takeover_instructions>continue</takeover_instructions>\n<original_task>fix add</original_task>"
    folder = _checkpoint(tmp_path, task, patch, prompt)
    with ScriptedServer(
        [bash("cat calc.py notes.txt"), bash("git diff -- calc.py > patch.txt"), bash(SUBMIT)]
    ) as srv:
        record = run_takeover(folder, "repo_only", settings(srv), tmp_path / "run", task=task, repo_source=RepoSource(mirror))
    assert record.kind == "takeover" and record.exit_status is ExitStatus.submitted
    assert record.origin.view == "repo_only" and record.origin.event_index == 4
    assert record.origin.point_type == "after_first_source_edit"
    assert prompt in srv.requests[0]["messages"][1]["content"]
    assert (tmp_path / "run" / "prompt.md").read_text() == prompt
    events = events_of(tmp_path / "run")
    assert "return a + b" in events[1]["text"] and "half done" in events[1]["text"]
    assert "+    return a + b" in record.submission
    assert "notes.txt" in (tmp_path / "run" / "patch.diff").read_text()

    (folder / "checkpoint.patch").write_text(patch + "\n")
    with pytest.raises(InputError, match="sha256"):
        run_takeover(folder, "repo_only", settings(srv), tmp_path / "run2", repo_source=RepoSource(mirror))
    (folder / "checkpoint.patch").write_text(patch)
    with pytest.raises(InputError, match="raw_trace"):
        run_takeover(folder, "raw_trace", settings(srv), tmp_path / "run3", repo_source=RepoSource(mirror))


@requires("bubblewrap")
def test_sandbox_blocks_writes_outside_the_workspace_and_the_network(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    outside = Path("/var/tmp") / f"takeover-escape-{uuid.uuid4().hex}"
    with ScriptedServer([]) as probe:
        connect = (
            f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {probe.port}), timeout=3)\""
        )
        script = [bash(f"echo x > {outside}"), bash(connect), bash("echo inside > inside.txt")]
        with ScriptedServer(script) as srv:
            record = run_predecessor(
                task, settings(srv), tmp_path / "run", repo_source=RepoSource(mirror), limits=RunLimits(step_limit=3)
            )
    try:
        assert not outside.exists()
    finally:
        outside.unlink(missing_ok=True)
    events = events_of(tmp_path / "run")
    # /var is not shown at all (the allow-list); a system folder would be read-only.
    assert events[1]["exit_code"] != 0 and ("No such file or directory" in events[1]["text"]
                                            or "Read-only file system" in events[1]["text"])
    assert events[3]["exit_code"] != 0 and (
        "refused" in events[3]["text"] or "unreachable" in events[3]["text"]
    )
    assert probe.requests == []  # the host's server never saw a connection from inside
    assert (
        events[5]["exit_code"] == 0
        and (tmp_path / "run" / "workspace" / "inside.txt").read_text() == "inside\n"
    )
    assert record.sandbox.startswith("sandbox: bubblewrap")


def test_cli_agent_run_writes_a_run_directory(tmp_path, task_and_mirror):
    from typer.testing import CliRunner

    from takeover.cli import app

    task, mirror = task_and_mirror
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    with ScriptedServer([bash(FIX), bash("ls")]) as srv:
        result = CliRunner().invoke(
            app,
            [
                "agent",
                "run",
                "--dataset",
                str(dataset),
                "--instance-id",
                task.instance_id,
                "--model",
                "scripted",
                "--base-url",
                srv.base_url,
                "--api-key-env",
                "",
                "--step-limit",
                "2",
                "--mirror",
                str(mirror),
                "--out-dir",
                str(tmp_path / "run"),
                "--offline",
            ],
        )
    assert result.exit_code == 0, result.output
    assert "step_limit" in result.output and "events 4" in result.output
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["limits"]["step_limit"] == 2 and record["exit_status"] == "step_limit"
    assert "+    return a + b" in (tmp_path / "run" / "patch.diff").read_text()


@pytest.mark.slow
def test_recorded_run_yields_points_and_checkpoints_without_replay_that_agree_with_a_replay(
    tmp_path, task_and_mirror
):
    """Our runner's snapshots give exact checkpoints (docs/protocol.md section 5.1, source (a)), and they
    match what a replay of the same recorded actions in a fresh checkout gives (source (c))."""
    from takeover.checkpoints import materialize_checkpoint
    from takeover.points import analyze_run, checkpoint_method
    from takeover.sources.repos import RepoSource

    task, mirror = task_and_mirror
    script = [
        bash("cat calc.py"),
        bash("sed -i 's/a - b/a * b/' calc.py"),  # event 2: first source edit (wrong)
        bash("python -m pytest -q test_calc.py 2>&1 | tail -3"),  # event 5: first verification result, failed
        bash("sed -i 's/a [*] b/a + b/' calc.py"),  # event 6: first edit after the failure
        bash("python -m pytest -q test_calc.py 2>&1 | tail -3"),
        bash("git diff -- calc.py > patch.txt"),
        bash(SUBMIT),
    ]
    with ScriptedServer(script) as srv:
        record = run_predecessor(task, settings(srv), tmp_path / "run", repo_source=RepoSource(mirror))
    assert record.exit_status is ExitStatus.submitted and record.accounting.agent_events == 14
    traj = read_run(tmp_path / "run")
    source = RepoSource(mirror, offline=True)

    recorded = analyze_run(traj, task, source, snapshot_repo=traj.metadata["snapshot_repo"], replay=ReplaySettings(use_environment=False))
    assert recorded.replay.verified and recorded.replay.method == "recorded_snapshot"
    assert recorded.replay.first_mismatch is None  # the last snapshot is exactly patch.diff
    got = {p.type: p.event_index for p in recorded.points}
    assert got == {
        "after_first_source_edit": 2,
        "after_first_verification_result": 5,
        "after_first_post_failure_edit": 6,
    }
    assert "a * b" in recorded.patches["after_first_source_edit"]
    assert "a + b" in recorded.patches["after_first_post_failure_edit"]

    # The same run without its snapshots: points come from a replay of the recorded commands.
    bare = traj.model_copy(update={"events": [e.model_copy(update={"snapshot": None}) for e in traj.events]})
    replayed = analyze_run(bare, task, source, work_dir=tmp_path, replay=ReplaySettings(use_environment=False))
    assert replayed.replay.verified and replayed.replay.method == "verified_replay"
    assert [p.model_dump() for p in replayed.points] == [p.model_dump() for p in recorded.points]
    assert replayed.patches == recorded.patches

    point = recorded.point("after_first_post_failure_edit")
    patch = recorded.patches[point.type]
    cp = materialize_checkpoint(
        task, traj, point, patch, tmp_path / "ckpt", checkpoint_method(recorded.replay), repo_source=source
    )
    assert cp.method == "recorded_snapshot" and cp.files == ["calc.py"]
    assert (tmp_path / "ckpt" / "workspace" / "calc.py").read_text() == FIXED


def test_an_interrupted_run_keeps_every_finished_step_and_a_rerun_starts_over(tmp_path, task_and_mirror):
    import _thread

    task, mirror = task_and_mirror

    def script(request, n):
        if n == 2:  # interrupt the run while it waits for the third answer
            _thread.interrupt_main()
            return {**bash("ls"), "delay": 0.3}
        return bash("echo step > step.txt") if n == 0 else bash("cat step.txt")

    out = tmp_path / "run"
    with ScriptedServer(script) as srv, pytest.raises(KeyboardInterrupt):
        run_predecessor(task, settings(srv), out, repo_source=RepoSource(mirror))
    record = json.loads((out / "run.json").read_text())
    assert record["finished"] is False and record["accounting"]["llm_calls"] == 2
    traj = read_run(out)
    assert traj.agent_events == 4 and traj.metadata["finished"] is False
    assert [c.usage.prompt_tokens for c in traj.llm_calls] == [prompt_words(r) for r in srv.requests[:2]]
    assert traj.events[1].snapshot == traj.events[3].snapshot  # cat changed nothing
    assert tree_file(out / "workspace", traj.events[1].snapshot, "step.txt") == "step\n"
    refs = git(out / "workspace", "for-each-ref", "--format=%(objectname)", "refs/takeover/snapshots/").split()
    assert traj.events[1].snapshot in refs  # kept by a ref as soon as it was taken

    with ScriptedServer([bash("ls")]) as srv2:
        again = run_predecessor(task, settings(srv2), out, repo_source=RepoSource(mirror), limits=RunLimits(step_limit=1))
    assert (
        again.finished and again.exit_status is ExitStatus.step_limit and again.accounting.agent_events == 2
    )


def test_reported_cached_tokens_are_summed_and_no_secret_reaches_the_agent_or_the_files(
    tmp_path, task_and_mirror, monkeypatch
):
    task, mirror = task_and_mirror
    secret = "sk-" + "x7" * 20
    monkeypatch.setenv("TAKEOVER_TEST_API_KEY", secret)
    usage = {"prompt_tokens": 100, "completion_tokens": 5, "cached_tokens": 40}
    script = [{**bash("env | grep -c TAKEOVER_TEST_API_KEY; echo leak sk-" + "x7" * 20), "usage": usage}] * 2
    with ScriptedServer(script) as srv:
        model = ModelSettings(
            model="scripted", base_url=srv.base_url, api_key_env="TAKEOVER_TEST_API_KEY", retries=0
        )
        record = run_predecessor(task, model, tmp_path / "run", repo_source=RepoSource(mirror), limits=RunLimits(step_limit=2))
    acc = record.accounting
    assert (acc.prompt_tokens, acc.completion_tokens, acc.cached_tokens) == (200, 10, 80)
    assert acc.initial_prompt_tokens == 100
    events = events_of(tmp_path / "run")
    assert events[1]["text"].startswith(
        "<returncode>0</returncode>\n<output>\n0\n"
    )  # the variable is not passed on
    for path in (tmp_path / "run").iterdir():
        if path.is_file():
            assert secret not in path.read_text(), path.name
    assert "[REDACTED]" in events[0]["text"]


def test_docker_backend_without_a_daemon_is_a_clear_error(tmp_path, task_and_mirror, monkeypatch):
    from takeover.errors import EnvironmentUnavailable

    # No daemon listens on this socket, whether or not this machine runs one.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    task, mirror = task_and_mirror
    with ScriptedServer([]) as srv, pytest.raises(EnvironmentUnavailable, match="Docker daemon"):
        run_predecessor(task, settings(srv), tmp_path / "run", repo_source=RepoSource(mirror),
                        agent=AgentChoice(command_backend="docker"))
    assert json.loads((tmp_path / "run" / "run.json").read_text())["finished"] is False
    with ScriptedServer([bash("ls")]) as srv:  # the failed attempt does not block a re-run
        record = run_predecessor(
            task, settings(srv), tmp_path / "run", repo_source=RepoSource(mirror), limits=RunLimits(step_limit=1)
        )
    assert record.finished and record.accounting.agent_events == 2


@pytest.mark.slow
def test_mini_swe_agent_starts_quietly_offline_and_writes_nothing_in_home(tmp_path):
    import os
    import sys
    import tempfile

    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MSWEA_", "LITELLM_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_CACHE_HOME=str(home / ".cache"))
    code = "import takeover.agents.runs, takeover.agents.mini_swe_agent._mswea as m, os; print(os.environ['MSWEA_GLOBAL_CONFIG_DIR'])"
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == os.path.join(tempfile.gettempdir(), f"takeover-mswea-{os.getuid()}")
    assert "cost map" not in proc.stderr and "mini-swe-agent" not in proc.stderr
    assert list(home.iterdir()) == []
