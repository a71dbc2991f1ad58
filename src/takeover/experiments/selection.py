"""The source tasks of an experiment and the recorded runs to import (docs/protocol.md section 2).

:func:`index_trajectories` lists the configured trajectory files by instance, :func:`select_source_tasks`
chooses the tasks (explicit ids, or the seeded selection), and :func:`write_task_files` writes them to the
output folder, where every unit reads its task from.
"""

from __future__ import annotations

import json
from pathlib import Path

from takeover._util.io import atomic_write_json, atomic_write_text, sha256_file, stable_hash
from takeover.errors import InputError
from takeover.experiments.config import ExperimentConfig
from takeover.results import TaskInputs, TrajectoryFile
from takeover.sources.tasks import SourceTask, load_tasks, select_tasks, task_index
from takeover.trajectories import read_trajectories
from takeover.trajectories.registry import expand_paths


def select_source_tasks(config: ExperimentConfig, import_index: dict[str, TrajectoryFile] | None,
                        unreadable: dict[str, str] | None = None) -> list[SourceTask]:
    """The source tasks of the experiment (docs/protocol.md section 2).

    Explicit ``dataset.instance_ids`` win. Otherwise the dataset is filtered to ``repos`` (when given) and,
    when trajectories are imported, to instances that have one; then the seeded selection of
    :func:`takeover.sources.tasks.select_tasks` keeps ``limit`` of the ``difficulties`` (an empty list keeps
    every
    difficulty).

    Raises:
        InputError: the dataset cannot be read, an explicit instance id is not in it (field
            ``dataset.instance_ids``), or no task is selected (field ``dataset``: the message says which
            step left none: repositories, imported trajectories, difficulties or the limit).
    """
    tasks = load_tasks(config.dataset_path)
    ds = config.dataset
    every = len(tasks)
    if ds.instance_ids:
        by_id = task_index(tasks)
        unknown = [i for i in ds.instance_ids if i not in by_id]
        if unknown:
            raise InputError(config.dataset_path, f"instances not in the dataset: {', '.join(unknown[:5])}",
                             field="dataset.instance_ids")
        return [by_id[i] for i in ds.instance_ids]
    steps = [f"the dataset holds {every} task(s)"]
    if ds.repos:
        tasks = [t for t in tasks if t.repo in set(ds.repos)]
        steps.append(f"{len(tasks)} of repos {', '.join(ds.repos)}")
    if import_index is not None:
        tasks = [t for t in tasks if t.instance_id in import_index]
        unread = (f"; {len(unreadable)} trajectory file(s) could not be read, e.g. {next(iter(unreadable.values()))}"
                  if unreadable else "")
        steps.append(f"{len(tasks)} with an imported trajectory ({len(import_index)} run(s) imported{unread})")
    difficulties = ds.difficulties or sorted({t.difficulty for t in tasks if t.difficulty is not None})
    chosen = select_tasks(tasks, difficulties, ds.seed, ds.limit)
    if not chosen:
        present = sorted({t.difficulty for t in tasks if t.difficulty})
        if tasks and ds.limit == 0:
            steps.append("limit 0")
        elif tasks:
            steps.append(f"none in difficulties {', '.join(map(repr, difficulties)) or '(none)'} (present: "
                         f"{', '.join(map(repr, present)) or 'none'})")
        raise InputError(config.dataset_path, "the experiment selects no task: " + "; ".join(steps),
                         field="dataset")
    return chosen


def _trajectory_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files.extend(expand_paths([p], keep_run_dirs=False))  # index_trajectories hashes each file
        elif p.is_file():
            files.append(p)
        else:
            raise InputError(p, "trajectory file or folder not found", field="predecessor.trajectories")
    return files


def index_trajectories(config: ExperimentConfig, notes: list[str],
                       unreadable: dict[str, str] | None = None) -> dict[str, TrajectoryFile]:
    """``{instance_id: TrajectoryFile}`` over the configured trajectory files.

    Each file's index is cached under ``OUT/work/import_index/<sha256>.json`` so a re-run does not parse
    the trajectories again (a file that could not be read is cached with its error, so a re-run says it
    again). Files that cannot be read (damaged, or no reader recognises them: folders of agent output
    often hold summaries beside the runs) are skipped with a note appended to ``notes`` and, when
    ``unreadable`` is given, their one-line error put there by path. When an instance has several runs,
    the first (file order, then record order) is used and the others are noted.

    Raises:
        InputError: a configured trajectory path does not exist (field ``predecessor.trajectories``).
    """
    cache = config.out / "work" / "import_index"
    index: dict[str, TrajectoryFile] = {}
    for f in _trajectory_files(config.trajectory_paths):
        sha = sha256_file(f)
        cached = cache / f"{sha}.json"
        entries: list | dict = []
        if cached.exists():
            try:
                entries = json.loads(cached.read_bytes())
            except ValueError:  # a damaged cache entry is read again
                cached.unlink()
        if not cached.exists():
            try:
                trajs = read_trajectories(f)
            except InputError as exc:
                entries = {"skipped": str(exc)}
            else:
                entries = [
                    {"record": t.record, "instance_id": t.instance_id, "format": t.format} for t in trajs
                ]
            atomic_write_json(cached, entries)
        if isinstance(entries, dict):
            error = str(entries.get("skipped"))
            notes.append(f"skipped {error}")
            if unreadable is not None:
                unreadable[str(f)] = error
            continue
        for e in entries:
            iid = e["instance_id"]
            if not iid:
                continue
            if iid in index:
                notes.append(f"{iid}: several runs; using {index[iid].file} {index[iid].record or ''}")
                continue
            index[iid] = TrajectoryFile(file=str(f), record=e["record"], sha256=sha, format=e["format"])
    return index


def write_task_files(out: Path, tasks: list[SourceTask]) -> dict[str, TaskInputs]:
    """Write ``OUT/tasks/<instance_id>.json`` per task and ``OUT/tasks.jsonl``; return each task's
    :class:`~takeover.results.TaskInputs` (the file and a hash of the task record) by instance id."""
    files: dict[str, TaskInputs] = {}
    for t in tasks:
        path = out / "tasks" / f"{t.instance_id}.json"
        atomic_write_json(path, t)
        files[t.instance_id] = TaskInputs(instance_id=t.instance_id, task=str(path),
                                          task_sha256=stable_hash(t.model_dump(mode="json"), 32))
    atomic_write_text(out / "tasks.jsonl", "".join(t.model_dump_json() + "\n" for t in tasks))
    return files


def why_not_imported(instance_id: str, unreadable: dict[str, str]) -> str:
    """Why a selected instance has no run to import: its trajectory file could not be read (a file whose
    name holds the instance id), or some files could not be read and none of the others holds its run."""
    own = [error for path, error in unreadable.items() if instance_id in Path(path).name]
    if own:
        return f"its trajectory file could not be read: {own[0]}"
    if unreadable:
        error = next(iter(unreadable.values()))
        return (f"no imported trajectory for this instance; {len(unreadable)} trajectory file(s) could not be "
                f"read (see import_notes.txt), e.g. {error}")
    return "no imported trajectory for this instance"
