"""The isolation probe: what an agent's shell can see, checked inside the run's own confinement before the
agent starts (docs/protocol.md section 8.6, "Isolation").

An agent must see its task and its view, and nothing else: no commit newer than the task's base commit
(:mod:`takeover.sources.frozen_history`), none of the dataset, the mirror, the output folder around its
workspace or takeover's cache (:func:`takeover._util.sandbox.wrap`'s allow-list). That is verified, not
assumed: :func:`probe_run` runs one shell script through the run's command backend (the same sandbox or
container the agent's commands use) and records in ``run.json`` under ``isolation``:

- ``newer_commits``: commit objects the workspace's git can read (``git cat-file --batch-all-objects``,
  alternates included) that are not ancestors of the starting state; ``newer_in_log_all``: those
  ``git log --all`` lists; ``newer_refs``: refs not merged into it; ``reflog`` and ``remotes``;
- ``readable``: which of the protected paths (the run's own ``run.json``, the folder around the run, the
  cache, the mirror, the dataset, the user's home) the shell could read, by what they are;
- ``network``: ``none`` (only a loopback interface) or ``host``;
- ``confinement``: ``bubblewrap``, ``docker`` or ``none``;
- ``git_works``/``interpreter``: ``git status``/``git diff`` ran, and the task's ``python``.

``isolated`` is true when no newer commit or ref is visible, no protected path is readable and the
commands are confined. ``problems`` says what is wrong in words.
"""

from __future__ import annotations

import hashlib
import shlex
import time
from collections import deque
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from takeover._util import sandbox
from takeover.agents.command_backends import COMMAND_BACKENDS
from takeover.agents.runtime import AgentRun
from takeover.environments import PreparedEnvironment
from takeover.errors import InputError
from takeover.sources.frozen_history import FULL_HISTORY_RECORD
from takeover.sources.repos import alternates, cache_dir

#: How many newer commits the record names (the count is always complete).
EXAMPLES = 5
#: Seconds the probe may take (a sympy workspace: ~45k commits to compare).
PROBE_TIMEOUT = 300.0

_SCRIPT = r"""
cd {root} 2>/dev/null || cd "$PWD"
echo "@head"; git rev-parse HEAD 2>&1 | head -1
ancestry=$(mktemp); git rev-list HEAD 2>/dev/null | sort > "$ancestry"
echo "@objects"
git cat-file --batch-all-objects --batch-check='%(objecttype) %(objectname)' 2>/dev/null \
  | sed -n 's/^commit //p' | sort | comm -13 "$ancestry" - > "$ancestry.objects"
wc -l < "$ancestry.objects"; head -n {examples} "$ancestry.objects" | while read -r c; do git show -s --format='%H %cI %s' "$c" 2>/dev/null | cut -c1-160; done
echo "@logall"; git log --all --reflog --format=%H 2>/dev/null | sort -u | comm -13 "$ancestry" - | wc -l
echo "@refs"; git for-each-ref --no-merged=HEAD --format='%(refname)' 2>/dev/null | head -n 20
echo "@reflog"; find "$(git rev-parse --git-dir 2>/dev/null)/logs" -type f 2>/dev/null | head -n 5
echo "@remotes"; git remote 2>/dev/null
rm -f "$ancestry" "$ancestry.objects"
echo "@paths"
{path_checks}
echo "@net"; tail -n +3 /proc/net/dev 2>/dev/null | cut -d: -f1 | tr -d ' '
echo "@git"; git status --porcelain >/dev/null 2>&1 && git diff --stat >/dev/null 2>&1 && echo ok
echo "@python"; (python -c 'import sys; print(sys.executable)' || python3 -c 'import sys; print(sys.executable)') 2>&1 | tail -1
echo "@end"
"""


class Isolation(BaseModel):
    """``run.json``'s ``isolation``: what the probe found (see the module docstring).

    Attributes:
        isolated: no newer commit or ref visible, no protected path readable, commands confined.
        confinement: ``bubblewrap``, ``docker`` or ``none``.
        base_commit, head: the task's base commit and the starting state the probe compared with.
        newer_commits: commit objects readable in the workspace that are not ancestors of ``head``.
        newer_examples: up to :data:`EXAMPLES` of them (``id date subject``).
        newer_in_log_all: of those, how many ``git log --all --reflog`` lists.
        newer_refs: refs not merged into ``head`` (up to 20).
        reflog: reflog files in the workspace (up to 5); remotes: its remotes.
        readable: the protected paths the shell could read, as ``"<what>: <path>"``.
        checked: every protected path checked (same form), readable or not.
        network: ``none`` or ``host`` (network interfaces other than loopback).
        git_works: ``git status`` and ``git diff`` ran; interpreter: ``sys.executable`` of ``python``.
        problems: what is wrong, one sentence each (empty when isolated).
        seconds: the probe's wall time.
    """

    isolated: bool
    confinement: str
    base_commit: str
    head: str = ""
    newer_commits: int = 0
    newer_examples: list[str] = Field(default_factory=list)
    newer_in_log_all: int = 0
    newer_refs: list[str] = Field(default_factory=list)
    reflog: list[str] = Field(default_factory=list)
    remotes: list[str] = Field(default_factory=list)
    readable: list[str] = Field(default_factory=list)
    checked: list[str] = Field(default_factory=list)
    network: str = "none"
    git_works: bool = False
    interpreter: str = ""
    problems: list[str] = Field(default_factory=list)
    seconds: float = 0.0


def task_folders(workspace: Path, described: dict[str, Any]) -> list[Path]:
    """The folders a sandboxed command of a run must read besides the system folders: the frozen store
    behind the workspace's alternates and the task's environment (:attr:`PreparedEnvironment.readable`:
    its venvs and the interpreters they were made from). ``described`` is ``run.json``'s ``environment``."""
    folders = alternates(workspace)
    if described.get("python"):
        try:
            folders += PreparedEnvironment.model_validate(described).readable
        except ValueError:  # not a prepared environment (an image, the host's interpreters)
            pass
    return list(dict.fromkeys(folders))


def _witness(folder: Path, allowed: list[Path], depth: int = 3) -> Path | None:
    """A file of ``folder`` (searched breadth first, ``depth`` levels) that is neither under an allowed path nor
    on the way to one: what a shell must not read there; the first such folder when no file is found
    (a folder is a weaker witness: a container may hold one at the same path). ``None``: nothing else."""
    queue: deque[tuple[Path, int]] = deque([(folder, 0)])
    first_folder: Path | None = None
    while queue:
        current, level = queue.popleft()
        try:
            entries = sorted(current.iterdir())
        except OSError:
            continue
        for entry in entries:
            resolved = entry.resolve()
            if any(resolved == a or resolved.is_relative_to(a) for a in allowed):
                continue
            if entry.is_file():
                return entry
            if entry.is_dir():
                on_the_way = any(a.is_relative_to(resolved) for a in allowed)
                if not on_the_way and first_folder is None:
                    first_folder = entry
                if level + 1 < depth:
                    queue.append((entry, level + 1))
    return first_folder


def protected_paths(run: AgentRun) -> dict[str, Path]:
    """What the probe checks, by ``"<what>: <path>"``: for each protected place (the run's ``run.json``, the
    folder around the run folder, takeover's cache, the mirror, the dataset, the user's home) one path
    inside it that no allowed mount shows (:func:`_witness`)."""
    allowed = [p.resolve() for p in [run.workspace, run.tmp_dir, *run.readable]]
    places: dict[str, Path] = {"run record": run.out_dir / "run.json", "output folder": run.out_dir.parent,
                               "cache": cache_dir(), "home": Path.home()}
    record = run.workspace / ".git" / FULL_HISTORY_RECORD
    if record.is_file():
        places["mirror"] = Path(record.read_text(encoding="utf-8").strip()).parent
    for key, path in sandbox.private_paths().items():
        places[key.split(":", 1)[0]] = path
    found: dict[str, Path] = {}
    for what, place in places.items():
        if not place.exists():
            continue
        target = place if place.is_file() else _witness(place, allowed)
        if target is not None:
            found[f"{what}: {target}"] = target
    return found


def _fingerprint(path: Path) -> str:
    """What the probe prints for ``path`` when it can read it: the md5 of a file's first 4 KiB, ``folder``."""
    if path.is_dir():
        return "folder"
    try:
        with open(path, "rb") as handle:
            return hashlib.md5(handle.read(4096)).hexdigest()
    except OSError:
        return "unreadable on the host"


def _sections(output: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = None
    for line in output.splitlines():
        if line.startswith("@") and line[1:].isalpha():
            current = line[1:]
            sections[current] = []
        elif current is not None and line.strip():
            sections[current].append(line.strip())
    return sections


def _confinement(run: AgentRun) -> str:
    """``docker`` for a backend whose commands run elsewhere, else ``bubblewrap`` or ``none``."""
    if not run.commands.on_host:
        return "docker"
    return "bubblewrap" if sandbox.status().available else "none"


def probe_run(run: AgentRun) -> Isolation:
    """Run the probe through ``run``'s command backend (:meth:`AgentRun.command_sandbox`) in its command
    root and return what it found (written to ``run.json`` by the caller). A probe that cannot run at all
    is a problem in the record, never an exception: the run goes on, marked not isolated."""
    started = time.perf_counter()
    checks = protected_paths(run)
    lines = []
    for path in checks.values():
        q = shlex.quote(str(path))
        # A file's first 4 KiB by digest: a container's own file at the same path (an image's /root/.bashrc)
        # is not the host's.
        lines.append(f"if [ -f {q} ]; then head -c 4096 {q} 2>/dev/null | md5sum | cut -c1-32; "
                     f"elif [ -d {q} ] && ls {q} >/dev/null 2>&1; then echo folder; else echo no; fi")
    script = _SCRIPT.format(root=shlex.quote(run.command_root), examples=EXAMPLES,
                            path_checks="\n".join(lines) or ":")
    confinement = _confinement(run)
    result = Isolation(isolated=False, confinement=confinement, base_commit=run.spec.base_commit,
                       checked=list(checks))
    environment = None
    try:
        environment = run.command_sandbox()
        done = environment.execute({"command": script}, timeout=PROBE_TIMEOUT)
        output = done.get("output", "")
    except Exception as exc:  # noqa: BLE001 - any failure is a finding, recorded in words
        result.problems.append(f"the probe could not run: {str(exc)[:300]}")
        result.seconds = round(time.perf_counter() - started, 3)
        return result
    finally:
        cleanup = getattr(environment, "cleanup", None)
        if callable(cleanup) and not run.commands.on_host:
            cleanup()
    found = _sections(output)
    if "end" not in found:
        result.problems.append(f"the probe did not finish: {output[-300:]!r}")
    result.head = (found.get("head") or [""])[0]
    objects = found.get("objects") or ["0"]
    result.newer_commits = int(objects[0]) if objects[0].isdigit() else 0
    result.newer_examples = objects[1:]
    logall = found.get("logall") or ["0"]
    result.newer_in_log_all = int(logall[0]) if logall[0].isdigit() else 0
    result.newer_refs = found.get("refs", [])
    result.reflog = found.get("reflog", [])
    result.remotes = found.get("remotes", [])
    answers = found.get("paths", [])
    result.readable = [key for (key, path), answer in zip(checks.items(), answers, strict=False)
                       if answer == _fingerprint(path)]
    interfaces = [i for i in found.get("net", []) if i and i != "lo"]
    result.network = "host" if interfaces else "none"
    result.git_works = found.get("git") == ["ok"]
    result.interpreter = (found.get("python") or [""])[0]
    if confinement == "none":
        result.problems.append("commands run unconfined (no bubblewrap): the whole machine is readable")
    if result.newer_commits:
        result.problems.append(f"{result.newer_commits} commits newer than the starting state are readable "
                               f"({result.newer_in_log_all} by git log --all)")
    if result.newer_refs:
        result.problems.append(f"refs not merged into the starting state: {', '.join(result.newer_refs[:5])}")
    if result.remotes:
        result.problems.append(f"remotes: {', '.join(result.remotes)}")
    if result.readable:
        result.problems.append(f"readable: {'; '.join(result.readable)}")
    result.isolated = not result.problems
    result.seconds = round(time.perf_counter() - started, 3)
    return result


def require_confinement(command_backend: str, *, allow_unconfined: bool = False) -> None:
    """Refuse to start agents whose commands cannot be confined on this machine: a backend whose commands
    run on this host (:attr:`~takeover.agents.command_backend.CommandBackend.on_host`) without bubblewrap.

    Raises:
        InputError: no confinement and ``allow_unconfined`` is false (names the setting that allows it).
    """
    backend = COMMAND_BACKENDS.named(command_backend)
    if backend.on_host and not sandbox.status().available and not allow_unconfined:
        raise InputError("allow_unconfined", f"the agents' commands cannot be confined here ({sandbox.status().message}); "
                         "their runs would not be isolated from the dataset, the mirror and other runs. Install "
                         "bubblewrap, use command_backend = \"docker\", or set allow_unconfined = true in the "
                         "experiment file (the report then marks the runs not isolated)")
