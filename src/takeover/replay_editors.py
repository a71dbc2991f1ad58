"""Emulation of agents' file editors, for replay (docs/protocol.md section 5 source (c)).

File-editor actions are applied exactly in Python, never through a shell:

- OpenHands ``str_replace_editor``/``edit`` actions: ``create``, ``str_replace``, ``insert``,
  ``undo_edit`` (with an undo history per file), and line edits;
- SWE-agent's own commands, which are not shell programs: ``create``, ``open`` (sets the file that a
  following ``edit`` changes), ``edit N:M ... end_of_edit``, the navigation commands (no change), and
  ``str_replace_editor <command> <path> [--old_str ...]`` command lines.

An edit the editor refused in the recorded run (``old_str`` not found exactly once, a line out of range,
an edit the agent's linter rejected) changes nothing here either. Each function returns an
:data:`EditOutcome`: what the replay did (``edit``, ``noop`` or ``skipped``) and a one-line detail.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from takeover.trajectories.events import Event

#: ``(action, detail)``: action ``edit`` (files may have changed), ``noop`` or ``skipped`` (nothing changed).
EditOutcome = tuple[str, str]

SWE_EDIT = re.compile(r"^\s*edit\s+(\d+)\s*:\s*(\d+)\s*\n(.*?)\n?end_of_edit\s*$", re.DOTALL)
#: Observation texts saying SWE-agent did not apply an edit.
SWE_EDIT_REJECTED = re.compile(
    r"Your proposed edit has introduced new syntax error|Your edit was not applied|Edit failed", re.IGNORECASE
)
#: SWE-agent commands that change no file.
SWE_NOOP = {
    "open", "goto", "scroll_up", "scroll_down", "search_dir", "search_file", "find_file", "submit", "filemap",
}


class FileEditor:
    """Applies editor actions to files under the workspace, with an undo history per file.

    Args:
        workspace: the replay's checkout.
        root: the agent's repository root in the recorded run (``Trajectory.working_dir``), mapped onto
            ``workspace``.
    """

    def __init__(self, workspace: Path, root: str | None):
        self.workspace = workspace
        self.root = root.rstrip("/") if root else None
        self.history: dict[Path, list[bytes | None]] = {}
        self.open_file: Path | None = None

    def resolve(self, path: str, cwd: str | None = None) -> Path | None:
        """Map a recorded path (absolute in the agent's sandbox, or relative to ``cwd``) into the
        workspace; ``None`` when it lies outside the agent's repository root."""
        if not path.startswith("/"):
            base = self.resolve(cwd) if cwd else self.workspace
            if base is None:
                return None
            target = (base / path).resolve()
        elif self.root and (path == self.root or path.startswith(self.root + "/")):
            target = (self.workspace / path[len(self.root):].lstrip("/")).resolve()
        elif path == str(self.workspace) or path.startswith(str(self.workspace) + "/"):
            target = Path(path).resolve()
        else:
            return None
        ws = self.workspace.resolve()
        if target != ws and ws not in target.parents:
            return None
        return target

    def _save(self, target: Path) -> None:
        self.history.setdefault(target, []).append(target.read_bytes() if target.exists() else None)

    def write(self, target: Path, data: bytes) -> None:
        """Write ``data`` to ``target`` (parents created), keeping the old content for ``undo``."""
        self._save(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def create(self, target: Path, text: str) -> str:
        """Create (or overwrite) ``target`` with ``text``."""
        self.write(target, text.encode("utf-8", "surrogateescape"))
        return f"create {target.relative_to(self.workspace)}"

    def str_replace(self, target: Path, old: str, new: str) -> str:
        """Replace the one occurrence of ``old``; no change unless it occurs exactly once."""
        if not target.is_file():
            return "str_replace on a missing file: no change"
        content = target.read_text("utf-8", "surrogateescape")
        count = content.count(old) if old else 0
        if count != 1:
            # The editor refuses unless old_str occurs exactly once: the recorded run saw an error.
            return f"str_replace: old_str occurs {count} times: no change"
        self.write(target, content.replace(old, new, 1).encode("utf-8", "surrogateescape"))
        return f"str_replace {target.relative_to(self.workspace)}"

    def insert(self, target: Path, line: int, text: str) -> str:
        """Insert ``text`` after line ``line`` (0 = at the top)."""
        if not target.is_file():
            return "insert on a missing file: no change"
        lines = target.read_text("utf-8", "surrogateescape").split("\n")
        if line < 0 or line > len(lines):
            return f"insert: line {line} out of range: no change"
        new_lines = text.split("\n")
        lines[line:line] = new_lines
        self.write(target, "\n".join(lines).encode("utf-8", "surrogateescape"))
        return f"insert {target.relative_to(self.workspace)}:{line}"

    def undo(self, target: Path) -> str:
        """Undo the last change to ``target`` (a file this replay created is removed)."""
        stack = self.history.get(target)
        if not stack:
            return "undo_edit without history: no change"
        previous = stack.pop()
        if previous is None:
            target.unlink(missing_ok=True)
        else:
            target.write_bytes(previous)
        return f"undo_edit {target.relative_to(self.workspace)}"

    def edit_lines(self, target: Path, start: int, end: int, text: str) -> str:
        """SWE-agent ``edit N:M``: replace lines N..M (1-based, inclusive) with ``text``."""
        if not target.is_file():
            return "edit on a missing file: no change"
        content = target.read_text("utf-8", "surrogateescape")
        lines = content.split("\n")
        trailing = content.endswith("\n")
        if trailing:
            lines = lines[:-1]
        lines[start - 1 : end] = text.split("\n") if text else []
        out = "\n".join(lines) + ("\n" if trailing else "")
        self.write(target, out.encode("utf-8", "surrogateescape"))
        return f"edit {target.relative_to(self.workspace)}:{start}-{end}"


def _rejected(observation: Event | None) -> bool:
    return observation is not None and bool(SWE_EDIT_REJECTED.search(observation.text or ""))


def apply_edit(
    ev: Event, observation: Event | None, editor: FileEditor, *, swe_agent: bool = False
) -> EditOutcome:
    """Apply a ``file_edit`` event; ``observation`` is the recorded answer to it (``None`` if none).

    ``swe_agent``: the run is SWE-agent's, whose ``create`` of an empty file writes one newline.
    """
    if not ev.path:
        return "skipped", "file edit without a path"
    target = editor.resolve(ev.path, ev.cwd or editor.root)
    if target is None:
        return "skipped", f"edit outside the repository: {ev.path}"
    verb = (ev.edit or "").lower()
    if verb in ("create", "write") or (not verb and ev.file_text is not None):
        text = ev.file_text or ""
        if swe_agent and verb == "create" and not text:
            text = "\n"  # SWE-agent's ``create`` writes one newline
        detail = editor.create(target, text)
    elif verb in ("str_replace", "replace"):
        detail = editor.str_replace(target, ev.old_text or "", ev.new_text or "")
    elif verb == "insert":
        detail = editor.insert(target, ev.insert_line or 0, ev.new_text or "")
    elif verb in ("undo_edit", "undo"):
        detail = editor.undo(target)
    elif verb in ("edit", "edit_lines") and ev.view_range and len(ev.view_range) == 2 and ev.new_text is not None:
        if _rejected(observation):
            return "noop", "edit rejected by the agent's linter in the recorded run"
        detail = editor.edit_lines(target, ev.view_range[0], ev.view_range[1], ev.new_text)
    elif verb in ("edit", "edit_lines") and ev.command and SWE_EDIT.match(ev.command):
        return swe_agent_command(ev.command, ev, observation, editor, path=target) or ("noop", "")
    elif ev.old_text is not None and ev.new_text is not None:
        detail = editor.str_replace(target, ev.old_text, ev.new_text)
    else:
        return "skipped", f"unknown editor verb {ev.edit!r}"
    return "edit", detail


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
        editor.open_file = target
        if target.exists():
            return "noop", "create of an existing file (refused by SWE-agent)"
        return "edit", editor.create(target, "\n")  # SWE-agent's create writes a single newline
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
