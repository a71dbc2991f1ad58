"""Small git repositories rebuilt from what real mini-swe-agent runs printed, so that real detection
(replay, points, checkpoints, views) runs on every machine, without a mirror of the real repositories.

A run that prints a whole file (``cat path``) which its submitted patch then changes shows that file's
bytes. When the git blob id of the printout equals the ``index <old>..<new>`` line of the run's own
patch, the printout *is* the file at the task's base commit (``<old>``), or as submitted (``<new>``;
the patch reversed then gives the base). A bare repository whose base commit holds exactly those blobs
replays the run like the real repository wherever the run's commands only read and write the files they
touch: edits with ``sed``/``cat``/Python file I/O reproduce byte for byte, and the verification results
come from the recorded observations, not from the replay.

Runs used (the printout each one gives):

- ``psf__requests-1766``: ``cat requests/auth.py`` after the ``sed`` that quotes ``qop`` (the submitted
  file; the base is the patch reversed). Its handoff points are the hand-checked ones of the view tests.
- ``django__django-12193``: ``cat django/contrib/postgres/forms/array.py`` before any edit.
- ``django__django-13551``: ``cat django/contrib/auth/tokens.py`` before any edit.
- ``pytest-dev__pytest-7205``: ``cat src/_pytest/setuponly.py`` before any edit.

Runs left out, and why:

- ``django__django-11066``: the whole file is printed, but its scripts create SQLite databases
  (``default.sqlite3``, ``other.sqlite3``) in the repository by running the real Django; in a repository
  holding one file they fail at ``import django``, so the states at its points would lack those artifacts.
- ``django__django-11848``, ``pallets__flask-5014``, ``pytest-dev__pytest-7521``,
  ``sympy__sympy-13852`` (``zeta_functions.py``), ``sympy__sympy-15809``: the whole-file printout is cut
  by mini-swe-agent's 10,000-character output limit (head and tail only), and no ``sed -n``/``nl``
  printout fills the gap (11848 lacks lines 152-157, 13852 lines 139-205, 15809 lines 199-339,
  7521 lines 157-176; flask's are pattern ranges of ``__init__`` only).
- ``django__django-11179``, ``django__django-11820``, ``psf__requests-1921``, ``psf__requests-2317``,
  ``pytest-dev__pytest-5631``, ``sympy__sympy-13480``: only the hunks' surroundings are printed
  (``nl -ba file | sed -n 'a,bp'``, ``head -n 30``, ``grep -C``), never the whole file, so no printout
  can match the blob id.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from conftest import DATASET, TRAJ, git

MINI = TRAJ / "mini-swe-agent"


@dataclass(frozen=True)
class Printout:
    """Where a run shows a whole file: the ``occurrence``-th (0-based) run of ``command``, whose output is
    the file at ``path`` before the run (``shows="base"``) or as the run submitted it (``"final"``)."""

    path: str
    command: str
    occurrence: int = 0
    shows: Literal["base", "final"] = "base"


PRINTOUTS: dict[str, tuple[Printout, ...]] = {
    "psf__requests-1766": (Printout("requests/auth.py", "cat requests/auth.py", shows="final"),),
    "django__django-12193": (Printout("django/contrib/postgres/forms/array.py",
                                      "cat django/contrib/postgres/forms/array.py"),),
    "django__django-13551": (Printout("django/contrib/auth/tokens.py", "cat django/contrib/auth/tokens.py"),),
    "pytest-dev__pytest-7205": (Printout("src/_pytest/setuponly.py", "cat src/_pytest/setuponly.py"),),
}


class FixtureRefused(Exception):
    """The printouts do not reproduce the files the run's patch changes (no repository is built)."""


@dataclass(frozen=True)
class SubmittedFile:
    """One file of a submitted patch: its blob ids before and after (as abbreviated in the ``index``
    line) and its mode."""

    path: str
    old: str
    new: str
    mode: str
    diff: str


def run_json(instance_id: str) -> dict:
    """The raw mini-swe-agent file of ``instance_id`` (read as JSON, not with takeover's reader)."""
    return json.loads((MINI / f"{instance_id}.json").read_text(encoding="utf-8"))


def submitted_files(patch: str) -> dict[str, SubmittedFile]:
    """The files of a ``git diff`` with their ``index <old>..<new> [mode]`` lines, by path."""
    out: dict[str, SubmittedFile] = {}
    for chunk in re.split(r"(?m)^(?=diff --git )", patch):
        head = re.match(r"diff --git a/(\S+) b/\S+\n", chunk)
        index = re.search(r"(?m)^index ([0-9a-f]+)\.\.([0-9a-f]+)(?: (\d+))?$", chunk)
        if head and index:
            out[head.group(1)] = SubmittedFile(head.group(1), index.group(1), index.group(2), index.group(3) or "100644", chunk)
    return out


def printed_output(messages: list[dict], command: str, occurrence: int = 0) -> str:
    """The ``<output>`` of the ``occurrence``-th observation answering ``command`` (the agent's
    ```` ```bash ```` block, compared stripped). mini-swe-agent writes ``<output>\\n{output}</output>``;
    an output cut at its length limit has ``<output_head>`` instead and is refused."""
    seen = 0
    for i, message in enumerate(messages[:-1]):
        block = re.search(r"```bash\n(.*?)```", message["content"], re.DOTALL) if message["role"] == "assistant" else None
        if block is None or block.group(1).strip() != command:
            continue
        if seen == occurrence:
            observation = messages[i + 1]["content"]
            if "<output>\n" not in observation:
                raise FixtureRefused(f"the output of {command!r} is cut (no whole <output>)")
            return observation.split("<output>\n", 1)[1].rsplit("</output>", 1)[0]
        seen += 1
    raise FixtureRefused(f"the run never ran {command!r} {occurrence + 1} time(s)")


def _hash_object(bare: Path, data: bytes) -> str:
    return subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=bare, input=data, capture_output=True,
                          check=True).stdout.decode().strip()


def _reverse(file: SubmittedFile, final: bytes) -> bytes:
    """The file before ``file.diff`` given its content after (``git apply -R`` in a scratch folder)."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["git", "init", "-q"], cwd=tmp, check=True)
        target = Path(tmp, file.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(final)
        subprocess.run(["git", "apply", "-R", "-"], cwd=tmp, input=file.diff.encode(), capture_output=True, check=True)
        return target.read_bytes()


def base_files(instance_id: str, printouts: tuple[Printout, ...] | None = None) -> dict[str, bytes]:
    """``{path: bytes at the base commit}`` for every file the run's submitted patch changes, from the
    run's printouts (``PRINTOUTS[instance_id]`` by default).

    Raises:
        FixtureRefused: a changed file has no printout, a printout is cut, or a blob id differs from the
            patch's ``index`` line.
    """
    run = run_json(instance_id)
    files = submitted_files(run["info"]["submission"])
    by_path = {p.path: p for p in (PRINTOUTS[instance_id] if printouts is None else printouts)}
    out: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory() as objects:
        subprocess.run(["git", "init", "-q", "--bare", objects], check=True)
        for path, file in files.items():
            if set(file.old) == {"0"}:
                continue  # created by the run: not in the base commit
            printout = by_path.get(path)
            if printout is None:
                raise FixtureRefused(f"{instance_id}: no printout of {path}, which the patch changes")
            shown = printed_output(run["messages"], printout.command, printout.occurrence).encode()
            expected = file.old if printout.shows == "base" else file.new
            if not _hash_object(Path(objects), shown).startswith(expected):
                raise FixtureRefused(f"{instance_id}: the output of {printout.command!r} is not blob {expected} "
                                     f"of {path} ({printout.shows})")
            base = shown if printout.shows == "base" else _reverse(file, shown)
            if not _hash_object(Path(objects), base).startswith(file.old):
                raise FixtureRefused(f"{instance_id}: {path} reversed is not blob {file.old}")
            out[path] = base
    return out


def base_commit(bare: Path, instance_id: str, files: dict[str, bytes], mode: dict[str, str] | None = None) -> str:
    """Write ``files`` as the tree of a new root commit in the bare repository ``bare`` (branch
    ``instance_id``, fixed author and date, so the id is the same on every machine); returns its id."""
    index = bare / f"index-{instance_id}"
    env = {"GIT_INDEX_FILE": str(index)}
    for path, data in sorted(files.items()):
        blob = _hash_object(bare, data)
        subprocess.run(["git", "update-index", "--add", "--cacheinfo", f"{(mode or {}).get(path, '100644')},{blob},{path}"],
                       cwd=bare, env={**os.environ, **env}, check=True)
    tree = subprocess.run(["git", "write-tree"], cwd=bare, env={**os.environ, **env}, capture_output=True, text=True,
                          check=True).stdout.strip()
    index.unlink()
    commit = git(bare, "commit-tree", tree, "-m", f"{instance_id}: the files its patch changes, as the run printed them").strip()
    git(bare, "update-ref", f"refs/heads/{instance_id}", commit)
    return commit


def dataset_row(instance_id: str) -> dict:
    """The SWE-bench Verified row of ``instance_id`` (only that line is parsed)."""
    needle = f'"instance_id": "{instance_id}"'
    with open(DATASET, encoding="utf-8") as fh:
        for line in fh:
            if needle in line:
                return json.loads(line)
    raise KeyError(instance_id)


@dataclass(frozen=True)
class PrintedMirror:
    """A mirror folder of bare repositories (``owner__name.git``) holding the base commits rebuilt from
    the runs' printouts, and a dataset file whose rows name those commits as ``base_commit``."""

    mirror: Path
    dataset: Path
    base_commits: dict[str, str]

    def trajectory(self, instance_id: str) -> Path:
        return MINI / f"{instance_id}.json"


def printed_mirror(folder: Path, instance_ids: list[str] | tuple[str, ...]) -> PrintedMirror:
    """Build the mirror and dataset of ``instance_ids`` under ``folder`` (see :func:`base_files`)."""
    mirror, rows, commits = folder / "mirror", [], {}
    for instance_id in instance_ids:
        row = dataset_row(instance_id)
        bare = mirror / f"{row['repo'].replace('/', '__')}.git"
        if not bare.exists():
            subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
        files = submitted_files(run_json(instance_id)["info"]["submission"])
        commits[instance_id] = base_commit(bare, instance_id, base_files(instance_id),
                                           {p: f.mode for p, f in files.items()})
        rows.append({**row, "base_commit": commits[instance_id]})
    dataset = folder / "dataset.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return PrintedMirror(mirror, dataset, commits)
