"""Ctrl-C on ``takeover run`` ends it with exit status 130 and one line saying how many finished units were
kept and the command that resumes; the resumed run redoes only the units that were running and gives the
results of an uninterrupted run (docs/protocol.md section 10)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading

import pytest
from test_cli_run_flags import free_port, run, small_experiment
from test_experiment_e2e import script, synthetic  # noqa: F401  (synthetic is a fixture)

from takeover.testing.scripted_server import ScriptedServer


def _results(out):
    """Every stored unit's stage, labels, status and output (the run's results, not its timings)."""
    found = {}
    for path in sorted((out / "units").glob("*/*.json")):
        r = json.loads(path.read_text())
        labels = {k: v for k, v in r["labels"].items() if not k.endswith("_key")}
        found[(r["stage"], json.dumps(labels, sort_keys=True))] = (r["status"], _scrub(r["output"], out))
    return found


def _scrub(value, out):
    """``value`` with the output folder's path, the unit keys in it and the seconds left out (they differ
    between two folders: a unit's key holds its inputs, paths included)."""
    if isinstance(value, dict):
        return {k: _scrub(v, out) for k, v in value.items() if "seconds" not in k}
    if isinstance(value, list):
        return [_scrub(v, out) for v in value]
    return re.sub(r"/[0-9a-f]{16}(?=/)", "/KEY", value.replace(str(out), "OUT")) if isinstance(value, str) else value


@pytest.mark.slow
def test_ctrl_c_on_run_says_what_was_kept_and_the_resume_matches_an_uninterrupted_run(synthetic, monkeypatch):  # noqa: F811
    monkeypatch.chdir(synthetic)
    monkeypatch.delenv("TAKEOVER_MIRROR", raising=False)
    port = free_port()
    exp = small_experiment(synthetic, port)
    out = synthetic / "small"
    reached, gate = threading.Event(), threading.Event()

    def successor_waits(body: dict, n: int) -> dict:
        if "<takeover_instructions>" in body["messages"][1]["content"] and not gate.is_set():
            reached.set()
            gate.wait(120)
        return script(body, n)

    env = {k: v for k, v in os.environ.items() if k != "TAKEOVER_MIRROR"}
    argv = [sys.executable, "-m", "takeover", "run", "small.toml", "--mirror", "mirror", "--no-progress"]
    with ScriptedServer(successor_waits, port=port):
        proc = subprocess.Popen(argv, cwd=synthetic, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        try:
            assert reached.wait(240), "the successor's first request never came"
            os.kill(proc.pid, signal.SIGINT)
            _, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        gate.set()
    assert proc.returncode == 130, stderr[-2000:]
    last = stderr.splitlines()[-1]
    kept = {p: p.stat().st_mtime_ns for p in (out / "units").glob("*/*.json")}
    assert last.startswith(f"interrupted: {len(kept)} finished unit(s) kept in {out / 'units'} (")
    assert "predecessor 1 done" in last and "takeover 1" not in last
    assert last.endswith("; units that were running are redone on resume: takeover run small.toml --mirror mirror")
    assert "Traceback" not in stderr

    with ScriptedServer(script, port=port):
        resumed = run(str(exp), "--mirror", "mirror")
        assert resumed.exit_code == 0, resumed.output
        # Nothing that had finished was redone.
        assert {p: p.stat().st_mtime_ns for p in kept} == kept
        fresh_exp = synthetic / "fresh.toml"
        fresh_exp.write_text(exp.read_text().replace('out_dir = "small"', 'out_dir = "fresh"'))
        fresh = run(str(fresh_exp), "--mirror", "mirror")
        assert fresh.exit_code == 0, fresh.output
    assert _results(out) == _results(synthetic / "fresh")


def test_grading_folders_left_by_a_killed_process_are_removed_by_the_next_grading(tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = temp / f"takeover-grade-{gone.pid}-acme__calc-1-abc123"
    (stale / "repo").mkdir(parents=True)
    live = temp / f"takeover-grade-{os.getpid()}-acme__calc-1-def456"  # this process still runs
    live.mkdir()
    kept = temp / "takeover-grade-acme__calc-1-x7"  # an earlier version's name, or a workspace kept on purpose
    kept.mkdir()
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(json.dumps({"instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": "0" * 40,
                                   "problem_statement": "x", "FAIL_TO_PASS": [], "PASS_TO_PASS": []}) + "\n")
    done = subprocess.run([sys.executable, "-m", "takeover", "grade", "--dataset", str(dataset), "--empty",
                           "--instance-id", "acme__calc-1", "--mirror", str(tmp_path / "mirror"), "--offline",
                           "--out-dir", str(tmp_path / "logs")],
                          check=False, env={**os.environ, "TMPDIR": str(temp)}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert sorted(p.name for p in temp.iterdir()) == sorted([live.name, kept.name])
