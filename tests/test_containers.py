"""takeover's containers on a real Docker daemon: labelled with who started them, removed when their process
is gone and never otherwise, and images named by their content id with a one-line reason when missing."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import docker
import pytest
from docker_images import STAND_IN_LABEL
from prerequisites import requires

from takeover._util.containers import (
    HOST,
    OUT_DIR,
    OWNER,
    PID,
    PID_STARTED,
    PURPOSE,
    STOP_SIGNAL,
    container_has_network,
    container_labels,
    docker_client,
    image_identity,
    label_args,
    remove_stale_containers,
    stale_containers,
)
from takeover.errors import EnvironmentUnavailable

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800), requires("docker daemon", "debootstrap")]


def _dead_pid() -> int:
    """The id of a process that has ended (and was reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def client():
    created: list[str] = []
    plain = docker.from_env()
    yield plain, created
    for cid in created:
        try:
            plain.api.remove_container(cid, force=True)
        except docker.errors.NotFound:
            pass


def _start(plain, created, image: str, labels: dict[str, str]) -> str:
    container = plain.containers.run(image, ["sleep", "600"], detach=True, labels=labels)
    created.append(container.id)
    return container.id


def test_stale_containers_are_those_whose_process_is_gone_in_the_folder_asked(tiny_docker_task, client, tmp_path):
    plain, created = client
    image = tiny_docker_task.stand_in.image
    out = tmp_path / "study"
    dead = {**container_labels("agent run", out / "work" / "run-1"), PID: str(_dead_pid())}
    alive = container_labels("agent run", out / "work" / "run-2")  # this process: alive
    elsewhere = {**dead, OUT_DIR: str(tmp_path / "other-study")}
    other_host = {**dead, HOST: "another-host"}
    ids = {name: _start(plain, created, image, labels) for name, labels in [
        ("dead", dead), ("alive", alive), ("elsewhere", elsewhere), ("other_host", other_host),
        ("not ours", {"com.example.owner": "someone"})]}
    assert {s.id for s in stale_containers(out)} == {ids["dead"]}
    assert {s.id for s in stale_containers()} >= {ids["dead"], ids["elsewhere"]}
    removed = remove_stale_containers(out)
    assert [(s.id, s.purpose, s.out_dir) for s in removed] == [(ids["dead"], "agent run", str(out / "work" / "run-1"))]
    left = {c.id for c in plain.containers.list(all=True, ignore_removed=True)}
    assert ids["dead"] not in left and {ids["alive"], ids["elsewhere"], ids["other_host"], ids["not ours"]} <= left
    assert remove_stale_containers(out) == []


def test_a_docker_run_gets_the_labels_as_arguments(tiny_docker_task, client, tmp_path):
    plain, created = client
    labels = container_labels("agent run", tmp_path)
    args = label_args(labels)
    assert args[:2] == ["--label", f"{OWNER}=takeover"] and len(args) == 2 * len(labels)
    done = subprocess.run(["docker", "run", "-d", *args, tiny_docker_task.stand_in.image, "sleep", "600"],
                          capture_output=True, text=True, check=True)
    created.append(done.stdout.strip())
    assert {k: v for k, v in plain.containers.get(done.stdout.strip()).labels.items() if k.startswith("org.takeover.")
            and k != STAND_IN_LABEL and not k.startswith(STAND_IN_LABEL)} == labels


def test_containers_made_through_the_client_carry_labels_stop_at_once_and_have_no_network(tiny_docker_task, client,
                                                                                          tmp_path):
    plain, created = client
    labelled = docker_client(container_labels("grading", tmp_path))
    container = labelled.containers.create(tiny_docker_task.stand_in.image, command="tail -f /dev/null", detach=True)
    created.append(container.id)
    container.start()
    attrs = plain.api.inspect_container(container.id)
    assert attrs["Config"]["Labels"][PURPOSE] == "grading" and attrs["Config"]["Labels"][OUT_DIR] == str(tmp_path)
    assert attrs["Config"]["StopSignal"] == STOP_SIGNAL and labelled.created == [container.id]
    assert container_has_network(plain, container.id) is False  # the daemon here has no bridge network
    plain.api.remove_container(container.id, force=True)
    assert container_has_network(plain, container.id) is None


def test_an_image_is_named_by_its_content_id_and_a_missing_one_is_one_line(tiny_docker_task):
    image = image_identity(tiny_docker_task.stand_in.image)
    assert image.id == tiny_docker_task.stand_in.image_id and image.id.startswith("sha256:")
    assert image.labels[STAND_IN_LABEL].startswith("takeover test stand-in") and image.repo_digests == []
    missing = "127.0.0.1:9/takeover/missing:latest"  # a registry on a closed local port: refused at once
    with pytest.raises(EnvironmentUnavailable) as err:
        image_identity(missing)
    assert "\n" not in str(err.value) and missing in str(err.value) and "docker pull" in str(err.value)
    with pytest.raises(EnvironmentUnavailable) as err:
        image_identity(missing, pull=True)
    assert "\n" not in str(err.value) and "cannot be pulled" in str(err.value) and "127.0.0.1:9" in str(err.value)


def test_doctor_clean_removes_only_the_containers_of_killed_runs(tiny_docker_task, client, tmp_path):
    plain, created = client
    dead = _start(plain, created, tiny_docker_task.stand_in.image,
                  {**container_labels("grading", tmp_path / "logs"), PID: str(_dead_pid())})
    alive = _start(plain, created, tiny_docker_task.stand_in.image, container_labels("grading", tmp_path / "logs"))
    done = subprocess.run([sys.executable, "-m", "takeover", "doctor", "--clean", "--json"], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert f"removed container {plain.containers.get(alive).name}" not in done.stderr
    assert "removed container" in done.stderr and str(tmp_path / "logs") in done.stderr
    left = {c.id for c in plain.containers.list(all=True, ignore_removed=True)}
    assert dead not in left and alive in left
    docker_check = next(json.loads(line) for line in done.stdout.splitlines() if json.loads(line)["name"] == "docker")
    assert docker_check["status"] == "ok"  # nothing stale is left


def test_tasks_images_names_and_pulls_the_images_a_selection_needs(tiny_docker_task, tmp_path):
    task = tiny_docker_task.task
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(task.model_dump_json() + "\n"
                       + task.model_copy(update={"instance_id": "pallets__flask-90005"}).model_dump_json() + "\n")
    names = subprocess.run([sys.executable, "-m", "takeover", "tasks", "images", "--dataset", str(dataset)],
                           capture_output=True, text=True, timeout=300, check=True).stdout.split()
    assert names == [tiny_docker_task.stand_in.image, "swebench/sweb.eval.x86_64.pallets_1776_flask-90005:latest"]
    pulled = subprocess.run([sys.executable, "-m", "takeover", "tasks", "images", "--dataset", str(dataset),
                             "--instance-id", task.instance_id, "--pull", "--json"],
                            capture_output=True, text=True, timeout=300, check=False)
    assert pulled.returncode == 0 and [json.loads(line)["id"] for line in pulled.stdout.splitlines()] == [
        tiny_docker_task.stand_in.image_id]
    missing = subprocess.run([sys.executable, "-m", "takeover", "tasks", "images", "--dataset", str(dataset),
                              "--pull"], capture_output=True, text=True, timeout=300, check=False)
    assert missing.returncode == 1 and "flask-90005:latest  error: image" in missing.stdout
    assert "cannot be pulled" in missing.stdout


def test_a_pid_taken_by_a_later_process_does_not_keep_a_container(tiny_docker_task, client, tmp_path):
    plain, created = client
    labels = container_labels("agent run", tmp_path / "run")
    assert labels[PID_STARTED]  # this process's start time, from /proc
    mine = _start(plain, created, tiny_docker_task.stand_in.image, labels)
    # the same pid, but a process that started at another time: the run that made it is gone
    reused = _start(plain, created, tiny_docker_task.stand_in.image, {**labels, PID_STARTED: "1"})
    assert {s.id for s in stale_containers(tmp_path)} == {reused}
    assert mine not in {s.id for s in stale_containers(tmp_path)}


def test_the_scan_never_fails_on_a_container_removed_meanwhile(tiny_docker_task, client, tmp_path):
    """Other units and other sessions start and remove labelled containers while a unit scans; listing and then
    inspecting each container raised "404 No such container" for one removed in between."""
    plain, _ = client
    labels = {**container_labels("agent run", tmp_path / "others"), PID: str(_dead_pid())}
    stop = threading.Event()
    churned = []

    def churn():
        while not stop.is_set():
            container = plain.containers.create(tiny_docker_task.stand_in.image, ["true"], labels=labels)
            plain.api.remove_container(container.id, force=True)
            churned.append(container.id)

    workers = [threading.Thread(target=churn) for _ in range(3)]
    for worker in workers:
        worker.start()
    try:
        scans = [stale_containers(tmp_path / "mine") for _ in range(40)]
    finally:
        stop.set()
        for worker in workers:
            worker.join(timeout=120)
    assert scans == [[]] * 40 and len(churned) > 3
