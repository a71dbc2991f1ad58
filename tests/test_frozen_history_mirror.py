"""Frozen stores at study scale on a real repository: twelve sympy tasks of SWE-bench Verified, their stores
made in ascending order of base commit in an empty cache (each borrowing all the earlier ones), every
reference patch graded resolved (needs TAKEOVER_MIRROR; builds sympy's environments from PyPI)."""

from __future__ import annotations

import json

import pytest
from prerequisites import requires, shared

from takeover.grading import grade
from takeover.grading_settings import GradingSettings
from takeover.sources.frozen_history import STORE_RECORD, alternates_depth, usable
from takeover.sources.repos import RepoSource, alternates
from takeover.sources.tasks import load_tasks

pytestmark = [pytest.mark.mirror, pytest.mark.slow, pytest.mark.timeout(7200),
              requires("mirror", counterpart="test_frozen_history.py::"
                       "test_stores_made_in_any_order_all_check_out_and_see_nothing_newer")]

#: Twelve sympy tasks from 2016 to 2022 with few PASS_TO_PASS tests, in ascending order of base commit;
#: sympy__sympy-20590 (on the 1.7 release branch) is the store that could not be checked out before;
#: each earlier base commit is an ancestor of the next, but for sympy__sympy-23950, which descends from
#: sympy__sympy-19495 and not from the 1.7 branch.
SYMPY = ["sympy__sympy-11618", "sympy__sympy-12481", "sympy__sympy-13031", "sympy__sympy-13852",
         "sympy__sympy-13974", "sympy__sympy-14711", "sympy__sympy-15349", "sympy__sympy-15809",
         "sympy__sympy-17318", "sympy__sympy-19495", "sympy__sympy-20590", "sympy__sympy-23950"]


def test_twelve_sympy_reference_patches_resolve_on_stores_made_in_order(mirror_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    tasks = {t.instance_id: t for t in load_tasks(shared("swebench_verified.jsonl"))}
    source = RepoSource(mirror_dir, offline=True)
    verdicts = {}
    for i, instance in enumerate(SYMPY):
        task = tasks[instance]
        ws = source.workspace(task.repo, task.base_commit, tmp_path / "ws" / instance)
        store = alternates(ws)[0].parent
        borrowed = len(json.loads((store / STORE_RECORD).read_text())["borrows"])
        assert usable(store) and borrowed == (10 if instance == "sympy__sympy-23950" else i)
        assert alternates_depth(ws / ".git" / "objects") == (2 if i else 1)
        result = grade(task, task.patch, grading=GradingSettings(timeout=1800), repo_source=source, log_dir=tmp_path / "logs", model_name_or_path="gold")
        verdicts[instance] = (result.resolved, result.error)
    assert verdicts == {instance: (True, None) for instance in SYMPY}
