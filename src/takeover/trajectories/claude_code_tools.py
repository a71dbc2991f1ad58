"""How the tools of a Claude Code session map to events (the mapping is described in
:mod:`takeover.trajectories.claude_code`), and the input fields each tool needs."""

from __future__ import annotations

import json
from typing import Any

from takeover.errors import InputError
from takeover.trajectories._common import Ctx

#: The input fields of Claude Code's own tools that a reader uses, with their JSON types.
_INPUT_TYPES: dict[str, dict[str, type]] = {
    "Bash": {"command": str},
    "Edit": {"file_path": str, "old_string": str, "new_string": str},
    "MultiEdit": {"file_path": str, "edits": list},
    "Write": {"file_path": str, "content": str},
    "NotebookEdit": {"notebook_path": str},
    "Read": {"file_path": str},
}


def input_type_error(name: str, tool_input: dict, ictx: Ctx) -> InputError | None:
    """The error for an input field of tool ``name`` that holds another JSON type than the tool takes
    (``ictx``: the context of the ``input`` object), or ``None``. Claude Code refuses such a call without
    running it (its result is an error); a call that ran cannot have one."""
    for key, kind in _INPUT_TYPES.get(name, {}).items():
        error = ictx.wrong_type(tool_input, key, kind)
        if error is not None:
            return error
    return None


def tool_fields(name: str, tool_input: dict) -> list[dict[str, Any]]:
    """Event fields (with ``text``) of the action(s) of one ``tool_use`` block (see the module docstring)."""

    def s(key: str, obj: dict = tool_input) -> str | None:
        return obj[key] if isinstance(obj.get(key), str) else None

    path = s("file_path")
    if name == "Bash" and s("command") is not None:
        return [{"type": "command", "command": s("command"), "text": s("command")}]
    if name == "Edit" and path and s("old_string") is not None and s("new_string") is not None:
        verb = "replace_all" if tool_input.get("replace_all") is True else "str_replace"
        return [
            {
                "type": "file_edit",
                "path": path,
                "edit": verb,
                "old_text": s("old_string"),
                "new_text": s("new_string"),
                "text": f"Edit {path}",
            }
        ]
    edits = tool_input.get("edits")
    if (
        name == "MultiEdit"
        and path
        and isinstance(edits, list)
        and edits
        and all(
            isinstance(e, dict) and s("old_string", e) is not None and s("new_string", e) is not None
            for e in edits
        )
    ):
        return [
            {
                "type": "file_edit",
                "path": path,
                "edit": "replace_all" if e.get("replace_all") is True else "str_replace",
                "old_text": e["old_string"],
                "new_text": e["new_string"],
                "text": f"MultiEdit {path} ({k} of {len(edits)})",
            }
            for k, e in enumerate(edits, start=1)
        ]
    if name == "Write" and path and s("content") is not None:
        return [
            {
                "type": "file_edit",
                "path": path,
                "edit": "write",
                "file_text": s("content"),
                "text": f"Write {path}",
            }
        ]
    if name == "NotebookEdit" and s("notebook_path"):
        return [
            {
                "type": "file_edit",
                "path": s("notebook_path"),
                "edit": "notebook_edit",
                "text": f"NotebookEdit {json.dumps(tool_input, ensure_ascii=False)}",
            }
        ]
    if name == "Read" and path:
        offset, limit = tool_input.get("offset"), tool_input.get("limit")
        start = offset if isinstance(offset, int) and not isinstance(offset, bool) and offset > 0 else None
        size = limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else None
        fields: dict[str, Any] = {"type": "file_view", "path": path, "text": f"Read {path}"}
        if start or size:
            first = start or 1
            fields["view_range"] = [first, first + size - 1 if size else -1]
        return [fields]
    if name in ("LS", "Glob", "Grep"):
        what = s("pattern") if name != "LS" else None
        where = s("path")
        return [
            {
                "type": "file_view",
                "path": where,
                "text": " ".join(p for p in (name, what, "in" if what and where else None, where) if p),
            }
        ]
    if name in ("Task", "Agent") and (s("prompt") or s("description")):
        return [
            {
                "type": "message",
                "text": f"{name} ({s('subagent_type') or 'subagent'}): "
                f"{s('description') or ''}\n{s('prompt') or ''}".rstrip(),
            }
        ]
    if name == "TodoWrite" and isinstance(tool_input.get("todos"), list):
        lines = [
            f"- [{t.get('status', '')}] {t.get('content', '')}"
            for t in tool_input["todos"]
            if isinstance(t, dict)
        ]
        return [{"type": "message", "text": "TodoWrite\n" + "\n".join(lines)}]
    return [{"type": "message", "text": f"{name} {json.dumps(tool_input, ensure_ascii=False)}"}]
