"""Reader of OpenHands 0.x evaluation output (``output.jsonl``: one run per line, events in ``history``).

Native layout (FORMATS.md, "OpenHands 0.x"): a row ``{instance_id, instruction, instance, metadata,
test_result{git_patch}, metrics{token_usages[], ...}, error, history[]}``; each history event has an integer
``id``, a ``source`` and either ``action`` + ``args`` or ``observation`` + ``cause`` + ``content`` + ``extras``.

How history events map to events (decided here):

- Not agent events: ``system`` and ``recall`` actions, ``recall``/``agent_state_changed``/``null``/condensation
  observations, and the first user ``message`` (it is :attr:`Trajectory.task_prompt`; the row's
  ``instruction`` is used when there is none). A later user ``message`` (a harness or human reply) is an
  observation with source ``user``.
- Actions (source ``agent``): ``run``/``run_ipython`` -> ``command`` (an IPython cell is marked
  ``ipython``; a ``run`` with ``is_input``, an empty command or a control key such as ``C-c`` is input to
  the running process, ``process_input``); ``read`` -> ``file_view`` (path,
  ``view_range`` or ``start``/``end``); ``edit``/``write`` -> ``file_edit`` (path, ``command`` as the edit verb,
  ``old_str``/``new_str``/``file_text``/``insert_line``); ``finish`` -> ``finish``; ``message``/``think`` and
  anything else -> ``message``.
- Every other observation (``run``, ``read``, ``edit``, ``think``, ``error``, ...) is an observation event,
  source ``environment``, answering the action whose ``id`` is its ``cause`` (an ``error`` observation with no
  cause answers a tool call the model got wrong; it is counted, with ``cause`` ``None``). ``exit_code`` is
  ``extras.metadata.exit_code`` (older builds: ``extras.exit_code``). The shell's timeouts (exit code -1, the
  explanation in ``extras.metadata.suffix``, not in the content; the SIGINT message of older builds) give a
  ``timed_out`` observation; a command the shell did not start (another was still running, or several
  commands at once) is marked ``not_applied``. Early builds that stored
  ``history`` as ``[action, observation]`` pairs are flattened first.
- A command's ``cwd`` is the persistent shell's directory as last reported by a command observation
  (``extras.metadata.working_dir``), ``None`` before the first report.
- LLM calls: the entries of ``metrics.token_usages`` in order (one per ``response_id``; usage from them,
  cached tokens = ``cache_read_tokens``); when a row has none, one call per distinct
  ``tool_call_metadata.model_response.id`` of the actions, with that response's ``usage``. Actions produced
  by the same response (parallel tool calls) share the call; an action without ``tool_call_metadata`` has
  ``llm_call`` ``None``.

``final_patch`` = ``test_result.git_patch``; ``working_dir`` = the folder in the instruction's
``<uploaded_files>`` block, else the first command's ``extras.metadata.working_dir``; ``exit_status`` =
the exception name of the row's ``error`` when set (full text in ``metadata["error"]``), ``finished`` when the agent sent ``finish``, else ``None``.
"""

from __future__ import annotations

from typing import Any

from takeover.llm.usage import usage_from_payload
from takeover.trajectories._common import (
    OPENHANDS_NOT_RUN,
    Ctx,
    Reader,
    ReplayNeeds,
    Source,
    as_int,
    content_text,
    mark_not_applied,
    openhands_process_input,
    openhands_timed_out,
    token_usage_record,
    uploaded_dir,
    user_reply,
)
from takeover.trajectories.events import Event, LLMCall, Trajectory

NAME = "openhands-v0"
_SKIP_ACTIONS = frozenset(
    {"system", "recall", "change_agent_state", "condensation", "condensation_request", "null"}
)
_SKIP_OBSERVATIONS = frozenset({"recall", "agent_state_changed", "null", "condense", "condensation"})


def _is_v0_row(row: Any) -> bool:
    if not isinstance(row, dict) or not isinstance(row.get("history"), list):
        return False
    hist = row["history"]
    if not hist:
        return "instruction" in row and "metadata" in row
    first = hist[0]
    if isinstance(first, list) and first:  # early 0.x: [action, observation] pairs
        first = first[0]
    return isinstance(first, dict) and ("action" in first or "observation" in first) and "kind" not in first


def detect(source: Source) -> bool:
    """Rows (JSON Lines, or one JSON object) with ``history`` events that carry ``action``/``observation``."""
    return _is_v0_row(source.first())


def _action_fields(action: str, args: dict, message: str) -> dict[str, Any]:
    thought = args.get("thought") if isinstance(args.get("thought"), str) and args.get("thought") else None
    if action in ("run", "run_ipython"):
        command = args.get("command") if action == "run" else args.get("code")
        command = command if isinstance(command, str) else ""
        fields = {"type": "command", "command": command, "thought": thought}
        if action == "run_ipython":
            fields["ipython"] = True
        elif openhands_process_input(command, args.get("is_input")):
            fields["process_input"] = True
        return fields
    if action == "read":
        fields: dict[str, Any] = {"type": "file_view", "path": args.get("path"), "thought": thought}
        vr = args.get("view_range")
        if isinstance(vr, list) and len(vr) == 2 and all(as_int(v) is not None for v in vr):
            fields["view_range"] = [as_int(v) for v in vr]
        else:
            start, end = as_int(args.get("start")), as_int(args.get("end"))
            if start is not None and end is not None and (start, end) != (0, -1):
                fields["view_range"] = [start, end]
        return fields
    if action in ("edit", "write"):
        fields = {"type": "file_edit", "path": args.get("path"), "thought": thought}
        verb = args.get("command")
        fields["edit"] = (
            verb if isinstance(verb, str) and verb else ("write" if action == "write" else "edit")
        )
        for src, dst in (("old_str", "old_text"), ("new_str", "new_text"), ("file_text", "file_text")):
            if isinstance(args.get(src), str):
                fields[dst] = args[src]
        if action == "write" and isinstance(args.get("content"), str):
            fields["file_text"] = args["content"]
        if as_int(args.get("insert_line")) is not None:
            fields["insert_line"] = as_int(args["insert_line"])
        return fields
    if action == "finish":
        final = args.get("final_thought") or args.get("thought")
        return {"type": "finish", "thought": final if isinstance(final, str) and final else None}
    return {"type": "message", "thought": thought}


def _error_status(error: Any) -> str:
    """``RuntimeError: Agent reached maximum iteration ...`` -> ``RuntimeError`` (the full text stays in metadata)."""
    text = str(error).strip()
    head = text.split(":", 1)[0]
    return head if head.isidentifier() else text.splitlines()[0][:80]


def read_row(row: dict, ctx: Ctx, source_path: str) -> Trajectory:
    """One ``output.jsonl`` row as a :class:`Trajectory` (see the module docstring)."""
    instance_id = ctx.need(row, "instance_id", str)
    raw_history = ctx.need(row, "history", list)
    if raw_history and all(isinstance(pair, list) for pair in raw_history):
        # Early 0.x builds stored history as [action, observation] pairs: flatten them in order.
        row = {**row, "history": [ev for pair in raw_history for ev in pair if isinstance(ev, dict) and ev]}
    history = ctx.list_of_objects(row, "history")
    metrics = row.get("metrics") if isinstance(row.get("metrics"), dict) else {}
    calls: list[LLMCall] = []
    call_by_response: dict[str, int] = {}
    for entry in metrics.get("token_usages") or []:
        if not isinstance(entry, dict):
            continue
        rid = entry.get("response_id")
        if isinstance(rid, str) and rid in call_by_response:
            continue
        model = entry.get("model") if isinstance(entry.get("model"), str) else None
        calls.append(LLMCall(index=len(calls), usage=token_usage_record(entry), model=model))
        if isinstance(rid, str) and rid:
            call_by_response[rid] = len(calls) - 1
    use_responses = not calls

    events: list[Event] = []
    by_native_id: dict[Any, int] = {}
    task_prompt: str | None = None
    working_dir = uploaded_dir(row.get("instruction"))
    finished = False
    last_action: int | None = None
    shell_cwd: str | None = None  # the persistent shell's directory, as last reported

    for i, ev in enumerate(history):
        ectx = ctx.item("history", i)
        source = ev.get("source")
        if "action" in ev:
            action = ectx.need(ev, "action", str)
            if action in _SKIP_ACTIONS:
                continue
            message = content_text(ev.get("message"))
            if action == "message" and source == "user":
                if task_prompt is None:
                    task_prompt = content_text((ev.get("args") or {}).get("content")) or message
                    continue
                events.append(user_reply(events, message, last_action))
                continue
            args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
            fields = _action_fields(action, args, message)
            llm_call = None
            tcm = ev.get("tool_call_metadata")
            if isinstance(tcm, dict):
                response = tcm.get("model_response") if isinstance(tcm.get("model_response"), dict) else {}
                rid = response.get("id")
                if isinstance(rid, str) and rid in call_by_response:
                    llm_call = call_by_response[rid]
                elif use_responses:
                    model = response.get("model") if isinstance(response.get("model"), str) else None
                    calls.append(
                        LLMCall(index=len(calls), usage=usage_from_payload(response.get("usage")), model=model)
                    )
                    llm_call = len(calls) - 1
                    if isinstance(rid, str) and rid:
                        call_by_response[rid] = llm_call
            if fields["type"] == "finish":
                finished = True
            text = message
            if fields["type"] == "command" and fields.get("thought"):
                text = f"{fields['thought']}\n{message}"
            if fields["type"] == "command":
                fields["cwd"] = shell_cwd
            event = Event(
                index=len(events), kind="action", source="agent", text=text, llm_call=llm_call, **fields
            )
            events.append(event)
            last_action = event.index
            if "id" in ev:
                by_native_id[ev["id"]] = event.index
            continue
        if "observation" in ev:
            observation = ectx.need(ev, "observation", str)
            if observation in _SKIP_OBSERVATIONS:
                continue
            extras = ev.get("extras") if isinstance(ev.get("extras"), dict) else {}
            cause = by_native_id.get(ev.get("cause")) if ev.get("cause") is not None else None
            exit_code = None
            meta = extras.get("metadata")
            if isinstance(meta, dict):
                exit_code = as_int(meta.get("exit_code"))
                if isinstance(meta.get("working_dir"), str) and meta["working_dir"]:
                    shell_cwd = meta["working_dir"]
                    working_dir = working_dir or shell_cwd
            if exit_code is None:
                exit_code = as_int(extras.get("exit_code"))
            answered = events[cause] if cause is not None else None
            text = content_text(ev.get("content")) or content_text(ev.get("message"))
            said = f"{text}\n{meta.get('suffix') or ''}" if isinstance(meta, dict) else text
            if answered is not None and answered.type == "command" and OPENHANDS_NOT_RUN.search(said):
                mark_not_applied(answered)
            events.append(
                Event(
                    index=len(events),
                    kind="observation",
                    source="environment",
                    type=answered.type if answered is not None else "message",
                    text=text,
                    cause=cause,
                    exit_code=exit_code if observation in ("run", "run_ipython") else None,
                    timed_out=observation == "run" and openhands_timed_out(exit_code, said),
                )
            )
            continue
        raise ectx.error("event has neither 'action' nor 'observation'", "action")

    metadata = row.get("metadata") if isinstance(row.get("metadata"), dict) else {}
    llm_config = metadata.get("llm_config") if isinstance(metadata.get("llm_config"), dict) else {}
    test_result = row.get("test_result") if isinstance(row.get("test_result"), dict) else {}
    error = row.get("error")
    if task_prompt is None and isinstance(row.get("instruction"), str):
        task_prompt = row["instruction"]
    patch = test_result.get("git_patch")
    return Trajectory(
        format=NAME,
        format_version=metadata.get("git_commit") if isinstance(metadata.get("git_commit"), str) else None,
        source_path=source_path,
        record=ctx.record,
        instance_id=instance_id,
        model=llm_config.get("model") if isinstance(llm_config.get("model"), str) else None,
        exit_status=_error_status(error) if error else ("finished" if finished else None),
        task_prompt=task_prompt,
        final_patch=patch if isinstance(patch, str) else None,
        working_dir=working_dir,
        events=events,
        llm_calls=calls,
        metadata={"agent_class": metadata.get("agent_class"), "error": error},
    )


def read(source: Source) -> list[Trajectory]:
    """Every row of an OpenHands 0.x ``output.jsonl`` (one :class:`Trajectory` per line)."""
    out = []
    for label, row in source.records():
        ctx = Ctx(source.path, label or "index 0")
        if not isinstance(row, dict):
            raise ctx.error(f"expected a JSON object, got {type(row).__name__}")
        out.append(read_row(row, ctx, str(source.path)))
    return out


READERS = [Reader(name=NAME, detect=detect, read=read, priority=30, description="OpenHands 0.x output.jsonl",
                  replay=ReplayNeeds(editor_flavor="openhands"))]
