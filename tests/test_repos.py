"""Workspaces are fresh checkouts that share the mirror's objects and never write into the mirror."""

from __future__ import annotations

import os

import pytest
from conftest import git, make_repo

from takeover.errors import RepositoryUnavailable
from takeover.sources.repos import RepoSource


def _tree_state(path):
    out = []
    for root, _dirs, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            st = os.stat(p)
            out.append((p, st.st_size, st.st_mtime_ns))
    return sorted(out)


def test_workspace_checks_out_base_commit_without_touching_mirror(tmp_path):
    src, first = make_repo(tmp_path / "src", {"pkg/a.py": "x = 1\n"}, bare_mirror=None)
    (src / "pkg/a.py").write_text("x = 2\n")
    git(src, "commit", "-qam", "second")
    mirror = tmp_path / "mirror"
    git(tmp_path, "clone", "-q", "--bare", str(src), str(mirror / "acme__widget.git"))
    before = _tree_state(mirror)

    ws = RepoSource(mirror, offline=True).workspace("acme/widget", first, tmp_path / "ws")

    assert (ws / "pkg/a.py").read_text() == "x = 1\n"
    assert git(ws, "rev-parse", "HEAD").strip() == first
    assert git(ws, "remote").strip() == ""
    assert (ws / ".git/objects/info/alternates").exists()  # shared objects, no copied history
    assert _tree_state(mirror) == before


def test_missing_repository_names_the_mirror(tmp_path):
    (tmp_path / "mirror").mkdir()
    with pytest.raises(RepositoryUnavailable, match="acme__gone.git"):
        RepoSource(tmp_path / "mirror", offline=True).workspace("acme/gone", "0" * 40, tmp_path / "ws")


def test_nonempty_destination_is_refused(tmp_path):
    _src, sha = make_repo(tmp_path / "src", {"a.py": ""}, bare_mirror=tmp_path / "m" / "o__r.git")
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        RepoSource(tmp_path / "m", offline=True).workspace("o/r", sha, tmp_path / "ws")
    assert (tmp_path / "ws" / "keep.txt").read_text() == "mine"


def test_alternates_is_the_one_reader_of_a_shared_workspace_and_agent_runs_use_it(tmp_path):
    from takeover.agents import local_commands, runs
    from takeover.sources.repos import alternates

    _src, sha = make_repo(tmp_path / "src", {"a.py": ""}, bare_mirror=tmp_path / "m" / "o__r.git")
    ws = RepoSource(tmp_path / "m", offline=True).workspace("o/r", sha, tmp_path / "ws")
    from takeover.sources.frozen_history import store_path
    from takeover.sources.repos import cache_dir

    objects = (tmp_path / "m" / "o__r.git" / "objects").resolve()
    frozen = (store_path("o/r", sha, cache_dir()) / "objects").resolve()
    assert alternates(ws) == [frozen]  # the frozen store's, never the mirror's
    info = ws / ".git" / "objects" / "info" / "alternates"
    # A comment, a relative path, a folder that does not exist and an undecodable byte are all tolerated.
    info.write_bytes(info.read_bytes() + b"# borrowed\n../../../m/o__r.git/objects\n/gone/objects\n/caf\xe9\n")
    assert alternates(ws) == [frozen, objects]
    assert alternates(tmp_path / "src") == []  # a repository with its own objects
    # Agent runs let their sandbox read exactly these folders; there is no second reader to drift apart.
    assert runs.alternates is alternates and not hasattr(local_commands, "git_alternates")
