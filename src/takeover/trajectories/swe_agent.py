"""Reader of SWE-agent ``.traj`` files (0.x: ``state`` is a JSON string; 1.x: ``state`` is an object).

Native layout (FORMATS.md, "SWE-agent"): ``{environment, trajectory[], history[], info{exit_status,
submission, model_stats}, replay_config?}``; each ``trajectory`` step has ``action`` (the command text),
``observation``, ``response`` (the model's full text), ``thought`` and ``state`` (``open_file``,
``working_dir``, and ``diff`` when the diff_state tool bundle was on).

How steps map to events (decided here):

- Each ``trajectory`` step is one LLM call, one action and one observation (source ``environment``; the
  format records no exit codes, so ``exit_code`` is ``None``). An observation with SWE-agent's sentence for a
  cancelled command (1.x "was cancelled because it took more than N seconds", 0.x "EXECUTION TIMED OUT") is
  ``timed_out``. The ``history`` list (the prompts) is only
  used for the task prompt: its first ``user`` message that is not a demonstration.
- The action type comes from the ``action`` text: ``submit`` -> ``finish``; ``edit N:M`` ... ``end_of_edit``
  -> ``file_edit`` (edit ``edit``, ``new_text`` = the replacement lines, ``view_range`` = ``[N, M]``, the
  replaced line range, path = ``state.open_file``); ``edit 'search' 'replace'`` -> ``file_edit``
  (``str_replace``); ``insert 'text' [line]`` -> ``file_edit`` (``insert``); ``create FILE`` ->
  ``file_edit`` (``create``, empty ``file_text``); ``str_replace_editor create|str_replace|insert|undo_edit
  PATH ...`` -> ``file_edit`` with path and ``--old_str``/``--new_str``/``--file_text``/``--insert_line``;
  ``open FILE [line]``, ``goto``, ``scroll_up``/``scroll_down`` and ``str_replace_editor view`` ->
  ``file_view``; anything else -> ``command`` (``command`` = the action text).
- A command's ``cwd`` is ``state.working_dir`` after the previous step (``None`` for the first step).
- Usage: the format keeps only run totals (``info.model_stats``: ``tokens_sent``, ``tokens_received``,
  ``api_calls``). Per-call usage is unknown, so every :class:`LLMCall` has ``usage=None``; the totals are
  kept honestly in ``metadata["usage_totals"]`` with ``per_call: false`` (``takeover inspect`` shows them).
  Totals that are all 0 (demonstrations replayed without a model) are no usage: none are kept (n/a).
- ``state.diff``, when present, is the cumulative diff after the step: it is stored as
  :attr:`Event.state_diff` on both the action and its observation (docs/protocol.md section 5, source (b)).

``instance_id`` = ``replay_config.problem_statement.id`` when present, else the file name up to its first
dot (SWE-agent names files ``<instance_id>.traj``); ``final_patch`` = ``info.submission``; ``working_dir`` =
``state.working_dir`` of the first step.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from takeover.trajectories._common import Ctx, Reader, ReplayNeeds, Source, as_int, content_text
from takeover.trajectories.events import Event, LLMCall, Trajectory

NAME = "swe-agent"
_EDIT_RANGE = re.compile(r"^edit\s+(\d+):(\d+)\s*\n(.*?)(?:\n?end_of_edit\s*)?$", re.DOTALL)
_VIEW_COMMANDS = ("open", "goto", "scroll_up", "scroll_down")
#: SWE-agent's sentences for a command cut at its time limit: 1.x's ``command_cancelled_timeout_template``
#: and 0.x's ``EXECUTION TIMED OUT`` line.
_TIMED_OUT = re.compile(r"was cancelled because it took more than [\d.]+ seconds|^EXECUTION TIMED OUT", re.MULTILINE)


def detect(source: Source) -> bool:
    """One JSON object with a ``trajectory`` list of steps that have ``action`` and ``observation``."""
    if source.parsed[0] != "document":
        return False
    doc = source.parsed[1]
    if not isinstance(doc, dict) or not isinstance(doc.get("trajectory"), list):
        return False
    steps = doc["trajectory"]
    if not steps:
        return "info" in doc and "history" in doc
    return isinstance(steps[0], dict) and "action" in steps[0]


def _state(step: dict, ctx: Ctx) -> dict:
    state = step.get("state")
    if state is None:
        return {}
    if isinstance(state, str):
        if not state.strip():
            return {}
        try:
            state = json.loads(state)
        except json.JSONDecodeError as exc:
            raise ctx.error(f"'state' is a string but not valid JSON ({exc.msg})", "state") from None
    if not isinstance(state, dict):
        raise ctx.error(f"expected an object or a JSON string, got {type(state).__name__}", "state")
    return state


def _split(text: str) -> list[str] | None:
    try:
        return shlex.split(text, posix=True)
    except ValueError:
        return None


def _opts(tokens: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    positional: list[str] = []
    options: dict[str, list[str]] = {}
    current: str | None = None
    for tok in tokens:
        if tok.startswith("--"):
            current = tok[2:]
            options[current] = []
        elif current is not None:
            options[current].append(tok)
        else:
            positional.append(tok)
    return positional, options


def parse_action(action: str, open_file: str | None) -> dict[str, Any]:
    """Event fields (``type``, ``command``/``path``/``edit``/texts) for one SWE-agent action string."""
    text = action.strip()
    word = text.split(None, 1)[0] if text else ""
    if word == "submit":
        return {"type": "finish", "command": text}
    if word == "edit":
        m = _EDIT_RANGE.match(text)
        if m:
            return {
                "type": "file_edit",
                "edit": "edit",
                "path": open_file,
                "new_text": m.group(3),
                "view_range": [int(m.group(1)), int(m.group(2))],
            }
        tokens = _split(text)
        if tokens and len(tokens) >= 3:
            return {
                "type": "file_edit",
                "edit": "str_replace",
                "path": open_file,
                "old_text": tokens[1],
                "new_text": tokens[2],
            }
    if word == "insert":
        tokens = _split(text)
        if tokens and len(tokens) >= 2:
            fields: dict[str, Any] = {
                "type": "file_edit",
                "edit": "insert",
                "path": open_file,
                "new_text": tokens[1],
            }
            if len(tokens) >= 3 and as_int(tokens[2]) is not None:
                fields["insert_line"] = as_int(tokens[2])
            return fields
    if word == "create":
        tokens = _split(text)
        if tokens and len(tokens) == 2:
            return {"type": "file_edit", "edit": "create", "path": tokens[1], "file_text": ""}
    if word in _VIEW_COMMANDS:
        tokens = _split(text) or []
        path = tokens[1] if word == "open" and len(tokens) >= 2 else open_file
        return {"type": "file_view", "path": path}
    if word == "str_replace_editor":
        tokens = _split(text)
        if tokens and len(tokens) >= 3:
            positional, options = _opts(tokens[1:])
            verb, path = (positional + [None, None])[:2]
            if verb == "view":
                fields = {"type": "file_view", "path": path}
                vr = options.get("view_range") or []
                if len(vr) == 1:
                    vr = vr[0].strip("[]").replace(",", " ").split()
                if len(vr) == 2 and all(as_int(v) is not None for v in vr):
                    fields["view_range"] = [as_int(v) for v in vr]
                return fields
            if verb in ("create", "str_replace", "insert", "undo_edit"):
                fields = {"type": "file_edit", "edit": verb, "path": path}
                for opt, key in (
                    ("old_str", "old_text"),
                    ("new_str", "new_text"),
                    ("file_text", "file_text"),
                ):
                    if opt in options:
                        fields[key] = " ".join(options[opt])
                if options.get("insert_line") and as_int(options["insert_line"][0]) is not None:
                    fields["insert_line"] = as_int(options["insert_line"][0])
                return fields
    return {"type": "command", "command": text}


def _instance_id(doc: dict, source: Source) -> str:
    rc = doc.get("replay_config")
    if isinstance(rc, str):
        try:
            rc = json.loads(rc)
        except json.JSONDecodeError:
            rc = None
    if isinstance(rc, dict):
        ps = rc.get("problem_statement")
        if isinstance(ps, dict) and isinstance(ps.get("id"), str) and ps["id"]:
            return ps["id"]
    return source.path.name.split(".", 1)[0]


def read(source: Source) -> list[Trajectory]:
    """One SWE-agent run (see the module docstring for the mapping)."""
    doc = source.parsed[1]
    ctx = Ctx(source.path, None)
    steps = ctx.list_of_objects(doc, "trajectory")
    events: list[Event] = []
    calls: list[LLMCall] = []
    working_dir: str | None = None
    shell_cwd: str | None = None  # state.working_dir after the previous step (the shell persists)
    for i, step in enumerate(steps):
        sctx = ctx.item("trajectory", i)
        action = sctx.need(step, "action", str)
        state = _state(step, sctx)
        open_file = state.get("open_file")
        open_file = open_file if isinstance(open_file, str) and open_file not in ("n/a", "") else None
        if working_dir is None and isinstance(state.get("working_dir"), str) and state["working_dir"]:
            working_dir = state["working_dir"]
        diff = state.get("diff") if isinstance(state.get("diff"), str) else None
        calls.append(LLMCall(index=len(calls), usage=None))
        response = content_text(step.get("response")) or action
        thought = (
            step.get("thought") if isinstance(step.get("thought"), str) and step.get("thought") else None
        )
        fields = parse_action(action, open_file)
        if fields["type"] == "command":
            fields["cwd"] = shell_cwd
        events.append(
            Event(
                index=len(events),
                kind="action",
                source="agent",
                text=response,
                thought=thought,
                llm_call=len(calls) - 1,
                state_diff=diff,
                **fields,
            )
        )
        observation = step.get("observation")
        events.append(
            Event(
                index=len(events),
                kind="observation",
                source="environment",
                type=fields["type"],
                text=content_text(observation),
                cause=len(events) - 1,
                state_diff=diff,
                timed_out=fields["type"] == "command" and bool(_TIMED_OUT.search(content_text(observation))),
            )
        )
        if isinstance(state.get("working_dir"), str) and state["working_dir"]:
            shell_cwd = state["working_dir"]

    task_prompt = None
    for entry in doc.get("history") or []:
        if not isinstance(entry, dict) or entry.get("role") != "user" or entry.get("is_demo"):
            continue
        if entry.get("message_type") not in (None, "observation"):
            continue
        task_prompt = content_text(entry.get("content"))
        break
    info = ctx.optional(doc, "info", dict) or {}
    stats = info.get("model_stats") if isinstance(info.get("model_stats"), dict) else {}
    totals = None
    # All zeros (demonstrations replayed without a model record them so) means no usage was recorded.
    if stats and any(as_int(stats.get(key)) for key in ("tokens_sent", "tokens_received", "api_calls")):
        totals = {
            "prompt_tokens": as_int(stats.get("tokens_sent")) or 0,
            "completion_tokens": as_int(stats.get("tokens_received")) or 0,
            "api_calls": as_int(stats.get("api_calls")),
            "per_call": False,
        }
    submission = ctx.key("info").optional(info, "submission", str)
    environment = doc.get("environment")
    return [
        Trajectory(
            format=NAME,
            format_version="0.x"
            if environment == "swe_main" or any(isinstance(s.get("state"), str) for s in steps)
            else "1.x",
            source_path=str(source.path),
            instance_id=_instance_id(doc, source),
            exit_status=info.get("exit_status") if isinstance(info.get("exit_status"), str) else None,
            task_prompt=task_prompt,
            final_patch=submission,
            working_dir=working_dir,
            events=events,
            llm_calls=calls,
            metadata={"usage_totals": totals, "environment": environment},
        )
    ]


READERS = [
    Reader(name=NAME, detect=detect, read=read, priority=50, description="SWE-agent .traj (0.x and 1.x)",
           replay=ReplayNeeds(editor_flavor="swe-agent", edit_window=True, tool_commands=True))
]
