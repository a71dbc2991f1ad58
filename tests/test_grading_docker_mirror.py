"""The docker grading backend on real SWE-bench instances of two repositories, in stand-ins of their official
images (tests/docker_images.py), without network: gold resolves, empty does not, and every FAIL_TO_PASS and
PASS_TO_PASS status equals the local backend's. Needs TAKEOVER_MIRROR (the stand-in clones from it and the
grading reads the requirement files there); the first session builds each stand-in (minutes), later ones
import the cached root."""

from __future__ import annotations

import pytest
from docker_images import stand_in_image
from prerequisites import requires, shared

from takeover.grading import grade
from takeover.grading_settings import GradingSettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import load_tasks

pytestmark = [pytest.mark.mirror, pytest.mark.slow, pytest.mark.timeout(3600),
              requires("docker daemon", "debootstrap", "mirror", counterpart="test_grading_docker_daemon.py::"
                       "test_gold_resolves_empty_does_not_and_every_status_equals_the_local_backend")]


def statuses(result) -> dict[str, str]:
    out = {}
    for outcome in (result.FAIL_TO_PASS, result.PASS_TO_PASS):
        out.update({t: "pass" for t in outcome.success} | {t: "fail" for t in outcome.failure})
    return out


@pytest.mark.parametrize("instance_id", ["pallets__flask-5014", "pytest-dev__pytest-7521"])
def test_gold_resolves_empty_does_not_and_statuses_equal_the_local_backend(instance_id, mirror_dir, tmp_path,
                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)  # the harness writes logs/run_evaluation under the current folder
    task = {t.instance_id: t for t in load_tasks(shared("swebench_verified.jsonl"))}[instance_id]
    source = RepoSource(mirror_dir, offline=True)
    stand_in = stand_in_image(task, source)
    results = {}
    for backend in ("docker", "local"):
        for name, patch in (("gold", task.patch), ("empty", "")):
            results[backend, name] = grade(task, patch, grading=GradingSettings(backend=backend, timeout=900), repo_source=source, log_dir=tmp_path / backend, model_name_or_path=name)
    for (backend, name), result in results.items():
        assert result.error is None, (backend, name, result.error)
        assert result.resolved is (name == "gold"), (backend, name)
    assert set(statuses(results["docker", "gold"])) == set(task.FAIL_TO_PASS) | set(task.PASS_TO_PASS)
    assert statuses(results["docker", "gold"]) == statuses(results["local", "gold"])
    assert statuses(results["docker", "empty"]) == statuses(results["local", "empty"])
    assert results["docker", "gold"].image_id == stand_in.image_id
