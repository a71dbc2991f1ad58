"""The real case of a verdict that flips: the reference patch of sympy__sympy-13091 graded locally (needs
TAKEOVER_MIRROR) under seeds that made its PASS_TO_PASS test_bug_sqrt end in a RecursionError inside sympy's
assumption system. Whatever happens, it is resolved or flaky, never a plain "unresolved"."""

from __future__ import annotations

from pathlib import Path

import pytest
from prerequisites import requires, shared

from takeover.grading import grade
from takeover.grading_settings import GradingSettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import load_tasks

pytestmark = [pytest.mark.mirror, pytest.mark.slow, pytest.mark.timeout(1800),
              requires("mirror", counterpart="test_grading_seeds.py::"
                                             "test_a_test_that_fails_under_every_other_seed_is_flaky_not_failed")]

INSTANCE = "sympy__sympy-13091"
# Seeds under which test_bug_sqrt failed on this machine (123456 and 98765 among 12 tried; 1535730572 in the
# run that showed the problem). Under a fixed seed it does not fail every time either: something else decides
# the recursion's depth too, so the test asserts the rule, not a failure.
SEEDS = (123456, 98765, 1535730572)


def test_the_reference_patch_of_sympy_13091_is_never_unresolved_without_the_flaky_mark(mirror_dir, tmp_path):
    task = {t.instance_id: t for t in load_tasks(shared("swebench_verified.jsonl"))}[INSTANCE]
    for seed in SEEDS:
        result = grade(task, task.patch, grading=GradingSettings(timeout=900, hash_seed=seed), repo_source=RepoSource(mirror_dir, offline=True), log_dir=tmp_path / str(seed), model_name_or_path="gold")
        assert result.error is None, result.error
        log = Path(result.log_path).read_text()
        assert f"hash randomization: on (PYTHONHASHSEED={seed})" in log  # sympy's runner took the seed given
        assert result.resolved or result.flaky is not None, (seed, result.hash_seeds, result.PASS_TO_PASS.failure)
        if result.flaky is not None:
            assert result.flaky.flipped == ["test_bug_sqrt"] and result.flaky.resolved[0] is False
