"""Unified diffs: which files a patch touches, per-file pieces, and a normalized form for comparison.

Built on ``unidiff``. Used by trajectories (final patch files), checkpoints (per-file diffs), grading
(test files of ``test_patch``) and replay verification (docs/protocol.md section 5: "same files, same hunks").
"""

from __future__ import annotations

import itertools
import re

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

_DIFF_HEADER = re.compile(r"^diff --git a/(.+?) b/(.+?)$", re.MULTILINE)


def _target_path(pf) -> str:
    # unidiff already drops git's a/ and b/ prefixes: stripping them again would lose a top-level folder a/ or b/.
    # Some dumps store diffs with CRLF line ends (SWE-Gym, SWE-agent 1.x); the "\r" is not part of the path.
    return pf.path.rstrip("\r")


def patch_files(patch: str) -> list[str]:
    """Repository-relative paths touched by ``patch`` (created, modified or deleted), in patch order.

    Falls back to ``diff --git`` headers when ``unidiff`` cannot parse the text (e.g. a binary-only diff).
    """
    if not patch or not patch.strip():
        return []
    try:
        return [_target_path(pf) for pf in PatchSet(patch)]
    except UnidiffParseError:
        return [m.group(2).rstrip("\r") for m in _DIFF_HEADER.finditer(patch)]


def split_patch(patch: str) -> dict[str, str]:
    """Split a multi-file git diff into ``{path: that file's diff text}``, keeping headers."""
    pieces: dict[str, str] = {}
    if not patch or not patch.strip():
        return pieces
    starts = [m.start() for m in re.finditer(r"^diff --git ", patch, re.MULTILINE)]
    if not starts:
        for path in patch_files(patch):
            pieces[path] = patch
        return pieces
    starts.append(len(patch))
    for begin, end in itertools.pairwise(starts):
        chunk = patch[begin:end]
        m = _DIFF_HEADER.match(chunk)
        if m:
            pieces[m.group(2)] = chunk if chunk.endswith("\n") else chunk + "\n"
    return pieces


def normalize_patch(patch: str) -> dict[str, list[str]]:
    """``{path: [hunk text, ...]}`` with index lines, modes and hunk-header context removed.

    Two patches are "the same" for replay verification when their normalized forms are equal: same
    files, same hunks (added and removed lines with their context), whatever the ``index`` hashes.
    """
    out: dict[str, list[str]] = {}
    if not patch or not patch.strip():
        return out
    try:
        ps = PatchSet(patch)
    except UnidiffParseError:
        return {path: [text] for path, text in split_patch(patch).items()}
    for pf in ps:
        hunks = []
        for h in pf:
            body = "".join(str(line) for line in h)
            hunks.append(f"@@ -{h.source_start},{h.source_length} +{h.target_start},{h.target_length}\n{body}")
        if pf.is_binary_file:
            hunks.append("<binary>")
        out[_target_path(pf)] = hunks
    return out


def first_difference(a: str, b: str) -> str | None:
    """The first file (sorted) whose normalized hunks differ between patches ``a`` and ``b``, or ``None``."""
    na, nb = normalize_patch(a), normalize_patch(b)
    for path in sorted(set(na) | set(nb)):
        if na.get(path) != nb.get(path):
            return path
    return None


def count_changed_lines(patch: str) -> int:
    """Added + removed lines of a patch (the "patch lines" shown by ``takeover points``)."""
    try:
        ps = PatchSet(patch)
    except UnidiffParseError:
        return sum(1 for line in patch.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---")))
    return sum(pf.added + pf.removed for pf in ps)
