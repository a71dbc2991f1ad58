"""Files of the replay's workspace as agents' editors see them: recorded paths mapped into the workspace, text
read and written the way Python editors do, and an undo history per file (docs/protocol.md section 5)."""

from __future__ import annotations

from pathlib import Path

#: ``(action, detail)``: action ``edit`` (files may have changed), ``noop`` or ``skipped`` (nothing changed),
#: or ``unreplayable`` (the replay cannot reproduce the action exactly; the detail is the reason).
EditOutcome = tuple[str, str]


class FileEditor:
    """Applies editor actions to files under the workspace, with an undo history per file.

    Text is read as UTF-8 (undecodable bytes kept through ``surrogateescape``) with universal newlines, as
    the Python editors of OpenHands and SWE-agent read it (``\\r\\n`` and ``\\r`` become ``\\n``), and written
    back with ``\\n``.

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

    def rel(self, target: Path) -> str:
        """``target`` relative to the workspace (for step details)."""
        return str(target.relative_to(self.workspace))

    @staticmethod
    def read(target: Path) -> str:
        """The file's text with universal newlines."""
        return target.read_text("utf-8", "surrogateescape")

    def remember(self, target: Path, previous: bytes | None) -> None:
        """Push ``previous`` (``None``: the file did not exist) on ``target``'s undo history."""
        self.history.setdefault(target, []).append(previous)

    def write(self, target: Path, data: bytes | str, *, remember: bool = True) -> None:
        """Write ``data`` to ``target`` (parents created), keeping the old content for ``undo`` unless
        ``remember`` is false (the caller keeps its own history entry)."""
        if remember:
            self.remember(target, target.read_bytes() if target.exists() else None)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data)

    def create(self, target: Path, text: str) -> str:
        """Create (or overwrite) ``target`` with ``text``."""
        self.write(target, text)
        return f"create {self.rel(target)}"

    def str_replace(self, target: Path, old: str, new: str) -> str:
        """Replace the one occurrence of ``old``; no change unless it occurs exactly once."""
        if not target.is_file():
            return "str_replace on a missing file: no change"
        content = self.read(target)
        count = content.count(old) if old else 0
        if count != 1:
            # The editor refuses unless old_str occurs exactly once: the recorded run saw an error.
            return f"str_replace: old_str occurs {count} times: no change"
        self.write(target, content.replace(old, new, 1))
        return f"str_replace {self.rel(target)}"

    def replace_all(self, target: Path, old: str, new: str) -> str:
        """Replace every occurrence of ``old`` (Claude Code's ``Edit`` with ``replace_all``); no change
        when there is none."""
        if not target.is_file():
            return "replace_all on a missing file: no change"
        content = self.read(target)
        count = content.count(old) if old else 0
        if count == 0:
            return "replace_all: old_str does not occur: no change"
        self.write(target, content.replace(old, new))
        return f"replace_all {self.rel(target)} ({count} occurrences)"

    def insert(self, target: Path, line: int, text: str) -> str:
        """Insert ``text`` after line ``line`` (0 = at the top)."""
        if not target.is_file():
            return "insert on a missing file: no change"
        lines = self.read(target).split("\n")
        if line < 0 or line > len(lines):
            return f"insert: line {line} out of range: no change"
        lines[line:line] = text.split("\n")
        self.write(target, "\n".join(lines))
        return f"insert {self.rel(target)}:{line}"

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
        return f"undo_edit {self.rel(target)}"

    def edit_lines(self, target: Path, start: int, end: int, text: str) -> str:
        """SWE-agent ``edit N:M``: replace lines N..M (1-based, inclusive) with ``text``."""
        if not target.is_file():
            return "edit on a missing file: no change"
        content = self.read(target)
        lines = content.split("\n")
        trailing = content.endswith("\n")
        if trailing:
            lines = lines[:-1]
        lines[start - 1 : end] = text.split("\n") if text else []
        self.write(target, "\n".join(lines) + ("\n" if trailing else ""))
        return f"edit {self.rel(target)}:{start}-{end}"
