"""``takeover views``: build the handoff views of one handoff point and write them to a folder.

A thin layer over :func:`takeover.views.build_view` and :func:`write_views`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from takeover.errors import TakeoverError


def register(app: typer.Typer) -> None:
    """Add ``takeover views`` to ``app``."""

    @app.command("views")
    def views(
        file: Annotated[Path, typer.Argument(help="Predecessor trajectory file (any supported format).")],
        dataset: Annotated[Path, typer.Option("--dataset", help="SWE-bench dataset file (JSONL/JSON/parquet).")],
        point: Annotated[str | None, typer.Option("--point", help="Handoff point type, e.g. after_first_source_edit.")] = None,
        out: Annotated[Path | None, typer.Option("--out", help="Output folder: <view>.md files and views.json (default with --checkpoint: DIR/views).")] = None,
        checkpoint: Annotated[Path | None, typer.Option("--checkpoint", help="Checkpoint folder (takeover checkpoint): point, patch and handoff state from there.")] = None,
        view: Annotated[str, typer.Option("--view", help="repo_only, raw_trace, summary_notes, structured_notes or all.")] = "all",
        model: Annotated[str | None, typer.Option("--model", help="Note-writing model name (needed for the notes views).")] = None,
        base_url: Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1.")] = None,
        api_key_env: Annotated[str, typer.Option("--api-key-env", help="Name of the variable holding the API key.")] = "OPENAI_API_KEY",
        mirror: Annotated[Path | None, typer.Option("--mirror", help="Folder of bare repositories owner__name.git (replay).")] = None,
        points_file: Annotated[Path | None, typer.Option("--points-file", help="Saved points of this run (takeover points output) instead of re-detecting.")] = None,
        record: Annotated[int | None, typer.Option("--record", help="0-based index of the run when FILE holds several.")] = None,
        templates: Annotated[Path | None, typer.Option("--templates", help="Folder of templates overriding the packaged ones.")] = None,
        max_chars: Annotated[int | None, typer.Option("--max-chars", help="raw_trace budget in characters (default: none).")] = None,
        max_tokens: Annotated[int | None, typer.Option("--max-tokens", help="raw_trace budget in estimated tokens (default: none).")] = None,
        timeout: Annotated[float, typer.Option("--timeout", help="Seconds per model request.")] = 300.0,
        retries: Annotated[int, typer.Option("--retries", help="Retries on 429/5xx/timeouts per model request.")] = 3,
        max_retry_wait: Annotated[float, typer.Option("--max-retry-wait", help="Longest wait between two attempts (seconds), the server's Retry-After included.")] = 60.0,
        offline: Annotated[bool, typer.Option("--offline", help="Never clone repositories from GitHub.")] = False,
    ) -> None:
        """Write the takeover prompt of each view of one handoff point to OUT/<view>.md, plus OUT/views.json.

        The point comes from --checkpoint DIR, --points-file (takeover points --out), or detection (replay
        needs the repository: --mirror). The notes views need a model (--model, --base-url).

        Exit status: 0 when every requested view was written; 1 when one could not be built (for
        example a notes view without --model) or the run has no such point; 2 on bad input (including a
        run whose instance is not in the dataset when the point must be detected).

        Examples:

            takeover views trajs/psf__requests-1766.json --point after_first_source_edit \\
              --dataset swebench_verified.jsonl --mirror /data/mirror --out views/ \\
              --model qwen --base-url http://127.0.0.1:8080/v1

            takeover views trajs/psf__requests-1766.json --checkpoint cp/ --dataset swebench_verified.jsonl
        """
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table

        from takeover.llm import ModelSettings
        from takeover.repos import RepoSource
        from takeover.views import load_inputs, write_views
        from takeover.vocabulary import VIEWS

        console = Console(stderr=True)
        if point is None and checkpoint is None:
            raise typer.BadParameter("give --point TYPE, or --checkpoint DIR")
        if out is None:
            if checkpoint is None:
                raise typer.BadParameter("give --out DIR (or --checkpoint DIR to write DIR/views)")
            out = checkpoint / "views"
        names = list(VIEWS) if view == "all" else [v.strip() for v in view.split(",")]
        unknown = [n for n in names if n not in VIEWS]
        if unknown:
            raise typer.BadParameter(f"unknown view {unknown[0]!r}; expected all or one of {', '.join(VIEWS)}")
        settings = None
        if model:
            settings = ModelSettings(
                name=model, base_url=base_url, api_key_env=api_key_env, timeout=timeout, retries=retries,
                max_retry_wait=max_retry_wait,
            )
        try:
            inputs = load_inputs(
                file, point, dataset, record=record, repo_source=RepoSource(mirror, allow_network=not offline),
                points_file=points_file, checkpoint_dir=checkpoint,
            )
        except TakeoverError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise typer.Exit(2) from None
        for note in inputs.notes:
            console.print(f"[yellow]note:[/yellow] {escape(note)}")
        if inputs.point is None:
            console.print(f"[red]no {inputs.point_type} point in this run:[/red] {escape(str(inputs.missing_reason))}")
            raise typer.Exit(1)
        summary = write_views(
            inputs, names, out, model=settings, template_dir=templates, max_chars=max_chars, max_tokens=max_tokens
        )
        table = Table(title=f"{escape(inputs.task.instance_id)} @ {inputs.point_type} (event {inputs.point.event_index})")
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
        Console().print(table)
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
