"""Agent runs with the docker command backend on a real daemon, driven by the scripted model server: the
agent works on the image's own repository at /testbed (git works there as in the image), the submission
is the run's patch, run.json names the image, nothing is built on the host, and no container is left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import docker
import pytest
from conftest import git
from docker_images import TINY_GOLD
from prerequisites import requires

from takeover.agents import AgentChoice, ExitStatus, RunLimits
from takeover.agents.runs import run_predecessor, run_takeover
from takeover.errors import EnvironmentUnavailable
from takeover.llm import ModelSettings
from takeover.testing.scripted_server import ScriptedServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800), requires("docker daemon", "debootstrap")]

FIX = "sed -i 's/a - b/a + b/' src/tinyadd/__init__.py"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt"


def bash(command: str) -> dict:
    return {"content": f"THOUGHT: next step\n\n```mswea_bash_command\n{command}\n```"}


def settings(srv: ScriptedServer) -> ModelSettings:
    return ModelSettings(model="scripted", base_url=srv.base_url, api_key_env=None, retries=0)


def observations(run_dir: Path) -> list[str]:
    """The output of each command the agent ran (mini-swe-agent's ``<output>`` section of the observation)."""
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    texts = [e["text"] for e in events if e["kind"] == "observation"]
    return [t.split("<output>", 1)[-1].rsplit("</output>", 1)[0].strip() for t in texts]


def without_index_lines(patch: str) -> str:
    """``patch`` without its ``index <blob>..<blob>`` lines (git abbreviates the ids in ``git diff``)."""
    return "".join(line for line in patch.splitlines(keepends=True) if not line.startswith("index "))


def containers_of(folder: Path) -> list:
    return [c for c in docker.from_env().containers.list(all=True, ignore_removed=True)
            if c.labels.get("org.takeover.out-dir", "").startswith(str(folder))]


def test_git_works_at_testbed_and_the_submission_is_the_patch(tiny_docker_task, tmp_path):
    task, source, stand_in = tiny_docker_task.task, tiny_docker_task.source, tiny_docker_task.stand_in
    script = [bash("git status --porcelain; echo status=$?"), bash("git diff; echo diff=$?"),
              bash("git log -1 --format=%s; echo log=$?"), bash(FIX), bash("python -m pytest -q tests 2>&1 | tail -1"),
              # the standard submission, written outside the repository so that it is not part of the patch
              bash("git add -A && git diff --cached > /tmp/patch.txt"),
              bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat /tmp/patch.txt")]
    with ScriptedServer(script) as srv:
        record = run_predecessor(task, settings(srv), tmp_path / "run", repo_source=source,
                                 agent=AgentChoice(command_backend="docker"), limits=RunLimits(step_limit=10))
    seen = observations(tmp_path / "run")
    assert seen[0] == "status=0" and seen[1] == "diff=0"  # a clean repository, as in the image
    assert seen[2].split() == ["SWE-bench", "log=0"]  # the image's setup commit
    assert "1 passed" in seen[4] and "fatal" not in "".join(seen)
    assert record.exit_status is ExitStatus.submitted and record.finished
    patch = (tmp_path / "run" / "patch.diff").read_text()
    assert without_index_lines(record.submission) == without_index_lines(patch)
    assert "+    return a + b" in patch and patch.count("diff --git") == 1
    assert record.environment["kind"] == "docker image" and record.environment["image"] == stand_in.image
    assert record.environment["image_id"] == stand_in.image_id and "shared_venv" not in record.environment
    assert record.command_backend == "docker" and record.command_root == "/testbed"
    ws = tmp_path / "run" / "workspace"
    assert git(ws, "rev-parse", "HEAD^").strip() == task.base_commit  # the image's repository, not a mirror checkout
    assert not (ws / ".git" / "objects" / "info" / "alternates").exists()
    time.sleep(1)  # the container's removal (docker stop, then --rm) runs in the background
    assert containers_of(tmp_path) == []


def test_a_takeover_run_starts_from_the_checkpoint_in_the_image(tiny_docker_task, tmp_path):
    from test_agents import _checkpoint

    task, source = tiny_docker_task.task, tiny_docker_task.source
    half = TINY_GOLD  # the predecessor's edit, at the handoff
    folder = _checkpoint(tmp_path, task, half, "<takeover_instructions>continue</takeover_instructions>")
    script = [bash("git diff --stat; cat src/tinyadd/__init__.py"), bash("python -m pytest -q tests 2>&1 | tail -1"),
              bash("git diff > /tmp/patch.txt"), bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat /tmp/patch.txt")]
    with ScriptedServer(script) as srv:
        record = run_takeover(folder, "repo_only", settings(srv), tmp_path / "run", task=task, repo_source=source,
                              agent=AgentChoice(command_backend="docker"))
    seen = observations(tmp_path / "run")
    assert "1 file changed" in seen[0] and "return a + b" in seen[0] and "1 passed" in seen[1]
    assert record.exit_status is ExitStatus.submitted and record.kind == "takeover"
    assert without_index_lines((tmp_path / "run" / "patch.diff").read_text()) == without_index_lines(record.submission)
    assert without_index_lines(record.submission) == without_index_lines(half)


def test_a_missing_image_is_one_line_naming_it(tiny_docker_task, tmp_path):
    task = tiny_docker_task.task.model_copy(update={"instance_id": "pallets__flask-90002"})
    with ScriptedServer([]) as srv, pytest.raises(EnvironmentUnavailable) as err:
        run_predecessor(task, settings(srv), tmp_path / "run", repo_source=tiny_docker_task.source,
                        agent=AgentChoice(command_backend="docker"))
    message = str(err.value)
    assert "\n" not in message and "swebench/sweb.eval.x86_64.pallets_1776_flask-90002:latest" in message
    assert "cannot be pulled" in message and "docker pull" in message and srv.served == 0
    assert json.loads((tmp_path / "run" / "run.json").read_text())["finished"] is False


def test_json_output_of_a_docker_run_is_one_record(tiny_docker_task, tmp_path):
    task, source = tiny_docker_task.task, tiny_docker_task.source
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    with ScriptedServer([bash("git status --porcelain"), bash(FIX), bash("git diff > patch.txt"), bash(SUBMIT)]) as srv:
        done = subprocess.run(
            [sys.executable, "-m", "takeover", "agent", "run", "--dataset", str(dataset), "--instance-id",
             task.instance_id, "--model", "scripted", "--base-url", srv.base_url, "--api-key-env", "", "--mirror",
             str(source.mirror), "--offline", "--out-dir", str(tmp_path / "run"), "--command-backend", "docker",
             "--json"], capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout[:2000]
    assert json.loads(lines[0])["exit_status"] == "submitted"


def test_a_killed_run_leaves_no_container_after_the_rerun(tiny_docker_task, tmp_path):
    task, source = tiny_docker_task.task, tiny_docker_task.source
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    out = tmp_path / "run"
    with ScriptedServer([bash("sleep 300")] + [bash("true")] * 3) as srv:
        proc = subprocess.Popen(
            [sys.executable, "-m", "takeover", "agent", "run", "--dataset", str(dataset), "--instance-id",
             task.instance_id, "--model", "scripted", "--base-url", srv.base_url, "--api-key-env", "", "--mirror",
             str(source.mirror), "--offline", "--out-dir", str(out), "--command-backend", "docker", "--step-limit",
             "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            for _ in range(600):  # until the agent's first command runs in its container
                if srv.served >= 1 and containers_of(out):
                    break
                time.sleep(0.5)
            assert containers_of(out), "the run never started its container"
            time.sleep(2)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        assert [c.status for c in containers_of(out)] == ["running"]  # orphaned: its sleep would run on
        record = run_predecessor(task, settings(srv), out, repo_source=source, agent=AgentChoice(command_backend="docker"),
                                 limits=RunLimits(step_limit=2))
    assert record.finished
    time.sleep(1)
    assert containers_of(out) == []


def test_a_container_removed_during_the_run_ends_it_as_environment_error(tiny_docker_task, tmp_path):
    """A container that vanishes while the run uses it (someone's docker rm, the daemon stopped) is the
    infrastructure's failure, never a command output the agent reads and works around."""
    task, source = tiny_docker_task.task, tiny_docker_task.source
    out = tmp_path / "run"
    removed = []

    def remove_when_started():
        for _ in range(600):
            # the agent's container, once its first command (sleep 60) runs (the copy of /testbed went through
            # a short-lived container of its own)
            running = [c for c in containers_of(out) if c.labels.get("org.takeover.purpose") == "agent run"]
            if running and srv.served >= 1:
                time.sleep(2)
                running[0].remove(force=True)
                removed.append(running[0].id)
                return
            time.sleep(0.5)

    remover = threading.Thread(target=remove_when_started)
    with ScriptedServer([bash("sleep 60"), bash("true"), bash("true")]) as srv:
        remover.start()
        try:
            record = run_predecessor(task, settings(srv), out, repo_source=source,
                                     agent=AgentChoice(command_backend="docker"), limits=RunLimits(step_limit=3))
        finally:
            remover.join(timeout=600)
    assert removed, "the run never started its container"
    assert record.exit_status is ExitStatus.environment_error and srv.served == 1
    assert "is gone or stopped" in (record.exit_detail or "")
