"""Records of one agent run: its limits, exit status and exact accounting (docs/protocol.md section 8).

``run.json`` in a run directory is a :class:`RunRecord`. It is rewritten atomically after every step, so
a reader always finds a complete record: ``finished`` is false while the run goes on (or after a crash),
and ``exit_status`` is set once the run ended.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

Protocol = Literal["text", "tools"]
RunKind = Literal["predecessor", "takeover"]


class ExitStatus(StrEnum):
    """Why a run ended. Each limit has its own status so that no two causes are ever merged."""

    submitted = "submitted"
    """The agent ran the submission command (mini-swe-agent ``Submitted``)."""
    step_limit = "step_limit"
    """``RunLimits.steps`` model calls were made (format-error turns count as steps)."""
    time_limit = "time_limit"
    """``RunLimits.wall_seconds`` elapsed (checked before every model call)."""
    token_limit = "token_limit"
    """Cumulative prompt tokens reached ``RunLimits.prompt_tokens``."""
    cost_limit = "cost_limit"
    """Cumulative cost (US dollars, litellm's price table) reached ``RunLimits.cost``."""
    format_errors = "format_errors"
    """``RunLimits.format_errors`` responses in a row had no (or more than one) action."""
    model_error = "model_error"
    """The endpoint failed after its retries (HTTP errors, timeouts, refused connections)."""
    environment_error = "environment_error"
    """The workspace, sandbox or container failed (not a failing command: those are observations)."""


class RunLimits(BaseModel):
    """Limits of a run, the same for every view (docs/protocol.md section 8; paper: 500 steps, 4 hours).

    Attributes:
        steps: maximum model calls (mini-swe-agent's step = one model call).
        wall_seconds: wall-clock limit of the whole run (seconds); checked before every model call, and a
            command never gets more time than what remains.
        command_seconds: time limit of one command (seconds); a command that exceeds it is killed and
            its observation says so (the run goes on).
        prompt_tokens: optional cap on cumulative prompt tokens (tokens).
        cost: optional cap on cumulative cost (US dollars, as litellm prices the model).
        format_errors: consecutive format errors that end the run (mini-swe-agent's default: 3).
    """

    steps: int = Field(500, ge=1)
    wall_seconds: float = Field(4 * 3600.0, gt=0)
    command_seconds: float = Field(600.0, gt=0)
    prompt_tokens: int | None = Field(None, ge=1)
    cost: float | None = Field(None, gt=0)
    format_errors: int = Field(3, ge=1)


class RunAccounting(BaseModel):
    """Exact counts of one run (docs/protocol.md sections 1 and 8).

    Attributes:
        agent_events: action + observation events in ``events.jsonl`` (same definition as
            :attr:`takeover.trajectories.events.Trajectory.agent_events`).
        actions, observations: the two halves of ``agent_events``.
        llm_calls: model calls that returned a response (format-error turns included).
        failed_calls: model calls that ended in an endpoint error (after retries); they have no usage.
        format_errors: responses rejected by the action parser.
        prompt_tokens: cumulative prompt tokens = sum of ``usage.prompt_tokens`` over every call.
        completion_tokens, cached_tokens: sums over every call (``cached_tokens`` ``None`` when no call
            reported it).
        usage: ``reported`` when every call carried usage, else ``estimated`` (a local tokenizer counted
            the calls without usage; see :func:`takeover.agents.model.estimate_usage`).
        initial_prompt_chars: characters of the system + first user message (the task or takeover prompt
            inside the agent's instance template).
        initial_prompt_tokens: prompt tokens of the first model call (the same messages, as the endpoint
            counted them; estimated when it reported none).
        cost: US dollars as litellm prices the model (0 when the model is not in its price table).
        wall_seconds: run time from the first model call to the end.
        model_seconds: time inside model calls (retries and backoff included).
        command_seconds: time inside environment commands.
        snapshot_seconds: time taking snapshots after commands (harness overhead).
        overhead_seconds: ``wall - model - command``: snapshots, bookkeeping, writing the run directory.
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
    usage: Literal["reported", "estimated"] = "reported"
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
        run_id: the run directory's name.
        kind: ``predecessor`` (from ``base_commit`` with the task prompt) or ``takeover`` (from a checkpoint
            with a view's takeover prompt).
        instance_id, repo, base_commit: the source task.
        protocol: ``text`` (one bash block per response; the paper's protocol) or ``tools`` (native calls).
        backend: ``local`` or ``docker``; ``sandbox``: the sentence of :func:`takeover.sandbox.status`.
        workspace: the run's repository; its ``.git`` keeps every snapshot tree (refs
            ``refs/takeover/snapshots/<tree id>``, one per distinct tree), so checkpoints can be read back after the run.
        command_root: where the agent's commands and prompt see the workspace: ``/testbed`` (docker, or
            bubblewrap mounting the workspace there), else the host path of ``workspace`` (no sandbox:
            the prompt then names the host folder, so prompt sizes depend on it; ``path_note`` says so).
        path_note: why the prompt names a host path, when it does.
        inputs_key: hash of what determines the run (task, checkpoint, view, prompt, model settings,
            limits, protocol, backend); a finished run is reused only for the same key.
        inputs: the readable parts of ``inputs_key`` (for the refusal message).
        setup_seconds: time to prepare the run before the agent starts (checkout, task environment).
        model: :meth:`takeover.models.ModelSettings.public` (no secrets).
        limits, accounting, exit_status: see :class:`RunLimits`, :class:`RunAccounting`, :class:`ExitStatus`.
        exit_detail: the error message for ``model_error``/``environment_error``, redacted.
        submission: what the agent submitted (mini-swe-agent's ``submission``), redacted.
        final_snapshot: tree id of the workspace at the end; ``patch.diff`` is its diff against
            ``base_commit``.
        origin: for takeover runs, the checkpoint and view.
        versions: package versions (takeover, mini-swe-agent, litellm, python).
        finished: false while running or after a crash.
    """

    run_id: str
    kind: RunKind
    instance_id: str
    repo: str
    base_commit: str
    protocol: Protocol = "text"
    backend: str = "local"
    sandbox: str = ""
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
    snapshots: Literal["recorded", "unavailable"] = "recorded"
    origin: TakeoverOrigin | None = None
    versions: dict[str, str] = Field(default_factory=dict)
    started_at: str
    ended_at: str | None = None
    finished: bool = False
