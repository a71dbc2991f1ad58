"""Gradings apart on one real daemon: two `takeover grade --backend docker --gold` of one task started together
(into one --out-dir, and into two) are both resolved, write nothing outside the folder named, and leave no
container behind."""

from __future__ import annotations

import json
import subprocess
import sys

import docker
import pytest
from docker_images import private_instance
from prerequisites import requires

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800), requires("docker daemon", "debootstrap")]


@pytest.mark.parametrize("shared_out_dir", [True, False], ids=["one-out-dir", "two-out-dirs"])
def test_two_gradings_of_one_patch_at_once_are_both_resolved(tiny_docker_task, tmp_path, shared_out_dir):
    with private_instance(tiny_docker_task) as (task, _name):
        _grade_twice_at_once(tiny_docker_task, task, tmp_path, shared_out_dir)


def _grade_twice_at_once(tiny_docker_task, task, tmp_path, shared_out_dir: bool) -> None:
    task_file = tmp_path / "tasks.jsonl"
    task_file.write_text(task.model_dump_json() + "\n")
    outs = [tmp_path / "grades"] * 2 if shared_out_dir else [tmp_path / "grades-a", tmp_path / "grades-b"]
    procs = [subprocess.Popen([sys.executable, "-m", "takeover", "grade", "--backend", "docker", "--gold",
                               "--dataset", str(task_file), "--instance-id", task.instance_id,
                               "--mirror", str(tiny_docker_task.source.mirror), "--offline", "--out-dir", str(out),
                               "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
             for out in outs]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=1200)
        assert proc.returncode == 0, err
        results.append(json.loads(out.splitlines()[0]))
    assert [(r["resolved"], r["error"]) for r in results] == [(True, None), (True, None)]
    if shared_out_dir:  # the second waited for the first and reused its result
        assert sorted(r["reused"] for r in results) == [False, True]
    assert not (tmp_path / "logs").exists()  # the harness's logs are inside --out-dir
    for out in set(outs):
        assert list(out.glob("gold/*/run_evaluation/*/*/*/test_output.txt"))
    left = [c for c in docker.from_env().containers.list(all=True, sparse=True)
            if str(tmp_path) in (c.attrs.get("Labels") or {}).get("org.takeover.out-dir", "")]
    assert left == []
