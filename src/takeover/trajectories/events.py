"""The normalized event model of a run (docs/protocol.md section 1: event, trajectory, agent events).

Every reader turns its native format into a :class:`Trajectory`; every later stage (points, views,
metrics) reads only this model. An *event* is one action (LLM output) or one observation (tool or
terminal result). *Agent events* = number of action + observation events.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from takeover._util.patches import patch_files
from takeover.llm.usage import CallAttempt, Usage

EventKind = Literal["action", "observation"]
ActionType = Literal["command", "file_edit", "file_view", "message", "finish"]
EventSource = Literal["agent", "environment", "user"]


class LLMCall(BaseModel):
    """One call to the model. ``usage`` is ``None`` when the format records no usage at all.

    ``format_error`` marks a call whose output the agent rejected (no or several commands); such turns
    still count in cumulative prompt tokens (docs/protocol.md section 8). ``attempts`` lists the HTTP
    attempts of the call (status, seconds, the wait after each, usage) where the format records them
    (takeover's own runs).
    """

    index: int
    usage: Usage | None = None
    model: str | None = None
    format_error: bool = False
    seconds: float | None = None
    attempts: list[CallAttempt] | None = None


class Event(BaseModel):
    """One action or observation.

    Attributes:
        index: 0-based position in the trajectory's ``events``.
        kind: ``"action"`` or ``"observation"``.
        source: who produced it: ``agent`` (actions), ``environment`` (tool/terminal results) or ``user``
            (the harness's messages that answer an action, e.g. a format-error reminder).
        type: for actions, one of ``command``, ``file_edit``, ``file_view``, ``message``, ``finish``;
            for observations, the type of the action it answers (or ``message``).
        text: the human-readable text: the model's thought + command for actions, the output for observations.
        thought: the model's reasoning text, when the format separates it.
        command: shell command (``type == "command"``).
        path: file path for ``file_edit``/``file_view``, as recorded (may be absolute in the agent's sandbox).
        edit: for ``file_edit``: ``create``, ``str_replace``, ``insert``, ``undo_edit``, ``write`` or the
            native tool's verb.
        old_text / new_text / file_text / insert_line: editor arguments where the format has them.
        view_range: ``[start, end]`` lines for ``file_view``, where given; for a line-range edit (SWE-agent
            ``edit N:M``), the replaced lines ``[N, M]``.
        cwd: working directory of a command, where recorded.
        llm_call: index into :attr:`Trajectory.llm_calls` of the call that produced this action.
        cause: for observations, the index of the action event it answers.
        exit_code: for command observations, the exit code where known.
        format_error: the action was rejected by the agent's parser (no command run).
        process_input: for ``command`` actions: the text is input sent to a process that is still running
            (OpenHands ``is_input``, its control keys such as ``C-c``), not a shell command; a replay never
            runs it (docs/protocol.md section 5).
        ipython: for ``command`` actions: ``command`` is a cell of Python code for an IPython kernel
            (OpenHands ``run_ipython``/``execute_ipython_cell``), never a shell command.
        not_applied: for actions: the recording tool did not carry the action out (a command the user
            rejected or that the tool refused to start, a command after the submission that was never run);
            a file edit whose tool call failed also has ``edit`` ``not_applied``. A replay does nothing for it.
        timed_out: for observations: the recorded run reports that the command hit its time limit (it was
            cancelled, or was still running when the tool stopped waiting for it).
        state_diff: cumulative ``git diff`` against ``base_commit`` after this event, when the trajectory
            stores one (SWE-agent ``state.diff``) -- docs/protocol.md section 5 source (b).
        snapshot: git tree id of the working tree after this event, when recorded by our own runner --
            docs/protocol.md section 5 source (a).
    """

    model_config = ConfigDict(extra="forbid")

    index: int
    kind: EventKind
    source: EventSource
    type: ActionType
    text: str = ""
    thought: str | None = None
    command: str | None = None
    path: str | None = None
    edit: str | None = None
    old_text: str | None = None
    new_text: str | None = None
    file_text: str | None = None
    insert_line: int | None = None
    view_range: list[int] | None = None
    cwd: str | None = None
    llm_call: int | None = None
    cause: int | None = None
    exit_code: int | None = None
    format_error: bool = False
    process_input: bool = False
    ipython: bool = False
    not_applied: bool = False
    timed_out: bool = False
    state_diff: str | None = None
    snapshot: str | None = None


def answers_by_action(events: Sequence[Event]) -> dict[int, Event]:
    """``{action index: the first observation whose cause names it}`` over ``events`` (only those given: pass
    the events up to a cut to read nothing after it). An observation without a cause answers nothing here."""
    out: dict[int, Event] = {}
    for ev in events:
        if ev.kind == "observation" and ev.cause is not None:
            out.setdefault(ev.cause, ev)
    return out


class Trajectory(BaseModel):
    """The ordered events of one run, its LLM calls and what it submitted.

    Attributes:
        format: reader name: ``mini-swe-agent``, ``openhands-v0``, ``openhands-v0-messages``,
            ``openhands-v1``, ``swe-agent`` or ``takeover`` (our own runner).
        format_version: the native version tag where the file has one (``mini-swe-agent-1.1``, ``0.x``/``1.x``).
        source_path: file it was read from; ``record``: where in that file (``line 3``, ``index 0``).
        instance_id: the SWE-bench instance (native suffixes such as SWE-Gym's ``_1`` are kept in
            ``metadata["native_instance_id"]`` and removed here).
        task_prompt: the task text the agent was given (the problem statement, possibly wrapped).
        final_patch: the run's own submitted diff, when recorded.
        working_dir: the repository root inside the agent's environment (``/testbed``, ``/workspace/x``).
    """

    format: str
    format_version: str | None = None
    source_path: str | None = None
    record: str | None = None
    instance_id: str | None = None
    model: str | None = None
    exit_status: str | None = None
    task_prompt: str | None = None
    final_patch: str | None = None
    working_dir: str | None = None
    events: list[Event] = Field(default_factory=list)
    llm_calls: list[LLMCall] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def actions(self) -> int:
        return sum(1 for e in self.events if e.kind == "action")

    @property
    def observations(self) -> int:
        return sum(1 for e in self.events if e.kind == "observation")

    @property
    def agent_events(self) -> int:
        """Number of action + observation records (docs/protocol.md section 1)."""
        return len(self.events)

    @property
    def usage_reported(self) -> bool:
        """Whether any model call records token usage (reported or estimated). When none does, the token sums
        below are 0 but unknown: show them as n/a (docs/protocol.md section 1)."""
        return any(c.usage is not None for c in self.llm_calls)

    @property
    def prompt_tokens(self) -> int:
        """Cumulative prompt tokens: sum of ``usage.prompt_tokens`` over every call (section 1); 0 also when no
        call records usage (see :attr:`usage_reported`)."""
        return sum(c.usage.prompt_tokens for c in self.llm_calls if c.usage)

    @property
    def completion_tokens(self) -> int:
        return sum(c.usage.completion_tokens for c in self.llm_calls if c.usage)

    @property
    def cached_tokens(self) -> int | None:
        """Sum of the calls' cached prompt tokens; ``None`` when no call reports them (so for the two below)."""
        vals = [c.usage.cached_tokens for c in self.llm_calls if c.usage and c.usage.cached_tokens is not None]
        return sum(vals) if vals else None

    @property
    def cache_creation_tokens(self) -> int | None:
        vals = [c.usage.cache_creation_tokens for c in self.llm_calls
                if c.usage and c.usage.cache_creation_tokens is not None]
        return sum(vals) if vals else None

    @property
    def reasoning_tokens(self) -> int | None:
        vals = [c.usage.reasoning_tokens for c in self.llm_calls if c.usage and c.usage.reasoning_tokens is not None]
        return sum(vals) if vals else None

    @property
    def usage_estimated(self) -> bool:
        return any(c.usage and c.usage.estimated for c in self.llm_calls)

    @property
    def final_patch_files(self) -> list[str]:
        """Paths touched by :attr:`final_patch`, in patch order (empty when there is no patch)."""
        return patch_files(self.final_patch or "")
