"""Snapshots: tree ids of the whole working tree (untracked in, ignored out, user's index untouched) and
per-file cumulative diffs that ``git apply`` back exactly."""

from __future__ import annotations

import subprocess

from conftest import git, make_repo

from takeover._util.patches import first_difference
from takeover.repository_states.snapshots import (
    EMPTY_TREE,
    join_diffs,
    patch_bytes,
    patch_sha256,
    snapshot_diff,
    snapshot_patch,
    take_snapshot,
)


def _repo(tmp_path):
    return make_repo(tmp_path / "repo", {"pkg/mod.py": "a = 1\n", "README": "hi\n", ".gitignore": "*.log\nbuild/\n"})


def test_snapshot_of_a_clean_checkout_is_heads_tree(tmp_path):
    repo, sha = _repo(tmp_path)
    assert take_snapshot(repo) == git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert snapshot_diff(repo, sha, take_snapshot(repo)) == {}


def test_untracked_files_are_in_ignored_files_are_out_and_the_index_is_untouched(tmp_path):
    repo, sha = _repo(tmp_path)
    git(repo, "add", "README")  # something the user staged... nothing, README is unchanged
    (repo / "pkg/mod.py").write_text("a = 2\n")
    (repo / "new.py").write_text("print(1)\n")
    (repo / "run.log").write_text("ignored\n")
    (repo / "build").mkdir()
    (repo / "build/out.txt").write_text("ignored\n")
    before_status = git(repo, "status", "--porcelain")
    tree = take_snapshot(repo)
    diffs = snapshot_diff(repo, sha, tree)
    assert sorted(diffs) == ["new.py", "pkg/mod.py"]
    assert "+print(1)" in diffs["new.py"] and "-a = 1\n+a = 2" in diffs["pkg/mod.py"]
    # The user's index and status are exactly as before; the snapshot index lives in .git.
    assert git(repo, "status", "--porcelain") == before_status
    assert git(repo, "diff", "--cached", "--name-only") == ""
    assert (repo / ".git" / "takeover-snapshot.index").exists()


def test_snapshots_are_content_addresses(tmp_path):
    repo, sha = _repo(tmp_path)
    t0 = take_snapshot(repo)
    (repo / "pkg/mod.py").write_text("a = 2\n")
    t1 = take_snapshot(repo)
    assert t1 != t0
    (repo / "pkg/mod.py").write_text("a = 1\n")  # back to the base content
    assert take_snapshot(repo) == t0
    (repo / "pkg/mod.py").unlink()
    t2 = take_snapshot(repo)
    assert list(snapshot_diff(repo, sha, t2)) == ["pkg/mod.py"]
    assert "deleted file mode" in snapshot_diff(repo, sha, t2)["pkg/mod.py"]


def test_git_add_and_commit_by_the_agent_do_not_break_later_snapshots(tmp_path):
    repo, sha = _repo(tmp_path)
    (repo / "pkg/mod.py").write_text("a = 2\n")
    (repo / "x.py").write_text("x\n")
    t1 = take_snapshot(repo)
    # mini-swe-agent's submission command, then even a commit: the working tree is what counts.
    subprocess.run("git add -A && git diff --cached", shell=True, cwd=repo, check=True, capture_output=True)
    assert take_snapshot(repo) == t1
    git(repo, "commit", "-q", "-m", "agent commit")
    assert take_snapshot(repo) == t1
    assert sorted(snapshot_diff(repo, sha, t1)) == ["pkg/mod.py", "x.py"]


def test_patch_with_binary_and_non_utf8_files_applies_back_exactly(tmp_path):
    repo, sha = _repo(tmp_path)
    (repo / "data.bin").write_bytes(b"\x00\x01\x02binary\xff" * 10)
    (repo / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (repo / "pkg/mod.py").write_text("a = 3\n")
    tree = take_snapshot(repo)
    patch = snapshot_patch(repo, sha, tree)
    diffs = snapshot_diff(repo, sha, tree)
    assert sorted(diffs) == ["data.bin", "latin1.txt", "pkg/mod.py"]
    assert "GIT binary patch" in diffs["data.bin"]
    assert join_diffs(diffs) == patch
    # Apply onto a fresh checkout: the snapshot there is the same tree.
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", str(repo), str(fresh))
    git(fresh, "checkout", "-q", sha)
    subprocess.run(["git", "apply", "--binary", "-"], cwd=fresh, input=patch_bytes(patch), check=True)
    assert take_snapshot(fresh) == tree
    assert first_difference(snapshot_patch(fresh, sha, take_snapshot(fresh)), patch) is None
    assert len(patch_sha256(patch)) == 64


def test_repository_without_commits(tmp_path):
    repo = tmp_path / "empty"
    repo.mkdir()
    git(repo, "init", "-q")
    assert take_snapshot(repo) == EMPTY_TREE
    (repo / "a.py").write_text("1\n")
    tree = take_snapshot(repo)
    assert list(snapshot_diff(repo, EMPTY_TREE, tree)) == ["a.py"]


def _fast_import_blobs(repo, count: int) -> None:
    """Commit ``count`` small files at once (git fast-import), so the repository holds many objects."""
    lines = ["commit refs/heads/bulk", "committer T <t@example.com> 0 +0000", "data 4", "bulk"]
    for i in range(count):
        text = f"{i}\n"
        lines += [f"M 100644 inline bulk/{i}", f"data {len(text)}", text.rstrip("\n")]
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input="\n".join(lines) + "\n", text=True, check=True)


def test_the_same_change_has_the_same_patch_in_any_repository_and_any_git_configuration(tmp_path, monkeypatch):
    files = {"pkg/mod.py": "def f():\n    return 1\n\n\ndef g():\n    return 1\n"}
    small, small_sha = make_repo(tmp_path / "small", files)
    large, large_sha = make_repo(tmp_path / "large", files)
    _fast_import_blobs(large, 17000)  # above 16384 objects git abbreviates object ids to 8 characters
    assert len(git(large, "rev-parse", "--short", "HEAD").strip()) > len(git(small, "rev-parse", "--short", "HEAD").strip())
    # A user whose git configuration changes every default of the diff output.
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[core]\n\tabbrev = 12\n\tquotePath = true\n[diff]\n\tnoprefix = true\n\tmnemonicPrefix = true\n"
        "\tcontext = 7\n\tinterHunkContext = 9\n\talgorithm = histogram\n\tindentHeuristic = false\n"
        "\trenames = copies\n[color]\n\tui = always\n")
    monkeypatch.setenv("HOME", str(home))
    patches = []
    for repo, sha in ((small, small_sha), (large, large_sha)):
        (repo / "pkg/mod.py").write_text("def f():\n    return 2\n\n\ndef g():\n    return 3\n")
        (repo / "new file.py").write_text("x = 1\n")
        patches.append(snapshot_patch(repo, sha, take_snapshot(repo)))
    assert patches[0] == patches[1]
    assert patch_sha256(patches[0]) == patch_sha256(patches[1])
    blob = git(small, "rev-parse", f"{small_sha}:pkg/mod.py").strip()
    assert f"index {blob}.." in patches[0]  # full 40-character ids
    assert '+++ b/new file.py' in patches[0] and "@@ -1,6 +1,6 @@" in patches[0]  # a/ b/, 3 lines of context
    assert "\x1b[" not in patches[0]


def test_generated_output_is_left_out_only_when_the_diff_creates_the_file():
    from takeover.repository_states.snapshots import is_new_file, without_generated

    created = ("diff --git a/build/x.txt b/build/x.txt\nnew file mode 100644\nindex 0000000..e69de29\n"
               "--- /dev/null\n+++ b/build/x.txt\n@@ -0,0 +1 @@\n+x\n")
    changed = ("diff --git a/build/y.txt b/build/y.txt\nindex e69de29..587be6b 100644\n--- a/build/y.txt\n"
               "+++ b/build/y.txt\n@@ -1 +1 @@\n-x\n+new file mode 100644\n")
    assert is_new_file(created) and is_new_file("new file mode 100644\n")
    assert not is_new_file(changed)  # the words in a hunk are content, not the header
    source = created.replace("build/x.txt", "pkg/x.py")
    kept, left_out = without_generated({"build/x.txt": created, "build/y.txt": changed, "pkg/x.py": source})
    assert (sorted(kept), left_out) == (["build/y.txt", "pkg/x.py"], ["build/x.txt"])
