"""Small file helpers shared by every stage: atomic writes and JSON Lines.

Results are written atomically (temporary file in the same folder, fsync, rename) so that a crash never
leaves a half-written record, and a re-run can trust every file it finds.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from takeover.errors import InputError


@functools.cache
def _file_mode() -> int:
    # mkstemp creates files 0600; a result file gets the mode any new file would get (0666 less the umask),
    # so that reports and unit records on a shared folder are readable by whoever the umask allows.
    # Read once: os.umask can only be read by setting it.
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _temporary(path: Path) -> tuple[int, str]:
    """A temporary file beside ``path`` (same folder, so the rename is atomic), with a new file's mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.fchmod(fd, _file_mode())
    return fd, tmp


def atomic_write_bytes(path: Path | str, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; parent folders are created. Returns the path."""
    path = Path(path)
    fd, tmp = _temporary(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def atomic_write_text(path: Path | str, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_chunks(path: Path | str, chunks: Iterable[str]) -> Path:
    """Write the UTF-8 text of ``chunks`` to ``path`` atomically, one chunk at a time (a large file is
    never held in memory whole). Returns the path."""
    path = Path(path)
    fd, tmp = _temporary(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def to_jsonable(obj: Any) -> Any:
    """Pydantic models become plain dicts (JSON mode); everything else is returned unchanged."""
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    return obj


def stable_form(obj: Any) -> Any:
    """The one rule of stable keys: a record (pydantic model) as its JSON object with every field at its
    default left out, in the records inside it too (pydantic's ``exclude_defaults``); lists and dicts are
    walked, anything else is returned unchanged.

    What a key is computed over (a unit's inputs, a run folder's inputs, a grading key, a view's key) is
    in this form, so that a setting added later, with a default, leaves the keys of everything made before
    it as they were. Reading the form back fills the defaults in. The other side of the rule: a default
    that changes must change the key too (the form says nothing of a field at its default), so the format
    number of what is keyed is bumped with it (``takeover.experiments.units.UNITS_FORMAT``,
    ``takeover.agents.run_folder.INPUTS_FORMAT``)."""
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json", exclude_defaults=True)
    if isinstance(obj, dict):
        return {k: stable_form(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [stable_form(v) for v in obj]
    return obj


def dumps(obj: Any, *, indent: int | None = 2) -> str:
    """Deterministic JSON: sorted keys are *not* used so that model field order is kept, but the same
    object always gives the same bytes."""
    return json.dumps(to_jsonable(obj), indent=indent, ensure_ascii=False)


def atomic_write_json(path: Path | str, obj: Any) -> Path:
    """Write ``obj`` (a pydantic model or JSON-able value) as indented JSON, atomically."""
    return atomic_write_text(path, dumps(obj) + "\n")


def write_jsonl(path: Path | str, rows: Iterable[Any]) -> Path:
    """Write rows (models or dicts) as JSON Lines, atomically."""
    text = "".join(json.dumps(to_jsonable(r), ensure_ascii=False) + "\n" for r in rows)
    return atomic_write_text(path, text)


def append_jsonl(path: Path | str, row: Any) -> None:
    """Append one row and flush it to disk: used for logs written as a run goes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(to_jsonable(row), ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def not_utf8(path: Path | str, data: bytes, start: int, *, offset: int = 0, first_line: int = 1) -> InputError:
    """The error for bytes of ``path`` that are not UTF-8: ``data`` holds the text read, ``start`` the first
    bad byte in it; ``offset`` and ``first_line`` say where ``data`` begins in the file (for a file read line
    by line). Names the file, the line and the byte (0-based, in the file) and column (1-based)."""
    line_start = data.rfind(b"\n", 0, start) + 1
    line = first_line + data.count(b"\n", 0, start)
    return InputError(path, f"not UTF-8 text (byte {offset + start}, column {start - line_start + 1})",
                      record=f"line {line}")


def read_text(path: Path | str) -> str:
    """The UTF-8 text of the file ``path``, exactly as written (no newline translation: patches and prompts
    keep their carriage returns). The one reader of a user's text files, so that every file read gets the
    same one-line errors.

    Raises:
        takeover.errors.InputError: the file is missing, unreadable (a folder, no permission) or not UTF-8
            (names the line, the byte and the column).
    """
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, "is a folder, not a file") from None
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise not_utf8(path, data, exc.start) from None


def read_json(path: Path | str) -> Any:
    """The JSON value of the file ``path`` (:func:`read_text`'s rules).

    Raises:
        takeover.errors.InputError: as :func:`read_text`; the file is empty, or not valid JSON (names the
            line and column, and says when the text ends too early: a file cut while it was written).
    """
    text = read_text(path)
    if not text.strip():
        raise InputError(path, "empty file")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        ends = exc.msg.startswith("Unterminated string") or exc.pos >= len(text.rstrip())
        cut = " (the file ends too early: cut while it was written?)" if ends else ""
        raise InputError(path, f"not valid JSON ({exc.msg}, column {exc.colno}){cut}",
                         record=f"line {exc.lineno}") from None


def iter_jsonl(path: Path | str) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line (1-based line numbers), reading one line at a
    time.

    Raises:
        takeover.errors.InputError: the file cannot be read, or a line is not UTF-8 or not valid JSON (names
            the file and the line).
    """
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed by the with below; open errors become InputError
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror or exc})") from None
    offset = 0
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise not_utf8(path, raw, exc.start, offset=offset, first_line=lineno) from None
            offset += len(raw)
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(path, f"not valid JSON ({exc.msg} at column {exc.colno})", record=f"line {lineno}") from None


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


def sha256_file(path: Path | str, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def stable_hash(obj: Any, length: int = 16) -> str:
    """Short content hash of a JSON-able value (keys sorted): the key of a unit of work."""
    text = json.dumps(to_jsonable(obj), sort_keys=True, ensure_ascii=False, default=str)
    return sha256_text(text)[:length]


def with_current_names(data: Any, earlier_names: dict[str, str]) -> Any:
    """A record of an earlier version with its renamed fields under their current names (``earlier_names``:
    earlier name -> current name); anything else is returned unchanged. For a pydantic ``mode="before"``
    model validator, so that files written before a rename are still read.

    Raises:
        ValueError: a field is given under both names (pydantic reports it as a validation error).
    """
    if not isinstance(data, dict) or not earlier_names.keys() & data.keys():
        return data
    renamed = dict(data)
    for earlier, name in earlier_names.items():
        if earlier in renamed:
            if name in renamed:
                raise ValueError(f"give {name!r} once (its earlier name {earlier!r} is given too)")
            renamed[name] = renamed.pop(earlier)
    return renamed
