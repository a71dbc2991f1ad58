"""``takeover views``: build the handoff views of one handoff point and write them to a folder.

A thin layer over :func:`takeover.views.build_view` and :func:`write_views`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from takeover._util.folders import check_writable
from takeover.claims.note_checks import check_views_folder
from takeover.cli.console import is_watched, output_console, progress_line
from takeover.cli.failures import command
from takeover.cli.options import (
    CHECKPOINT_DIR_HELP,
    OUT_DIR_HELP,
    POINT_TYPE_HELP,
    DatasetOption,
    EventOption,
    JsonOption,
    JudgeModelOption,
    PointsFileOption,
    RecordOption,
    VerboseOption,
    ViewOptionOption,
    ViewsOption,
    note_writer,
    option_groups,
    read_view_options,
    read_views,
    replay_settings,
    repo_source,
    view_budgets,
)
from takeover.llm import ModelClient, ModelSettings
from takeover.replay_settings import ReplaySettings
from takeover.sources.repos import RepoSource
from takeover.view_budgets import ViewBudgets
from takeover.views import load_inputs, refuse_other_views, write_views
from takeover.vocabulary import EVENT_CUT


@option_groups(model=note_writer, view_budgets=view_budgets, replay=replay_settings, repo_source=repo_source)
def views(
    file: Annotated[Path, typer.Argument(help="Predecessor trajectory file (any supported format).")],
    dataset: DatasetOption,
    model: ModelSettings | None,
    view_budgets: ViewBudgets,
    replay: ReplaySettings,
    repo_source: RepoSource,
    point_type: Annotated[str | None, typer.Option("--point-type", help=POINT_TYPE_HELP)] = None,
    event: EventOption = None,
    out_dir: Annotated[Path | None, typer.Option("--out-dir", help=f"{OUT_DIR_HELP}: <view>.md files and views.json (default with --checkpoint-dir: DIR/views).")] = None,
    checkpoint_dir: Annotated[Path | None, typer.Option("--checkpoint-dir", help=f"{CHECKPOINT_DIR_HELP} The point, patch and handoff state come from there.")] = None,
    view: ViewsOption = None,
    view_option: ViewOptionOption = None,
    points_file: PointsFileOption = None,
    record: RecordOption = None,
    template_dir: Annotated[Path | None, typer.Option("--template-dir", help="Folder of templates overriding the packaged ones.")] = None,
    judge_model: JudgeModelOption = None,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Write the takeover prompt of each view of one handoff point to DIR/<view>.md, plus DIR/views.json.

    The point comes from --checkpoint-dir, --points-file (takeover points --out-dir), or detection
    (replay needs the repository: --mirror); --event N cuts after event N instead (its exact state, as
    takeover checkpoint --event; views.json then names the event; the replay follows the replay flags). The notes views
    need a note-writing model (--model, --base-url), as does any model-written view; --view also takes trace_digest,
    condensed, self_notes (docs/protocol.md sections 7.9, 7.10),
    a plug-in's view, or a view file (PATH.toml: docs/views.md); --view-option NAME.KEY=VALUE sets one view's
    own option. With output to a file or pipe, one line per view also goes to
    stderr as it is written.
    The claims of each model-written note are checked against the trace (DIR/claims.json); --json prints
    views.json with that check as one JSON line. --judge-model asks a model at the note writer's endpoint
    (--model, --base-url) about the claims the rules leave unsupported.

    Exit status: 0 when every requested view was written; 1 when one could not be built (for
    example a notes view without --model) or the run has no such point; 2 on bad input (including a
    run whose instance is not in the dataset when the point must be detected).

    Examples:

        takeover views trajs/psf__requests-1766.json --point-type after_first_source_edit \\
          --dataset swebench_verified.jsonl --mirror /data/mirror --out-dir views/ \\
          --view raw_trace --view summary_notes --model openai/qwen --base-url http://127.0.0.1:8080/v1

        takeover views trajs/psf__requests-1766.json --checkpoint-dir cp/ --dataset swebench_verified.jsonl
    """
    console = output_console(stderr=True)
    if point_type is None and checkpoint_dir is None and event is None:
        raise typer.BadParameter("give --point-type TYPE, --event N, or --checkpoint-dir DIR")
    out = out_dir
    if out is None:
        if checkpoint_dir is None:
            raise typer.BadParameter("give --out-dir DIR (or --checkpoint-dir DIR to write DIR/views)")
        out = checkpoint_dir / "views"
    names = read_views(view)
    options = read_view_options(view_option)
    if judge_model and model is None:
        raise typer.BadParameter("--judge-model asks a model at the note writer's endpoint: give --model (and "
                                 "--base-url) too", param_hint="--judge-model")
    check_writable(out)
    refuse_other_views(out)  # before the replay and the notes: a folder of the user's files is never written
    inputs = load_inputs(file, point_type, dataset, record=record, repo_source=repo_source,
                         points_file=points_file, checkpoint_dir=checkpoint_dir, event=event, replay=replay)
    for note in inputs.notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")
    if inputs.point is None:
        what = f"exact state after event {event}" if event is not None else f"{inputs.point_type} point in this run"
        console.print(f"[red]no {what}:[/red] {escape(str(inputs.missing_reason))}")
        raise typer.Exit(1)
    refuse_other_views(out, inputs, names)  # the point is known: another point's views are refused too
    # One view at a time (write_views keeps the others in views.json), so that each shows when it is done.
    lines = not is_watched(console)
    for number, name in enumerate(names, 1):
        started = time.monotonic()
        summary = write_views(inputs, [name], out, model=model, template_dir=template_dir, view_budgets=view_budgets,
                              view_options=options)
        if lines:
            row = summary["views"].get(name) or {}
            note = row.get("note_tokens") or {}
            tokens = note.get("prompt_tokens", 0) + note.get("completion_tokens", 0)
            state = "reused" if row.get("reused") else ("written" if row.get("file") else "not built")
            progress_line(f"views {number}/{len(names)} {name} {state} ({row.get('validation')}), "
                          f"{time.monotonic() - started:.1f} s, {tokens:,} note tokens")
    judge = ModelClient(model.model_copy(update={"model": judge_model})) if judge_model and model else None
    try:
        claims = check_views_folder(out, summary["views"], inputs.trajectory, inputs.point.event_index,
                                    checkpoint_patch=inputs.checkpoint_patch,
                                    problem_statement=inputs.task.problem_statement, judge=judge)
    finally:
        if judge is not None:
            judge.close()
    if as_json:
        print(json.dumps({**summary, "claims": claims}, ensure_ascii=False))
    where = "" if inputs.point_type == EVENT_CUT else f"{inputs.point_type} "
    table = Table(title=f"{escape(inputs.task.instance_id)} @ {where}(event {inputs.point.event_index})")
    for column in ("view", "characters", "est. tokens", "note tokens", "validation"):
        table.add_column(column)
    for name, row in summary["views"].items():
        note = row.get("note_tokens")
        table.add_row(
            name,
            str(row.get("characters", "-")),
            str(row.get("estimated_tokens", "-")),
            str(note["prompt_tokens"] + note["completion_tokens"]) if note else "-",
            escape(str(row["validation"])),
        )
    if not as_json:
        output_console().print(table)
    for name, check in claims.items():
        f = check.get("figures")
        console.print(f"claims of {name}: " + (f"{f['claims']} ({f['supported']} supported, {f['unsupported']} "
                      f"unsupported, {f['contradicted']} contradicted)" if f else escape(str(check.get("error")))))
    for name, row in summary["views"].items():
        if row.get("error"):
            # The error may already start with the view's name; print it once.
            message = str(row["error"]).removeprefix(f"{name}:").strip()
            console.print(f"[yellow]{name}:[/yellow] {escape(message)}")
    console.print(f"wrote {escape(str(out / 'views.json'))}")
    unbuilt = [name for name in names if not (summary["views"].get(name) or {}).get("file")]
    if unbuilt:
        console.print(f"[red]not built:[/red] {', '.join(unbuilt)}")
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``takeover views`` to ``app``."""
    command(app, "views")(views)
