"""``takeover inspect FILE...``: one row per trajectory (format, counts, tokens, exit status, patch files)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from takeover.cli.console import output_console
from takeover.cli.failures import command
from takeover.cli.options import JsonOption, VerboseOption
from takeover.errors import InputError, TakeoverError
from takeover.trajectories import CUT_LAST_LINE, read_trajectories, summarize
from takeover.trajectories.registry import expand_paths, is_unknown_format


def inspect(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="Trajectory files, run folders, or folders of trajectories (format detected by content; "
            "other JSON files in a folder are skipped with a note)."
        ),
    ],
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Summarize trajectories: one row per run.

    With --json, one line per run, in the order of the files given: format, instance_id, agent_events,
    actions, observations, llm_calls, prompt_tokens and completion_tokens (null when the run records no
    usage), usage_per_call, exit_status, final_patch_files, calls_with_usage (fewer than llm_calls: the
    token totals are partial, over the calls that record usage).

    Bad files are reported as one ``error: FILE: RECORD: field 'F': reason`` line each on stderr; the good
    files are still reported, and the exit status is 2 when any file was bad. A session log whose last
    line was cut off mid-write (the agent was killed) is read up to it, with a ``note:`` line.

    Examples:

        takeover inspect run.traj.json output.jsonl

        takeover inspect runs/ --json
    """
    failed = 0
    rows = []
    for given in files:
        try:
            paths = expand_paths([given])
        except TakeoverError as exc:
            print(f"error: {exc}", file=sys.stderr)
            failed += 1
            continue
        from_folder = paths != [given]
        for path in paths:
            try:
                trajectories = read_trajectories(path)
            except InputError as exc:
                if from_folder and is_unknown_format(exc):
                    # Folders of agent output hold reports and indexes beside the runs.
                    print(f"note: skipped {path}: not a trajectory file of any known format", file=sys.stderr)
                    continue
                print(f"error: {exc}", file=sys.stderr)
                failed += 1
                continue
            except TakeoverError as exc:
                print(f"error: {exc}", file=sys.stderr)
                failed += 1
                continue
            for traj in trajectories:
                if traj.metadata.get(CUT_LAST_LINE):
                    print(f"note: {traj.metadata[CUT_LAST_LINE]}", file=sys.stderr)
                summary = summarize(traj)
                if as_json:
                    print(json.dumps(summary.json_row(), ensure_ascii=False), flush=True)
                rows.append(summary)
    if not as_json and rows:
        table = Table(title="Trajectories")
        for name, justify in (
            ("format", "left"),
            ("instance id", "left"),
            ("agent events", "right"),
            ("actions", "right"),
            ("observations", "right"),
            ("LLM calls", "right"),
            ("prompt tokens", "right"),
            ("completion tokens", "right"),
            ("exit status", "left"),
            ("final patch files", "left"),
        ):
            # Every cell folds on a narrow terminal: wrapped, never cut or collapsed to zero width.
            table.add_column(name, justify=justify, overflow="fold")
        for s in rows:
            mark = "" if s.usage_per_call else "*"
            if s.partial_usage:
                mark = f" ({s.calls_with_usage} of {s.llm_calls} calls)"
            table.add_row(
                s.format,
                s.instance_id or "-",
                str(s.agent_events),
                str(s.actions),
                str(s.observations),
                str(s.llm_calls),
                "n/a" if s.prompt_tokens is None else f"{s.prompt_tokens}{mark}",
                "n/a" if s.completion_tokens is None else f"{s.completion_tokens}{mark}",
                s.exit_status or "-",
                "\n".join(s.final_patch_files) or "-",
            )
        console = output_console()
        console.print(table)
        if any(not s.usage_per_call for s in rows):
            console.print("* run totals from the file (no per-call usage recorded)", highlight=False)
        if any(s.partial_usage for s in rows):
            console.print("(N of M calls): partial totals, over the calls that record usage", highlight=False)
        if any(s.prompt_tokens is None for s in rows):
            console.print("n/a: the run records no token usage", highlight=False)
    if failed:
        raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    """Add ``takeover inspect`` to ``app``."""
    command(app, "inspect")(inspect)
