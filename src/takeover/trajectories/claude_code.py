"""Reader of Claude Code session logs (``~/.claude/projects/<project>/<session-id>.jsonl``).

One file is one session (one :class:`Trajectory`). Supported: the JSON Lines session files of Claude Code 2.0
and 2.1 as publicly described (1.x files were not checked): every line is a record with ``type`` and, for
conversation records, ``uuid``, ``parentUuid``, ``sessionId``, ``cwd``, ``gitBranch``, ``version``,
``timestamp``, ``isSidechain``, ``isMeta`` and ``message{role, content[]}``. There is no published schema;
field meanings come from the Anthropic Messages API (content blocks ``text``, ``thinking``, ``tool_use{id,
name, input}``, ``tool_result{tool_use_id, content, is_error}``; ``usage`` counts), from the input fields of
Claude Code's own tools (``Bash{command, run_in_background}``, ``Edit{file_path, old_string, new_string,
replace_all}``, ``MultiEdit{file_path, edits[]}``, ``Write{file_path, content}``, ``Read{file_path, offset,
limit}``...), and from public notes of people who parse these files (DRMacIver/claude-reliability
``notes/transcript-format.md``; the usage trackers' rule that split records of one API response count once,
e.g. ccusage's de-duplication by message id).

How records map (decided here; docs/protocol.md section 1):

- Records other than ``user``/``assistant`` (``summary``, ``system``, ``file-history-snapshot``,
  ``queue-operation``...) are not events; the first ``summary`` is kept as ``metadata["summary"]``.
- Meta records (``isMeta``: caveats, expanded skills and other context the harness injects) are not
  events. Assistant records with model ``<synthetic>`` or ``isApiErrorMessage`` (text Claude Code writes
  itself, no API call) are neither events nor LLM calls. A record whose ``uuid`` was already read is a
  copy and is skipped.
- Sidechains (``isSidechain``: the records of a subagent started by the ``Task`` tool) are not events of
  the session: the main agent sees a subagent only through the ``Task`` call's result, which is the
  observation of that action. Their API calls are LLM calls of the session (they were paid for;
  ``metadata["sidechain_llm_calls"]`` counts them). A file holding only sidechain records (a subagent's
  own transcript) is read as that subagent's run (``metadata["sidechain"]`` is true).
- LLM calls: one per API response, whose key is ``message.id`` (else ``requestId``, else the record's
  ``uuid``). Claude Code writes one record per content block, all with the same id and the same usage
  (plus, at times, an earlier streaming snapshot with fewer output tokens), so a response is counted once
  and its usage is the field-wise maximum over its records. Usage (tokens): ``prompt_tokens`` =
  ``input_tokens`` + ``cache_read_input_tokens`` + ``cache_creation_input_tokens`` (docs/protocol.md
  section 1; section 8 adds them up over the calls), ``completion_tokens`` = ``output_tokens`` (thinking
  included), ``cached_tokens`` = ``cache_read_input_tokens``, ``cache_creation_tokens`` =
  ``cache_creation_input_tokens``; ``reasoning_tokens`` is ``None`` (not reported apart).
- Actions: each ``tool_use`` block is one action of its call; the call's ``thinking`` and ``text`` blocks
  before it are the ``thought`` of the call's first action. A call with no ``tool_use`` is one ``message``
  action (its text; thinking as ``thought``). Tools (:mod:`.claude_code_tools`): ``Bash`` -> ``command``
  (``cwd`` = the record's ``cwd``); ``Edit`` -> ``file_edit`` ``str_replace`` (``replace_all`` when set) with the exact
  ``old_text``/``new_text``; ``MultiEdit`` -> one ``file_edit`` per entry of ``edits`` in order (the tool
  applies them in sequence), so the call counts as that many actions; ``Write`` -> ``file_edit`` ``write``
  with ``file_text``; ``NotebookEdit`` -> ``file_edit`` ``notebook_edit`` without texts (a replay refuses
  it by its verb); ``Read`` -> ``file_view`` (``view_range`` from ``offset``/``limit``, 1-based lines);
  ``LS``/``Glob``/``Grep`` -> ``file_view`` of their ``path`` (read-only searches; no shell command is
  made up); ``Task``, ``TodoWrite`` and every other tool -> ``message``. A tool input lacking the fields
  its tool needs (the model can send such calls; Claude Code answers them with an error) is a ``message``.
- Observations: each ``tool_result`` block answers the action with its ``tool_use_id`` (for ``MultiEdit``,
  the last of its actions), source ``environment``. ``exit_code`` of a ``Bash`` result: N from the
  ``Exit code N`` that starts an error result; 0 for a result that is not an error, unless the record's
  ``toolUseResult`` says the command was interrupted, sent to the background or had a non-zero status
  Claude Code does not count as failure (``returnCodeInterpretation``); ``None`` otherwise. A file edit
  whose result is an error changed nothing: its actions get ``edit`` = ``not_applied``. A ``Bash`` call the
  person rejected (``toolUseResult`` ``User rejected tool use``, the rejection sentence) or a permission
  rule denied never ran: ``not_applied``. A ``Bash`` result that timed out or that the person interrupted
  while it ran is ``timed_out``.
- User text: the first is :attr:`Trajectory.task_prompt` (not an event); later ones are observations with
  source ``user`` answering the last action. Local slash-command records (``<command-name>``,
  ``<local-command-stdout>``) are never the task prompt, and are not events before it.
- Branches (a user rewinding to an earlier message) are kept in file order: every recorded tool call ran.

``working_dir`` = the first record's ``cwd``; ``format_version`` = its ``version`` (the Claude Code
version); ``metadata``: ``session_id``, ``git_branch``, ``summary``, ``sidechain``,
``sidechain_llm_calls``. There is no final patch and no instance id.

Errors: :class:`~takeover.errors.InputError` naming the file, the line and the field for a record that is
not an object, has no ``type``, a conversation record without ``message``/``message.content``, a content
block without ``type`` (or a ``tool_use`` without ``id``/``name``/``input``, a ``tool_result`` without
``tool_use_id``), a usage count that is not a non-negative integer, and an input field of one of Claude
Code's tools holding another JSON type than the tool takes (``Bash`` ``command`` an array) in a call whose
result is not an error (a call Claude Code refused for it stays a ``message``). A last line cut off mid-write (the
session was killed) is left out and named in ``metadata["cut_last_line"]``.
"""

from __future__ import annotations

import re
from typing import Any

from takeover.errors import InputError
from takeover.llm.usage import usage_from_payload
from takeover.trajectories._common import Ctx, Reader, ReplayNeeds, Source, mark_not_applied, user_reply
from takeover.trajectories._session_logs import count, session_records
from takeover.trajectories.claude_code_tools import input_type_error, tool_fields
from takeover.trajectories.events import Event, LLMCall, Trajectory

NAME = "claude-code"
_CONVERSATION = ("user", "assistant")
_SYNTHETIC_MODEL = "<synthetic>"
_USAGE_FIELDS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens")
_EXIT_CODE = re.compile(r"(?:Error: )?Exit code (-?\d+)")
#: Claude Code's results for a call it did not run.
_REJECTION = re.compile(r"\s*(The user doesn't want to (proceed with this tool use|take this action right now)"
                        r"|Permission to use \w+ (with command .* )?has been denied)", re.DOTALL)
_TIMED_OUT = re.compile(r"\s*(Error: )?Command timed out after")
_LOCAL_COMMAND = ("<command-name>", "<command-message>", "<local-command-stdout>", "<local-command-stderr>")


def detect(source: Source) -> bool:
    """JSON Lines of records with a string ``type``, the first conversation record (``user``/``assistant``)
    having ``sessionId``, ``uuid`` and a ``message`` object (any number of ``summary`` or snapshot records
    may come first)."""
    for _, record in source.records():
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            return False
        if record["type"] in _CONVERSATION:
            return (
                isinstance(record.get("sessionId"), str)
                and "uuid" in record
                and isinstance(record.get("message"), dict)
            )
    return False


def _usage_counts(message: dict, mctx: Ctx) -> tuple[int | None, ...] | None:
    usage = message.get("usage")
    if usage is None:
        return None
    uctx = mctx.key("usage")
    if not isinstance(usage, dict):
        raise mctx.error(f"expected a JSON object, got {type(usage).__name__}", "usage")
    counts = tuple(count(usage.get(k), uctx, k) for k in _USAGE_FIELDS)
    return None if all(c is None for c in counts) else counts


def _text_of(content: Any) -> str:
    """Text of a ``tool_result`` content: a string, or the ``text`` parts of a block list."""
    if isinstance(content, str):
        return content
    parts = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif isinstance(part, dict) and part.get("type") == "image":
            parts.append("[image]")
    return "\n".join(parts)


def _rejected(text: str, result_meta: Any) -> bool:
    """Whether an error result says Claude Code did not run the call (the person rejected it, or a
    permission rule denied it); a call interrupted while it ran says so in ``toolUseResult.interrupted``."""
    if isinstance(result_meta, dict) and result_meta.get("interrupted") is True:
        return False
    return result_meta == "User rejected tool use" or bool(_REJECTION.match(text))


def _exit_code(text: str, is_error: bool, result_meta: Any, tool_input: dict) -> int | None:
    if is_error:
        m = _EXIT_CODE.match(text.lstrip())
        return int(m.group(1)) if m else None
    if isinstance(result_meta, dict) and (
        result_meta.get("interrupted")
        or result_meta.get("backgroundTaskId")
        or result_meta.get("returnCodeInterpretation")
    ):
        return None
    return None if tool_input.get("run_in_background") is True else 0


class _Session:
    """Events and LLM calls of one session, built record by record in file order."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.calls: list[LLMCall] = []
        self.call_by_key: dict[str, int] = {}
        self.usage_counts: dict[int, tuple[int | None, ...]] = {}
        self.pending: dict[int, dict[str, list[str]]] = {}  # call -> thinking/text not yet attached
        self.seen_blocks: set[tuple[int, str, str]] = set()
        self.actions_of: dict[str, list[int]] = {}  # tool_use id -> action event indices
        self.inputs: dict[str, dict] = {}
        self.wrong_inputs: dict[str, InputError] = {}  # tool_use id -> an input field of the wrong type
        self.task_prompt: str | None = None
        self.last_action: int | None = None
        self.model: str | None = None
        self.sidechain_calls = 0

    def call(self, ctx: Ctx, record: dict, message: dict, mctx: Ctx) -> int:
        """Index of the LLM call of an assistant record (created on its first record, usage merged)."""
        key = next(
            (
                v
                for v in (message.get("id"), record.get("requestId"), record.get("uuid"))
                if isinstance(v, str)
            ),
            f"{ctx.record}",
        )
        counts = _usage_counts(message, mctx)
        model = message.get("model") if isinstance(message.get("model"), str) else None
        index = self.call_by_key.get(key)
        if index is None:
            index = len(self.calls)
            self.call_by_key[key] = index
            self.calls.append(LLMCall(index=index, model=model))
        if counts is not None:
            old = self.usage_counts.get(index)
            merged = (
                counts
                if old is None
                else tuple(
                    b if a is None else a if b is None else max(a, b)
                    for a, b in zip(old, counts, strict=True)
                )
            )
            self.usage_counts[index] = merged
            self.calls[index].usage = usage_from_payload(dict(zip(_USAGE_FIELDS, merged, strict=True)))
        return index

    def sidechain(self, ctx: Ctx, record: dict) -> None:
        message = ctx.need(record, "message", dict)
        if message.get("model") == _SYNTHETIC_MODEL or record.get("isApiErrorMessage"):
            return
        before = len(self.calls)
        self.call(ctx, record, message, ctx.key("message"))
        self.sidechain_calls += len(self.calls) - before

    def assistant(self, ctx: Ctx, record: dict) -> None:
        message = ctx.need(record, "message", dict)
        mctx = ctx.key("message")
        content = mctx.need(message, "content", (list, str))
        if message.get("model") == _SYNTHETIC_MODEL or record.get("isApiErrorMessage"):
            return
        call = self.call(ctx, record, message, mctx)
        if any(c != call for c in self.pending):
            self.flush()
        self.model = self.model or self.calls[call].model
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for i, block in enumerate(blocks):
            bctx = mctx.item("content", i)
            if not isinstance(block, dict):
                raise bctx.error(f"expected a JSON object, got {type(block).__name__}")
            kind = bctx.need(block, "type", str)
            if kind in ("thinking", "text"):
                text = block.get(kind)
                if kind == "text":
                    text = bctx.need(block, "text", str)
                if isinstance(text, str) and text.strip() and (call, kind, text) not in self.seen_blocks:
                    self.seen_blocks.add((call, kind, text))
                    self.pending.setdefault(call, {"thinking": [], "text": []})[kind].append(text)
            elif kind == "tool_use":
                tool_id = bctx.need(block, "id", str)
                name = bctx.need(block, "name", str)
                tool_input = bctx.need(block, "input", dict)
                if tool_id not in self.actions_of:
                    self.tool_use(tool_id, name, tool_input, call, record)
                    wrong = input_type_error(name, tool_input, bctx.key("input"))
                    if wrong is not None:
                        self.wrong_inputs[tool_id] = wrong
            # server-side tool blocks and redacted thinking carry nothing a successor can use

    def tool_use(self, tool_id: str, name: str, tool_input: dict, call: int, record: dict) -> None:
        parts = self.pending.pop(call, {"thinking": [], "text": []})
        thought = "\n".join(parts["thinking"] + parts["text"]) or None
        cwd = record.get("cwd") if isinstance(record.get("cwd"), str) else None
        indices = []
        for k, fields in enumerate(tool_fields(name, tool_input)):
            text = fields.pop("text")
            first = thought if k == 0 else None
            event = Event(
                index=len(self.events),
                kind="action",
                source="agent",
                llm_call=call,
                text=f"{first}\n{text}" if first else text,
                thought=first,
                cwd=cwd if fields["type"] == "command" else None,
                **fields,
            )
            self.events.append(event)
            indices.append(event.index)
        self.actions_of[tool_id] = indices
        self.inputs[tool_id] = tool_input
        self.last_action = indices[-1]

    def flush(self) -> None:
        """The pending text of calls that used no tool, as ``message`` actions."""
        for call, parts in self.pending.items():
            thought = "\n".join(parts["thinking"]) or None
            text = "\n".join(parts["text"])
            self.events.append(
                Event(
                    index=len(self.events),
                    kind="action",
                    source="agent",
                    type="message",
                    text=text or thought or "",
                    thought=thought,
                    llm_call=call,
                )
            )
            self.last_action = len(self.events) - 1
        self.pending.clear()

    def user(self, ctx: Ctx, record: dict) -> None:
        message = ctx.need(record, "message", dict)
        mctx = ctx.key("message")
        content = mctx.need(message, "content", (list, str))
        self.flush()
        texts: list[str] = [content] if isinstance(content, str) else []
        results = []
        for i, block in enumerate(content if isinstance(content, list) else []):
            bctx = mctx.item("content", i)
            if not isinstance(block, dict):
                raise bctx.error(f"expected a JSON object, got {type(block).__name__}")
            kind = bctx.need(block, "type", str)
            if kind == "tool_result":
                results.append((bctx, block))
            elif kind == "text":
                texts.append(bctx.need(block, "text", str))
        meta = record.get("toolUseResult") if len(results) == 1 else None
        for bctx, block in results:
            self.tool_result(bctx, block, meta)
        text = "\n".join(t for t in texts if t.strip())
        if not text:
            return
        if self.task_prompt is None:
            if not text.lstrip().startswith(_LOCAL_COMMAND):
                self.task_prompt = text
            return
        self.events.append(user_reply(self.events, text, self.last_action))

    def tool_result(self, bctx: Ctx, block: dict, meta: Any) -> None:
        tool_id = bctx.need(block, "tool_use_id", str)
        is_error = block.get("is_error") is True
        if tool_id in self.wrong_inputs and not is_error:
            raise self.wrong_inputs[tool_id]  # Claude Code ran the call: its input cannot be of that type
        text = _text_of(block.get("content"))
        actions = self.actions_of.get(tool_id) or []
        cause = actions[-1] if actions else None
        answered = self.events[cause] if cause is not None else None
        exit_code = None
        is_command = answered is not None and answered.type == "command"
        if is_command:
            exit_code = _exit_code(text, is_error, meta, self.inputs[tool_id])
        if is_error and (not is_command or _rejected(text, meta)):
            for index in actions:
                mark_not_applied(self.events[index])
        interrupted = isinstance(meta, dict) and meta.get("interrupted") is True
        self.events.append(Event(
            index=len(self.events), kind="observation", source="environment", text=text, cause=cause,
            type=answered.type if answered is not None else "message", exit_code=exit_code,
            timed_out=is_command and (interrupted or (is_error and bool(_TIMED_OUT.match(text)))),
        ))


def read(source: Source) -> list[Trajectory]:
    """Read one Claude Code session file (see the module docstring for the mapping and the errors)."""
    records = session_records(source)
    kinds = [(ctx, rec, ctx.need(rec, "type", str)) for ctx, rec in records]
    subagent_file = not any(k in _CONVERSATION and not rec.get("isSidechain") for _, rec, k in kinds)
    session = _Session()
    seen: set[str] = set()
    first: dict[str, Any] = {}
    summary = None
    for ctx, rec, kind in kinds:
        if kind == "summary" and summary is None and isinstance(rec.get("summary"), str):
            summary = rec["summary"]
        if kind not in _CONVERSATION:
            continue
        uuid = rec.get("uuid")
        if isinstance(uuid, str):
            if uuid in seen:
                continue
            seen.add(uuid)
        for key in ("sessionId", "cwd", "gitBranch", "version"):
            if key not in first and isinstance(rec.get(key), str):
                first[key] = rec[key]
        if bool(rec.get("isSidechain")) != subagent_file:
            if kind == "assistant":
                session.sidechain(ctx, rec)
            continue
        if rec.get("isMeta"):
            continue
        if kind == "assistant":
            session.assistant(ctx, rec)
        else:
            session.user(ctx, rec)
    session.flush()
    return [
        Trajectory(
            format=NAME,
            format_version=first.get("version"),
            source_path=str(source.path),
            model=session.model,
            task_prompt=session.task_prompt,
            working_dir=first.get("cwd"),
            events=session.events,
            llm_calls=session.calls,
            metadata={
                "session_id": first.get("sessionId"),
                "git_branch": first.get("gitBranch") or None,
                "summary": summary,
                "sidechain": subagent_file,
                "sidechain_llm_calls": session.sidechain_calls,
            },
        )
    ]


READERS = [
    Reader(
        name=NAME,
        detect=detect,
        read=read,
        priority=60,
        description="Claude Code session log (~/.claude/projects/<project>/<session-id>.jsonl)",
        replay=ReplayNeeds(editor_flavor="claude-code"),
        cut_last_line=True,
    )
]
