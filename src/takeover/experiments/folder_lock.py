"""One coordinator per output folder: ``OUT/run.lock``.

Two coordinators working in one output folder would plan, redo and overwrite each other's units. The one
that runs holds an exclusive ``flock`` on ``OUT/run.lock`` for as long as it works, with its pid, host,
start time and command line written in the file; a second one stops at once with an error naming them.
The kernel releases the lock when the holder exits in any way (``kill -9`` included), so a stale file never
blocks a resumed run. On a shared file system the lock is as good as the file system's ``flock`` (NFSv4 and
CephFS honour it across machines).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from takeover.errors import TakeoverError

LOCK_NAME = "run.lock"
# Folders this process holds (resolved path -> depth): holding one again (the quickstart around its
# experiment) is not a second coordinator. flock would refuse it, since each open() is a new lock owner.
_held: dict[Path, int] = {}


class OutDirInUse(TakeoverError):
    """Another coordinator (``takeover run``, the quickstart, or ``run_experiment`` in Python) is working in
    this output folder.

    Attributes:
        out_dir: the folder.
        holder: what the holder wrote in ``OUT/run.lock`` (``pid``, ``host``, ``started_at``, ``command``);
            empty when it could not be read.
    """

    def __init__(self, out_dir: Path, holder: dict):
        self.out_dir = str(out_dir)
        self.holder = holder
        pid = holder.get("pid")
        who = (f"pid {pid} on {holder.get('host', 'an unknown host')}, since {holder.get('started_at', '?')}: "
               f"{holder.get('command', '?')}") if pid else "a process that has not written its pid yet"
        stop = f" (stop it with: kill {pid})" if pid and holder.get("host") == socket.gethostname() else ""
        super().__init__(f"{out_dir} is in use by another takeover run ({who}); wait until it ends{stop}, "
                         "or give another output folder")


@contextlib.contextmanager
def hold_out_dir(out_dir: Path | str) -> Iterator[Path]:
    """Hold ``OUT/run.lock`` for the duration of the ``with`` block; yields the lock file's path. A process
    that holds it already may enter again (the quickstart holds it around its experiment).

    Raises:
        OutDirInUse: another process holds it (the message names its pid, host, start and command).
        OSError: the folder cannot be created or the file cannot be opened.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out.resolve() / LOCK_NAME
    if path in _held:
        _held[path] += 1
        try:
            yield path
        finally:
            _held[path] -= 1
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutDirInUse(out, _read_holder(path)) from None
        holder = {"pid": os.getpid(), "host": socket.gethostname(),
                  "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
                  "command": " ".join(sys.argv) or sys.executable}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(holder) + "\n").encode(), 0)
        _held[path] = 1
        try:
            yield path
        finally:
            del _held[path]
    finally:
        os.close(fd)  # releases the lock; the file stays (a resumed run reuses it)


def _read_holder(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
