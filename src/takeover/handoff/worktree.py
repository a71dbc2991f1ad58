"""The repository an interrupted session left behind, read without changing it (docs/protocol.md section 5).

The state is what the study calls a checkpoint's diff: the working tree (tracked and untracked files,
ignored files left out) against a base commit (:func:`takeover.repository_states.snapshots.worktree_patch`).
The base is the
session's starting commit when the session records one (Codex CLI rollouts do, ``git.commit_hash``;
takeover's own runs do) and the repository has it; otherwise ``HEAD``; for a repository without any
commit, the empty tree. Work the agent committed during the session is therefore part of the state when
the starting commit is known, and is not when the base falls back to ``HEAD`` (the notes say which).

Nothing is written into the repository: git runs with ``GIT_OPTIONAL_LOCKS=0`` (no index refresh), and
no index, object or ref is created.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from takeover.errors import InputError
from takeover.repository_states.snapshots import (
    EMPTY_TREE,
    SnapshotError,
    patch_sha256,
    untracked_files,
    worktree_patch,
)

BaseSource = Literal["session", "HEAD", "empty_tree"]


class RepositoryState(BaseModel):
    """The repository at the handoff.

    Attributes:
        root: absolute path of the repository's top folder.
        base_commit: what ``patch`` is a diff against (a commit id, or the empty tree's id).
        base_source: ``session`` (the session's starting commit), ``HEAD`` or ``empty_tree`` (no commit yet).
        head: the ``HEAD`` commit (``None`` when the repository has no commit); ``branch``: its branch, if any.
        patch: the working tree's cumulative diff against ``base_commit``, untracked files included.
        patch_sha256: sha256 of ``patch`` (UTF-8, non-UTF-8 bytes kept).
        untracked: untracked, not ignored files (repository-relative, sorted); they are in ``patch`` too.
        notes: remarks for the user (a starting commit this repository does not have, ...).
    """

    root: str
    base_commit: str
    base_source: BaseSource
    head: str | None = None
    branch: str | None = None
    patch: str
    patch_sha256: str
    untracked: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"})
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)


def repository_root(folder: Path | str) -> Path:
    """The top folder of the git repository that holds ``folder``.

    Raises:
        InputError: ``folder`` does not exist or is not inside a git repository.
    """
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise InputError(folder, "no such folder; give --repo DIR, the repository the session worked in")
    proc = _git(folder, "rev-parse", "--show-toplevel")
    if proc.returncode != 0:
        raise InputError(folder, "not inside a git repository (git rev-parse --show-toplevel failed: "
                         f"{proc.stderr.strip()[:200]}); give --repo DIR, the repository the session worked in")
    return Path(proc.stdout.strip()).resolve()


def _commit(root: Path, rev: str) -> str | None:
    proc = _git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def repository_state(folder: Path | str, start_commit: str | None = None) -> RepositoryState:
    """Read the state of the repository holding ``folder`` against ``start_commit`` (see module docstring).

    Args:
        folder: the repository, or a folder inside it.
        start_commit: the commit the session started from, when it recorded one.

    Raises:
        InputError: ``folder`` is not in a git repository, or git cannot diff it.
    """
    root = repository_root(folder)
    head = _commit(root, "HEAD")
    branch_proc = _git(root, "symbolic-ref", "--quiet", "--short", "HEAD")
    branch = branch_proc.stdout.strip() or None if branch_proc.returncode == 0 else None
    notes: list[str] = []
    base: str | None = None
    source: BaseSource = "HEAD"
    if start_commit:
        base = _commit(root, start_commit)
        if base is not None:
            source = "session"
        else:
            notes.append(f"the session started at commit {start_commit[:12]}, which this repository does not have: "
                         "the state is the diff against HEAD instead")
    if base is None:
        base, source = (head, "HEAD") if head else (EMPTY_TREE, "empty_tree")
    try:
        patch = worktree_patch(root, base)
        untracked = untracked_files(root)
    except SnapshotError as exc:
        raise InputError(root, f"cannot read the repository's state: {exc}") from None
    return RepositoryState(
        root=str(root), base_commit=base, base_source=source, head=head, branch=branch, patch=patch,
        patch_sha256=patch_sha256(patch), untracked=untracked, notes=notes,
    )
