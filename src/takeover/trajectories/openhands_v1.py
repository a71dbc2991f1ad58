"""Reader of OpenHands 1.x (software-agent-sdk) runs: ``output.jsonl`` rows or a conversation folder.

Two native layouts (FORMATS.md, "OpenHands V1"):

- evaluation rows ``{instance_id, instruction, metadata{llm{model}}, history[], metrics, error, test_result,
  instance}`` with events tagged by ``kind`` (JSON Lines, one run per line);
- a persisted conversation folder: ``base_state.json`` (conversation ``id``, ``agent.llm.model``,
  ``workspace.working_dir``, ``stats``) plus ``events/event-NNNNN*.json``, one event per file, ordered by the
  number in the name. Such a folder is one run; the path given may be the folder or its ``events/``.

How events map (decided here):

- ``ActionEvent`` (source ``agent``) -> one action. Tools ``execute_bash``/``terminal`` -> ``command``;
  ``str_replace_editor``/``file_editor`` ``view`` -> ``file_view``, other editor commands -> ``file_edit``;
  ``finish`` -> ``finish``; ``think``, browser, task-tracker and other tools -> ``message``. ``thought`` is
  the text of ``thought[]`` (and ``reasoning_content``).
- ``ObservationEvent`` -> observation (source ``environment``) answering the action with its ``action_id``
  (or ``tool_call_id``); ``exit_code`` = ``observation.exit_code`` when set, else
  ``observation.metadata.exit_code``. A command that hit the shell's time limit (``observation.timeout``, or
  exit code -1 with the explanation in ``metadata.suffix``) gives a ``timed_out`` observation; a command the
  shell did not start (another was still running, several at once) is marked ``not_applied``; a shell action
  with ``is_input``, an empty command or a control key such as ``C-c`` is ``process_input``. ``AgentErrorEvent`` (a tool call the SDK rejected) is an observation
  of type ``message``; ``UserRejectObservation`` is an observation with source ``user``.
- A command's ``cwd`` is the shell's directory as last reported by a command observation
  (``observation.metadata.working_dir``), ``None`` before the first report.
- ``MessageEvent``: from the agent, a ``message`` action with its own LLM call; from the user, the first is
  the task prompt (when the row has no ``instruction``), later ones are observations with source ``user``.
- ``SystemPromptEvent``, condensation, pause and state-update events are not agent events.
- LLM calls: one per distinct ``llm_response_id`` of the actions (parallel tool calls share it), plus one per
  agent ``MessageEvent``. Usage comes from ``metrics.token_usages`` (rows) or
  ``stats.usage_to_metrics.*.token_usages`` (``base_state.json``) matched by ``response_id``; the sample
  rows have ``metrics: null``, so their calls have ``usage=None``.

``metadata`` holds each event's native ``id`` (``event_ids``) and each call's ``llm_response_id``
(``call_response_ids``). ``final_patch`` = ``test_result.git_patch`` when present; ``working_dir`` = ``base_state.workspace.working_dir``
or the first command observation's ``metadata.working_dir``; ``exit_status`` = the row's ``error`` or
``finished`` after a ``FinishAction``. In a conversation folder, a last event file that is not valid JSON (the
run was killed while the SDK wrote it) is left out and named in ``metadata["cut_last_line"]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from takeover.errors import InputError
from takeover.trajectories._common import (
    BASH_TOOLS,
    CUT_LAST_LINE,
    EDITOR_TOOLS,
    FINISH_TOOLS,
    OPENHANDS_NOT_RUN,
    Ctx,
    Reader,
    ReplayNeeds,
    Source,
    as_int,
    content_text,
    cut_line_note,
    editor_event_fields,
    mark_not_applied,
    openhands_process_input,
    openhands_timed_out,
    token_usage_record,
    uploaded_dir,
    user_reply,
)
from takeover.trajectories.events import Event, LLMCall, Trajectory, Usage

NAME = "openhands-v1"
#: Replays follow the SDK's ``file_editor`` (docs/protocol.md section 5.6).
REPLAY = ReplayNeeds(editor_flavor="openhands-sdk")
_EVENT_FILE = re.compile(r"^event-(\d+)")
_ACTION_KINDS = ("ActionEvent",)
_OBS_KINDS = ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation")


def _is_v1_event(ev: Any) -> bool:
    return (
        isinstance(ev, dict)
        and isinstance(ev.get("kind"), str)
        and ev["kind"].endswith(("Event", "Observation"))
    )


def detect(source: Source) -> bool:
    """Rows whose ``history`` events carry a ``kind`` such as ``ActionEvent``."""
    row = source.first()
    if not isinstance(row, dict) or not isinstance(row.get("history"), list):
        return False
    hist = row["history"]
    return bool(hist) and _is_v1_event(hist[0])


def _conversation_dir(path: Path) -> Path | None:
    if (path / "base_state.json").is_file() and (path / "events").is_dir():
        return path
    if path.name == "events" and (path.parent / "base_state.json").is_file():
        return path.parent
    return None


def detect_dir(source: Source) -> bool:
    """A folder with ``base_state.json`` and ``events/`` (or that ``events/`` folder itself)."""
    return _conversation_dir(source.path) is not None


def _thought(ev: dict) -> str | None:
    parts = [content_text(t.get("text") if isinstance(t, dict) else t) for t in ev.get("thought") or []]
    if isinstance(ev.get("reasoning_content"), str) and ev["reasoning_content"]:
        parts.append(ev["reasoning_content"])
    text = "\n".join(p for p in parts if p)
    return text or None


def _action_fields(ev: dict, ctx: Ctx) -> dict[str, Any]:
    action = ctx.need(ev, "action", dict)
    tool = ev.get("tool_name") if isinstance(ev.get("tool_name"), str) else ""
    kind = action.get("kind") if isinstance(action.get("kind"), str) else ""
    if tool in BASH_TOOLS or kind in ("ExecuteBashAction", "TerminalAction"):
        command = action.get("command") if isinstance(action.get("command"), str) else ""
        fields: dict[str, Any] = {"type": "command", "command": command, "text": command}
        if openhands_process_input(command, action.get("is_input")):
            fields["process_input"] = True
        return fields
    if tool in EDITOR_TOOLS or kind in ("FileEditorAction", "StrReplaceEditorAction"):
        fields = editor_event_fields(action)
        fields["text"] = f"{tool or kind} {action.get('command')} {action.get('path')}"
        return fields
    if tool in FINISH_TOOLS or kind == "FinishAction":
        message = action.get("message")
        return {"type": "finish", "text": message if isinstance(message, str) else ""}
    thought = action.get("thought")
    if isinstance(thought, str) and thought:
        return {"type": "message", "text": thought}
    args = {k: v for k, v in action.items() if k != "kind"}
    return {"type": "message", "text": f"{tool or kind} {json.dumps(args, ensure_ascii=False, default=str)}"}


def _observation_text(obs: dict) -> str:
    for key in ("output", "content", "message", "error"):
        value = obs.get(key)
        if value:
            return content_text(value)
    return ""


def _usage_index(entries: Any) -> dict[str, Usage]:
    return {
        entry["response_id"]: token_usage_record(entry)
        for entry in entries or []
        if isinstance(entry, dict) and isinstance(entry.get("response_id"), str)
    }


def build(
    history: list[dict],
    ctx: Ctx,
    *,
    source_path: str,
    instance_id: str | None,
    instruction: str | None,
    usage_by_response: dict[str, Usage],
    item_ctx: Callable[[int], Ctx] | None = None,
) -> Trajectory:
    """Events and LLM calls of one v1 run (rows and folders share this).

    ``item_ctx(i)`` names event ``i`` in errors: ``history[i]`` of a row by default, the event's own file
    for a conversation folder.
    """
    events: list[Event] = []
    calls: list[LLMCall] = []
    event_ids: list[str | None] = []  # the native ``id`` of each event
    call_ids: list[str | None] = []  # the ``llm_response_id`` of each call
    call_by_response: dict[str, int] = {}
    by_native_id: dict[str, int] = {}
    by_tool_call: dict[str, int] = {}
    task_prompt = instruction
    working_dir: str | None = uploaded_dir(instruction)
    finished = False
    last_action: int | None = None
    shell_cwd: str | None = None  # the persistent shell's directory, as last reported

    native_id: str | None = None
    for i, ev in enumerate(history):
        event_ids += [native_id] * (len(events) - len(event_ids))  # the events the last native event made
        native_id = ev.get("id") if isinstance(ev.get("id"), str) else None
        ectx = item_ctx(i) if item_ctx else ctx.item("history", i)
        kind = ectx.need(ev, "kind", str)
        source = ev.get("source")
        if kind in _ACTION_KINDS:
            fields = _action_fields(ev, ectx)
            rid = ev.get("llm_response_id")
            if isinstance(rid, str) and rid in call_by_response:
                call = call_by_response[rid]
            else:
                calls.append(
                    LLMCall(
                        index=len(calls), usage=usage_by_response.get(rid) if isinstance(rid, str) else None
                    )
                )
                call_ids.append(rid if isinstance(rid, str) else None)
                call = len(calls) - 1
                if isinstance(rid, str):
                    call_by_response[rid] = call
            if fields["type"] == "finish":
                finished = True
            thought = _thought(ev)
            text = fields.pop("text")
            if fields["type"] == "command":
                fields["cwd"] = shell_cwd
            event = Event(
                index=len(events),
                kind="action",
                source="agent",
                text=f"{thought}\n{text}" if thought else text,
                thought=thought,
                llm_call=call,
                **fields,
            )
            events.append(event)
            last_action = event.index
            if isinstance(ev.get("id"), str):
                by_native_id[ev["id"]] = event.index
            if isinstance(ev.get("tool_call_id"), str):
                by_tool_call[ev["tool_call_id"]] = event.index
            continue
        if kind in _OBS_KINDS:
            cause = by_native_id.get(ev.get("action_id")) if isinstance(ev.get("action_id"), str) else None
            if cause is None and isinstance(ev.get("tool_call_id"), str):
                cause = by_tool_call.get(ev["tool_call_id"])
            answered = events[cause] if cause is not None else None
            if kind == "ObservationEvent":
                obs = ectx.need(ev, "observation", dict)
                text = _observation_text(obs)
                exit_code = as_int(obs.get("exit_code"))
                meta = obs.get("metadata") if isinstance(obs.get("metadata"), dict) else {}
                if exit_code is None:
                    exit_code = as_int(meta.get("exit_code"))
                if isinstance(meta.get("working_dir"), str) and meta["working_dir"]:
                    shell_cwd = meta["working_dir"]
                    working_dir = working_dir or shell_cwd
                said = f"{text}\n{meta.get('suffix') or ''}"
                is_command = answered is not None and answered.type == "command"
                if is_command and OPENHANDS_NOT_RUN.search(said):
                    mark_not_applied(answered)
                events.append(
                    Event(
                        index=len(events),
                        kind="observation",
                        source="environment",
                        type=answered.type if answered is not None else "message",
                        text=text,
                        cause=cause,
                        exit_code=exit_code if is_command else None,
                        timed_out=is_command and (obs.get("timeout") is True or openhands_timed_out(exit_code, said)),
                    )
                )
            else:
                text = content_text(ev.get("error") or ev.get("rejection_reason") or ev.get("message"))
                events.append(
                    Event(
                        index=len(events),
                        kind="observation",
                        source="user" if kind == "UserRejectObservation" else "environment",
                        type="message",
                        text=text,
                        cause=cause,
                    )
                )
            continue
        if kind == "MessageEvent":
            message = ev.get("llm_message") if isinstance(ev.get("llm_message"), dict) else {}
            text = content_text(message.get("content"))
            if source == "agent":
                rid = ev.get("llm_response_id")
                calls.append(
                    LLMCall(
                        index=len(calls), usage=usage_by_response.get(rid) if isinstance(rid, str) else None
                    )
                )
                call_ids.append(rid if isinstance(rid, str) else None)
                events.append(
                    Event(
                        index=len(events),
                        kind="action",
                        source="agent",
                        type="message",
                        text=text,
                        llm_call=len(calls) - 1,
                    )
                )
                last_action = len(events) - 1
            elif task_prompt is None:
                task_prompt = text
                working_dir = working_dir or uploaded_dir(text)
            else:
                events.append(user_reply(events, text, last_action))
            continue
        # SystemPromptEvent, Condensation*, PauseEvent, ConversationStateUpdateEvent...: not agent events.
    event_ids += [native_id] * (len(events) - len(event_ids))

    return Trajectory(
        format=NAME,
        source_path=source_path,
        record=ctx.record,
        instance_id=instance_id,
        exit_status="finished" if finished else None,
        task_prompt=task_prompt,
        working_dir=working_dir,
        events=events,
        llm_calls=calls,
        metadata={"event_ids": event_ids, "call_response_ids": call_ids},
    )


def read(source: Source) -> list[Trajectory]:
    """Every row of an OpenHands 1.x ``output.jsonl``."""
    out = []
    for label, row in source.records():
        ctx = Ctx(source.path, label or "index 0")
        if not isinstance(row, dict):
            raise ctx.error(f"expected a JSON object, got {type(row).__name__}")
        instance_id = ctx.need(row, "instance_id", str)
        history = ctx.list_of_objects(row, "history")
        metrics = row.get("metrics") if isinstance(row.get("metrics"), dict) else {}
        traj = build(
            history,
            ctx,
            source_path=str(source.path),
            instance_id=instance_id,
            instruction=row.get("instruction") if isinstance(row.get("instruction"), str) else None,
            usage_by_response=_usage_index(metrics.get("token_usages")),
        )
        meta = row.get("metadata") if isinstance(row.get("metadata"), dict) else {}
        llm = meta.get("llm") if isinstance(meta.get("llm"), dict) else {}
        test_result = row.get("test_result") if isinstance(row.get("test_result"), dict) else {}
        error = row.get("error")
        traj.model = llm.get("model") if isinstance(llm.get("model"), str) else None
        traj.final_patch = (
            test_result.get("git_patch") if isinstance(test_result.get("git_patch"), str) else None
        )
        if error:
            traj.exit_status = str(error).split(":", 1)[0][:80]
        traj.metadata.update({"error": error, "dataset": meta.get("dataset")})
        out.append(traj)
    return out


def _event_files(events_dir: Path) -> list[Path]:
    files = [p for p in events_dir.iterdir() if p.is_file() and p.suffix == ".json"]

    def key(p: Path) -> tuple[int, str]:
        m = _EVENT_FILE.match(p.name)
        return (int(m.group(1)) if m else 1 << 62, p.name)

    return sorted(files, key=key)


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(
            path,
            f"not valid JSON: {exc.msg} at column {exc.colno} (truncated or malformed file)",
            record=f"line {exc.lineno}",
        ) from None
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 text (byte {exc.start})") from None


def read_dir(source: Source) -> list[Trajectory]:
    """One persisted conversation folder (``base_state.json`` + ``events/``) as one run."""
    root = _conversation_dir(source.path)
    assert root is not None
    state = _load_json(root / "base_state.json")
    if not isinstance(state, dict):
        raise InputError(root / "base_state.json", "expected a JSON object")
    files = _event_files(root / "events")
    history = []
    cut = None
    for n, f in enumerate(files):
        try:
            ev = _load_json(f)
        except InputError as exc:
            # The SDK writes one file per event as the agent works: a run killed mid-write ends in a cut one.
            if n == len(files) - 1 and n > 0 and "not valid JSON" in exc.reason:
                cut, files = exc, files[:-1]
                break
            raise
        if not isinstance(ev, dict):
            raise InputError(f, f"expected a JSON object, got {type(ev).__name__}")
        history.append(ev)
    usage: dict[str, Usage] = {}
    stats = state.get("stats") if isinstance(state.get("stats"), dict) else {}
    for metrics in (stats.get("usage_to_metrics") or {}).values():
        if isinstance(metrics, dict):
            usage.update(_usage_index(metrics.get("token_usages")))
    ctx = Ctx(root, None)
    traj = build(
        history,
        ctx,
        source_path=str(root),
        instance_id=state.get("instance_id") if isinstance(state.get("instance_id"), str) else None,
        instruction=None,
        usage_by_response=usage,
        item_ctx=lambda i: Ctx(files[i], None),
    )
    agent = state.get("agent") if isinstance(state.get("agent"), dict) else {}
    llm = agent.get("llm") if isinstance(agent.get("llm"), dict) else {}
    workspace = state.get("workspace") if isinstance(state.get("workspace"), dict) else {}
    traj.model = llm.get("model") if isinstance(llm.get("model"), str) else None
    if isinstance(workspace.get("working_dir"), str):
        traj.working_dir = workspace["working_dir"]
    status = state.get("execution_status") or state.get("agent_status")
    if isinstance(status, str) and not traj.exit_status:
        traj.exit_status = status
    traj.metadata.update({"conversation_id": state.get("id"), "event_files": len(files)})
    if cut is not None:
        traj.metadata[CUT_LAST_LINE] = cut_line_note(cut, len(files), "event file")
    return [traj]


READERS = [
    Reader(name=NAME, detect=detect, read=read, priority=35, description="OpenHands 1.x (SDK) output.jsonl",
           replay=REPLAY),
    Reader(
        name=NAME + "-dir",
        detect=detect_dir,
        read=read_dir,
        priority=35,
        directories=True,
        description="OpenHands 1.x conversation folder (base_state.json + events/)",
        replay=REPLAY,
    ),
]
