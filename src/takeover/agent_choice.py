"""The agent choice: which agent runtime runs a run, where its commands run, how it states actions and the
runtime's and the command backend's own options (docs/protocol.md section 8.4), one record from the command
line to the unit files.

The same record is built once by ``takeover agent run`` (and ``resume``, ``quickstart``) from its option group
(``--agent``, ``--command-backend``, ``--protocol``, ``--agent-option NAME=VALUE``,
``--command-backend-option NAME=VALUE``), read from an experiment file's
``agent`` table (``[predecessor] agent = { runtime = "command", options = { agent_command = "..." } }``),
given whole to :func:`takeover.agents.runs.run_predecessor` and :func:`~takeover.agents.runs.run_takeover`,
kept in :class:`~takeover.agents.run_folder.RunSpec` and in the inputs of run folders and units. The names
it holds are checked against their registries, and the options by the runtime's and the backend's own models,
by :func:`takeover.agents.runtimes.checked_choice`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from takeover._util.registries import NoOptions
from takeover.vocabulary import DEFAULT_AGENT, DEFAULT_COMMAND_BACKEND, DEFAULT_PROTOCOL, ActionProtocol

__all__ = ["AgentChoice", "NoOptions"]


class AgentChoice(BaseModel):
    """Which agent runs, and how.

    Attributes:
        runtime: the agent runtime, a name of :data:`takeover.agents.runtimes.RUNTIMES` (``--agent``).
        command_backend: where its commands run, a name of
            :data:`takeover.agents.command_backends.COMMAND_BACKENDS` (``--command-backend``).
        protocol: how the agent states actions: ``text`` (one bash block per reply; the paper's) or
            ``tools`` (native tool calls) (``--protocol``).
        options: the runtime's own options (JSON values), as its ``Options`` model declares them
            (``--agent-option NAME=VALUE``); ``{}`` when it has none or takes their defaults.
        command_backend_options: the command backend's own options (JSON values), as its ``Options`` model
            declares them (``--command-backend-option NAME=VALUE``; ``docker``: ``image``); ``{}`` likewise.

    A bare string is read as the runtime's name (``agent = "openhands"`` in an experiment file).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    runtime: str = DEFAULT_AGENT
    command_backend: str = DEFAULT_COMMAND_BACKEND
    protocol: ActionProtocol = DEFAULT_PROTOCOL
    options: dict[str, Any] = Field(default_factory=dict)
    command_backend_options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _runtime_name(cls, data: Any) -> Any:
        return {"runtime": data} if isinstance(data, str) else data
