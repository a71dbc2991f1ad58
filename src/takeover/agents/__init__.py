"""Predecessor and successor runs of an agent runtime (docs/protocol.md sections 5 and 8).

Public API (importing it imports mini-swe-agent and litellm, quietly and offline: seconds, for litellm)::

    from takeover.agents import run_predecessor, run_takeover, RunLimits
    record = run_predecessor(task, ModelSettings(model="qwen", base_url="http://127.0.0.1:8080/v1"), "runs/p1")
    record = run_takeover("ckpt/", "raw_trace", settings, "runs/t1", limits=RunLimits(step_limit=500),
                          agent="mini-swe-agent", command_backend="local")

Modules:

- ``runs.py``: the entry points :func:`run_predecessor`, :func:`run_takeover` and :func:`run_agent` (the
  part of every run that is no runtime's own: run folder, starting state, final snapshot and patch).
- ``run_folder.py``: :class:`RunSpec` (what determines a run), its inputs key, resuming a run folder.
- ``runtime.py``: the seam, :class:`AgentRuntime` (what a runtime does), :class:`AgentRun` (what it is
  given) and :class:`RuntimeOutcome` (what it reports).
- ``runtimes.py``: :data:`RUNTIMES`, the agent runtimes by name (``--agent``).
- ``recorder.py``: :class:`~takeover.agents.recorder.RunRecorder`, the events, calls, snapshots and
  accounting of a run, shared by every runtime.
- ``command_sandbox.py``: where the agent's commands run, :data:`COMMAND_BACKENDS` by name
  (``--command-backend``: ``local`` sandboxed, ``docker``); ``docker_commands.py``: the ``docker`` one, in
  the task's SWE-bench image on the image's own repository.
- ``mini_swe_agent/``: the mini-swe-agent runtime (the default): its loop, model interface and messages.
- ``openhands/``: the OpenHands runtime (``--agent openhands``), in its own cached Python 3.12 venv.
- ``command/``: the user's own agent (``--agent command --agent-command TEMPLATE``).

The run folder's format and its records (:class:`RunRecord`, :class:`RunAccounting`,
:class:`TakeoverOrigin`, :func:`read_run`) are :mod:`takeover.trajectories.takeover_run`; the limits are
:class:`takeover.limits.RunLimits`; exit statuses :class:`takeover.vocabulary.ExitStatus`.
"""

from takeover.agents.command_sandbox import COMMAND_BACKENDS
from takeover.agents.run_folder import RunSpec
from takeover.agents.runs import run_agent, run_predecessor, run_takeover
from takeover.agents.runtime import AgentRun, AgentRuntime, RuntimeOutcome
from takeover.agents.runtimes import RUNTIMES
from takeover.limits import RunLimits
from takeover.trajectories.takeover_run import (
    DEFAULT_AGENT,
    DEFAULT_COMMAND_BACKEND,
    RunAccounting,
    RunRecord,
    TakeoverOrigin,
    read_run,
)
from takeover.vocabulary import ExitStatus

__all__ = [
    "COMMAND_BACKENDS",
    "DEFAULT_AGENT",
    "DEFAULT_COMMAND_BACKEND",
    "RUNTIMES",
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
    "run_agent",
    "run_predecessor",
    "run_takeover",
]
