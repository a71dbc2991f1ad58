"""The commit whose requirement files an environment is built from, and its stand-in when unknown.

SWE-bench reads a task's ``requirements.txt`` or ``environment.yml`` at its ``environment_setup_commit``:
one commit per (repository, version), the base commit of the newest task of that version, so that every
task of a version shares one environment. Datasets copied without that column (it is null in the shared
SWE-bench Verified file) get a documented stand-in: the ``base_commit`` of the newest task of the same
(repository, version) in SWE-bench Verified, newest by committer date where the repository was at hand
when the table was made, else by the highest pull-request number. The table ships with takeover
(``setup_commit_stand_ins.json``, made by :func:`stand_ins_from_tasks`), so the choice does not depend on
which tasks a run selects. The commit used and how it was chosen are recorded with every environment
(docs/protocol.md section 6).
"""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import BaseModel

from takeover.sources.frozen_history import host_git_env
from takeover.sources.tasks import SourceTask

#: The shipped stand-in table: ``{repo: {version: {"commit", "instance_id", "rule"}}}``.
STAND_IN_TABLE = Path(__file__).with_name("setup_commit_stand_ins.json")
#: ``rule`` values of the table.
BY_DATE, BY_NUMBER = "newest base_commit by committer date", "base_commit of the highest instance number"


class SetupCommit(BaseModel):
    """The commit an environment's requirement files are read at.

    Attributes:
        commit: the commit (None when the task has none at all).
        source: ``environment_setup_commit`` (the task's own), ``stand-in`` (the table's), or
            ``base_commit`` (no stand-in known, or its commit is not in the checkout).
        detail: how the stand-in was chosen (the table's rule and the task it comes from), for notes.
    """

    commit: str | None
    source: str
    detail: str = ""

    @property
    def note(self) -> str:
        """A sentence for the environment's notes."""
        if self.source == "environment_setup_commit":
            return f"requirement files read at environment_setup_commit {self.commit}"
        return f"environment_setup_commit missing: requirement files read at {self.source} {self.commit}" + (
            f" ({self.detail})" if self.detail else "")


@functools.lru_cache(maxsize=1)
def stand_in_table() -> dict[str, dict[str, dict[str, str]]]:
    """The shipped table of stand-ins (read once)."""
    return json.loads(STAND_IN_TABLE.read_text(encoding="utf-8"))


def _has_commit(workspace: Path, commit: str) -> bool:
    out = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=workspace, capture_output=True,
                         check=False, env=host_git_env(workspace))  # newer than the frozen history
    return out.returncode == 0


def setup_commit_for(task: SourceTask, workspace: Path,
                     table: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None) -> SetupCommit:
    """The commit to read ``task``'s requirement files at: its ``environment_setup_commit``, else the
    stand-in for its (repo, version) in ``table`` (default the shipped one, :func:`stand_in_table`) when
    the checkout at ``workspace`` has that commit, else its ``base_commit``."""
    if task.environment_setup_commit:
        return SetupCommit(commit=task.environment_setup_commit, source="environment_setup_commit")
    entry = (stand_in_table() if table is None else table).get(task.repo, {}).get(str(task.version))
    if entry and _has_commit(workspace, entry["commit"]):
        return SetupCommit(commit=entry["commit"], source="stand-in",
                           detail=f"{entry['rule']} of {task.repo} {task.version} in SWE-bench Verified: "
                                  f"{entry['instance_id']}")
    detail = "no stand-in for this repository and version" if not entry else "the stand-in is not in the checkout"
    return SetupCommit(commit=task.base_commit or None, source="base_commit", detail=detail)


#: How long after a setup commit its dependencies are taken to have been resolved (when that is later
#: than the specification's date).
PACKAGES_AFTER_COMMIT = timedelta(days=183)


def packages_date(spec_date: str | None, workspace: Path, commit: str | None) -> str | None:
    """The date unpinned packages resolve at (uv's ``exclude-newer``): the spec's date, or half a year
    after ``commit`` (read from the checkout) when that is later; None when the spec gives no date."""
    if not spec_date:
        return None
    date = datetime.fromisoformat(spec_date)
    if commit:
        out = subprocess.run(["git", "show", "-s", "--format=%ct", commit], cwd=workspace, capture_output=True,
                             text=True, check=False, env=host_git_env(workspace))
        if out.returncode == 0 and out.stdout.strip().isdigit():
            date = max(date, datetime.fromtimestamp(int(out.stdout.strip()), UTC) + PACKAGES_AFTER_COMMIT)
    return date.strftime("%Y-%m-%dT%H:%M:%SZ")


def _instance_number(instance_id: str) -> int:
    tail = instance_id.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def stand_ins_from_tasks(tasks: Iterable[SourceTask],
                         commit_time: Callable[[str, str], int | None]) -> dict[str, dict[str, dict[str, str]]]:
    """The stand-in table of a dataset: per (repo, version), the task whose ``base_commit`` is newest.

    Args:
        commit_time: ``(repo, commit) -> committer time in seconds``, or None when the repository is not at
            hand; a group with any unknown time is ordered by instance number instead.
    """
    groups: dict[tuple[str, str], list[SourceTask]] = {}
    for task in tasks:
        groups.setdefault((task.repo, str(task.version)), []).append(task)
    table: dict[str, dict[str, dict[str, str]]] = {}
    for (repo, version), members in sorted(groups.items()):
        times = [commit_time(repo, t.base_commit) for t in members]
        if all(t is not None for t in times):
            best = max(zip(times, members), key=lambda p: (p[0], _instance_number(p[1].instance_id)))[1]
            rule = BY_DATE
        else:
            best = max(members, key=lambda t: _instance_number(t.instance_id))
            rule = BY_NUMBER
        table.setdefault(repo, {})[version] = {"commit": best.base_commit, "instance_id": best.instance_id,
                                               "rule": rule}
    return table


def mirror_commit_time(mirror: Path) -> Callable[[str, str], int | None]:
    """A ``commit_time`` for :func:`stand_ins_from_tasks` reading bare clones ``mirror/owner__name.git``."""
    def commit_time(repo: str, commit: str) -> int | None:
        bare = mirror / f"{repo.replace('/', '__')}.git"
        if not bare.is_dir():
            return None
        out = subprocess.run(["git", "--git-dir", str(bare), "show", "-s", "--format=%ct", commit],
                             capture_output=True, text=True, check=False)
        return int(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip().isdigit() else None
    return commit_time
