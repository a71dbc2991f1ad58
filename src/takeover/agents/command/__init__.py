"""The user's own agent as an agent runtime (``--agent command --agent-option agent_command=TEMPLATE``; docs/protocol.md
section 8.4): ``command_runtime.py`` holds :class:`~takeover.agents.command.command_runtime.CommandRuntime`,
registered in :data:`takeover.agents.runtimes.RUNTIMES`."""
