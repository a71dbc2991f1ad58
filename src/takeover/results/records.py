"""Typed records of what each experiment stage hands on: the ``inputs`` and ``output`` of its unit files.

An experiment writes one file per unit of work, ``OUT/units/<stage>/<key>.json``
(:class:`takeover.experiments.units.UnitResult`). Its ``inputs`` are what the plan gave the unit (their hash
is the unit's key, so a changed input redoes the unit), its ``output`` what the unit made and hands to the
next stage and to the report. This module is the one description of both, stage by stage
(docs/protocol.md sections 2-9):

==================  =========================================  ======================================
stage               inputs                                     output
==================  =========================================  ======================================
``environment``     :class:`EnvironmentInputs`                 :class:`EnvironmentOutput`
``predecessor``     :class:`ImportInputs` (recorded run) or    :class:`ImportOutput` or
                    :class:`PredecessorRunInputs` (our run)    :class:`PredecessorRunOutput`
``points``          :class:`PointsInputs`                      :class:`PointsOutput`
``checkpoint``      :class:`CheckpointInputs`                  :class:`CheckpointOutput`
``handoff_state``   :class:`HandoffStateInputs`                :class:`HandoffStateOutput`
``view``            :class:`ViewUnitInputs`                    :class:`ViewOutput`
``takeover``        :class:`TakeoverInputs`                    :class:`TakeoverRunOutput`
``grade``           :class:`GradeInputs`                       :class:`GradeOutput`
==================  =========================================  ======================================

Every unit file also carries :class:`UnitLabels` (what progress and the report group by), and
``OUT/plan.json`` lists each stage's units as :class:`PlanEntry` records.

The JSON written is a record's stable form (:func:`takeover._util.io.stable_form`, the one rule of keys):
fields in the order declared here, every field at its default left out, in the records inside it too (the
grading, replay and view settings, the limits, the agent choice), so that a setting added later, with a
default, does not change the keys of units made before it. Paths are absolute strings; times are seconds;
token counts are tokens. Reading a record that does not match (a missing or unknown field, a wrong type)
raises :class:`pydantic.ValidationError`; reading fills the defaults in.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from takeover.agent_choice import AgentChoice
from takeover.grading_settings import GradingSettings
from takeover.limits import RunLimits
from takeover.llm import ModelSettings
from takeover.replay_settings import ReplaySettings
from takeover.vocabulary import (
    CheckpointMethod,
    ExitStatus,
    HandoffState,
    PointType,
    ViewName,
)


class _Record(BaseModel):
    """Base of the records: unknown fields are refused (written in their stable form, module docstring)."""

    model_config = ConfigDict(extra="forbid")


# --- labels and the plan ---------------------------------------------------------------------------


class UnitLabels(_Record):
    """What a unit is about, for progress displays and the report (not part of its key).

    Each stage adds to its upstream unit's labels: ``instance_id`` (every stage), ``point_type``
    (checkpoint on), ``point_key`` (the checkpoint unit's key, handoff_state on), ``view`` (view on),
    ``successor`` (the successor's name, takeover on: its model, with its agent runtime in parentheses
    unless every successor runs under the default one), ``takeover_key`` (grade).
    """

    instance_id: str
    point_type: PointType | None = None
    point_key: str | None = None
    view: ViewName | None = None
    successor: str | None = None
    takeover_key: str | None = None


class PlanEntry(_Record):
    """One planned unit in ``OUT/plan.json``: its key, labels and, for a blocked unit, why it cannot run
    (an upstream unit failed); a blocked unit has no unit file."""

    key: str
    labels: UnitLabels
    blocked: str | None = None


# --- shared pieces ---------------------------------------------------------------------------------


class TaskInputs(_Record):
    """The source task of a unit: ``task`` is ``OUT/tasks/<instance_id>.json``, ``task_sha256`` a hash of
    the task record (so a changed task redoes its units)."""

    instance_id: str
    task: str
    task_sha256: str


# --- environment -----------------------------------------------------------------------------------


class EnvironmentInputs(TaskInputs):
    """Build (or reuse) the local test environment of one task."""


class EnvironmentOutput(_Record):
    """The prepared environment: ``interpreter_version`` it runs, whether the shared environment was
    ``cached``, and the seconds spent building it (``build_seconds``, 0 when cached) and installing the
    checkout into it (``setup_seconds``)."""

    repo: str
    version: str | None
    interpreter_version: str
    cached: bool
    build_seconds: float
    setup_seconds: float


# --- predecessor -----------------------------------------------------------------------------------


class TrajectoryFile(_Record):
    """A recorded run in a trajectory file: the ``file``, the ``record`` inside it (``None`` when the file
    holds one run), the file's ``sha256`` when it was indexed, and its detected ``format``."""

    file: str
    record: str | None = None
    sha256: str
    format: str


class ImportInputs(TaskInputs):
    """Import a recorded predecessor run."""

    trajectory: TrajectoryFile


class ImportOutput(_Record):
    """An imported predecessor run, summarized: where it is (``file``, ``record``), its ``format`` and its
    own counts (``None`` when the file records no token usage)."""

    file: str
    record: str | None
    format: str
    agent_events: int
    prompt_tokens: int | None
    completion_tokens: int | None
    exit_status: str | None
    final_patch_files: list[str]


class PredecessorRunInputs(TaskInputs):
    """Run the predecessor ``model`` on the task under ``limits`` (:class:`takeover.limits.RunLimits`) with
    the agent choice ``agent`` (:class:`takeover.agents.AgentChoice`, whole)."""

    model: ModelSettings
    limits: RunLimits
    agent: AgentChoice


class AgentRunOutput(_Record):
    """One agent run of ours (docs/protocol.md section 8): its run folder, why it ended, its accounting
    (events, calls, tokens, seconds; ``usage`` is ``estimated`` when ``estimated_calls`` calls carried no
    usage, ``unavailable`` when the agent recorded none: the token counts are then ``None``, n/a in the
    report) and its final patch (``patch_path`` ``None`` when empty; the sha256 is then that of the empty
    text)."""

    run_dir: str
    exit_status: ExitStatus | None
    exit_detail: str | None
    agent_events: int
    llm_calls: int
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None
    reasoning_tokens: int | None
    usage: Literal["reported", "estimated", "unavailable"]
    estimated_calls: int
    initial_prompt_chars: int
    initial_prompt_tokens: int | None
    wall_seconds: float
    model_seconds: float
    command_seconds: float
    patch_path: str | None
    patch_sha256: str


class PredecessorRunOutput(AgentRunOutput):
    """A predecessor run; ``workspace`` holds its recorded snapshots (used to find its handoff points)."""

    workspace: str | None


#: What a predecessor unit hands to the points stage: an imported or a run predecessor.
PredecessorOutput = ImportOutput | PredecessorRunOutput


# --- points ----------------------------------------------------------------------------------------


class PointsInputs(_Record):
    """Find the handoff points of one predecessor run: ``trajectory`` is the predecessor unit's output
    (``None`` only in a blocked unit: the predecessor unit failed); ``replay`` how an imported run is
    replayed (:class:`takeover.replay_settings.ReplaySettings`, whole)."""

    instance_id: str
    predecessor_key: str
    task: str
    task_sha256: str
    replay: ReplaySettings
    trajectory: PredecessorOutput | None


class PointEntry(_Record):
    """A handoff point (:class:`takeover.points.HandoffPoint` as JSON: its ``type``, ``event_index`` and
    the verification context after them)."""

    model_config = ConfigDict(extra="allow")

    type: PointType
    event_index: int


class MissingEntry(_Record):
    """A point type the run has no qualifying point of, and why."""

    type: PointType
    reason: str


class ReplaySummary(_Record):
    """How the run's per-event states were obtained (:class:`takeover.repository_states.replay.ReplayVerdict`
    as JSON)."""

    model_config = ConfigDict(extra="allow")

    verified: bool
    method: str


class PointsOutput(_Record):
    """The run's points: ``run_points`` is the saved :class:`takeover.checkpoints.RunPoints` (JSON file),
    ``patch_sha256`` the sha256 of the cumulative patch at each point type."""

    run_points: str
    replay: ReplaySummary
    points: list[PointEntry]
    missing: list[MissingEntry]
    patch_sha256: dict[str, str]


# --- checkpoint ------------------------------------------------------------------------------------


class CheckpointInputs(TaskInputs):
    """Materialize the checkpoint of one point (docs/protocol.md section 5)."""

    points_key: str
    point: PointEntry
    trajectory: PredecessorOutput
    run_points: str


class CheckpointOutput(_Record):
    """A checkpoint folder (``checkpoint.json``, ``checkpoint.patch``, ``workspace/``) and what the later
    stages need of it; ``trajectory`` is the predecessor it came from."""

    checkpoint_dir: str
    patch_sha256: str
    files: list[str]
    method: CheckpointMethod
    event_index: int
    trajectory: PredecessorOutput


class CheckpointUnitInputs(TaskInputs):
    """The inputs every unit working on one checkpoint starts with."""

    checkpoint_key: str
    checkpoint_dir: str
    patch_sha256: str


# --- handoff state ---------------------------------------------------------------------------------


class HandoffStateInputs(CheckpointUnitInputs):
    """Grade a checkpoint's patch for its handoff state (docs/protocol.md section 6)."""

    grading: GradingSettings


class HandoffStateOutput(_Record):
    """The checkpoint's handoff state and test pass rates (``None`` when a list is empty); ``warnings``
    say why a result may differ from the official harness; ``set_aside`` names the PASS_TO_PASS tests the
    reference patch fails in the same environment, left out of the state (docs/protocol.md section 6);
    ``grading_rules`` whose verdict rules decided it (None: recorded before the rules were, swebench-4.1)."""

    handoff_state: HandoffState | None
    resolved: bool
    fail_to_pass_rate: float | None
    pass_to_pass_rate: float | None
    network: bool
    warnings: list[str]
    set_aside: list[str] = []
    grading_rules: str | None = None


# --- view ------------------------------------------------------------------------------------------


class ViewUnitInputs(CheckpointUnitInputs):
    """Build one view of a checkpoint (docs/protocol.md section 7). A model-written view adds the note writer
    (``notes_model``). ``view_options`` are the view's own options beyond their defaults, by name
    (:func:`takeover.views.view_registry.view_options`: ``raw_trace_max_chars``/``raw_trace_max_tokens`` of
    ``raw_trace``, ``note_max_tokens`` of the model-written views): the unit's key names the view and only
    what it is built with. ``view_file`` is a view file's content (``None`` for a view in code): its identity,
    so that editing the file builds the view again, and what a worker rebuilds the view from."""

    view: ViewName
    trajectory: PredecessorOutput
    notes_model: ModelSettings | None = None
    view_options: dict[str, Any] = Field(default_factory=dict)
    view_file: dict[str, Any] | None = None


class ViewOutput(_Record):
    """The view's takeover prompt file (``path``, its ``sha256``), its size (Unicode ``characters``,
    ``estimated_tokens``), how its notes were validated, note-writing ``attempts`` and the events a budget
    ``dropped`` from ``raw_trace``. Notes views add the note writer's ``cached_tokens``,
    ``reasoning_tokens`` and ``estimated_calls`` (calls whose usage was estimated); the unit's own prompt
    and completion tokens are the note writer's. ``structured``: the view's own record, as
    :class:`takeover.views.ViewResult` has it (a structured record's two halves; the ``condensed`` view's
    condenser, settings and versions; who wrote a ``self_notes`` note)."""

    path: str
    sha256: str
    characters: int
    estimated_tokens: int
    validation: str
    attempts: int
    dropped_events: int
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    estimated_calls: int | None = None
    structured: dict | None = None


# --- takeover and grade ----------------------------------------------------------------------------


class TakeoverInputs(CheckpointUnitInputs):
    """One successor run from a checkpoint under one view (docs/protocol.md section 8). ``view_sha256``
    and ``view_path`` are ``None`` only in a blocked unit (its view was not built). ``limits`` and the
    agent choice ``agent`` as in :class:`PredecessorRunInputs`."""

    view: ViewName
    view_key: str
    view_sha256: str | None
    view_path: str | None
    model: ModelSettings
    limits: RunLimits
    agent: AgentChoice


class TakeoverRunOutput(AgentRunOutput):
    """A takeover run, and whether its final diff still holds the checkpoint's diff and changes source
    files only."""

    checkpoint_diff_preserved: bool
    only_source_files_changed: bool


class GradeInputs(TaskInputs):
    """Grade a takeover run's final patch. ``patch_sha256``/``patch_path`` are ``None`` only in a blocked
    unit (the run did not finish)."""

    takeover_key: str
    patch_sha256: str | None
    patch_path: str | None
    checkpoint_dir: str
    grading: GradingSettings


class GradeOutput(_Record):
    """Whether the takeover run resolved the task, the handoff state of its final patch, the test pass
    rates (``None`` when a list is empty), grading warnings, whose verdict rules decided it
    (``grading_rules``; None: recorded before the rules were, swebench-4.1) and ``flaky``: the tests that
    flipped with the hash seed and both seeds when two gradings disagreed (:mod:`takeover.grading.flaky`:
    neither solved nor a failure), else None."""

    resolved: bool
    handoff_state: HandoffState | None
    fail_to_pass_rate: float | None
    pass_to_pass_rate: float | None
    network: bool
    warnings: list[str] = Field(default_factory=list)
    grading_rules: str | None = None
    flaky: str | None = None
