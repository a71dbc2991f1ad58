"""IPython cells of OpenHands 0.x that edit files through its agent skills, replayed exactly
(docs/protocol.md section 5.6).

OpenHands' CodeActAgent (July to October 2024) edited files from IPython cells calling the agent skills of
``openhands/runtime/plugins/agent_skills/file_ops`` (``create_file``, ``edit_file_by_replace``,
``insert_content_at_line``, ``append_file``) and looked at them with read-only skills (``open_file``,
``goto_line``, ``scroll_down``, ``search_dir``...). A cell is never run (a Python cell is not a shell
command, and running Python from a recorded log is not safe). A cell made only of calls of these skills
with literal arguments is replayed with their semantics (the last version before they were removed,
OpenHands commit ``54ac340e``): text is read with universal newlines; ``edit_file_by_replace`` finds
``to_replace`` (refused when empty, equal to ``new_content``, or found more than once; when not found, the
text with all spaces and tabs removed is searched instead) and replaces *whole lines*, from the line where
the match starts through as many lines as ``to_replace`` has, by ``new_content`` plus a newline;
``insert_content_at_line(file, n, text)`` puts ``text`` and a newline before line ``n`` (Python slicing,
no range check); ``append_file`` appends after a newline added to the last line; every edited file ends
with a newline; ``create_file`` writes one newline and is refused on an existing file. What the cell
printed decides whether each call changed anything (``ERROR:``, ``[No exact match found``, ``Your changes
have NOT been applied``: no change), and the ``(N lines total after edit)`` it printed must match the
replayed file. Anything else (other Python, shell escapes, magics, non-literal arguments, a cell whose
calls partly failed, a line count that differs) makes the run unreplayable with that reason.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from takeover.repository_states.editors.file_editor import EditOutcome, FileEditor

#: Parameter names of the editing skills, in order.
EDIT_SKILLS = {
    "create_file": ("filename",),
    "edit_file_by_replace": ("file_name", "to_replace", "new_content"),
    "insert_content_at_line": ("file_name", "line_number", "content"),
    "append_file": ("file_name", "content"),
}
#: Skills that change no file.
VIEW_SKILLS = frozenset({
    "open_file", "goto_line", "scroll_down", "scroll_up", "search_dir", "search_file", "find_file", "parse_pdf",
    "parse_docx", "parse_latex", "parse_pptx", "parse_audio", "parse_image", "parse_video", "print",
})
_FAILED = re.compile(r"^ERROR: |\[No exact match found|\[Error editing file|Your changes have NOT been applied"
                     r"|Traceback \(most recent call last\)", re.MULTILINE)
_DONE = re.compile(r"\(\d+ lines total after edit\)\]|^\[File \S.* created\.\]", re.MULTILINE)
_TOTAL = re.compile(r"\((\d+) lines total after edit\)\]")


class Unreplayable(Exception):
    """A cell that cannot be replayed exactly; the message is the reason."""


def _calls(code: str) -> list[tuple[str, dict[str, Any]]]:
    """The skill calls of a cell with their arguments by name, in order (view skills included).

    Raises:
        Unreplayable: the cell holds anything else.
    """
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise Unreplayable(f"not plain Python ({exc.msg}: shell escapes and magics cannot be replayed)") from None
    out = []
    for node in tree.body:
        call = node.value if isinstance(node, ast.Expr) else None
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
            raise Unreplayable(f"line {node.lineno} is not a call of an agent skill")
        name = call.func.id
        if name in VIEW_SKILLS:
            if name == "print" and any(isinstance(a, ast.Call) and not (isinstance(a.func, ast.Name)
                                       and a.func.id in VIEW_SKILLS) for a in ast.walk(call) if a is not call):
                raise Unreplayable(f"line {node.lineno} prints the result of a call that is not a read-only skill")
            out.append((name, {}))
            continue
        if name not in EDIT_SKILLS:
            raise Unreplayable(f"line {node.lineno} calls {name}, which is not an agent skill replayed here")
        params = EDIT_SKILLS[name]
        try:
            values = [ast.literal_eval(a) for a in call.args]
            named = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
        except ValueError:
            raise Unreplayable(f"line {node.lineno}: {name} has arguments that are not literals") from None
        if len(values) > len(params) or len(call.keywords) != len(named):
            raise Unreplayable(f"line {node.lineno}: {name} called with unexpected arguments")
        args = dict(zip(params, values, strict=False)) | named
        if set(args) != set(params):
            raise Unreplayable(f"line {node.lineno}: {name} called with unexpected arguments")
        out.append((name, args))
    return out


def _lines(text: str) -> list[str]:
    """``readlines()`` of a text read with universal newlines."""
    return [line for line in re.split(r"(?<=\n)", text) if line]


def _edit_lines(lines: list[str], start: int, end: int, content: str) -> str | None:
    """``_edit_impl``: lines ``start``..``end`` (1-based) replaced; ``None`` for a range the skill refuses."""
    if not (1 <= start <= len(lines) and 1 <= end <= len(lines) and start <= end):
        return None
    content = content if content.endswith("\n") else content + "\n"
    return "".join(lines[: start - 1] + content.splitlines(True) + lines[end:])


def _apply(name: str, args: dict[str, Any], target: Path, editor: FileEditor) -> str | None:
    """The new text of ``target`` after one editing skill; ``None`` when the skill refuses."""
    if name == "create_file":
        return None if target.exists() or not target.parent.is_dir() else "\n"
    if not target.is_file():
        return None
    text = editor.read(target)
    lines = _lines(text)
    if name == "edit_file_by_replace":
        old, new = args["to_replace"], args["new_content"]
        if not isinstance(old, str) or not old.strip() or old == new or text.count(old) > 1:
            return None
        start = text.find(old)
        if start == -1:  # the skill's fuzzy search: all spaces and tabs removed, newlines kept
            squeeze = re.compile(r"[^\S\n]+")
            start = squeeze.sub("", text).find(squeeze.sub("", old))
            if start == -1:
                return None
            first = squeeze.sub("", text)[:start].count("\n") + 1
        else:
            first = text[:start].count("\n") + 1
        result = _edit_lines(lines, first, first + len(old.splitlines()) - 1, str(new or ""))
    elif name == "insert_content_at_line":
        content, at = str(args["content"] or ""), args["line_number"]
        if not isinstance(at, int) or isinstance(at, bool):
            return None
        inserted = [content if content.endswith("\n") else content + "\n"]
        if len(lines) == 1 and lines[0].strip() == "":
            lines = []
        result = "".join(inserted if not lines else lines[: at - 1] + inserted + lines[at - 1:])
    else:  # append_file
        added = str(args["content"] or "").splitlines(keepends=True)
        if lines and not (len(lines) == 1 and lines[0].strip() == ""):
            if not lines[-1].endswith("\n"):
                lines[-1] += "\n"
            result = "".join(lines + added)
        else:
            result = "".join(added)
    if result is None:
        return None
    return result if result.endswith("\n") else result + "\n"


def replay_cell(code: str, output: str, cwd: str | None, editor: FileEditor) -> EditOutcome:
    """Replay one IPython cell (see the module docstring); ``output`` is what the recorded cell printed and
    ``cwd`` the kernel's directory (OpenHands keeps it with the shell's)."""
    try:
        calls = _calls(code)
    except Unreplayable as exc:
        return "unreplayable", f"IPython cell: {exc}"
    edits = [(name, args) for name, args in calls if name in EDIT_SKILLS]
    if not edits:
        return "noop", "IPython cell of read-only agent skills"
    failed, done = bool(_FAILED.search(output)), len(_DONE.findall(output))
    if failed and done:
        return "unreplayable", "IPython cell whose agent-skill edits partly failed: which ones is not recorded"
    if failed or not done:
        return "noop", "IPython cell whose agent-skill edits failed in the recorded run"
    totals = [int(n) for n in _TOTAL.findall(output)]
    changed = []
    for name, args in edits:
        target = editor.resolve(str(args[EDIT_SKILLS[name][0]]), cwd or editor.root)
        if target is None:
            continue  # outside the repository
        text = _apply(name, args, target, editor)
        if text is None:
            return "unreplayable", f"IPython cell: {name} on {args[EDIT_SKILLS[name][0]]} is refused here but succeeded in the recorded run"
        editor.write(target, text)
        if name != "create_file":
            expected = totals.pop(0) if totals else None
            if expected is not None and expected != max(1, len(_lines(text))):
                return "unreplayable", (f"IPython cell: {name} left {len(_lines(text))} lines in "
                                        f"{editor.rel(target)}, the recorded run {expected}")
        changed.append(f"{name} {editor.rel(target)}")
    return "edit", "; ".join(changed) or "IPython cell editing files outside the repository"
