"""Reader of mini-swe-agent trajectories (``trajectory_format`` ``mini-swe-agent-1`` and ``mini-swe-agent-1.1``).

Native layout: one JSON object ``{instance_id?, trajectory_format, info{exit_status, submission, model_stats,
mini_version, config}, messages[]}`` per run (FORMATS.md, "mini-swe-agent").

How messages map to events (decided here; docs/protocol.md section 1):

- ``messages[0]`` (``system``) and ``messages[1]`` (the first ``user`` message, the task) are not events;
  the latter is :attr:`Trajectory.task_prompt`.
- Every ``assistant`` message is one LLM call (usage from ``extra.response.usage``, ``None`` when absent)
  and yields its actions, all pointing at that call:

  * 1.1 files list the harness's own parse in ``extra.actions`` (one action per entry; tool-calling runs may
    have several); 1.0 files have none, so the text is parsed with the configured ``action_regex``
    (default: a ```` ```bash ```` block). A message with exactly one command gives one ``command`` action;
  * a command whose first line echoes ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` is the submission:
    type ``finish`` (``command`` keeps the command text);
  * a message with no command or several (a *format error*: the harness refuses to run anything) gives one
    ``message`` action with ``format_error=True``, and its LLM call is marked ``format_error``.
- Every later ``user`` or ``tool`` message is one observation answering the oldest unanswered action
  (``tool`` messages by ``tool_call_id``): source ``user`` when it answers a format error or is another
  harness interruption (``extra.interrupt_type``), else ``environment``. ``exit_code`` comes from
  ``extra.returncode`` or the ``<returncode>N</returncode>`` tag; a timeout message has none.
- 1.1 files do not store the assistant message of a format error: the harness's reply carries the model's
  text and response in ``extra``; the reader rebuilds the ``message`` action and its LLM call from them,
  so both versions count format-error turns the same way.
- The bare submission diff is an observation answering the ``finish`` action: in 1.0 it is the last ``user``
  message; in 1.1 it is the ``exit`` message of a ``Submitted`` run. Other ``exit`` messages (limits,
  errors) are not events; their status is :attr:`Trajectory.exit_status`.

``final_patch`` = ``info.submission``; ``working_dir`` = ``info.config.environment.cwd`` (``/testbed`` in
SWE-bench runs), which is also every command's ``cwd`` (each command runs in a fresh shell there).
"""

from __future__ import annotations

import json
import re
from typing import Any

from takeover.trajectories._common import Ctx, Reader, Source, as_int, content_text, openai_usage
from takeover.trajectories.events import Event, LLMCall, Trajectory

NAME = "mini-swe-agent"
_DEFAULT_REGEXES = (
    r"```bash\s*\n(.*?)\n```",
    r"```mswea_bash_command\s*\n(.*?)\n```",
    r"<mswea_bash_command>(.*?)</mswea_bash_command>",
)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_SUBMIT_MARKERS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")


def detect(source: Source) -> bool:
    """A single JSON object with ``messages`` and a ``mini-swe-agent*`` format tag or ``info.mini_version``."""
    if source.parsed[0] != "document":
        return False
    doc = source.parsed[1]
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        return False
    tag = doc.get("trajectory_format")
    if isinstance(tag, str) and tag.startswith("mini-swe-agent"):
        return True
    info = doc.get("info")
    return isinstance(info, dict) and "mini_version" in info


def _config_regex(info: dict) -> str | None:
    config = info.get("config") if isinstance(info.get("config"), dict) else {}
    for section in ("agent", "model"):
        part = config.get(section)
        if isinstance(part, dict) and isinstance(part.get("action_regex"), str):
            return part["action_regex"]
    return None


def _parse_commands(text: str, regex: str | None) -> list[str]:
    if regex:
        return [c.strip() for c in re.findall(regex, text, re.DOTALL)]
    for pattern in _DEFAULT_REGEXES:
        found = re.findall(pattern, text, re.DOTALL)
        if found:
            return [c.strip() for c in found]
    return []


def _thought(text: str) -> str | None:
    head = re.split(r"```|<mswea_bash_command>", text, maxsplit=1)[0].strip()
    return head or None


def _is_submit(command: str) -> bool:
    first = command.lstrip().split("\n", 1)[0]
    return any(marker in first for marker in _SUBMIT_MARKERS)


def _toolcall_commands(message: dict) -> list[dict] | None:
    calls = message.get("tool_calls")
    if not isinstance(calls, list) or not calls:
        return None
    out = []
    for call in calls:
        fn = call.get("function") if isinstance(call, dict) else None
        args: Any = fn.get("arguments") if isinstance(fn, dict) else None
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                args = None
        command = args.get("command") if isinstance(args, dict) else None
        out.append({"command": command if isinstance(command, str) else None, "tool_call_id": call.get("id")})
    return out


def read(source: Source) -> list[Trajectory]:
    """Read one mini-swe-agent run (see the module docstring for the mapping)."""
    doc = source.parsed[1]
    ctx = Ctx(source.path, None)
    messages = ctx.list_of_objects(doc, "messages")
    info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
    regex = _config_regex(info)
    config = info.get("config") if isinstance(info.get("config"), dict) else {}
    env = config.get("environment") if isinstance(config.get("environment"), dict) else {}
    # mini-swe-agent runs every command in a fresh shell started in the configured cwd.
    cwd = env.get("cwd") if isinstance(env.get("cwd"), str) and env.get("cwd") else None
    events: list[Event] = []
    calls: list[LLMCall] = []
    pending: list[int] = []  # action event indices awaiting an observation, oldest first
    by_tool_call: dict[str, int] = {}
    task_prompt: str | None = None
    first_user_seen = False

    def add_call(response: dict | None, format_error: bool = False) -> int:
        model = response.get("model") if response and isinstance(response.get("model"), str) else None
        calls.append(
            LLMCall(
                index=len(calls),
                usage=openai_usage(response.get("usage")) if response else None,
                model=model,
                format_error=format_error,
            )
        )
        return len(calls) - 1

    def add_action(**fields: Any) -> int:
        event = Event(index=len(events), kind="action", source="agent", **fields)
        events.append(event)
        pending.append(event.index)
        return event.index

    for i, msg in enumerate(messages):
        mctx = ctx.item("messages", i)
        role = mctx.need(msg, "role", str)
        extra = msg.get("extra") if isinstance(msg.get("extra"), dict) else {}
        if role == "system":
            continue
        if role == "user" and not first_user_seen:
            first_user_seen = True
            task_prompt = content_text(msg.get("content"))
            continue
        if role == "assistant":
            text = content_text(msg.get("content"))
            response = extra.get("response") if isinstance(extra.get("response"), dict) else None
            if isinstance(extra.get("actions"), list):
                actions = [a for a in extra["actions"] if isinstance(a, dict)]
            else:
                actions = _toolcall_commands(msg)
                if actions is None:
                    actions = [{"command": c} for c in _parse_commands(text, regex)]
                    if len(actions) != 1:
                        actions = None  # format error: the harness ran nothing
            if not actions or any(not isinstance(a.get("command"), str) for a in actions):
                call = add_call(response, format_error=True)
                add_action(
                    type="message", text=text, thought=_thought(text), llm_call=call, format_error=True
                )
                continue
            call = add_call(response)
            thought = _thought(text) if text else None
            for action in actions:
                command = action["command"]
                # Tool-calling runs keep the command outside the text; the event text shows both.
                event_text = text if command in text else f"{text}\n\n{command}".strip()
                idx = add_action(
                    type="finish" if _is_submit(command) else "command",
                    text=event_text,
                    thought=thought,
                    command=command,
                    cwd=cwd,
                    llm_call=call,
                )
                if isinstance(action.get("tool_call_id"), str):
                    by_tool_call[action["tool_call_id"]] = idx
            continue
        if role in ("user", "tool"):
            text = content_text(msg.get("content"))
            interrupt = extra.get("interrupt_type")
            if interrupt == "FormatError" and not (pending and events[pending[0]].format_error):
                # 1.1: the rejected assistant message is not stored; rebuild it from the harness's reply.
                response = extra.get("response") if isinstance(extra.get("response"), dict) else None
                model_text = extra.get("model_response")
                if not isinstance(model_text, str) and response:
                    choices = response.get("choices") or [{}]
                    model_text = content_text(((choices[0] or {}).get("message") or {}).get("content"))
                call = add_call(response, format_error=True)
                add_action(type="message", text=model_text or "", llm_call=call, format_error=True)
            cause = None
            tool_call_id = msg.get("tool_call_id")
            if isinstance(tool_call_id, str) and tool_call_id in by_tool_call:
                cause = by_tool_call.pop(tool_call_id)
                if cause in pending:
                    pending.remove(cause)
            elif pending:
                cause = pending.pop(0)
            answered = events[cause] if cause is not None else None
            from_user = bool(interrupt) or (answered is not None and answered.format_error)
            exit_code = as_int(extra.get("returncode"))
            if exit_code is None and not from_user:
                m = _RETURNCODE.search(text[:200])
                exit_code = int(m.group(1)) if m else None
            events.append(
                Event(
                    index=len(events),
                    kind="observation",
                    source="user" if from_user else "environment",
                    type=answered.type if answered is not None and not from_user else "message",
                    text=text,
                    cause=cause,
                    exit_code=None if from_user else exit_code,
                )
            )
            continue
        if role == "exit":
            status = extra.get("exit_status")
            if status == "Submitted" and pending and events[pending[-1]].type == "finish":
                cause = pending.pop()
                events.append(
                    Event(
                        index=len(events),
                        kind="observation",
                        source="environment",
                        type="finish",
                        text=content_text(msg.get("content")),
                        cause=cause,
                    )
                )
            continue
        raise mctx.error(f"unknown role {role!r} (expected system, user, assistant, tool or exit)", "role")

    model_cfg = config.get("model") if isinstance(config.get("model"), dict) else {}
    instance_id = doc.get("instance_id") or info.get("instance_id")
    submission = info.get("submission")
    return [
        Trajectory(
            format=NAME,
            format_version=doc.get("trajectory_format")
            if isinstance(doc.get("trajectory_format"), str)
            else None,
            source_path=str(source.path),
            record=None,
            instance_id=instance_id if isinstance(instance_id, str) else None,
            model=model_cfg.get("model_name") if isinstance(model_cfg.get("model_name"), str) else None,
            exit_status=info.get("exit_status") if isinstance(info.get("exit_status"), str) else None,
            task_prompt=task_prompt,
            final_patch=submission if isinstance(submission, str) else None,
            working_dir=env.get("cwd") if isinstance(env.get("cwd"), str) else None,
            events=events,
            llm_calls=calls,
            metadata={
                "mini_version": info.get("mini_version"),
                "model_stats": info.get("model_stats"),
            },
        )
    ]


READERS = [
    Reader(name=NAME, detect=detect, read=read, priority=20, description="mini-swe-agent 1.x trajectory JSON")
]
