"""Frozen repository history: a task's repository as it stood at its base commit, and nothing newer
(docs/protocol.md section 8.6, "Isolation").

A mirror holds a repository's whole history, its future included: the upstream fix of a task is a commit
newer than the task's ``base_commit``. An agent that can run ``git log --all`` in a workspace cloned from the
mirror can read it. SWE-bench's images close this by removing the remote, the tags newer than the base
commit and the reflog, and pruning; takeover does the same by construction:

- the **frozen store** of a (repository, base commit) is a bare repository holding exactly the objects
  reachable from ``base_commit`` and from the tags whose commits are its ancestors, with one branch at
  ``base_commit`` (named as the mirror's default branch) and those tags. It is built once by fetching only
  that ancestry from the mirror (``git fetch`` of one commit: the pack holds nothing else) into
  ``<cache>/frozen/<owner__name>/<base_commit>[-<tags digest>].git``. A commit id names its whole
  ancestry, so the folder is content-keyed: every workspace of the task (any point, any view) shares it,
  read-only. The store of an ancestor commit (another task of the same repository) holds nothing newer, so
  a new store borrows its objects (alternates) and fetches only the commits in between.
- a **workspace** is ``git clone --shared`` of the frozen store: its alternates name the frozen store only
  (which holds nothing newer), it has no remote, no reflog, ``HEAD`` detached at ``base_commit`` and one
  branch at it.

takeover itself still needs one newer commit on the host: the environment's requirement files are read at
the task's ``environment_setup_commit`` (:mod:`takeover.environments.setup_commit`), as SWE-bench does when
it builds an environment image. :func:`host_git_env` gives host-side git commands (never the agent's) the
mirror's objects for that.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from takeover.errors import RepositoryUnavailable

#: The cache folder of frozen stores (under :func:`takeover.sources.repos.cache_dir`).
FROZEN_FOLDER = "frozen"
#: File in a finished frozen store describing it (its presence marks the store complete).
STORE_RECORD = "takeover-frozen.json"
#: The temporary ref a store being built points at the base of the store it borrows from (fetch negotiation).
HAVE_REF = "refs/takeover/borrowed-base"
#: How many stores of a repository :func:`_older_store` looks at.
BORROW_CANDIDATES = 50
#: File inside a workspace's ``.git`` naming the full mirror's object folder, for host-side git only.
FULL_HISTORY_RECORD = Path("takeover") / "full-history"


def _git(*args: str, cwd: Path | str | None = None, check: bool = True, timeout: float = 3600,
         input: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_LFS_SKIP_SMUDGE": "1"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=check,
                          timeout=timeout, input=input)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (created), so that two processes build one store once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def default_branch(bare: Path) -> str:
    """The branch ``HEAD`` of the bare repository ``bare`` names (``main`` when it names none)."""
    proc = _git("--git-dir", str(bare), "symbolic-ref", "--short", "HEAD", check=False)
    name = proc.stdout.strip()
    return name if proc.returncode == 0 and name else "main"


def older_tags(bare: Path, base_commit: str) -> list[str]:
    """The tags of ``bare`` whose commits are ancestors of ``base_commit`` (or it), as ``"refs/tags/<name>
    <object id>"`` lines, sorted: the tags SWE-bench's images keep (a release made before the task, which
    ``git describe`` and setuptools-scm read for the package's version)."""
    proc = _git("--git-dir", str(bare), "for-each-ref", f"--merged={base_commit}",
                "--format=%(refname) %(objectname)", "refs/tags", check=False)
    return sorted(line for line in proc.stdout.splitlines() if line.startswith("refs/tags/"))


def store_path(repo: str, base_commit: str, cache: Path, tags: list[str] | None = None) -> Path:
    """Where the frozen store of ``repo`` (``owner/name``) at ``base_commit`` with ``tags`` (:func:`older_tags`;
    ``None`` or ``[]``: none) lives under ``cache``: named by its content, the base commit (which names its
    whole ancestry) and a digest of the tags."""
    name = base_commit if not tags else f"{base_commit}-{hashlib.sha256(chr(10).join(tags).encode()).hexdigest()[:12]}"
    return cache / FROZEN_FOLDER / repo.replace("/", "__") / f"{name}.git"


def frozen_store(bare: Path, repo: str, base_commit: str, cache: Path) -> Path:
    """The frozen store of ``repo`` at ``base_commit`` (see the module docstring), built from the bare
    repository ``bare`` on first use; later calls (any process) return the same folder.

    Returns:
        The bare repository's path.
    Raises:
        RepositoryUnavailable: git cannot fetch ``base_commit`` from ``bare`` (the message names both).
    """
    # Which tags are ancestors takes an ancestry walk (a second on sympy): remembered per state of the
    # mirror's tags (listing them is instant), so that a warm store costs no walk.
    listed = _git("--git-dir", str(bare), "for-each-ref", "--format=%(refname) %(objectname)", "refs/tags",
                  check=False).stdout
    index = store_path(repo, base_commit, cache).with_suffix(
        f".tags-{hashlib.sha256(listed.encode()).hexdigest()[:16]}")
    try:
        known = Path(index.read_text(encoding="utf-8").strip())
    except OSError:
        known = None
    if known is not None and (known / STORE_RECORD).is_file():
        return known
    tags = older_tags(bare, base_commit)
    dest = store_path(repo, base_commit, cache, tags)
    if (dest / STORE_RECORD).is_file():
        _remember(index, dest)
        return dest
    with _locked(dest.with_name(dest.name + ".lock")):
        if (dest / STORE_RECORD).is_file():
            return dest
        started = time.perf_counter()
        tmp = dest.with_name(f"{dest.name}.partial-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(dest, ignore_errors=True)
        branch = default_branch(bare)
        older = _older_store(bare, dest.parent, base_commit)
        try:
            _git("init", "--quiet", "--bare", str(tmp))
            _git("--git-dir", str(tmp), "symbolic-ref", "HEAD", f"refs/heads/{branch}")
            if older is not None:
                # The store of an ancestor holds nothing newer than this base commit: borrow its objects and
                # fetch only the commits in between (the fetch negotiates from a ref at its base).
                (tmp / "objects" / "info" / "alternates").write_text(f"{(older[0] / 'objects').resolve()}\n")
                _git("--git-dir", str(tmp), "update-ref", HAVE_REF, older[1])
            refspecs = [f"{base_commit}:refs/heads/{branch}", *(f"+{t.split()[0]}:{t.split()[0]}" for t in tags)]
            _git("--git-dir", str(tmp), "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--stdin",
                 str(bare.resolve()), input="\n".join(refspecs) + "\n")
            if older is not None:
                _git("--git-dir", str(tmp), "update-ref", "-d", HAVE_REF)
            # A fetch leaves no reflog in a bare repository, but a configured one would: drop it.
            shutil.rmtree(tmp / "logs", ignore_errors=True)
        except subprocess.CalledProcessError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise RepositoryUnavailable(f"{repo}: cannot freeze {bare} at {base_commit}: "
                                        f"{(exc.stderr or '').strip()[:300]}") from None
        record = {"repo": repo, "base_commit": base_commit, "branch": branch, "tags": len(tags),
                  "borrows_from": str(older[0]) if older else None,
                  "build_seconds": round(time.perf_counter() - started, 3)}
        (tmp / STORE_RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        tmp.rename(dest)
    _remember(index, dest)
    return dest


def _older_store(bare: Path, folder: Path, base_commit: str) -> tuple[Path, str] | None:
    """``(store, its base commit)``: the finished store in ``folder`` (one repository's) whose base commit is
    the nearest ancestor of ``base_commit`` (fewest commits in between, checked in ``bare``), or ``None``.
    At most :data:`BORROW_CANDIDATES` stores are looked at."""
    best: tuple[int, Path, str] | None = None
    for store in sorted(folder.glob("*.git"))[:BORROW_CANDIDATES]:
        try:
            theirs = json.loads((store / STORE_RECORD).read_text(encoding="utf-8"))["base_commit"]
        except (OSError, ValueError, KeyError):
            continue
        if theirs == base_commit:
            continue
        if _git("--git-dir", str(bare), "merge-base", "--is-ancestor", theirs, base_commit, check=False).returncode:
            continue
        between = int(_git("--git-dir", str(bare), "rev-list", "--count", f"{theirs}..{base_commit}").stdout.strip())
        if best is None or between < best[0]:
            best = (between, store, theirs)
    return (best[1], best[2]) if best else None


def _remember(index: Path, store: Path) -> None:
    """Write ``index`` (naming ``store``) atomically: a reader sees the whole path or no file."""
    tmp = index.with_name(f"{index.name}.{os.getpid()}.tmp")
    tmp.write_text(str(store) + "\n", encoding="utf-8")
    tmp.replace(index)


def clone_frozen(store: Path, commit: str, dest: Path, full_history: Path | None = None) -> Path:
    """Check ``commit`` out of the frozen ``store`` into the new folder ``dest``: ``git clone --shared``,
    no remote, ``HEAD`` detached at ``commit``, the store's one branch, no reflog. ``full_history`` (the
    mirror's object folder) is recorded for :func:`host_git_env`.

    Raises:
        subprocess.CalledProcessError: git fails (callers turn it into their own error).
    """
    _git("clone", "--shared", "--no-checkout", "--quiet", str(store.resolve()), str(dest))
    _git("remote", "remove", "origin", cwd=dest)
    _git("-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit, cwd=dest)
    shutil.rmtree(dest / ".git" / "logs", ignore_errors=True)  # "clone: from <store path>"
    if full_history is not None:
        record = dest / ".git" / FULL_HISTORY_RECORD
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(str(full_history.resolve()) + "\n", encoding="utf-8")
    return dest


def host_git_env(workspace: Path | str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Variables for a git command takeover runs *on the host* in ``workspace`` that must see commits newer
    than its base commit (the environment's setup commit): ``base`` (default ``os.environ``) with the full
    mirror's objects as an extra alternate (``GIT_ALTERNATE_OBJECT_DIRECTORIES``). Never for an agent's
    commands. A workspace without such a record gets ``base`` unchanged."""
    env = dict(os.environ if base is None else base)
    record = Path(workspace) / ".git" / FULL_HISTORY_RECORD
    try:
        objects = record.read_text(encoding="utf-8").strip()
    except OSError:
        return env
    if objects and Path(objects).is_dir():
        env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = os.pathsep.join(
            p for p in (env.get("GIT_ALTERNATE_OBJECT_DIRECTORIES"), objects) if p)
    return env


def _commits_beyond(git_args: list[str]) -> list[str]:
    """Commit objects the repository can read (alternates included) that are not ancestors of ``HEAD``."""
    ancestry = set(_git(*git_args, "rev-list", "HEAD").stdout.split())
    listed = _git(*git_args, "cat-file", "--batch-all-objects", "--batch-check=%(objecttype) %(objectname)").stdout
    return sorted(line.split()[1] for line in listed.splitlines() if line.startswith("commit ")
                  and line.split()[1] not in ancestry)


def freeze_in_place(workspace: Path | str) -> list[str]:
    """Remove from the repository in ``workspace`` everything newer than its ``HEAD`` (an image's
    ``/testbed`` copied out: ``HEAD`` is the base commit plus SWE-bench's setup commit), as SWE-bench's
    newer images do in their setup: its remotes, the refs not merged into ``HEAD`` (newer tags, other
    branches, remote-tracking refs, the stash), the reflog, and then every object no remaining ref reaches.
    Call it before anything writes objects of its own (a snapshot's trees would be pruned).

    Returns:
        What was removed, one phrase each (``[]`` when the repository held nothing newer).
    Raises:
        subprocess.CalledProcessError: git fails.
    """
    ws = str(workspace)
    args = ["-c", "safe.directory=*", "-C", ws]
    removed: list[str] = []
    for remote in _git(*args, "remote").stdout.split():
        _git(*args, "remote", "remove", remote)
        removed.append(f"remote {remote}")
    newer_refs = _git(*args, "for-each-ref", "--no-merged=HEAD", "--format=%(refname)").stdout.split()
    others = [r for r in _git(*args, "for-each-ref", "--format=%(refname)", "refs/remotes", "refs/stash").stdout.split()
              if r not in newer_refs]
    if newer_refs or others:
        _git(*args, "update-ref", "--stdin", input="".join(f"delete {r}\n" for r in [*newer_refs, *others]))
        removed.append(f"{len(newer_refs) + len(others)} refs not merged into HEAD")
    logs = Path(_git(*args, "rev-parse", "--absolute-git-dir").stdout.strip()) / "logs"
    if logs.exists():
        shutil.rmtree(logs)
        removed.append("the reflog")
    beyond = _commits_beyond(args)
    if beyond:
        _git(*args, "repack", "-a", "-d", "-q")
        _git(*args, "prune", "--expire=now")
        removed.append(f"{len(beyond)} commits not reachable from HEAD")
    return removed
