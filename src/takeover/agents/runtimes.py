"""The agent runtimes by name: ``--agent``, an agent choice's ``runtime``, the experiment file's ``agent``.

A new runtime is a folder of its own under ``takeover/agents/`` whose class follows
:class:`takeover.agents.runtime.AgentRuntime` (its own options are its ``Options`` model), and one line in
:data:`RUNTIMES` (with its import). A plug-in registers itself at run time with ``RUNTIMES.add(name, runtime)``.
"""

from __future__ import annotations

from takeover._util.registries import Registry, checked_options
from takeover.agent_choice import AgentChoice
from takeover.agents.command.command_runtime import CommandRuntime
from takeover.agents.command_backends import COMMAND_BACKENDS, host_command_backends
from takeover.agents.mini_swe_agent.mswea_runtime import MiniSweAgentRuntime
from takeover.agents.openhands.oh_runtime import OpenHandsRuntime
from takeover.agents.runtime import AgentRuntime
from takeover.errors import InputError
from takeover.limits import RunLimits
from takeover.vocabulary import DEFAULT_AGENT

#: Every agent runtime, by the name a user gives it (the first is the default, :data:`DEFAULT_AGENT`).
RUNTIMES: Registry[AgentRuntime] = Registry("agent runtime", {
    DEFAULT_AGENT: MiniSweAgentRuntime(),
    "openhands": OpenHandsRuntime(),
    "command": CommandRuntime(),
}, where="agent")


def checked_choice(choice: AgentChoice, limits: RunLimits | None = None) -> AgentChoice:
    """``choice`` once its names are registered and its runtime and command backend accept it: the runtime's
    options and the backend's validated by their own ``Options`` models (and written back in their form,
    defaults left out), then, given ``limits``, the limits, protocol and command backend by
    :meth:`~takeover.agents.runtime.AgentRuntime.check`.

    Raises:
        InputError: an unknown runtime (``field``: ``runtime``) or command backend (``command_backend``),
            options the runtime or the backend refuses (``options.NAME``, ``command_backend_options.NAME``),
            or settings the runtime cannot honour (the limit, ``protocol`` or ``command_backend``).
    """
    for name, registry in (("runtime", RUNTIMES), ("command_backend", COMMAND_BACKENDS)):
        if getattr(choice, name) not in registry:
            raise InputError("agent", f"unknown {registry.kind} {getattr(choice, name)!r}: use {registry.choices()}",
                             field=name)
    runtime, commands = RUNTIMES[choice.runtime], COMMAND_BACKENDS[choice.command_backend]
    choice = choice.model_copy(update={
        "options": checked_options(runtime.Options, choice.options, where=f"agent {choice.runtime}"),
        "command_backend_options": checked_options(commands.Options, choice.command_backend_options,
                                                   where=f"command backend {choice.command_backend}",
                                                   field="command_backend_options"),
    })
    if limits is not None:
        try:
            runtime.check(limits, choice, commands)
        except InputError as exc:
            if exc.field != "command_backend":
                raise
            raise InputError(exc.path, f"{exc.reason}: use command_backend {' or '.join(host_command_backends())}",
                             field=exc.field) from None
    return choice
