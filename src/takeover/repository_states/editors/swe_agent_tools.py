"""SWE-agent's own commands that are not shell programs, replayed in Python (docs/protocol.md section 5).

- ``create FILE`` (``tools/windowed``): writes one newline (nothing since May 2025), refused on an existing
  file; opens the file (:func:`windowed_create`).
- ``open FILE``, ``goto``, ``scroll_up``/``scroll_down``, the searches, ``filemap``, ``submit``: no change
  (``open`` sets the file a following ``edit N:M`` changes).
- ``edit N:M ... end_of_edit`` (``tools/windowed_edit_linting``): replaces lines N..M of the open file,
  unless the recorded answer says the linter rejected the edit.
- ``edit 'search' 'replace'`` and ``insert 'text' [line]`` (``tools/windowed_edit_replace``): the search
  text is replaced inside the lines the window showed last (the numbered lines of the latest window the
  recorded run printed), or everywhere when the tool answered ``Replaced N occurrences``; ``insert``
  without a line appends to the file (one trailing newline of the text dropped, the file's own last
  newline dropped), with a line inserts after it. An answer saying the edit was not applied changes
  nothing.
- ``str_replace_editor <command> <path> [--old_str ...]`` command lines (``tools/edit_anthropic``): read
  into the ``file_edit`` event they stand for (:func:`editor_command`).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from takeover.repository_states.editors.file_editor import EditOutcome, FileEditor
from takeover.trajectories.events import Event

SWE_EDIT = re.compile(r"^\s*edit\s+(\d+)\s*:\s*(\d+)\s*\n(.*?)\n?end_of_edit\s*$", re.DOTALL)
#: Answers saying SWE-agent did not apply an edit (its linter rejected it, the text was not found...).
SWE_EDIT_REJECTED = re.compile(
    r"Your proposed edit has introduced new syntax error|Your edit was not applied|Edit failed"
    r"|Your search and replace strings are the same|No file opened",
    re.IGNORECASE,
)
#: SWE-agent commands that change no file.
SWE_NOOP = {
    "open", "goto", "scroll_up", "scroll_down", "search_dir", "search_file", "find_file", "submit", "filemap",
}
_CREATE_FAILED = re.compile(r"File '.*' already exists|No such file or directory")
_WINDOW_HEADER = re.compile(r"^\[File: .*\(\d+ lines total\)\]", re.MULTILINE)
_WINDOW_LINE = re.compile(r"^(\d+):", re.MULTILINE)
_REPLACED_ALL = re.compile(r"\A\s*Replaced (\d+) occurrences")
_WINDOWED_ANSWER = re.compile(r"\A\s*(?:\[File: |Text replaced|Replaced \d+ occurrences)")


def _rejected(observation: Event | None) -> bool:
    return observation is not None and bool(SWE_EDIT_REJECTED.search(observation.text or ""))


def displayed_window(text: str) -> tuple[int, int] | None:
    """The first and last line numbers (1-based) of the file window a SWE-agent answer printed."""
    header = _WINDOW_HEADER.search(text or "")
    if header is None:
        return None
    numbers = [int(n) for n in _WINDOW_LINE.findall(text.replace("\r", "")[header.end():])]
    return (numbers[0], numbers[-1]) if numbers else None


def is_windowed(ev: Event, observation: Event | None) -> bool:
    """Whether a SWE-agent ``str_replace``/``insert`` event is a windowed ``edit 'a' 'b'``/``insert`` rather
    than a ``str_replace_editor`` call: the windowed insert may lack a line, and the windowed tools answer
    with the file window or ``Text replaced``."""
    if ev.edit == "insert" and ev.insert_line is None:
        return True
    return observation is not None and bool(_WINDOWED_ANSWER.match(observation.text or ""))


def windowed_create(target: Path, observation: Event | None, editor: FileEditor) -> EditOutcome:
    """SWE-agent's ``create FILE``: refused on an existing file (and, before December 2024, under a missing
    folder: the recorded answer then says ``No such file or directory``); writes one newline, or nothing in
    versions since May 2025, whose answer shows ``(0 lines total)``. The file becomes the open file."""
    editor.open_file = target
    said = observation.text if observation is not None else ""
    if target.exists() or _CREATE_FAILED.search(said):
        return "noop", "create of an existing file or under a missing folder: refused by SWE-agent"
    editor.write(target, "" if "(0 lines total)" in said else "\n")
    return "edit", f"create {editor.rel(target)}"


def windowed_edit(ev: Event, observation: Event | None, editor: FileEditor, target: Path,
                  window: tuple[int, int] | None) -> EditOutcome:
    """Apply a windowed ``edit 'search' 'replace'`` or ``insert 'text' [line]`` (see the module docstring);
    ``window`` is the window shown before it."""
    if _rejected(observation):
        return "noop", "edit not applied in the recorded run"
    if not target.is_file():
        return "noop", "edit without an open file: no change"
    current = editor.read(target)
    rel = editor.rel(target)
    if ev.edit == "insert":
        text = ev.new_text or ""
        if not text:
            return "noop", "insert of nothing"
        text = text.removesuffix("\n")
        if ev.insert_line is None:
            new = text if not current else (current.removesuffix("\n")) + "\n" + text
        elif ev.insert_line < 0:
            new = text if not current else text + "\n" + (current.removeprefix("\n"))
        else:
            lines = current.split("\n")
            lines.insert(ev.insert_line, text)
            new = "\n".join(lines)
        editor.write(target, new)
        return "edit", f"insert {rel}"
    search, replace = ev.old_text or "", ev.new_text or ""
    if not search or search == replace:
        return "noop", "edit without a change"
    if observation is not None and _REPLACED_ALL.match(observation.text or ""):
        if search not in current:
            return "noop", "edit: search text not found: no change"
        editor.write(target, current.replace(search, replace))
        return "edit", f"edit {rel} (every occurrence)"
    lines = current.split("\n")
    first, last = (window[0] - 1, window[1]) if window else (0, len(lines))
    shown = "\n".join(lines[first:last])
    if search not in shown:
        return "noop", "edit: search text not in the window: no change"
    replaced = shown.replace(search, replace, 1)
    lines[first:last] = replaced.split("\n") if replaced else []
    editor.write(target, "\n".join(lines))
    return "edit", f"edit {rel} (lines {first + 1}-{last} shown)"


def swe_agent_command(command: str, ev: Event, observation: Event | None, editor: FileEditor,
                      path: Path | None = None) -> EditOutcome | None:
    """Apply one of SWE-agent's own commands that are not shell programs (``create``, ``open``,
    ``edit N:M``, navigation); ``None`` when ``command`` is not one of them."""
    m = SWE_EDIT.match(command)
    if m:
        if _rejected(observation):
            return "noop", "edit rejected by the agent's linter in the recorded run"
        target = path or (editor.resolve(ev.path, editor.root) if ev.path else None) or editor.open_file
        if target is None:
            return "skipped", "edit without an open file"
        return "edit", editor.edit_lines(target, int(m.group(1)), int(m.group(2)), m.group(3))
    try:
        tokens = shlex.split(command.strip().split("\n", 1)[0])
    except ValueError:
        return None
    if not tokens:
        return None
    if tokens[0] == "create" and len(tokens) >= 2:
        target = editor.resolve(tokens[1], ev.cwd or editor.root)
        if target is None:
            return "skipped", f"create outside the repository: {tokens[1]}"
        return windowed_create(target, observation, editor)
    if tokens[0] == "open" and len(tokens) >= 2:
        target = editor.resolve(tokens[1], ev.cwd or editor.root)
        if target is not None and target.is_file():
            editor.open_file = target
        return "noop", "open"
    if tokens[0] in SWE_NOOP:
        return "noop", tokens[0]
    return None


def _editor_args(command: str) -> dict | None:
    """Parse a SWE-agent ``str_replace_editor <command> <path> [--old_str ..] ...`` command line."""
    try:
        tokens = shlex.split(command)
    except ValueError:
        return None
    if len(tokens) < 3 or tokens[0] != "str_replace_editor":
        return None
    args: dict = {"edit": tokens[1], "path": tokens[2]}
    i = 3
    while i + 1 < len(tokens):
        if tokens[i].startswith("--"):
            args[tokens[i][2:]] = tokens[i + 1]
            i += 2
        else:
            i += 1
    return args


def editor_command(command: str, index: int) -> Event | None:
    """The ``file_edit`` event that a ``str_replace_editor <command> <path> [--old_str ..] ...`` command
    line stands for (event ``index``), or ``None`` when ``command`` is not such a line."""
    parsed = _editor_args(command)
    if parsed is None:
        return None
    return Event(index=index, kind="action", source="agent", type="file_edit", path=parsed.get("path"),
                 edit=parsed.get("edit"), old_text=parsed.get("old_str"), new_text=parsed.get("new_str"),
                 file_text=parsed.get("file_text"),
                 insert_line=int(parsed["insert_line"]) if str(parsed.get("insert_line", "")).isdigit() else None)
