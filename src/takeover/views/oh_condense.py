"""The OpenHands side of the ``condensed`` view: a script that the OpenHands environment's Python runs.

It is never imported by takeover: :mod:`takeover.views.condensed` runs it as ``python -I oh_condense.py``
with the interpreter of the OpenHands environment (:mod:`takeover.environments.openhands_venv`), the job
(JSON) on standard input, the endpoint's API key in ``TAKEOVER_CONDENSER_API_KEY`` (a placeholder when there is none, as a local
endpoint takes). It imports only the
standard library and ``openhands-sdk``/``openhands-tools``.

The job: ``task`` (the task message the predecessor was given), ``events`` (takeover's normalized events up
to the cut, ``Event.model_dump()``), ``model`` (as litellm routes it), ``base_url``, ``temperature``,
``max_output_tokens``, ``timeout``, ``num_retries``, ``max_size``, ``keep_first``.

What it does: the events become OpenHands events (the task a user ``MessageEvent``; a command, a file view
or edit and a submission the ``ActionEvent`` of OpenHands' terminal, file-editor or finish tool, with its
``ObservationEvent``; anything else a ``MessageEvent`` of its source), a ``CondensationRequest`` is added
after the last one (the predecessor stops at the cut: the condensation is forced there), and OpenHands'
``LLMSummarizingCondenser`` condenses the ``View`` of them, as an OpenHands agent's own loop does when a
condensation is requested. It writes one JSON object on standard output: ``summary``, ``summary_offset``,
``kept`` (the takeover indices of the events the condensed view keeps, ``-1`` for the task message),
``forgotten`` (how many events the summary replaces), ``usage`` (the condenser's LLM:
``prompt_tokens``, ``completion_tokens``, ``calls``), ``versions``; or ``{"error": "..."}``.
"""

import json
import os
import sys
from importlib.metadata import version

os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from openhands.sdk import LLM
from openhands.sdk.context.condenser import LLMSummarizingCondenser
from openhands.sdk.context.view import View
from openhands.sdk.event import ActionEvent, MessageEvent, ObservationEvent
from openhands.sdk.event.condenser import Condensation, CondensationRequest
from openhands.sdk.llm import Message, MessageToolCall, TextContent
from openhands.sdk.tool.builtins.finish import FinishAction, FinishObservation
from openhands.tools.file_editor.definition import FileEditorAction, FileEditorObservation
from openhands.tools.terminal.definition import TerminalAction, TerminalObservation

EDITOR_VERBS = ("view", "create", "str_replace", "insert", "undo_edit")


def message(source: str, text: str, event_id: str) -> MessageEvent:
    role = "assistant" if source == "agent" else "user"
    return MessageEvent(id=event_id, source="agent" if source == "agent" else "user",
                        llm_message=Message(role=role, content=[TextContent(text=text or "(empty)")]))


def tool_action(event: dict):
    """The OpenHands tool name and action of a takeover action, or ``None`` when no tool stands for it."""
    kind = event["type"]
    if kind == "command" and event.get("command") is not None and not event.get("ipython"):
        return "terminal", TerminalAction(command=event["command"], is_input=bool(event.get("process_input")))
    if kind in ("file_view", "file_edit") and event.get("path"):
        verb = "view" if kind == "file_view" else (event.get("edit") or "")
        if verb == "write":
            verb = "create"
        if verb not in EDITOR_VERBS:
            return None
        view_range = event.get("view_range") if verb == "view" else None
        return "file_editor", FileEditorAction(
            command=verb, path=event["path"], file_text=event.get("file_text"), old_str=event.get("old_text"),
            new_str=event.get("new_text"), insert_line=event.get("insert_line"),
            view_range=view_range if view_range and len(view_range) == 2 else None)
    if kind == "finish":
        return "finish", FinishAction(message=event.get("text") or "")
    return None


def observation(tool: str, action, event: dict):
    text = event.get("text") or ""
    if tool == "terminal":
        return TerminalObservation.from_text(text, command=action.command, exit_code=event.get("exit_code"),
                                             timeout=bool(event.get("timed_out")))
    if tool == "file_editor":
        return FileEditorObservation.from_text(text, command=action.command, path=action.path)
    return FinishObservation.from_text(text)


def openhands_events(task: str, events: list[dict]) -> list:
    """The OpenHands events of ``task`` and takeover's ``events`` (ids ``t<index>``, the task ``task``)."""
    out = [message("user", task, "task")]
    actions: dict[int, tuple[str, object, str]] = {}
    for event in events:
        index, event_id = event["index"], f"t{event['index']}"
        if event["kind"] == "action":
            try:
                made = None if event.get("format_error") or event.get("not_applied") else tool_action(event)
            except ValueError:  # arguments OpenHands' tool would refuse (pydantic's errors are ValueErrors)
                made = None
            if made is None:
                out.append(message("agent", event.get("text") or "", event_id))
                continue
            tool, action = made
            call_id = f"call-{index}"
            arguments = json.dumps(action.model_dump(exclude_none=True, exclude={"kind"}))
            actions[index] = (tool, action, call_id)
            out.append(ActionEvent(
                id=event_id, thought=[TextContent(text=event["thought"])] if event.get("thought") else [],
                action=action, tool_name=tool, tool_call_id=call_id,
                tool_call=MessageToolCall(id=call_id, name=tool, arguments=arguments, origin="completion"),
                llm_response_id=f"response-{event.get('llm_call') if event.get('llm_call') is not None else index}"))
        elif event.get("cause") in actions:
            tool, action, call_id = actions.pop(event["cause"])
            out.append(ObservationEvent(id=event_id, observation=observation(tool, action, event),
                                        action_id=f"t{event['cause']}", tool_name=tool, tool_call_id=call_id))
        else:
            out.append(message(event["source"], event.get("text") or "", event_id))
    return out


def main() -> int:
    job = json.load(sys.stdin)
    llm = LLM(model=job["model"], base_url=job["base_url"], api_key=os.environ.get("TAKEOVER_CONDENSER_API_KEY") or "no-key",  # an endpoint without keys
              temperature=job["temperature"], max_output_tokens=job["max_output_tokens"],
              timeout=int(job["timeout"]), num_retries=int(job["num_retries"]), usage_id="condenser",
              drop_params=True)
    condenser = LLMSummarizingCondenser(llm=llm, max_size=job["max_size"], keep_first=job["keep_first"])
    events = openhands_events(job["task"], job["events"])
    view = View.from_events([*events, CondensationRequest()])
    try:
        result = condenser.condense(view)
    except Exception as exc:  # noqa: BLE001 - reported to takeover, which names it
        json.dump({"error": f"{type(exc).__name__}: {exc}"[:2000]}, sys.stdout)
        return 0
    if not isinstance(result, Condensation):
        json.dump({"error": "the condenser gave no condensation"}, sys.stdout)
        return 0
    condensed = result.apply(list(view.events))
    kept = [-1 if e.id == "task" else int(e.id[1:]) for e in condensed
            if not e.id.endswith("-summary") and e.id[1:].isdigit() or e.id == "task"]
    usage = llm.metrics.accumulated_token_usage
    json.dump({
        "summary": result.summary or "",
        "summary_offset": result.summary_offset,
        "kept": kept,
        "forgotten": len(result.forgotten_event_ids),
        "usage": {"prompt_tokens": usage.prompt_tokens if usage else 0,
                  "completion_tokens": usage.completion_tokens if usage else 0,
                  "calls": len(llm.metrics.token_usages)},
        "versions": {name: version(name) for name in ("openhands-sdk", "openhands-tools", "litellm")},
    }, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
