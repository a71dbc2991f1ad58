"""Repository mirrors and workspaces (docs/protocol.md section 5: a checkpoint starts from ``base_commit``).

A *mirror* is a bare repository per SWE-bench repository, named ``owner__name.git``. It comes from the
folder the user names (``--mirror DIR``, or ``TAKEOVER_MIRROR`` read by that option), or is cloned from
GitHub on first use into the cache (``TAKEOVER_CACHE``, default ``~/.cache/takeover``). A *workspace* is a
fresh checkout of one commit in its own folder, made with ``git clone --shared`` of the commit's frozen
store (:mod:`takeover.sources.frozen_history`: its history up to that commit, nothing newer), so that no
history is copied and nothing is written into the mirror: the user's mirror is only ever read.

Where repositories come from is one :class:`RepoSource`, built once (by the command line from ``--mirror``
and ``--offline``, or by an experiment file from ``mirror`` and ``offline``) and passed down to every
function that needs a repository. Library code never reads ``TAKEOVER_MIRROR`` itself.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from pydantic import BaseModel

from takeover._util import sandbox
from takeover.errors import RepositoryUnavailable
from takeover.sources.frozen_history import clone_frozen, frozen_store, set_aside

#: The environment variable that names the mirror folder; read by the ``--mirror`` option only.
MIRROR_ENV = "TAKEOVER_MIRROR"
CACHE_ENV = "TAKEOVER_CACHE"
GITHUB_URL = "https://github.com/{repo}.git"


def cache_dir() -> Path:
    """Root of takeover's cache (mirrors cloned from GitHub, environments, the embedded model)."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "takeover")


def _git(*args: str, cwd: Path | str | None = None, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_LFS_SKIP_SMUDGE": "1"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=check, timeout=timeout)


def _has_commit(bare: Path, commit: str) -> bool:
    return _git("--git-dir", str(bare), "cat-file", "-e", f"{commit}^{{commit}}", check=False).returncode == 0


def missing_object(git_dir: Path | str, commit: str) -> str | None:
    """The id of the first object of ``commit``'s tree that the repository ``git_dir`` lacks (a partial or
    damaged clone), or ``None`` when every object a checkout of ``commit`` needs is there."""
    proc = _git("--git-dir", str(git_dir), "rev-list", "--objects", "--no-walk", "--missing=print", commit, check=False)
    if proc.returncode != 0:
        found = re.search(r"\b[0-9a-f]{40}\b", proc.stderr)
        return found.group(0) if found else commit
    return next((line[1:].split()[0] for line in proc.stdout.splitlines() if line.startswith("?")), None)


class RepoSource(BaseModel):
    """Where repositories come from: the user's mirror folder first, then a GitHub clone in the cache.

    A small record (it travels as JSON to the worker processes of an experiment):
    ``RepoSource(mirror, offline=False)``.

    Attributes:
        mirror: folder of bare repositories ``owner__name.git``, only ever read; ``None``: no mirror.
        offline: never clone or fetch from GitHub (a repository or commit the mirror and the cache lack
            is then :class:`~takeover.errors.RepositoryUnavailable`).
    """

    mirror: Path | None = None
    offline: bool = False

    def __init__(self, mirror: Path | str | None = None, *, offline: bool = False):
        super().__init__(mirror=Path(mirror).expanduser() if mirror else None, offline=offline)

    @property
    def clones(self) -> Path:
        """Folder of the repositories cloned from GitHub (``<cache>/mirrors``)."""
        return cache_dir() / "mirrors"

    def bare_repo(self, repo: str, commit: str | None = None) -> Path:
        """Path of a bare repository for ``repo`` (``owner/name``) that holds ``commit``.

        Raises:
            RepositoryUnavailable: neither the mirror nor GitHub (when allowed) can supply it; the message
                says which folder was looked at and how to provide the repository.
        """
        slug = repo.replace("/", "__")
        if self.mirror is not None:
            sandbox.note_private(self.mirror, "mirror")  # the repositories' future: the probe checks it
            candidate = self.mirror / f"{slug}.git"
            if candidate.exists() and (commit is None or _has_commit(candidate, commit)):
                return candidate
        cached = self.clones / f"{slug}.git"
        if cached.exists() and (commit is None or _has_commit(cached, commit)):
            return cached
        where = self._not_in_mirror(slug, commit)
        if self.offline:
            raise RepositoryUnavailable(
                f"{repo}{'@' + commit[:12] if commit else ''} cannot be obtained: {where}, it is not in the cache "
                f"and network access is off; put a bare clone at <mirror>/{slug}.git (git clone --bare "
                f"{GITHUB_URL.format(repo=repo)})"
            )
        try:
            if not cached.exists():
                cached.parent.mkdir(parents=True, exist_ok=True)
                tmp = cached.with_name(cached.name + ".partial")
                shutil.rmtree(tmp, ignore_errors=True)
                _git("clone", "--bare", "--quiet", GITHUB_URL.format(repo=repo), str(tmp), timeout=3600)
                tmp.rename(cached)
            elif commit is not None:
                _git("--git-dir", str(cached), "fetch", "--quiet", "origin", commit, timeout=3600)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            detail = getattr(exc, "stderr", "") or str(exc)
            raise RepositoryUnavailable(
                f"cannot clone {repo} from GitHub ({detail.strip()[:200]}); {where}. "
                f"Provide a mirror folder with {slug}.git (--mirror DIR or {MIRROR_ENV})"
            ) from None
        if commit is not None and not _has_commit(cached, commit):
            raise RepositoryUnavailable(f"commit {commit} not found in {repo}")
        return cached

    def _not_in_mirror(self, slug: str, commit: str | None) -> str:
        """Why the mirror does not supply ``slug`` at ``commit``: no mirror, a mirror folder that does not
        exist, a mirror without the repository, or a repository without the commit."""
        if self.mirror is None:
            return f"no mirror is given (--mirror or {MIRROR_ENV})"
        if not self.mirror.exists():
            return f"the mirror folder {self.mirror} does not exist"
        if not self.mirror.is_dir():
            return f"the mirror {self.mirror} is a file, not a folder"
        candidate = self.mirror / f"{slug}.git"
        if not candidate.exists():
            return f"the mirror {self.mirror} has no {slug}.git"
        return f"{candidate} lacks commit {commit}"

    def workspace(self, repo: str, commit: str, dest: Path | str) -> Path:
        """Check out ``commit`` of ``repo`` into the new folder ``dest`` (must not exist or be empty).

        The checkout shares the objects of the frozen store of ``(repo, commit)``
        (:mod:`takeover.sources.frozen_history`: the history up to ``commit`` and nothing newer, built once
        in the cache): no history is copied, and the mirror is not written to. The workspace has no
        remote, no reflog, and ``HEAD`` detached at ``commit``.

        The repository is checked first: a mirror that lacks an object of ``commit``'s tree is refused
        before anything is written.

        Returns:
            ``dest`` as a :class:`Path`.
        Raises:
            RepositoryUnavailable: the repository or commit cannot be obtained, the repository lacks an
                object the checkout needs (the message names the repository, the commit and the object),
                or git fails to check it out of the frozen store (the message names the store and git's
                reason; the store is set aside, so that the next call builds it again).
            FileExistsError: ``dest`` exists and is not empty.
        """
        dest = Path(dest)
        if dest.exists() and any(dest.iterdir()):
            raise FileExistsError(f"workspace folder {dest} exists and is not empty")
        bare = self.bare_repo(repo, commit)
        lacking = missing_object(bare, commit)
        if lacking is not None:
            raise RepositoryUnavailable(
                f"{repo} at {bare} lacks object {lacking} needed by commit {commit} "
                f"(a partial or damaged clone: clone it again with git clone --bare)"
            )
        dest.parent.mkdir(parents=True, exist_ok=True)
        existed = dest.exists()
        store = frozen_store(bare, repo, commit, cache_dir())
        try:
            clone_frozen(store, commit, dest, full_history=bare / "objects")
        except subprocess.CalledProcessError as exc:
            why = " ".join((exc.stderr or "").split())[:300]
            # The store cannot give what it was built to hold: set it aside, so that a rerun builds it anew.
            set_aside(store, why)
            shutil.rmtree(dest, ignore_errors=True)
            if existed:
                dest.mkdir()
            raise RepositoryUnavailable(
                f"{repo}: cannot check out commit {commit} from its frozen store {store}: {why} "
                f"(the store is set aside: the next run builds it again from {bare})"
            ) from None
        return dest


def alternates(workspace: Path | str) -> list[Path]:
    """Object folders a ``git clone --shared`` workspace borrows (``.git/objects/info/alternates``), and the
    folders those borrow in turn (a clone of a clone): absolute, existing folders only, in file order;
    ``[]`` for a workspace with its own objects.

    A sandbox must let commands read these (read-only), or git in the workspace sees no history.
    """
    found: list[Path] = []
    pending = [Path(workspace) / ".git" / "objects" / "info" / "alternates"]
    while pending:
        info = pending.pop(0)
        if not info.is_file():
            continue
        for line in info.read_text(encoding="utf-8", errors="replace").splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                path = Path(line) if line.startswith("/") else (info.parent.parent / line)
                if path.is_dir():
                    found.append(path.resolve())
                    if path.resolve() not in found[:-1]:
                        pending.append(path / "info" / "alternates")
    return found
