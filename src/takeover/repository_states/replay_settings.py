"""How an imported run is replayed (docs/protocol.md section 5): one record, the ``[replay]`` table of an
experiment file and the ``replay`` of a points unit's inputs (``--replay-timeout`` and ``--memory-mb`` of
``takeover points``/``checkpoint``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from takeover.repository_states.replay import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT


class ReplaySettings(BaseModel):
    """Per-command limits of a replay.

    Attributes:
        timeout: seconds per replayed command (``--replay-timeout``; default 300).
        memory_mb: resident and address-space limit per replayed command, MiB (``--memory-mb``; default 4096).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout: float = Field(DEFAULT_TIMEOUT, gt=0)
    memory_mb: int = Field(DEFAULT_MEMORY_MB, ge=1)
