"""Folders a command writes: checked before the work, built beside and swapped in whole, and scratch
folders that a later run removes when the process that made them is gone.

- :func:`check_writable`: an output location that cannot be written is refused before any work (a command
  that replays or grades for minutes and then cannot save loses it all).
- :func:`building_beside` / :func:`swap_in`: a folder whose files belong together (a checkpoint) is built in
  a new folder beside its destination and renamed into place in one step: a reader sees the whole folder
  or none of it, and a folder that exists already is never half overwritten. ``rename(2)`` onto a folder
  that is not empty fails, so of two commands building the same folder at once exactly one wins.
- :func:`replace_whole`: a folder a command may replace (an earlier export of the same task) is exchanged
  with the one built beside it in one step (``renameat2(2)`` with ``RENAME_EXCHANGE``), so that a reader,
  and a ``kill -9`` at any moment, sees the old folder whole or the new one whole, never a mix or a part.
- :func:`own_output` / :func:`own_file`: the one rule every command's output goes through: an output folder (a
  file) is created new (absent or empty) or recognised as this command's own for these inputs (its record names
  the same inputs); anything else (another input's output, a user's own files) is refused before any work, and
  nothing is written.
- :func:`scratch_folder` / :func:`sweep_scratch`: temporary folders named with the pid of the process that
  made them, so that the folders of a process killed with ``kill -9`` (it could not clean up) are removed
  by the next run instead of piling up in the temporary directory.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from takeover.errors import InputError

T = TypeVar("T")

#: Infix of a folder being built beside its destination: ``.<name>.partial-<pid>-<random>``.
PARTIAL = ".partial-"


def check_writable(path: Path | str, *, flag: str = "--out-dir", file: bool = False) -> Path:
    """Check, before any work, that the folder ``path`` (with ``file``: the file ``path``) can be created
    and written; nothing is left behind by the check. Returns ``path``.

    The check writes a probe file and removes it (permission bits alone say nothing for root, a read-only
    file system or a full quota).

    Raises:
        InputError: ``path`` (or a folder on the way to it) is a file, a file ``path`` is a folder, or the
            nearest existing folder cannot be written; the message names ``flag`` as the way out.
    """
    path = Path(path)
    way_out = f"give {flag} another location" if flag else "give another location"
    if file:
        if path.is_dir():
            raise InputError(path, f"is a folder, not a file; {way_out}")
        folder = path.parent
    else:
        folder = path
    existing = folder
    while not existing.exists():
        if existing.is_symlink():
            raise InputError(path, f"cannot be written: {existing} is a broken symbolic link; {way_out}")
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(path, f"cannot be written: {existing} is a file, not a folder; {way_out}")
    try:
        fd, probe = tempfile.mkstemp(prefix=".takeover-write-check-", dir=existing)
    except OSError as exc:
        where = "" if existing == folder else f" (in {existing})"
        raise InputError(path, f"cannot be written{where}: {exc.strerror or exc}; {way_out}") from None
    os.close(fd)
    os.unlink(probe)
    return path


def own_output(folder: Path | str, *, read: Callable[[Path], T | None], identity: Callable[[T], Mapping[str, Any]],
               wanted: Mapping[str, Any], record: str, describe: Callable[[T], str], what: str,
               flag: str = "--out-dir", ignore: Callable[[str], bool] | None = None) -> T | None:
    """The rule every command's output goes through: ``folder`` is this command's to write when it is new
    (absent, or an empty folder: returns ``None``) or holds this command's own output for these inputs (returns
    what ``read`` found). Anything else is refused before any work, and nothing is written.

    Args:
        read: the record of the output ``folder`` holds (its file ``record``: ``checkpoint.json``,
            ``views.json``, ``result.json``, ``task.toml``), or ``None`` when it holds no readable one.
        identity: the fields of a record that say which inputs it was made for.
        wanted: those fields for this command's inputs; a field whose wanted value is ``None`` is not compared.
        describe: a record in words, for the message (``the checkpoint of acme__calc-1 ... (event 4)``).
        what: what this command would write there, in words (``acme__calc-1 after_first_source_edit``).
        ignore: names of entries that do not make a folder non-empty (a lock file beside the results).

    Raises:
        InputError: ``folder`` is a file, holds files but no readable ``record``, or holds this command's output
            for other inputs; the message names what it holds and ``flag``, and nothing was written.
    """
    folder = Path(folder)
    if folder.is_symlink() and not folder.exists():
        raise InputError(folder, f"is a broken symbolic link; nothing was written: give another {flag}")
    if not folder.exists():
        return None
    if not folder.is_dir():
        raise InputError(folder, f"is a file, not a folder of {what}; nothing was written: give another {flag}")
    if not any(not (ignore and ignore(p.name)) for p in folder.iterdir()):
        return None
    held = read(folder)
    if held is None:
        raise InputError(folder, f"is not empty and holds no readable {record}; nothing was written: give a new "
                         f"or empty {flag}")
    found = identity(held)
    if any(v is not None and found.get(k) != v for k, v in wanted.items()):
        raise InputError(folder, f"holds {describe(held)}; nothing was written: give another {flag} for {what}, "
                         "or remove this one")
    return held


def own_file(path: Path | str, *, is_own: Callable[[Path], bool], what: str, flag: str = "--out-dir") -> bool:
    """:func:`own_output`'s rule for a command that writes one file: ``path`` is new (``False``), or this
    command's own for these inputs (``is_own(path)``: ``True``, it is replaced); anything else is refused.

    Raises:
        InputError: ``path`` is a folder, or a file this command did not write (names it and ``flag``).
    """
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return False
    if path.is_file() and is_own(path):
        return True
    raise InputError(path, f"is not {what} this command wrote; nothing was written: give another {flag}, or remove it")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _remove_if_orphaned(folder: Path, pid_text: str) -> None:
    """Remove ``folder`` when it is this user's and the process ``pid_text`` that made it is gone."""
    try:
        pid = int(pid_text)
        owner = folder.lstat().st_uid
    except (ValueError, OSError):
        return
    if pid != os.getpid() and owner == os.getuid() and not _alive(pid):
        shutil.rmtree(folder, ignore_errors=True)


def _sweep_partials(dest: Path) -> None:
    pattern = re.compile(re.escape(f".{dest.name}{PARTIAL}") + r"(\d+)-")
    with contextlib.suppress(OSError):
        for entry in dest.parent.iterdir():
            m = pattern.match(entry.name)
            if m and entry.is_dir():
                _remove_if_orphaned(entry, m.group(1))


@contextlib.contextmanager
def building_beside(dest: Path | str) -> Iterator[Path]:
    """A new empty folder beside ``dest`` (``.<name>.partial-<pid>-<random>`` in the same parent, so that
    :func:`swap_in` is one rename), removed at the end of the ``with`` unless it was swapped in. Folders
    left beside ``dest`` by processes that are gone (killed mid-build) are removed first.

    Raises:
        OSError: the parent folder cannot be created or written.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    _sweep_partials(dest)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}{PARTIAL}{os.getpid()}-", dir=dest.parent))
    try:
        yield tmp
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def swap_in(built: Path | str, dest: Path | str) -> bool:
    """Rename the folder ``built`` to ``dest`` when ``dest`` is absent or an empty folder; returns whether
    it did. ``False``: ``dest`` holds something (another command got there first), and nothing was changed.

    Raises:
        OSError: the rename fails for another reason (a file at ``dest``, another file system).
    """
    dest = Path(dest)
    try:
        os.rename(built, dest)
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
            return False
        raise
    return True


#: ``renameat2(2)``'s arguments: the current folder as the base of relative paths, and "exchange the two".
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Exchange the folders ``a`` and ``b`` in one step; ``False`` when this system cannot (no
    ``renameat2``, or a file system without ``RENAME_EXCHANGE``), and then nothing was changed.

    Raises:
        OSError: the exchange failed for another reason (names both paths).
    """
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(a), None, str(b))


def replace_whole(built: Path | str, dest: Path | str) -> None:
    """Put the folder ``built`` (in a folder from :func:`building_beside`, on ``dest``'s file system) in place
    of ``dest`` whole: renamed when ``dest`` is absent or empty, else exchanged with it in one step, so that
    ``dest`` always holds either the old folder whole or the new one whole. Afterwards ``built``'s path holds
    the old folder (or nothing), which :func:`building_beside` removes; a process killed before then leaves
    it for the next build's sweep. Where the system cannot exchange two folders, the old one is first renamed
    aside (a moment without ``dest``, never a part of it).

    Raises:
        OSError: a rename fails (a file at ``dest``, another file system).
    """
    built, dest = Path(built), Path(dest)
    if swap_in(built, dest) or _exchange(built, dest):
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{dest.name}{PARTIAL}{os.getpid()}-", dir=dest.parent))
    os.rename(dest, aside / "old")
    os.rename(built, dest)
    os.rename(aside, built)  # the old folder where the caller's cleanup removes it


def scratch_folder(prefix: str, *, label: str = "", dir: Path | str | None = None) -> Path:
    """A new temporary folder ``<prefix><pid>-[<label>-]<random>`` (in ``dir``, default the system's
    temporary directory), after removing this user's folders of that prefix left by processes that are gone.
    The caller removes it; if the process is killed first, the next call with the same prefix does.

    Raises:
        OSError: the folder cannot be created.
    """
    sweep_scratch(prefix, dir=dir)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-{label + '-' if label else ''}", dir=dir))


def sweep_scratch(prefix: str, *, dir: Path | str | None = None) -> None:
    """Remove this user's folders ``<prefix><pid>-...`` of ``dir`` (default: the temporary directory) whose
    process no longer runs. Folders of live processes, of other users, and names without a pid are left
    alone."""
    base = Path(dir) if dir is not None else Path(tempfile.gettempdir())
    pattern = re.compile(re.escape(prefix) + r"(\d+)-")
    with contextlib.suppress(OSError):
        for entry in base.iterdir():
            m = pattern.match(entry.name)
            if m and entry.is_dir() and not entry.is_symlink():
                _remove_if_orphaned(entry, m.group(1))
