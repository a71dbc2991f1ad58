"""``takeover run``: every stage of the protocol, as resumable units of work (docs/protocol.md sections 2-9).

Stages, in order (each a folder ``OUT/units/<stage>/``; inputs and outputs in :mod:`takeover.results`):

1. ``select`` (inline): the seeded task selection (section 2), written to ``OUT/tasks.jsonl`` and one
   ``OUT/tasks/<instance_id>.json`` per task.
2. ``environment`` (only with ``execution.prepare_environments``): each task's local test environment,
   built before anything else, so that its time shows apart.
3. ``predecessor``: a predecessor run by our runner, or the import of a recorded trajectory.
4. ``points``: handoff point detection (section 4) and, for imported runs, the verified replay (section 5).
5. ``checkpoint``: one materialized checkpoint per found point of a configured type.
6. ``handoff_state``: official grading of each checkpoint (section 6).
7. ``view``: each view of each checkpoint, notes written by the note model (section 7).
8. ``takeover``: one successor run per (checkpoint, view, successor) (section 8).
9. ``grade``: official grading of each takeover run's final patch.
10. the report (section 9), from the unit files only.

Each stage's units are planned from the results of the stages before it
(:class:`~takeover.experiments.planning.Planner`), written to ``OUT/plan.json``, then run (skipping stored
results). A unit whose upstream unit failed is *blocked*: it is listed in the plan with the reason and
counted as an infrastructure failure in the report, never silently dropped.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field
from rich.console import Console

from takeover._util.io import atomic_write_json, atomic_write_text
from takeover._util.versions import package_versions
from takeover.agents.isolation import require_confinement
from takeover.errors import InputError
from takeover.experiments.config import ExperimentConfig
from takeover.experiments.engine import FollowUp, ProgressCallback, make_executor, run_units
from takeover.experiments.folder_lock import hold_out_dir
from takeover.experiments.planning import Blocked, Plan, Planner, done_checkpoints
from takeover.experiments.progress import show_progress
from takeover.experiments.selection import index_trajectories, select_source_tasks, write_task_files
from takeover.experiments.units import UnitResult, UnitSpec, read_result, set_aside_earlier_units
from takeover.report import build_report


class Problem(BaseModel):
    """A unit that is failed, blocked or missing at the end of a run."""

    stage: str
    key: str
    status: str
    failure_kind: str | None = None
    reason: str | None = None
    labels: dict[str, Any] = Field(default_factory=dict)


class ExperimentSummary(BaseModel):
    """What :func:`run_experiment` returns (also written as ``OUT/summary.json``).

    Attributes:
        out_dir: the output folder.
        counts: per stage: ``planned``, ``done``, ``failed``, ``blocked``, ``reused`` (found done or failed
            from an earlier run), ``ran`` (executed now).
        problems: every failed or blocked unit, with its reason.
        skipped_instances: selected instances without a predecessor (no trajectory to import), with why.
        import_notes: trajectory files that were not imported (could not be read, or a second run of an
            instance), one line each (also in ``OUT/import_notes.txt`` and the report).
        earlier_units: the line saying that the output folder's units were written by an earlier version
            and are recomputed (:func:`takeover.experiments.units.set_aside_earlier_units`), or ``None``.
        report_files: files written by the report.
        seconds: wall time of this call.
    """

    out_dir: str
    counts: dict[str, dict[str, int]] = Field(default_factory=dict)
    problems: list[Problem] = Field(default_factory=list)
    skipped_instances: dict[str, str] = Field(default_factory=dict)
    import_notes: list[str] = Field(default_factory=list)
    earlier_units: str | None = None
    report_files: dict[str, str] = Field(default_factory=dict)
    seconds: float = 0.0

    def problems_by_reason(self) -> dict[str, list[tuple[str, int]]]:
        """``{stage: [(reason, count), ...]}``, most frequent first."""
        grouped: dict[str, Counter] = defaultdict(Counter)
        for p in self.problems:
            grouped[p.stage][f"{p.status} ({p.failure_kind or 'infrastructure'}): {p.reason}"] += 1
        return {s: c.most_common() for s, c in grouped.items()}


def run_experiment(
    config: ExperimentConfig,
    *,
    workers: int | None = None,
    executor: str | None = None,
    retry_failed: bool = False,
    progress: Any = True,
    report: bool = True,
) -> ExperimentSummary:
    """Run (or resume) the whole experiment and build its report.

    Args:
        config: the experiment (:func:`takeover.experiments.load_experiment` or built in Python).
        workers: units in flight at once (default ``config.execution.workers``).
        executor: ``local`` (processes on this machine) or ``ray`` (default ``config.execution.executor``).
        retry_failed: redo units whose stored result is ``failed`` (``takeover run --retry-failed``).
        progress: ``True`` shows progress on stderr, a ``rich.console.Console`` shows it there: a live
            table when a person watches, one plain line per finished unit and stage otherwise
            (:func:`takeover.experiments.progress.show_progress`); a callable receives every
            :class:`takeover.experiments.engine.ProgressEvent` instead (for example a
            :class:`takeover.experiments.progress.ProgressTracker`); ``False`` shows nothing.
        report: build the report at the end (``takeover report`` can build it any time).

    Returns:
        :class:`ExperimentSummary` with per-stage counts and every failed or blocked unit.

    The coordinator holds ``OUT/run.lock`` while it works (:func:`~takeover.experiments.folder_lock.hold_out_dir`):
    a second run in the same folder stops at once.

    Raises:
        InputError: bad dataset, instance ids or trajectory paths (before any unit runs); the agents'
            commands cannot be confined here and the experiment does not say ``allow_unconfined``.
        OutDirInUse: another run works in ``config.out`` (its pid is in the message).
    """
    # Each agent names its own command backend (its agent choice); every one of them must confine.
    for backend in sorted({s.agent.command_backend for s in config.successors}):
        require_confinement(backend, allow_unconfined=config.allow_unconfined)
    with hold_out_dir(config.out):
        return _run_experiment(config, workers=workers, executor=executor, retry_failed=retry_failed,
                               progress=progress, report=report)


def _run_experiment(config: ExperimentConfig, *, workers: int | None, executor: str | None, retry_failed: bool,
                    progress: Any, report: bool) -> ExperimentSummary:
    t0 = time.monotonic()
    out = config.out
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "config.resolved.json", config.resolved())
    atomic_write_json(out / "versions.json", package_versions())
    earlier_units = set_aside_earlier_units(out)
    if workers is not None and workers < 1:
        raise InputError("--workers", f"must be 1 or more, got {workers}")
    workers = workers if workers is not None else config.execution.workers
    kind = executor or config.execution.executor
    caps = {
        "model": config.execution.model_concurrency or workers,
        "env": config.execution.environment_concurrency or workers,
    }
    with contextlib.ExitStack() as stack:
        if progress is True or isinstance(progress, Console):
            callback: ProgressCallback | None = stack.enter_context(
                show_progress(progress if isinstance(progress, Console) else None))
        else:
            callback = progress if callable(progress) else None
        summary = ExperimentSummary(out_dir=str(out), earlier_units=earlier_units)
        ex = make_executor(kind, workers, ray_address=config.execution.ray_address)
        interrupted = True
        try:
            stage = _StageRunner(config, summary, lambda specs, **flow: run_units(
                specs, out, ex, caps=caps, retry_failed=retry_failed, progress=callback, **flow), retry_failed)
            _run_stages(config, summary, stage)
            interrupted = False
        finally:
            ex.close(terminate=interrupted)
    if report:
        summary.report_files = build_report(out).files
    summary.seconds = round(time.monotonic() - t0, 3)
    atomic_write_json(out / "summary.json", summary)
    return summary


class _StageRunner:
    """Plans stages (``plan.json``), runs their units and counts them into the summary."""

    def __init__(self, config: ExperimentConfig, summary: ExperimentSummary,
                 run: Callable[..., dict[str, UnitResult]], retry_failed: bool):
        self.out = config.out
        self.plan = Plan(config)
        self.summary = summary
        self.run = run
        self.retry_failed = retry_failed
        self.reused: set[str] = set()

    def _note_reused(self, specs: list[UnitSpec]) -> None:
        for s in specs:
            stored = read_result(self.out, s.stage, s.key, s.inputs.get("instance_id"))
            if stored is not None and (stored.status == "done" or not self.retry_failed):
                self.reused.add(s.key)

    def __call__(self, name: str, specs: list[UnitSpec], blocked: Blocked | None = None) -> dict[str, UnitResult]:
        """Plan one stage, run its units, count them."""
        blocked = blocked or []
        self.plan.add(name, specs, blocked)
        self._note_reused(specs)
        results = self.run(specs)
        self.record(name, specs, blocked, results)
        return results

    def flow(self, stages: dict[str, list[UnitSpec]], following: dict[str, int],
             follow: Callable[[UnitSpec, UnitResult], FollowUp]) -> dict[str, UnitResult]:
        """Run the units of ``stages`` together, and the units of later stages as ``follow`` plans them
        (``following``: how many per stage); the caller records every stage afterwards (:meth:`record`)."""
        for name, specs in stages.items():
            self.plan.add(name, specs, [])
            self._note_reused(specs)

        def noted(spec: UnitSpec, result: UnitResult) -> FollowUp:
            more, blocked = follow(spec, result)
            self._note_reused(more)
            return more, blocked

        return self.run([s for specs in stages.values() for s in specs], follow=noted, following=following)

    def record(self, stage: str, specs: list[UnitSpec], blocked: Blocked, results: dict[str, UnitResult]) -> None:
        """Write ``stage``'s units to ``plan.json`` and count them (done, failed, blocked, reused, ran)."""
        self.plan.add(stage, specs, blocked)
        c = Counter({k: 0 for k in ("done", "failed", "reused", "ran")})
        c.update(planned=len(specs) + len(blocked), blocked=len(blocked))
        for spec in specs:
            r = results.get(spec.key)
            if r is None:
                continue
            c[r.status] += 1
            c["reused" if spec.key in self.reused else "ran"] += 1
            if r.status == "failed":
                self.summary.problems.append(Problem(stage=stage, key=spec.key, status="failed",
                                                     failure_kind=r.failure_kind, reason=r.reason,
                                                     labels=spec.labels))
        for spec, reason in blocked:
            self.summary.problems.append(Problem(stage=stage, key=spec.key, status="blocked",
                                                 failure_kind="infrastructure", reason=reason, labels=spec.labels))
        self.summary.counts[stage] = dict(c)


def _run_stages(config: ExperimentConfig, summary: ExperimentSummary, stage: _StageRunner) -> None:
    """Select the tasks, then plan and run each stage from the results of the one before.

    Up to the checkpoints, each stage waits for the one before. From there the handoff states, the views,
    the takeover runs and their grading flow: a takeover run starts as soon as its view is written and its
    grading as soon as it ends, so that the model and the test environments are not idle while other units
    of the stage before still run. What is planned, and each unit's key, is the same as stage by stage.
    """
    out = config.out
    notes: list[str] = []
    unreadable: dict[str, str] = {}
    index = index_trajectories(config, notes, unreadable) if config.predecessor.trajectories else None
    summary.import_notes = notes
    stage.plan.import_notes = notes
    tasks = select_source_tasks(config, index, unreadable)
    planner = Planner(config, write_task_files(out, tasks), config.repo_source())
    if notes:
        atomic_write_text(out / "import_notes.txt", "\n".join(notes) + "\n")

    environments = None
    if config.execution.prepare_environments:
        environments = stage("environment", planner.environments(tasks))
    predecessors = planner.predecessors(tasks, index, summary.skipped_instances, unreadable)
    stage.plan.not_imported = summary.skipped_instances
    predecessor_results = stage("predecessor", predecessors)
    points, blocked = planner.points(predecessors, predecessor_results, environments)
    points_results = stage("points", points, blocked)
    checkpoint_specs = planner.checkpoints(points, points_results)
    checkpoints = done_checkpoints(checkpoint_specs, stage("checkpoint", checkpoint_specs))
    handoff_states = planner.handoff_states(checkpoints)
    views = planner.views(checkpoints)
    by_point = {cp.key: cp for cp in checkpoints}

    def follow(spec: UnitSpec, result: UnitResult) -> FollowUp:
        if spec.stage == "view":
            takeovers, blocked = planner.takeovers([by_point[spec.labels["point_key"]]], [spec], {spec.key: result})
            return takeovers, blocked + planner.grades([], blocked, {})[1]
        if spec.stage == "takeover":
            return planner.grades([spec], [], {spec.key: result})
        return [], []

    runs = len(views) * len(config.successors)
    results = stage.flow({"handoff_state": handoff_states, "view": views}, {"takeover": runs, "grade": runs}, follow)
    stage.record("handoff_state", handoff_states, [], results)
    stage.record("view", views, [], results)
    takeovers, blocked = planner.takeovers(checkpoints, views, results)
    stage.record("takeover", takeovers, blocked, results)
    stage.record("grade", *planner.grades(takeovers, blocked, results), results)
