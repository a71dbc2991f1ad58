"""Grading a real SWE-bench instance on the local backend (needs TAKEOVER_MIRROR; the first run builds the
environment from PyPI into the takeover cache, later runs reuse it)."""

from __future__ import annotations

import pytest
from prerequisites import requires, shared

from takeover.grading import grade
from takeover.grading_settings import GradingSettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import load_tasks

# The first run builds the environment from PyPI: longer than the suite's 600 s guard per test.
pytestmark = [pytest.mark.mirror, pytest.mark.slow, pytest.mark.timeout(1800),
              requires("mirror", counterpart="test_grading.py::test_gold_resolves_and_empty_does_not")]

INSTANCE = "pytest-dev__pytest-5631"


@pytest.fixture
def real_task(mirror_dir):
    tasks = {t.instance_id: t for t in load_tasks(shared("swebench_verified.jsonl"))}
    return tasks[INSTANCE], RepoSource(mirror_dir, offline=True)


def test_gold_resolves_and_empty_does_not_on_a_real_instance(real_task, tmp_path):
    task, source = real_task
    gold = grade(task, task.patch, grading=GradingSettings(timeout=900), repo_source=source, log_dir=tmp_path / "logs", model_name_or_path="gold")
    assert gold.error is None, gold.error
    assert gold.resolved and gold.handoff_state == "resolved_preserve"
    assert gold.FAIL_TO_PASS.success == task.FAIL_TO_PASS
    assert sorted(gold.PASS_TO_PASS.success) == sorted(task.PASS_TO_PASS)

    empty = grade(task, "", grading=GradingSettings(timeout=900), repo_source=source, log_dir=tmp_path / "logs", model_name_or_path="empty")
    assert empty.error is None, empty.error
    assert empty.env_cached  # the second grading of the same (repo, version) reuses the environment
    assert not empty.resolved and empty.handoff_state == "needs_completion"
    assert empty.FAIL_TO_PASS.failure == task.FAIL_TO_PASS
