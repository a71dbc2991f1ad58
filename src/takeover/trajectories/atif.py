"""Reader of ATIF, Harbor's Agent Trajectory Interchange Format (``trajectory.json``; ATIF-v1.0 to v1.8).

Native layout (Harbor's RFC 0001): a root object ``{schema_version: "ATIF-v1.N", session_id?,
trajectory_id?, agent{name, version, model_name?}, steps[], final_metrics?, notes?, extra?,
continued_trajectory_ref?, subagent_trajectories?}``; each step ``{step_id (1-based), source:
system|user|agent, message, reasoning_content?, tool_calls[{tool_call_id, function_name, arguments,
extra?}]?, observation{results[{source_call_id?, content, extra?}]}?, metrics{prompt_tokens,
completion_tokens, cached_tokens, cost_usd, extra}?, llm_call_count?, is_copied_context?, model_name?,
extra?}``. Every version since v1.0 is read: later versions only added optional fields. A file may hold
one trajectory, a list of them, or one per line (JSON Lines).

How steps map to events (decided here, after the RFC and Harbor's own converters):

- ``system`` steps before the first agent step and the first ``user`` step are not events: the system
  prompt and the task (:attr:`Trajectory.task_prompt`). A later ``user`` or ``system`` step is an
  observation with source ``user`` (type ``message``) answering the latest action.
- Steps marked ``is_copied_context`` were copied from an earlier trajectory (a resumed or continued run)
  and already counted there: they are neither events nor model calls, so a resumed history is never
  counted twice; ``metadata["copied_context_steps"]`` counts them.
- An ``agent`` step is ``llm_call_count`` model calls (one when the field is absent, none for ``0``,
  deterministic dispatch). The step's ``metrics`` are the usage of its first call (the RFC: aggregated
  when there are several): ``prompt_tokens`` (cached tokens included, as in docs/protocol.md section 1),
  ``completion_tokens``, ``cached_tokens``, and ``extra.reasoning_tokens`` /
  ``extra.cache_creation_tokens`` where a writer records them. A step without metrics has no usage.
- Each tool call is one action: shell tools (``bash``, ``execute_bash``, ``terminal``, Claude Code's
  ``Bash``, Codex's ``shell``/``exec_command``, Gemini CLI's ``run_shell_command``) -> ``command``
  (``arguments.command``, a list of words joined as a shell line); ``execute_ipython_cell`` -> ``command``
  marked ``ipython``; ``str_replace_editor``/``file_editor``/``edit_file`` -> ``file_view`` or
  ``file_edit`` with the editor's arguments; Claude Code's ``Edit``/``MultiEdit``/``Write``/``Read`` ->
  ``file_edit``/``file_view``; ``finish``/``submit`` -> ``finish``; any other tool -> ``message``. A step
  without tool calls is one action: ``command`` when its message holds exactly one fenced ``bash``/``sh``
  block (the text protocol of mini-swe-agent), else ``message``.
- Each observation result is an observation answering the tool call named by ``source_call_id``, or the
  step's last action when it names none. Its ``extra`` may carry what takeover's writer
  (:mod:`takeover.trajectories.atif_writer`) records: ``exit_code``, ``timed_out``, ``state_diff``,
  ``source``; a tool call's ``extra`` the event fields the arguments do not hold.
- ``final_metrics`` totals count only where no step has metrics: then they are the run's totals
  (``metadata["usage_totals"]``, as SWE-agent's ``model_stats``); otherwise the steps' metrics are
  summed, copied steps left out.
- A replay of an ATIF run follows the plain editor rules (:class:`~takeover.trajectories.ReplayNeeds`'
  defaults): ATIF does not say which tool's editor made an edit; the replay's verification (docs/protocol.md
  section 5.4) refuses a run those rules do not reproduce.
- ``extra`` of the root gives ``instance_id``, ``final_patch``, ``exit_status`` and ``working_dir`` when a
  writer recorded them (takeover's does); subagent trajectories are not read (their count is in
  ``metadata``).
"""

from __future__ import annotations

import re
import shlex
from typing import Any, get_args

from takeover.trajectories._common import (
    BASH_TOOLS,
    EDITOR_TOOLS,
    FINISH_TOOLS,
    IPYTHON_TOOLS,
    Ctx,
    Reader,
    Source,
    as_int,
    content_text,
    editor_event_fields,
)
from takeover.trajectories.events import ActionType, Event, LLMCall, Trajectory, Usage

NAME = "atif"
_VERSION = re.compile(r"^ATIF-v1\.\d+$")
#: Shell tools of the agents Harbor converts to ATIF, beside the OpenHands names of ``_common``.
SHELL_TOOLS = BASH_TOOLS | frozenset({"Bash", "shell", "exec_command", "local_shell", "run_shell_command"})
_ACTION_TYPES = frozenset(get_args(ActionType))
_FENCE = re.compile(r"```(?:bash|sh)\s*\n(.*?)\n```", re.DOTALL)
#: Event fields a tool call's or result's ``extra`` may set (takeover's writer records them there).
ACTION_EXTRA = ("type", "text", "cwd", "edit", "view_range", "format_error", "process_input", "not_applied", "thought")
OBSERVATION_EXTRA = ("type", "exit_code", "timed_out", "state_diff", "snapshot", "cwd")


def _is_atif(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("schema_version"), str)
            and bool(_VERSION.match(value["schema_version"])) and isinstance(value.get("steps"), list)
            and isinstance(value.get("agent"), dict))


def detect(source: Source) -> bool:
    """A JSON object (or list / JSON Lines of them) with ``schema_version`` ``ATIF-v1.N``, ``agent`` and
    ``steps``."""
    return _is_atif(source.first())


def _usage(metrics: Any) -> Usage | None:
    if not isinstance(metrics, dict):
        return None
    extra = metrics.get("extra") if isinstance(metrics.get("extra"), dict) else {}
    if metrics.get("prompt_tokens") is None and metrics.get("completion_tokens") is None:
        return None
    return Usage(
        prompt_tokens=as_int(metrics.get("prompt_tokens")) or 0,
        completion_tokens=as_int(metrics.get("completion_tokens")) or 0,
        cached_tokens=as_int(metrics.get("cached_tokens")),
        cache_creation_tokens=as_int(extra.get("cache_creation_tokens")),
        reasoning_tokens=as_int(extra.get("reasoning_tokens")),
    )


def _shell_line(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(w, str) for w in value):
        words = value[2:] if len(value) >= 3 and value[0].endswith(("bash", "sh")) and value[1] in ("-c", "-lc") else value
        return words[0] if len(words) == 1 else shlex.join(words)
    return None


def _claude_edit(name: str, args: dict) -> dict[str, Any]:
    path = args.get("file_path") if isinstance(args.get("file_path"), str) else None
    if name == "Read":
        return {"type": "file_view", "path": path}
    if name == "Write":
        return {"type": "file_edit", "path": path, "edit": "create",
                "file_text": args.get("content") if isinstance(args.get("content"), str) else None}
    if name == "Edit":
        edit = "replace_all" if args.get("replace_all") is True else "str_replace"
        return {"type": "file_edit", "path": path, "edit": edit, "old_text": args.get("old_string"),
                "new_text": args.get("new_string")}
    return {"type": "file_edit", "path": path, "edit": "multi_edit"}


def tool_action_fields(name: str, args: dict) -> dict[str, Any]:
    """The :class:`Event` fields of one tool call (``type`` and the rest), by the rules of the module
    docstring."""
    if name in SHELL_TOOLS:
        command = _shell_line(args.get("command", args.get("cmd")))
        if command is not None:
            return {"type": "command", "command": command}
    if name in IPYTHON_TOOLS and isinstance(args.get("code"), str):
        return {"type": "command", "command": args["code"], "ipython": True}
    if name in EDITOR_TOOLS:
        return editor_event_fields(args)
    if name in ("Edit", "MultiEdit", "Write", "Read"):
        return _claude_edit(name, args)
    if name in FINISH_TOOLS:
        return {"type": "finish"}
    return {"type": "message"}


class _Run:
    """The events and calls of one ATIF trajectory as they are read."""

    def __init__(self, ctx: Ctx):
        self.ctx = ctx
        self.events: list[Event] = []
        self.calls: list[LLMCall] = []
        self.last_action: int | None = None

    def add(self, **fields: Any) -> Event:
        event = Event(index=len(self.events), **fields)
        self.events.append(event)
        if event.kind == "action":
            self.last_action = event.index
        return event

    def calls_of(self, step: dict, ctx: Ctx) -> int | None:
        """Add the step's model calls; returns the index of the first (``None`` for none)."""
        count = step.get("llm_call_count")
        if count is not None and (as_int(count) is None or as_int(count) < 0):
            raise ctx.error("expected a non-negative integer", "llm_call_count")
        n = 1 if count is None else as_int(count)
        first = len(self.calls) if n else None
        model = step.get("model_name") if isinstance(step.get("model_name"), str) else None
        for k in range(n or 0):
            self.calls.append(LLMCall(index=len(self.calls), usage=_usage(step.get("metrics")) if k == 0 else None,
                                      model=model))
        return first

    def agent_step(self, step: dict, ctx: Ctx) -> None:
        call = self.calls_of(step, ctx)
        message = content_text(step.get("message"))
        thought = step.get("reasoning_content") if isinstance(step.get("reasoning_content"), str) else None
        by_call: dict[str, int] = {}
        tool_calls = step.get("tool_calls") or []
        if not isinstance(tool_calls, list):
            raise ctx.error("expected an array", "tool_calls")
        for i, tc in enumerate(tool_calls):
            tctx = ctx.item("tool_calls", i)
            name = tctx.need(tc, "function_name", str)
            args = tc.get("arguments") if isinstance(tc.get("arguments"), dict) else {}
            fields = {"text": message if i == 0 else "", "thought": thought if i == 0 else None,
                      **tool_action_fields(name, args)}
            if fields["type"] == "message" and not fields["text"] and name != "message":
                fields["text"] = f"{name}({', '.join(sorted(args))})"  # another tool: say which one ran
            fields.update(_extra_fields(tc.get("extra"), ACTION_EXTRA))
            if fields["type"] not in _ACTION_TYPES:
                raise tctx.error(f"unknown event type {fields['type']!r}", "extra.type")
            event = self.add(kind="action", source="agent", llm_call=call, **fields)
            if isinstance(tc.get("tool_call_id"), str):
                by_call[tc["tool_call_id"]] = event.index
        if not tool_calls:
            fenced = _FENCE.findall(message)
            fields = {"type": "command", "command": fenced[0]} if len(fenced) == 1 else {"type": "message"}
            extra = step.get("extra") if isinstance(step.get("extra"), dict) else {}
            if extra.get("type") == "message" or extra.get("format_error") is True:
                fields = {"type": "message"}  # takeover's writer says so: the text is no command
            fields.update(_extra_fields(extra, ACTION_EXTRA))
            self.add(kind="action", source="agent", text=message, thought=thought, llm_call=call, **fields)
        observation = step.get("observation")
        if observation is None:
            return
        results = ctx.list_of_objects(observation, "results") if isinstance(observation, dict) else None
        if results is None:
            raise ctx.error("expected an object", "observation")
        for i, result in enumerate(results):
            call_id = ctx.key("observation").item("results", i).optional(result, "source_call_id", str)
            self.observe(result, by_call.get(call_id, self.last_action))

    def observe(self, result: dict, cause: int | None) -> None:
        extra = result.get("extra") if isinstance(result.get("extra"), dict) else {}
        source = extra.get("source") if extra.get("source") in ("environment", "user") else "environment"
        kind_of = self.events[cause].type if cause is not None else "message"
        fields = {"type": kind_of, **_extra_fields(extra, OBSERVATION_EXTRA)}
        self.add(kind="observation", source=source, text=content_text(result.get("content")),
                 cause=None if extra.get("no_cause") is True else cause, **fields)

    def user_step(self, step: dict) -> None:
        self.add(kind="observation", source="user", type="message", text=content_text(step.get("message")),
                 cause=self.last_action)


def _extra_fields(extra: Any, names: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(extra, dict):
        return {}
    return {k: extra[k] for k in names if k in extra and extra[k] is not None}


def read_record(doc: dict, ctx: Ctx) -> Trajectory:
    """One ATIF trajectory as a :class:`Trajectory` (rules in the module docstring).

    Raises:
        InputError: a step that is not an object, a step without ``source``, a tool call without
            ``function_name``, a malformed ``observation`` (names the file, record and field).
    """
    run = _Run(ctx)
    task: str | None = None
    copied = 0
    steps = ctx.list_of_objects(doc, "steps")
    for i, step in enumerate(steps):
        sctx = ctx.item("steps", i)
        source = sctx.need(step, "source", str)
        if step.get("is_copied_context") is True:
            copied += 1
            continue
        if source == "agent":
            run.agent_step(step, sctx)
        elif source == "user" and task is None and not run.events:
            task = content_text(step.get("message"))
        elif source == "system" and not run.events:
            continue
        elif source in ("user", "system"):
            run.user_step(step)
        else:
            raise sctx.error(f"unknown step source {source!r}; expected system, user or agent", "source")
    agent = doc["agent"]
    extra = doc.get("extra") if isinstance(doc.get("extra"), dict) else {}
    metadata: dict[str, Any] = {
        "agent": agent.get("name"), "agent_version": agent.get("version"), "session_id": doc.get("session_id"),
        "trajectory_id": doc.get("trajectory_id"), "copied_context_steps": copied,
        "continued_trajectory_ref": doc.get("continued_trajectory_ref"),
        "subagent_trajectories": len(doc.get("subagent_trajectories") or []),
    }
    final = doc.get("final_metrics") if isinstance(doc.get("final_metrics"), dict) else None
    if final is not None and not any(c.usage for c in run.calls) and final.get("total_prompt_tokens") is not None:
        # Totals without any step's metrics: run totals, shown as such (docs/protocol.md section 1).
        metadata["usage_totals"] = {"prompt_tokens": as_int(final.get("total_prompt_tokens")) or 0,
                                    "completion_tokens": as_int(final.get("total_completion_tokens")) or 0}
    for key in ("repo", "base_commit", "source_format", "cut_at_event"):
        if extra.get(key) is not None:
            metadata[key] = extra[key]
    return Trajectory(
        format=NAME, format_version=doc["schema_version"], source_path=ctx.path, record=ctx.record,
        instance_id=extra.get("instance_id") if isinstance(extra.get("instance_id"), str) else None,
        model=agent.get("model_name") if isinstance(agent.get("model_name"), str) else None,
        exit_status=extra.get("exit_status") if isinstance(extra.get("exit_status"), str) else None,
        task_prompt=task, final_patch=extra.get("final_patch") if isinstance(extra.get("final_patch"), str) else None,
        working_dir=extra.get("working_dir") if isinstance(extra.get("working_dir"), str) else None,
        events=run.events, llm_calls=run.calls, metadata={k: v for k, v in metadata.items() if v is not None},
    )


def read(source: Source) -> list[Trajectory]:
    """Every ATIF trajectory of ``source`` (one per record).

    Raises:
        InputError: a record that is not an ATIF trajectory, or a malformed step (see :func:`read_record`).
    """
    runs = []
    for label, value in source.records():
        ctx = Ctx(source.path, label)
        if not _is_atif(value):
            raise ctx.error("not an ATIF trajectory (schema_version ATIF-v1.N, agent and steps)")
        runs.append(read_record(value, ctx))
    return runs


READERS = [Reader(name=NAME, detect=detect, read=read, priority=15,
                  description="ATIF (Harbor's Agent Trajectory Interchange Format) trajectory.json, v1.0 to v1.8")]
