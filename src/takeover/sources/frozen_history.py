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
  a new store borrows its objects (alternates) and fetches only the commits in between. It names every
  store it borrows from in its own alternates file, so git never follows a chain of them (git stops at a
  depth of five): the depth stays one whatever the number of stores and the order they were made in.
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
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

from takeover.errors import RepositoryUnavailable

#: The cache folder of frozen stores (under :func:`takeover.sources.repos.cache_dir`).
FROZEN_FOLDER = "frozen"
#: File in a finished frozen store describing it (its presence marks the store complete).
STORE_RECORD = "takeover-frozen.json"
#: The temporary ref a store being built points at the base of the store it borrows from (fetch negotiation).
HAVE_REF = "refs/takeover/borrowed-base"
#: The most stores one store borrows objects from (its alternates file's lines); a store that would borrow
#: more fetches its whole ancestry instead and starts a new line, so that no git command opens hundreds of
#: object folders and no sandbox binds them.
MAX_BORROWED = 64
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

    A store that can no longer be read whole (a store it borrows from was removed or rebuilt since, or it
    was made by an earlier version of takeover) is built again in its place (docs/protocol.md section 8.6).

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
    if known is not None and usable(known):
        return known
    tags = older_tags(bare, base_commit)
    dest = store_path(repo, base_commit, cache, tags)
    if usable(dest):
        _remember(index, dest)
        return dest
    with _locked(dest.with_name(dest.name + ".lock")):
        if not usable(dest):
            _build(bare, repo, base_commit, tags, dest)
    _remember(index, dest)
    return dest


def _record(store: Path) -> dict | None:
    """The store's record (:data:`STORE_RECORD`), or ``None`` when it has none or it cannot be read."""
    try:
        found = json.loads((store / STORE_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def usable(store: Path, records: dict[Path, dict | None] | None = None) -> bool:
    """Whether the frozen ``store`` is finished and every store it borrows objects from is still the one it
    borrowed: present, finished, and not built again since (each build has an id of its own, which the
    borrower records). A store made before stores recorded their builds is not usable: it may borrow
    through a chain deeper than git follows. ``records`` caches the records read (by store path)."""
    def read(path: Path) -> dict | None:
        if records is None:
            return _record(path)
        if path not in records:
            records[path] = _record(path)
        return records[path]

    record = read(store)
    if record is None or not isinstance(record.get("build"), str) or not isinstance(record.get("borrows"), list):
        return False
    for borrowed in record["borrows"]:
        theirs = read(Path(borrowed.get("store", "") if isinstance(borrowed, dict) else ""))
        if theirs is None or theirs.get("build") != borrowed.get("build"):
            return False
    return True


def _build(bare: Path, repo: str, base_commit: str, tags: list[str], dest: Path) -> None:
    """Build the frozen store ``dest`` (the caller holds its lock), replacing an unusable one.

    The new store borrows the objects of the nearest finished store whose base commit is an ancestor of
    ``base_commit`` *and of every store that one borrows*, all named in its own alternates file, oldest
    first. git follows alternates only to a depth of five; named this way, none is followed past the first
    level (the stores a listed store borrows are listed before it, so git finds them loaded already), so
    the depth stays one however many stores a repository has. A store that would borrow more than
    :data:`MAX_BORROWED` stores borrows none and starts a new line.

    Raises:
        RepositoryUnavailable: git cannot fetch ``base_commit`` from ``bare``.
    """
    started = time.perf_counter()
    tmp = dest.with_name(f"{dest.name}.partial-{os.getpid()}")
    branch = default_branch(bare)
    older = _older_store(bare, dest.parent, base_commit)
    attempts = [older, None] if older is not None else [None]
    for attempt in attempts:
        borrows = _borrow_list(attempt)
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            _fetch_into(tmp, bare, base_commit, tags, branch, borrows, attempt)
            break
        except subprocess.CalledProcessError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            if attempt is None:
                raise RepositoryUnavailable(f"{repo}: cannot freeze {bare} at {base_commit}: "
                                            f"{(exc.stderr or '').strip()[:300]}") from None
            # A store it borrows from was removed or rebuilt meanwhile (another process, a user cleaning
            # the cache): fetch the whole ancestry instead.
    record = {"repo": repo, "base_commit": base_commit, "branch": branch, "tags": len(tags),
              "build": uuid.uuid4().hex, "borrows": borrows,
              "build_seconds": round(time.perf_counter() - started, 3)}
    (tmp / STORE_RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    if dest.exists():
        # An unusable store of the same content: moved aside whole, so that no reader sees half of either.
        aside = dest.with_name(f"{dest.name}.unusable-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        dest.rename(aside)
        shutil.rmtree(aside, ignore_errors=True)
    tmp.rename(dest)


def _borrow_list(older: tuple[Path, str] | None) -> list[dict[str, str]]:
    """The stores a new store borrows when ``older`` (a usable store, its base commit) is the nearest: the
    stores ``older`` borrows, in its order, then ``older`` itself, each as ``{"store", "build"}``; ``[]``
    without one, or when that list would be longer than :data:`MAX_BORROWED`."""
    if older is None:
        return []
    record = _record(older[0]) or {}
    found = [*record.get("borrows", []), {"store": str(older[0].resolve()), "build": record.get("build", "")}]
    return found if len(found) <= MAX_BORROWED else []


def _fetch_into(tmp: Path, bare: Path, base_commit: str, tags: list[str], branch: str,
                borrows: list[dict[str, str]], older: tuple[Path, str] | None) -> None:
    """Make the bare repository ``tmp`` holding ``base_commit``'s ancestry and ``tags``, fetched from ``bare``,
    borrowing the objects of ``borrows`` (oldest first) and fetching only what they lack.

    Raises:
        subprocess.CalledProcessError: git fails.
    """
    _git("init", "--quiet", "--bare", str(tmp))
    _git("--git-dir", str(tmp), "symbolic-ref", "HEAD", f"refs/heads/{branch}")
    if borrows and older is not None:
        # Every store borrowed holds nothing newer than this base commit (each base is an ancestor).
        (tmp / "objects" / "info" / "alternates").write_text(
            "".join(f"{Path(b['store']) / 'objects'}\n" for b in borrows), encoding="utf-8")
        # The fetch negotiates from a ref at the nearest store's base, so it brings only what lies between.
        _git("--git-dir", str(tmp), "update-ref", HAVE_REF, older[1])
    refspecs = [f"{base_commit}:refs/heads/{branch}", *(f"+{t.split()[0]}:{t.split()[0]}" for t in tags)]
    _git("--git-dir", str(tmp), "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--stdin",
         str(bare.resolve()), input="\n".join(refspecs) + "\n")
    if borrows and older is not None:
        _git("--git-dir", str(tmp), "update-ref", "-d", HAVE_REF)
    # A fetch leaves no reflog in a bare repository, but a configured one would: drop it.
    shutil.rmtree(tmp / "logs", ignore_errors=True)


def _older_store(bare: Path, folder: Path, base_commit: str) -> tuple[Path, str] | None:
    """``(store, its base commit)``: the usable store in ``folder`` (one repository's) whose base commit is the
    nearest ancestor of ``base_commit`` (fewest commits in between, checked in ``bare``), or ``None``."""
    bases: dict[str, Path] = {}
    records: dict[Path, dict | None] = {}
    for store in sorted(folder.glob("*.git")):
        records[store.resolve()] = record = _record(store)
        theirs = (record or {}).get("base_commit")
        if (isinstance(theirs, str) and theirs != base_commit and theirs not in bases
                and usable(store.resolve(), records)):
            bases[theirs] = store
    if not bases:
        return None
    # One walk of the ancestry tells which of them are ancestors (a store per task: hundreds on django).
    ancestry = set(_git("--git-dir", str(bare), "rev-list", base_commit).stdout.split())
    ancestors = [commit for commit in bases if commit in ancestry]
    if not ancestors:
        return None
    # The nearest is one that no other candidate descends from (on a line of history: the newest one).
    tips = _git("--git-dir", str(bare), "merge-base", "--independent", *ancestors).stdout.split()
    best = min(tips, key=lambda c: int(_git("--git-dir", str(bare), "rev-list", "--count",
                                           f"{c}..{base_commit}").stdout.strip()))
    return bases[best], best


def set_aside(store: Path, reason: str) -> None:
    """Mark the frozen ``store`` unusable (its record renamed, ``reason`` kept in it), so that the next
    :func:`frozen_store` call builds it again, and so do the stores that borrow from it. Used when a
    workspace cannot be checked out of it."""
    record = _record(store) or {}
    record["unusable"] = reason
    try:
        (store / "takeover-frozen.unusable.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        (store / STORE_RECORD).unlink(missing_ok=True)
    except OSError:
        pass


def alternates_depth(objects: Path) -> int:
    """How deep git goes into alternates when it opens the object folder ``objects`` (a workspace's
    ``.git/objects`` or a store's ``objects``): 0 when it borrows nothing, 1 when the folders it names
    borrow nothing new, and so on. git reads an alternates file's lines in order, follows each new folder's
    own alternates at once (depth first) and skips a folder it has already opened. It reads alternates
    files to a depth of five only, so it opens no folder deeper than six and reports the rest ``nesting too
    deep``; this reports the depth as it finds it, however deep."""
    seen: set[Path] = {objects.resolve()}
    deepest = 0

    def visit(folder: Path, depth: int) -> None:
        nonlocal deepest
        info = folder / "info" / "alternates"
        if not info.is_file():
            return
        for line in info.read_text(encoding="utf-8", errors="replace").splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            path = (Path(line) if line.startswith("/") else folder / line).resolve()
            if path in seen or not path.is_dir():
                continue
            seen.add(path)
            deepest = max(deepest, depth + 1)
            visit(path, depth + 1)

    visit(objects, 0)
    return deepest


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
        subprocess.CalledProcessError: git fails, or reports an object it could not read while checking out
            (callers turn it into their own error).
    """
    _git("clone", "--shared", "--no-checkout", "--quiet", str(store.resolve()), str(dest))
    _git("remote", "remove", "origin", cwd=dest)
    checkout = _git("-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit, cwd=dest)
    if any(line.startswith(("error:", "fatal:")) for line in checkout.stderr.splitlines()):
        # git can exit 0 after leaving out files whose objects it could not read (an alternate store it
        # did not open, ``nesting too deep``): a workspace missing files is a failed checkout.
        raise subprocess.CalledProcessError(0, checkout.args, checkout.stdout, checkout.stderr)
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
