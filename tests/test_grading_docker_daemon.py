"""The docker grading backend on a real Docker daemon: swebench's harness on the task's instance image
(a stand-in built by the tests, tests/docker_images.py), without network. Gold resolves, empty does not,
every per-test status equals the local backend's, on small tasks of two repositories (pallets/flask and
psf/requests specifications, no mirror needed); the image's content id is part of the key (a changed
image is graded again, both ways); reuse and --force as for the local backend; faults are one line."""

from __future__ import annotations

import json
import subprocess
import sys

import docker
import pytest
from docker_images import REQUESTS_INSTANCE, TINY_F2P, TINY_INSTANCE, private_instance
from prerequisites import requires

from takeover._util import harness_version
from takeover.grading import grade
from takeover.grading_settings import GradingSettings

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800), requires("docker daemon", "debootstrap")]


@pytest.fixture(autouse=True)
def _harness_logs_in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may land here: the harness's logs go inside log_dir
    yield
    assert not (tmp_path / "logs" / "run_evaluation").exists()

# a patch of a file the repository does not have: neither git apply nor patch --fuzz can apply it
BROKEN_PATCH = "diff --git a/src/nope.py b/src/nope.py\n--- a/src/nope.py\n+++ b/src/nope.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def statuses(result) -> dict[str, str]:
    """``{test: "pass"|"fail"}`` of a result's FAIL_TO_PASS and PASS_TO_PASS tests."""
    out = {}
    for outcome in (result.FAIL_TO_PASS, result.PASS_TO_PASS):
        out.update({t: "pass" for t in outcome.success} | {t: "fail" for t in outcome.failure})
    return out


@pytest.mark.parametrize("docker_task", [pytest.param("tiny_docker_task", id=TINY_INSTANCE),
                                         pytest.param("requests_docker_task", id=REQUESTS_INSTANCE)])
def test_gold_resolves_empty_does_not_and_every_status_equals_the_local_backend(docker_task, request, tmp_path):
    made = request.getfixturevalue(docker_task)
    task, source, stand_in = made.task, made.source, made.stand_in
    logs = tmp_path / "logs"
    gold = grade(task, task.patch, grading=GradingSettings(backend="docker"), repo_source=source, log_dir=logs, model_name_or_path="gold")
    empty = grade(task, "", grading=GradingSettings(backend="docker"), repo_source=source, log_dir=logs, model_name_or_path="empty")
    assert gold.error is None and gold.resolved and gold.handoff_state == "resolved_preserve"
    assert empty.error is None and not empty.resolved and empty.handoff_state == "needs_completion"
    assert statuses(gold) == {test: "pass" for test in task.FAIL_TO_PASS + task.PASS_TO_PASS}
    assert statuses(empty) == {test: "fail" for test in task.FAIL_TO_PASS} | {test: "pass" for test in task.PASS_TO_PASS}
    # every grading under a recorded hash seed, a variable of the harness's container; the failing empty patch was
    # graded again under a second seed (into seed-<N>/) and failed the same way: not flaky
    assert f"PYTHONHASHSEED={gold.hash_seed}" in " ".join(gold.notes) and gold.hash_seeds == [gold.hash_seed]
    assert len(empty.hash_seeds) == 2 and empty.flaky is None
    assert (logs / "empty" / task.instance_id / f"seed-{empty.hash_seeds[1]}" / "test_output.txt").is_file()
    local_gold = grade(task, task.patch, repo_source=source, log_dir=tmp_path / "local", model_name_or_path="gold")
    local_empty = grade(task, "", repo_source=source, log_dir=tmp_path / "local", model_name_or_path="empty")
    assert statuses(local_gold) == statuses(gold) and statuses(local_empty) == statuses(empty)
    # the image, measured: its name and content id are in the result and the key; no network in this daemon
    saved = json.loads((logs / "gold" / task.instance_id / "result.json").read_text())
    assert saved["image"] == stand_in.image and saved["image_id"] == stand_in.image_id
    assert saved["grading_key"]["image_id"] == stand_in.image_id and saved["network"] is False
    assert gold.test_seconds > 0 and (logs / "gold" / task.instance_id / "report.json").exists()
    assert not [c for c in docker.from_env().containers.list(all=True, ignore_removed=True)
                if c.labels.get("org.takeover.out-dir", "").startswith(str(tmp_path))]

    again = grade(task, task.patch, grading=GradingSettings(backend="docker"), repo_source=source, log_dir=logs, model_name_or_path="gold")
    assert again.reused and again.resolved and again.graded_at == gold.graded_at
    forced = grade(task, task.patch, grading=GradingSettings(backend="docker"), repo_source=source, log_dir=logs, model_name_or_path="gold", force=True)
    assert not forced.reused and forced.resolved and "--force" in forced.reuse_note


@pytest.fixture
def private_name(tiny_docker_task):
    """The small task under an instance id and image name of this test's own (it retags that name, never the
    stand-in's own, which other tests and sessions grade with at the same moment)."""
    with private_instance(tiny_docker_task) as made:
        yield made


def test_a_changed_image_under_the_same_name_is_graded_again_both_ways(tiny_docker_task, private_name, tmp_path):
    (task, name), source, stand_in = private_name, tiny_docker_task.source, tiny_docker_task.stand_in
    client = docker.from_env()
    logs = tmp_path / "logs"
    first = grade(task, task.patch, grading=GradingSettings(backend="docker"), repo_source=source, log_dir=logs)
    assert first.resolved and first.image_id == stand_in.image_id
    # a broken image under the same name: its test runner is gone
    container = client.containers.create(stand_in.image_id, ["rm", "/opt/miniconda3/envs/testbed/bin/pytest"])
    container.start()
    container.wait()
    broken = container.commit(repository=name.rsplit(":", 1)[0], tag="latest")
    container.remove()
    try:
        bad = grade(task, task.patch, grading=GradingSettings(backend="docker"), repo_source=source, log_dir=logs)
        assert not bad.reused and not bad.resolved and bad.image_id == broken.id
        assert "the image changed" in bad.reuse_note
        client.images.get(stand_in.image_id).tag(name)  # the fixed image again
        good = grade(task, task.patch, grading=GradingSettings(backend="docker"), repo_source=source, log_dir=logs)
        assert not good.reused and good.resolved and good.image_id == stand_in.image_id
        assert "the image changed" in good.reuse_note
    finally:
        client.images.get(stand_in.image_id).tag(name)
        client.images.remove(broken.id)  # never forced: no container of it is left, and no other name has it


def test_faults_are_one_line_each(tiny_docker_task, tmp_path):
    task, source = tiny_docker_task.task, tiny_docker_task.source
    logs = tmp_path / "logs"
    invalid = grade(task, BROKEN_PATCH, grading=GradingSettings(backend="docker"), repo_source=source, log_dir=logs, model_name_or_path="bad")
    assert invalid.error is None and not invalid.applied and invalid.handoff_state == "invalid"
    assert invalid.test_seconds == 0 and "patch" in invalid.apply_error  # no test ran: no test time

    missing_task = task.model_copy(update={"instance_id": "pallets__flask-90004"})
    missing = grade(missing_task, task.patch, grading=GradingSettings(backend="docker"), repo_source=source, log_dir=logs)
    assert missing.handoff_state is None and "\n" not in missing.error
    assert "swebench/sweb.eval.x86_64.pallets_1776_flask-90004:latest" in missing.error
    assert "cannot be pulled" in missing.error and "docker pull" in missing.error

    elsewhere = task.model_copy(update={"environment_setup_commit": "e" * 40})  # not in the mirror
    unreadable = grade(elsewhere, task.patch, grading=GradingSettings(backend="docker"), repo_source=source, log_dir=logs)
    if harness_version.keeps_repo_specs():  # swebench 4.1's TestSpec holds the environment script: files are read
        assert "\n" not in unreadable.error and "requirements/dev.txt" in unreadable.error
    else:  # swebench 5.x grades with the image and the eval script alone
        assert unreadable.error is None and unreadable.resolved


def test_cli_grades_with_a_one_second_limit_and_says_so(tiny_docker_task, tmp_path):
    task, source = tiny_docker_task.task, tiny_docker_task.source
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    # The reference fix with a conftest that holds the test run for 30 s: over the limit however fast the machine.
    slow = tmp_path / "slow.diff"
    slow.write_text(task.patch + "diff --git a/tests/conftest.py b/tests/conftest.py\nnew file mode 100644\n"
                    "--- /dev/null\n+++ b/tests/conftest.py\n@@ -0,0 +1,2 @@\n+import time\n+time.sleep(30)\n")
    done = subprocess.run(
        [sys.executable, "-m", "takeover", "grade", "--dataset", str(dataset), "--instance-id", task.instance_id,
         "--patch", str(slow), "--backend", "docker", "--mirror", str(source.mirror), "--offline", "--grading-timeout", "1",
         "--out-dir", str(tmp_path / "logs"), "--json"], capture_output=True, text=True, timeout=900, check=False,
        cwd=tmp_path)
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout[:2000] + done.stderr[-2000:]
    record = json.loads(lines[0])
    assert record["timed_out"] and not record["resolved"] and record["handoff_state"] == "needs_completion"
    assert record["FAIL_TO_PASS"]["failure"] == TINY_F2P and record["image"].endswith("pallets_1776_flask-90001:latest")
    assert "Traceback" not in done.stderr
