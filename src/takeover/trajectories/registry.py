"""The reader registry: detection by content and the entry points :func:`read_trajectories` /
:func:`read_trajectory` / :func:`iter_trajectories`.

A reader (:class:`Reader`) is a name, a ``detect(source) -> bool`` that looks at the parsed content (never
at the file name), a ``read(source) -> list[Trajectory]`` and what a replay of its runs needs to know of
the recording tool (:class:`ReplayNeeds`, looked up with :func:`replay_needs`). Readers are tried in ``priority`` order
(lower first); the first whose ``detect`` accepts the source reads it. The built-in readers (one module
each, :data:`BUILTIN_MODULES`, takeover's own run folders included) are registered when this module is
imported; another format plugs in with::

    from takeover.trajectories import Reader, register_reader

    register_reader(Reader(name="toy", detect=my_detect, read=my_read, priority=10,
                           replay=ReplayNeeds(editor_flavor="generic")))

``detect`` must be cheap and must not raise for foreign content; it gets the same :class:`Source` (file
parsed once) that ``read`` gets.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from takeover._util.registries import Registry
from takeover.errors import InputError
from takeover.trajectories import (
    atif,
    claude_code,
    codex_cli,
    mini_swe_agent,
    openhands_v0,
    openhands_v0_messages,
    openhands_v1,
    swe_agent,
    takeover_run,
)
from takeover.trajectories._common import (
    CUT_LAST_LINE,
    Reader,
    ReplayNeeds,
    Source,
    complete_unreported_counts,
    cut_line_note,
)
from takeover.trajectories.events import Trajectory

#: The readers by format name (``--format``), in registration order; :func:`readers` orders them for detection.
_READERS: Registry[Reader] = Registry("trajectory format", {}, where="--format")


def register_reader(reader: Reader, *, replace: bool = False) -> Reader:
    """Add ``reader`` to the registry and return it.

    Raises:
        ValueError: a reader of that name exists and ``replace`` is false.
    """
    if reader.name in _READERS and not replace:
        raise ValueError(f"a trajectory reader named {reader.name!r} is already registered")
    _READERS.add(reader.name, reader)
    return reader


def unregister_reader(name: str) -> None:
    """Remove a reader (no error when absent)."""
    _READERS.remove(name)


def readers() -> list[Reader]:
    """Registered readers in the order they are tried."""
    return sorted(_READERS.values(), key=lambda r: (r.priority, r.name))


def get_reader(name: str) -> Reader:
    """The reader called ``name``.

    Raises:
        InputError: no reader has that name (the message lists the known names).
    """
    return _READERS.named(name)


def replay_needs(fmt: str) -> ReplayNeeds:
    """What replaying a run of format ``fmt`` (its :attr:`Trajectory.format`) needs to know of the tool that
    recorded it: the :attr:`Reader.replay` of the reader of that name; the plain rules of
    :class:`ReplayNeeds` for a format no registered reader has (a run built in code)."""
    reader = _READERS.get(fmt)
    return reader.replay if reader is not None else ReplayNeeds()


def _unknown(source: Source) -> InputError:
    names = ", ".join(r.name for r in readers())
    if source.is_dir:
        return InputError(
            source.path, f"unknown trajectory format: not a run directory of any known format ({names})"
        )
    records = source.records()
    if not records:
        return InputError(source.path, f"unknown trajectory format: no records (known formats: {names})")
    label, first = records[0]
    if isinstance(first, dict):
        keys = ", ".join(sorted(first)[:8])
        what = f"an object with keys {keys}" if keys else "an empty object"
    else:
        what = f"a JSON {type(first).__name__}"
    return InputError(
        source.path,
        f"unknown trajectory format: {what} (known formats: {names})",
        record=label or "top-level object",
    )


def detect_format(path: Path | str) -> str:
    """Name of the reader that accepts ``path`` (by content).

    Raises:
        InputError: unreadable or damaged file, or no reader accepts it.
    """
    return _detect(Source(path)).name


def _detect(source: Source) -> Reader:
    for reader in readers():
        if source.is_dir != reader.directories:
            continue
        if reader.detect(source):
            return reader
    raise _unknown(source)


#: File name endings looked at when a folder of trajectories is expanded (:func:`expand_paths`).
TRAJECTORY_SUFFIXES = (".json", ".jsonl", ".traj")


def is_run_directory(path: Path | str) -> bool:
    """Whether ``path`` is a directory that a directory reader accepts as one run (an OpenHands 1.x
    conversation folder, a takeover agent run directory)."""
    p = Path(path)
    if not p.is_dir():
        return False
    source = Source(p)
    return any(r.directories and r.detect(source) for r in readers())


def expand_paths(paths: Iterable[Path | str], *, keep_run_dirs: bool = True) -> list[Path]:
    """Files and run folders to read, from what a user named.

    A file, and a folder that is itself one run (:func:`is_run_directory`), are kept as given. Any other
    folder is walked (sorted, recursively): each run folder inside is kept whole (not entered) and each
    file ending in :data:`TRAJECTORY_SUFFIXES` is listed. Files listed from a folder may still be other
    JSON (reports, indexes): callers read them and skip the ones no reader recognizes
    (:func:`is_unknown_format`). With ``keep_run_dirs=False`` only files are returned: run folders are
    entered like any other folder (for callers that hash each path as a file).

    Raises:
        InputError: a path does not exist.
    """
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise InputError(p, "trajectory file or folder not found")
        if p.is_file() or (keep_run_dirs and is_run_directory(p)):
            out.append(p)
            continue
        out.extend(_walk(p, keep_run_dirs))
    return out


def _walk(folder: Path, keep_run_dirs: bool) -> list[Path]:
    found: list[Path] = []
    for child in sorted(folder.iterdir()):
        if child.is_dir():
            found.extend([child] if keep_run_dirs and is_run_directory(child) else _walk(child, keep_run_dirs))
        elif child.is_file() and child.name.endswith(TRAJECTORY_SUFFIXES):
            found.append(child)
    return found


def is_unknown_format(exc: InputError) -> bool:
    """Whether ``exc`` (from :func:`read_trajectories`) says no reader recognizes a readable file, as
    opposed to a damaged file or a record missing a field."""
    return exc.reason.startswith("unknown trajectory format")


def read_trajectories(path: Path | str, *, format: str | None = None) -> list[Trajectory]:
    """Read every run in ``path``: a file holding one or many runs, or a run directory.

    Args:
        path: trajectory file (``.json``, ``.jsonl``, ``.traj``...) or run directory (OpenHands v1 events
            folder with ``base_state.json``).
        format: a reader name to skip detection.

    Returns:
        One :class:`Trajectory` per run, in file order; ``source_path`` and ``record`` say where each came from.
        A recorded prompt count of 0 for a non-empty prompt is replaced by an estimate flagged ``estimated``
        (docs/protocol.md section 1). A session log whose last line was cut off mid-write (a reader with
        :attr:`Reader.cut_last_line`) is read up to it, and ``metadata[CUT_LAST_LINE]`` says so.

    Raises:
        InputError: truncated or malformed file, unknown format, or a record missing a required field; the
            message names the file, the record (line or index) and the field.
    """
    source = Source(path)
    reader = get_reader(format) if format else _detect(source)
    runs = reader.read(source)
    if source.cut_last_line is not None:
        if not reader.cut_last_line:
            raise source.cut_last_line
        complete = sum(1 for line in source.text.split("\n")[:-1] if line.strip())
        for run in runs:
            run.metadata[CUT_LAST_LINE] = cut_line_note(source.cut_last_line, complete)
    for run in runs:
        complete_unreported_counts(run)  # a reported prompt count of 0 is not a count (protocol section 1)
    return runs


def read_trajectory(path: Path | str, *, record: int | None = None, format: str | None = None) -> Trajectory:
    """The one run of ``path``, or run number ``record`` (0-based, file order) of a file holding several.

    Raises:
        InputError: as :func:`read_trajectories`; also when ``path`` holds several runs and ``record`` is
            ``None`` (the message names the valid indices), or has no run ``record``.
    """
    runs = read_trajectories(path, format=format)
    if record is None and len(runs) != 1:
        raise InputError(path, f"holds {len(runs)} runs; choose one with --record 0..{len(runs) - 1}")
    index = record or 0
    if not 0 <= index < len(runs):
        raise InputError(path, f"has no run {index} (it holds {len(runs)})", record=f"index {index}")
    return runs[index]


def iter_trajectories(paths: Iterable[Path | str], *, format: str | None = None) -> Iterator[Trajectory]:
    """Yield the runs of many files in order (each file is read when reached; the first bad file raises)."""
    for path in paths:
        yield from read_trajectories(path, format=format)


#: Modules of the built-in readers (each defines ``READERS``), registered when this module is imported.
BUILTIN_MODULES = (
    mini_swe_agent,
    openhands_v0,
    openhands_v0_messages,
    openhands_v1,
    swe_agent,
    claude_code,
    codex_cli,
    takeover_run,
    atif,
)
for _module in BUILTIN_MODULES:
    for _reader in _module.READERS:
        register_reader(_reader)
