"""The agent-runtime seam: what every agent runtime does, and what it is given (docs/protocol.md section 8).

A runtime runs one agent (mini-swe-agent, OpenHands, a user's own command...) on a prepared run. Runtimes
are registered by name in :data:`takeover.agents.runtimes.RUNTIMES`, and everything that is not the
runtime's own stays in :func:`takeover.agents.runs.run_agent`: the run folder, ``run.json`` and its inputs
key, the workspace and its starting state, the task's environment, the initial and final snapshots, the
snapshot refs and ``patch.diff``. A runtime gets an :class:`AgentRun` and returns a
:class:`RuntimeOutcome`; what it records goes through ``run.recorder``
(:class:`~takeover.agents.recorder.RunRecorder`), so that :mod:`takeover.trajectories.takeover_run`
reads the folder back as for any other runtime.

What a runtime must do (docs/protocol.md section 8.4):

- **refuse before the run** (:meth:`AgentRuntime.check`) a limit it cannot honour, an action protocol it
  does not speak or a command backend it cannot use, with an :class:`~takeover.errors.InputError` naming
  the limit (``step_limit``...). A limit it honours only because we enforce it (OpenHands has no wall
  time of its own: the runtime stops it) is honoured;
- start the run's clock (:meth:`AgentRun.start_clock`) just before the agent's first model call, so that
  wall time and the wall-time limit count from there;
- record **every model call** with its exact usage as the endpoint reported it
  (:meth:`~takeover.agents.recorder.RunRecorder.add_call`; a call that failed for good with
  :meth:`~takeover.agents.recorder.RunRecorder.add_failed_call`);
- record **every event** (:meth:`~takeover.agents.recorder.RunRecorder.add_event`) in order: actions with
  the index of the call that produced them (``llm_call``), observations with the action they answer
  (``cause``), format-error turns as an action plus the reply that answered it (docs/protocol.md section 1);
- write them to the run folder (:meth:`~takeover.agents.recorder.RunRecorder.flush`) before returning;
- return the exit status (docs/protocol.md section 8.2) and the submission, or raise: a runtime that is
  interrupted or fails in an unexpected way may raise, and the run folder is finalised all the same
  (``finished`` stays false, and the exception goes on).

What is best effort:

- **a snapshot after every event.** A runtime whose loop runs in this process takes it with
  :meth:`~takeover.agents.recorder.RunRecorder.take_snapshot` right after each action's command, and
  gives it to the action and its observation (mini-swe-agent does). A runtime that runs elsewhere (a
  subprocess, another Python) and writes its events after the fact from its own record gives each event
  the tree that was recorded for it where it can be known (for example taken by a hook of its own loop in
  the same workspace, with :func:`takeover.repository_states.snapshots.take_snapshot`'s rules), and
  otherwise leaves **every** event's snapshot empty and sets ``record.snapshots = "unavailable"``: the
  run's states then come from a replay of its events, as for an imported run. Never a snapshot on some
  events only: an event without one is read as the state of the event before it;
- the runtime's own record (``recorder.write_native``), its package versions (``record.versions``) and
  where its environment came from (``record.environment``).

Nothing here assumes that the runtime's loop runs in this process, or records events as they happen.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel

from takeover._util.registries import NoOptions
from takeover.agent_choice import AgentChoice
from takeover.agents.command_backend import CommandBackend, CommandSession
from takeover.agents.recorder import RunRecorder
from takeover.agents.run_folder import RunSpec
from takeover.limits import RunLimits
from takeover.repository_states.starting_state import StartingState
from takeover.vocabulary import ExitStatus

__all__ = ["AgentChoice", "AgentRun", "AgentRuntime", "NoOptions", "RuntimeOutcome"]


@dataclass
class AgentRun:
    """A prepared run, as a runtime is given it.

    Attributes:
        spec: what was asked for: the prompt (``spec.prompt``, the first user message), the model settings
            (``spec.model``: :class:`takeover.llm.ModelSettings`), the limits (``spec.limits``:
            :class:`takeover.limits.RunLimits`), the agent choice (``spec.agent``: :class:`AgentChoice`,
            the runtime's own options in ``spec.agent.options``, the command backend's in
            ``spec.agent.command_backend_options``), the task.
        out_dir: the run folder (``run.json``, ``events.jsonl``, ``calls.jsonl``, ``prompt.md`` are written
            already; the runtime may add its own files, never replace these).
        workspace: host path of the repository: a git checkout whose ``HEAD`` is the starting state (the
            task's ``base_commit`` plus the environment's setup edits) and whose working tree holds the
            checkpoint patch for a takeover run.
        starting_state: that starting state (docs/protocol.md section 5.2); ``patch.diff`` will be the
            final state's diff against ``starting_state.tree``.
        commands: where the commands run (:data:`takeover.agents.command_backends.COMMAND_BACKENDS`).
        command_root: where the commands (and the prompt) see the workspace: ``/testbed``, or its host path
            without a sandbox.
        task_env: the variables of the task's prepared environment (its venv on ``PATH``), for a backend
            that :attr:`~takeover.agents.command_backend.CommandBackend.uses_task_environment`.
        readable: folders the sandboxed commands must still be able to read (git alternates, shared venv).
        tmp_dir: the run's private ``/tmp`` (removed when the run ends).
        recorder: where everything is recorded (``recorder.record`` is ``run.json``).
        setup_started: ``time.perf_counter()`` when the run's setup began (seconds).
    """

    spec: RunSpec
    out_dir: Path
    workspace: Path
    starting_state: StartingState
    commands: CommandBackend
    command_root: str
    task_env: dict[str, str]
    readable: list[Path]
    tmp_dir: Path
    recorder: RunRecorder
    setup_started: float
    started: bool = field(default=False, init=False)

    def start_clock(self) -> None:
        """Start the run's wall clock now (the agent is about to make its first model call) and record
        the setup time before it (``run.json``'s ``setup_seconds``). Later calls do nothing."""
        if self.started:
            return
        self.started = True
        self.recorder.t_start = time.perf_counter()
        self.recorder.record.setup_seconds = round(self.recorder.t_start - self.setup_started, 6)

    def seconds_left(self) -> float:
        """Wall time left before the wall-time limit (seconds; negative once it is reached)."""
        return self.spec.limits.wall_time_limit_seconds - self.recorder.elapsed()

    def command_sandbox(self, env: dict[str, str] | None = None) -> Any:
        """The mini-swe-agent environment that runs this run's commands in :attr:`commands` (``execute``
        returns ``{"output", "returncode", "exception_info"}``), for a runtime that runs commands itself.

        Args:
            env: the runtime's own variables for every command; the task environment's are added when the
                backend uses them.
        Raises:
            EnvironmentUnavailable: the backend cannot start (no Docker daemon).
        """
        session = CommandSession(
            workspace=self.workspace,
            tmp_dir=self.tmp_dir,
            env={**(env or {}), **(self.task_env if self.commands.uses_task_environment else {})},
            command_timeout=self.spec.limits.command_timeout,
            instance_id=self.spec.instance_id,
            readable=self.readable,
            lifetime=self.spec.limits.wall_time_limit_seconds,
        )
        return self.commands.environment(session, self.commands.Options.model_validate(
            self.spec.agent.command_backend_options))


@dataclass(frozen=True)
class RuntimeOutcome:
    """How a run ended, as its runtime reports it.

    Attributes:
        exit_status: one of docs/protocol.md section 8.2.
        submission: what the agent submitted (its own words: mini-swe-agent's ``submission``), or ``None``;
            the final patch is always the workspace's diff, never this text.
        exit_detail: the error behind ``model_error``/``environment_error`` when the recorder does not hold
            it yet (``record.exit_detail``); redacted before it is written.
    """

    exit_status: ExitStatus
    submission: str | None = None
    exit_detail: str | None = None


class AgentRuntime(Protocol):
    """One agent runtime (registered by name in :data:`takeover.agents.runtimes.RUNTIMES`); see the module
    docstring for what it must record and what is best effort.

    Attributes:
        Options: the runtime's own options, a pydantic model it declares and validates (an agent choice's
            ``options``: ``--agent-option NAME=VALUE``, the experiment file's ``agent.options``);
            :class:`NoOptions` for a runtime that has none.
    """

    Options: ClassVar[type[BaseModel]]

    def check(self, limits: RunLimits, choice: AgentChoice, commands: CommandBackend) -> None:
        """Refuse, before anything runs, settings this runtime cannot honour (``choice.options`` are already
        valid ``Options``; ``commands`` is the command backend ``choice`` names, asked what it does, e.g.
        ``commands.on_host``).

        Raises:
            InputError: a limit it cannot enforce (the error's ``field`` names it: ``step_limit``...), an
                action protocol it does not speak (``protocol``), or a command backend it cannot use
                (``command_backend``).
        """

    def run(self, run: AgentRun) -> RuntimeOutcome:
        """Run the agent on ``run`` and record it through ``run.recorder`` (events, calls, snapshots,
        written with ``flush``); return how it ended.

        Raises:
            EnvironmentUnavailable: the runtime or its command backend cannot start.
            BaseException: an interruption or a bug; the run folder is finalised, unfinished, first.
        """
