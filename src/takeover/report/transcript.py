"""A run as a reader sees it: its steps (action, the observation that answered it, the tokens of the model
call behind it) and its totals, from any trajectory (docs/protocol.md sections 1 and 8).

Built from the normalized :class:`~takeover.trajectories.Trajectory`, so a takeover run folder and every
imported format (mini-swe-agent, OpenHands, SWE-agent, ...) read the same way. Texts are kept whole
here; the page folds and clips them.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from takeover.trajectories import Event, Trajectory, Usage, read_trajectories


class Step(BaseModel):
    """One action of a run with what answered it.

    Attributes:
        index: event index of the action (``None`` for observations that answer no recorded action, such
            as a harness message before the first action).
        type: ``command``, ``file_edit``, ``file_view``, ``message``, ``finish`` (the action's type), or
            ``observation`` for an unanswered observation.
        thought: the model's reasoning text, where the format separates it.
        action: what was done: the command, an editor call (``str_replace calc.py``), a message.
        detail: editor arguments (old and new text, a created file's text), when there are any.
        observation: the full text of the observation(s) answering the action (``None``: none recorded).
        exit_code: exit code of a command, where known.
        format_error: the agent's parser rejected the response (no command ran).
        call: index of the model call that produced the action; ``usage`` its token usage (tokens; shown
            on the first action of a call only, so that a call's tokens are never counted twice).
        seconds: duration of that model call (seconds), where recorded.
        rediscovery, repeats: the action's rediscovery label and the predecessor event it repeats, in a
            takeover run's drill-down (docs/protocol.md section 9.1; :mod:`takeover.report.rediscovery`).
    """

    index: int | None
    type: str
    thought: str | None = None
    action: str = ""
    detail: str | None = None
    observation: str | None = None
    exit_code: int | None = None
    format_error: bool = False
    call: int | None = None
    usage: Usage | None = None
    seconds: float | None = None
    rediscovery: str | None = None
    repeats: int | None = None


class Transcript(BaseModel):
    """A run's steps and totals (units: events, calls, tokens).

    Attributes:
        format, source_path, record: where it was read from (reader name, file, record in the file).
        instance_id, model, exit_status: as recorded.
        prompt: the prompt the agent was given (for a takeover run, the view's takeover prompt).
        steps: in event order.
        final_patch: the run's submitted diff, where recorded.
        agent_events, llm_calls: counts; prompt_tokens, completion_tokens: sums over calls with usage (``None``
            when no call records usage: unknown, not 0);
        cached_tokens: sum of cached prompt tokens (``None`` when no call reported it);
        reasoning_tokens: sum of completion tokens spent on reasoning (``None`` when no call reported it);
        estimated_calls: calls whose usage is a tokenizer estimate (the endpoint reported none);
        calls_without_usage: calls that record no usage at all.
    """

    format: str
    source_path: str | None = None
    record: str | None = None
    instance_id: str | None = None
    model: str | None = None
    exit_status: str | None = None
    prompt: str | None = None
    steps: list[Step] = Field(default_factory=list)
    final_patch: str | None = None
    agent_events: int = 0
    llm_calls: int = 0
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    estimated_calls: int = 0
    calls_without_usage: int = 0


def _action_text(ev: Event) -> tuple[str, str | None]:
    """``(one-line action, details)`` of an action event."""
    if ev.type in ("command", "finish") and ev.command:
        return ev.command, None
    if ev.type == "file_edit":
        head = f"{ev.edit or 'edit'} {ev.path or ''}".strip()
        if ev.file_text is not None:
            return head, ev.file_text
        parts = []
        if ev.insert_line is not None:
            parts.append(f"at line {ev.insert_line}")
        if ev.view_range:
            parts.append(f"lines {ev.view_range[0]}-{ev.view_range[1]}")
        if ev.old_text is not None:
            parts.append("--- old\n" + ev.old_text)
        if ev.new_text is not None:
            parts.append("+++ new\n" + ev.new_text)
        return head, "\n".join(parts) or None
    if ev.type == "file_view":
        rng = f" lines {ev.view_range[0]}-{ev.view_range[1]}" if ev.view_range else ""
        return f"view {ev.path or ''}{rng}".strip(), None
    text = ev.text
    if ev.thought and text.startswith(ev.thought):
        text = text[len(ev.thought):].strip()
    return text, None


def _sum(values) -> int | None:
    """Sum of the values that are not ``None``; ``None`` when all are."""
    found = [v for v in values if v is not None]
    return sum(found) if found else None


def transcript(traj: Trajectory) -> Transcript:
    """The :class:`Transcript` of ``traj``: one :class:`Step` per action, each observation attached to
    the action it answers (``cause``; else to the latest step), per-call usage on the first action of its
    call."""
    calls = {c.index: c for c in traj.llm_calls}
    steps: list[Step] = []
    by_action: dict[int, Step] = {}
    shown_calls: set[int] = set()
    for ev in traj.events:
        if ev.kind == "action":
            action, detail = _action_text(ev)
            step = Step(index=ev.index, type=ev.type, thought=ev.thought, action=action, detail=detail,
                        format_error=ev.format_error, call=ev.llm_call)
            call = calls.get(ev.llm_call) if ev.llm_call is not None else None
            if call is not None and call.index not in shown_calls:
                shown_calls.add(call.index)
                step.usage = call.usage
                step.seconds = call.seconds
            steps.append(step)
            by_action[ev.index] = step
            continue
        target = by_action.get(ev.cause) if ev.cause is not None else None
        if target is None and steps and ev.cause is None and steps[-1].index is not None:
            target = steps[-1]
        if target is None:
            steps.append(Step(index=None, type="observation", observation=ev.text, exit_code=ev.exit_code))
            continue
        target.observation = ev.text if target.observation is None else f"{target.observation}\n\n{ev.text}"
        if ev.exit_code is not None:
            target.exit_code = ev.exit_code
    return Transcript(
        format=traj.format,
        source_path=traj.source_path,
        record=traj.record,
        instance_id=traj.instance_id,
        model=traj.model,
        exit_status=traj.exit_status,
        prompt=traj.task_prompt,
        steps=steps,
        final_patch=traj.final_patch,
        agent_events=traj.agent_events,
        llm_calls=len(traj.llm_calls),
        # Unknown, not 0, when the trajectory records no usage at all (docs/protocol.md section 1).
        prompt_tokens=traj.prompt_tokens if traj.usage_reported else None,
        completion_tokens=traj.completion_tokens if traj.usage_reported else None,
        cached_tokens=traj.cached_tokens,
        reasoning_tokens=_sum(c.usage.reasoning_tokens for c in traj.llm_calls if c.usage is not None),
        estimated_calls=sum(1 for c in traj.llm_calls if c.usage is not None and c.usage.estimated),
        calls_without_usage=sum(1 for c in traj.llm_calls if c.usage is None),
    )


def read_transcripts(path: Path | str) -> list[Transcript]:
    """The transcripts of every run in ``path``: a takeover run folder, or any trajectory file or run
    folder a :mod:`takeover.trajectories` reader accepts.

    Raises:
        InputError: the path is missing, damaged or in no known format (names the file, record, field).
    """
    return [transcript(t) for t in read_trajectories(path)]
