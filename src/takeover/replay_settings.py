"""How a recorded run is replayed (docs/protocol.md section 5): one record, from the command line and the
experiment file to every replay.

:class:`ReplaySettings` is built once, by a command's option group (``--replay-timeout``, ``--memory-mb``,
``--use-sandbox/--no-sandbox``, ``--use-environment/--no-environment``) or from an experiment file's
``[replay]`` table, and given whole to :func:`takeover.repository_states.replay.replay_trajectory` and the
functions above it (:func:`takeover.points.analyze_run`, :func:`~takeover.points.cut_at_event`,
:func:`~takeover.points.run_events`, the handoff's replay of a session); it is kept in the inputs of points
units. Its defaults and bounds are declared here only.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ReplaySettings(BaseModel):
    """Per-command limits and confinement of a replay.

    Attributes:
        timeout: seconds per replayed command (``--replay-timeout``; the table's ``timeout``). Generous on
            purpose: only file changes matter, and a slow machine must not turn a command the recorded run
            finished into a kill (replays must give the same verdict on every run).
        memory_mb: resident and address-space limit per replayed command, MiB (``--memory-mb``).
        use_sandbox: confine replayed commands with bubblewrap where this machine has it (``--use-sandbox/
            --no-sandbox``); the verdict says when they ran unconfined.
        use_environment: replay inside the task's prepared environment when it can be prepared
            (``--use-environment/--no-environment``), else with the plain interpreter on ``PATH``.

    Raises:
        pydantic.ValidationError: a value out of range.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout: float = Field(300.0, gt=0)
    memory_mb: int = Field(4096, ge=64)
    use_sandbox: bool = True
    use_environment: bool = True
