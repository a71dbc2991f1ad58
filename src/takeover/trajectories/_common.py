"""Shared plumbing of the trajectory readers: parsing a file once, naming bad records, usage and paths.

A :class:`Source` reads and parses a file (or looks at a directory) once; every reader's ``detect`` and
``read`` share that parse, so detection by content costs nothing extra. A :class:`Ctx` carries "where am I"
(file, record, field path) so that every error about bad input names all three (``InputError``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from takeover._util.io import read_text
from takeover.errors import InputError
from takeover.llm.tokens import estimate_prompt_tokens
from takeover.trajectories.events import Event, Trajectory, Usage

_UPLOADED = re.compile(r"<uploaded_files>\s*\n?\s*(\S[^\n]*?)\s*\n?\s*</uploaded_files>")


class Source:
    """One path given to the readers: a file parsed as a JSON document or as JSON Lines, or a directory.

    Attributes:
        path: the path as given.
        is_dir: whether it is a directory (readers of run directories look inside it).
    """

    def __init__(self, path: Path | str):
        self.path = Path(path)
        if not self.path.exists():
            raise InputError(self.path, "no such file or directory")
        self.is_dir = self.path.is_dir()
        #: The error of a JSON Lines file's last line when it was cut off mid-write (no newline after it, not
        #: valid JSON): :attr:`parsed` leaves it out, and a reader of logs written as a session goes
        #: (:attr:`Reader.cut_last_line`) reads the lines before it; every other reader raises it.
        self.cut_last_line: InputError | None = None

    @cached_property
    def text(self) -> str:
        """The file's UTF-8 text (:func:`takeover._util.io.read_text`: bytes that are not UTF-8 are an
        :class:`InputError` naming the line and the byte)."""
        return read_text(self.path)

    @cached_property
    def parsed(self) -> tuple[str, Any]:
        """``("document", value)`` for a JSON file, ``("jsonl", [(line_number, value), ...])`` for JSON Lines.

        Raises:
            InputError: empty, truncated or malformed JSON; names the line (and column) of the damage.
        """
        text = self.text
        if not text.strip():
            raise InputError(self.path, "empty file")
        try:
            return "document", json.loads(text)
        except json.JSONDecodeError as exc:
            first_error = exc
        if first_error.msg != "Extra data":
            # A damaged single document, unless the first line stands on its own (JSON Lines damaged later).
            first_line = text.lstrip().split("\n", 1)[0]
            try:
                json.loads(first_line)
            except json.JSONDecodeError:
                raise InputError(
                    self.path,
                    f"not valid JSON: {first_error.msg.removesuffix(' at')} at column {first_error.colno} (truncated or malformed file)",
                    record=f"line {first_error.lineno}",
                ) from None
        rows = []
        lines = text.split("\n")
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                rows.append((lineno, json.loads(line)))
            except json.JSONDecodeError as exc:
                error = InputError(
                    self.path,
                    f"not valid JSON: {exc.msg.removesuffix(' at')} at column {exc.colno} (truncated or malformed line)",
                    record=f"line {lineno}",
                )
                if lineno == len(lines) and rows:  # no newline after it: the writer stopped in the middle
                    self.cut_last_line = error
                    break
                raise error from None
        return "jsonl", rows

    def records(self) -> list[tuple[str | None, Any]]:
        """Top-level records with their labels: ``line N`` (JSON Lines), ``index N`` (a JSON list), or a
        single ``(None, value)`` for one JSON object (``line 1`` when the file is named ``*.jsonl``)."""
        kind, value = self.parsed
        if kind == "jsonl":
            return [(f"line {n}", v) for n, v in value]
        if isinstance(value, list):
            return [(f"index {i}", v) for i, v in enumerate(value)]
        return [("line 1" if self.path.suffix == ".jsonl" else None, value)]

    def first(self) -> Any:
        """The first top-level record (what detection looks at), or ``None`` for an empty list."""
        recs = self.records()
        return recs[0][1] if recs else None


#: Whose editor rules a recorded ``file_edit`` action is replayed with
#: (:mod:`takeover.repository_states.editors.editor_tools`): OpenHands 0.x (openhands-aci), the OpenHands
#: SDK, SWE-agent's tool bundles, Claude Code, or the plain rules of every other tool.
EditorFlavor = Literal["openhands", "openhands-sdk", "swe-agent", "claude-code", "generic"]


@dataclass(frozen=True)
class ReplayNeeds:
    """What a replay must know of the tool that recorded a run, to do what it did (docs/protocol.md
    section 5.6); each reader declares it once, for every run it reads.

    Attributes:
        editor_flavor: the rules its file editor follows (:data:`EditorFlavor`).
        edit_window: its ``str_replace``/``insert`` edits may work inside the file window it last showed
            (SWE-agent's windowed ``edit 'search' 'replace'`` and ``insert``).
        tool_commands: its own file commands that are not shell programs (SWE-agent's ``create``,
            ``open``, ``edit N:M``, ``insert``) are replayed in Python, not run in a shell.
    """

    editor_flavor: EditorFlavor = "generic"
    edit_window: bool = False
    tool_commands: bool = False


@dataclass(frozen=True)
class Reader:
    """One native trajectory format.

    Attributes:
        name: the value of :attr:`Trajectory.format` this reader produces (a reader of run folders may be
            named ``<format>-dir`` and produce its file reader's format).
        detect: ``detect(source) -> bool``; true when the content is in this format. Must not raise for
            other formats (an :class:`InputError` from parsing the file is let through).
        read: ``read(source) -> list[Trajectory]`` (one per run in the file or directory).
        priority: lower is tried first.
        description: one line for listings and error messages.
        directories: whether the reader accepts a directory (run folder) rather than a file.
        replay: what replaying its runs needs to know of the recording tool (:class:`ReplayNeeds`).
        cut_last_line: the format is a log written line by line while the agent works (a session that was
            killed mid-write ends in a cut line): the complete lines are read, and the run's
            ``metadata[CUT_LAST_LINE]`` says which line was left out. Other readers refuse such a file.
    """

    name: str
    detect: Callable[[Source], bool]
    read: Callable[[Source], list[Trajectory]]
    priority: int = 100
    description: str = ""
    directories: bool = False
    replay: ReplayNeeds = ReplayNeeds()
    cut_last_line: bool = False


#: Key of :attr:`Trajectory.metadata` that holds the note on a last line (or last event file) that was cut
#: off mid-write and left out: a session interrupted while it was written is still handed over.
CUT_LAST_LINE = "cut_last_line"


def cut_line_note(error: InputError, complete: int, what: str = "line") -> str:
    """The note recorded under :data:`CUT_LAST_LINE`: which record was cut off (``error``, from parsing it)
    and how many complete ones (``complete`` lines, or event files with ``what="event file"``) are read."""
    where = f"{error.path}: {error.record}" if error.record and what == "line" else error.path
    reason = error.reason.removesuffix(" (truncated or malformed line)").removesuffix(" (truncated or malformed file)")
    return (f"{where}, the last {what}, was cut off mid-write ({reason}): it is left out, and the {complete} "
            f"complete {what}s before it are read")


class Ctx:
    """Where a reader is: file, record label and the field path inside the record (for error messages)."""

    __slots__ = ("path", "prefix", "record")

    def __init__(self, path: Path | str, record: str | None, prefix: str = ""):
        self.path = str(path)
        self.record = record
        self.prefix = prefix

    def _join(self, key: str | int) -> str:
        if isinstance(key, int):
            return f"{self.prefix}[{key}]"
        return f"{self.prefix}.{key}" if self.prefix else key

    def key(self, key: str) -> Ctx:
        return Ctx(self.path, self.record, self._join(key))

    def item(self, name: str, index: int) -> Ctx:
        """Context of ``name[index]``: becomes the record itself when the file holds a single run."""
        if self.record is None and not self.prefix:
            return Ctx(self.path, f"{name}[{index}]")
        return Ctx(self.path, self.record, f"{self._join(name)}[{index}]")

    def field(self, key: str | None = None) -> str | None:
        if key is None:
            return self.prefix or None
        return self._join(key)

    def error(self, reason: str, key: str | None = None) -> InputError:
        return InputError(self.path, reason, record=self.record, field=self.field(key))

    def need(self, obj: Any, key: str, kind: type | tuple[type, ...] | None = None) -> Any:
        """``obj[key]``, raising :class:`InputError` (naming the field and, with ``kind``, the expected type)
        when missing, null or of the wrong type."""
        if not isinstance(obj, dict):
            raise self.error(f"expected a JSON object, got {_json_type(type(obj).__name__)}")
        if key not in obj:
            raise self.error("missing required field", key)
        if obj[key] is None:
            raise self.error(f"expected {_type_names(kind)}, got null" if kind else "missing required field (null)", key)
        return self.optional(obj, key, kind) if kind is not None else obj[key]

    def optional(self, obj: dict, key: str, kind: type | tuple[type, ...]) -> Any:
        """``obj[key]`` when it is absent (``None``), null (``None``) or of type ``kind``.

        Raises:
            InputError: present and of another type (names the field and both types).
        """
        error = self.wrong_type(obj, key, kind)
        if error is not None:
            raise error
        return obj.get(key)

    def wrong_type(self, obj: dict, key: str, kind: type | tuple[type, ...]) -> InputError | None:
        """The error for ``obj[key]`` holding another JSON type than ``kind`` (``None`` when it is absent,
        null or of that type); a boolean is not a number here."""
        value = obj.get(key)
        if value is None or isinstance(value, kind) and not (isinstance(value, bool) and bool not in _kinds(kind)):
            return None
        return self.error(f"expected {_type_names(kind)}, got {_json_type(type(value).__name__)}", key)

    def list_of_objects(self, obj: Any, key: str) -> list[dict]:
        """``obj[key]`` as a list whose items are all JSON objects."""
        items = self.need(obj, key, list)
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise self.item(key, i).error(
                    f"expected a JSON object, got {_json_type(type(item).__name__)}"
                )
        return items


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _type_names(kind: type | tuple[type, ...]) -> str:
    return " or ".join(_json_type(k.__name__) for k in _kinds(kind))


def _json_type(py: str) -> str:
    return {
        "dict": "object",
        "list": "array",
        "str": "string",
        "int": "integer",
        "float": "number",
        "bool": "boolean",
        "NoneType": "null",
    }.get(py, py)


def as_int(value: Any) -> int | None:
    """An integer from an int or a numeric string; ``None`` otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value)
    return None


def token_usage_record(entry: dict) -> Usage:
    """A :class:`Usage` from an OpenHands ``TokenUsage`` record (``metrics.token_usages[]``: ``prompt_tokens``
    with cached ones included, ``completion_tokens``, ``cache_read_tokens``, ``cache_write_tokens``,
    ``reasoning_tokens``; the last three only where the version records them)."""
    return Usage(
        prompt_tokens=as_int(entry.get("prompt_tokens")) or 0,
        completion_tokens=as_int(entry.get("completion_tokens")) or 0,
        cached_tokens=as_int(entry.get("cache_read_tokens")),
        cache_creation_tokens=as_int(entry.get("cache_write_tokens")),
        reasoning_tokens=as_int(entry.get("reasoning_tokens")),
    )


def _event_message(event: Event) -> dict[str, str]:
    if event.kind == "action":
        text = event.text if not event.command or event.command in event.text else f"{event.text}\n{event.command}"
        return {"role": "assistant", "content": text}
    return {"role": "user", "content": event.text}


def complete_unreported_counts(traj: Trajectory, prompts: dict[int, list[dict]] | None = None) -> None:
    """Estimate, in place, every recorded prompt count of 0 that stands for a non-empty prompt
    (docs/protocol.md section 1): some servers report ``prompt_tokens: 0`` for a prompt they served from
    their cache. Such a call gets an estimate (:func:`takeover.llm.tokens.estimate_prompt_tokens`) and is
    flagged ``estimated``, so it is never summed as 0. Calls without usage stay without usage.

    Args:
        traj: a run just read.
        prompts: the exact chat messages each call was sent, by call index, where the format keeps them;
            otherwise the prompt is rebuilt from the task prompt and the events before the call's first
            action.
    """
    todo = [c for c in traj.llm_calls if c.usage is not None and c.usage.prompt_tokens <= 0]
    if not todo:
        return
    first_event: dict[int, int] = {}
    for event in traj.events:
        if event.kind == "action" and event.llm_call is not None:
            first_event.setdefault(event.llm_call, event.index)
    head = [{"role": "user", "content": traj.task_prompt}] if traj.task_prompt else []
    for call in todo:
        if prompts is not None and call.index in prompts:
            messages = prompts[call.index]
        else:
            messages = head + [_event_message(e) for e in traj.events[: first_event.get(call.index, len(traj.events))]]
        estimate = estimate_prompt_tokens(messages)
        if estimate > 0:
            call.usage = call.usage.model_copy(update={"prompt_tokens": estimate, "estimated": True})


def uploaded_dir(text: Any) -> str | None:
    """The repository root named in OpenHands' ``<uploaded_files>/workspace/x</uploaded_files>`` preamble."""
    if not isinstance(text, str):
        return None
    m = _UPLOADED.search(text)
    return m.group(1).strip() if m else None


def content_text(content: Any) -> str:
    """Text of a chat message ``content``: a string, or the ``text`` parts of a content list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return str(content)


def editor_event_fields(args: dict) -> dict[str, Any]:
    """Map ``str_replace_editor``/``file_editor`` arguments to :class:`Event` fields.

    Returns keys ``type`` (``file_view`` for ``view``, else ``file_edit``), ``path``, ``edit``, ``old_text``,
    ``new_text``, ``file_text``, ``insert_line``, ``view_range`` (only those present).
    """
    command = args.get("command")
    out: dict[str, Any] = {"path": args.get("path") if isinstance(args.get("path"), str) else None}
    if command == "view":
        out["type"] = "file_view"
        vr = args.get("view_range")
        if isinstance(vr, list) and len(vr) == 2 and all(as_int(v) is not None for v in vr):
            out["view_range"] = [as_int(v) for v in vr]
        return out
    out["type"] = "file_edit"
    out["edit"] = command if isinstance(command, str) else None
    for src, dst in (("old_str", "old_text"), ("new_str", "new_text"), ("file_text", "file_text")):
        if isinstance(args.get(src), str):
            out[dst] = args[src]
    if as_int(args.get("insert_line")) is not None:
        out["insert_line"] = as_int(args["insert_line"])
    return out


BASH_TOOLS = frozenset({"execute_bash", "bash", "terminal", "cmd_run", "execute_command"})
IPYTHON_TOOLS = frozenset({"execute_ipython_cell"})
EDITOR_TOOLS = frozenset({"str_replace_editor", "file_editor", "edit_file"})
FINISH_TOOLS = frozenset({"finish", "submit"})
THINK_TOOLS = frozenset({"think"})


#: ``Event.edit`` of a file edit whose tool call failed, so that the file was not changed. The old, new and
#: file texts are removed (the event's ``text`` still says what was attempted), so a replay applies
#: nothing for it and names the verb as its reason.
NOT_APPLIED = "not_applied"


def mark_not_applied(event: Event) -> None:
    """Mark the action ``event`` as not carried out by the recording tool (:attr:`Event.not_applied`); a
    file edit also gets the verb :data:`NOT_APPLIED` and loses its texts."""
    event.not_applied = True
    if event.type != "file_edit":
        return
    event.edit = NOT_APPLIED
    event.old_text = event.new_text = event.file_text = None
    event.insert_line = None


#: What OpenHands' shell tool says when a command hit its time limit: the soft limit (no new output for a
#: while; the process goes on), the hard limit, and the SIGINT messages of the 0.1x pexpect shell. Every
#: version also answers a command still running after its soft limit with exit code -1
#: (:func:`openhands_timed_out`).
OPENHANDS_TIMED_OUT = re.compile(
    r"\[The command has no new output after [\d.]+ seconds\.|\[The command timed out after [\d.]+ seconds\."
    r"|\[Command timed out after [\d.]+ seconds\. SIGINT was sent|Command timed out\. Sending SIGINT to the process"
)
#: What OpenHands' shell tool says when it did not start a command: one was still running, or the text held
#: several commands.
OPENHANDS_NOT_RUN = re.compile(
    r"is NOT executed\. The previous command is still running|Cannot execute multiple commands at once"
)


def openhands_process_input(command: str, is_input: Any) -> bool:
    """Whether an OpenHands shell action goes to the running process rather than running a command:
    ``is_input`` set (a bool, or the string ``"true"`` of the function-calling tool), an empty command
    (it waits for more output), or a control key (``C-c``, ``C-d``, ``C-z``; ``ctrl+c`` in 0.1x), which
    OpenHands sends as keys, never as a command."""
    flag = is_input is True or (isinstance(is_input, str) and is_input.strip().lower() == "true")
    key = command.strip()
    return flag or not key or (key.startswith("C-") and len(key) == 3) or key.lower() == "ctrl+c"


def openhands_timed_out(exit_code: int | None, said: str) -> bool:
    """Whether an OpenHands shell answer (its text with ``metadata.suffix``) reports a command cut at, or
    still running after, its time limit: exit code -1, or one of :data:`OPENHANDS_TIMED_OUT`."""
    return exit_code == -1 or bool(OPENHANDS_TIMED_OUT.search(said))


def user_reply(events: list[Event], text: str, cause: int | None) -> Event:
    """A user message after the task prompt, as the observation answering the last action ``cause``
    (OpenHands formats: such messages are not agent actions, but they are events the agent saw)."""
    return Event(index=len(events), kind="observation", source="user", type="message", text=text, cause=cause)
