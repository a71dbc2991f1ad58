"""The page of one run (``takeover show``): the report's drill-down for a takeover run folder or for any
trajectory file a :mod:`takeover.trajectories` reader accepts (docs/protocol.md sections 1, 5 and 8).

A file holding several runs gives one section per run (the first open). For a takeover run the section
also shows where the successor started: the handoff point, the checkpoint diff and the view, read from
the checkpoint folder the run records (``origin.checkpoint_dir``) when it still exists.
"""

from __future__ import annotations

import json
from pathlib import Path

from takeover._util.io import atomic_write_text
from takeover.report.drilldown import PointSection, RunCell, TestOutcome
from takeover.report.html_page import render_run_page
from takeover.report.page import encode_section
from takeover.report.transcript import transcript
from takeover.trajectories import Trajectory, read_trajectories

_NOT_GRADED = TestOutcome(status="not_graded")
_POINT_FIELDS = (
    "event_index",
    "changed_source_files",
    "changed_test_files",
    "non_source_artifacts",
    "latest_verification_command",
    "latest_verification_result",
    "latest_verification_evidence",
    "validation_after_latest_source_change",
)


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None


def run_section(traj: Trajectory, key: str) -> PointSection:
    """The drill-down section of one run: one :class:`RunCell` (``view`` is the takeover view, or the
    run's kind for other runs) with the prompt, steps and final patch; the handoff point and checkpoint
    diff for a takeover run whose checkpoint folder exists. Nothing is graded here."""
    t = transcript(traj)
    meta = traj.metadata if isinstance(traj.metadata, dict) else {}
    origin = meta.get("origin") or {}
    accounting = meta.get("accounting") or {}
    view = origin.get("view") or meta.get("kind") or "run"
    cell = RunCell(
        takeover_key=key, successor=t.model or "agent", view=view, status=t.exit_status or "recorded",
        exit_status=t.exit_status, agent_events=t.agent_events, llm_calls=t.llm_calls,
        prompt_tokens=t.prompt_tokens, completion_tokens=t.completion_tokens, cached_tokens=t.cached_tokens,
        reasoning_tokens=t.reasoning_tokens,
        estimated_calls=t.estimated_calls, initial_prompt_chars=accounting.get("initial_prompt_chars"),
        initial_prompt_tokens=accounting.get("initial_prompt_tokens"), wall_seconds=accounting.get("wall_seconds"),
        run_dir=meta.get("run_dir") or t.source_path, steps=t.steps, final_patch=t.final_patch,
        grading=_NOT_GRADED,
    )
    if t.calls_without_usage:
        cell.note = f"{t.calls_without_usage} model call(s) record no token usage"
    section = PointSection(point_key=key, instance_id=t.instance_id, repo=meta.get("repo"),
                           base_commit=meta.get("base_commit"), handoff=_NOT_GRADED, runs=[cell],
                           role="successor" if origin else "agent")
    if t.prompt is not None:
        section.prompts[view] = t.prompt
    if origin:
        section.point_type = origin.get("point_type")
        section.event_index = origin.get("event_index")
        section.checkpoint_method = origin.get("method")
        folder = Path(origin["checkpoint_dir"]) if origin.get("checkpoint_dir") else None
        if folder is not None and folder.is_dir():
            section.checkpoint_patch = _read(folder / "checkpoint.patch")
            try:
                point = json.loads((folder / "checkpoint.json").read_bytes()).get("point") or {}
            except (OSError, ValueError):
                point = {}
            for f in _POINT_FIELDS:
                if point.get(f) is not None:
                    setattr(section, f, point[f])
    return section


def _label(traj: Trajectory, section: PointSection) -> str:
    cell = section.runs[0]
    parts = [traj.instance_id or "run", traj.format]
    if traj.record:
        parts.append(traj.record)
    if cell.view != "run":
        parts.append(cell.view)
    parts += [cell.successor, f"{cell.agent_events} events", cell.exit_status or "no exit status"]
    return " · ".join(str(p) for p in parts)


def write_run_page(path: Path | str, out: Path | str, *, format: str | None = None) -> Path:
    """Write the drill-down page of every run in ``path`` to the HTML file ``out``; returns ``out``.

    Args:
        path: a takeover run folder, a trajectory file, or a run folder of another format.
        out: the HTML file to write (atomically; parent folders are created).
        format: a reader name to skip format detection (see ``takeover inspect``).

    Raises:
        InputError: ``path`` is missing, damaged or in no known format (names the file, record, field).
    """
    source = Path(path)
    trajectories = read_trajectories(source, format=format)
    points = []
    for i, traj in enumerate(trajectories):
        section = run_section(traj, f"r{i}")
        points.append({"key": section.point_key, "label": _label(traj, section), "blob": encode_section(section)})
    first = trajectories[0] if trajectories else None
    title = f"Run: {first.instance_id or source.name}" if len(trajectories) == 1 and first else f"Runs in {source.name}"
    formats = sorted({t.format for t in trajectories})
    return atomic_write_text(out, render_run_page(title, str(source), formats, points))
