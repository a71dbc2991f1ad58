"""Reader of OpenAI Codex CLI session rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

One file is one session (one :class:`Trajectory`). Field meanings come from the Rust CLI's own types in
openai/codex (``codex-rs/protocol``: ``ResponseItem``, ``TokenCountEvent``/``TokenUsage``,
``SessionMeta``, ``TurnContext``; ``codex-rs/core``: the rollout persistence policy, the shell and
unified-exec output formats, the tool argument structs; ``codex-rs/apply-patch``: the patch grammar).
Two layouts are read:

- *envelope* rollouts (Rust CLI since about September 2025): every line is ``{timestamp, type, payload}``
  with ``type`` ``session_meta`` (``id``, ``cwd``, ``cli_version``, ``originator``, optional ``git{
  commit_hash, branch, repository_url}``), ``turn_context`` (``cwd``, ``model``...), ``response_item``,
  ``event_msg`` or ``compacted``;
- *legacy* rollouts (earlier Rust CLI): line 1 is ``{id, timestamp, instructions, git}``, then bare
  response items and ``{"record_type": "state"}`` markers (skipped); the working directory is read from the
  first ``<environment_context><cwd>``. They have no token counts.

The single-JSON ``{session, items}`` files of the former TypeScript CLI are not read.

How records map (decided here; docs/protocol.md section 1):

- Model output items are actions: ``function_call``/``local_shell_call``/``custom_tool_call`` (one per
  call; an ``apply_patch`` call one per file of its patch), an assistant ``message`` (``message``
  action), ``web_search_call`` (``message``, no observation). ``reasoning`` summaries (and raw reasoning
  text, when present) are the ``thought`` of the next action of the same LLM call.
- Tools: ``shell`` (``command`` argv; ``bash -lc SCRIPT`` is shown as ``SCRIPT``), ``shell_command``
  (``command``), ``exec_command`` (``cmd``) and ``local_shell_call`` -> ``command`` with ``cwd`` = the
  call's ``workdir`` (else the turn's ``cwd``); ``write_stdin`` (input to a running process) ->
  ``message``; ``view_image``/``read_file``/``list_dir``/``grep_files`` -> ``file_view``; ``update_plan``,
  MCP and other tools -> ``message``.
- ``apply_patch`` (a function with ``input``, the freeform custom tool, ``apply_patch PATCH`` argv, or an
  ``apply_patch <<'EOF'`` heredoc in a shell script, optionally after ``cd DIR &&``): one ``file_edit`` per
  file section of the patch, paths as written (relative to the call's directory, its ``cwd``).
  ``*** Add File`` -> ``create`` with the exact ``file_text`` (each ``+`` line and a newline, as Codex
  writes it), which a replay applies exactly. ``*** Update File`` -> edit ``apply_patch`` and
  ``*** Delete File`` -> edit ``delete``, the section's patch lines as ``text`` and no old/new text: Codex
  matches hunk lines leniently (trailing and surrounding whitespace, Unicode punctuation) and by position
  after ``@@`` context lines, which a text replacement cannot reproduce without the file's earlier content
  (not in the rollout), so a replay refuses them by their verb. A patch that does not parse is one
  ``file_edit`` ``apply_patch`` without a path. When the call's output reports failure (exit code other
  than 0, or no ``Success.`` line), every section gets edit ``not_applied`` (Codex may have applied the
  sections before the failing one; the rollout does not say which).
- ``function_call_output``/``custom_tool_call_output`` -> the observation answering the action with its
  ``call_id`` (for a patch, its last section). Output text and exit code: the structured form
  ``{"output", "metadata": {"exit_code"}}`` gives its ``output`` and code; the freeform form starting
  ``Exit code: N`` and the unified-exec form with a ``Process exited with code N`` header give N (text kept
  whole); a process still running has no exit code. Older ``{content, success}`` outputs are read the same
  way from ``content``. A command Codex did not run (``exec command rejected by user``, or rejected as too
  risky) is marked ``not_applied``; one it reports as timed out gives a ``timed_out`` observation.
- User input: when the file has ``event_msg`` ``user_message`` records (only what the person typed;
  ``kind`` other than ``plain`` skipped), those are the user's messages; otherwise ``user`` message items,
  skipping the context Codex injects (``<environment_context>``, ``<user_instructions>``, ``# AGENTS.md
  instructions``, ``<user_shell_command>``). The first is :attr:`Trajectory.task_prompt`; later ones are
  observations with source ``user``. ``developer``/``system`` messages, other ``event_msg`` records
  (duplicates of items), ``ghost_snapshot`` and compaction records are not events.
- LLM calls: a rollout does not mark API calls, but Codex writes an ``event_msg`` ``token_count`` after
  each response. When the file has token counts, the model output items between two counts are one call
  and its usage is ``info.last_token_usage`` (else the difference of ``info.total_token_usage`` from the
  previous count). A count whose ``total_token_usage`` equals the previous one is a repeat, and one with
  zero input and output tokens is not a call (Codex writes such counts when it fills the context window).
  A count with no output items since the previous one is a call without events (for example a compaction).
  Without token counts, the output items between two inputs (tool outputs, user messages) are one call
  with ``usage=None``. A new turn (``turn_context``, user input, ``turn_aborted``) always closes the open
  call. Usage (tokens): ``prompt_tokens`` = ``input_tokens`` (cached ones included),
  ``completion_tokens`` = ``output_tokens`` (reasoning included), ``cached_tokens`` =
  ``cached_input_tokens``, ``reasoning_tokens`` = ``reasoning_output_tokens`` (docs/protocol.md section 1;
  section 8 adds ``prompt_tokens`` up over the calls).

``working_dir`` = ``session_meta.cwd``; ``format_version`` = ``cli_version``; ``model`` = the first
``turn_context.model``; ``metadata``: ``session_id``, ``layout`` (``envelope``/``legacy``),
``git_commit``, ``git_branch``, ``repository_url``, ``originator``, ``compactions``. No final patch.

Errors: :class:`~takeover.errors.InputError` naming the file, the line and the field for a record that is
not an object, an envelope line without ``type`` or ``payload`` object, a response item without
``type``, a call without ``name``/``call_id``/``arguments``, an output without ``call_id``, and a token
count that is not a non-negative integer. A last line cut off mid-write (the session was killed) is left
out and named in ``metadata["cut_last_line"]``.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from takeover.llm.usage import usage_from_payload
from takeover.trajectories import codex_patch
from takeover.trajectories._common import Ctx, Reader, Source, mark_not_applied, user_reply
from takeover.trajectories._session_logs import count, head, session_records
from takeover.trajectories.events import Event, LLMCall, Trajectory, Usage

NAME = "codex-cli"
_ITEMS = (
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "web_search_call",
)
_INJECTED = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<user_shell_command>",
)
_USAGE_FIELDS = (
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "total_tokens",
)
_SHELLS = ("bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash", "/usr/bin/zsh")
_CWD_TAG = re.compile(r"<cwd>(.*?)</cwd>", re.DOTALL)
_FREEFORM_EXIT = re.compile(r"Exit code: (-?\d+)\n")
_EXEC_EXIT = re.compile(r"^Process exited with code (-?\d+)$", re.MULTILINE)
#: Codex's answers to a command it did not run: the person declined it, or its reviewer judged it too risky.
_REJECTED = re.compile(r"\s*(exec command rejected by user|This action was rejected due to unacceptable risk)")
_TIMED_OUT = re.compile(r"command timed out after \d+ ?(milliseconds|ms)", re.IGNORECASE)


def detect(source: Source) -> bool:
    """Envelope rollouts (first line ``session_meta`` with a ``payload`` object) and legacy ones (first
    line ``{id, timestamp, ...}`` without ``type``, followed by response items or state markers)."""
    records = head(source)
    first = records[0] if records else None
    if not isinstance(first, dict):
        return False
    if first.get("type") == "session_meta" and isinstance(first.get("payload"), dict):
        return True
    return (
        "type" not in first
        and isinstance(first.get("id"), str)
        and isinstance(first.get("timestamp"), str)
        and any(isinstance(r, dict) and ("record_type" in r or r.get("type") in _ITEMS) for r in records[1:])
    )


def _text(content: Any) -> str:
    parts = (
        [c.get("text") for c in content if isinstance(c, dict)] if isinstance(content, list) else [content]
    )
    return "\n".join(p for p in parts if isinstance(p, str))


def _output(raw: Any) -> tuple[str, int | None]:
    """Observation text and exit code of a tool output (see the module docstring)."""
    if isinstance(raw, dict):  # older payloads: {content, success}
        raw = raw.get("content")
    if isinstance(raw, list):
        return _text(raw), None
    if not isinstance(raw, str):
        return "", None
    if raw.startswith("{"):
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("output"), str):
            code = (
                parsed.get("metadata", {}).get("exit_code")
                if isinstance(parsed.get("metadata"), dict)
                else None
            )
            return parsed["output"], code if isinstance(code, int) and not isinstance(code, bool) else None
    m = _FREEFORM_EXIT.match(raw)
    if m:
        return raw, int(m.group(1))
    header = raw.split("\nOutput:\n", 1)[0] if "\nOutput:\n" in raw else ""
    m = _EXEC_EXIT.search(header)
    return raw, int(m.group(1)) if m else None


def _script(argv: Any) -> str | None:
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        return None
    if len(argv) == 3 and argv[0] in _SHELLS and argv[1] in ("-lc", "-c"):
        return argv[2]
    return shlex.join(argv)


def _join(cwd: str | None, sub: str | None) -> str | None:
    if not sub:
        return cwd
    if sub.startswith("/") or not cwd:
        return sub
    return f"{cwd.rstrip('/')}/{sub}"


class _Rollout:
    """Events and LLM calls of one rollout, built line by line."""

    def __init__(self, counted: bool, user_events: bool):
        self.counted = counted  # the file has token counts: they delimit calls
        self.user_events = user_events  # user input comes from event_msg user_message
        self.events: list[Event] = []
        self.calls: list[LLMCall] = []
        self.open: int | None = None
        self.thought: list[str] = []
        self.actions_of: dict[str, list[int]] = {}
        self.patches: set[str] = set()
        self.task_prompt: str | None = None
        self.last_action: int | None = None
        self.cwd: str | None = None
        self.context_cwd: str | None = None  # legacy rollouts: from the first <environment_context>
        self.model: str | None = None
        self.first_model: str | None = None
        self.last_total: tuple | None = None

    # ------------------------------------------------------------------ calls

    def call(self) -> int:
        if self.open is None:
            self.calls.append(LLMCall(index=len(self.calls), model=self.model))
            self.open = len(self.calls) - 1
        return self.open

    def close(self, usage: Usage | None = None, counted: bool = False) -> None:
        """End the open call (a token count gives its usage; a count with no open call is a call alone)."""
        if self.thought:
            self.action({"type": "message", "text": ""})
        if self.open is None and counted:
            self.calls.append(LLMCall(index=len(self.calls), model=self.model))
            self.open = len(self.calls) - 1
        if self.open is not None and usage is not None:
            self.calls[self.open].usage = usage
        self.open = None

    def token_count(self, payload: dict, pctx: Ctx) -> None:
        info = payload.get("info")
        if not isinstance(info, dict):
            return
        ictx = pctx.key("info")
        total = self._counts(info, "total_token_usage", ictx)
        last = self._counts(info, "last_token_usage", ictx)
        if total is not None:
            if total == self.last_total:
                return  # a repeat of the previous count
            previous, self.last_total = self.last_total, total
            if last is None:
                base = previous or (0,) * len(total)
                last = tuple(None if t is None else t - (b or 0) for t, b in zip(total, base, strict=True))
        if last is None or not (last[0] or last[2]):
            return
        self.close(usage_from_payload(dict(zip(_USAGE_FIELDS, last, strict=True))), counted=True)

    @staticmethod
    def _counts(info: dict, key: str, ictx: Ctx) -> tuple | None:
        usage = info.get(key)
        if usage is None:
            return None
        if not isinstance(usage, dict):
            raise ictx.error(f"expected a JSON object, got {type(usage).__name__}", key)
        uctx = ictx.key(key)
        return tuple(count(usage.get(k), uctx, k) for k in _USAGE_FIELDS)

    # ------------------------------------------------------------------ events

    def action(self, fields: dict[str, Any], call_id: str | None = None) -> int:
        call = self.call()
        thought = "\n".join(self.thought) or None
        self.thought = []
        text = fields.pop("text")
        event = Event(
            index=len(self.events),
            kind="action",
            source="agent",
            llm_call=call,
            text=f"{thought}\n{text}" if thought and text else text or thought or "",
            thought=thought,
            **fields,
        )
        self.events.append(event)
        self.last_action = event.index
        if call_id is not None:
            self.actions_of.setdefault(call_id, []).append(event.index)
        return event.index

    def user_text(self, text: str) -> None:
        if not text.strip():
            return
        self.close()
        if self.task_prompt is None:
            self.task_prompt = text
        else:
            self.events.append(user_reply(self.events, text, self.last_action))

    def tool_call(self, name: str, args: Any, raw: str, call_id: str, workdir: str | None) -> None:
        cwd = _join(self.cwd, workdir)
        args = args if isinstance(args, dict) else {}
        script = None
        if name in ("shell", "container.exec"):
            script = _script(args.get("command"))
        elif name == "shell_command" and isinstance(args.get("command"), str):
            script = args["command"]
        elif name == "exec_command" and isinstance(args.get("cmd"), str):
            script = args["cmd"]
        found = codex_patch.carried(name, args, raw, script)
        patch, patch_cwd = (found[0], _join(cwd, found[1])) if found else (None, cwd)
        if patch is not None:
            self.patches.add(call_id)
            for fields in codex_patch.edit_fields(patch):
                self.action(dict(fields, cwd=patch_cwd), call_id)
            return
        if script is not None:
            self.action({"type": "command", "command": script, "text": script, "cwd": cwd}, call_id)
            return
        path = next(
            (args[k] for k in ("path", "file_path", "dir_path") if isinstance(args.get(k), str)), None
        )
        if name in ("view_image", "read_file", "list_dir", "grep_files"):
            self.action({"type": "file_view", "path": path, "text": f"{name} {raw}"}, call_id)
        elif name == "update_plan" and isinstance(args.get("plan"), list):
            steps = [
                f"- [{s.get('status', '')}] {s.get('step', '')}" for s in args["plan"] if isinstance(s, dict)
            ]
            explanation = args.get("explanation") if isinstance(args.get("explanation"), str) else ""
            self.action(
                {"type": "message", "text": "\n".join(["update_plan", explanation, *steps]).strip()}, call_id
            )
        else:
            self.action({"type": "message", "text": f"{name} {raw}"}, call_id)

    def tool_output(self, call_id: str, raw: Any) -> None:
        if not self.counted:
            self.close()
        text, exit_code = _output(raw)
        actions = self.actions_of.get(call_id) or []
        cause = actions[-1] if actions else None
        answered = self.events[cause] if cause is not None else None
        is_command = answered is not None and answered.type == "command"
        if call_id in self.patches and not codex_patch.applied(text, exit_code):
            for index in actions:
                mark_not_applied(self.events[index])
        elif is_command and _REJECTED.match(text):
            mark_not_applied(answered)
        self.events.append(
            Event(
                index=len(self.events),
                kind="observation",
                source="environment",
                type=answered.type if answered is not None else "message",
                text=text,
                cause=cause,
                exit_code=exit_code if is_command else None,
                timed_out=is_command and bool(_TIMED_OUT.search(text[:400])),
            )
        )

    def item(self, payload: dict, pctx: Ctx) -> None:
        kind = pctx.need(payload, "type", str)
        if kind == "message":
            role = payload.get("role")
            text = _text(payload.get("content"))
            if role == "assistant":
                self.action({"type": "message", "text": text})
            elif role == "user":
                if self.context_cwd is None and text.lstrip().startswith("<environment_context>"):
                    m = _CWD_TAG.search(text)
                    self.context_cwd = m.group(1).strip() if m else None
                    self.cwd = self.cwd or self.context_cwd
                if not self.user_events and not text.lstrip().startswith(_INJECTED):
                    self.user_text(text)
        elif kind == "reasoning":
            parts = [*(payload.get("summary") or []), *(payload.get("content") or [])]
            self.call()
            self.thought.extend(
                p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
            )
        elif kind == "function_call":
            name = pctx.need(payload, "name", str)
            call_id = pctx.need(payload, "call_id", str)
            raw = pctx.need(payload, "arguments", (str, dict))
            try:
                args = json.loads(raw) if isinstance(raw, str) else raw
            except json.JSONDecodeError:
                args = None  # Codex answered the model with a parse error; the call is shown as sent
            workdir = (
                args.get("workdir")
                if isinstance(args, dict) and isinstance(args.get("workdir"), str)
                else None
            )
            self.tool_call(name, args, raw if isinstance(raw, str) else json.dumps(raw), call_id, workdir)
        elif kind == "custom_tool_call":
            name = pctx.need(payload, "name", str)
            call_id = pctx.need(payload, "call_id", str)
            raw = pctx.need(payload, "input", str)
            self.tool_call(name, {"input": raw} if name == "apply_patch" else None, raw, call_id, None)
        elif kind == "local_shell_call":
            action = pctx.need(payload, "action", dict)
            call_id = next((v for v in (payload.get("call_id"), payload.get("id")) if isinstance(v, str)), "")
            workdir = (
                action.get("working_directory") if isinstance(action.get("working_directory"), str) else None
            )
            self.tool_call("shell", {"command": action.get("command")}, json.dumps(action), call_id, workdir)
        elif kind == "web_search_call":
            action = payload.get("action") if isinstance(payload.get("action"), dict) else {}
            self.action({"type": "message", "text": f"web_search {json.dumps(action, ensure_ascii=False)}"})
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self.tool_output(pctx.need(payload, "call_id", str), payload.get("output"))


def _lines(records: list[tuple[Ctx, dict]]) -> tuple[str, list[tuple[Ctx, str, dict]]]:
    """``(layout, [(ctx, kind, payload)])`` with the envelope unwrapped (``pctx`` names ``payload.*``)."""
    first = records[0][1] if records else {}
    if "type" not in first:
        out = [(records[0][0], "session_meta", first)]
        for ctx, rec in records[1:]:
            if "record_type" not in rec:
                ctx.need(rec, "type", str)
                out.append((ctx, "response_item", rec))
        return "legacy", out
    out = []
    for ctx, rec in records:
        kind = ctx.need(rec, "type", str)
        out.append((ctx.key("payload"), kind, ctx.need(rec, "payload", dict)))
    return "envelope", out


def read(source: Source) -> list[Trajectory]:
    """Read one Codex CLI rollout (see the module docstring for the mapping and the errors)."""
    layout, lines = _lines(session_records(source))

    def event_type(kind: str, payload: dict) -> Any:
        return payload.get("type") if kind == "event_msg" else None

    counted = any(event_type(k, p) == "token_count" and isinstance(p.get("info"), dict) for _, k, p in lines)
    user_events = any(event_type(k, p) == "user_message" for _, k, p in lines)
    rollout = _Rollout(counted, user_events)
    meta: dict[str, Any] = {}
    compactions = 0
    for pctx, kind, payload in lines:
        if kind == "session_meta":
            if not meta:
                meta = payload
                rollout.cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
        elif kind == "turn_context":
            rollout.close()
            if isinstance(payload.get("cwd"), str):
                rollout.cwd = payload["cwd"]
            if isinstance(payload.get("model"), str):
                rollout.model = payload["model"]
                rollout.first_model = rollout.first_model or payload["model"]
        elif kind == "response_item":
            rollout.item(payload, pctx)
        elif kind == "compacted":
            compactions += 1
        elif kind == "event_msg":
            what = payload.get("type")
            if what == "token_count":
                rollout.token_count(payload, pctx)
            elif what == "user_message" and payload.get("kind") in (None, "plain"):
                message = payload.get("message")
                rollout.user_text(message if isinstance(message, str) else "")
            elif what == "turn_aborted":
                rollout.close()
    rollout.close()
    git = meta.get("git") if isinstance(meta.get("git"), dict) else {}
    start_cwd = meta.get("cwd") if isinstance(meta.get("cwd"), str) else None

    def text(obj: dict, key: str) -> str | None:
        return obj[key] if isinstance(obj.get(key), str) and obj[key] else None

    return [
        Trajectory(
            format=NAME,
            format_version=text(meta, "cli_version"),
            source_path=str(source.path),
            model=rollout.first_model,
            task_prompt=rollout.task_prompt,
            working_dir=start_cwd or rollout.context_cwd,
            events=rollout.events,
            llm_calls=rollout.calls,
            metadata={
                "session_id": text(meta, "id"),
                "layout": layout,
                "git_commit": text(git, "commit_hash"),
                "git_branch": text(git, "branch"),
                "repository_url": text(git, "repository_url"),
                "originator": text(meta, "originator"),
                "compactions": compactions,
            },
        )
    ]


READERS = [
    Reader(
        name=NAME,
        detect=detect,
        read=read,
        priority=60,
        description="Codex CLI session rollout (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl)",
        cut_last_line=True,
    )
]
