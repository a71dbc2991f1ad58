"""Repository states of docs/protocol.md section 5.2 at their edges: the read-only worktree patch equals
the snapshot's, the pinned diff format holds whatever the user's git configuration and environment say,
and git failures are errors that name the folder."""

from __future__ import annotations

import hashlib
import subprocess

import pytest
from conftest import git, make_repo

from takeover.repository_states.snapshots import (
    EMPTY_TREE,
    SnapshotError,
    git_dir,
    patch_sha256,
    snapshot_diff,
    snapshot_patch,
    take_snapshot,
    untracked_files,
    worktree_patch,
)

BASE = {"pkg/mod.py": "a = 1\n", "pkg/old.py": "old\n", "README": "hi\n", ".gitignore": "*.log\nbuild/\n"}


def _state(repo) -> None:
    """Every kind of change: modified, deleted, untracked in a new folder, binary, not UTF-8, a name
    with a space and one outside ASCII, and ignored files."""
    (repo / "pkg/mod.py").write_text("a = 2\n")
    (repo / "pkg/old.py").unlink()
    (repo / "new" / "deep").mkdir(parents=True)
    (repo / "new/deep/x.py").write_text("x = 1\n")
    (repo / "data.bin").write_bytes(b"\x00\x01binary\xff")
    (repo / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (repo / "with space.py").write_text("s = 1\n")
    (repo / "café.py").write_text("c = 1\n")
    (repo / "run.log").write_text("ignored\n")
    (repo / "build").mkdir()
    (repo / "build/out.txt").write_text("ignored\n")


def _git_files(repo) -> dict[str, bytes]:
    """Every file under .git with its content, to see that nothing was written."""
    root = repo / ".git"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_worktree_patch_is_the_snapshot_patch_and_writes_nothing(tmp_path):
    repo, sha = make_repo(tmp_path / "repo", BASE)
    _state(repo)
    before = _git_files(repo)
    patch = worktree_patch(repo, sha)
    assert _git_files(repo) == before  # no index, no objects, no refresh
    assert untracked_files(repo) == ["café.py", "data.bin", "latin1.txt", "new/deep/x.py", "with space.py"]
    assert patch == snapshot_patch(repo, sha, take_snapshot(repo))
    files = sorted(snapshot_diff(repo, sha, take_snapshot(repo)))
    assert files == ["café.py", "data.bin", "latin1.txt", "new/deep/x.py", "pkg/mod.py", "pkg/old.py", "with space.py"]
    # paths unquoted, a/ and b/ prefixes, binary patches
    assert "diff --git a/café.py b/café.py\n" in patch and "diff --git a/with space.py b/with space.py\n" in patch
    assert "GIT binary patch" in patch
    assert patch_sha256(patch) == hashlib.sha256(patch.encode("utf-8", "surrogateescape")).hexdigest()


def test_the_diff_format_ignores_the_users_git_configuration_and_environment(tmp_path, monkeypatch):
    repo, sha = make_repo(tmp_path / "repo", BASE)
    _state(repo)
    plain_worktree, plain_snapshot = worktree_patch(repo, sha), snapshot_patch(repo, sha, take_snapshot(repo))
    for key, value in (("diff.noprefix", "true"), ("diff.mnemonicPrefix", "true"), ("core.quotePath", "true"),
                       ("color.ui", "always"), ("color.diff", "always"), ("diff.relative", "true"),
                       ("diff.renames", "copies"), ("diff.external", "false"), ("core.autocrlf", "true")):
        git(repo, "config", key, value)
    # a caller's git environment (another repository, another index) must not leak in
    other, _ = make_repo(tmp_path / "other", {"z.py": "z\n"})
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    assert worktree_patch(repo, sha) == plain_worktree
    assert snapshot_patch(repo, sha, take_snapshot(repo)) == plain_snapshot


def test_a_second_snapshot_of_an_unchanged_tree_is_the_same_tree(tmp_path):
    repo, sha = make_repo(tmp_path / "repo", BASE)
    assert take_snapshot(repo) == git(repo, "rev-parse", f"{sha}^{{tree}}").strip()
    (repo / "n.py").write_text("n = 1\n")
    first = take_snapshot(repo)
    assert take_snapshot(repo) == first
    # the tree is a real object of the workspace, listing exactly the working tree's files
    listed = git(repo, "ls-tree", "-r", "--name-only", first).split()
    assert listed == sorted([".gitignore", "README", "n.py", "pkg/mod.py", "pkg/old.py"])
    (repo / "n.py").write_text("n = 22\n")
    assert take_snapshot(repo) not in (first, EMPTY_TREE)


def test_a_repository_without_commits_diffs_against_the_empty_tree(tmp_path):
    repo = tmp_path / "empty"
    repo.mkdir()
    git(repo, "init", "-q")
    assert take_snapshot(repo) == EMPTY_TREE and worktree_patch(repo, EMPTY_TREE) == ""
    (repo / "a.py").write_text("1\n")
    assert worktree_patch(repo, EMPTY_TREE) == snapshot_patch(repo, EMPTY_TREE, take_snapshot(repo))
    assert "new file mode 100644" in worktree_patch(repo, EMPTY_TREE)


def test_git_dir_of_a_checkout_a_linked_worktree_and_a_bare_repository(tmp_path):
    repo, _ = make_repo(tmp_path / "repo", BASE, bare_mirror=tmp_path / "bare.git")
    assert git_dir(repo) == (repo / ".git").resolve()
    assert git_dir(tmp_path / "bare.git") == (tmp_path / "bare.git").resolve()
    git(repo, "worktree", "add", "-q", str(tmp_path / "linked"))
    linked = git_dir(tmp_path / "linked")
    assert linked.parent == (repo / ".git" / "worktrees").resolve()
    (tmp_path / "linked" / "w.py").write_text("w\n")
    assert "w.py" in snapshot_diff(tmp_path / "linked", "HEAD", take_snapshot(tmp_path / "linked"))


def test_git_failures_are_snapshot_errors_naming_the_folder(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    ceiling = {"GIT_CEILING_DIRECTORIES": str(tmp_path)}  # do not find a repository above tmp_path
    with pytest.MonkeyPatch.context() as mp:
        for k, v in ceiling.items():
            mp.setenv(k, v)
        for call in (lambda: take_snapshot(plain), lambda: untracked_files(plain), lambda: git_dir(plain)):
            with pytest.raises(SnapshotError, match=str(plain)):
                call()
    repo, _ = make_repo(tmp_path / "repo", BASE)
    with pytest.raises(SnapshotError, match="failed"):
        worktree_patch(repo, "0" * 40)


def test_snapshots_never_touch_the_users_index(tmp_path):
    repo, _ = make_repo(tmp_path / "repo", BASE)
    (repo / "pkg/mod.py").write_text("a = 5\n")
    git(repo, "add", "pkg/mod.py")  # the user staged this
    staged = git(repo, "diff", "--cached")
    (repo / "t.py").write_text("t\n")
    take_snapshot(repo)
    assert git(repo, "diff", "--cached") == staged
    assert subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout == "M  pkg/mod.py\n?? t.py\n"


def test_a_tracked_file_that_matches_gitignore_stays_in_the_state(tmp_path):
    """git add -A never adds an ignored file, but one the base commit tracks is part of the working tree:
    the first snapshot starts from HEAD's tree, so it keeps it."""
    repo, sha = make_repo(tmp_path / "repo", BASE)
    (repo / "kept.log").write_text("tracked although ignored\n")
    git(repo, "add", "-f", "kept.log")
    git(repo, "commit", "-q", "-m", "a tracked log")
    head = git(repo, "rev-parse", "HEAD").strip()
    assert take_snapshot(repo) == git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert worktree_patch(repo, head) == ""
    (repo / "kept.log").write_text("changed\n")
    assert list(snapshot_diff(repo, head, take_snapshot(repo))) == ["kept.log"]
    assert list(snapshot_diff(repo, sha, take_snapshot(repo))) == ["kept.log"]
