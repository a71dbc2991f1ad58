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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    mirror = os.environ.get("TAKEOVER_MIRROR")
    if not mirror:
        sys.exit("set TAKEOVER_MIRROR to a folder of bare repositories (sympy__sympy.git, pytest-dev__pytest.git)")
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
