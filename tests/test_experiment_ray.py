"""Scale-out on a real two-node Ray cluster started on this machine (skipped without the ``ray`` extra).

A head and a worker node are started with ``ray start`` on the loopback interface (127.0.0.2, see
:data:`NODE_IP`), each with one CPU, a small object
store and a custom resource of its own (``takeover_head``, ``takeover_worker``) that tells the nodes apart;
both are stopped at the end of the module whatever happens (every process they started is killed by pid).
The cluster uses Ray's token authentication; drivers are processes of their own with its token. On it:

- the synthetic experiment (one task, a scripted model, a real agent loop, local grading) runs with the Ray
  executor; its units ran on both nodes (each unit file records its Ray node) and its results equal those
  of the same experiment run by local worker processes;
- a Ray worker process killed in the middle of a unit: the unit is redone, finished units are not.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from test_experiment_e2e import _experiment, _rows, script, synthetic  # noqa: F401 - synthetic is a fixture

from takeover._util.processes import descendants
from takeover.embedded_model.server import free_port
from takeover.experiments import load_experiment, run_experiment
from takeover.experiments.units import UnitSpec, load_results, unit_path
from takeover.testing.engine_units import wait_for_release
from takeover.testing.scripted_server import ScriptedServer

pytest.importorskip("ray", reason="the optional extra 'ray' is not installed")

pytestmark = pytest.mark.slow
START_BOUND = 240.0  # seconds for both nodes to join (a busy 2-core machine is slow to start Ray)
OBJECT_STORE_BYTES = 100 * 1024 * 1024
# The nodes' address, on the loopback interface. Not 127.0.0.1: Ray replaces that address by the machine's
# network address when it connects (its switch against that, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, also
# refuses a second node), and the test's traffic must stay on loopback.
NODE_IP = "127.0.0.2"


_TAKEN: set[int] = set()


def _ports(*names: str) -> list[str]:
    """``--name PORT`` for each name, every port distinct from the others this module chose: two free
    ports asked for one after the other can be the same number, and Ray refuses a port used twice."""
    flags = []
    for name in names:
        port = free_port()
        while port in _TAKEN:
            port = free_port()
        _TAKEN.add(port)
        flags += [f"--{name}", str(port)]
    return flags


def _ray_start(args: list[str], log_path: Path, env: dict) -> subprocess.Popen:
    """``ray start --block ...`` in a session of its own, its output in ``log_path``."""
    log = open(log_path, "wb")  # noqa: SIM115 - the child keeps it
    ray_bin = str(Path(sys.executable).with_name("ray"))
    return subprocess.Popen([ray_bin, "start", "--block", "--node-ip-address", NODE_IP, "--num-cpus", "1",
                             "--num-gpus", "0", "--object-store-memory", str(OBJECT_STORE_BYTES),
                             "--disable-usage-stats", *args], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env=env, start_new_session=True)


def _stop(procs: list[subprocess.Popen]) -> None:
    """Stop each ``ray start --block`` and kill, by pid, every process it started that is still there."""
    for proc in procs:
        started = descendants(proc.pid)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for pid in started + descendants(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


# Run by a driver process: the alive nodes' ids by their custom resource.
NODES = """
import json, sys, ray
ray.init(address=sys.argv[1], log_to_driver=False, logging_level="ERROR")
print(json.dumps({name: n["NodeID"] for n in ray.nodes() if n["Alive"] for name in ("head", "worker")
                  if n["Resources"].get("takeover_" + name)}))
"""


@pytest.fixture(scope="module")
def ray_cluster():
    """``{"address", "env", "head", "worker"}`` of a two-node cluster: its address, the environment a driver
    needs (Ray's token authentication with a token of its own: ``RAY_AUTH_MODE=token``, ``RAY_AUTH_TOKEN``)
    and the two node ids. Drivers run as processes of their own, as ``takeover run`` on a cluster does."""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_DEDUP_LOGS": "0", "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths must stay short
    port = free_port()
    _TAKEN.add(port)
    address = f"{NODE_IP}:{port}"
    agent_ports = ("node-manager-port", "object-manager-port", "dashboard-agent-listen-port",
                   "dashboard-agent-grpc-port", "runtime-env-agent-port", "metrics-export-port")
    procs: list[subprocess.Popen] = []
    try:
        deadline = time.monotonic() + START_BOUND

        def started(args: list[str]) -> None:
            """Start a node and wait until its ``ray start`` says so (a worker needs its head up)."""
            log = Path(temp_dir) / f"start-{len(procs)}.log"
            procs.append(_ray_start(args, log, env))
            while b"Ray runtime started" not in log.read_bytes():
                if time.monotonic() > deadline or procs[-1].poll() is not None:
                    raise AssertionError(f"ray start {' '.join(args)} failed:\n{log.read_text()[-3000:]}")
                time.sleep(0.5)

        started(["--head", "--port", str(port), "--temp-dir", temp_dir, "--include-dashboard", "false",
                 "--resources", json.dumps({"takeover_head": 1}), *_ports("ray-client-server-port", *agent_ports)])
        started(["--address", address, "--resources", json.dumps({"takeover_worker": 1}), *_ports(*agent_ports)])
        nodes: dict[str, str] = {}
        while len(nodes) < 2:
            if time.monotonic() > deadline:
                raise AssertionError(f"the two nodes did not join within {START_BOUND:.0f} s: {nodes}")
            probe = subprocess.run([sys.executable, "-c", NODES, address], env=env, capture_output=True, text=True,
                                   check=False, timeout=120)
            if probe.returncode == 0 and probe.stdout.strip():
                nodes = json.loads(probe.stdout.strip().splitlines()[-1])
        yield {"address": address, "env": env, **nodes}
    finally:
        _stop(list(reversed(procs)))
        shutil.rmtree(temp_dir, ignore_errors=True)


def _study(root: Path, name: str, base_url: str, execution: str) -> Path:
    """The synthetic experiment with one point type and two views, and the given ``[execution]`` table."""
    path = _experiment(root, name, base_url)
    text = path.read_text().replace(
        'point_types = ["after_first_source_edit", "after_first_post_failure_edit"]',
        'point_types = ["after_first_post_failure_edit"]\nviews = ["repo_only", "raw_trace"]')
    path.write_text(text + f"\n[execution]\n{execution}\n")
    return path


def test_the_synthetic_experiment_runs_on_both_nodes_and_matches_a_local_run(synthetic, ray_cluster):  # noqa: F811
    with ScriptedServer(script) as srv:
        local = load_experiment(_study(synthetic, "local", srv.base_url, "workers = 2"))
        local_summary = run_experiment(local, progress=False)
        path = _study(synthetic, "onray", srv.base_url,
                      f'workers = 2\nexecutor = "ray"\nray_address = "{ray_cluster["address"]}"')
        # The driver on the cluster: takeover run, as a user starts it there.
        done = subprocess.run([sys.executable, "-m", "takeover", "run", str(path)], env=ray_cluster["env"],
                              capture_output=True, text=True, check=False, timeout=1200)
    assert local_summary.problems == [], local_summary.problems_by_reason()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    cluster = load_experiment(path)
    assert _rows(cluster.out) == _rows(local.out) and len(_rows(local.out)) == 2
    nodes = {stage: {r.node for r in load_results(cluster.out, stage).values()}
             for stage in ("predecessor", "points", "checkpoint", "handoff_state", "view", "takeover", "grade")}
    assert set().union(*nodes.values()) == {ray_cluster["head"], ray_cluster["worker"]}, nodes
    assert all(r.node is None for r in load_results(local.out, "takeover").values())
    assert "takeover: stage done in" in done.stderr  # progress lines from the driver


# The driver of the worker-kill test: the engine on the cluster over units that block on their first attempt.
DRIVER = """
import json, sys
from takeover.experiments.engine import RayExecutor, run_units
from takeover.experiments.units import UnitSpec
from takeover.testing.engine_units import wait_for_release

address, out, inputs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
specs = [UnitSpec(stage="demo", fn=wait_for_release, inputs=i) for i in inputs]
events = []
executor = RayExecutor(2, address)
try:
    results = run_units(specs, out, executor, progress=events.append)
finally:
    executor.close()
print(json.dumps({"results": [r.model_dump(mode="json") for r in results.values()],
                  "redo": [e.reason for e in events if e.kind == "redo"]}))
"""


def test_a_ray_worker_killed_mid_unit_is_redone_and_finished_units_are_kept(tmp_path, ray_cluster):
    out, log = tmp_path / "out", tmp_path / "calls.jsonl"
    common = {"log": str(log), "release": str(tmp_path / "release")}
    inputs = [{**common, "value": v, "block": v == 2, "once": True} for v in (0, 1, 2)]
    quick = [unit_path(out, "demo", UnitSpec(stage="demo", fn=wait_for_release, inputs=i).key) for i in inputs[:2]]
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, ray_cluster["address"], str(out), json.dumps(inputs)],
                              env=ray_cluster["env"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    deadline = time.monotonic() + START_BOUND
    while killed is None and time.monotonic() < deadline and driver.poll() is None:
        calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        blocked = [c for c in calls if c["value"] == 2]
        if blocked and all(p.exists() for p in quick):  # the quick units are done, the third one blocks
            killed = blocked[0]["pid"]
            os.kill(killed, signal.SIGKILL)  # the Ray worker process running it
        time.sleep(0.05)
    stdout, stderr = driver.communicate(timeout=START_BOUND)
    assert killed is not None, stderr[-3000:]
    assert driver.returncode == 0, stderr[-3000:]
    report = json.loads(stdout.strip().splitlines()[-1])
    results = report["results"]
    assert [r["status"] for r in results] == ["done"] * 3
    assert [r["output"]["double"] for r in results] == [0, 2, 4]
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert {v: [c["attempt"] for c in calls if c["value"] == v] for v in (0, 1, 2)} == {0: [1], 1: [1], 2: [1, 2]}
    assert len(report["redo"]) == 1 and "the Ray worker died" in report["redo"][0]
    assert results[2]["pid"] != killed
    assert {r["node"] for r in results} <= {ray_cluster["head"], ray_cluster["worker"]}
