"""Writer of ATIF (Harbor's Agent Trajectory Interchange Format): any run as ``trajectory.json``, whole or
cut after one event, validated against the format's model (the ``atif`` package, ATIF-v1.8, whose
fields and rules are those of Harbor's own models; install with ``pip install 'takeover[atif]'``).

How events become steps (the inverse of :mod:`takeover.trajectories.atif`, so that a round trip keeps the
events, their kinds, types, commands and texts, and every token count):

- a ``system`` step (the agent's name), then a ``user`` step with the task prompt;
- one ``agent`` step per model call that produced actions (consecutive actions of one call), with one
  tool call per action: commands as ``bash`` (``{"command": ...}``; IPython cells as
  ``execute_ipython_cell``), file views and edits as ``str_replace_editor`` with the editor's argument
  names, finishes as ``finish``, messages as a step without tool calls; the event fields those arguments
  cannot hold (working folder, the edit's own verb, format errors, ...) go into the tool call's
  ``extra``;
- the observations that answer a step's actions are its ``observation.results`` (``source_call_id`` the
  tool call answered; ``extra`` holds the exit code, a timeout, a stored diff and a source other than the
  environment); an observation before any action is a ``user`` step;
- ``metrics`` are the usage of the step's calls added up (tokens; cached, cache-creation and reasoning
  tokens where known), ``llm_call_count`` the number of calls: a call that produced no action (the format
  recorded one) is counted with the next step, so no token is lost; actions of no recorded call have
  ``llm_call_count`` 0 in a run that records calls;
- a run that records only run totals (SWE-agent's ``model_stats``) has them in ``final_metrics`` and no
  step metrics;
- the root ``extra`` holds ``instance_id``, ``final_patch``, ``exit_status``, ``working_dir``,
  ``source_format`` and, for a cut, ``cut_at_event`` (a cut has no final patch and no exit status: they
  are what the run did after the cut); ``final_metrics`` are the totals of the steps written.

The version written is ATIF-v1.7: nothing written needs v1.8 (audio content), and readers that know
only v1.7 (NVIDIA's ``nvidia-nat-atif``, older Harbor releases) accept it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from takeover import __version__
from takeover._util.io import atomic_write_text
from takeover.errors import EnvironmentUnavailable, InputError
from takeover.trajectories.events import Event, LLMCall, Trajectory

try:  # the format's model is an optional extra: only writing ATIF needs it
    import atif
except ImportError:  # pragma: no cover - exercised where the extra is not installed
    atif = None

SCHEMA_VERSION = "ATIF-v1.7"
_ACTION_EXTRA = ("cwd", "format_error", "process_input", "not_applied")


def _usage_sum(calls: Sequence[LLMCall]) -> dict[str, Any] | None:
    used = [c.usage for c in calls if c.usage is not None]
    if not used:
        return None
    metrics: dict[str, Any] = {"prompt_tokens": sum(u.prompt_tokens for u in used),
                               "completion_tokens": sum(u.completion_tokens for u in used)}
    cached = [u.cached_tokens for u in used if u.cached_tokens is not None]
    if cached:
        metrics["cached_tokens"] = sum(cached)
    extra = {}
    for name in ("cache_creation_tokens", "reasoning_tokens"):
        values = [getattr(u, name) for u in used if getattr(u, name) is not None]
        if values:
            extra[name] = sum(values)
    if any(u.estimated for u in used):
        extra["estimated"] = True
    if extra:
        metrics["extra"] = extra
    return metrics


def _tool_call(ev: Event, call_id: str, first: bool, step_text: str) -> dict[str, Any]:
    extra: dict[str, Any] = {k: getattr(ev, k) for k in _ACTION_EXTRA if getattr(ev, k) not in (None, False)}
    if ev.text != (step_text if first else ""):
        extra["text"] = ev.text
    if ev.thought and not first:
        extra["thought"] = ev.thought
    if ev.type == "command":
        name, args = ("execute_ipython_cell", {"code": ev.command or ""}) if ev.ipython else ("bash", {"command": ev.command or ""})
    elif ev.type in ("file_edit", "file_view"):
        name = "str_replace_editor"
        verb = "view" if ev.type == "file_view" else (ev.edit or "edit")
        args = {"command": verb, "path": ev.path}
        for field, key in (("old_text", "old_str"), ("new_text", "new_str"), ("file_text", "file_text"),
                           ("insert_line", "insert_line"), ("view_range", "view_range")):
            if getattr(ev, field) is not None:
                args[key] = getattr(ev, field)
        if ev.type == "file_edit" and ev.edit not in ("create", "str_replace", "insert", "undo_edit"):
            extra["edit"] = ev.edit  # a verb str_replace_editor does not have, or none
        if ev.view_range is not None and ev.type == "file_edit":
            extra["view_range"] = ev.view_range
    elif ev.type == "finish" and ev.command:
        name, args = "bash", {"command": ev.command}  # a submission that runs a command (mini-swe-agent)
        extra["type"] = "finish"
    elif ev.type == "finish":
        name, args = "finish", {"message": ev.text}
    else:
        name, args = "message", {}
    out: dict[str, Any] = {"tool_call_id": call_id, "function_name": name, "arguments": args}
    if extra:
        out["extra"] = extra
    return out


def _result(ev: Event, call_id: str | None, answered: Event | None) -> dict[str, Any]:
    extra: dict[str, Any] = {k: getattr(ev, k) for k in ("exit_code", "state_diff", "snapshot", "cwd")
                             if getattr(ev, k) is not None}
    if ev.type != (answered.type if answered is not None else "message"):
        extra["type"] = ev.type
    if ev.cause is None:
        extra["no_cause"] = True
    if ev.timed_out:
        extra["timed_out"] = True
    if ev.source != "environment":
        extra["source"] = ev.source
    out: dict[str, Any] = {"content": ev.text}
    if call_id is not None:
        out["source_call_id"] = call_id
    if extra:
        out["extra"] = extra
    return out


def _groups(trajectory: Trajectory, events: Sequence[Event]) -> list[list[Event]]:
    """Events in steps: consecutive actions of one model call and the observations that follow them; an
    observation before any action is a group of its own."""
    groups: list[list[Event]] = []
    current_call: object = object()
    for ev in events:
        if ev.kind == "action":
            if not groups or ev.llm_call is None or ev.llm_call != current_call or groups[-1][-1].kind != "action":
                groups.append([])
            current_call = ev.llm_call
            groups[-1].append(ev)
        elif groups:
            groups[-1].append(ev)
        else:
            groups.append([ev])
    return groups


def _agent_step(step_id: int, group: list[Event], calls: list[LLMCall], trajectory: Trajectory,
                has_calls: bool) -> dict[str, Any]:
    actions = [e for e in group if e.kind == "action"]
    first = actions[0]
    text = first.text or ""
    step: dict[str, Any] = {"step_id": step_id, "source": "agent", "message": text}
    if first.thought:
        step["reasoning_content"] = first.thought
    models = {c.model for c in calls if c.model}
    if len(models) == 1:
        step["model_name"] = models.pop()
    ids: dict[int, str] = {}
    tool_calls = []
    for k, ev in enumerate(actions):
        if ev.type == "message" and len(actions) == 1:
            continue  # a message is the step itself
        ids[ev.index] = f"call_{ev.index}"
        tool_calls.append(_tool_call(ev, ids[ev.index], k == 0, text))
    if tool_calls:
        step["tool_calls"] = tool_calls
    else:  # a message: its type, so that a fenced block in it is not read as a command
        step["extra"] = {"type": "message", **({"format_error": True} if first.format_error else {})}
    by_index = {e.index: e for e in trajectory.events}
    results = []
    last: Event | None = None
    for e in group:
        if e.kind == "action":
            last = e
        else:
            answered = by_index.get(e.cause) if e.cause is not None else last
            results.append(_result(e, ids.get(e.cause) if e.cause is not None else None, answered))
    if results:
        step["observation"] = {"results": results}
    metrics = _usage_sum(calls)
    if metrics is not None:
        step["metrics"] = metrics
    if has_calls:
        step["llm_call_count"] = len(calls)
    return step


def _calls_per_group(trajectory: Trajectory, groups: list[list[Event]]) -> list[list[LLMCall]]:
    """The model calls of each group: the calls of its actions, plus every call no action names that
    comes before them (it is counted with the next step, or the last one)."""
    used = {e.llm_call for g in groups for e in g if e.kind == "action" and e.llm_call is not None}
    orphans = sorted(c.index for c in trajectory.llm_calls if c.index not in used)
    per: list[list[LLMCall]] = []
    by_index = {c.index: c for c in trajectory.llm_calls}
    assigned: set[int] = set()
    for g in groups:
        own = sorted({e.llm_call for e in g if e.kind == "action" and e.llm_call is not None} - assigned)
        assigned.update(own)
        limit = own[-1] if own else -1
        take = [i for i in orphans if i < limit] if g[0].kind == "action" else []
        orphans = [i for i in orphans if i not in take]
        per.append([by_index[i] for i in sorted(take + own) if i in by_index])
    action_groups = [i for i, g in enumerate(groups) if g[0].kind == "action"]
    if orphans and action_groups:
        per[action_groups[-1]].extend(by_index[i] for i in orphans if i in by_index)
    return per


def to_atif(trajectory: Trajectory, *, through_event: int | None = None) -> dict[str, Any]:
    """``trajectory`` as an ATIF document (a dict ready for JSON), cut after event ``through_event``
    (0-based; the whole run by default), validated with the ``atif`` model.

    A cut keeps the calls of the actions it keeps, so its tokens are those of the events up to the cut;
    it carries neither the run's final patch nor its exit status.

    Raises:
        InputError: ``through_event`` names no event of the run.
        EnvironmentUnavailable: the ``atif`` package is not installed.
        ValueError: the document does not validate (a bug of this writer; the message names the field).
    """
    if atif is None:
        raise EnvironmentUnavailable("writing ATIF needs the atif package: pip install 'takeover[atif]'")
    events = trajectory.events
    if through_event is not None:
        if not 0 <= through_event < len(events):
            raise InputError(trajectory.source_path or "trajectory",
                             f"event {through_event} is not in the run: it has {len(events)} events "
                             f"(0 to {len(events) - 1})", field="--event")
        events = events[: through_event + 1]
    kept_calls = {e.llm_call for e in events if e.llm_call is not None}
    last_call = max(kept_calls, default=-1)
    cut = trajectory if through_event is None else trajectory.model_copy(
        update={"llm_calls": [c for c in trajectory.llm_calls if c.index <= last_call or c.index in kept_calls]})
    groups = _groups(cut, events)
    per_group = _calls_per_group(cut, groups)
    has_calls = bool(trajectory.llm_calls)
    agent = {"name": trajectory.format, "version": trajectory.format_version or "unknown",
             "extra": {"exported_by": f"takeover {__version__}"}}
    if trajectory.model:
        agent["model_name"] = trajectory.model
    steps: list[dict[str, Any]] = [{"step_id": 1, "source": "user", "message": trajectory.task_prompt or ""}]
    for group, calls in zip(groups, per_group, strict=True):
        step_id = len(steps) + 1
        if group[0].kind == "observation":
            steps.append({"step_id": step_id, "source": "user", "message": group[0].text})
            continue
        steps.append(_agent_step(step_id, group, calls, cut, has_calls))
    # A cut holds nothing the run did after the cut: not its final patch, not how it ended.
    whole = through_event is None
    extra = {"instance_id": trajectory.instance_id, "final_patch": trajectory.final_patch if whole else None,
             "exit_status": trajectory.exit_status if whole else None, "working_dir": trajectory.working_dir,
             "source_format": trajectory.format, "cut_at_event": through_event}
    totals = _usage_sum([c for calls in per_group for c in calls])
    final: dict[str, Any] = {"total_steps": len(steps)}
    run_totals = trajectory.metadata.get("usage_totals")
    if totals is None and through_event is None and isinstance(run_totals, dict):
        # Run totals only (SWE-agent's model_stats): what final_metrics is for; no step gets a share.
        final.update(total_prompt_tokens=int(run_totals.get("prompt_tokens") or 0),
                     total_completion_tokens=int(run_totals.get("completion_tokens") or 0))
    if totals is not None:
        final.update(total_prompt_tokens=totals["prompt_tokens"], total_completion_tokens=totals["completion_tokens"])
        if "cached_tokens" in totals:
            final["total_cached_tokens"] = totals["cached_tokens"]
    session = trajectory.metadata.get("session_id")
    doc = {"schema_version": SCHEMA_VERSION, "session_id": str(session) if session else None,
           "agent": agent, "steps": steps, "final_metrics": final,
           "extra": {k: v for k, v in extra.items() if v is not None}}
    try:
        return atif.Trajectory.model_validate(doc).to_json_dict(exclude_none=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"ATIF export does not validate at {where}: {first['msg']}") from None


def write_atif(trajectory: Trajectory, path: Path | str, *, through_event: int | None = None) -> Path:
    """Write :func:`to_atif` of ``trajectory`` to ``path`` (JSON, two-space indent), atomically.

    Raises:
        as :func:`to_atif`.
    """
    doc = to_atif(trajectory, through_event=through_event)
    return atomic_write_text(path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
