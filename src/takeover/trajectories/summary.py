"""One-line summaries of trajectories: what ``takeover inspect`` prints (table row or JSON line)."""

from __future__ import annotations

from pydantic import BaseModel

from takeover.trajectories.events import Trajectory


class TrajectorySummary(BaseModel):
    """Counts and totals of one run (units: events, calls, tokens).

    ``prompt_tokens``/``completion_tokens`` are the sums over per-call usage; for formats that keep only
    run totals (SWE-agent ``info.model_stats``) they are those totals, and ``usage_per_call`` is false.
    They are ``None`` (unknown, not zero) when the run records no usage at all: no call carries usage
    and the file has no totals (or the run made no calls).

    ``cached_tokens``, ``cache_creation_tokens`` and ``reasoning_tokens`` are the sums of those parts of the
    two totals over the calls that report them (``None`` when none does; docs/protocol.md section 1).
    ``usage_estimated``: some call's count is an estimate (a prompt count of 0 for a non-empty prompt).
    ``calls_with_usage``: how many of the ``llm_calls`` record usage; when it is fewer than ``llm_calls`` (and
    more than 0) the per-call totals are partial: they leave out the calls that recorded none.
    """

    format: str
    instance_id: str | None
    agent_events: int
    actions: int
    observations: int
    llm_calls: int
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None = None
    cache_creation_tokens: int | None = None
    reasoning_tokens: int | None = None
    usage_estimated: bool = False
    exit_status: str | None
    final_patch_files: list[str]
    usage_per_call: bool = True
    calls_with_usage: int = 0

    @property
    def partial_usage(self) -> bool:
        """The per-call token totals leave out some calls, which recorded no usage."""
        return self.usage_per_call and 0 < self.calls_with_usage < self.llm_calls

    def json_row(self) -> dict:
        """The exact keys of ``takeover inspect --json`` (unknown token counts are ``null``)."""
        return self.model_dump()


def summarize(traj: Trajectory) -> TrajectorySummary:
    """Summary of ``traj`` (see :class:`TrajectorySummary` for where token totals come from)."""
    prompt, completion, per_call = traj.prompt_tokens, traj.completion_tokens, True
    totals = traj.metadata.get("usage_totals") if isinstance(traj.metadata, dict) else None
    if not any(c.usage for c in traj.llm_calls):
        if isinstance(totals, dict):
            prompt = int(totals.get("prompt_tokens") or 0)
            completion = int(totals.get("completion_tokens") or 0)
            per_call = False
        else:
            prompt = completion = None
    return TrajectorySummary(
        format=traj.format,
        instance_id=traj.instance_id,
        agent_events=traj.agent_events,
        actions=traj.actions,
        observations=traj.observations,
        llm_calls=len(traj.llm_calls),
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=traj.cached_tokens,
        cache_creation_tokens=traj.cache_creation_tokens,
        reasoning_tokens=traj.reasoning_tokens,
        usage_estimated=traj.usage_estimated,
        exit_status=traj.exit_status,
        final_patch_files=traj.final_patch_files,
        usage_per_call=per_call,
        calls_with_usage=sum(1 for c in traj.llm_calls if c.usage is not None),
    )
