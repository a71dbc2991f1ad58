"""The agent runtimes by name: ``--agent``, ``RunSpec.agent``, the experiment file's ``agent`` keys.

A new runtime is a folder of its own under ``takeover/agents/`` whose class follows
:class:`takeover.agents.runtime.AgentRuntime`, and one line in :data:`RUNTIMES` (with its import).
"""

from __future__ import annotations

from takeover._util.registries import Registry
from takeover.agents.command.command_runtime import CommandRuntime
from takeover.agents.mini_swe_agent.mswea_runtime import MiniSweAgentRuntime
from takeover.agents.openhands.oh_runtime import OpenHandsRuntime
from takeover.agents.runtime import AgentRuntime
from takeover.trajectories.takeover_run import DEFAULT_AGENT

#: Every agent runtime, by the name a user gives it (the first is the default, :data:`DEFAULT_AGENT`).
RUNTIMES: Registry[AgentRuntime] = Registry("agent runtime", {
    DEFAULT_AGENT: MiniSweAgentRuntime(),
    "openhands": OpenHandsRuntime(),
    "command": CommandRuntime(),
}, where="agent")
