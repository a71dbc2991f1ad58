"""The agent runtimes by name: ``--agent``, an agent choice's ``runtime``, the experiment file's ``agent``.

A new runtime is a folder of its own under ``takeover/agents/`` whose class follows
:class:`takeover.agents.runtime.AgentRuntime` (its own options are its ``Options`` model), and one line in
:data:`RUNTIMES` (with its import). A plug-in registers itself at run time with ``RUNTIMES.add(name, runtime)``.
"""

from __future__ import annotations

from pydantic import ValidationError

from takeover._util.registries import Registry
from takeover.agents.agent_choice import AgentChoice
from takeover.agents.command.command_runtime import CommandRuntime
from takeover.agents.command_backends import COMMAND_BACKENDS
from takeover.agents.mini_swe_agent.mswea_runtime import MiniSweAgentRuntime
from takeover.agents.openhands.oh_runtime import OpenHandsRuntime
from takeover.agents.runtime import AgentRuntime
from takeover.errors import InputError
from takeover.limits import RunLimits
from takeover.trajectories.takeover_run import DEFAULT_AGENT

#: Every agent runtime, by the name a user gives it (the first is the default, :data:`DEFAULT_AGENT`).
RUNTIMES: Registry[AgentRuntime] = Registry("agent runtime", {
    DEFAULT_AGENT: MiniSweAgentRuntime(),
    "openhands": OpenHandsRuntime(),
    "command": CommandRuntime(),
}, where="agent")


def checked_choice(choice: AgentChoice, limits: RunLimits | None = None) -> AgentChoice:
    """``choice`` once its names are registered and its runtime accepts it: the options validated by the
    runtime's own ``Options`` model (and written back in its form, defaults left out), then, given
    ``limits``, the limits, protocol and command backend by
    :meth:`~takeover.agents.runtime.AgentRuntime.check`.

    Raises:
        InputError: an unknown runtime (``field``: ``runtime``) or command backend (``command_backend``),
            options the runtime refuses (``options.NAME``), or settings it cannot honour (the limit,
            ``protocol`` or ``command_backend``).
    """
    for name, registry in (("runtime", RUNTIMES), ("command_backend", COMMAND_BACKENDS)):
        if getattr(choice, name) not in registry:
            raise InputError("agent", f"unknown {registry.kind} {getattr(choice, name)!r}: use {registry.choices()}",
                             field=name)
    runtime = RUNTIMES[choice.runtime]
    try:
        options = runtime.Options.model_validate(choice.options)
    except ValidationError as exc:
        errors = exc.errors()
        error = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])  # a typo before its result
        name = ".".join(str(part) for part in error["loc"]) or "options"
        reason = "unknown option" if error["type"] == "extra_forbidden" else error["msg"].removeprefix("Value error, ")
        raise InputError(f"agent {choice.runtime}", f"{reason} (its options: "
                         f"{', '.join(runtime.Options.model_fields) or 'none'})", field=f"options.{name}") from None
    choice = choice.model_copy(update={"options": options.model_dump(mode="json", exclude_defaults=True)})
    if limits is not None:
        runtime.check(limits, choice)
    return choice
