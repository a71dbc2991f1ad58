"""The command backends by name (``--command-backend``, an agent choice's ``command_backend``): the one
place a backend is registered (:class:`takeover.agents.command_backend.CommandBackend`).

- ``local`` (default, :class:`~takeover.agents.local_commands.LocalCommands`): on this host, sandboxed
  when bubblewrap is available;
- ``docker`` (:class:`~takeover.agents.docker_commands.DockerCommands`): in the instance's SWE-bench image,
  on the image's own repository mounted at ``/testbed``, no network; needs a Docker daemon.

Code outside this module picks a backend by name (``COMMAND_BACKENDS.named(name)``) and asks it what it
does (``on_host``, ``uses_task_environment``); it never tests the names itself.
"""

from __future__ import annotations

from takeover._util.registries import Registry
from takeover.agents.command_backend import CommandBackend
from takeover.agents.docker_commands import DockerCommands
from takeover.agents.local_commands import LocalCommands

#: The command backends by name, the default first.
COMMAND_BACKENDS: Registry[CommandBackend] = Registry(
    "command backend", {"local": LocalCommands(), "docker": DockerCommands()}, where="command_backend")


def host_command_backends() -> list[str]:
    """The names of the command backends whose commands run on this host (:attr:`CommandBackend.on_host`)."""
    return [name for name, backend in COMMAND_BACKENDS.items() if backend.on_host]
