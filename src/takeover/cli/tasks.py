"""``takeover tasks ...``: source tasks (docs/protocol.md section 2)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from takeover._util.containers import image_identity
from takeover._util.folders import check_writable, own_file
from takeover.cli.console import output_console
from takeover.cli.failures import command
from takeover.cli.options import (
    OUT_DIR_HELP,
    DatasetOption,
    InstanceIdsOption,
    JsonOption,
    VerboseOption,
)
from takeover.environments import instance_image_name
from takeover.errors import InputError, TakeoverError
from takeover.sources.tasks import (
    PAPER_DIFFICULTIES,
    PAPER_LIMIT,
    PAPER_SEED,
    load_tasks,
    make_selection,
    read_selection_header,
    write_selection,
)

#: The file ``takeover tasks select --out-dir DIR`` writes (named as in an experiment's output folder).
SELECTION_FILE = "tasks.jsonl"

tasks_app = typer.Typer(
    help="Source tasks: load SWE-bench instances and make the seeded selection.", no_args_is_help=True
)


def _counts_table(title: str, column: str, counts: Counter) -> Table:
    table = Table(title=title)
    table.add_column(column)
    table.add_column("tasks", justify="right")
    for key, n in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))):
        table.add_row(str(key), str(n))
    table.add_row("[bold]total[/bold]", f"[bold]{sum(counts.values())}[/bold]")
    return table


@command(tasks_app, "select")
def select(
    dataset: DatasetOption,
    out_dir: Annotated[
        Path | None, typer.Option("--out-dir", help=f"{OUT_DIR_HELP}: the selection file DIR/{SELECTION_FILE} "
                                                    "(JSON Lines with a header line). Required.")
    ] = None,
    difficulty: Annotated[
        list[str] | None,
        typer.Option(
            "--difficulty",
            help="Difficulty bucket to keep (repeatable), spelled as in the dataset, e.g. '15 min - 1 hour'; "
            "an unknown bucket is an error (exit 2) listing the buckets present.",
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help=f"Seed of the shuffle (paper: {PAPER_SEED}).")] = PAPER_SEED,
    limit: Annotated[
        int,
        typer.Option("--limit", help=f"Number of tasks kept (paper: {PAPER_LIMIT}); 0 keeps every candidate; "
                                     "negative is an error."),
    ] = PAPER_LIMIT,
    verbose: VerboseOption = False,
) -> None:
    """Write the seeded selection of source tasks (docs/protocol.md section 2) and print per-repository and
    per-difficulty counts. The file is a dataset too (its header line records how it was made).

    Example:

        takeover tasks select --dataset swebench_verified.jsonl --difficulty "15 min - 1 hour" \
          --difficulty "1-4 hours" --seed 20260430 --limit 75 --out-dir .
    """
    buckets = list(difficulty) if difficulty else list(PAPER_DIFFICULTIES)
    if out_dir is None:
        raise typer.BadParameter(f"give --out-dir DIR (the selection is written as DIR/{SELECTION_FILE})",
                                 param_hint="--out-dir")
    out = out_dir / SELECTION_FILE
    if limit < 0:
        raise InputError("--limit", f"must be 0 or more, got {limit}")
    check_writable(out, file=True, flag="--out-dir" if out_dir is not None else "--out")
    own_file(out, is_own=_is_selection, what="a selection file")  # a selection is replaced, nothing else
    # Buckets typed by the user must exist; the paper's default set may be partly absent from a subset.
    header, chosen = make_selection(
        dataset, buckets, seed, limit if limit > 0 else None, check_buckets=bool(difficulty)
    )
    write_selection(out, chosen, header)
    console = output_console()
    console.print(_counts_table("Selected tasks per repository", "repo", Counter(t.repo for t in chosen)))
    console.print(
        _counts_table("Selected tasks per difficulty", "difficulty", Counter(t.difficulty for t in chosen))
    )
    console.print(
        f"selected {header.count} of {header.candidates} tasks in {len(buckets)} bucket(s); "
        f"seed {seed}; dataset sha256 {header.dataset_sha256[:12]}...; wrote {out}"
    )


def _is_selection(path: Path) -> bool:
    try:
        return read_selection_header(path) is not None
    except TakeoverError:
        return False


@command(tasks_app, "images")
def images(
    dataset: DatasetOption,
    instance_id: InstanceIdsOption = None,
    pull: Annotated[bool, typer.Option("--pull", help="Pull each image the Docker daemon lacks (and keep it); "
                                                      "print each with its content id and size.")] = False,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Print the official SWE-bench images that the tasks of a dataset or selection need for the docker
    backends (one name a line), and with --pull make sure the Docker daemon has each. Exit status 1 when an
    image could not be pulled (each such line says why), 2 on bad input.

    With --json, one line per image: name, id (null without --pull), size_bytes, error.

    Examples:

        takeover tasks images --dataset tasks.jsonl

        takeover tasks images --dataset tasks.jsonl --pull
    """
    tasks = load_tasks(dataset)
    known = {t.instance_id for t in tasks}
    unknown = sorted(set(instance_id or ()) - known)
    if unknown:
        raise InputError(dataset, f"no task {', '.join(unknown)}", field="instance_id")
    names = list(dict.fromkeys(instance_image_name(t.instance_id) for t in tasks
                               if not instance_id or t.instance_id in instance_id))
    failed = 0
    for name in names:
        record = {"name": name, "id": None, "size_bytes": None, "error": None}
        if pull:
            try:
                found = image_identity(name, pull=True)
                record.update(id=found.id, size_bytes=found.size_bytes)
            except TakeoverError as exc:
                record["error"], failed = str(exc), failed + 1
        if as_json:
            print(json.dumps(record))
        elif record["error"]:
            print(f"{name}  error: {record['error']}")
        elif pull:
            print(f"{name}  {record['id'][:19]}  {(record['size_bytes'] or 0) / 1e9:.2f} GB")
        else:
            print(name)
    if failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``takeover tasks`` to ``app``."""
    app.add_typer(tasks_app, name="tasks")
