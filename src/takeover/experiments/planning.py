"""Planning the units of each stage from the results of the stages before it (docs/protocol.md sections 2-9).

:class:`Planner` has one method per stage. Each turns the upstream stage's specs and results into this
stage's :class:`~takeover.experiments.units.UnitSpec` s, with typed inputs and labels
(:mod:`takeover.results`); a unit whose upstream unit failed is returned as *blocked*, with the reason,
so that it is listed in the plan and counted, never silently dropped. :class:`Plan` keeps what was
planned and writes ``OUT/plan.json``.
"""

from __future__ import annotations

from dataclasses import dataclass

from takeover._util.io import atomic_write_json, stable_form
from takeover.experiments import stages
from takeover.experiments.config import ExperimentConfig
from takeover.experiments.selection import why_not_imported
from takeover.experiments.units import UnitResult, UnitSpec
from takeover.results import (
    CheckpointInputs,
    CheckpointOutput,
    EnvironmentInputs,
    GradeInputs,
    HandoffStateInputs,
    ImportInputs,
    PlanEntry,
    PointsInputs,
    PointsOutput,
    PredecessorRunInputs,
    TakeoverInputs,
    TakeoverRunOutput,
    TaskInputs,
    TrajectoryFile,
    UnitLabels,
    ViewOutput,
    ViewUnitInputs,
)
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask

#: The stages of ``takeover run`` in order (``environment`` only with ``execution.prepare_environments``).
STAGES = ("environment", "predecessor", "points", "checkpoint", "handoff_state", "view", "takeover", "grade")

Blocked = list[tuple[UnitSpec, str]]


def stages_of(config: ExperimentConfig) -> tuple[str, ...]:
    """The stages this experiment runs, in order."""
    return STAGES if config.execution.prepare_environments else STAGES[1:]


class Plan:
    """The planned units of every stage, written to ``OUT/plan.json`` after each stage is planned."""

    def __init__(self, config: ExperimentConfig):
        self.config = config
        self.stages: dict[str, list[PlanEntry]] = {s: [] for s in stages_of(config)}
        #: Selected instances without a predecessor run, with why; the notes on trajectory files not imported.
        self.not_imported: dict[str, str] = {}
        self.import_notes: list[str] = []

    def add(self, stage: str, specs: list[UnitSpec], blocked: Blocked) -> None:
        """Record ``stage``'s units (runnable, then blocked with their reasons) and rewrite ``plan.json``."""
        self.stages[stage] = [PlanEntry(key=s.key, labels=UnitLabels.model_validate(s.labels)) for s in specs] + [
            PlanEntry(key=s.key, labels=UnitLabels.model_validate(s.labels), blocked=reason) for s, reason in blocked
        ]
        self.write()

    def write(self) -> None:
        """Write ``OUT/plan.json``: name, bootstrap settings, views, successors, point types, the units, the
        selected instances without a predecessor run (``not_imported``, with why) and ``import_notes``."""
        c = self.config
        atomic_write_json(
            c.out / "plan.json",
            {
                "name": c.name,
                "bootstrap": {"resamples": c.bootstrap_resamples, "seed": c.bootstrap_seed},
                "views": c.view_names,
                "successors": c.successor_names,
                "point_types": list(c.point_types),
                "stages": {stage: [stable_form(e) for e in entries]
                           for stage, entries in self.stages.items()},
                "not_imported": dict(sorted(self.not_imported.items())),
                "import_notes": self.import_notes,
            },
        )


@dataclass(frozen=True)
class DoneCheckpoint:
    """A checkpoint unit that finished: its labels (with ``point_key``), output and key."""

    labels: UnitLabels
    output: CheckpointOutput
    key: str


def done_checkpoints(specs: list[UnitSpec], results: dict[str, UnitResult]) -> list[DoneCheckpoint]:
    """The finished checkpoints among ``specs``, in plan order; ``point_key`` is added to their labels."""
    done = []
    for spec in specs:
        r = results.get(spec.key)
        if r is not None and r.status == "done":
            labels = UnitLabels.model_validate({**spec.labels, "point_key": spec.key})
            done.append(DoneCheckpoint(labels, CheckpointOutput.model_validate(r.output), spec.key))
    return done


def _failed(result: UnitResult | None) -> str:
    return result.reason if result is not None else "missing"


class Planner:
    """Plans each stage's units for one experiment.

    Args:
        config: the experiment.
        task_files: each selected task's file and hash, by instance id (every unit's inputs start with it).
        repo_source: where repositories come from; handed to every unit.
    """

    def __init__(self, config: ExperimentConfig, task_files: dict[str, TaskInputs], repo_source: RepoSource):
        self.config = config
        self.task_files = task_files
        self.repo_source = repo_source

    def _spec(self, stage: str, function, inputs, labels: UnitLabels, resources: list[str]) -> UnitSpec:
        return UnitSpec(stage=stage, fn=function, inputs=inputs, labels=labels, resources=resources,
                        repo_source=self.repo_source)

    def _task(self, instance_id: str) -> dict:
        return self.task_files[instance_id].model_dump()

    # --- the stages, in order ------------------------------------------------------------------------

    def environments(self, tasks: list[SourceTask]) -> list[UnitSpec]:
        """One unit per task: build (or reuse) its local test environment."""
        return [self._spec("environment", stages.environment_unit, EnvironmentInputs(**self._task(t.instance_id)),
                           UnitLabels(instance_id=t.instance_id), ["env"]) for t in tasks]

    def predecessors(self, tasks: list[SourceTask], index: dict[str, TrajectoryFile] | None,
                     skipped: dict[str, str], unreadable: dict[str, str] | None = None) -> list[UnitSpec]:
        """One unit per task: import its recorded run (``index`` given) or run the predecessor model.
        Tasks without a recorded run are added to ``skipped`` with the reason (``unreadable``: the errors of
        the trajectory files that could not be read, by path, so that the reason names the real one)."""
        specs = []
        for t in tasks:
            labels = UnitLabels(instance_id=t.instance_id)
            if index is not None:
                if t.instance_id not in index:
                    skipped[t.instance_id] = why_not_imported(t.instance_id, unreadable or {})
                    continue
                inputs = ImportInputs(**self._task(t.instance_id), trajectory=index[t.instance_id])
                specs.append(self._spec("predecessor", stages.import_unit, inputs, labels, []))
            else:
                pred = self.config.predecessor
                inputs = PredecessorRunInputs(**self._task(t.instance_id), model=pred.model,
                                              limits=self.config.limits, agent=pred.agent)
                specs.append(self._spec("predecessor", stages.predecessor_run_unit, inputs, labels, ["model", "env"]))
        return specs

    def points(self, predecessors: list[UnitSpec], results: dict[str, UnitResult],
               environments: dict[str, UnitResult] | None = None) -> tuple[list[UnitSpec], Blocked]:
        """One unit per predecessor run: find its handoff points. Blocked when the predecessor unit (or
        the task's environment unit, when that stage runs) failed."""
        specs, blocked = [], []
        env_by_instance = {}
        if environments is not None:
            env_by_instance = {r.inputs["instance_id"]: (key, r) for key, r in environments.items()}
        for pred in predecessors:
            r = results.get(pred.key)
            iid = pred.labels["instance_id"]
            files = self._task(iid)
            inputs = PointsInputs(
                instance_id=iid, predecessor_key=pred.key, task=files["task"], task_sha256=files["task_sha256"],
                replay=self.config.replay,
                trajectory=r.output if r is not None and r.status == "done" else None,
            )
            spec = self._spec("points", stages.points_unit, inputs, UnitLabels.model_validate(pred.labels), ["env"])
            env_key, env = env_by_instance.get(iid, (None, None))
            if r is None or r.status != "done":
                blocked.append((spec, f"predecessor unit {pred.key} failed: {_failed(r)}"))
            elif env is not None and env.status != "done":
                blocked.append((spec, f"environment unit {env_key} failed: {env.reason}"))
            else:
                specs.append(spec)
        return specs, blocked

    def checkpoints(self, points: list[UnitSpec], results: dict[str, UnitResult]) -> list[UnitSpec]:
        """One unit per found point of a configured type. A points unit that failed has no points; it is
        reported under the points stage."""
        specs = []
        for spec in points:
            r = results.get(spec.key)
            if r is None or r.status != "done":
                continue
            found = PointsOutput.model_validate(r.output)
            upstream = PointsInputs.model_validate(r.inputs)
            iid = spec.labels["instance_id"]
            for point in found.points:
                if point.type not in self.config.point_types:
                    continue
                inputs = CheckpointInputs(**self._task(iid), points_key=spec.key, point=point,
                                          trajectory=upstream.trajectory, run_points=found.run_points)
                specs.append(self._spec("checkpoint", stages.checkpoint_unit, inputs,
                                        UnitLabels(instance_id=iid, point_type=point.type), []))
        return specs

    def _checkpoint_inputs(self, cp: DoneCheckpoint) -> dict:
        return {**self._task(cp.labels.instance_id), "checkpoint_key": cp.key,
                "checkpoint_dir": cp.output.checkpoint_dir, "patch_sha256": cp.output.patch_sha256}

    def handoff_states(self, checkpoints: list[DoneCheckpoint]) -> list[UnitSpec]:
        """One unit per checkpoint: grade its patch for the handoff state."""
        return [self._spec("handoff_state", stages.handoff_state_unit,
                           HandoffStateInputs(**self._checkpoint_inputs(cp), grading=self.config.grading), cp.labels, ["env"])
                for cp in checkpoints]

    def views(self, checkpoints: list[DoneCheckpoint]) -> list[UnitSpec]:
        """One unit per (checkpoint, view); a model-written view calls the note writer; each view is built
        with its own options (:meth:`ExperimentConfig.options_of`), and a view file's unit carries the file's
        content (its identity: an edited file is a new view)."""
        specs = []
        for cp in checkpoints:
            for name in self.config.view_names:
                view = self.config.handoff_view(name)
                inputs = ViewUnitInputs(
                    **self._checkpoint_inputs(cp), view=name, trajectory=cp.output.trajectory,
                    notes_model=self.config.notes_model if view.model_written else None,
                    view_options=self.config.options_of(name), view_file=view.definition(),
                )
                labels = cp.labels.model_copy(update={"view": name})
                specs.append(self._spec("view", stages.view_unit, inputs, labels,
                                        ["model"] if view.model_written else []))
        return specs

    def takeovers(self, checkpoints: list[DoneCheckpoint], views: list[UnitSpec],
                  results: dict[str, UnitResult]) -> tuple[list[UnitSpec], Blocked]:
        """One unit per (checkpoint, view, successor) of the given view units, in the order of checkpoints,
        the configured views and successors. Blocked when the view was not built (or has no result yet)."""
        view_by = {(s.labels["point_key"], s.labels["view"]): (s, results.get(s.key)) for s in views}
        specs, blocked = [], []
        for cp in checkpoints:
            for view in self.config.view_names:
                if (cp.key, view) not in view_by:
                    continue
                vspec, vres = view_by[(cp.key, view)]
                built = ViewOutput.model_validate(vres.output) if vres is not None and vres.status == "done" else None
                for successor, name in zip(self.config.successors, self.config.successor_names, strict=True):
                    inputs = TakeoverInputs(
                        **self._checkpoint_inputs(cp), view=view, view_key=vspec.key,
                        view_sha256=built.sha256 if built else None, view_path=built.path if built else None,
                        model=successor.settings(), limits=self.config.limits, agent=successor.agent,
                    )
                    labels = cp.labels.model_copy(update={"view": view, "successor": name})
                    spec = self._spec("takeover", stages.takeover_unit, inputs, labels, ["model", "env"])
                    if built is None:
                        blocked.append((spec, f"view {view} not built: {_failed(vres)}"))
                    else:
                        specs.append(spec)
        return specs, blocked

    def grades(self, takeovers: list[UnitSpec], takeovers_blocked: Blocked,
               results: dict[str, UnitResult]) -> tuple[list[UnitSpec], Blocked]:
        """One unit per planned takeover run: grade its final patch. Blocked when the run did not finish."""
        specs, blocked = [], []
        for spec in takeovers + [s for s, _ in takeovers_blocked]:
            r = results.get(spec.key)
            run = TakeoverRunOutput.model_validate(r.output) if r is not None and r.status == "done" else None
            upstream = TakeoverInputs.model_validate(spec.inputs)
            inputs = GradeInputs(**self._task(upstream.instance_id), takeover_key=spec.key,
                                 patch_sha256=run.patch_sha256 if run else None,
                                 patch_path=run.patch_path if run else None,
                                 checkpoint_dir=upstream.checkpoint_dir, grading=self.config.grading)
            labels = UnitLabels.model_validate({**spec.labels, "takeover_key": spec.key})
            g = self._spec("grade", stages.grade_unit, inputs, labels, ["env"])
            if run is None:
                blocked.append((g, f"takeover run {spec.key} did not finish"))
            else:
                specs.append(g)
        return specs, blocked
