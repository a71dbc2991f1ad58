"""Predecessor and successor runs of an agent runtime (docs/protocol.md sections 5 and 8).

Importing this package loads no runtime: the entry points are in :mod:`takeover.agents.runs` (importing it
imports every registered runtime, mini-swe-agent and litellm among them, quietly and offline)::

    from takeover.agents.runs import run_predecessor, run_takeover
    from takeover.agents import AgentChoice, RunLimits
    record = run_predecessor(task, ModelSettings(model="qwen", base_url="http://127.0.0.1:8080/v1"), "runs/p1")
    record = run_takeover("ckpt/", "raw_trace", settings, "runs/t1", limits=RunLimits(step_limit=500),
                          agent=AgentChoice(runtime="command", options={"agent_command": "my-agent < {prompt_file}"}))

The agent choice, :class:`AgentChoice` (which runtime runs, where its commands run, the action protocol and
their own options: one record from the CLI and the experiment file to the units), is a settings record at the
bottom of the package tree (:mod:`takeover.agent_choice`, beside :mod:`takeover.limits`), re-exported here.

Modules, the neutral ones first (none of them loads a runtime):

- ``command_backend.py``: the command-backend seam, :class:`~takeover.agents.command_backend.CommandBackend`
  (where an agent's commands run); a failure of the environment itself is
  :class:`~takeover.errors.EnvironmentFailure`.
- ``runtime.py``: the runtime seam, :class:`AgentRuntime` (what a runtime does), :class:`AgentRun` (what it
  is given) and :class:`RuntimeOutcome` (what it reports).
- ``recorder.py``: :class:`~takeover.agents.recorder.RunRecorder`, the events, calls, snapshots and
  accounting of a run, shared by every runtime.
- ``run_folder.py``: :class:`RunSpec` (what determines a run), its inputs key, resuming a run folder.
- ``local_commands.py``, ``docker_commands.py``: the ``local`` (sandboxed on this host) and ``docker`` (the
  task's SWE-bench image) command backends; ``command_backends.py``: :data:`COMMAND_BACKENDS` by name.
- ``mini_swe_agent/``, ``openhands/``, ``command/``: the runtimes, each in its own folder;
  ``runtimes.py``: :data:`RUNTIMES` by name (``--agent``).
- ``runs.py``: the entry points :func:`run_predecessor`, :func:`run_takeover` and :func:`run_agent` (the
  part of every run that is no runtime's own: run folder, starting state, final snapshot and patch).

The run folder's format and its records (:class:`RunRecord`, :class:`RunAccounting`,
:class:`TakeoverOrigin`, :func:`read_run`) are :mod:`takeover.trajectories.takeover_run`; the limits are
:class:`takeover.limits.RunLimits`; exit statuses :class:`takeover.vocabulary.ExitStatus`.
"""

from takeover.agent_choice import AgentChoice
from takeover.agents.run_folder import RunSpec
from takeover.agents.runtime import AgentRun, AgentRuntime, RuntimeOutcome
from takeover.limits import RunLimits
from takeover.trajectories.takeover_run import (
    RunAccounting,
    RunRecord,
    TakeoverOrigin,
    read_run,
)
from takeover.vocabulary import DEFAULT_AGENT, DEFAULT_COMMAND_BACKEND, ExitStatus

__all__ = [
    "DEFAULT_AGENT",
    "DEFAULT_COMMAND_BACKEND",
    "AgentChoice",
    "AgentRun",
    "AgentRuntime",
    "ExitStatus",
    "RunAccounting",
    "RunLimits",
    "RunRecord",
    "RunSpec",
    "RuntimeOutcome",
    "TakeoverOrigin",
    "read_run",
]
