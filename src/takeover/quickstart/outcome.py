"""What a quickstart returns and writes: the stages with their wall times, the weights' source, this machine's
speed and the estimate against the actual time, the report, the problems.

:class:`QuickstartResult` is written as ``OUT/quickstart.json`` and, when the quickstart finished, as the
Markdown table ``OUT/quickstart.md`` (:func:`quickstart_md`); the command line prints it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from takeover.embedded_model import MachineSpeed
from takeover.quickstart.estimate import RunEstimate, actual_phrase


class StageTime(BaseModel):
    """Wall time of one quickstart stage (seconds) and what it did."""

    stage: str
    seconds: float
    detail: str = ""


class QuickstartResult(BaseModel):
    """What :func:`takeover.quickstart.run_quickstart` returns (also written as ``OUT/quickstart.json``).

    Attributes:
        ok: every stage could run (failed or blocked units are listed in ``problems``; the report counts
            their runs as not solved).
        out_dir: the output folder; report: ``report.md`` (``None`` when the quickstart stopped).
        stages: each stage's wall time and detail, in order; total_seconds: the whole quickstart.
        model: the model endpoint's public settings (no secrets).
        weights: where the embedded model's weights came from (empty with another endpoint).
        speed: this machine's speed with the embedded model, measured when its server started.
        configuration: what sets the run's work (:func:`takeover.quickstart.estimate.work_configuration`).
        run_seconds: wall time from the model being ready to the report (what the estimate is about).
        estimate: the expected ``run_seconds`` (with ``actual_seconds`` once it ended); estimate_note: why
            there is none.
        problems: the stage that stopped the quickstart, or the units that failed or were blocked.
        notice: the notice at the top of the report (Markdown); views_summary: the report's rows per view
            (view, points, finished, solved, solved_rate, medians). Neither is written to quickstart.json.
    """

    ok: bool
    out_dir: str
    report: str | None = None
    stages: list[StageTime] = Field(default_factory=list)
    total_seconds: float = 0.0
    model: dict = Field(default_factory=dict)
    weights: str = ""
    speed: MachineSpeed | None = None
    configuration: dict[str, Any] = Field(default_factory=dict)
    run_seconds: float | None = None
    estimate: RunEstimate | None = None
    estimate_note: str | None = None
    problems: list[str] = Field(default_factory=list)
    notice: str = Field(default="", exclude=True)
    views_summary: list[dict[str, Any]] = Field(default_factory=list, exclude=True)


def quickstart_md(result: QuickstartResult) -> str:
    """``OUT/quickstart.md``: the notice, then a table of the stages and their wall times, then problems."""
    lines = ["# takeover quickstart: stages and times", "", result.notice, "| stage | seconds | what |", "|---|---|---|"]
    lines += [f"| {s.stage} | {s.seconds:.1f} | {s.detail} |" for s in result.stages]
    lines += ["", f"Total: {result.total_seconds:.1f} s. Report: {result.report}"]
    if result.estimate and result.estimate.actual_seconds is not None:
        lines += ["", f"From the model being ready to the report: {actual_phrase(result.estimate)}."]
    if result.problems:
        lines += ["", "Problems:", ""] + [f"- {p}" for p in result.problems]
    return "\n".join(lines) + "\n"
