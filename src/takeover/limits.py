"""The limits of one agent run (docs/protocol.md section 8): the one model of them, from the CLI to run.json.

Each limit has mini-swe-agent's own name where mini-swe-agent has the setting (``step_limit``,
``wall_time_limit_seconds``, ``cost_limit``, ``max_consecutive_format_errors`` of its ``AgentConfig``;
``command_timeout`` is its ``environment.timeout``), and ends a run with its own
:class:`~takeover.vocabulary.ExitStatus`.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class RunLimits(BaseModel):
    """Limits of a run, the same for every view (docs/protocol.md section 8; the paper's: 500 steps, 4 hours).

    Attributes:
        step_limit: maximum model calls (mini-swe-agent's step is one model call; format-error turns
            count). Reaching it ends the run with ``step_limit``.
        wall_time_limit_seconds: wall-clock limit of the whole run (seconds), checked before every model
            call; a command never gets more time than what remains. Ends the run with ``time_limit``.
        command_timeout: time limit of one command (seconds); a command that exceeds it is killed and its
            observation says so (the run goes on).
        prompt_token_limit: optional cap on cumulative prompt tokens (tokens); ends the run with
            ``token_limit``.
        cost_limit: optional cap on cumulative cost (US dollars, as litellm prices the model); ends the
            run with ``cost_limit``.
        max_consecutive_format_errors: responses in a row without exactly one action that end the run
            with ``format_errors`` (mini-swe-agent's default: 3).

    Raises:
        pydantic.ValidationError: a value is out of range.
    """

    step_limit: int = Field(500, ge=1)
    wall_time_limit_seconds: float = Field(4 * 3600.0, gt=0)
    command_timeout: float = Field(600.0, gt=0)
    prompt_token_limit: int | None = Field(None, ge=1)
    cost_limit: float | None = Field(None, gt=0)
    max_consecutive_format_errors: int = Field(3, ge=1)
