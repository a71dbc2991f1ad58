"""``file_edit`` actions replayed with the recording tool's own rules (docs/protocol.md section 5.6).

Each editor follows the rules of the tool that recorded the run, its *flavor*
(:data:`~takeover.trajectories.EditorFlavor`, declared by the run's reader in its
:class:`~takeover.trajectories.ReplayNeeds`):

- ``openhands``: OpenHands' ``str_replace_editor`` (openhands-aci, OpenHands 0.x); ``openhands-sdk``: the
  software-agent-sdk ``file_editor`` (OpenHands 1.x); ``swe-agent``: SWE-agent's ``str_replace_editor``
  tool bundle (``tools/edit_anthropic``) and its windowed ``create``/``edit`` commands. All three descend
  from Anthropic's reference editor: ``create`` is refused on an existing file and under a missing folder,
  ``str_replace`` only when ``old_str`` occurs exactly once and differs from ``new_str``, ``insert`` after a
  line between 0 and the number of lines, and the undo history of a file holds the created text for
  ``create`` and the text before each ``str_replace``/``insert``. Versions differ, so each candidate rule
  is computed and the one whose result matches the ``cat -n`` snippet the recorded observation shows is
  taken (the newest when the snippet cannot tell): SWE-agent expands tabs in the whole file on
  ``str_replace`` and ``insert`` (all versions); openhands-aci did too up to 0.2.10 (April 2025) and later
  stopped; openhands-aci 0.3.2 and the SDK retry a ``str_replace`` whose ``old_str`` does not occur with
  its surrounding whitespace stripped (aci strips ``new_str`` too, the SDK does not); openhands-aci 0.1.x
  inserts by splitting the text at ``\\n``, later versions line by line (a last line without a newline
  gets the inserted text appended to it).
- ``claude-code`` and ``generic`` (every other tool): ``create``/``write`` writes the file (folders
  created), ``str_replace`` needs exactly one occurrence, ``replace_all`` (Claude Code's ``Edit`` with
  ``replace_all``) replaces every occurrence, ``insert`` as above, ``undo_edit`` restores the text before
  the replay's last change of the file.

The recorded observation decides *whether* the action changed anything: an action the tool refused or
failed (its error sentence, :func:`recorded_outcome`; for Claude Code and Codex CLI the readers mark such
actions ``not_applied``) changes nothing in the replay, and one it reports as done is applied even where
the replayed workspace would make the tool refuse it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from takeover.repository_states.editors.file_editor import EditOutcome, FileEditor
from takeover.repository_states.editors.swe_agent_tools import (
    SWE_EDIT,
    is_windowed,
    swe_agent_command,
    windowed_create,
    windowed_edit,
)
from takeover.trajectories import EditorFlavor
from takeover.trajectories.events import Event

#: The flavors whose editors follow Anthropic's reference editor.
ANTHROPIC_FLAVORS: frozenset[EditorFlavor] = frozenset({"openhands", "openhands-sdk", "swe-agent"})
#: The start of an answer in which the editor refuses or fails (openhands-aci prefixes ``ERROR:``).
_REFUSED = re.compile(
    r"\A\s*(?:ERROR:\s*)?(?:No replacement was performed|File already exists at|The path \S.* does not exist"
    r"|The parent directory \S.* does not exist|The path \S.* is not an absolute path|The path should be an absolute"
    r"|The path \S.* is a directory|The path \S.* points to a binary file|Invalid `|Parameter [`']"
    r"|No edit history found|Ran into |Unrecognized command|usage: str_replace_editor|Invalid `insert_line`)"
)
_ERROR_PREFIX = re.compile(r"\A\s*ERROR:")
#: OpenHands' message-form logs start every tool answer with this line.
_OBSERVATION_PREFIX = re.compile(r"\A\s*OBSERVATION:\s*")
_SUCCEEDED = re.compile(r"\A\s*(?:File created successfully at|The file \S.* has been edited\.|Last edit to \S.* undone successfully)")
_SNIPPET_LINE = re.compile(r"^ *(\d+)\t(.*)$", re.MULTILINE)


def recorded_outcome(observation: Event | None, flavor: EditorFlavor) -> bool | None:
    """What the recorded observation says of an editor action: ``True`` done, ``False`` refused or failed,
    ``None`` when it does not say (no observation, or a flavor whose reader marks failures itself)."""
    if observation is None or flavor not in ANTHROPIC_FLAVORS:
        return None
    text = _OBSERVATION_PREFIX.sub("", observation.text or "")
    if _REFUSED.match(text) or (flavor != "swe-agent" and _ERROR_PREFIX.match(text)):
        return False
    return True if _SUCCEEDED.match(text) else None


def _snippet(observation: Event | None) -> list[tuple[int, str]]:
    """The numbered lines of the ``cat -n`` snippet in a recorded answer (empty lines and the last line,
    which truncation may cut, left out)."""
    text = observation.text if observation is not None else ""
    if "cat -n" not in text:
        return []
    lines = [(int(n), line) for n, line in _SNIPPET_LINE.findall(text.split("cat -n", 1)[1])]
    return [(n, line) for n, line in lines[:-1] if line.strip()]


def _choose(candidates: list[tuple[str, str, str]], observation: Event | None) -> tuple[str, str, str] | None:
    """The first candidate ``(rule, new text, history text)`` whose lines agree with the recorded snippet."""
    snippet = _snippet(observation)
    for candidate in candidates:
        lines = candidate[1].split("\n")
        if all(n - 1 < len(lines) and lines[n - 1].rstrip("\r") == line for n, line in snippet):
            return candidate
    return candidates[0] if candidates else None


def _expand(flavor: str) -> tuple[bool, ...]:
    return (True,) if flavor == "swe-agent" else (False, True) if flavor == "openhands" else (False,)


def _replace_candidates(content: str, old: str, new: str, flavor: str, done: bool | None) -> list[tuple[str, str, str]]:
    if old == new:
        return []  # refused before anything is read
    out = []
    for tabs in _expand(flavor):
        text, o, n = (content.expandtabs(), old.expandtabs(), new.expandtabs()) if tabs else (content, old, new)
        tries = [("exact", o, n)]
        if done and flavor != "swe-agent" and text.count(o) == 0:
            # Newer OpenHands editors retry with the whitespace around old_str stripped.
            stripped = [("strip old_str", o.strip(), n), ("strip old_str and new_str", o.strip(), n.strip())]
            tries += stripped if flavor == "openhands-sdk" else stripped[::-1]
        for rule, o2, n2 in tries:
            if o2 and text.count(o2) == 1 and o2 != n2:
                out.append((f"{rule}{', tabs expanded' if tabs else ''}", text.replace(o2, n2, 1), text))
    return out


def _insert_candidates(content: str, line: int, new: str, flavor: str) -> list[tuple[str, str, str]]:
    out = []
    split_rules: list[tuple[str, bool]] = [("split", True)] if flavor == "swe-agent" else []
    stream_rules: list[tuple[str, bool]] = []
    if flavor in ("openhands", "openhands-sdk"):
        stream_rules = [("line by line", False)] + ([("line by line, tabs expanded", True)] if flavor == "openhands" else [])
        split_rules = [("split, tabs expanded", True)] if flavor == "openhands" else []
    for rule, tabs in stream_rules:
        raw = [seg for seg in re.split(r"(?<=\n)", content) if seg]
        if 0 <= line <= len(raw):
            kept = [seg.expandtabs() for seg in raw] if tabs else raw
            added = [seg + "\n" for seg in (new.expandtabs() if tabs else new).split("\n")]
            out.append((rule, "".join(kept[:line] + added + kept[line:]), content))
    for rule, tabs in split_rules:
        text = content.expandtabs() if tabs else content
        lines = text.split("\n")
        if 0 <= line <= len(lines):
            out.append((rule, "\n".join(lines[:line] + (new.expandtabs() if tabs else new).split("\n") + lines[line:]), text))
    return out


def _anthropic(verb: str, ev: Event, target: Path, editor: FileEditor, flavor: str, observation: Event | None,
               done: bool | None) -> EditOutcome:
    rel = editor.rel(target)
    if verb in ("create", "write"):
        if flavor == "swe-agent" and not ev.file_text and ev.edit == "create" and not done:
            return windowed_create(target, observation, editor)
        if target.exists() and not done:
            return "noop", f"create of an existing file {rel}: refused by the tool"
        if not target.parent.is_dir() and not done:
            return "noop", f"create under a missing folder {rel}: refused by the tool"
        text = ev.file_text or ""
        editor.write(target, text, remember=False)
        editor.remember(target, text.encode("utf-8", "surrogateescape"))  # the tool's history holds the new text
        return "edit", f"create {rel}"
    if verb == "undo_edit":
        stack = editor.history.get(target)
        if not stack:
            return "noop", "undo_edit without history: no change"
        previous = stack.pop()
        editor.write(target, previous or b"", remember=False)
        return "edit", f"undo_edit {rel}"
    if not target.is_file():
        return "noop", f"{verb} on a missing file: no change"
    content = editor.read(target)
    if verb in ("str_replace", "replace"):
        candidates = _replace_candidates(content, ev.old_text or "", ev.new_text or "", flavor, done)
        if not candidates:
            return "noop", f"str_replace: old_str occurs {content.count(ev.old_text or '') if ev.old_text else 0} times: no change"
    elif verb == "insert":
        candidates = _insert_candidates(content, ev.insert_line or 0, ev.new_text or "", flavor)
        if not candidates:
            return "noop", f"insert: line {ev.insert_line} out of range: no change"
    else:
        return "skipped", f"unknown editor verb {ev.edit!r}"
    rule, text, history = _choose(candidates, observation)  # type: ignore[misc]
    editor.write(target, text, remember=False)
    editor.remember(target, history.encode("utf-8", "surrogateescape"))
    return "edit", f"{verb} {rel} ({rule})"


def _generic(verb: str, ev: Event, target: Path, editor: FileEditor) -> EditOutcome:
    actions: dict[str, Callable[[], str]] = {
        "create": lambda: editor.create(target, ev.file_text or ""),
        "write": lambda: editor.create(target, ev.file_text or ""),
        "str_replace": lambda: editor.str_replace(target, ev.old_text or "", ev.new_text or ""),
        "replace": lambda: editor.str_replace(target, ev.old_text or "", ev.new_text or ""),
        "replace_all": lambda: editor.replace_all(target, ev.old_text or "", ev.new_text or ""),
        "insert": lambda: editor.insert(target, ev.insert_line or 0, ev.new_text or ""),
        "undo_edit": lambda: editor.undo(target),
        "undo": lambda: editor.undo(target),
    }
    if verb in actions:
        return "edit", actions[verb]()
    if not verb and ev.file_text is not None:
        return "edit", editor.create(target, ev.file_text)
    if ev.old_text is not None and ev.new_text is not None:
        return "edit", editor.str_replace(target, ev.old_text, ev.new_text)
    return "skipped", f"unknown editor verb {ev.edit!r}"


def apply_edit(ev: Event, observation: Event | None, editor: FileEditor, *, flavor: EditorFlavor = "generic",
               window: tuple[int, int] | None = None) -> EditOutcome:
    """Apply a ``file_edit`` event as the recording tool did.

    Args:
        ev: the action.
        observation: the recorded answer to it (``None`` if none).
        editor: the workspace's files.
        flavor: the recording tool's editor rules (its reader's
            :attr:`~takeover.trajectories.ReplayNeeds.editor_flavor`).
        window: for SWE-agent's windowed editing commands, the first and last line (1-based) of the file
            window the recorded run showed before this action
            (:func:`~takeover.repository_states.editors.swe_agent_tools.displayed_window`).

    Returns:
        What the replay did (:data:`~takeover.repository_states.editors.file_editor.EditOutcome`).
    """
    if ev.not_applied:
        return "noop", f"{ev.edit or 'edit'} not applied in the recorded run"
    if not ev.path:
        return "skipped", "file edit without a path"
    target = editor.resolve(ev.path, ev.cwd or editor.root)
    if target is None:
        return "skipped", f"edit outside the repository: {ev.path}"
    verb = (ev.edit or "").lower()
    if verb in ("edit", "edit_lines") and ev.view_range and len(ev.view_range) == 2 and ev.new_text is not None:
        # SWE-agent's windowed ``edit N:M``; refused when its linter rejected the edit.
        return swe_agent_command(f"edit {ev.view_range[0]}:{ev.view_range[1]}\n{ev.new_text}\nend_of_edit",
                                 ev, observation, editor, path=target) or ("noop", "")
    if verb in ("edit", "edit_lines") and ev.command and SWE_EDIT.match(ev.command):
        return swe_agent_command(ev.command, ev, observation, editor, path=target) or ("noop", "")
    if flavor == "swe-agent" and verb in ("str_replace", "insert") and is_windowed(ev, observation):
        return windowed_edit(ev, observation, editor, target, window)
    done = recorded_outcome(observation, flavor)
    if done is False:
        first = (observation.text if observation is not None else "").strip().splitlines()
        return "noop", f"{verb or 'edit'} refused in the recorded run: {first[0][:120] if first else ''}"
    if flavor in ANTHROPIC_FLAVORS and verb in ("create", "write", "str_replace", "replace", "insert", "undo_edit", "undo"):
        return _anthropic({"replace": "str_replace", "undo": "undo_edit"}.get(verb, verb), ev, target, editor,
                          flavor, observation, done)
    return _generic(verb, ev, target, editor)
