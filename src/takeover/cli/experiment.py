"""``takeover run EXPERIMENT.toml`` and ``takeover report OUT_DIR`` (issue 7)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _print_summary(summary, console: Console) -> None:
    table = Table(title="units", title_justify="left")
    for col in ("stage", "planned", "done", "failed", "blocked", "reused", "ran"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    for stage, c in summary.counts.items():
        table.add_row(stage, *(str(c.get(k, 0)) for k in ("planned", "done", "failed", "blocked", "reused", "ran")))
    console.print(table)
    if summary.skipped_instances:
        console.print(f"[yellow]{len(summary.skipped_instances)} selected instance(s) without a predecessor:[/]")
        for iid, why in sorted(summary.skipped_instances.items()):
            console.print(f"  {iid}: {why}")
    grouped = summary.problems_by_reason()
    if grouped:
        console.print("[red]Units failed or blocked[/] (rerun them with --retry failed):")
        for stage, reasons in grouped.items():
            for reason, n in reasons:
                console.print(f"  {stage}: {n} × {reason}")
    else:
        console.print("[green]Every planned unit is done.[/]")
    for name, path in summary.report_files.items():
        console.print(f"{name}: {path}")


def register(app: typer.Typer) -> None:
    """Add ``run`` and ``report`` to ``app``."""

    @app.command("run")
    def run_cmd(
        experiment: Annotated[Path, typer.Argument(help="experiment file (TOML)")],
        workers: Annotated[int | None, typer.Option("--workers", "-w", help="units in flight at once")] = None,
        executor: Annotated[str | None, typer.Option(help="local (processes) or ray")] = None,
        retry: Annotated[str | None, typer.Option("--retry", help="'failed': redo units that failed before")] = None,
        progress: Annotated[bool, typer.Option("--progress/--no-progress", help="live progress table")] = True,
        report: Annotated[bool, typer.Option("--report/--no-report", help="build the report at the end")] = True,
    ) -> None:
        """Run (or resume) an experiment: select, predecessor, points, checkpoints, handoff states, views,
        takeover runs, grading, report. Finished units are reused; changed ones are redone."""
        from takeover.experiments import load_experiment, run_experiment

        if retry not in (None, "failed"):
            raise typer.BadParameter("only --retry failed is supported", param_hint="--retry")
        if executor not in (None, "local", "ray"):
            raise typer.BadParameter("local or ray", param_hint="--executor")
        config = load_experiment(experiment)
        # SIGTERM (a scheduler, `kill`) unwinds like Ctrl-C, so worker processes are stopped with us.
        signal.signal(signal.SIGTERM, _raise_interrupt)
        summary = run_experiment(config, workers=workers, executor=executor, retry_failed=retry == "failed",
                                 progress=progress, report=report)
        _print_summary(summary, Console())
        if summary.problems:
            raise typer.Exit(1)

    @app.command("report")
    def report_cmd(
        out_dir: Annotated[Path, typer.Argument(help="output folder of `takeover run`")],
        plots: Annotated[bool, typer.Option("--plots/--no-plots", help="write PNG plots")] = True,
    ) -> None:
        """Build results.csv, report.md, report.json and plots from the per-unit result files."""
        from takeover.report import build_report

        report = build_report(out_dir, plots=plots)
        console = Console()
        console.print(report.markdown.split("## By handoff state")[0])
        warned = report.data.get("warnings") or {}
        if warned:
            console.print(f"{len(warned)} instance(s) have grading warnings (see Warnings in report.md), e.g. "
                          f"{next(iter(warned))}: {warned[next(iter(warned))][0]}", style="yellow", markup=False,
                          highlight=False)
        for name, path in report.files.items():
            console.print(f"{name}: {path}")
