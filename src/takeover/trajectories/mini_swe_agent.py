"""Reader of mini-swe-agent trajectories (``trajectory_format`` ``mini-swe-agent-1`` and ``mini-swe-agent-1.1``).

Native layout: one JSON object ``{instance_id?, trajectory_format, info{exit_status, submission, model_stats,
mini_version, config}, messages[]}`` per run (FORMATS.md, "mini-swe-agent"). mini-swe-agent 1.x writes
``mini-swe-agent-1``; 2.x writes ``mini-swe-agent-1.1`` with one of three message layouts, chosen by its model
class (``minisweagent/models``):

- text-based (``litellm_textbased_model``): chat messages, the command in a fenced block of the text;
- chat-completions tool calls (``litellm_model``): chat messages, the commands in ``tool_calls``, tool results
  as ``role: tool`` messages with ``tool_call_id``;
- Responses API (``litellm_response_model``, ``openrouter_response_model``): an assistant turn is the whole
  response object (``object: "response"``, no ``role``) whose ``output`` holds ``reasoning``, ``message``
  and ``function_call`` items, its ``usage`` is ``input_tokens``/``output_tokens`` with
  ``input_tokens_details``/``output_tokens_details``; a tool result is a ``function_call_output`` item
  (``call_id``, ``output``, no ``role``); system, task and harness messages are chat messages or
  ``{type: "message", role, content: [{type: "input_text", text}]}`` items.

How messages map to events (decided here; docs/protocol.md section 1):

- ``messages[0]`` (``system``) and the first ``user`` message (the task, :attr:`Trajectory.task_prompt`) are
  not events.
- Every assistant turn is one LLM call (usage from ``extra.response.usage``, or the response object's own
  ``usage``; ``None`` when absent) and yields its actions, all pointing at that call:

  * 1.1 files list the harness's own parse in ``extra.actions`` (one action per entry; tool-calling runs may
    have several); 1.0 files have none, so the text is parsed with the configured ``action_regex``
    (default: a ```` ```bash ```` block). A message with exactly one command gives one ``command`` action;
  * a command whose first line echoes ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` is the submission:
    type ``finish`` (``command`` keeps the command text). The harness submits only when that command
    succeeds; a submission command answered by an ordinary observation (it failed, the run went on) is a
    ``command``;
  * a message with no command or several (a *format error*: the harness refuses to run anything) gives one
    ``message`` action with ``format_error=True``, and its LLM call is marked ``format_error``.
- Every later ``user``, ``tool`` or ``function_call_output`` message is one observation answering the oldest
  unanswered action (tool results by their call id): source ``user`` when it answers a format error or is
  another harness interruption (``extra.interrupt_type``), else ``environment``. ``exit_code`` comes from
  ``extra.returncode`` or the ``<returncode>N</returncode>`` tag; a timeout message has none. A command the
  harness reports as timed out (``extra.exception_type`` ``TimeoutExpired``, or 1.x's "timed out and has
  been killed") gives an observation with ``timed_out``; a tool result saying "action was not executed"
  marks its action ``not_applied``.
- 1.1 files do not store the assistant turn of a format error: the harness's reply carries the model's
  text (``extra.model_response``) or its whole response (``extra.response``, a chat completion or a
  response object); the reader rebuilds the ``message`` action and its LLM call from them, so every
  version counts format-error turns the same way.
- The bare submission diff is an observation answering the ``finish`` action: in 1.0 it is the last ``user``
  message; in 1.1 it is the ``exit`` message of a ``Submitted`` run (the actions of that turn after the
  submission never ran: ``not_applied``). Other ``exit`` messages (limits, errors) are not events; their
  status is :attr:`Trajectory.exit_status`.
- A reported count of 0 for a non-empty prompt or reply is estimated from the exact messages the call was
  sent (:func:`takeover.trajectories._common.complete_unreported_counts`).

``final_patch`` = ``info.submission`` of a run whose ``exit_status`` is ``Submitted`` (or records none); a run
that ended otherwise (a limit, an API error) submitted nothing, and its ``submission`` (``""``, or 1.x's
exception text) is no patch: ``final_patch`` is ``None``. ``working_dir`` = ``info.config.environment.cwd`` (``/testbed`` in
SWE-bench runs), which is also every command's ``cwd`` (each command runs in a fresh shell there).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from takeover.errors import InputError
from takeover.llm.usage import usage_from_payload
from takeover.trajectories._common import (
    Ctx,
    Reader,
    Source,
    as_int,
    complete_unreported_counts,
    content_text,
    mark_not_applied,
)
from takeover.trajectories.events import Event, LLMCall, Trajectory

NAME = "mini-swe-agent"
_DEFAULT_REGEXES = (
    r"```bash\s*\n(.*?)\n```",
    r"```mswea_bash_command\s*\n(.*?)\n```",
    r"<mswea_bash_command>(.*?)</mswea_bash_command>",
)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_SUBMIT_MARKERS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")
#: 1.x's timeout message starts "The last command <command>..."; 2.x renders the exception first.
_TIMED_OUT_1 = re.compile(r"\AThe last command <command>.*?</command> timed out and has been killed", re.DOTALL)
_TIMED_OUT_2 = re.compile(r"\A<exception>[^\n]*timed out after", re.IGNORECASE)
_NOT_EXECUTED = "action was not executed"


def detect(source: Source) -> bool:
    """A single JSON object with ``messages`` and a ``mini-swe-agent*`` format tag or ``info.mini_version``."""
    if source.parsed[0] != "document":
        return False
    doc = source.parsed[1]
    if not isinstance(doc, dict) or "messages" not in doc:  # a damaged messages is read's error, not another format
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


def _timed_out(text: str, extra: dict) -> bool:
    """Whether a command's observation says the harness killed it at its time limit."""
    if extra.get("exception_type") == "TimeoutExpired":
        return True
    return bool(_TIMED_OUT_1.search(text) or _TIMED_OUT_2.search(text))


def _is_submit(command: str) -> bool:
    first = command.lstrip().split("\n", 1)[0]
    return any(marker in first for marker in _SUBMIT_MARKERS)


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return None
    return raw


def _toolcall_commands(message: dict) -> list[dict] | None:
    calls = message.get("tool_calls")
    if not isinstance(calls, list) or not calls:
        return None
    out = []
    for call in calls:
        fn = call.get("function") if isinstance(call, dict) else None
        args = _arguments(fn.get("arguments")) if isinstance(fn, dict) else None
        command = args.get("command") if isinstance(args, dict) else None
        out.append({"command": command if isinstance(command, str) else None, "tool_call_id": call.get("id")})
    return out


# --- the Responses API layout ---------------------------------------------------------------------------


def _output_items(response: dict, kind: str) -> list[dict]:
    output = response.get("output")
    return [i for i in output if isinstance(i, dict) and i.get("type") == kind] if isinstance(output, list) else []


def _response_text(response: dict) -> str:
    """The text of a response object's ``message`` items (``output_text`` parts)."""
    return "\n".join(content_text(item.get("content")) for item in _output_items(response, "message")).strip()


def _response_calls(response: dict) -> list[dict]:
    """``{command, tool_call_id}`` of a response object's ``function_call`` items (command ``None`` when
    the call is not a ``bash`` call with a string ``command``)."""
    out = []
    for item in _output_items(response, "function_call"):
        args = _arguments(item.get("arguments"))
        command = args.get("command") if isinstance(args, dict) and item.get("name") == "bash" else None
        out.append({"command": command if isinstance(command, str) else None,
                    "tool_call_id": item.get("call_id") or item.get("id")})
    return out


def _calls_text(calls: list[dict]) -> str:
    return "\n".join(c["command"] for c in calls if isinstance(c.get("command"), str))


def _role(msg: dict, mctx: Ctx) -> str:
    """``assistant`` for a response object, ``tool`` for a ``function_call_output`` item, else ``role``."""
    if msg.get("object") == "response":
        return "assistant"
    if msg.get("type") == "function_call_output":
        return "tool"
    return mctx.need(msg, "role", str)


def _chat(msg: dict, role: str) -> dict[str, Any]:
    """A message as the chat message it stands for (what the token estimator counts)."""
    if msg.get("object") == "response":
        return {"role": "assistant", "content": "\n".join(filter(None, (_response_text(msg), _calls_text(_response_calls(msg)))))}
    if msg.get("type") == "function_call_output":
        return {"role": "tool", "content": content_text(msg.get("output"))}
    return {k: v for k, v in msg.items() if k != "extra"}


def _rejected_reply(extra: dict) -> tuple[str, dict | None, dict | None]:
    """(model text, usage payload, response) of a format error the 1.1 harness stored only in its reply."""
    response = extra.get("response") if isinstance(extra.get("response"), dict) else None
    text = extra.get("model_response")
    if response is not None and response.get("object") == "response":
        if not isinstance(text, str):
            text = "\n".join(filter(None, (_response_text(response), _calls_text(_response_calls(response)))))
        return text, response.get("usage"), response
    if not isinstance(text, str) and response is not None:
        message = ((response.get("choices") or [{}])[0] or {}).get("message") or {}
        calls = _toolcall_commands(message) or []
        text = "\n".join(filter(None, (content_text(message.get("content")), _calls_text(calls))))
    return text or "", (response or {}).get("usage"), response


class _Run:
    """Events and LLM calls of one run, built message by message."""

    def __init__(self, cwd: str | None, regex: str | None):
        self.cwd, self.regex = cwd, regex
        self.events: list[Event] = []
        self.calls: list[LLMCall] = []
        self.prompts: dict[int, list[dict]] = {}
        self.pending: list[int] = []  # action event indices awaiting an observation, oldest first
        self.by_tool_call: dict[str, int] = {}

    def call(self, payload: Any, model: Any, prompt: list[dict], format_error: bool = False) -> int:
        self.calls.append(LLMCall(index=len(self.calls), usage=usage_from_payload(payload),
                                  model=model if isinstance(model, str) else None, format_error=format_error))
        self.prompts[len(self.calls) - 1] = prompt
        return len(self.calls) - 1

    def action(self, **fields: Any) -> int:
        event = Event(index=len(self.events), kind="action", source="agent", **fields)
        self.events.append(event)
        self.pending.append(event.index)
        return event.index

    def assistant(self, msg: dict, prompt: list[dict]) -> None:
        extra = msg.get("extra") if isinstance(msg.get("extra"), dict) else {}
        if msg.get("object") == "response":
            text, payload, model = _response_text(msg), msg.get("usage"), msg.get("model")
            parsed = _response_calls(msg) or None
        else:
            text = content_text(msg.get("content"))
            response = extra.get("response") if isinstance(extra.get("response"), dict) else {}
            payload, model = response.get("usage"), response.get("model")
            parsed = _toolcall_commands(msg)
        if isinstance(extra.get("actions"), list):
            actions = [a for a in extra["actions"] if isinstance(a, dict)]
        elif parsed is not None:
            actions = parsed
        else:
            actions = [{"command": c} for c in _parse_commands(text, self.regex)]
            if len(actions) != 1:
                actions = []  # format error: the harness ran nothing
        if not actions or any(not isinstance(a.get("command"), str) for a in actions):
            call = self.call(payload, model, prompt, format_error=True)
            self.action(type="message", text=text, thought=_thought(text), llm_call=call, format_error=True)
            return
        call = self.call(payload, model, prompt)
        thought = _thought(text) if text else None
        for action in actions:
            command = action["command"]
            # Tool-calling runs keep the command outside the text; the event text shows both.
            event_text = text if command in text else f"{text}\n\n{command}".strip()
            idx = self.action(type="finish" if _is_submit(command) else "command", text=event_text,
                              thought=thought, command=command, cwd=self.cwd, llm_call=call)
            if isinstance(action.get("tool_call_id"), str):
                self.by_tool_call[action["tool_call_id"]] = idx

    def reply(self, msg: dict, role: str, prompt: list[dict]) -> None:
        extra = msg.get("extra") if isinstance(msg.get("extra"), dict) else {}
        text = content_text(msg.get("output") if role == "tool" and "output" in msg else msg.get("content"))
        interrupt = extra.get("interrupt_type")
        if interrupt == "FormatError" and not (self.pending and self.events[self.pending[0]].format_error):
            # 1.1: the rejected assistant turn is not stored; rebuild it from the harness's reply.
            model_text, payload, response = _rejected_reply(extra)
            call = self.call(payload, (response or {}).get("model"), prompt, format_error=True)
            self.action(type="message", text=model_text, llm_call=call, format_error=True)
        cause = None
        tool_call_id = msg.get("tool_call_id", msg.get("call_id"))
        if isinstance(tool_call_id, str) and tool_call_id in self.by_tool_call:
            cause = self.by_tool_call.pop(tool_call_id)
            if cause in self.pending:
                self.pending.remove(cause)
        elif self.pending:
            cause = self.pending.pop(0)
        answered = self.events[cause] if cause is not None else None
        from_user = bool(interrupt) or (answered is not None and answered.format_error)
        exit_code = as_int(extra.get("returncode"))
        if exit_code is None and not from_user:
            m = _RETURNCODE.search(text[:200])
            exit_code = int(m.group(1)) if m else None
        if answered is not None and not from_user:
            if answered.type == "finish" and exit_code is not None:
                answered.type = "command"  # the submission command failed; the harness did not submit
            if extra.get("exception_info") == _NOT_EXECUTED:
                mark_not_applied(answered)
        timed_out = not from_user and _timed_out(text, extra)
        self.events.append(Event(
            index=len(self.events), kind="observation", source="user" if from_user else "environment",
            type=answered.type if answered is not None and not from_user else "message", text=text, cause=cause,
            exit_code=None if from_user else exit_code, timed_out=timed_out,
        ))

    def exit(self, msg: dict) -> None:
        extra = msg.get("extra") if isinstance(msg.get("extra"), dict) else {}
        finishes = [i for i in self.pending if self.events[i].type == "finish"]
        if extra.get("exit_status") != "Submitted" or not finishes:
            return
        cause = finishes[-1]
        for later in [i for i in self.pending if i > cause and self.events[i].llm_call == self.events[cause].llm_call]:
            mark_not_applied(self.events[later])  # the harness stopped at the submission
        self.pending.remove(cause)
        self.events.append(Event(index=len(self.events), kind="observation", source="environment", type="finish",
                                 text=content_text(msg.get("content")), cause=cause))


def _walk(doc: dict, ctx: Ctx, info: dict, cwd: str | None) -> tuple[_Run, str | None, list[tuple[dict, int]]]:
    """Read the messages in order: the run's events and calls, the task prompt, and each chat message the
    model was sent (an ``exit`` message is none) with the number of events read once it was read."""
    messages = ctx.list_of_objects(doc, "messages")
    run = _Run(cwd, _config_regex(info))
    task_prompt: str | None = None
    chat: list[tuple[dict, int]] = []  # the messages so far, as the model was sent them
    for i, msg in enumerate(messages):
        mctx = ctx.item("messages", i)
        role = _role(msg, mctx)
        prompt = [m for m, _ in chat]
        if role == "system":
            chat.append((_chat(msg, role), len(run.events)))
            continue
        if role == "user" and task_prompt is None:
            task_prompt = content_text(msg.get("content"))
        elif role == "assistant":
            run.assistant(msg, prompt)
        elif role in ("user", "tool"):
            run.reply(msg, role, prompt)
        elif role == "exit":
            run.exit(msg)
            continue
        else:
            raise mctx.error(f"unknown role {role!r} (expected system, user, assistant, tool or exit)", "role")
        chat.append((_chat(msg, role), len(run.events)))
    return run, task_prompt, chat


def chat_history(trajectory: Trajectory, event_index: int) -> list[dict]:
    """The chat messages of ``trajectory`` (read from its ``source_path``) that hold events
    ``0..event_index`` and nothing later: the system message, the task, and every later message whose events
    all lie at or before the cut, as the model was sent them (docs/protocol.md section 7.10).

    Raises:
        InputError: the file is gone or damaged, or the cut falls inside one message (an assistant turn with
            several tool calls, a reply that also rebuilds a rejected turn): part of it lies after the cut.
    """
    path = Path(trajectory.source_path or "")
    source = Source(path)
    doc = source.parsed[1]
    ctx = Ctx(path, None)
    _, _, chat = _walk(doc, ctx, ctx.optional(doc, "info", dict) or {}, None)
    history: list[dict] = []
    before = 0
    for message, after in chat:
        if after > event_index + 1:
            if before <= event_index:
                raise InputError(path, f"the cut after event {event_index} falls inside one message (events "
                                 f"{before}..{after - 1}): part of it lies after the cut", field="messages")
            break
        history.append(message)
        before = after
    return history


def read(source: Source) -> list[Trajectory]:
    """Read one mini-swe-agent run (see the module docstring for the mapping)."""
    doc = source.parsed[1]
    ctx = Ctx(source.path, None)
    info = ctx.optional(doc, "info", dict) or {}
    submission = ctx.key("info").optional(info, "submission", str)
    config = info.get("config") if isinstance(info.get("config"), dict) else {}
    env = config.get("environment") if isinstance(config.get("environment"), dict) else {}
    # mini-swe-agent runs every command in a fresh shell started in the configured cwd.
    cwd = env.get("cwd") if isinstance(env.get("cwd"), str) and env.get("cwd") else None

    run, task_prompt, _ = _walk(doc, ctx, info, cwd)
    model_cfg = config.get("model") if isinstance(config.get("model"), dict) else {}
    instance_id = doc.get("instance_id") or info.get("instance_id")
    exit_status = info.get("exit_status") if isinstance(info.get("exit_status"), str) else None
    if exit_status is not None and exit_status != "Submitted":
        # The harness fills ``submission`` only when the agent submitted; otherwise it holds "" or the
        # exception's text (1.x), never a patch.
        submission = None
    traj = Trajectory(
        format=NAME,
        format_version=doc.get("trajectory_format") if isinstance(doc.get("trajectory_format"), str) else None,
        source_path=str(source.path),
        record=None,
        instance_id=instance_id if isinstance(instance_id, str) else None,
        model=model_cfg.get("model_name") if isinstance(model_cfg.get("model_name"), str) else None,
        exit_status=exit_status,
        task_prompt=task_prompt,
        final_patch=submission,
        working_dir=env.get("cwd") if isinstance(env.get("cwd"), str) else None,
        events=run.events,
        llm_calls=run.calls,
        metadata={"mini_version": info.get("mini_version"), "model_stats": info.get("model_stats")},
    )
    complete_unreported_counts(traj, run.prompts)
    return [traj]


READERS = [
    Reader(name=NAME, detect=detect, read=read, priority=20, description="mini-swe-agent 1.x and 2.x trajectory JSON")
]
