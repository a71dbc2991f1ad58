"""The checkpoint's repository in an Inspect sandbox (docs/protocol.md section 5.5).

:func:`checkpoint_archive` builds, on this machine, the repository a takeover run starts from:
``base_commit`` fetched alone from the mirror (a one-commit shallow clone, so ``git diff``, ``git status``
and ``git log -1`` work in the sandbox and no other history is copied) with ``checkpoint.patch`` applied
to its working tree, as a tar archive. The solver :func:`checkpoint_repository` writes it into the
sample's sandbox and unpacks it in the sandbox's working folder, before the agent starts. The archive of
a checkpoint is built once per process and shared by its views.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
import threading
from pathlib import Path

from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox

from takeover.checkpoints import apply_patch, load_checkpoint
from takeover.errors import EnvironmentUnavailable, RepositoryUnavailable
from takeover.sources.repos import RepoSource

ARCHIVE_NAME = ".takeover-checkpoint.tar"
_lock = threading.Lock()
_archives: dict[tuple[str, str], Path] = {}
_folders: list[tempfile.TemporaryDirectory] = []  # made at the first archive, removed when the process ends


def _git(args: list[str], cwd: Path) -> None:
    proc = subprocess.run(["git", "-c", "advice.detachedHead=false", *args], cwd=cwd, capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise RepositoryUnavailable(f"git {' '.join(args[:2])} failed in {cwd}: {proc.stderr.strip()[:300]}")


def checkpoint_archive(checkpoint_dir: Path | str, repo_source: RepoSource, dest: Path) -> Path:
    """Write the tar archive of a checkpoint's repository to ``dest`` (see module docstring).

    Raises:
        InputError: the checkpoint folder is broken, or its patch does not apply.
        RepositoryUnavailable: the repository or ``base_commit`` cannot be obtained.
    """
    checkpoint, patch = load_checkpoint(checkpoint_dir)
    bare = repo_source.bare_repo(checkpoint.repo, checkpoint.base_commit)
    with tempfile.TemporaryDirectory(prefix="takeover-checkpoint-") as tmp:
        repo = Path(tmp)
        _git(["init", "--quiet"], repo)
        _git(["fetch", "--quiet", "--depth", "1", f"file://{Path(bare).resolve()}", checkpoint.base_commit], repo)
        _git(["checkout", "--quiet", "--detach", "FETCH_HEAD"], repo)
        # FETCH_HEAD and the reflog name the mirror's path: the archive keeps the base commit alone
        # (docs/protocol.md section 8.6).
        (repo / ".git" / "FETCH_HEAD").unlink(missing_ok=True)
        shutil.rmtree(repo / ".git" / "logs", ignore_errors=True)
        apply_patch(repo, patch)
        with tarfile.open(dest, "w") as tar:
            for child in sorted(repo.iterdir()):
                tar.add(child, arcname=child.name)
    return dest


def cached_archive(checkpoint_dir: Path | str, repo_source: RepoSource) -> Path:
    """:func:`checkpoint_archive` of ``checkpoint_dir``, built once per process (samples run concurrently)."""
    key = (str(Path(checkpoint_dir).resolve()), str(repo_source.mirror))
    with _lock:
        if key not in _archives:
            if not _folders:
                _folders.append(tempfile.TemporaryDirectory(prefix="takeover-inspect-"))
            dest = Path(_folders[0].name) / f"{len(_archives)}.tar"
            _archives[key] = checkpoint_archive(checkpoint_dir, repo_source, dest)
        return _archives[key]


@solver
def checkpoint_repository(mirror: str | None = None, offline: bool = False) -> Solver:
    """Put the sample's checkpoint repository (its metadata's ``checkpoint_dir``) into the sandbox's
    working folder before the agent runs.

    Args:
        mirror: folder of bare repositories (``owner__name.git``); without one, the cache or a clone from GitHub.
        offline: never clone from GitHub.

    Raises:
        EnvironmentUnavailable: the archive cannot be unpacked in the sandbox (``tar`` missing, no space).
    """
    source = RepoSource(mirror, offline=offline)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        archive = cached_archive(state.metadata["checkpoint_dir"], source)
        box = sandbox()
        await box.write_file(ARCHIVE_NAME, archive.read_bytes())
        result = await box.exec(["sh", "-c", f"tar -xf {ARCHIVE_NAME} && rm -f {ARCHIVE_NAME}"])
        if not result.success:
            raise EnvironmentUnavailable(f"could not unpack the checkpoint in the sandbox: {result.stderr.strip()[:300]}")
        return state

    return solve
