"""The quickstart's run: inputs, the model, the experiment's stages, the report.

:func:`run_quickstart` resolves the inputs (:mod:`.downloads`), starts the embedded model when no endpoint
is given, runs the experiment built by :func:`~takeover.quickstart.experiment_config.build_config` through
the experiment engine (whose first stage builds the task environments), builds the report and returns a
:class:`~.outcome.QuickstartResult`. The notice that a 0.5B model's solved rates mean nothing is written
into the output folder first (``OUT/notice.json``, :mod:`takeover.report.notice`), so every report of the
folder shows it, ``takeover report`` included. Every model call is logged to ``OUT/model-calls.jsonl``
(:mod:`.model_calls`). It prints nothing: a :class:`QuickstartDisplay` is told about each step and each
model call (the command line's shows them).

A rerun in the same folder resumes: finished units are reused by their keys, and the embedded model's
key is its weights' sha256 and settings, not the free port it was served on this time
(:meth:`takeover.embedded_model.EmbeddedModel.identity`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from takeover._util.io import atomic_write_json, atomic_write_text
from takeover.embedded_model import (
    DEFAULT_MODEL,
    MODEL_PATH_ENV,
    EmbeddedModel,
    ProgressFn,
    WeightsSource,
    ensure_model,
    is_cached,
    weights_source,
)
from takeover.errors import TakeoverError
from takeover.experiments import run_experiment
from takeover.experiments.engine import ProgressCallback
from takeover.experiments.folder_lock import hold_out_dir
from takeover.experiments.progress import ProgressTracker
from takeover.experiments.units import load_results
from takeover.llm import LoggedCall, ModelSettings
from takeover.quickstart.downloads import resolve_dataset, resolve_trajectories
from takeover.quickstart.estimate import (
    RunEstimate,
    describe_estimate,
    estimate_note,
    estimate_run,
    load_known_work,
    progress_phrase,
    work_configuration,
)
from takeover.quickstart.experiment_config import build_config, report_notice, warning_text
from takeover.quickstart.model_calls import CallWatcher, logging_calls
from takeover.quickstart.options import EMBEDDED_STEP_MAX_TOKENS, QuickstartOptions
from takeover.quickstart.outcome import QuickstartResult, StageTime, quickstart_md
from takeover.report import build_report, write_notice
from takeover.results import EnvironmentOutput, ViewOutput


class QuickstartDisplay:
    """What the quickstart tells as it goes. This one shows nothing; subclass it to show progress
    (:class:`takeover.cli.quickstart.ConsoleDisplay` does, with rich). Calls come in this order:
    :meth:`started`; per stage :meth:`working` around the work, then :meth:`stage_done`;
    :meth:`downloading_model` around a first-time model download; :meth:`estimated` once the embedded
    model is ready; :meth:`running` around the experiment's stages, with :meth:`model_call` for each model
    call meanwhile; :meth:`stopped` when a stage could not run."""

    def started(self, options: QuickstartOptions, out_dir: Path) -> None:
        """The quickstart begins; the report will be ``out_dir/report.md``."""

    @contextlib.contextmanager
    def working(self, text: str) -> Iterator[None]:
        """A stage is working (``text`` says on what)."""
        yield

    @contextlib.contextmanager
    def downloading_model(self) -> Iterator[ProgressFn | None]:
        """The embedded model is downloaded and assembled; yields a progress callback
        ``(stage, done_bytes, total_bytes)`` or ``None``."""
        yield None

    @contextlib.contextmanager
    def running(self, tracker: ProgressTracker) -> Iterator[ProgressCallback | None]:
        """The experiment's stages run; ``tracker`` counts their units. Yields the callback that receives
        the engine's events (it must pass them on to ``tracker``), or ``None``: ``tracker`` receives them."""
        yield None

    def estimated(self, estimate: RunEstimate | None, text: str) -> None:
        """The embedded model is ready: ``estimate`` is the run's expected duration on this machine, or
        ``None`` when none can be made; ``text`` says either, with this machine's speed."""

    def model_call(self, call: LoggedCall, number: int, progress: str = "") -> None:
        """A model call (one attempt) ended: ``call`` says which unit it served (``number``: its 1-based
        number within that unit), its tokens and seconds (:func:`takeover.quickstart.model_calls.describe_call`
        words it); ``progress`` where the run stands against the estimate (``""`` without one,
        :func:`takeover.quickstart.estimate.progress_phrase`). Called from another thread than the other
        methods."""

    def stage_done(self, stage: StageTime) -> None:
        """A stage finished (wall time in seconds, what it did)."""

    def stopped(self, stage: str, error: BaseException) -> None:
        """``stage`` could not run; the quickstart stops."""


def _stage_rows(tracker: ProgressTracker) -> list[StageTime]:
    rows = []
    for name, st in tracker.stages.items():
        detail = f"{st.done} done, {st.failed} failed" + (f", {st.reused} reused" if st.reused else "")
        if st.tokens:
            detail += f", {st.tokens:,} tokens"
        rows.append(StageTime(stage=name, seconds=round(st.elapsed, 1), detail=detail))
    return rows


def _environments(out: Path) -> str:
    """What the environment stage built, one phrase per task (its failures are in the summary)."""
    built = []
    for result in load_results(out, "environment").values():
        if result.status != "done":
            continue
        env = EnvironmentOutput.model_validate(result.output)
        how = "cached" if env.cached else f"built in {env.build_seconds:.0f} s"
        built.append(f"{env.repo} {env.version} (Python {env.interpreter_version}): shared venv {how}, "
                     f"workspace install {env.setup_seconds:.0f} s")
    return "; ".join(built)


def _views(out: Path) -> str:
    """Note-writing attempts per notes view (``summary_notes 1 attempt``); empty without notes views."""
    parts = []
    for result in load_results(out, "view").values():
        attempts = result.output.get("attempts") if result.status == "done" else None
        view = result.labels.get("view", "?")
        if result.status == "done" and attempts:
            parts.append(f"{view} {attempts} attempt{'s' if attempts != 1 else ''} "
                         f"({ViewOutput.model_validate(result.output).validation})")
        elif result.status != "done":
            parts.append(f"{view} not built ({(result.reason or '')[:120]})")
    return "; ".join(sorted(parts))


def _handoff_states(out: Path) -> dict[str, str]:
    """``{"instance_id point_type": handoff_state}`` of the graded checkpoints."""
    states = {}
    for result in load_results(out, "handoff_state").values():
        state = result.output.get("handoff_state") if result.status == "done" else None
        if state:
            labels = result.labels
            states[f"{labels.get('instance_id', '?')} {labels.get('point_type', '?')}".strip()] = state
    return states


def _start_model(options: QuickstartOptions, out: Path, display: QuickstartDisplay,
                 done: Callable[[str, float, str], None]) -> tuple[ModelSettings, EmbeddedModel | None, str]:
    """The endpoint the agents and the note writer call: the one given, or the embedded model, served; and
    where the embedded model's weights came from (``""`` for another endpoint)."""
    t0 = time.monotonic()
    if not options.embedded:
        model = options.with_request_settings(
            ModelSettings(model=options.model, base_url=options.base_url, api_key_env=options.api_key_env))
        done("model", t0, f"{model.model} at {model.base_url or 'provider default'}")
        return model, None, ""
    with display.downloading_model() as progress:
        embedded = EmbeddedModel(options.model_path, n_ctx=options.n_ctx, progress=progress,
                                 model_parts=options.model_parts, log_path=out / "model-server.log",
                                 max_tokens=EMBEDDED_STEP_MAX_TOKENS)
        if embedded.model_path is None:
            cached = is_cached(DEFAULT_MODEL)
            embedded.model_path = ensure_model(DEFAULT_MODEL, model_parts=options.model_parts, progress=progress)
            source = weights_source(DEFAULT_MODEL)  # recorded by ensure_model beside the file
            weights = (f"{source.describe() if source else 'unknown source'}, sha256 checked; "
                       f"{'cached at' if cached else 'fetched now into'} {embedded.model_path}")
        else:
            given = "--model-path" if options.model_path is not None else MODEL_PATH_ENV
            weights = f"{WeightsSource(kind='file', where=str(embedded.model_path)).describe()} ({given})"
    done("model weights", t0, weights)
    t0 = time.monotonic()
    try:
        with display.working("model: starting the embedded server (llama.cpp) and measuring its speed"):
            model = options.with_request_settings(embedded.start())
    except BaseException:
        embedded.stop()
        raise
    speed = embedded.speed.describe() if embedded.speed else f"speed not measured ({embedded.speed_error})"
    done("model server start", t0, f"{model.base_url} (n_ctx {embedded.n_ctx}, {embedded.n_threads} threads; "
                                   f"usage check {embedded.usage_check}; this machine: {speed})")
    return model, embedded, weights


def _estimate(options: QuickstartOptions, result: QuickstartResult, out: Path) -> tuple[RunEstimate | None, str]:
    """The run's expected duration on this machine and the sentence that says it, or ``None`` and why not."""
    if result.speed is None:
        return None, "No estimate of the run's duration: this machine's speed could not be measured."
    speed = f"This machine, measured now: {result.speed.describe()}."
    try:
        work = load_known_work()
    except (OSError, ValueError) as exc:
        return None, f"{speed} No estimate of the run's duration: the known work cannot be read ({exc})."
    resuming = any((out / "units").rglob("*.json")) if (out / "units").is_dir() else False
    note = estimate_note(work, result.configuration, resuming=resuming)
    if note:
        return None, f"{speed} No estimate of the run's duration: {note}."
    estimate = estimate_run(work, result.speed, step_limit=options.limits.step_limit,
                            wall_time_limit_seconds=options.limits.wall_time_limit_seconds)
    return estimate, f"{speed} {describe_estimate(estimate, work, options.limits.wall_time_limit_seconds)}"


def run_quickstart(options: QuickstartOptions, display: QuickstartDisplay | None = None) -> QuickstartResult:
    """Run the quickstart end to end and write ``OUT/quickstart.json`` (and ``quickstart.md`` when it finished).

    Stages (each timed): inputs, model (download/assembly on first use, then server start), the
    experiment's stages (environment, predecessor import, points, checkpoint, handoff_state, view, takeover,
    grade), report. ``ok`` is false when a stage could not run; ``problems`` names it and why (a failed
    environment stops the quickstart too).

    The quickstart holds its output folder (``OUT/run.lock``) from start to end, and the embedded model's
    server ends with it even when it is killed.

    Raises:
        InputError: bad options (:meth:`QuickstartOptions.checked`), before anything runs.
        OutDirInUse: another quickstart or experiment works in the output folder.
    """
    display = display or QuickstartDisplay()
    options = options.checked()
    out = Path(options.out_dir).expanduser().resolve()
    with hold_out_dir(out):
        return _run_quickstart(options, display, out)


def _run_quickstart(options: QuickstartOptions, display: QuickstartDisplay, out: Path) -> QuickstartResult:
    t_all = time.monotonic()
    result = QuickstartResult(ok=False, out_dir=str(out))
    display.started(options, out)

    def stage_done(name: str, t0: float, detail: str = "") -> None:
        st = StageTime(stage=name, seconds=round(time.monotonic() - t0, 1), detail=detail)
        result.stages.append(st)
        display.stage_done(st)

    embedded = None
    current = "inputs"
    try:
        t0 = time.monotonic()
        with display.working("inputs: dataset rows and predecessor trajectories"):
            dataset = resolve_dataset(options)
            trajectories = resolve_trajectories(options)
        stage_done("inputs", t0, f"dataset {dataset}; trajectories {', '.join(str(t) for t in trajectories)}")

        current = "model"
        model, embedded, result.weights = _start_model(options, out, display, stage_done)
        result.model = model.public()
        if embedded is not None:
            result.speed = embedded.speed
            result.configuration = work_configuration(options, model.extra["identity"])
            result.estimate, text = _estimate(options, result, out)
            if result.estimate is None:
                result.estimate_note = text
            display.estimated(result.estimate, text)
        t_run = time.monotonic()
        answered, answered_seconds = 0, 0.0

        def on_call(call: LoggedCall, number: int) -> None:
            nonlocal answered, answered_seconds
            if call.status == "ok":
                answered, answered_seconds = answered + 1, answered_seconds + call.seconds
            display.model_call(call, number, progress_phrase(result.estimate, answered, time.monotonic() - t_run,
                                                             answered_seconds))

        current = "experiment"
        result.notice = warning_text(options, model)
        write_notice(out, report_notice(options, model))  # before any result: every report of the folder says it
        tracker = ProgressTracker()
        t0 = time.monotonic()
        with (display.running(tracker) as on_event, logging_calls(out) as calls,
              CallWatcher(calls, on_call)):
            summary = run_experiment(build_config(options, dataset, trajectories, model),
                                     progress=on_event or tracker, report=False)
        result.stages += _stage_rows(tracker)
        for row in result.stages:
            if row.stage == "environment":
                row.detail = _environments(out) or row.detail
            if row.stage == "view":
                row.detail = "; ".join(filter(None, [row.detail, _views(out)]))
        result.problems = [f"{p.stage}: {p.status} {p.reason}" for p in summary.problems]
        display.stage_done(StageTime(stage="experiment stages", seconds=round(time.monotonic() - t0, 1)))
        broken = [p for p in summary.problems if p.stage == "environment"]
        if broken:
            current = "environment"
            raise TakeoverError(broken[0].reason or "the task environment could not be built")

        current = "report"
        t0 = time.monotonic()
        states = _handoff_states(out)
        if states:  # the notice now names what the points' states mean for the solved rates
            result.notice = warning_text(options, model, states)
            write_notice(out, report_notice(options, model, states))
        report = build_report(out)
        stage_done("report", t0, ", ".join(sorted(report.files)))
        result.report = report.files["report.md"]
        result.views_summary = list(report.data.get("summary", []))
        result.run_seconds = round(time.monotonic() - t_run, 1)
        if result.estimate is not None:
            result.estimate.actual_seconds = result.run_seconds
        result.ok = True
    except (TakeoverError, OSError) as exc:
        result.problems.append(f"{current}: {exc}")
        display.stopped(current, exc)
    finally:
        if embedded is not None:
            embedded.stop()
        result.total_seconds = round(time.monotonic() - t_all, 1)
        atomic_write_json(out / "quickstart.json", result)
    if result.ok:
        atomic_write_text(out / "quickstart.md", quickstart_md(result))
    return result
