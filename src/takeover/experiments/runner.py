"""``takeover run``: every stage of the protocol, as resumable units of work (docs/protocol.md sections 2-9).

Stages, in order (each a folder ``OUT/units/<stage>/``):

1. ``select`` (inline): the seeded task selection (section 2), written to ``OUT/tasks.jsonl`` and one
   ``OUT/tasks/<instance_id>.json`` per task.
2. ``predecessor``: a predecessor run by our runner, or the import of a recorded trajectory.
3. ``points``: handoff point detection (section 4) and, for imported runs, the verified replay (section 5).
4. ``checkpoint``: one materialized checkpoint per found point of a configured type.
5. ``handoff_state``: official grading of each checkpoint (section 6).
6. ``view``: each view of each checkpoint, notes written by the note model (section 7).
7. ``takeover``: one successor run per (checkpoint, view, successor) (section 8).
8. ``grade``: official grading of each takeover run's final patch.
9. the report (section 9), from the unit files only.

Each stage's units are planned from the results of the stages before it, written to ``OUT/plan.json``,
then run (skipping stored results). A unit whose upstream unit failed is *blocked*: it is listed in the
plan with the reason and counted as an infrastructure failure in the report, never silently dropped.
"""

from __future__ import annotations

import json
import platform
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from takeover._io import atomic_write_json, atomic_write_text, sha256_file, stable_hash
from takeover.errors import InputError
from takeover.experiments.config import ExperimentConfig
from takeover.experiments.engine import ProgressCallback, make_executor, run_units
from takeover.experiments.units import UnitResult, UnitSpec, read_result

STAGES = ("predecessor", "points", "checkpoint", "handoff_state", "view", "takeover", "grade")
NOTE_VIEWS = ("summary_notes", "structured_notes")
_FN = "takeover.experiments.stages:"


class Problem(BaseModel):
    """A unit that is failed, blocked or missing at the end of a run."""

    stage: str
    key: str
    status: str
    failure_kind: str | None = None
    reason: str | None = None
    labels: dict[str, Any] = Field(default_factory=dict)


class ExperimentSummary(BaseModel):
    """What :func:`run_experiment` returns.

    Attributes:
        out_dir: the output folder.
        counts: per stage: ``planned``, ``done``, ``failed``, ``blocked``, ``reused`` (found done or failed
            from an earlier run), ``ran`` (executed now).
        problems: every failed or blocked unit, with its reason.
        skipped_instances: selected instances without a predecessor (no trajectory to import), with why.
        report_files: files written by the report.
        seconds: wall time of this call.
    """

    out_dir: str
    counts: dict[str, dict[str, int]] = Field(default_factory=dict)
    problems: list[Problem] = Field(default_factory=list)
    skipped_instances: dict[str, str] = Field(default_factory=dict)
    report_files: dict[str, str] = Field(default_factory=dict)
    seconds: float = 0.0

    def problems_by_reason(self) -> dict[str, list[tuple[str, int]]]:
        """``{stage: [(reason, count), ...]}``, most frequent first."""
        grouped: dict[str, Counter] = defaultdict(Counter)
        for p in self.problems:
            grouped[p.stage][f"{p.status} ({p.failure_kind or 'infrastructure'}): {p.reason}"] += 1
        return {s: c.most_common() for s, c in grouped.items()}


def package_versions() -> dict[str, str]:
    """Versions of takeover and the packages whose behaviour the results depend on."""
    out = {"python": platform.python_version()}
    for name in ("takeover", "swebench", "mini-swe-agent", "litellm", "numpy", "scipy", "pydantic", "ray"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


# --- selection and import index -------------------------------------------------------------------


def select(config: ExperimentConfig, import_index: dict[str, dict] | None) -> list:
    """The source tasks of the experiment (docs/protocol.md section 2).

    Explicit ``instance_ids`` win. Otherwise the dataset is filtered to ``repos`` (when given) and, when
    trajectories are imported, to instances that have one; then the seeded selection of
    :func:`takeover.tasks.select_tasks` keeps ``limit`` of the ``buckets`` (an empty bucket list keeps
    every difficulty).
    """
    from takeover.tasks import load_tasks, select_tasks

    tasks = load_tasks(config.dataset_path)
    ds = config.dataset
    if ds.instance_ids:
        by_id = {t.instance_id: t for t in tasks}
        unknown = [i for i in ds.instance_ids if i not in by_id]
        if unknown:
            raise InputError(config.dataset_path, f"instances not in the dataset: {', '.join(unknown[:5])}",
                             field="dataset.instance_ids")
        return [by_id[i] for i in ds.instance_ids]
    if ds.repos:
        tasks = [t for t in tasks if t.repo in set(ds.repos)]
    if import_index is not None:
        tasks = [t for t in tasks if t.instance_id in import_index]
    buckets = ds.buckets or sorted({t.difficulty for t in tasks if t.difficulty is not None})
    return select_tasks(tasks, buckets, ds.seed, ds.limit)


def _trajectory_files(paths: list[Path]) -> list[Path]:
    from takeover.trajectories.registry import expand_paths

    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files.extend(expand_paths([p], keep_run_dirs=False))  # index_trajectories hashes each file
        elif p.is_file():
            files.append(p)
        else:
            raise InputError(p, "trajectory file or folder not found", field="predecessor.trajectories")
    return files


def index_trajectories(config: ExperimentConfig, notes: list[str]) -> dict[str, dict]:
    """``{instance_id: {file, record, sha256, format}}`` over the configured trajectory files.

    Each file's index is cached under ``OUT/work/import_index/<sha256>.json`` so a re-run does not parse
    the trajectories again. Files no reader recognises are skipped with a note (folders of agent output
    often hold summaries beside the runs). When an instance has several runs, the first (file order,
    then record order) is used and the others are noted.
    """
    from takeover.trajectories import read_trajectories

    cache = config.out / "work" / "import_index"
    index: dict[str, dict] = {}
    for f in _trajectory_files(config.trajectory_paths):
        sha = sha256_file(f)
        cached = cache / f"{sha}.json"
        if cached.exists():
            entries = json.loads(cached.read_text())
        else:
            try:
                trajs = read_trajectories(f)
            except InputError as exc:
                notes.append(f"skipped {f}: {exc.reason}")
                entries = []
            else:
                entries = [
                    {"record": t.record, "instance_id": t.instance_id, "format": t.format} for t in trajs
                ]
            atomic_write_json(cached, entries)
        for e in entries:
            iid = e["instance_id"]
            if not iid:
                continue
            if iid in index:
                notes.append(f"{iid}: several runs; using {index[iid]['file']} {index[iid]['record'] or ''}")
                continue
            index[iid] = {"file": str(f), "record": e["record"], "sha256": sha, "format": e["format"]}
    return index


# --- the run ----------------------------------------------------------------------------------------


class _Plan:
    def __init__(self, config: ExperimentConfig):
        self.config = config
        self.stages: dict[str, list[dict]] = {s: [] for s in STAGES}

    def add(self, stage: str, specs: list[UnitSpec], blocked: list[tuple[UnitSpec, str]]) -> None:
        self.stages[stage] = [{"key": s.key, "labels": s.labels} for s in specs] + [
            {"key": s.key, "labels": s.labels, "blocked": reason} for s, reason in blocked
        ]
        self.write()

    def write(self) -> None:
        c = self.config
        atomic_write_json(
            c.out / "plan.json",
            {
                "name": c.name,
                "bootstrap": {"resamples": c.bootstrap_resamples, "seed": c.bootstrap_seed},
                "views": list(c.views),
                "successors": [m.name for m in c.successors],
                "point_types": list(c.point_types),
                "stages": self.stages,
            },
        )


def _spec(stage: str, fn: str, inputs: dict, labels: dict, resources: list[str], context: dict) -> UnitSpec:
    return UnitSpec(stage=stage, fn=_FN + fn, inputs=inputs, labels=labels, resources=resources, context=context)


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
        retry_failed: redo units whose stored result is ``failed`` (``takeover run --retry failed``).
        progress: ``True`` shows a live rich table on stderr, a ``rich.console.Console`` shows it there;
            a callable receives every :class:`takeover.experiments.engine.ProgressEvent` instead (for
            example a :class:`takeover.experiments.progress.ProgressTracker`); ``False`` shows nothing.
        report: build the report at the end (``takeover report`` can build it any time).

    Returns:
        :class:`ExperimentSummary` with per-stage counts and every failed or blocked unit.

    Raises:
        InputError: bad dataset, instance ids or trajectory paths (before any unit runs).
    """
    from takeover.experiments.progress import LiveProgress

    t0 = time.monotonic()
    out = config.out
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "config.resolved.json", config.resolved())
    atomic_write_json(out / "versions.json", package_versions())
    workers = workers or config.execution.workers
    kind = executor or config.execution.executor
    caps = {
        "model": config.execution.model_concurrency or workers,
        "env": config.execution.environment_concurrency or workers,
    }
    from rich.console import Console

    live = None
    if progress is True or isinstance(progress, Console):
        live = LiveProgress(console=progress if isinstance(progress, Console) else None)
        callback: ProgressCallback | None = live.__enter__()
    elif callable(progress):
        callback = progress
    else:
        callback = None
    summary = ExperimentSummary(out_dir=str(out))
    ex = make_executor(kind, workers, ray_address=config.execution.ray_address)
    interrupted = True
    try:
        _run_stages(config, summary, lambda specs: run_units(
            specs, out, ex, caps=caps, retry_failed=retry_failed, progress=callback), retry_failed)
        interrupted = False
    finally:
        ex.close(terminate=interrupted)
        if live is not None:
            live.__exit__(None, None, None)
    if report:
        from takeover.report import build_report

        summary.report_files = build_report(out).files
    summary.seconds = round(time.monotonic() - t0, 3)
    atomic_write_json(out / "summary.json", summary)
    return summary


def _record(summary: ExperimentSummary, stage: str, specs: list[UnitSpec], blocked: list[tuple[UnitSpec, str]],
            results: dict[str, UnitResult], reused_before: set[str]) -> None:
    c = Counter({k: 0 for k in ("done", "failed", "reused", "ran")})
    c.update(planned=len(specs) + len(blocked), blocked=len(blocked))
    for spec in specs:
        r = results.get(spec.key)
        if r is None:
            continue
        c[r.status] += 1
        c["reused" if spec.key in reused_before else "ran"] += 1
        if r.status == "failed":
            summary.problems.append(Problem(stage=stage, key=spec.key, status="failed", failure_kind=r.failure_kind,
                                            reason=r.reason, labels=spec.labels))
    for spec, reason in blocked:
        summary.problems.append(Problem(stage=stage, key=spec.key, status="blocked", failure_kind="infrastructure",
                                        reason=reason, labels=spec.labels))
    summary.counts[stage] = dict(c)


def _run_stages(config: ExperimentConfig, summary: ExperimentSummary,
                run: Callable[[list[UnitSpec]], dict[str, UnitResult]], retry_failed: bool = False) -> None:
    out = config.out
    plan = _Plan(config)
    notes: list[str] = []
    context = {
        "mirror": str(config.mirror_path) if config.mirror_path else None,
        "allow_network": config.allow_network,
    }
    # Only what changes an agent run is part of an agent unit's key (grading and replay limits are not).
    limits = config.limits.model_dump(mode="json", include={"step_limit", "time_limit", "command_timeout", "protocol"})

    def stage(name: str, specs: list[UnitSpec], blocked: list[tuple[UnitSpec, str]] | None = None):
        blocked = blocked or []
        plan.add(name, specs, blocked)
        before = set()
        for s in specs:
            stored = read_result(out, name, s.key, s.inputs.get("instance_id"))
            if stored is not None and (stored.status == "done" or not retry_failed):
                before.add(s.key)
        results = run(specs)
        _record(summary, name, specs, blocked, results, before)
        return results

    # 1. select ------------------------------------------------------------------------------------
    index = index_trajectories(config, notes) if config.predecessor.trajectories else None
    tasks = select(config, index)
    task_files: dict[str, dict] = {}
    for t in tasks:
        path = out / "tasks" / f"{t.instance_id}.json"
        atomic_write_json(path, t)
        task_files[t.instance_id] = {"task": str(path), "task_sha256": stable_hash(t.model_dump(mode="json"), 32)}
    atomic_write_text(out / "tasks.jsonl", "".join(t.model_dump_json() + "\n" for t in tasks))
    if notes:
        atomic_write_text(out / "import_notes.txt", "\n".join(notes) + "\n")

    # 2. predecessor -------------------------------------------------------------------------------
    specs = []
    for t in tasks:
        base = {"instance_id": t.instance_id, **task_files[t.instance_id]}
        labels = {"instance_id": t.instance_id}
        if index is not None:
            if t.instance_id not in index:
                summary.skipped_instances[t.instance_id] = "no imported trajectory for this instance"
                continue
            specs.append(_spec("predecessor", "import_predecessor", {**base, "trajectory": index[t.instance_id]},
                               labels, [], context))
        else:
            model = config.predecessor.model
            specs.append(_spec("predecessor", "run_predecessor", {**base, "model": model.public(), "limits": limits},
                               labels, ["model", "env"], context))
    pred = stage("predecessor", specs)

    # 3. points ------------------------------------------------------------------------------------
    specs, blocked = [], []
    for entry in plan.stages["predecessor"]:
        r = pred.get(entry["key"])
        inputs = {"instance_id": entry["labels"]["instance_id"], "predecessor_key": entry["key"],
                  **task_files[entry["labels"]["instance_id"]]}
        if config.limits.replay_timeout is not None:
            inputs["replay_timeout"] = config.limits.replay_timeout
        spec = _spec("points", "detect_points", {**inputs, "trajectory": (r.output if r else {})},
                     entry["labels"], ["env"], context)
        if r is None or r.status != "done":
            blocked.append((spec, f"predecessor unit {entry['key']} failed: {r.reason if r else 'missing'}"))
        else:
            specs.append(spec)
    pts = stage("points", specs, blocked)

    # 4. checkpoints -------------------------------------------------------------------------------
    specs, blocked = [], []
    for entry in plan.stages["points"]:
        if entry.get("blocked"):
            continue
        r = pts.get(entry["key"])
        if r is None or r.status != "done":
            continue  # no points known: reported under the points stage
        iid = entry["labels"]["instance_id"]
        for point in r.output.get("points", []):
            if point["type"] not in config.point_types:
                continue
            labels = {"instance_id": iid, "point_type": point["type"]}
            inputs = {"instance_id": iid, **task_files[iid], "points_key": entry["key"], "point": point,
                      "trajectory": r.inputs.get("trajectory", {}), "run_points": r.output["run_points"]}
            specs.append(_spec("checkpoint", "make_checkpoint", inputs, labels, [], context))
    cps = stage("checkpoint", specs, blocked)
    checkpoints = []  # (labels, checkpoint output, checkpoint key)
    for spec in specs:
        r = cps.get(spec.key)
        if r is not None and r.status == "done":
            labels = {**spec.labels, "point_key": spec.key}
            checkpoints.append((labels, r.output, spec.key))

    # 5. handoff state -----------------------------------------------------------------------------
    grading = {"backend": config.grading.backend, "timeout": config.limits.grading_timeout}
    if config.grading.network:
        # Only when on: the keys of units graded offline (the default) stay what they were.
        grading["network"] = True
    specs = []
    for labels, cp, key in checkpoints:
        inputs = {"instance_id": labels["instance_id"], **task_files[labels["instance_id"]],
                  "checkpoint_key": key, "checkpoint_dir": cp["checkpoint_dir"],
                  "patch_sha256": cp["patch_sha256"], "grading": grading}
        specs.append(_spec("handoff_state", "grade_checkpoint", inputs, labels, ["env"], context))
    stage("handoff_state", specs)

    # 6. views -------------------------------------------------------------------------------------
    notes_model = config.notes_model.public()
    specs = []
    for labels, cp, key in checkpoints:
        for view in config.views:
            inputs = {"instance_id": labels["instance_id"], **task_files[labels["instance_id"]],
                      "checkpoint_key": key, "checkpoint_dir": cp["checkpoint_dir"],
                      "patch_sha256": cp["patch_sha256"], "view": view, "trajectory": cp["trajectory"]}
            if view in NOTE_VIEWS:
                inputs["notes_model"] = notes_model
                if config.notes.max_tokens != 1600:  # only a non-protocol cap enters the key
                    inputs["notes_max_tokens"] = config.notes.max_tokens
            specs.append(_spec("view", "build_view", inputs, {**labels, "view": view},
                               ["model"] if view in NOTE_VIEWS else [], context))
    views = stage("view", specs)
    view_by = {(s.labels["point_key"], s.labels["view"]): (s, views.get(s.key)) for s in specs}

    # 7. takeover runs -----------------------------------------------------------------------------
    specs, blocked = [], []
    for labels, cp, key in checkpoints:
        for view in config.views:
            vspec, vres = view_by[(key, view)]
            for model in config.successors:
                tl = {**labels, "view": view, "successor": model.name}
                inputs = {"instance_id": labels["instance_id"], **task_files[labels["instance_id"]],
                          "checkpoint_key": key, "checkpoint_dir": cp["checkpoint_dir"],
                          "patch_sha256": cp["patch_sha256"], "view": view, "view_key": vspec.key,
                          "view_sha256": (vres.output.get("sha256") if vres else None),
                          "view_path": (vres.output.get("path") if vres else None),
                          "model": model.public(), "limits": limits}
                spec = _spec("takeover", "run_takeover", inputs, tl, ["model", "env"], context)
                if vres is None or vres.status != "done":
                    blocked.append((spec, f"view {view} not built: {vres.reason if vres else 'missing'}"))
                else:
                    specs.append(spec)
    runs = stage("takeover", specs, blocked)

    # 8. grading -----------------------------------------------------------------------------------
    gspecs, gblocked = [], []
    for spec in specs + [s for s, _ in blocked]:
        r = runs.get(spec.key)
        inputs = {"instance_id": spec.labels["instance_id"], **task_files[spec.labels["instance_id"]],
                  "takeover_key": spec.key, "patch_sha256": (r.output.get("patch_sha256") if r else None),
                  "patch_path": (r.output.get("patch_path") if r else None),
                  "checkpoint_dir": spec.inputs["checkpoint_dir"], "grading": grading}
        g = _spec("grade", "grade_takeover", inputs, {**spec.labels, "takeover_key": spec.key}, ["env"], context)
        if r is None or r.status != "done":
            gblocked.append((g, f"takeover run {spec.key} did not finish"))
        else:
            gspecs.append(g)
    stage("grade", gspecs, gblocked)

