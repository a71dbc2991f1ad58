"""Handoff points as Harbor tasks, and Harbor's trials read back into the report.

- ``takeover export harbor`` writes one task per (checkpoint, view): the view's takeover prompt, the
  raw_trace task's predecessor trajectory (every step copied context), the environment on the instance's
  image, the SWE-bench verifier; Harbor's own task loader accepts them (the harbor venv).
- The verifier's verdict script grades a SWE-bench test log by swebench's rules (no Harbor needed).
- ``harbor run`` of the exported tasks on the tiny flask stand-in image, with the plain-docker environment
  this machine needs (no Docker Compose): the oracle's gold patch is solved, nop's unchanged checkpoint is
  not, and a scripted agent (``tests/harbor_agents.py``) that fixes the bug is; ``takeover report`` on the
  jobs folder gives each trial's verdict (its reward) and the events and tokens of its ATIF trajectory,
  the seeded copied context left out.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _mini_swe_agent import write_1x
from docker_images import TINY_GOLD, tiny_task
from prerequisites import ROOT, harbor_venv, requires
from typer.testing import CliRunner
from user_commands import takeover

from takeover._util import harness_version
from takeover.checkpoints import materialize_checkpoint
from takeover.cli import app
from takeover.points import cut_at_event
from takeover.replay_settings import ReplaySettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.trajectories import read_trajectory
from takeover.views import load_inputs, write_views

#: The predecessor looks at the code, leaves a note in it (event 3: the cut) and runs the tests.
STEPS = [("cat src/tinyadd/__init__.py", "def add(a, b):\n    return a - b\n", 0),
         ("echo '# add() looks wrong' >> src/tinyadd/__init__.py", "", 0),
         ("python -m pytest tests", "1 passed", 0)]
ENVIRONMENT = "takeover.harbor.docker_cli_environment:DockerCliEnvironment"
NOTE = "+# add() looks wrong\n"
#: Harbor's venv, found when the module is collected (before a fixture points TAKEOVER_CACHE elsewhere).
HARBOR = harbor_venv()


def _checkpoint(root: Path, task: SourceTask, source: RepoSource) -> tuple[Path, Path]:
    """The cut after event 3 of a predecessor run of ``task``, with its repo_only and raw_trace views; and the
    dataset file holding ``task``."""
    dataset = root / "tasks.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    clone = root / "predecessor"
    subprocess.run(["git", "clone", "-q", str(source.mirror / "pallets__flask.git"), str(clone)], check=True)
    subprocess.run(["git", "checkout", "-q", task.base_commit], cwd=clone, check=True)
    for command, _, _ in STEPS:
        subprocess.run(["bash", "-c", command], cwd=clone, check=False, capture_output=True)
    final = subprocess.run(["git", "diff"], cwd=clone, capture_output=True, text=True, check=True).stdout
    run = write_1x(root / "run.json", task.instance_id, STEPS, final)
    cut = cut_at_event(read_trajectory(run), task, 3, source, replay=ReplaySettings(use_environment=False, timeout=30))
    assert cut.point is not None, cut.reason
    folder = root / "cps" / "event-3"
    materialize_checkpoint(task, read_trajectory(run), cut.point, cut.patch, folder, "verified_replay",
                           repo_source=source, workspace=False)
    write_views(load_inputs(run, None, dataset, checkpoint_dir=folder), ["repo_only", "raw_trace"], folder / "views")
    return root / "cps", dataset


def _export(*args: str) -> list[Path]:
    result = CliRunner().invoke(app, ["export", "harbor", *args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, (result.output, result.exception)
    return [Path(line) for line in result.stdout.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The two tasks (repo_only, raw_trace) of one checkpoint of the tiny flask task, exported by the CLI once
    for the tests that only read them."""
    tmp_path = tmp_path_factory.mktemp("harbor-export")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
        return _exported(tmp_path)


def _exported(tmp_path: Path):
    task, source = tiny_task(tmp_path / "repo")
    cps, dataset = _checkpoint(tmp_path, task, source)
    folders = _export(str(cps), "--dataset", str(dataset), "--mirror", str(source.mirror), "--offline",
                      "--out-dir", str(tmp_path / "tasks"), "--view", "repo_only", "--view", "raw_trace",
                      "--image", "example/tiny:1", "--grading-timeout", "600", "--agent-timeout", "900")
    return task, cps / "event-3", folders


def test_export_writes_one_task_per_view_with_prompt_trace_environment_and_verifier(exported, tmp_path):
    task, checkpoint, folders = exported
    assert [f.name for f in folders] == [f"{task.instance_id}__event-3__repo_only", f"{task.instance_id}__event-3__raw_trace"]
    repo_only, raw_trace = folders
    for folder, view in ((repo_only, "repo_only"), (raw_trace, "raw_trace")):
        assert (folder / "instruction.md").read_text() == (checkpoint / "views" / f"{view}.md").read_text()
        assert (folder / "environment" / "Dockerfile").read_text().startswith("FROM example/tiny:1\n")
        assert (folder / "environment" / "checkpoint.patch").read_text().endswith(NOTE)
        assert "timeout_sec = 600.0" in (folder / "task.toml").read_text()
        assert "timeout_sec = 900.0" in (folder / "task.toml").read_text()
        config = json.loads((folder / "tests" / "config.json").read_text())
        assert (config["FAIL_TO_PASS"], config["PASS_TO_PASS"], config["log_parser"]) == (
            task.FAIL_TO_PASS, task.PASS_TO_PASS, "parse_log_pytest")
        assert "git apply -v -" in (folder / "tests" / "eval.sh").read_text()
    assert not (repo_only / "trajectory.json").exists()
    trace = json.loads((raw_trace / "trajectory.json").read_text())
    assert trace["steps"] and all(s["is_copied_context"] for s in trace["steps"])
    assert trace["extra"]["cut_at_event"] == 3 and "final_patch" not in trace["extra"]
    # the predecessor's actions up to the cut, none after it
    assert sum(len(s.get("tool_calls") or []) or (s["source"] == "agent") for s in trace["steps"]) == 2
    again = _export(str(checkpoint), "--dataset", str(checkpoint.parents[1] / "tasks.jsonl"), "--view", "raw_trace",
                    "--no-seed-trajectory", "--offline", "--mirror", str(checkpoint.parents[1] / "repo" / "mirror"),
                    "--out-dir", str(tmp_path / "unseeded"))
    assert [p.name for p in again] == [raw_trace.name] and not (again[0] / "trajectory.json").exists()
    assert (again[0] / "instruction.md").read_text() == (checkpoint / "views" / "raw_trace.md").read_text()
    # a rerun replaces the earlier export of the same task whole; --seed-trajectory (the default) ships the trace
    seeded = _export(str(checkpoint), "--dataset", str(checkpoint.parents[1] / "tasks.jsonl"), "--view", "raw_trace",
                     "--seed-trajectory", "--offline", "--mirror", str(checkpoint.parents[1] / "repo" / "mirror"),
                     "--out-dir", str(tmp_path / "unseeded"))
    assert seeded == again
    assert json.loads((seeded[0] / "trajectory.json").read_text()) == trace


def test_verdict_script_grades_a_swebench_log_by_swebench_rules(exported, tmp_path):
    _, _, folders = exported
    tests = folders[0] / "tests"
    start, end = "+ : '>>>>> Start Test Output'\n", "+ : '>>>>> End Test Output'\n"

    def verdict(log: str, rules: str | None = None) -> tuple[str, dict]:
        out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
        out.mkdir()
        (out / "log").write_text(log)
        config = json.loads((tests / "config.json").read_text())
        config["grading_rules"] = rules or config["grading_rules"]
        (out / "config.json").write_text(json.dumps(config))
        subprocess.run([sys.executable, str(tests / "swebench_verdict.py"), str(out / "config.json"), str(out / "log"),
                        str(out)], check=True, capture_output=True)
        return (out / "reward.txt").read_text().strip(), json.loads((out / "report.json").read_text())

    # The exporting swebench's rules are the task's.
    assert json.loads((tests / "config.json").read_text())["grading_rules"] == harness_version.installed_rules()

    passing = "PASSED tests/test_tinyadd.py::test_mul\nPASSED tests/test_tinyadd.py::test_add\n"
    reward, report = verdict(start + passing + end)
    assert reward == "1" and report["pallets__flask-90001"]["tests_status"]["FAIL_TO_PASS"]["success"] == [
        "tests/test_tinyadd.py::test_add"]
    assert verdict(start + "PASSED tests/test_tinyadd.py::test_mul\nFAILED tests/test_tinyadd.py::test_add\n" + end)[0] == "0"
    assert verdict(start + "PASSED tests/test_tinyadd.py::test_add\n" + end)[0] == "0"  # PASS_TO_PASS missing
    assert verdict(">>>>> Patch Apply Failed\n" + start + passing + end)[0] == "0"
    assert verdict(passing)[0] == "0"  # no markers: the eval script did not run
    # The rules that changed in swebench 5.0 (docs/protocol.md section 6): a skipped PASS_TO_PASS test is in
    # neither list under 4.1 and passes under 5.0; a skipped FAIL_TO_PASS test resolves under 4.1, fails under 5.0.
    skipped_p2p = start + "SKIPPED tests/test_tinyadd.py::test_mul\nPASSED tests/test_tinyadd.py::test_add\n" + end
    reward, report = verdict(skipped_p2p, "swebench-4.1")
    assert reward == "1" and report["pallets__flask-90001"]["tests_status"]["PASS_TO_PASS"] == {
        "success": [], "failure": []} and report["pallets__flask-90001"]["grading_rules"] == "swebench-4.1"
    reward, report = verdict(skipped_p2p, "swebench-5.0")
    assert reward == "1" and report["pallets__flask-90001"]["tests_status"]["PASS_TO_PASS"] == {
        "success": ["tests/test_tinyadd.py::test_mul"], "failure": []}
    skipped_f2p = start + "PASSED tests/test_tinyadd.py::test_mul\nSKIPPED tests/test_tinyadd.py::test_add\n" + end
    assert (verdict(skipped_f2p, "swebench-4.1")[0], verdict(skipped_f2p, "swebench-5.0")[0]) == ("1", "0")
    # 5.0 rejects a log whose test exit code is non-zero while no test failed; 4.1 reads no exit code.
    contradicted = start + passing + end + ">>>>> Test Exit Code: 1\n"
    assert (verdict(contradicted, "swebench-4.1")[0], verdict(contradicted, "swebench-5.0")[0]) == ("1", "0")


_LOADER = """
import json, sys
from pathlib import Path
from harbor.models.task.task import Task
from harbor.models.trajectories import Trajectory
out = {}
for d in map(Path, sys.argv[1:]):
    task = Task(d)
    trace = Path(d, "trajectory.json")
    steps = Trajectory.model_validate_json(trace.read_text()).steps if trace.exists() else []
    out[d.name] = {"valid": Task.is_valid_dir(d), "metadata": task.config.metadata, "instruction": task.instruction,
                   "workdir": task.config.environment.workdir, "copied": [s.is_copied_context for s in steps]}
print(json.dumps(out))
"""


@requires("harbor")
def test_exported_tasks_load_with_harbors_own_task_loader(exported):
    task, checkpoint, folders = exported
    proc = subprocess.run([str(HARBOR / "bin" / "python"), "-c", _LOADER, *map(str, folders)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = json.loads(proc.stdout)
    for folder, view in zip(folders, ("repo_only", "raw_trace"), strict=True):
        entry = loaded[folder.name]
        assert entry["valid"] and entry["workdir"] == "/testbed"
        assert entry["instruction"] == (checkpoint / "views" / f"{view}.md").read_text()
        meta = entry["metadata"]
        assert (meta["instance_id"], meta["point_type"], meta["event_index"], meta["view"]) == (
            task.instance_id, "event", 3, view)
        assert meta["point_key"] == f"{task.instance_id}@event:3" and meta["predecessor_trajectory"].endswith("run.json")
    assert loaded[folders[0].name]["copied"] == []
    assert loaded[folders[1].name]["copied"] and all(loaded[folders[1].name]["copied"])


def _harbor_run(tasks: Path, agent: str, jobs: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")]),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.run([str(HARBOR / "bin" / "harbor"), "run", "-p", str(tasks), "-a", agent, "-e", ENVIRONMENT,
                           "-o", str(jobs), "--job-name", agent.split(":")[-1], "-n", "2", "-q"],
                          capture_output=True, text=True, timeout=900, check=False, env=env)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])


def _own_events(trajectory: Path) -> int:
    """The successor's events by the ATIF file itself: tool calls and observation results of the steps that
    are not copied context (each agent step calls one tool here)."""
    steps = json.loads(trajectory.read_text())["steps"]
    return sum(len(s.get("tool_calls") or []) + len((s.get("observation") or {}).get("results") or [])
               for s in steps if not s.get("is_copied_context"))


@requires("docker daemon", "debootstrap", "harbor")
@pytest.mark.timeout(1800)
def test_harbor_run_on_the_stand_in_is_graded_and_read_back_by_takeover_report(tiny_docker_task, tmp_path):
    from takeover.report import build_report
    from takeover.report.drilldown import point_sections
    from takeover.report.rows import collect_rows, read_units

    with pytest.MonkeyPatch.context() as patch:  # the checkpoint's replay keeps to its own cache
        patch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
        cps, dataset = _checkpoint(tmp_path, tiny_docker_task.task, tiny_docker_task.source)
    folders = _export(str(cps), "--dataset", str(dataset), "--mirror", str(tiny_docker_task.source.mirror),
                      "--offline", "--out-dir", str(tmp_path / "tasks"))
    jobs = tmp_path / "jobs"
    for agent in ("oracle", "nop", "harbor_agents:ScriptedSuccessor"):
        _harbor_run(folders[0].parent, agent, jobs)
    trials = sorted(p.parent for p in jobs.glob("*/*/result.json"))
    assert len(trials) == 6
    report = build_report(jobs, plots=False, html=True)
    rows = {(r["successor"], r["view"]): r for r in report.rows}
    assert sorted(rows) == sorted((s, v) for s in ("oracle (harbor)", "nop (harbor)", "takeover-scripted (harbor)")
                                  for v in ("repo_only", "raw_trace"))
    expected = {"oracle (harbor)": True, "nop (harbor)": False, "takeover-scripted (harbor)": True}
    for trial in trials:
        result = json.loads((trial / "result.json").read_text())
        view = result["task_name"].rsplit("__", 1)[1]
        row = rows[(f"{result['agent_info']['name']} (harbor)", view)]
        reward = float((trial / "verifier" / "reward.txt").read_text())
        assert result["verifier_result"]["rewards"]["reward"] == reward
        assert row["status"] == "done" and row["resolved"] == (reward == 1.0) == expected[row["successor"]], row
        verdict = json.loads((trial / "verifier" / "report.json").read_text())[tiny_docker_task.task.instance_id]
        assert row["fail_to_pass_rate"] == (1.0 if verdict["resolved"] else 0.0)
        atif = trial / "agent" / "trajectory.json"
        if row["successor"] == "takeover-scripted (harbor)":
            assert row["agent_events"] == _own_events(atif) == 4 and row["prompt_tokens"] == 300
            assert row["completion_tokens"] == 20
        else:  # the oracle and nop write no trajectory
            assert not atif.exists() and row["agent_events"] is None
        # swebench's eval script finds base_commit in the frozen history (git diff, git checkout of the tests)
        log = (trial / "verifier" / "test_output.log").read_text()
        assert "bad object" not in log and "is not a tree" not in log and "command not found" not in log, log[-2000:]
        # the checkpoint's state is what the agent started from: nop leaves it as it is
        patch = (trial / "verifier" / "final.patch").read_text()
        assert NOTE in patch if row["successor"] == "nop (harbor)" else "+    return a + b" in patch
    # the raw_trace task seeded the scripted agent with the predecessor's steps, marked copied
    seeded = [t for t in trials if (t / "agent" / "trajectory.json").exists() and "copied" in
              (t / "agent" / "trajectory.json").read_text()]
    assert len(seeded) == 1
    summary = {(s["successor"], s["view"]): s for s in report.data["summary"]}
    assert summary[("oracle (harbor)", "raw_trace")]["solved"] == 1
    assert summary[("nop (harbor)", "repo_only")]["solved"] == 0
    html = (jobs / "report.html").read_text()
    assert "takeover-scripted (harbor)" in html
    # the drill-down shows each scripted trial's own steps (its commands), not the seeded ones
    units = read_units(jobs)
    cells = [c for sec in point_sections(units, collect_rows(units)) for c in sec.runs]
    scripted = [c for c in cells if c.successor == "takeover-scripted (harbor)"]
    assert len(scripted) == 2 and all(len(c.steps) == 2 and c.run_dir.endswith("trajectory.json") for c in scripted)
    assert TINY_GOLD.splitlines()[0] in (folders[0] / "solution" / "gold.patch").read_text()


def _trial(job: Path, name: str, task_name: str, **fields) -> Path:
    """A trial folder as Harbor writes it (``result.json``'s fields that the reader reads)."""
    folder = job / name
    folder.mkdir(parents=True)
    result = {"task_name": task_name, "trial_name": name, "task_id": {"path": f"/nowhere/{task_name}"},
              "agent_info": {"name": "codex", "version": "1", "model_info": {"name": "gpt-5", "provider": "openai"}},
              "agent_result": None, "verifier_result": None, "exception_info": None,
              "agent_execution": {"started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:01:30Z"}, **fields}
    (folder / "result.json").write_text(json.dumps(result))
    (folder / "config.json").write_text(json.dumps({"trial_name": name}))
    return folder


def test_report_reads_failed_timed_out_and_foreign_trials_of_a_job_folder(tmp_path):
    from takeover.report.harbor_jobs import harbor_rows

    job = tmp_path / "jobs" / "codex"
    crash = {"exception_type": "RuntimeError", "exception_message": "docker build failed\nmore",
             "exception_traceback": "", "occurred_at": "2026-01-01T00:00:00Z"}
    timeout = {**crash, "exception_type": "AgentTimeoutError", "exception_message": "agent timed out"}
    _trial(job, "a__1", "acme__calc-1__after_first_source_edit-4__repo_only", exception_info=crash)
    late = _trial(job, "a__2", "acme__calc-1__after_first_source_edit-4__raw_trace", exception_info=timeout,
                  verifier_result={"rewards": {"reward": 1.0}})
    (late / "verifier").mkdir()
    (late / "verifier" / "report.json").write_text(json.dumps({"acme__calc-1": {"resolved": True, "tests_status": {
        "FAIL_TO_PASS": {"success": ["t1"], "failure": []}, "PASS_TO_PASS": {"success": ["t2"], "failure": ["t3"]}}}}))
    _trial(job, "b__1", "hello-world", verifier_result={"rewards": {"reward": 1.0}})  # not an exported task
    rows = {r["view"]: r for r in harbor_rows(tmp_path / "jobs")}
    assert set(rows) == {"repo_only", "raw_trace"}
    failed, timed_out = rows["repo_only"], rows["raw_trace"]
    assert failed["successor"] == "codex openai/gpt-5 (harbor)" and failed["point_key"] == "acme__calc-1@after_first_source_edit:4"
    assert (failed["status"], failed["failure_kind"], failed["resolved"]) == ("failed", "infrastructure", False)
    assert failed["reason"] == "RuntimeError: docker build failed"
    assert (timed_out["status"], timed_out["failure_kind"], timed_out["exit_status"]) == ("done", "agent", "time_limit")
    assert timed_out["resolved"] and timed_out["pass_to_pass_rate"] == 0.5 and timed_out["wall_seconds"] == 90.0
    assert rows == {r["view"]: r for r in harbor_rows(job)}  # a job folder itself, or the folder of jobs


def _study(checkpoint: Path, root: Path, events: range) -> Path:
    """A study folder of copies of ``checkpoint`` cut at other events (distinct tasks), every view built."""
    for n in events:
        folder = root / f"event-{n}"
        shutil.copytree(checkpoint, folder, ignore=shutil.ignore_patterns("workspace"))
        record = json.loads((folder / "checkpoint.json").read_text())
        record["point"]["event_index"], record["workspace"] = n, None
        (folder / "checkpoint.json").write_text(json.dumps(record))
        index = json.loads((folder / "views" / "views.json").read_text())  # the views name their point too
        index["point"]["event_index"] = n
        (folder / "views" / "views.json").write_text(json.dumps(index))
        for view in ("summary_notes", "structured_notes"):
            shutil.copy(folder / "views" / "repo_only.md", folder / "views" / f"{view}.md")
    return root


def _export_in_child(study: Path, dataset: Path, mirror: Path, out: Path, agent_timeout: float) -> None:
    from takeover.harbor.task_folder import export_tasks
    from takeover.sources.tasks import load_tasks, task_index

    export_tasks(study, None, task_index(load_tasks(dataset)), out, repo_source=RepoSource(mirror, offline=True),
                 image="example/tiny:1", seed_trajectory=False, agent_timeout=agent_timeout)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_kill_9_during_an_export_into_an_existing_export_never_leaves_a_partial_task(exported, tmp_path):
    """20 exports of 20 tasks into an earlier export of them, each killed with SIGKILL at a random moment of
    its work: every task folder is the old one whole or the new one whole, and no folder being built is a
    task Harbor would load (it has no task.toml); the next export sweeps what the killed ones left."""
    _, checkpoint, _ = exported
    root = checkpoint.parents[1]
    study = _study(checkpoint, tmp_path / "study", range(10, 15))
    dataset, mirror = root / "tasks.jsonl", root / "repo" / "mirror"
    fork = multiprocessing.get_context("fork")

    def export(out: Path, agent_timeout: float) -> multiprocessing.Process:
        child = fork.Process(target=_export_in_child, args=(study, dataset, mirror, out, agent_timeout))
        child.start()
        return child

    references = {}
    for name, agent_timeout in (("old", 900.0), ("new", 600.0)):
        started = time.monotonic()
        child = export(tmp_path / name, agent_timeout)
        child.join(300)
        assert child.exitcode == 0
        seconds = time.monotonic() - started
        references[name] = {p.name: _files(p) for p in (tmp_path / name).iterdir()}
    assert len(references["old"]) == 20 and references["old"].keys() == references["new"].keys()
    out = tmp_path / "out"
    shutil.copytree(tmp_path / "old", out)
    rng = random.Random(20260501)
    for attempt in range(20):
        child = export(out, 600.0)
        time.sleep(rng.uniform(0.0, seconds))
        os.kill(child.pid, signal.SIGKILL)
        child.join(60)
        for entry in out.iterdir():
            if entry.name.startswith("."):  # a folder being built, or an old task being removed
                assert not (entry / "task.toml").exists(), (attempt, entry.name)
                continue
            files = _files(entry)
            assert files in (references["old"][entry.name], references["new"][entry.name]), (attempt, entry.name)
        assert {e.name for e in out.iterdir() if not e.name.startswith(".")} == references["old"].keys(), attempt
    child = export(out, 600.0)
    child.join(300)
    assert child.exitcode == 0
    assert {p.name: _files(p) for p in out.iterdir()} == references["new"]  # every leftover swept


def test_an_export_that_stops_at_a_bad_checkpoint_says_which_tasks_it_wrote(exported, tmp_path):
    _, checkpoint, _ = exported
    root = checkpoint.parents[1]
    study = _study(checkpoint, tmp_path / "study", range(5, 7))
    out = tmp_path / "out"
    export = ["export", "harbor", study, "--dataset", root / "tasks.jsonl", "--mirror", root / "repo" / "mirror",
              "--offline", "--view", "repo_only", "--view", "raw_trace", "--out-dir", out]
    # A predecessor that moved is found before any task is written.
    record = json.loads((study / "event-6" / "checkpoint.json").read_text())
    gone = {**record, "trajectory": str(tmp_path / "gone.json")}  # the raw_trace task cannot ship the predecessor's run
    (study / "event-6" / "checkpoint.json").write_text(json.dumps(gone))
    done = takeover(*export)
    assert done.errors == [(
        f"error: {study / 'event-6' / 'checkpoint.json'}: field 'trajectory': the predecessor's trajectory "
        f"{tmp_path / 'gone.json'} does not exist (moved or removed since the checkpoint was made)")]
    assert done.exit_code == 2 and not out.exists()
    # A view that cannot be read is found when its task is written: the export says what it wrote before.
    (study / "event-6" / "checkpoint.json").write_text(json.dumps(record))
    prompt = study / "event-6" / "views" / "raw_trace.md"
    prompt.write_bytes(b"\xff" + prompt.read_bytes())
    done = takeover(*export)
    assert done.exit_code == 2
    assert done.errors == [(
        f"error: {prompt}: line 1: not UTF-8 text (byte 0, column 1); stopped there: "
        f"3 task(s) were written before, each whole, in {out}: pallets__flask-90001__event-5__repo_only, "
        "pallets__flask-90001__event-5__raw_trace, pallets__flask-90001__event-6__repo_only")]
    assert sorted(p.name for p in out.iterdir()) == ["pallets__flask-90001__event-5__raw_trace",
                                                     "pallets__flask-90001__event-5__repo_only",
                                                     "pallets__flask-90001__event-6__repo_only"]

