"""Content-addressed snapshots of a working tree and per-file diffs against base_commit: the exact
repository state after each event (docs/protocol.md section 5).

A *snapshot* is the git tree id of the whole working tree: tracked and untracked files, ignored files
excluded (``git add -A`` semantics, the same set mini-swe-agent's submission ``git add -A && git diff
--cached`` covers). It is built in a private index file (``GIT_INDEX_FILE``) kept inside the repository's
git directory, so the user's index is never touched, and because that index keeps stat information
between calls, each snapshot re-hashes only files that changed since the previous one (cost per event on
sympy: see ``benchmarks/bench_snapshots.py``). Tree objects are written to the workspace's own object
store; a workspace made with ``git clone --shared`` never writes into its mirror.

Diff text is decoded with ``surrogateescape`` so that files that are not valid UTF-8 round-trip exactly
(use :func:`patch_bytes` to write them).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from takeover._util.patches import split_patch
from takeover.errors import TakeoverError
from takeover.repository_states.file_classes import is_generated_output

SNAPSHOT_INDEX = "takeover-snapshot.index"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

# One output format whatever the repository's history or the user's git configuration (docs/protocol.md
# section 5): full object ids on ``index`` lines (git abbreviates them to a length that grows with the number
# of objects, so the same change would hash differently in a larger clone), three lines of context, the
# default algorithm with its indent heuristic, no renames, no external or text-converting drivers, and no
# attributes file of the user's.
_DIFF_ARGS = (
    "-c", "core.quotePath=false", "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false",
    "-c", "diff.relative=false", "-c", "core.autocrlf=false", "-c", "core.attributesFile=/dev/null",
    "-c", "diff.suppressBlankEmpty=false", "-c", "diff.orderFile=/dev/null", "-c", "core.abbrev=40",
    "diff", "--full-index", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames",
    "--unified=3", "--inter-hunk-context=0", "--diff-algorithm=myers", "--indent-heuristic",
    "--ignore-submodules=none", "--submodule=short", "--src-prefix=a/", "--dst-prefix=b/",
)


#: The same options for a git that runs elsewhere (an Inspect sandbox: :mod:`takeover.inspect_task.scoring`).
DIFF_ARGS: tuple[str, ...] = _DIFF_ARGS


class SnapshotError(TakeoverError, RuntimeError):
    """git failed while taking a snapshot or a diff (message has git's stderr): the CLI shows it in one line."""


def _git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"})
    if extra:
        env.update(extra)
    return env


def _run(args: list[str], cwd: Path | str, env: dict[str, str] | None = None, check: bool = True) -> bytes:
    proc = subprocess.run(["git", *args], check=False, cwd=cwd, env=env or _git_env(), capture_output=True)
    if check and proc.returncode != 0:
        raise SnapshotError(f"git {' '.join(args[:3])} in {cwd} failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def git_dir(workspace: Path | str) -> Path:
    """Absolute git directory of ``workspace`` (``.git`` for a checkout, the folder itself if bare)."""
    dot_git = Path(workspace) / ".git"
    if dot_git.is_dir():  # the common case, without a git process
        return dot_git.resolve()
    out = _run(["rev-parse", "--absolute-git-dir"], workspace).decode().strip()
    return Path(out)


def take_snapshot(workspace: Path | str) -> str:
    """Git tree id (40 hex) of the working tree of ``workspace``, untracked files included.

    Ignored files are excluded; the user's index, HEAD and refs are untouched. The first call seeds a
    private index from HEAD's tree (``git read-tree``); later calls reuse it, so a call costs one
    ``git add -A`` over unchanged stat data plus ``git write-tree``.

    Raises:
        SnapshotError: ``workspace`` is not a git checkout or git fails.
    """
    workspace = Path(workspace)
    index = git_dir(workspace) / SNAPSHOT_INDEX
    env = _git_env({"GIT_INDEX_FILE": str(index)})
    if not index.exists():
        has_head = _run(["rev-parse", "--verify", "--quiet", "HEAD^{tree}"], workspace, check=False)
        if has_head.strip():
            _run(["read-tree", "HEAD"], workspace, env)
    # core.fsmonitor off: replayed commands may run in a sandbox where a monitor daemon is unreachable.
    memo = index.with_name(SNAPSHOT_INDEX + ".tree")
    _run(["-c", "core.fsmonitor=false", "add", "-A", "--ignore-errors"], workspace, env)
    # git rewrites the index (a new file, renamed into place) only when an entry changed: an index with the
    # same identity as after the previous snapshot holds the same tree, and write-tree can be skipped.
    stamp = _stamp(index)
    if stamp is None:  # nothing was ever added: the empty tree
        return EMPTY_TREE
    try:
        old_stamp, old_tree = memo.read_text().split()
        if old_stamp == stamp:
            return old_tree
    except (OSError, ValueError):
        pass
    tree = _run(["write-tree"], workspace, env).decode().strip()
    memo.write_text(f"{_stamp(index)} {tree}\n")
    return tree


def _stamp(path: Path) -> str | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return f"{st.st_ino}:{st.st_mtime_ns}:{st.st_size}"


def snapshot_patch(workspace: Path | str, base_commit: str, tree: str) -> str:
    """The cumulative diff of snapshot ``tree`` against ``base_commit`` as one patch text.

    Binary files are included as git binary patches (``git apply``-able). Paths are ordered as git orders
    them (byte order), so the result equals ``"".join(d[p] for p in sorted(d))`` over
    :func:`snapshot_diff`. ``workspace`` is any repository holding both objects (a replay workspace, or the
    folder where our runner kept a run's objects).
    """
    out = _run([*_DIFF_ARGS, base_commit, tree, "--"], workspace)
    return out.decode("utf-8", "surrogateescape")


def snapshot_diff(workspace: Path | str, base_commit: str, tree: str) -> dict[str, str]:
    """Per-file cumulative diffs ``{path: diff text}`` of ``tree`` against ``base_commit``.

    Paths are repository-relative, as in the ``b/`` side of each ``diff --git`` header (a deleted file
    appears under its own path). Unchanged files are absent.
    """
    return split_patch(snapshot_patch(workspace, base_commit, tree))


def top_level_names(repository: Path | str, commit: str) -> list[str]:
    """Names of the top-level files and folders of ``commit``'s tree in ``repository`` (sorted): what the
    scratch rule needs to know of ``base_commit`` (docs/protocol.md section 3.2). Read-only.

    Raises:
        SnapshotError: ``repository`` is not a git repository or lacks ``commit``.
    """
    out = _run(["ls-tree", "--name-only", "-z", f"{commit}^{{tree}}"], repository)
    return sorted(p for p in out.decode("utf-8", "surrogateescape").split("\0") if p)


def untracked_files(workspace: Path | str) -> list[str]:
    """Repository-relative paths of the untracked, not ignored files of ``workspace`` (sorted).

    Read-only: nothing is written into the repository (no index refresh either).

    Raises:
        SnapshotError: ``workspace`` is not a git checkout or git fails.
    """
    out = _run(["ls-files", "-z", "--others", "--exclude-standard"], workspace)
    return sorted(p for p in out.decode("utf-8", "surrogateescape").split("\0") if p)


def worktree_patch(workspace: Path | str, base_commit: str) -> str:
    """The diff of the working tree of ``workspace`` against ``base_commit``, as one patch text: the same
    state as :func:`take_snapshot` (tracked and untracked files, ignored files left out; docs/protocol.md
    section 5) and the same text as :func:`snapshot_patch` of it, but read without writing anything into the
    repository: no private index, no objects, no index refresh. For a person's own repository.

    ``base_commit`` may be any tree-ish (a commit, or :data:`EMPTY_TREE` for a repository without one).
    Untracked files are diffed one by one against ``/dev/null`` (one git process each).

    Raises:
        SnapshotError: ``workspace`` is not a git checkout, ``base_commit`` is unknown or git fails.
    """
    diffs = split_patch(_run([*_DIFF_ARGS, base_commit, "--"], workspace).decode("utf-8", "surrogateescape"))
    for path in untracked_files(workspace):
        # exit status 1 means "differs", which a new file always does
        proc = subprocess.run(
            ["git", *_DIFF_ARGS, "--no-index", "--", "/dev/null", path],
            check=False, cwd=workspace, env=_git_env(), capture_output=True,
        )
        if proc.returncode not in (0, 1):
            raise SnapshotError(f"git diff of untracked {path} in {workspace} failed: "
                                f"{proc.stderr.decode(errors='replace').strip()}")
        diffs.update(split_patch(proc.stdout.decode("utf-8", "surrogateescape")))
    return join_diffs(diffs)


def is_new_file(diff: str) -> bool:
    """Whether a one-file git diff creates its file (``new file mode`` in its header)."""
    return diff.startswith("new file mode ") or "\nnew file mode " in diff.split("\n@@", 1)[0]


def without_generated(diffs: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """``(kept, left_out)``: per-file diffs without the files that generated output created
    (:func:`takeover.repository_states.file_classes.is_generated_output`, docs/protocol.md section 3.3). Changes to files that
    ``base_commit`` has are always kept: only new files are left out. ``left_out`` is sorted."""
    kept: dict[str, str] = {}
    left_out: list[str] = []
    for path, diff in diffs.items():
        if is_generated_output(path) and is_new_file(diff):
            left_out.append(path)
        else:
            kept[path] = diff
    return kept, sorted(left_out)


def join_diffs(diffs: Mapping[str, str]) -> str:
    """One patch from per-file diffs, in path order (the inverse of :func:`snapshot_diff`)."""
    return "".join(diffs[p] for p in sorted(diffs))


def patch_bytes(patch: str) -> bytes:
    """Bytes of a patch decoded by this module (``surrogateescape`` restores non-UTF-8 bytes)."""
    return patch.encode("utf-8", "surrogateescape")


def patch_sha256(patch: str) -> str:
    """sha256 (hex) of :func:`patch_bytes` of ``patch``: the checkpoint's ``patch_sha256``."""
    return hashlib.sha256(patch_bytes(patch)).hexdigest()
