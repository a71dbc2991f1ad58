"""Frozen stores at study scale (docs/protocol.md section 8.6, item 1): however many stores one repository
has, in whatever order and by however many workers they are made, every workspace checks out, sees no
commit newer than its base, and git never follows alternates deeper than it can."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from conftest import git

from takeover.errors import RepositoryUnavailable
from takeover.sources import frozen_history
from takeover.sources.frozen_history import STORE_RECORD, alternates_depth, frozen_store, store_path, usable
from takeover.sources.repos import RepoSource, alternates, cache_dir

REPO = "o/r"
#: The deepest object folder git opens through alternates (it reads alternates files to a depth of five).
GIT_MAX_DEPTH = 6


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[Path, list[str]]:
    """``(mirror folder, commits oldest first)``: 30 commits in a line, an annotated tag every fourth."""
    root = tmp_path_factory.mktemp("history")
    src = root / "src"
    src.mkdir()
    git(src, "init", "-q", "-b", "main")
    commits = []
    for i in range(30):
        (src / "f.txt").write_text(f"version {i}\n" * (i + 1))
        (src / f"g{i}.txt").write_text(f"{i}\n")
        git(src, "add", ".")
        git(src, "commit", "-qm", f"commit {i}")
        commits.append(git(src, "rev-parse", "HEAD").strip())
        if i % 4 == 0:
            git(src, "tag", "-a", f"v{i}", "-m", f"release {i}")
    mirror = root / "mirror"
    git(root, "clone", "-q", "--bare", str(src), str(mirror / "o__r.git"))
    return mirror, commits


def _probe(ws: Path, base: str, commits: list[str]) -> None:
    """The workspace is whole and holds the base commit's ancestry and nothing newer, alternates included."""
    assert git(ws, "rev-parse", "HEAD").strip() == base
    git(ws, "fsck", "--connectivity-only", "--no-dangling")  # every object HEAD and the refs reach is there
    older = set(commits[: commits.index(base) + 1])
    readable = {line.split()[1] for line in git(ws, "cat-file", "--batch-all-objects",
                                                 "--batch-check=%(objecttype) %(objectname)").splitlines()
                if line.startswith("commit ")}
    assert readable == older  # alternates included: no newer commit, every older one
    tags = git(ws, "tag").split()
    assert tags == sorted(f"v{i}" for i in range(0, commits.index(base) + 1, 4))
    depth = alternates_depth(ws / ".git" / "objects")
    assert depth <= 2  # the workspace borrows its store, which names every store it borrows


def _workspace(mirror: Path, base: str, dest: Path) -> Path:
    return RepoSource(mirror, offline=True).workspace(REPO, base, dest)


@pytest.mark.parametrize("order", ["ascending", "descending", "shuffled"])
def test_stores_made_in_any_order_all_check_out_and_see_nothing_newer(history, tmp_path, monkeypatch, order):
    mirror, commits = history
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    bases = commits[:20]
    bases = {"ascending": bases, "descending": bases[::-1],
             "shuffled": random.Random(7).sample(bases, len(bases))}[order]
    for i, base in enumerate(bases):
        ws = _workspace(mirror, base, tmp_path / f"ws{i}")
        _probe(ws, base, commits)
    stores = sorted((tmp_path / "cache" / "frozen" / "o__r").glob("*.git"))
    assert len(stores) == 20 and all(usable(s) for s in stores)
    assert max(alternates_depth(s / "objects") for s in stores) <= 1
    if order == "ascending":
        # Each store after the first borrows all the earlier ones and holds only its own commit's objects.
        records = [json.loads((alternates(ws)[0].parent / STORE_RECORD).read_text())
                   for ws in (tmp_path / f"ws{i}" for i in range(20))]
        assert [len(r["borrows"]) for r in records] == list(range(20))
        last = alternates(tmp_path / "ws19")[0].parent
        counts = dict(line.split(": ") for line in git(last, "count-objects", "-v").splitlines())
        assert int(counts["in-pack"]) + int(counts["count"]) == 4  # commit 19: the commit, its tree, f.txt and g19.txt


def _build(args: tuple[str, str, list[str]]) -> list[str]:
    """One worker: the stores of ``bases`` (with ``TAKEOVER_CACHE`` set to ``cache``), one workspace each."""
    mirror, cache, bases = args
    import os

    os.environ["TAKEOVER_CACHE"] = cache
    made = []
    for base in bases:
        dest = Path(cache).parent / "workers" / f"{base}-{os.getpid()}"
        RepoSource(Path(mirror), offline=True).workspace(REPO, base, dest)
        made.append(str(dest))
    return made


def test_stores_made_by_four_workers_at_once_all_check_out(history, tmp_path):
    mirror, commits = history
    cache = tmp_path / "cache"
    bases = random.Random(3).sample(commits[:20], 20)
    # Each worker makes an overlapping share, so that two workers often want one store at once.
    shares = [bases[i::4] + bases[(i + 1) % 4::4] for i in range(4)]
    with ProcessPoolExecutor(4) as pool:
        made = [Path(ws) for share in pool.map(_build, [(str(mirror), str(cache), s) for s in shares])
                for ws in share]
    assert len(made) == 40
    for ws in made:
        _probe(ws, git(ws, "rev-parse", "HEAD").strip(), commits)
    stores = list((cache / "frozen" / "o__r").glob("*.git"))
    assert len(stores) == 20 and all(usable(s) for s in stores)
    assert not list((cache / "frozen" / "o__r").glob("*.partial-*"))


def test_a_store_whose_borrowed_store_was_removed_or_rebuilt_is_rebuilt(history, tmp_path, monkeypatch):
    mirror, commits = history
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    for i, base in enumerate(commits[:3]):
        _workspace(mirror, base, tmp_path / f"ws{i}")
    first, second, third = (alternates(tmp_path / f"ws{i}")[0].parent for i in range(3))
    assert [b["store"] for b in json.loads((third / STORE_RECORD).read_text())["borrows"]] == [
        str(first), str(second)]
    shutil.rmtree(first)  # a user cleaned part of the cache
    assert not usable(second) and not usable(third)
    _probe(_workspace(mirror, commits[2], tmp_path / "again"), commits[2], commits)
    assert usable(third)
    # The first store built again is another build: the stores that borrowed the old one are rebuilt too.
    _workspace(mirror, commits[0], tmp_path / "first-again")
    _probe(_workspace(mirror, commits[1], tmp_path / "second-again"), commits[1], commits)
    assert usable(second)


def test_a_store_made_by_an_earlier_version_is_rebuilt(history, tmp_path, monkeypatch):
    mirror, commits = history
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    store = frozen_store(mirror / "o__r.git", REPO, commits[5], cache_dir())
    record = json.loads((store / STORE_RECORD).read_text())
    (store / STORE_RECORD).write_text(json.dumps({k: record[k] for k in ("repo", "base_commit", "branch", "tags")}
                                                 | {"borrows_from": None}))
    assert not usable(store)
    _probe(_workspace(mirror, commits[5], tmp_path / "ws"), commits[5], commits)
    assert usable(store) and json.loads((store / STORE_RECORD).read_text())["build"] != record["build"]


def test_a_store_that_cannot_be_checked_out_names_itself_and_a_rerun_rebuilds_it(history, tmp_path, monkeypatch):
    mirror, commits = history
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    store = frozen_store(mirror / "o__r.git", REPO, commits[4], cache_dir())
    for found in (store / "objects").rglob("*"):
        if found.is_file() and found.parent.name != "info":
            found.unlink()  # damaged: its objects are gone, its record says it is finished
    with pytest.raises(RepositoryUnavailable) as caught:
        _workspace(mirror, commits[4], tmp_path / "ws")
    message = str(caught.value)
    assert str(store) in message and commits[4] in message and "set aside" in message
    assert "next run builds it again" in message
    assert not (tmp_path / "ws").exists()
    _probe(_workspace(mirror, commits[4], tmp_path / "ws"), commits[4], commits)


def test_a_store_that_would_borrow_too_many_starts_a_new_line(history, tmp_path, monkeypatch):
    mirror, commits = history
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(frozen_history, "MAX_BORROWED", 3)
    for i, base in enumerate(commits[:8]):
        _probe(_workspace(mirror, base, tmp_path / f"ws{i}"), base, commits)
    borrowed = [len(json.loads((store_path(REPO, base, cache_dir(), frozen_history.older_tags(
        mirror / "o__r.git", base)) / STORE_RECORD).read_text())["borrows"]) for base in commits[:8]]
    assert borrowed == [0, 1, 2, 3, 0, 1, 2, 3]


def test_git_follows_the_flat_alternates_where_a_chain_fails(history, tmp_path):
    """The failure the flat list avoids: seven stores, each borrowing only the one before it, and a workspace
    cloned from the last are deeper than git follows; the same stores named all at once, oldest first, are
    read whole."""
    mirror, commits = history
    stores = []
    for i, base in enumerate(commits[:7]):
        store = tmp_path / f"s{i}.git"
        git(tmp_path, "init", "-q", "--bare", str(store))
        if stores:
            # Borrow the previous store, and fetch only what it lacks (a ref at its base to negotiate from).
            (store / "objects" / "info" / "alternates").write_text(f"{stores[-1] / 'objects'}\n")
            git(store, "update-ref", "refs/have", commits[i - 1])
        git(store, "fetch", "-q", "--no-tags", str(mirror / "o__r.git"), f"{base}:refs/heads/main")
        stores.append(store)
    assert [int(git(s, "count-objects", "-v").split("in-pack: ")[1].split()[0]) +
            int(git(s, "count-objects", "-v").split("count: ")[1].split()[0]) for s in stores[1:]] == [4] * 6

    def checkout(name: str) -> subprocess.CompletedProcess:
        git(tmp_path, "clone", "-q", "--shared", "--no-checkout", str(stores[-1]), str(tmp_path / name))
        return subprocess.run(["git", "checkout", "-q", commits[6]], cwd=tmp_path / name, capture_output=True,
                              check=False,
                              text=True)

    assert alternates_depth(tmp_path / "s6.git" / "objects") == 6
    chained = checkout("chained")
    assert alternates_depth(tmp_path / "chained" / ".git" / "objects") == 7 > GIT_MAX_DEPTH
    # git may even exit 0, the files whose objects it could not read left out of the checkout.
    assert "nesting too deep" in chained.stderr and not (tmp_path / "chained" / "g0.txt").exists()
    (stores[-1] / "objects" / "info" / "alternates").write_text("".join(f"{s / 'objects'}\n" for s in stores[:-1]))
    assert alternates_depth(tmp_path / "s6.git" / "objects") == 1
    flat = checkout("flat")
    assert flat.returncode == 0 and flat.stderr == "" and (tmp_path / "flat" / "g0.txt").exists()
    assert alternates_depth(tmp_path / "flat" / ".git" / "objects") == 2
