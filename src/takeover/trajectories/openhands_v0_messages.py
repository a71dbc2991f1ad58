"""Reader of the OpenHands 0.x LLM-messages form (SWE-Gym ``OpenHands-Sampled-Trajectories``).

Native layout (FORMATS.md, "OpenHands LLM-messages form"): a JSON list (or JSON Lines) of runs
``{instance_id ("<id>_<k>"), run_id, resolved, messages[], tools[], test_result{git_patch, ...}}``;
``messages`` are OpenAI chat messages.

How messages map to events (decided here):

- The ``system`` message and the first ``user`` message (the task, :attr:`Trajectory.task_prompt`) are not
  events.
- Every ``assistant`` message is one LLM call. The format stores no usage, so each call has
  ``usage=None`` (token sums are 0 and say nothing about the run's cost).
- Each tool call of an assistant message is one action: ``execute_bash`` -> ``command`` (with ``is_input``
  ``"true"``, an empty command or a control key such as ``ctrl+c``/``C-c``: ``process_input``); ``execute_ipython_cell`` -> ``command``
  marked ``ipython`` (``command`` = its ``code``);
  ``str_replace_editor`` ``view`` -> ``file_view``, its other commands -> ``file_edit`` (path, verb, old/new/file
  text, insert line); ``finish`` -> ``finish``; ``think`` and unknown tools -> ``message``. A tool call whose
  ``arguments`` are not valid JSON is a ``message`` action with ``format_error=True``. An assistant message
  without tool calls is one ``message`` action.
- Each ``tool`` message is an observation (source ``environment``) answering the action with its
  ``tool_call_id``; ``exit_code`` is parsed from the text ``[Command finished with exit code N]`` (the only
  place the format has it). Exit code -1 (the command was still running after the shell's soft limit) or
  a timeout sentence give a ``timed_out`` observation; a command the
  shell did not start (another was still running, several at once) is marked ``not_applied``. A later ``user`` message (the harness's "Please continue ...") is an
  observation with source ``user`` answering the preceding action.

``instance_id`` drops SWE-Gym's sample suffix ``_<k>`` (kept with ``run_id`` and ``resolved`` in
``metadata``); ``final_patch`` = ``test_result.git_patch``; ``working_dir`` = the ``<uploaded_files>`` folder.
"""

from __future__ import annotations

import json
import re
from typing import Any

from takeover.trajectories._common import (
    BASH_TOOLS,
    EDITOR_TOOLS,
    FINISH_TOOLS,
    IPYTHON_TOOLS,
    OPENHANDS_NOT_RUN,
    Ctx,
    Reader,
    ReplayNeeds,
    Source,
    content_text,
    editor_event_fields,
    mark_not_applied,
    openhands_process_input,
    openhands_timed_out,
    uploaded_dir,
    user_reply,
)
from takeover.trajectories.events import Event, LLMCall, Trajectory

NAME = "openhands-v0-messages"
_EXIT = re.compile(r"\[Command finished with exit code (-?\d+)\]")
_SUFFIX = re.compile(r"^(.+)_(\d+)$")


def _is_run(row: Any) -> bool:
    return (
        isinstance(row, dict)
        and isinstance(row.get("messages"), list)
        and "instance_id" in row
        and "history" not in row
        and "trajectory_format" not in row
        and any(
            isinstance(m, dict) and m.get("role") == "tool" or (isinstance(m, dict) and m.get("tool_calls"))
            for m in row["messages"][:6]
        )
    )


def detect(source: Source) -> bool:
    """A list (or JSON Lines) of runs with ``instance_id`` and OpenAI chat ``messages`` using tool calls."""
    return _is_run(source.first())


def _split_instance_id(native: str) -> str:
    m = _SUFFIX.match(native)
    return m.group(1) if m else native


def _tool_action(name: str, arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, str):
        try:
            args = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return {"type": "message", "format_error": True, "text": f"{name}({arguments})"}
    else:
        args = arguments if isinstance(arguments, dict) else {}
    if not isinstance(args, dict):
        return {"type": "message", "format_error": True, "text": f"{name}({arguments})"}
    if name in BASH_TOOLS:
        command = args.get("command") if isinstance(args.get("command"), str) else ""
        fields: dict[str, Any] = {"type": "command", "command": command, "text": command}
        if openhands_process_input(command, args.get("is_input")):
            fields["process_input"] = True
        return fields
    if name in IPYTHON_TOOLS:
        code = args.get("code") if isinstance(args.get("code"), str) else ""
        return {"type": "command", "command": code, "text": code, "ipython": True}
    if name in EDITOR_TOOLS:
        fields = editor_event_fields(args)
        fields["text"] = f"{name} {json.dumps(args, ensure_ascii=False)}"
        return fields
    if name in FINISH_TOOLS:
        message = args.get("message") or args.get("final_thought")
        return {"type": "finish", "text": message if isinstance(message, str) else ""}
    thought = args.get("thought") if isinstance(args.get("thought"), str) else None
    return {"type": "message", "text": thought or f"{name} {json.dumps(args, ensure_ascii=False)}"}


def read_run(row: dict, ctx: Ctx, source_path: str) -> Trajectory:
    """One run of the messages form (see the module docstring)."""
    native_id = ctx.need(row, "instance_id", str)
    messages = ctx.list_of_objects(row, "messages")
    events: list[Event] = []
    calls: list[LLMCall] = []
    by_tool_call: dict[str, int] = {}
    task_prompt: str | None = None
    last_action: int | None = None
    finished = False

    for i, msg in enumerate(messages):
        mctx = ctx.item("messages", i)
        role = mctx.need(msg, "role", str)
        if role == "system":
            continue
        if role == "user":
            text = content_text(msg.get("content"))
            if task_prompt is None:
                task_prompt = text
                continue
            events.append(user_reply(events, text, last_action))
            continue
        if role == "assistant":
            calls.append(LLMCall(index=len(calls), usage=None))
            call = len(calls) - 1
            text = content_text(msg.get("content"))
            tool_calls = msg.get("tool_calls") or []
            if not isinstance(tool_calls, list):
                raise mctx.error("expected a list of tool calls", "tool_calls")
            if not tool_calls:
                events.append(
                    Event(
                        index=len(events),
                        kind="action",
                        source="agent",
                        type="message",
                        text=text,
                        llm_call=call,
                    )
                )
                last_action = len(events) - 1
                continue
            for j, tc in enumerate(tool_calls):
                tctx = Ctx(mctx.path, mctx.record, mctx.field(f"tool_calls[{j}]"))
                fn = tctx.need(tc, "function", dict)
                name = Ctx(tctx.path, tctx.record, tctx.field("function")).need(fn, "name", str)
                fields = _tool_action(name, fn.get("arguments"))
                action_text = fields.pop("text", "")
                if fields["type"] == "finish":
                    finished = True
                event = Event(
                    index=len(events),
                    kind="action",
                    source="agent",
                    text=(f"{text}\n{action_text}" if text else action_text),
                    thought=text or None,
                    llm_call=call,
                    **fields,
                )
                events.append(event)
                last_action = event.index
                if isinstance(tc.get("id"), str):
                    by_tool_call[tc["id"]] = event.index
            continue
        if role == "tool":
            text = content_text(msg.get("content"))
            cause = (
                by_tool_call.get(msg.get("tool_call_id"))
                if isinstance(msg.get("tool_call_id"), str)
                else None
            )
            answered = events[cause] if cause is not None else None
            is_command = answered is not None and answered.type == "command"
            m = _EXIT.search(text) if is_command else None
            if is_command and OPENHANDS_NOT_RUN.search(text):
                mark_not_applied(answered)
            events.append(
                Event(
                    index=len(events),
                    kind="observation",
                    source="environment",
                    type=answered.type if answered is not None else "message",
                    text=text,
                    cause=cause,
                    exit_code=int(m.group(1)) if m else None,
                    timed_out=is_command and not answered.ipython and openhands_timed_out(int(m.group(1)) if m else None, text),
                )
            )
            continue
        raise mctx.error(f"unknown role {role!r} (expected system, user, assistant or tool)", "role")

    test_result = row.get("test_result") if isinstance(row.get("test_result"), dict) else {}
    patch = test_result.get("git_patch")
    return Trajectory(
        format=NAME,
        source_path=source_path,
        record=ctx.record,
        instance_id=_split_instance_id(native_id),
        exit_status="finished" if finished else None,
        task_prompt=task_prompt,
        final_patch=patch if isinstance(patch, str) else None,
        working_dir=uploaded_dir(task_prompt),
        events=events,
        llm_calls=calls,
        metadata={
            "native_instance_id": native_id,
            "run_id": row.get("run_id"),
            "resolved": row.get("resolved"),
        },
    )


def read(source: Source) -> list[Trajectory]:
    """Every run in the file (a JSON list: records ``index N``; JSON Lines: ``line N``)."""
    out = []
    for label, row in source.records():
        ctx = Ctx(source.path, label or "index 0")
        if not isinstance(row, dict):
            raise ctx.error(f"expected a JSON object, got {type(row).__name__}")
        out.append(read_run(row, ctx, str(source.path)))
    return out


READERS = [
    Reader(
        name=NAME, detect=detect, read=read, priority=40, description="OpenHands 0.x LLM messages (SWE-Gym)",
        replay=ReplayNeeds(editor_flavor="openhands"),
    )
]
