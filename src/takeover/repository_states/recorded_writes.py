"""Writes of a command that the recorded run's own output proves (docs/protocol.md section 5.3, extension).

A replayed command that failed in the recorded run but succeeds here, and changes files, makes a replay
unreplayable: its changes may be ones the recorded run never made (a program missing on the recording
machine, a ``cd`` into a folder that was not there). One shape is common and safe: a here-document writes a
script and a later segment of the same command runs it, ``cat > X.py << 'EOF' ... EOF`` then ``python
X.py``. The script failed in the recorded run (the image's base interpreter lacked a module), but the
here-document's write does not depend on a later segment's exit code, and the recorded output shows the
file existed: its traceback names a line of ``/testbed/X.py``.

:func:`proven_writes` gives the changed paths of such a command whose change the recording proves: each is
the target of a here-document write of the command (``cat > PATH <<``, ``cat <<EOF > PATH``, ``>>``,
``tee [-a] PATH <<``) and the recorded output names a location in it (``File "/testbed/X.py", line 3``,
``X.py:12:``, ``X.py::test_a``). Pure functions over strings.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

# The first line of a here-document: the delimiter and what comes before the body on that line.
_HEREDOC_LINE = re.compile(r"^(?P<head>[^\n]*?)<<-?\s*(['\"]?)(?P<tag>\w+)\2(?P<tail>[^\n]*)$", re.MULTILINE)
_REDIRECT = re.compile(r">>?\s*(?P<path>\"[^\"]+\"|'[^']+'|[^\s;&|<>]+)")
_TEE = re.compile(r"\btee\s+(?:-a\s+|--append\s+)?(?P<path>\"[^\"]+\"|'[^']+'|[^\s;&|<>]+)")


def _unquote(word: str) -> str:
    try:
        parts = shlex.split(word)
    except ValueError:
        return word.strip("'\"")
    return parts[0] if parts else word


def heredoc_targets(command: str) -> list[str]:
    """Paths written by the here-documents of ``command``, as written in the command (in order)."""
    targets: list[str] = []
    for m in _HEREDOC_LINE.finditer(command or ""):
        line = m.group("head") + " " + m.group("tail")
        found = [x.group("path") for x in _REDIRECT.finditer(line)] + [x.group("path") for x in _TEE.finditer(line)]
        for path in found:
            path = _unquote(path)
            if path and path != "/dev/null" and not path.startswith("&") and path not in targets:
                targets.append(path)
    return targets


def _relative(path: str, root: str | None) -> str:
    """``path`` relative to the repository when it lies under ``root`` (the recorded repository root)."""
    path = path.replace("\\", "/")
    if root and (path == root or path.startswith(root.rstrip("/") + "/")):
        path = path[len(root.rstrip("/")) + 1:]
    while path.startswith("./"):
        path = path[2:]
    return path


def _written(changed: str, targets: Iterable[str], root: str | None) -> bool:
    """Whether the repository path ``changed`` is one of ``targets`` (relative ones may have been written
    from a subfolder: the path ends with them)."""
    for target in targets:
        rel = _relative(target, root)
        if rel == changed or (not rel.startswith("/") and changed.endswith("/" + rel)):
            return True
    return False


def _named_in(changed: str, output: str, root: str | None) -> bool:
    """Whether ``output`` names a location in ``changed``: a traceback frame ``File "/testbed/changed", line
    N``, a compiler's or pytest's ``changed:N`` / ``changed::name``; the path as written relative to the
    repository or under ``root``, never the end of another path."""
    prefix = rf"(?:{re.escape(root.rstrip('/'))}/|\./)?" if root else r"(?:\./)?"
    pattern = r"(?:^|[\s\"'(])" + prefix + re.escape(changed) + r"(?:\", line \d+|:\d+|::\w)"
    return bool(re.search(pattern, output, re.MULTILINE))


def proven_writes(command: str, output: str, changed: Iterable[str], root: str | None) -> list[str]:
    """The paths of ``changed`` (repository-relative) whose change the recorded run's ``output`` proves:
    each is written by a here-document of ``command`` and ``output`` names a location in it (see the
    module docstring). ``root`` is the recorded repository root (``/testbed``), for absolute targets."""
    targets = heredoc_targets(command)
    if not targets:
        return []
    return [p for p in changed if _written(p, targets, root) and _named_in(p, output or "", root)]
