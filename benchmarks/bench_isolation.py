"""What isolation costs (docs/protocol.md section 8.6): the frozen store per (repository, base commit), and
the per-run overhead before and after, side by side, on the real mirror.

    TAKEOVER_MIRROR=/work/mirror PYTHONPATH=src python benchmarks/bench_isolation.py [--repeat N] [--json]

For sympy (sympy__sympy-11618, then -20590) and pytest (pytest-dev__pytest-7521, then -10051) it prints:

- **frozen store**: seconds to build it from the mirror (cold, in an empty cache), its size (MB), the
  number of objects and tags it holds, and the newer commits the mirror holds that it does not; then the
  store of a second task of the repository (:data:`SECOND`), which borrows the first's objects when one
  base commit is an ancestor of the other (seconds, its own MB);
- **workspace**: seconds to make one workspace, *before* (``git clone --shared`` of the whole mirror, as
  takeover did) and *after* (finding the warm frozen store, whose key reads the mirror's older tags, and
  ``git clone --shared`` of it), median of ``--repeat``;
- **sandbox**: seconds to run ``true`` under bubblewrap, *before* (``--ro-bind / /``) and *after* (the
  allow-list of :func:`takeover._util.sandbox.wrap`), median of ``--repeat``;
- **probe**: seconds of the isolation probe's script in the workspace under the allow-list (new per run),
  and what it found (newer commits visible: before, in the mirror clone; after, in the frozen clone).

With ``--study``, the stores of a study instead: the twelve sympy tasks of
``tests/test_frozen_history_mirror.py``, made in ascending order of base commit in an empty cache, as a study
over one repository makes them. Per store: seconds to build it, its own MB, how many stores it borrows from,
how deep git goes into alternates from a workspace of it (git opens no folder deeper than six), seconds to
check out a workspace, and the error if the checkout failed; then the isolation probe's counts on the
deepest store's workspace (newer commits readable, listed by ``git log --all --reflog``, refs not merged).

    TAKEOVER_MIRROR=/work/mirror PYTHONPATH=src python benchmarks/bench_isolation.py --study

Nothing is written into the mirror; everything else goes to a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from takeover._util import sandbox
from takeover.errors import RepositoryUnavailable
from takeover.sources.frozen_history import frozen_store

CASES = {"sympy/sympy": "360290c4c401e386db60723ddb0109ed499c9f6e",  # sympy__sympy-11618
         "pytest-dev/pytest": "41d211c24a6781843b174379d6d6538f5c17adb9"}  # pytest-dev__pytest-7521
#: A second task of each repository whose base commit descends from the first's: its store borrows the
#: first one's objects.
SECOND = {"sympy/sympy": ("sympy__sympy-20590", "cffd4e0f86fefd4802349a9f9b19ed70934ea354"),
          "pytest-dev/pytest": ("pytest-dev__pytest-10051", "aa55975c7d3f6c9f6d7f68accc41bb7cadf0eb9a")}


def _git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def _size_mb(folder: Path) -> float:
    return round(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6, 1)


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _newer_commits(ws: Path) -> int:
    """Commit objects readable in ``ws`` that are not ancestors of its HEAD (the probe's count)."""
    script = ("comm -13 <(git rev-list HEAD | sort) <(git cat-file --batch-all-objects "
              "--batch-check='%(objecttype) %(objectname)' | sed -n 's/^commit //p' | sort) | wc -l")
    return int(subprocess.run(["bash", "-c", script], cwd=ws, capture_output=True, text=True, check=True).stdout)


def _clone_old(bare: Path, commit: str, dest: Path) -> None:
    _git("clone", "--shared", "--no-checkout", "--quiet", str(bare.resolve()), str(dest))
    _git("remote", "remove", "origin", cwd=dest)
    _git("-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit, cwd=dest)


def _clone_new(bare: Path, repo: str, commit: str, cache: Path, dest: Path) -> None:
    """As a workspace is made now: find the (warm) frozen store, which reads the mirror's older tags for its
    key, then clone it."""
    from takeover.sources.frozen_history import clone_frozen

    clone_frozen(frozen_store(bare, repo, commit, cache), commit, dest)


def measure(repo: str, commit: str, mirror: Path, repeat: int, tmp: Path) -> dict:
    bare = mirror / f"{repo.replace('/', '__')}.git"
    cache = tmp / "cache"
    started = time.perf_counter()
    store = frozen_store(bare, repo, commit, cache)
    build = time.perf_counter() - started
    objects = len(_git("--git-dir", str(store), "cat-file", "--batch-all-objects", "--batch-check").splitlines())
    tags = len(_git("--git-dir", str(store), "tag").split())
    before, after = [], []
    for i in range(repeat):
        before.append(_timed(lambda i=i: _clone_old(bare, commit, tmp / f"old{i}")))
        after.append(_timed(lambda i=i: _clone_new(bare, repo, commit, cache, tmp / f"new{i}")))
    later_id, later = SECOND[repo]
    started = time.perf_counter()
    second = frozen_store(bare, repo, later, cache)
    second_seconds = time.perf_counter() - started
    result = {
        "repo": repo, "base_commit": commit,
        "second_store": {"instance_id": later_id, "build_seconds": round(second_seconds, 2), "own_mb": _size_mb(second),
                         "borrows": (second / "objects" / "info" / "alternates").exists()},
        "frozen_store": {"build_seconds": round(build, 2), "mb": _size_mb(store), "objects": objects, "tags": tags,
                         "mirror_mb": _size_mb(bare.resolve())},
        "workspace_seconds": {"before": round(statistics.median(before), 3), "after": round(statistics.median(after), 3)},
        "newer_commits_visible": {"before": _newer_commits(tmp / "old0"), "after": _newer_commits(tmp / "new0")},
    }
    st = sandbox.status()
    if st.available:
        ws = tmp / "new0"
        old_argv = [st.tool, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                    "--bind", str(ws), str(ws), "--unshare-net", "--unshare-pid", "--die-with-parent", "--", "true"]
        new_argv = sandbox.wrap(["true"], ws, readable=[store], tool=st.tool)
        result["sandbox_true_seconds"] = {
            "before": round(statistics.median(_timed(lambda: subprocess.run(old_argv, check=True)) for _ in range(repeat)), 4),
            "after": round(statistics.median(_timed(lambda: subprocess.run(new_argv, check=True)) for _ in range(repeat)), 4)}
        probe = ("git rev-list HEAD | sort > /tmp/a; git cat-file --batch-all-objects --batch-check='%(objecttype) "
                 "%(objectname)' | sed -n 's/^commit //p' | sort | comm -13 /tmp/a - | wc -l; "
                 "git log --all --reflog --format=%H | sort -u | comm -13 /tmp/a - | wc -l; "
                 "git for-each-ref --no-merged=HEAD | wc -l; git status --porcelain | wc -l")
        argv = sandbox.wrap(["bash", "-c", probe], ws, readable=[store], tool=st.tool)
        seconds = _timed(lambda: subprocess.run(argv, check=True, capture_output=True))
        result["probe_seconds"] = round(seconds, 3)
    return result


#: The study of ``--study``: sympy tasks in ascending order of base commit (tests/test_frozen_history_mirror.py).
STUDY = ["sympy__sympy-11618", "sympy__sympy-12481", "sympy__sympy-13031", "sympy__sympy-13852",
         "sympy__sympy-13974", "sympy__sympy-14711", "sympy__sympy-15349", "sympy__sympy-15809",
         "sympy__sympy-17318", "sympy__sympy-19495", "sympy__sympy-20590", "sympy__sympy-23950"]
PROBE = ("git rev-list HEAD | sort > /tmp/a; git cat-file --batch-all-objects --batch-check='%(objecttype) "
         "%(objectname)' | sed -n 's/^commit //p' | sort | comm -13 /tmp/a - | wc -l; "
         "git log --all --reflog --format=%H | sort -u | comm -13 /tmp/a - | wc -l; "
         "git for-each-ref --no-merged=HEAD | wc -l")


def study(mirror: Path, dataset: Path, tmp: Path) -> list[dict]:
    """The stores of :data:`STUDY` in an empty cache, one row each (see the module docstring)."""
    from takeover.sources.frozen_history import alternates_depth
    from takeover.sources.repos import RepoSource, alternates

    os.environ["TAKEOVER_CACHE"] = str(tmp / "cache")
    rows = {json.loads(line)["instance_id"]: json.loads(line) for line in dataset.read_text().splitlines()}
    source = RepoSource(mirror, offline=True)
    found = []
    for instance in STUDY:
        row = rows[instance]
        bare = mirror / f"{row['repo'].replace('/', '__')}.git"
        entry: dict = {"instance_id": instance, "error": None}
        started = time.perf_counter()
        try:
            store = frozen_store(bare, row["repo"], row["base_commit"], tmp / "cache")
        except RepositoryUnavailable as exc:  # the figure is the failure itself
            entry.update(build_seconds=round(time.perf_counter() - started, 2), own_mb=None, borrows=None,
                         checkout_seconds=None, depth=None, workspace=None, readable=[],
                         error=" ".join(str(exc).split())[:200])
            found.append(entry)
            continue
        listed = store / "objects" / "info" / "alternates"
        entry.update(build_seconds=round(time.perf_counter() - started, 2), own_mb=_size_mb(store),
                     borrows=len(listed.read_text().split()) if listed.exists() else 0)
        ws = tmp / "ws" / instance
        started = time.perf_counter()
        try:
            source.workspace(row["repo"], row["base_commit"], ws)
        except RepositoryUnavailable as exc:
            entry["error"] = " ".join(str(exc).split())[:200]
        entry["checkout_seconds"] = round(time.perf_counter() - started, 2)
        entry["depth"] = alternates_depth(ws / ".git" / "objects") if (ws / ".git").exists() else None
        entry["workspace"] = str(ws)
        entry["readable"] = [str(p.parent) for p in alternates(ws)] if ws.exists() else []
        found.append(entry)
    return found


def probe(ws: Path, stores: list[Path]) -> list[int]:
    """The isolation probe's counts in ``ws`` under the allow-list sandbox (or on the host without one)."""
    st = sandbox.status()
    argv = sandbox.wrap(["bash", "-c", PROBE], ws, readable=stores, tool=st.tool) if st.available else \
        ["bash", "-c", PROBE]
    return [int(n) for n in subprocess.run(argv, cwd=ws, check=True, capture_output=True, text=True).stdout.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--study", action="store_true", help="the stores of twelve sympy tasks, made in order")
    parser.add_argument("--dataset", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data" /
                        "swebench_verified.jsonl")
    args = parser.parse_args()
    mirror = os.environ.get("TAKEOVER_MIRROR")
    if not mirror:
        sys.exit("set TAKEOVER_MIRROR to a folder of bare repositories (sympy__sympy.git, pytest-dev__pytest.git)")
    if args.study:
        with tempfile.TemporaryDirectory(prefix="takeover-bench-isolation-") as tmp:
            rows = study(Path(mirror), args.dataset, Path(tmp))
            deepest = max((r for r in rows if r["error"] is None), key=lambda r: (r["depth"], r["borrows"]))
            counts = probe(Path(deepest["workspace"]), [Path(p) for p in deepest["readable"]])
        if args.json:
            print(json.dumps({"stores": rows, "probe": {"instance_id": deepest["instance_id"], "counts": counts}},
                             indent=2))
            return
        print("| task | store build s | own MB | borrows | depth from a workspace | checkout s | error |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['instance_id']} | {r['build_seconds']} | {r['own_mb']} | {r['borrows']} | {r['depth']} "
                  f"| {r['checkout_seconds']} | {r['error'] or ''} |")
        print(f"\nProbe on {deepest['instance_id']} (depth {deepest['depth']}, {deepest['borrows']} stores "
              f"borrowed): newer commits readable {counts[0]}, in git log --all --reflog {counts[1]}, "
              f"refs not merged {counts[2]}")
        return
    results = []
    for repo, commit in CASES.items():
        with tempfile.TemporaryDirectory(prefix="takeover-bench-isolation-") as tmp:
            results.append(measure(repo, commit, Path(mirror), args.repeat, Path(tmp)))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print("| repository | frozen store: build s | MB (mirror MB) | objects | tags | second task's store: s, own MB "
          "| workspace s before -> after | newer commits visible before -> after | bwrap `true` s before -> after "
          "| probe s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        fs, ws, nc = r["frozen_store"], r["workspace_seconds"], r["newer_commits_visible"]
        sb = r.get("sandbox_true_seconds", {})
        two = r["second_store"]
        print(f"| {r['repo']} | {fs['build_seconds']} | {fs['mb']} ({fs['mirror_mb']}) | {fs['objects']} | {fs['tags']} "
              f"| {two['instance_id']}: {two['build_seconds']}, {two['own_mb']}{'' if two['borrows'] else ' (no borrow)'} "
              f"| {ws['before']} -> {ws['after']} | {nc['before']} -> {nc['after']} "
              f"| {sb.get('before', 'n/a')} -> {sb.get('after', 'n/a')} | {r.get('probe_seconds', 'n/a')} |")


if __name__ == "__main__":
    main()
