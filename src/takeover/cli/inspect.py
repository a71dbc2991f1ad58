"""``takeover inspect FILE...``: one row per trajectory (format, counts, tokens, exit status, patch files)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from takeover.errors import TakeoverError


def inspect(
    files: Annotated[
        list[Path], typer.Argument(help="Trajectory files or run folders (format detected by content).")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line per trajectory.")] = False,
) -> None:
    """Summarize trajectories: one row per run.

    Bad files are reported as one ``error: FILE: RECORD: field 'F': reason`` line each on stderr; the good
    files are still reported, and the exit status is 2 when any file was bad.
    """
    from takeover.trajectories import read_trajectories, summarize

    failed = 0
    rows = []
    for path in files:
        try:
            trajectories = read_trajectories(path)
        except TakeoverError as exc:
            print(f"error: {exc}", file=sys.stderr)
            failed += 1
            continue
        for traj in trajectories:
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
            # Counts never wrap; names and paths fold when the terminal is narrow.
            table.add_column(
                name, justify=justify, no_wrap=justify == "right" or name == "format", overflow="fold"
            )
        for s in rows:
            mark = "" if s.usage_per_call else "*"
            table.add_row(
                s.format,
                s.instance_id or "-",
                str(s.agent_events),
                str(s.actions),
                str(s.observations),
                str(s.llm_calls),
                f"{s.prompt_tokens}{mark}",
                f"{s.completion_tokens}{mark}",
                s.exit_status or "-",
                "\n".join(s.final_patch_files) or "-",
            )
        console = Console()
        console.print(table)
        if any(not s.usage_per_call for s in rows):
            console.print("* run totals from the file (no per-call usage recorded)")
    if failed:
        raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    """Add ``takeover inspect`` to ``app``."""
    app.command("inspect")(inspect)
