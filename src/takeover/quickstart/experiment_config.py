"""The experiment a quickstart runs, and what its report says about it.

:func:`build_config` turns the options into an :class:`~takeover.experiments.ExperimentConfig` (explicit
instances, imported predecessor runs, one model as note writer and successor, the task environments
prepared as the first stage); :func:`report_notice` is the notice at the top of every report of its
folder, with the command that reruns it with a real model (:func:`rerun_command`).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from takeover.experiments.config import (
    DatasetConfig,
    ExecutionConfig,
    ExperimentConfig,
    NotesConfig,
    PredecessorConfig,
)
from takeover.llm import ModelSettings
from takeover.quickstart.options import QuickstartOptions
from takeover.report.notice import ReportNotice, notice_markdown
from takeover.view_budgets import NOTE_MAX_TOKENS
from takeover.vocabulary import VIEWS


def build_config(options: QuickstartOptions, dataset: Path, trajectories: list[Path],
                 model: ModelSettings) -> ExperimentConfig:
    """The :class:`~takeover.experiments.ExperimentConfig` of a quickstart: explicit instances (no seeded
    selection), imported predecessor runs, ``model`` as both note writer and successor, and the task
    environments built as a stage of their own (``execution.prepare_environments``), so that a first-time
    build shows with its own time. With the embedded model one unit at a time calls it (it is one
    CPU-bound server; a takeover run's wall-time limit must not count time spent waiting for another
    unit's answers), while ``options.workers`` units in all run: gradings, replays and builds use the
    machine beside it."""
    endpoint = model.model_dump()  # the config's own endpoint type is built from the plain fields
    return ExperimentConfig(
        name="quickstart",
        out_dir=str(Path(options.out_dir).expanduser().resolve()),
        mirror=str(Path(options.mirror).expanduser().resolve()) if options.mirror else None,
        offline=options.offline,
        allow_unconfined=True,  # a demonstration: runs without bubblewrap are marked not isolated in its report
        dataset=DatasetConfig(path=str(dataset), instance_ids=list(options.instance_ids), difficulties=[],
                              limit=None),
        predecessor=PredecessorConfig(trajectories=[str(p) for p in trajectories]),
        successors=[{**endpoint, "agent": options.agent}],
        views=list(options.views or VIEWS),
        point_types=list(options.point_types),
        limits=options.limits,
        grading=options.grading,
        view_budgets=options.budgets,
        notes=NotesConfig(model=endpoint),
        execution=ExecutionConfig(workers=options.workers, model_concurrency=1 if options.embedded else None,
                                  prepare_environments=True),
        bootstrap_resamples=1000,
    )


def rerun_command(options: QuickstartOptions) -> str:
    """The same quickstart pointed at a real model (a placeholder endpoint the user replaces)."""
    argv = ["takeover", "quickstart"]
    for iid in options.instance_ids:
        argv += ["--instance-id", iid]
    if options.dataset:
        argv += ["--dataset", str(options.dataset)]
    for t in options.trajectories:
        argv += ["--trajectories", str(t)]
    for p in options.point_types:
        argv += ["--point-type", p]
    if options.mirror:
        argv += ["--mirror", str(options.mirror)]
    argv += ["--step-limit", "100", "--wall-time-limit-seconds", "3600", "--model", "openai/YOUR-MODEL",
             "--base-url", "http://127.0.0.1:8000/v1", "--out-dir", "takeover-real"]
    return shlex.join(argv)


#: What each handoff state means for the quickstart's solved rates (docs/protocol.md section 6).
STATE_MEANING = {
    "resolved_preserve": "the checkpoint already solves the task, so every view starts from a solved repository "
                         "and reads as solved unless its run undoes the fix: the solved rates cannot tell the "
                         "views apart",
    "needs_completion": "the checkpoint does not solve the task yet: a view's run is solved only if it finishes "
                        "the work",
    "broke_existing": "the checkpoint breaks tests that passed before: a view's run is solved only if it repairs "
                      "them and finishes the work",
    "invalid": "the checkpoint could not be graded",
}


def handoff_state_text(states: dict[str, str]) -> str:
    """One sentence per handoff point (``{"instance_id point_type": handoff_state}``), naming its handoff
    state and what that state means for the solved rates; ``""`` when no state is known."""
    return " ".join(f"The handoff point {point} is in handoff state {state}: {STATE_MEANING.get(state, state)}."
                    for point, state in sorted(states.items()))


def report_notice(options: QuickstartOptions, model: ModelSettings,
                  handoff_states: dict[str, str] | None = None) -> ReportNotice:
    """The notice every report of the quickstart's folder shows (``OUT/notice.json``,
    :mod:`takeover.report.notice`): with the embedded model, that this is a demonstration and not a
    measurement; the handoff state of each point once graded (``handoff_states``, ``{"instance_id
    point_type": state}``: it decides what the solved rates can show); and always the command that reruns
    it with a real model."""
    if options.embedded:
        title = "This is a demonstration, not a measurement."
        text = ("The successor and the note writer were the embedded Qwen2.5-Coder-0.5B-Instruct (Q4_K_M, on CPU) "
                f"under a {options.limits.step_limit}-step limit and a {options.limits.wall_time_limit_seconds:.0f}-second "
                f"wall-time limit per takeover run, on {len(options.instance_ids)} task(s). A 0.5B model's solved "
                "rates mean nothing: it almost never solves a SWE-bench task, so every number below only shows "
                "that the pipeline ran end to end (handoff point, checkpoint, grading, four views, takeover "
                "runs, report). The paper's measurements used 27B-31B models, 500 steps and 181 handoff points.")
        budgets = options.budgets
        if budgets.note_max_tokens != NOTE_MAX_TOKENS:
            text += (f" Notes were capped at {budgets.note_max_tokens} completion tokens per call (the protocol's cap "
                     "is 1,600) to keep the demonstration short on a CPU.")
        if budgets.raw_trace_max_tokens is not None:
            text += (f" The raw_trace view kept the predecessor's newest events within {budgets.raw_trace_max_tokens:,} "
                     "estimated tokens (its block says how many older events were left out); the paper's holds "
                     "every event.")
    else:
        title = f"Quickstart run with {model.model}."
        text = (f"Under a {options.limits.step_limit}-step limit on {len(options.instance_ids)} task(s): too few handoff "
                "points for the rates to be conclusive.")
    if handoff_states:
        text += " " + handoff_state_text(handoff_states)
    return ReportNotice(
        title=title, text=text,
        command_intro="Rerun with a real model (any OpenAI-compatible endpoint: vLLM, Ollama, OpenAI):",
        command=rerun_command(options),
        closing="For a study, write an experiment file and use `takeover run` (see docs/usage.md).",
    )


def warning_text(options: QuickstartOptions, model: ModelSettings,
                 handoff_states: dict[str, str] | None = None) -> str:
    """The notice as Markdown (:func:`report_notice`; the command line prints it at the end)."""
    return notice_markdown(report_notice(options, model, handoff_states).model_dump())
