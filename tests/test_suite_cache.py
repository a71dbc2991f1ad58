"""A run of the test suite writes nothing into the user's own takeover cache: the frozen stores of its small
repositories, the environments and gradings it makes go to a cache of the suite's own (``conftest.py``),
which borrows only what is built once for the machine (``prerequisites.BORROWED``) and is removed when the
session ends."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT, SUITE_CACHE
from prerequisites import BORROWED, USER_CACHE

from takeover.sources.repos import cache_dir


def test_the_suite_uses_a_cache_of_its_own_that_borrows_only_what_is_built_once():
    assert cache_dir() == SUITE_CACHE != USER_CACHE
    assert not SUITE_CACHE.is_relative_to(USER_CACHE) and not USER_CACHE.is_relative_to(SUITE_CACHE)
    links = sorted(p.name for p in SUITE_CACHE.iterdir() if p.is_symlink())
    assert links == sorted(n for n in BORROWED if (USER_CACHE / n).is_dir())
    assert all((SUITE_CACHE / n).resolve() == (USER_CACHE / n).resolve() for n in links)


def test_a_session_that_makes_frozen_stores_leaves_nothing_in_the_users_cache(tmp_path):
    """A session of its own, whose user's cache is an empty folder, runs a replay (a frozen store of its
    repository, a workspace) and a checkpoint: the folder is still empty afterwards, and so is no cache
    folder of that session left behind."""
    users = tmp_path / "users-cache"
    users.mkdir()
    before = {p.name for p in SUITE_CACHE.parent.glob("takeover-test-cache-*")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
         "tests/test_checkpoints.py::test_analyze_run_by_verified_replay",
         "tests/test_checkpoints.py::test_materialize_checkpoint_reproduces_the_patch"],
        cwd=ROOT, env={**os.environ, "TAKEOVER_CACHE": str(users)}, capture_output=True, text=True, timeout=600,
        check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 passed" in done.stdout
    assert list(users.rglob("*")) == []
    assert {p.name for p in SUITE_CACHE.parent.glob("takeover-test-cache-*")} <= before
