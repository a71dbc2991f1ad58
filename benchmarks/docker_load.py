"""Load on one Docker daemon: a study of many docker units with several workers, and the daemon's overhead per
unit beside the local command backend on the same units.

    .venv/bin/python benchmarks/docker_load.py [--workers 4] [--successors 3] [--repeat 5] [--json]

Needs a Docker daemon, debootstrap and root (the stand-in image of the tests' small flask task,
``tests/docker_images.py``). Two measurements, printed side by side:

1. **Overhead per unit**, ``--repeat`` times each: the ``docker`` command backend's copy of the image's
   ``/testbed`` (a created, never started container), the start of mini-swe-agent's container (with takeover's
   ``git config`` in it), one command in it, and its stop (SIGKILL, ``--rm``); the ``local`` backend's
   workspace (a shared clone from the mirror) and one command on the host. Medians in seconds.
2. **The study**: predecessor, two handoff points, two views, ``--successors`` successors (so ``4 x
   successors`` takeover runs and as many gradings, all in containers, plus the handoff states), run with
   ``--workers``, once with ``command_backend = "docker"`` and once with ``"local"`` (grading ``docker`` both
   times). Printed: wall seconds, units done and failed (none may be lost), the median seconds of a takeover
   unit, and the containers of takeover's left in the daemon for the study's folder (none may be left).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from docker_images import stand_in_image, tiny_task  # the tests' stand-in builder
from test_experiment_docker import script  # the scripted predecessor and successors of the docker study

from takeover._util.containers import OUT_DIR, container_labels, copy_from_image
from takeover.agents.docker_commands import IMAGE_RECORD, DockerCommands
from takeover.experiments import load_experiment, run_experiment
from takeover.repository_states import snapshots
from takeover.testing.scripted_server import ScriptedServer


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 3)


def overhead(task, source, image_id: str, work: Path, repeat: int) -> dict[str, dict[str, float]]:
    """Median seconds of each step of a unit's environment, per command backend."""
    docker: dict[str, list[float]] = {"copy /testbed": [], "container start": [], "one command": [], "stop": []}
    local: dict[str, list[float]] = {"workspace": [], "one command": []}
    commands = DockerCommands()
    for i in range(repeat):
        dest = work / f"docker-{i}" / "workspace"
        t = time.monotonic()
        copy_from_image(image_id, "/testbed", dest, container_labels("benchmark", dest.parent))
        docker["copy /testbed"].append(time.monotonic() - t)
        record = snapshots.git_dir(dest) / IMAGE_RECORD
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps({"image": image_id, "image_id": image_id}))
        t = time.monotonic()
        env = commands.environment(workspace=dest, tmp_dir=None, env={}, command_timeout=60,
                                   instance_id=task.instance_id, image=None, readable=[], lifetime=600)
        docker["container start"].append(time.monotonic() - t)
        t = time.monotonic()
        env.execute({"command": "true"})
        docker["one command"].append(time.monotonic() - t)
        t = time.monotonic()
        subprocess.run(["docker", "stop", env.container_id], capture_output=True, check=True)
        docker["stop"].append(time.monotonic() - t)
        env.container_id = None  # stopped (and removed: --rm) already

        dest = work / f"local-{i}" / "workspace"
        t = time.monotonic()
        source.workspace(task.repo, task.base_commit, dest)
        local["workspace"].append(time.monotonic() - t)
        t = time.monotonic()
        subprocess.run(["bash", "-c", "true"], cwd=dest, check=True)
        local["one command"].append(time.monotonic() - t)
    out = {"docker": {k: _median(v) for k, v in docker.items()}, "local": {k: _median(v) for k, v in local.items()}}
    out["docker"]["per unit"] = round(sum(out["docker"].values()), 3)
    out["local"]["per unit"] = round(sum(out["local"].values()), 3)
    return out


def _study_file(root: Path, base_url: str, command_backend: str, successors: int) -> Path:
    model = f'base_url = "{base_url}"\napi_key_env = "SCRIPTED_KEY"\nretries = 0\n'
    agent = f'agent = {{ command_backend = "{command_backend}" }}\n'
    succ = "".join(f'[[successors]]\nmodel = "scripted-{i}"\n{model}{agent}\n' for i in range(successors))
    path = root / "study.toml"
    path.write_text(f"""
name = "load"
out_dir = "study"
mirror = "mirror"
offline = true
views = ["repo_only", "raw_trace"]
point_types = ["after_first_source_edit", "after_first_post_failure_edit"]
bootstrap_resamples = 200

[dataset]
path = "tasks.jsonl"
difficulties = ["15 min - 1 hour"]

[predecessor]
{agent}[predecessor.model]
model = "scripted"
{model}
{succ}
[limits]
step_limit = 8
wall_time_limit_seconds = 300
command_timeout = 60

[grading]
backend = "docker"
timeout = 300
""")
    return path


def study(task, source, work: Path, command_backend: str, workers: int, successors: int) -> dict:
    """Run the study once; its wall time, unit counts, median takeover unit seconds and containers left."""
    root = work / f"study-{command_backend}"
    root.mkdir(parents=True)
    shutil.copytree(source.mirror, root / "mirror")
    (root / "tasks.jsonl").write_text(task.model_copy(update={"difficulty": "15 min - 1 hour"}).model_dump_json()
                                      + "\n")
    with ScriptedServer(script) as srv:
        config = load_experiment(_study_file(root, srv.base_url, command_backend, successors))
        start = time.monotonic()
        summary = run_experiment(config, progress=False, workers=workers)
        wall = time.monotonic() - start
    units = [json.loads(p.read_text()) for p in (config.out / "units").glob("*/*.json")]
    takeover = [u["seconds"] for u in units if u["stage"] == "takeover" and u["status"] == "done"]
    left = subprocess.run(["docker", "ps", "-a", "--filter", "label=org.takeover.owner=takeover", "--format",
                           f'{{{{.ID}}}} {{{{.Label "{OUT_DIR}"}}}}'], capture_output=True, text=True, check=True)
    orphans = [line for line in left.stdout.splitlines() if str(config.out) in line]
    return {"command_backend": command_backend, "workers": workers, "wall_seconds": round(wall, 1),
            "units": len(units), "done": sum(u["status"] == "done" for u in units),
            "failed": sum(u["status"] == "failed" for u in units),
            "docker_units": sum(u["stage"] in ("grade", "handoff_state")
                                or (command_backend == "docker" and u["stage"] in ("takeover", "predecessor"))
                                for u in units),
            "median_takeover_unit_seconds": _median(takeover) if takeover else None,
            "problems": [p.reason[:200] for p in summary.problems], "containers_left": len(orphans),
            "report": (config.out / "report.json").exists()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--successors", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-study", action="store_true", help="measure the overhead only")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="takeover-docker-load-") as tmp:
        work = Path(tmp)
        task, source = tiny_task(work / "task")
        stand_in = stand_in_image(task, source)
        over = overhead(task, source, stand_in.image_id, work / "overhead", args.repeat)
        rows = [] if args.skip_study else [study(task, source, work, backend, args.workers, args.successors)
                                           for backend in ("docker", "local")]
    if args.json:
        print(json.dumps({"overhead": over, "studies": rows}))
        return
    print(f"overhead per unit, median of {args.repeat} (seconds):")
    for backend, steps in over.items():
        print(f"  {backend:6} " + ", ".join(f"{k} {v:.3f}" for k, v in steps.items()))
    for r in rows:
        print(f"study, command backend {r['command_backend']}, {r['workers']} workers: {r['units']} units "
              f"({r['docker_units']} in containers), {r['done']} done, {r['failed']} failed, wall {r['wall_seconds']} s, "
              f"median takeover unit {r['median_takeover_unit_seconds']} s, containers left {r['containers_left']}, "
              f"report {'written' if r['report'] else 'missing'}")
        for p in r["problems"]:
            print(f"    problem: {p}")


if __name__ == "__main__":
    main()
