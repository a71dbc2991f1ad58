"""A run's processes live and die with its coordinator, and one coordinator works in an output folder.

- ``kill -9`` of a coordinator running blocked units on two worker processes: within a generous bound no
  process of the run remains (its workers and the command each unit started, looked for in /proc), the
  output folder is free again, and the resumed run gives the results of an uninterrupted one without
  redoing what had finished.
- A worker process killed in the middle of a unit: that unit is redone, finished units are not.
- A second ``takeover run`` in a folder in use stops at once, naming the holder's pid.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from takeover.experiments.engine import ProcessExecutor, ProgressEvent, make_executor, run_units
from takeover.experiments.folder_lock import OutDirInUse, hold_out_dir
from takeover.experiments.units import UnitResult, UnitSpec, unit_path
from takeover.testing.engine_units import wait_for_release

ROOT = Path(__file__).resolve().parents[1]
BOUND = 60.0  # seconds: generous, the machine may be busy; the processes end within a second or two

# The coordinator the test kills: the engine with two worker processes in an output folder it holds, as
# `takeover run --workers 2` does, over units that block until released.
COORDINATOR = """
import json, sys
from takeover.experiments.engine import make_executor, run_units
from takeover.experiments.folder_lock import hold_out_dir
from takeover.experiments.units import UnitSpec
from takeover.testing.engine_units import wait_for_release

out, inputs = sys.argv[1], json.loads(sys.argv[2])
specs = [UnitSpec(stage="demo", fn=wait_for_release, inputs=i) for i in inputs]
with hold_out_dir(out):
    executor = make_executor("local", 2)
    try:
        results = run_units(specs, out, executor)
    finally:
        executor.close()
print(json.dumps({k: r.output for k, r in results.items()}))
"""


def _log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _pids_with(token: str) -> list[int]:
    """Pids whose command line holds ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _wait_for(condition, what: str, timeout: float = BOUND) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f} s: {what}")
        time.sleep(0.05)


def _inputs(tmp_path: Path, token: str) -> list[dict]:
    """Two quick units, then two that block until ``release`` exists, each starting ``sleep TOKEN``."""
    common = {"log": str(tmp_path / "calls.jsonl"), "release": str(tmp_path / "release"), "sleep_token": token}
    return [{**common, "value": v, "block": v >= 2} for v in range(4)]


def _outputs(out: Path) -> dict[int, tuple]:
    results = [UnitResult.model_validate_json(p.read_text()) for p in (out / "units" / "demo").glob("*.json")]
    return {r.inputs["value"]: (r.status, r.output, r.prompt_tokens, r.completion_tokens) for r in results}


@pytest.mark.slow
def test_kill_9_of_the_coordinator_leaves_no_process_and_the_resumed_run_matches(tmp_path):
    token = f"{uuid.uuid4().int % 10**6 + 10**6}.{os.getpid()}"  # a sleep duration nobody else uses
    out = tmp_path / "out"
    inputs = _inputs(tmp_path, token)
    argv = [sys.executable, "-c", COORDINATOR, str(out), json.dumps(inputs)]
    coordinator = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        log = tmp_path / "calls.jsonl"
        _wait_for(lambda: sum(c["value"] >= 2 for c in _log(log)) == 2 and len(_pids_with(token)) >= 2,
                  "both blocking units started their command")
        finished = {p.name: p.stat().st_mtime_ns for p in (out / "units" / "demo").glob("*.json")}
        assert len(finished) == 2  # the quick units are done and recorded
        workers = {c["pid"] for c in _log(log)}
        assert len(workers) == 2 and coordinator.pid not in workers
        # While it runs, a second coordinator is refused with the holder's pid.
        with pytest.raises(OutDirInUse, match=f"pid {coordinator.pid} "), hold_out_dir(out):
            pass

        os.kill(coordinator.pid, signal.SIGKILL)  # the coordinator alone, not its process group
        coordinator.wait()
        _wait_for(lambda: not any(_running(p) for p in workers) and not _pids_with(token),
                  f"workers {sorted(workers)} and their sleep commands ended")
    finally:
        if coordinator.poll() is None:
            os.killpg(coordinator.pid, signal.SIGKILL)
            coordinator.wait()
    assert not (out / "units" / "demo").exists() or len(list((out / "units" / "demo").glob("*.json"))) == 2

    # Resume with the units released: the two unfinished units run, the finished ones are reused as they are.
    (tmp_path / "release").write_text("")
    resumed = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert {p.name: p.stat().st_mtime_ns for p in (out / "units" / "demo").glob("*.json") if p.name in finished} \
        == finished
    assert [c["value"] for c in _log(tmp_path / "calls.jsonl")].count(0) == 1  # not redone
    # An uninterrupted run of the same units gives the same results.
    fresh = tmp_path / "fresh"
    again = subprocess.run([sys.executable, "-c", COORDINATOR, str(fresh), json.dumps(inputs)],
                           check=False, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert _outputs(out) == _outputs(fresh)
    assert all(status == "done" for status, *_ in _outputs(out).values()) and len(_outputs(out)) == 4


@pytest.mark.slow
def test_a_worker_killed_mid_unit_is_redone_and_finished_units_are_kept(tmp_path):
    out, log, release = tmp_path / "out", tmp_path / "calls.jsonl", tmp_path / "release"
    common = {"log": str(log), "release": str(release)}
    # Plan order: two quick units take both workers; the unit that blocks (on its first attempt only) starts
    # after one of them.
    specs = [UnitSpec(stage="demo", fn=wait_for_release, inputs={**common, "value": v, "block": v == 2, "once": True},
                      labels={"instance_id": f"unit-{v}"}) for v in (0, 1, 2)]
    killed: list[int] = []

    def kill_the_blocked_worker() -> None:
        def blocked() -> list[dict]:
            return [c for c in _log(log) if c["value"] == 2]

        quick_done = [unit_path(out, "demo", s.key) for s in specs[:2]]
        _wait_for(lambda: blocked() and all(p.exists() for p in quick_done), "the blocking unit started")
        killed.append(blocked()[0]["pid"])
        os.kill(killed[0], signal.SIGKILL)

    killer = threading.Thread(target=kill_the_blocked_worker, daemon=True)
    killer.start()
    events: list[ProgressEvent] = []
    executor = ProcessExecutor(2)
    try:
        results = run_units(specs, out, executor, progress=events.append)
    finally:
        executor.close()
    killer.join(timeout=BOUND)
    assert killed, "the blocking unit never started"
    assert [r.status for r in results.values()] == ["done"] * 3
    assert [r.output["double"] for r in results.values()] == [0, 2, 4]
    attempts = {v: [c["attempt"] for c in _log(log) if c["value"] == v] for v in (0, 1, 2)}
    assert attempts == {0: [1], 1: [1], 2: [1, 2]}  # only the unit of the dead worker ran again
    redo = [e for e in events if e.kind == "redo"]
    assert len(redo) == 1 and redo[0].labels == {"instance_id": "unit-2"} and "worker" in redo[0].reason
    assert results[specs[2].key].pid != killed[0]


def test_a_second_run_in_a_folder_in_use_stops_naming_the_holder(tmp_path):
    out = tmp_path / "out"
    experiment = tmp_path / "exp.toml"
    experiment.write_text(f"""
out_dir = "{out}"
[dataset]
path = "tasks.jsonl"
[predecessor]
trajectories = ["trajs/"]
[[successors]]
model = "scripted"
base_url = "http://127.0.0.1:9/v1"
""")
    with hold_out_dir(out):
        with hold_out_dir(out):  # the same process may enter again (the quickstart around its experiment)
            pass
        done = subprocess.run([sys.executable, "-m", "takeover", "run", str(experiment)], check=False,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert f"is in use by another takeover run (pid {os.getpid()} on " in done.stderr
    assert f"kill {os.getpid()}" in done.stderr
    assert not (out / "plan.json").exists()  # stopped before any work
    # Released: the folder can be held again, by anyone.
    with hold_out_dir(out) as lock:
        assert json.loads(lock.read_text())["pid"] == os.getpid()


def test_local_executor_runs_units_in_worker_processes_even_with_one_worker(tmp_path):
    log = tmp_path / "calls.jsonl"
    spec = UnitSpec(stage="demo", fn=wait_for_release, inputs={"log": str(log), "release": "", "value": 3,
                                                               "block": False})
    executor = make_executor("local", 1)
    try:
        result = run_units([spec], tmp_path / "out", executor)[spec.key]
    finally:
        executor.close()
    assert result.output == {"double": 6} and result.pid != os.getpid() and result.node is None
    assert _log(log)[0]["pid"] == result.pid
