"""takeover's own run format: the run folder an agent run writes (:mod:`takeover.agents`), read back as a
:class:`Trajectory` (docs/protocol.md sections 5 and 8).

Run folder::

    run.json              RunRecord (accounting, exit status, model settings without secrets, versions)
    prompt.md             the prompt given to the agent (task prompt, or a view's takeover prompt)
    events.jsonl          one takeover.trajectories.events.Event per line
    calls.jsonl           one LLMCall per line (usage of every model call)
    <native record>       the agent runtime's own record, as it wrote it (mini-swe-agent:
                          <instance_id>.traj.json, format mini-swe-agent-1.1)
    patch.diff            final diff of the workspace against the run's starting state (base_commit plus
                          the task environment's setup edits; untracked files included)
    workspace/            the repository; its .git keeps every snapshot tree (refs/takeover/snapshots/*)

``run.json`` is rewritten atomically after every step, so a reader always finds a complete record:
``finished`` is false while the run goes on (or after a crash), and ``exit_status`` is set once it ended.

Two readers, format names ``takeover`` and ``takeover-dir``, so that ``takeover inspect RUN_DIR`` and
``takeover inspect RUN_DIR/events.jsonl`` work and handoff point detection reads the recorded snapshots
instead of replaying (docs/protocol.md section 5 source (a)):

- ``takeover-dir``: a folder holding ``run.json`` and ``events.jsonl``;
- ``takeover``: the ``events.jsonl`` file itself (its folder must hold ``run.json``).

The trajectory's ``metadata`` carries ``snapshot_repo`` (the run's workspace, whose git objects hold every
``Event.snapshot`` tree), ``starting_state`` (the tree every diff of the run is taken against; ``None`` for
runs of earlier versions), ``run_dir``, ``repo``, ``base_commit``, ``kind``, ``usage``, ``finished``, the
accounting and the origin. ``final_patch`` is ``patch.diff``; ``task_prompt`` is ``prompt.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from takeover._util.io import iter_jsonl, with_current_names
from takeover.errors import InputError
from takeover.limits import RunLimits
from takeover.trajectories._common import Reader, Source
from takeover.trajectories.events import Event, LLMCall, Trajectory
from takeover.vocabulary import (
    DEFAULT_AGENT,
    DEFAULT_COMMAND_BACKEND,
    DEFAULT_PROTOCOL,
    ActionProtocol,
    ExitStatus,
    RunKind,
)

FORMAT = "takeover"
FORMAT_VERSION = "takeover-run-1"
#: Field names of earlier versions of ``run.json``: earlier name -> name (``backend`` named the command
#: backend before grading backends existed beside it).
EARLIER_FIELD_NAMES: dict[str, str] = {"backend": "command_backend"}
#: Field names of earlier versions of ``run.json``'s ``limits``: earlier name -> name (before they followed
#: mini-swe-agent's), read so that such run folders still show and import.
EARLIER_LIMIT_NAMES: dict[str, str] = {
    "steps": "step_limit",
    "wall_seconds": "wall_time_limit_seconds",
    "command_seconds": "command_timeout",
    "prompt_tokens": "prompt_token_limit",
    "cost": "cost_limit",
    "format_errors": "max_consecutive_format_errors",
}
#: Where commands saw the workspace in records written before ``command_root`` existed, by command
#: backend: the docker backend mounts it at ``/testbed``; any other ran commands in the workspace itself.
_EARLIER_COMMAND_ROOTS = {"docker": "/testbed"}
_EVENT_KEYS = {"index", "kind", "source", "type", "snapshot", "llm_call", "format_error"}


class RunAccounting(BaseModel):
    """Exact counts of one run (docs/protocol.md sections 1 and 8).

    Attributes:
        agent_events: action + observation events in ``events.jsonl`` (same definition as
            :attr:`takeover.trajectories.events.Trajectory.agent_events`).
        actions, observations: the two halves of ``agent_events``.
        llm_calls: model calls that returned a response (format-error turns, and a reply with reasoning
            only, which ends the run with ``model_error``, included).
        failed_calls: model calls that ended in an endpoint error (after retries); they have no usage.
        format_errors: responses rejected by the action parser.
        prompt_tokens: cumulative prompt tokens = sum of ``usage.prompt_tokens`` over every call.
        completion_tokens, cached_tokens, reasoning_tokens: sums over every call (``cached_tokens`` and
            ``reasoning_tokens`` are ``None`` when no call reported them).
        usage: ``reported`` when every call carried usage, ``estimated`` when a local tokenizer counted
            what a call left out or reported as 0 (see :func:`takeover.llm.complete_usage`), ``unavailable``
            when a call has no usage at all and nothing could stand in (an agent of the ``command`` runtime
            whose own record keeps none): the token sums are then unknown, shown as ``n/a``, never as 0.
        estimated_calls: calls whose usage holds an estimated count.
        initial_prompt_chars: characters of the system + first user message (the task or takeover prompt
            inside the agent's instance template).
        initial_prompt_tokens: prompt tokens of the first model call (the same messages, as the endpoint
            counted them; estimated when it reported none).
        cost: US dollars as litellm prices the model (0 when the model is not in its price table).
        wall_seconds: run time from the first model call to the end (seconds).
        model_seconds: time inside model calls, retries and backoff included (seconds).
        command_seconds: time inside environment commands (seconds).
        snapshot_seconds: time taking snapshots after commands, harness overhead (seconds).
        overhead_seconds: ``wall - model - command``: snapshots, bookkeeping, writing the run folder.
    """

    agent_events: int = 0
    actions: int = 0
    observations: int = 0
    llm_calls: int = 0
    failed_calls: int = 0
    format_errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    usage: Literal["reported", "estimated", "unavailable"] = "reported"
    estimated_calls: int = 0
    initial_prompt_chars: int = 0
    initial_prompt_tokens: int | None = None
    cost: float = 0.0
    wall_seconds: float = 0.0
    model_seconds: float = 0.0
    command_seconds: float = 0.0
    snapshot_seconds: float = 0.0
    overhead_seconds: float = 0.0


class TakeoverOrigin(BaseModel):
    """For takeover runs: the checkpoint the successor started from and the view it was given."""

    checkpoint_dir: str
    instance_id: str
    point_type: str
    event_index: int
    view: str
    patch_sha256: str
    method: str


class RunRecord(BaseModel):
    """``run.json``: everything known about one agent run.

    Attributes:
        run_id: the run folder's name.
        kind: ``predecessor`` (from ``base_commit`` with the task prompt) or ``takeover`` (from a checkpoint
            with a view's takeover prompt).
        instance_id, repo, base_commit: the source task.
        agent: the agent runtime that ran it (``takeover.agents.RUNTIMES``; :data:`DEFAULT_AGENT` in
            records of earlier versions).
        protocol: ``text`` (one bash block per response; the paper's protocol) or ``tools`` (native calls).
        command_backend: where the agent's commands ran (``local`` or ``docker``; ``backend`` in records of
            earlier versions, read under this name); ``sandbox``: how they were confined (for ``local``
            the sentence of :func:`takeover._util.sandbox.status`).
        isolation: what the isolation probe found inside the run's confinement before the agent started
            (:class:`takeover.agents.isolation.Isolation`, docs/protocol.md section 8.6); ``None`` for a
            run made before the probe existed, which the report marks "not verified".
        workspace: the run's repository; its ``.git`` keeps every snapshot tree (refs
            ``refs/takeover/snapshots/<tree id>``, one per distinct tree), so checkpoints can be read back
            after the run.
        command_root: where the agent's commands and prompt see the workspace: ``/testbed`` (docker, or
            bubblewrap mounting the workspace there), else the host path of ``workspace`` (no sandbox:
            the prompt then names the host folder, so prompt sizes depend on it; ``path_note`` says so).
        path_note: why the prompt names a host path, when it does.
        inputs_key: hash of what determines the run (task, checkpoint, view, prompt, model settings,
            limits, protocol, command backend, agent runtime); a finished run is reused only for the same key.
        inputs: the readable parts of ``inputs_key`` (for the refusal message).
        setup_seconds: time to prepare the run before the agent starts: checkout, task environment (seconds).
        environment: the task environment the commands used (its description, or why there is none).
        model: :meth:`takeover.llm.ModelSettings.public` (no secrets); in records of earlier versions the
            model's name is under ``name``, read as ``model``.
        limits, accounting, exit_status: see :class:`~takeover.limits.RunLimits`, :class:`RunAccounting`,
            :class:`~takeover.vocabulary.ExitStatus`.
        exit_detail: the error message for ``model_error``/``environment_error``, redacted.
        submission: what the agent submitted (mini-swe-agent's ``submission``; the runtime's own
            equivalent), redacted.
        final_snapshot: tree id of the workspace at the end; ``patch.diff`` is its diff against
            ``starting_state``.
        starting_state: tree id of the run's starting state in ``workspace``: ``base_commit`` plus the edits
            the task environment's setup made there (docs/protocol.md section 5.2), committed on top of
            ``base_commit`` as ``HEAD``; ``None`` in records of earlier versions, whose ``patch.diff`` is
            against ``base_commit`` and may hold those edits.
        environment_files: the files the environment's setup changed (sorted).
        snapshots: ``recorded`` (every event carries the snapshot taken after it).
        origin: for takeover runs, the checkpoint and view.
        versions: :func:`takeover._util.versions.package_versions` when the run started.
        started_at, ended_at: UTC times (ISO 8601, seconds).
        finished: false while running or after a crash.
    """

    run_id: str
    kind: RunKind
    instance_id: str
    repo: str
    base_commit: str
    agent: str = DEFAULT_AGENT
    protocol: ActionProtocol = DEFAULT_PROTOCOL
    command_backend: str = DEFAULT_COMMAND_BACKEND
    sandbox: str = ""
    isolation: dict[str, Any] | None = None
    workspace: str
    command_root: str | None = None
    path_note: str | None = None
    inputs_key: str | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)
    setup_seconds: float | None = None
    environment: dict[str, Any] = Field(default_factory=dict)
    model: dict[str, Any]
    limits: RunLimits
    accounting: RunAccounting = Field(default_factory=RunAccounting)
    exit_status: ExitStatus | None = None
    exit_detail: str | None = None
    submission: str | None = None
    final_snapshot: str | None = None
    starting_state: str | None = None
    environment_files: list[str] = Field(default_factory=list)
    snapshots: Literal["recorded", "unavailable"] = "recorded"
    origin: TakeoverOrigin | None = None
    versions: dict[str, str] = Field(default_factory=dict)
    started_at: str
    ended_at: str | None = None
    finished: bool = False

    @model_validator(mode="before")
    @classmethod
    def _earlier_names(cls, data: Any) -> Any:
        data = with_current_names(data, EARLIER_FIELD_NAMES)
        if isinstance(data, dict) and isinstance(data.get("limits"), dict):
            data = {**data, "limits": with_current_names(data["limits"], EARLIER_LIMIT_NAMES)}
        return data

    @field_validator("model")
    @classmethod
    def _earlier_model_name(cls, value: dict[str, Any]) -> dict[str, Any]:
        # ModelSettings.name became ModelSettings.model: records of earlier versions keep the old key.
        if "name" in value and "model" not in value:
            value = {("model" if k == "name" else k): v for k, v in value.items()}
        return value


def _jsonl(path: Path, model: type[BaseModel]) -> list[Any]:
    if not path.exists():
        return []
    rows = []
    for lineno, data in iter_jsonl(path):
        try:
            rows.append(model.model_validate(data))
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err.get("loc", ())) or None
            raise InputError(path, err["msg"], record=f"line {lineno}", field=field) from None
    return rows


def load_record(run_dir: Path | str) -> RunRecord:
    """The :class:`RunRecord` of a run folder (a record of an earlier version, with earlier names of the
    limits, is read too).

    Raises:
        InputError: ``run.json`` is missing or is not a run record.
    """
    path = Path(run_dir) / "run.json"
    if not path.is_file():
        raise InputError(path, "missing: not a takeover run directory")
    try:
        return RunRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(path, f"not a run record ({str(exc).splitlines()[0]})") from None


def read_run(run_dir: Path | str) -> Trajectory:
    """The :class:`Trajectory` of a run folder (also of a crashed run: whatever was flushed).

    Raises:
        InputError: ``run.json``, ``events.jsonl`` or ``calls.jsonl`` is damaged (names file, line, field).
    """
    run_dir = Path(run_dir)
    record = load_record(run_dir)
    events = _jsonl(run_dir / "events.jsonl", Event)
    calls = _jsonl(run_dir / "calls.jsonl", LLMCall)
    for i, ev in enumerate(events):
        if ev.index != i:
            raise InputError(
                run_dir / "events.jsonl",
                f"event index {ev.index} where {i} was expected",
                record=f"line {i + 1}",
                field="index",
            )
    patch = run_dir / "patch.diff"
    prompt = run_dir / "prompt.md"
    return Trajectory(
        format=FORMAT,
        format_version=FORMAT_VERSION,
        source_path=str(run_dir / "events.jsonl"),
        instance_id=record.instance_id,
        model=record.model.get("model"),
        exit_status=record.exit_status.value if record.exit_status else None,
        task_prompt=prompt.read_text(encoding="utf-8") if prompt.exists() else None,
        final_patch=patch.read_bytes().decode("utf-8", "surrogateescape") if patch.exists() else None,
        working_dir=record.command_root or _EARLIER_COMMAND_ROOTS.get(record.command_backend, record.workspace),
        events=events,
        llm_calls=calls,
        metadata={
            "run_dir": str(run_dir),
            "snapshot_repo": record.workspace,
            "starting_state": record.starting_state,
            "repo": record.repo,
            "base_commit": record.base_commit,
            "kind": record.kind,
            "usage": record.accounting.usage,
            "finished": record.finished,
            "accounting": record.accounting.model_dump(mode="json"),
            "origin": record.origin.model_dump(mode="json") if record.origin else None,
        },
    )


def _detect_dir(source: Source) -> bool:
    run_json = source.path / "run.json"
    if not (run_json.is_file() and (source.path / "events.jsonl").exists()):
        return False
    try:
        data = json.loads(run_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and {"run_id", "kind", "accounting", "limits"} <= set(data)


def _detect_events(source: Source) -> bool:
    try:
        first = source.first()
    except InputError:
        return False
    return (
        isinstance(first, dict) and _EVENT_KEYS <= set(first) and (source.path.parent / "run.json").is_file()
    )


READERS = [
    Reader(
        name="takeover",
        detect=_detect_events,
        read=lambda source: [read_run(source.path.parent)],
        priority=5,
        description="events.jsonl of a takeover agent run (run.json beside it)",
    ),
    Reader(
        name="takeover-dir",
        detect=_detect_dir,
        read=lambda source: [read_run(source.path)],
        priority=5,
        directories=True,
        description="a takeover agent run directory (run.json + events.jsonl)",
    ),
]
