"""``takeover run EXPERIMENT.toml`` and ``takeover report OUT_DIR`` (docs/protocol.md sections 2-9)."""

from __future__ import annotations

import shlex
import signal
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from takeover._util.folders import check_writable
from takeover.cli.console import output_console
from takeover.cli.failures import command
from takeover.cli.options import WORKERS_HELP, MirrorOption, VerboseOption
from takeover.experiments import ExperimentConfig, ExperimentSummary, load_experiment, run_experiment
from takeover.experiments.units import load_results
from takeover.report import build_report, require_whole


class _Signalled(KeyboardInterrupt):
    """A SIGTERM unwinding the run as Ctrl-C does; ``signum`` gives the exit status (128 + signum)."""

    def __init__(self, signum: int):
        super().__init__(f"signal {signum}")
        self.signum = signum


def _raise_interrupt(signum, frame) -> None:
    raise _Signalled(signum)


def kept_units(out: Path) -> dict[str, dict[str, int]]:
    """``{stage: {status: count}}`` of the unit results stored in ``OUT/units`` (what a resume reuses)."""
    units = out / "units"
    kept: dict[str, dict[str, int]] = {}
    for folder in sorted(units.iterdir()) if units.is_dir() else []:
        if folder.is_dir():
            for result in load_results(out, folder.name).values():
                counts = kept.setdefault(folder.name, {})
                counts[result.status] = counts.get(result.status, 0) + 1
    return kept


def interrupted_line(out: Path, resume: str) -> str:
    """The one line an interrupted run ends with: the unit results kept in ``out`` and how to resume."""
    kept = kept_units(out)
    total = sum(sum(c.values()) for c in kept.values())
    parts = ", ".join(f"{stage} " + " ".join(f"{n} {status}" for status, n in sorted(c.items()))
                      for stage, c in kept.items())
    return (f"interrupted: {total} finished unit(s) kept in {out / 'units'}" + (f" ({parts})" if parts else "")
            + f"; units that were running are redone on resume: {resume}")


def _print_summary(summary: ExperimentSummary, console: Console) -> None:
    table = Table(title="units", title_justify="left")
    for col in ("stage", "planned", "done", "failed", "blocked", "reused", "ran"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    for stage, c in summary.counts.items():
        table.add_row(stage, *(str(c.get(k, 0)) for k in ("planned", "done", "failed", "blocked", "reused", "ran")))
    console.print(table)
    if summary.earlier_units:
        console.print(f"[yellow]Note:[/] {summary.earlier_units}", highlight=False)
    if summary.import_notes:
        console.print("[yellow]Trajectory files not imported[/] (also in import_notes.txt):")
        for note in summary.import_notes:
            console.print(f"  {note}", markup=False, highlight=False)
    if summary.skipped_instances:
        console.print(f"[yellow]{len(summary.skipped_instances)} selected instance(s) without a predecessor:[/]")
        for iid, why in sorted(summary.skipped_instances.items()):
            console.print(f"  {iid}: {why}", markup=False, highlight=False)
    grouped = summary.problems_by_reason()
    if not planned(summary):
        console.print("[red]Nothing was planned:[/] no selected instance has a predecessor run (see above).")
    elif grouped:
        console.print("[red]Units failed or blocked[/] (rerun them with --retry-failed):")
        for stage, reasons in grouped.items():
            for reason, n in reasons:
                console.print(f"  {stage}: {n} × {reason}")
    else:
        console.print("[green]Every planned unit is done.[/]")
    for name, path in summary.report_files.items():
        console.print(f"{name}: {path}")


def planned(summary: ExperimentSummary) -> int:
    """How many units the run planned, over every stage (blocked ones included)."""
    return sum(c.get("planned", 0) for c in summary.counts.values())


def read_experiment(path: Path, mirror: Path | None) -> ExperimentConfig:
    """The experiment file, with ``mirror`` (``--mirror`` or ``$TAKEOVER_MIRROR``) filled in when the file
    names none."""
    config = load_experiment(path)
    if config.mirror is None and mirror is not None:
        config = config.model_copy(update={"mirror": str(mirror.expanduser().resolve())})
    return config


def run_cmd(
    experiment: Annotated[Path, typer.Argument(help="Experiment file (TOML).")],
    workers: Annotated[int | None, typer.Option("--workers", "-w", help=f"{WORKERS_HELP} Default: the experiment "
                                                "file's execution.workers.", min=1)] = None,
    executor: Annotated[str | None, typer.Option("--executor", help="local (processes) or ray.")] = None,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Redo the units that failed before (they are kept otherwise).")
    ] = False,
    mirror: MirrorOption = None,
    progress: Annotated[bool, typer.Option(
        "--progress/--no-progress", help="Show progress on stderr: a live table on a terminal, one line per "
                                         "finished unit and stage otherwise.")] = True,
    report: Annotated[bool, typer.Option("--report/--no-report", help="Build the report at the end.")] = True,
    verbose: VerboseOption = False,
) -> None:
    """Run (or resume) an experiment: select, predecessor, points, checkpoints, handoff states, views,
    takeover runs, grading, report. Finished units are reused; changed ones are redone.

    Every other setting comes from the experiment file, under the flags' names: the model request
    settings (timeout, retries, max_retry_wait) in each model table, note_max_tokens in [notes], the
    raw_trace budget (raw_trace_max_chars, raw_trace_max_tokens), the agent choice in each agent's table
    (agent), timeout in [grading] and [replay]. --mirror (or $TAKEOVER_MIRROR) is used when the experiment file names no mirror. Progress goes to
    stderr: a live table on a terminal; with output to a file or pipe, one line per finished unit
    and per stage (time, counts, seconds, tokens). One run at a time works in an output folder
    (OUT/run.lock); its worker processes, and every command they started, end with it. Exit status: 0
    when every planned unit is done, 1 when some failed or were blocked (listed) or nothing could be
    planned (no selected instance has a predecessor run), 2 on a bad experiment file, a selection that
    holds no task, or an output folder in use or that cannot be written; 130 on Ctrl-C (143 on SIGTERM),
    after one line on stderr saying how many finished units were kept and the command that resumes.

    Examples:

        takeover run experiment.toml --workers 4

        takeover run experiment.toml --retry-failed --no-progress
    """
    if executor not in (None, "local", "ray"):
        raise typer.BadParameter("local or ray", param_hint="--executor")
    config = read_experiment(experiment, mirror)
    check_writable(config.out, flag="the experiment file's out_dir")
    # SIGTERM (a scheduler, `kill`) unwinds like Ctrl-C, so worker processes are stopped with us.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        summary = run_experiment(config, workers=workers, executor=executor, retry_failed=retry_failed,
                                 progress=progress, report=report)
    except KeyboardInterrupt as exc:
        resume = " ".join(["takeover run", shlex.quote(str(experiment)),
                           *(["--mirror", shlex.quote(str(mirror))] if mirror is not None else [])])
        print(interrupted_line(config.out, resume), file=sys.stderr)
        raise typer.Exit(128 + exc.signum if isinstance(exc, _Signalled) else 130) from None
    _print_summary(summary, output_console())
    if summary.problems or not planned(summary):
        raise typer.Exit(1)



def report_cmd(
    out_dir: Annotated[Path, typer.Argument(help="Output folder of `takeover run` (OUT_DIR).")],
    plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Write PNG plots.")] = True,
    verbose: VerboseOption = False,
) -> None:
    """Build results.csv, report.md, report.json, report.html and plots from the per-unit result files.

    Example:

        takeover report out/pilot --no-plots
    """
    check_writable(out_dir, flag="")
    report = build_report(out_dir, plots=plots)
    console = output_console()
    console.print(report.markdown.split("## By handoff state")[0])
    warned = report.data.get("warnings") or {}
    if warned:
        console.print(f"{len(warned)} instance(s) have grading warnings (see Warnings in report.md), e.g. "
                      f"{next(iter(warned))}: {warned[next(iter(warned))][0]}", style="yellow", markup=False,
                      highlight=False)
    unusable = report.data.get("unusable_unit_files") or []
    if unusable:
        console.print(f"{len(unusable)} unit file(s) could not be used and count as missing (rerun takeover run "
                      f"to redo them), e.g. {unusable[0]}", style="yellow", markup=False, highlight=False)
    for name, path in report.files.items():
        console.print(f"{name}: {path}")
    require_whole(report.data)  # written, but records of other tools that could not be read: exit status 2


def register(app: typer.Typer) -> None:
    """Add ``run`` and ``report`` to ``app``."""
    command(app, "run")(run_cmd)
    command(app, "report")(report_cmd)
