"""Codex's ``apply_patch`` format, as file edits of the event model.

A patch is ``*** Begin Patch``, file sections, ``*** End Patch`` (grammar of ``codex-rs/apply-patch`` in
openai/codex; marker lines may carry surrounding whitespace, and a ``<<'EOF'`` ... ``EOF`` wrapper is
accepted, as Codex accepts them). A section is ``*** Add File: PATH`` followed by ``+`` lines,
``*** Delete File: PATH``, or ``*** Update File: PATH`` with an optional ``*** Move to: NEW`` and hunks
(``@@`` context lines, then lines starting with space, ``-`` or ``+``, optionally ``*** End of File``).

Each section becomes one ``file_edit`` (the reasons are in :mod:`takeover.trajectories.codex_cli`):

- Add: edit ``create``, ``file_text`` = every ``+`` line without its ``+``, each followed by a newline
  (what Codex writes), exact for a replay;
- Update: edit ``apply_patch`` (a ``Move to`` is named in the text), no old/new text;
- Delete: edit ``delete``.

``text`` is the section's own patch lines. A patch that does not parse is one ``file_edit`` ``apply_patch``
without a path whose text is the whole patch.
"""

from __future__ import annotations

import re
from typing import Any

_HEREDOC = re.compile(
    r"^\s*(?:cd\s+(?P<cd>[^\s;&|]+)\s*&&\s*)?(?:apply_patch|applypatch)\s+<<\s*(?P<q>['\"]?)(?P<tag>\w+)(?P=q)"
    r"[ \t]*\n(?P<body>.*?)\n[ \t]*(?P=tag)\s*$",
    re.DOTALL,
)
_ADD, _DELETE, _UPDATE, _MOVE = "*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: "
_WRAPPERS = ("<<EOF", "<<'EOF'", '<<"EOF"')


def heredoc(script: str) -> tuple[str, str | None] | None:
    """``(patch, cd)`` of a shell script that is only ``[cd DIR &&] apply_patch <<'TAG' ... TAG``; ``cd``
    is the directory the patch applies in (``None``: the call's own). ``None`` for any other script."""
    m = _HEREDOC.match(script)
    return (m.group("body"), m.group("cd")) if m else None


def carried(name: str, args: dict, raw: str, script: str | None) -> tuple[str, str | None] | None:
    """``(patch, cd)`` when a tool call applies a patch: the ``apply_patch`` tool (``input`` argument, or the
    raw text of the freeform tool), ``shell`` argv ``["apply_patch", PATCH]``, or a shell ``script`` that is
    an ``apply_patch`` heredoc (:func:`heredoc`; ``cd`` is then its folder). ``None`` otherwise."""
    if name == "apply_patch":
        return (args["input"] if isinstance(args.get("input"), str) else raw), None
    argv = args.get("command")
    is_argv = name in ("shell", "container.exec") and isinstance(argv, list) and len(argv) == 2
    if is_argv and argv[0] in ("apply_patch", "applypatch") and isinstance(argv[1], str):
        return argv[1], None
    return heredoc(script) if script is not None else None


def applied(output: str, exit_code: int | None) -> bool:
    """Whether a patch call's output reports success: exit code 0, or (no code) Codex's ``Success.`` line."""
    if exit_code is not None:
        return exit_code == 0
    return "Success. Updated the following files" in output


def sections(patch: str) -> list[dict[str, Any]] | None:
    """The file sections of ``patch``: dicts with ``op`` (``add``/``update``/``delete``), ``path``,
    ``move_to`` (update only, or ``None``), ``lines`` (the section's patch lines) and, for ``add``,
    ``file_text``. ``None`` when the text is not a patch Codex would parse."""
    lines = [line.removesuffix("\r") for line in patch.strip().split("\n")]
    if len(lines) >= 4 and lines[0].strip() in _WRAPPERS and lines[-1].strip().endswith("EOF"):
        lines = lines[1:-1]
    if len(lines) < 2 or lines[0].strip() != "*** Begin Patch" or lines[-1].strip() != "*** End Patch":
        return None
    body = lines[1:-1]
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(body):
        header = body[i].strip()
        j = i + 1
        if header.startswith(_ADD):
            while j < len(body) and body[j].startswith("+"):
                j += 1
            added = [line[1:] for line in body[i + 1 : j]]
            out.append(
                {
                    "op": "add",
                    "path": header[len(_ADD) :],
                    "move_to": None,
                    "lines": body[i:j],
                    "file_text": "".join(line + "\n" for line in added),
                }
            )
        elif header.startswith(_DELETE):
            out.append({"op": "delete", "path": header[len(_DELETE) :], "move_to": None, "lines": body[i:j]})
        elif header.startswith(_UPDATE):
            move_to = None
            if j < len(body) and body[j].startswith(_MOVE):
                move_to = body[j][len(_MOVE) :].strip()
                j += 1
            while j < len(body) and not body[j].strip().startswith((_ADD, _DELETE, _UPDATE)):
                j += 1
            out.append(
                {"op": "update", "path": header[len(_UPDATE) :], "move_to": move_to, "lines": body[i:j]}
            )
        else:
            return None
        i = j
    return out or None


def edit_fields(patch: str) -> list[dict[str, Any]]:
    """:class:`~takeover.trajectories.events.Event` fields (``type``, ``path``, ``edit``, ``file_text``,
    ``text``) of the ``file_edit`` actions of one patch, one per section, in patch order."""
    found = sections(patch)
    if found is None:
        return [{"type": "file_edit", "path": None, "edit": "apply_patch", "text": patch}]
    out = []
    for section in found:
        fields: dict[str, Any] = {
            "type": "file_edit",
            "path": section["path"],
            "text": "\n".join(section["lines"]),
        }
        if section["op"] == "add":
            fields.update(edit="create", file_text=section["file_text"])
        elif section["op"] == "delete":
            fields["edit"] = "delete"
        else:
            fields["edit"] = "apply_patch"
        out.append(fields)
    return out
