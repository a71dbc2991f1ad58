"""Source tasks: SWE-bench instances, loading and the seeded selection (docs/protocol.md section 2).

Public API:

- :class:`SourceTask`: one SWE-bench instance (shared record).
- :func:`load_tasks`: rows from a local ``.jsonl`` / ``.json`` / ``.parquet`` file, or a Hugging Face dataset
  name (``princeton-nlp/SWE-bench_Verified``, through ``datasets``; needs the network or its cache).
- :func:`task_by_id` / :func:`task_index`: look one task, or many, up by ``instance_id``.
- :func:`select_tasks`: the seeded selection of docs/protocol.md section 2.
- :func:`write_selection` / :func:`read_selection_header`: the selection file.

Selection file layout (decided here): JSON Lines; the first line is a header record
``{"takeover_selection": 1, "dataset": ..., "dataset_sha256": ..., "difficulties": [...], "seed": ...,
"limit": ..., "candidates": ..., "count": ...}`` and every further line is one :class:`SourceTask` in
selection order. :func:`load_tasks` recognises the header by its ``takeover_selection`` key and skips it, so
a selection file is itself a dataset. The bytes depend only on (dataset content, buckets, seed, limit) and
the dataset path as given: the same inputs always give the same file.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from takeover._util import sandbox
from takeover._util.io import atomic_write_text, iter_jsonl, read_text, sha256_file
from takeover.errors import EnvironmentUnavailable, InputError
from takeover.input_schemas import DatasetRow, checked, refuse_duplicates, test_names

#: Difficulty buckets of the paper's selection (docs/protocol.md section 2).
PAPER_DIFFICULTIES: tuple[str, ...] = ("15 min - 1 hour", "1-4 hours")
#: Seed and size of the paper's selection (docs/protocol.md section 2).
PAPER_SEED = 20260430
PAPER_LIMIT = 75
#: Key that marks the header line of a selection file.
SELECTION_HEADER_KEY = "takeover_selection"


def _as_test_list(value: Any) -> list[str]:
    """FAIL_TO_PASS / PASS_TO_PASS arrive as JSON lists or as JSON-encoded strings (Hugging Face); ``None``
    (a task built in Python without them) is no test. A dataset file's rows have both, checked at the door."""
    return [] if value is None else test_names(value)


class SourceTask(BaseModel):
    """One SWE-bench instance (docs/protocol.md section 1, "source task").

    Field names are SWE-bench's own. ``FAIL_TO_PASS``/``PASS_TO_PASS`` are always lists here, whatever
    the encoding in the file. Unknown fields of the dataset row are kept (``extra="allow"``) so that a
    task written back out loses nothing.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    version: str | None = None
    patch: str = ""
    test_patch: str = ""
    FAIL_TO_PASS: list[str] = Field(default_factory=list)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    difficulty: str | None = None
    environment_setup_commit: str | None = None

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _decode_tests(cls, value: Any) -> list[str]:
        return _as_test_list(value)

    @field_validator("version", mode="before")
    @classmethod
    def _version_as_text(cls, value: Any) -> str | None:
        # Some dumps store versions as floats (1.1), which must stay "1.1", never "1.10".
        return None if value is None else str(value)

    @property
    def repo_slug(self) -> str:
        """``owner__name``: the mirror folder stem and SWE-bench's instance prefix."""
        return self.repo.replace("/", "__")


class SelectionHeader(BaseModel):
    """First line of a selection file: everything the selection is reproducible from (docs/protocol.md section 2).

    ``candidates`` is the number of dataset rows in the chosen buckets; ``count`` the number kept
    (``min(limit, candidates)``).
    """

    takeover_selection: int = 1
    dataset: str
    dataset_sha256: str
    difficulties: list[str]
    seed: int
    limit: int | None
    candidates: int
    count: int


def _task_from_row(row: Any, path: Path | str, record: str) -> tuple[str, SourceTask]:
    """``(record, task)`` of one dataset row, checked at the door (:class:`takeover.input_schemas.DatasetRow`)."""
    checked(DatasetRow, path, record, row)
    try:
        return record, SourceTask.model_validate(row)
    except ValidationError as exc:
        raise InputError.from_validation(path, exc, record=record) from None


def _is_header(row: Any) -> bool:
    return isinstance(row, dict) and SELECTION_HEADER_KEY in row


def _load_jsonl(path: Path) -> list[tuple[str, SourceTask]]:
    tasks = []
    for lineno, row in iter_jsonl(path):
        if _is_header(row):
            continue
        tasks.append(_task_from_row(row, path, f"line {lineno}"))
    return tasks


def _load_json(path: Path) -> list[tuple[str, SourceTask]]:
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not valid JSON ({exc.msg} at column {exc.colno})", record=f"line {exc.lineno}") from None
    if isinstance(data, dict):
        # A single instance, or a {"instances": [...]} / {"rows": [...]} wrapper.
        for key in ("instances", "rows", "data"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
        else:
            data = [data]
    if not isinstance(data, list):
        raise InputError(path, "expected a JSON list of SWE-bench instances")
    return [_task_from_row(row, path, f"index {i}") for i, row in enumerate(data) if not _is_header(row)]


def _load_parquet(path: Path) -> list[tuple[str, SourceTask]]:
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(path).to_pylist()
    except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError, ArrowIOError an OSError
        raise InputError(path, f"not a readable parquet file ({exc})") from None
    return [_task_from_row(row, path, f"row {i}") for i, row in enumerate(rows)]


def _load_hf(name: str, split: str) -> list[tuple[str, SourceTask]]:
    import datasets  # a dependency of mini-swe-agent; imported here because it is slow to import

    try:
        ds = datasets.load_dataset(name, split=split)
    except Exception as exc:  # noqa: BLE001 -- network, hub and cache errors have no common base class
        raise EnvironmentUnavailable(
            f"could not load Hugging Face dataset {name!r} (split {split!r}): {exc}. Offline? Pass a local "
            ".jsonl/.json/.parquet file instead"
        ) from None
    return [_task_from_row(dict(row), name, f"row {i}") for i, row in enumerate(ds)]


def load_tasks(source: Path | str, *, split: str = "test") -> list[SourceTask]:
    """Load SWE-bench instances.

    Args:
        source: a local file (``.jsonl``, ``.json`` list, ``.parquet``; a selection file written by
            :func:`write_selection` also works, its header is skipped) or, when no such file exists, a
            Hugging Face dataset name such as ``princeton-nlp/SWE-bench_Verified``.
        split: dataset split for Hugging Face names.

    Every row is checked at the door (:class:`takeover.input_schemas.DatasetRow`, either swebench format):
    the task's identity, problem statement and both test lists are required and typed.

    Returns:
        The instances in file order. ``FAIL_TO_PASS``/``PASS_TO_PASS`` are lists whichever encoding the
        file used (JSON lists or JSON-encoded strings).

    Raises:
        InputError: unreadable file, a bad row (names file, ``line N``/``index N``/``row N`` and field: a
            required field missing, such as ``FAIL_TO_PASS``, or of another type), two rows with one
            ``instance_id`` (names both), or a file that holds no task.
        EnvironmentUnavailable: a dataset name that cannot be loaded (offline and not cached, unknown name).
    """
    path = Path(source)
    if path.is_file():
        sandbox.note_private(path, "dataset")  # its rows hold the reference patches: the probe checks it
        suffix = path.suffix.lower()
        loaders = {".jsonl": _load_jsonl, ".json": _load_json, ".parquet": _load_parquet}
        if suffix not in loaders:
            raise InputError(path, f"unknown dataset file type {suffix!r} (expected .jsonl, .json or .parquet)")
        rows = loaders[suffix](path)
        if not rows:
            raise InputError(path, "holds no tasks (an empty dataset)")
        refuse_duplicates(path, rows, lambda t: {"instance_id": t.instance_id})
        return [task for _, task in rows]
    if path.exists():
        raise InputError(path, "is not a file")
    name = str(source)
    if "/" in name and not name.startswith((".", "/")) and name.count("/") == 1 and not path.suffix:
        rows = _load_hf(name, split)
        refuse_duplicates(name, rows, lambda t: {"instance_id": t.instance_id})
        return [task for _, task in rows]
    raise InputError(path, "no such file")


def task_by_id(source: Path | str, instance_id: str) -> SourceTask | None:
    """The task ``instance_id`` of ``source`` (a dataset as :func:`load_tasks` reads it), or ``None`` when
    the dataset has no such task.

    Raises:
        InputError, EnvironmentUnavailable: as :func:`load_tasks`.
    """
    return next((t for t in load_tasks(source) if t.instance_id == instance_id), None)


def task_index(tasks: Iterable[SourceTask]) -> dict[str, SourceTask]:
    """``{instance_id: task}`` over many tasks, for looking up many ids (:func:`load_tasks` refuses a dataset
    with two rows of one id)."""
    return {t.instance_id: t for t in tasks}


def not_in_dataset(instance_id: str | None, dataset: Path | str) -> str:
    """Why a run's task is not found in ``dataset``, naming the instance, or saying that the run names none
    (a session file of a tool that records no SWE-bench instance): never "instance None"."""
    if not instance_id:
        return (f"the run names no SWE-bench instance (no instance_id in the file), so its task cannot be found in "
                f"{dataset}")
    return f"instance {instance_id!r} is not in {dataset}"


def select_tasks(
    tasks: Iterable[SourceTask], difficulties: Sequence[str], seed: int, limit: int | None
) -> list[SourceTask]:
    """The seeded selection of docs/protocol.md section 2.

    Keeps the tasks whose ``difficulty`` is one of ``difficulties``, sorts them by ``instance_id`` (so the
    result does not depend on the file's row order), shuffles them with ``random.Random(seed)`` and keeps
    the first ``limit`` (all when ``limit`` is ``None``). The result is therefore a function of (dataset
    content, buckets, seed, limit) alone.
    """
    wanted = set(difficulties)
    candidates = sorted((t for t in tasks if t.difficulty in wanted), key=lambda t: t.instance_id)
    random.Random(seed).shuffle(candidates)
    return candidates if limit is None else candidates[:limit]


def write_selection(path: Path | str, tasks: Sequence[SourceTask], header: SelectionHeader) -> Path:
    """Write a selection file atomically: header line, then one task per line (see module docstring)."""
    lines = [json.dumps(header.model_dump(mode="json"), ensure_ascii=False)]
    lines += [json.dumps(t.model_dump(mode="json"), ensure_ascii=False) for t in tasks]
    return atomic_write_text(path, "\n".join(lines) + "\n")


def read_selection_header(path: Path | str) -> SelectionHeader | None:
    """The header of a selection file, or ``None`` when the file has none (a plain dataset).

    Raises:
        InputError: a header line whose fields are wrong (names the file, the line and the field).
    """
    for lineno, row in iter_jsonl(path):
        if _is_header(row):
            try:
                return SelectionHeader.model_validate(row)
            except ValidationError as exc:
                err = exc.errors()[0]
                raise InputError(path, err["msg"], record=f"line {lineno}", field=".".join(map(str, err["loc"]))) from None
        return None
    return None


def _bucket_order(bucket: str) -> tuple[int, str]:
    order = ("<15 min fix", "15 min - 1 hour", "1-4 hours", ">4 hours")
    return (order.index(bucket) if bucket in order else len(order), bucket)


def make_selection(
    dataset: Path | str, difficulties: Sequence[str], seed: int, limit: int | None, *, check_buckets: bool = True
) -> tuple[SelectionHeader, list[SourceTask]]:
    """Load ``dataset`` (a local file), select (docs/protocol.md section 2) and return (header, tasks).

    Raises:
        InputError: the file is missing or malformed, ``limit`` is negative, or (with ``check_buckets``)
            a requested difficulty bucket does not occur in the dataset (the message lists the buckets
            present): a mistyped bucket would otherwise select nothing, silently.
    """
    path = Path(dataset)
    if limit is not None and limit < 0:
        raise InputError("--limit", f"must be 0 or more, got {limit}")
    if not path.is_file():
        raise InputError(path, "the selection needs a local dataset file (its sha256 is recorded)")
    tasks = load_tasks(path)
    present = sorted({t.difficulty for t in tasks if t.difficulty}, key=_bucket_order)
    unknown = [d for d in difficulties if d not in present] if check_buckets else []
    if unknown:
        raise InputError(
            path,
            f"no task has difficulty {unknown[0]!r}; buckets in this dataset: "
            + ", ".join(repr(b) for b in present),
            field="difficulty",
        )
    wanted = set(difficulties)
    candidates = sum(1 for t in tasks if t.difficulty in wanted)
    chosen = select_tasks(tasks, difficulties, seed, limit)
    header = SelectionHeader(
        dataset=str(dataset),
        dataset_sha256=sha256_file(path),
        difficulties=list(difficulties),
        seed=seed,
        limit=limit,
        candidates=candidates,
        count=len(chosen),
    )
    return header, chosen
