"""Replayed content the record does not determine (docs/protocol.md section 5.3, extension "Unrecorded
output").

A replay runs the recorded commands again. A file that a command fills with a program's output
(``pytest test_dummy.py > pytest_output.txt``, ``python run.py | tee out.txt``) holds what the program printed
*in the replay*: the record shows the command, not those bytes (the output went to the file, not to the
observation), and a program's output may change from run to run (pytest's ``1 failed in 0.12s``). Such a
file is *unrecorded* at an event when a replayed command wrote it by redirecting output into it (``>``,
``>>``, ``&>``, ``2>``, ``tee``) at or before that event, it differs there from the starting state, and a line
it added is found nowhere in the record (the commands, the recorded observations, the editors' texts, the
run's final patch): content a here-document, an ``echo`` or a later ``cat`` of the file shows is recorded.

Two replays of one run on this machine give the same states: the first replay's content of the unrecorded
files is kept in takeover's cache (``<cache>/replays/<key>.json``, the key hashing the run's events, final
patch and root, ``base_commit`` and the starting state) and a later replay of the same run takes it
(:func:`pin_unrecorded`), so the checkpoint, its hash and everything keyed on it are the same. A replay
elsewhere may give other bytes for these files, and only for these: the checkpoint names them
(:class:`takeover.checkpoints.Checkpoint` ``unrecorded_files``) with a hash of the rest of its patch.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

from takeover._util.io import sha256_text, stable_hash, to_jsonable
from takeover.sources.repos import cache_dir
from takeover.trajectories.events import Event, Trajectory

#: Where output goes into a file: ``>``, ``>>``, ``>|``, ``&>``, ``&>>``, ``N>``, ``N>>`` (not ``>&N``, a copy of
#: a stream) followed by the file.
_REDIRECT = re.compile(r"(?:^|[^<>&\d])(?:\d?>>?\|?|&>>?)[ \t]*(?!&)(\"[^\"]+\"|'[^']+'|[^\s;&|<>()]+)")
#: ``tee [-a|-i|--append ...] FILE...`` up to the end of its command.
_TEE = re.compile(r"\btee((?:[ \t]+(?:\"[^\"]+\"|'[^']+'|[^\s;&|<>()]+))+)")
_NOT_FILES = ("/dev/", "&")


def output_targets(command: str) -> list[str]:
    """The files ``command`` sends output into (redirections and ``tee``), as written (quotes removed)."""
    found = [m.group(1) for m in _REDIRECT.finditer(command)]
    for m in _TEE.finditer(command):
        found += [w for w in m.group(1).split() if not w.startswith("-")]
    return [t.strip("\"'") for t in found if t.strip("\"'") and not t.strip("\"'").startswith(_NOT_FILES)]


def _relative(target: str, root: str | None, cwd: str | None) -> str | None:
    """``target`` relative to the repository root (``None``: outside it), given the command's directory."""
    if root and (target == root or target.startswith(root.rstrip("/") + "/")):
        return target[len(root.rstrip("/")) + 1:] or None
    if target.startswith(("/", "~")):
        return None
    base = ""
    if cwd and root and cwd.startswith(root.rstrip("/") + "/"):
        base = cwd[len(root.rstrip("/")) + 1:].rstrip("/") + "/"
    return os.path.normpath(base + target).removeprefix("./") if not (base + target).startswith("..") else None


def _written(ev: Event, changed: set[str], root: str | None) -> set[str]:
    """The files of ``changed`` that ``ev``'s command sent output into."""
    targets = {t for t in (_relative(t, root, ev.cwd) for t in output_targets(ev.command or "")) if t}
    return {p for p in changed if p in targets or any(p.endswith("/" + t) for t in targets if "/" not in t)}


class _RecordText:
    """What the record shows, for finding the lines of a replayed file in it."""

    def __init__(self, trajectory: Trajectory) -> None:
        parts = [x for ev in trajectory.events for x in (ev.command, ev.text, ev.file_text, ev.new_text) if x]
        parts += [line[1:] for line in (trajectory.final_patch or "").splitlines() if line.startswith("+")]
        self.blob = "\n".join(parts)
        self.lines = {line.strip() for line in self.blob.splitlines()}

    def shows(self, diff: str) -> bool:
        """Whether every line ``diff`` adds (a file's diff against the starting state) is in the record."""
        if "GIT binary patch" in diff or "Binary files" in diff:
            return False
        for line in diff.splitlines():
            if not line.startswith("+") or line.startswith("+++"):
                continue
            text = line[1:].strip()
            if text and text not in self.lines and text not in self.blob:
                return False
        return True


def unrecorded_files(trajectory: Trajectory, actions: Sequence[str], diffs: Sequence[dict[str, str]]) -> list[list[str]]:
    """Per event, the files whose content there the record does not determine (module docstring), sorted.

    Args:
        trajectory: the replayed run.
        actions: per event, what the replay did (``ReplayStep.action``: ``command`` for a shell command).
        diffs: per event, ``{path: cumulative diff against the starting state}`` as the replay left them.
    """
    record = _RecordText(trajectory)
    root = (trajectory.working_dir or "").rstrip("/") or None
    written: set[str] = set()
    before: dict[str, str] = {}
    out: list[list[str]] = []
    for i, diff in enumerate(diffs):
        if i < len(actions) and actions[i] == "command" and diff is not before:
            changed = {p for p in set(diff) | set(before) if diff.get(p) != before.get(p)}
            written |= _written(trajectory.events[i], changed, root)
        out.append(sorted(p for p in written if p in diff and not record.shows(diff[p])))
        before = diff
    return out


def replay_key(trajectory: Trajectory, base_commit: str, start_tree: str | None) -> str:
    """The key of a run's replay on this machine: its events, final patch and root, ``base_commit`` and the
    starting state (not where the file is, nor the replay's settings)."""
    return stable_hash({"events": to_jsonable(trajectory.events), "final_patch": trajectory.final_patch,
                        "working_dir": trajectory.working_dir, "base_commit": base_commit, "start": start_tree},
                       length=32)


def _store(key: str) -> Path:
    return cache_dir() / "replays" / f"{key}.json"


def _load(path: Path) -> dict | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(doc, dict) and isinstance(doc.get("events"), dict) and isinstance(doc.get("diffs"), dict)
    return doc if ok else None


def _keep_first(path: Path, doc: dict) -> dict:
    """Write ``doc`` at ``path`` unless a record is there already (another replay of the run got there
    first: its record wins, and is returned); a record that cannot be read is replaced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh)
        try:
            os.link(tmp, path)  # fails when the file exists: of two replays at once, one wins
        except FileExistsError:
            held = _load(path)
            if held is not None:
                return held
            os.replace(tmp, path)
            tmp = ""
    finally:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return doc


def pin_unrecorded(key: str, diffs: list[dict[str, str]], unrecorded: list[list[str]]) -> tuple[
        list[dict[str, str]], list[list[str]]]:
    """The states and unrecorded files of a replay, with the unrecorded files' content of the first replay of
    the same run on this machine (``key``: :func:`replay_key`), kept in takeover's cache; the first replay
    stores its own. Events the store does not hold keep this replay's content.

    Returns:
        ``(diffs, unrecorded)``: per-event maps where the store's content replaced this replay's, and per
        event the files either replay found unrecorded.
    """
    table: dict[str, str] = {}
    events: dict[str, dict[str, str]] = {}
    for i, paths in enumerate(unrecorded):
        if paths:
            entry = events[str(i)] = {}
            for p in paths:
                digest = sha256_text(diffs[i][p])
                table[digest] = diffs[i][p]
                entry[p] = digest
    path = _store(key)
    held = _load(path)
    if held is None:
        if not events:
            return diffs, unrecorded
        held = _keep_first(path, {"key": key, "events": events, "diffs": table})
        if held.get("events") == events:
            return diffs, unrecorded
    pinned_diffs, pinned = list(diffs), list(unrecorded)
    for index, entry in held["events"].items():
        i = int(index)
        if i >= len(diffs) or not isinstance(entry, dict):
            continue
        stored = {p: held["diffs"][digest] for p, digest in entry.items() if held["diffs"].get(digest) is not None}
        pinned_diffs[i] = {**diffs[i], **stored}
        pinned[i] = sorted(set(stored) | set(unrecorded[i]))
    return pinned_diffs, pinned
