"""The one process runner: a command in a session of its own, killed with everything it started.

Every command takeover runs on a task's behalf goes through :func:`run_process`: the build steps of a
task environment, the test command of the grading, the shell commands of a replay and of an agent. The
command is the leader of a new session and process group. At the time limit, at the memory limit when
one is asked, and when the leader exits, every process left in that group is killed (SIGKILL), so no
``pip`` of a timed-out build, no ``sleep`` a test started in the background and no server an agent
forgot keeps running after its command is over.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Literal

from pydantic import BaseModel

#: Which limit killed a command.
Killed = Literal["timeout", "memory"]

# Seconds between two looks at a command's resident memory (only when a memory limit is asked).
_WATCH_INTERVAL = 0.2
#: Seconds :func:`kill_group` waits for killed processes to end.
KILL_WAIT = 10.0
# Messages of a command that died because an allocation failed under the address-space limit.
_MEMORY_MARKERS = re.compile(r"MemoryError|Cannot allocate memory|std::bad_alloc|out of memory", re.IGNORECASE)


class ProcessResult(BaseModel):
    """How one command ended.

    Attributes:
        exit_code: the command's exit status; ``None`` when it was killed at a limit.
        output: stdout and stderr interleaved, decoded as UTF-8 (undecodable bytes replaced), at most
            ``output_limit`` characters; empty when the output went to ``log_path``.
        log_path: the file the output was appended to, or ``None``.
        killed: ``"timeout"`` or ``"memory"`` when the command hit that limit (``"memory"`` also when it
            failed with an out-of-memory message under the memory limit; ``exit_code`` is then kept).
        seconds: wall-clock seconds from start to the end of the command.
    """

    exit_code: int | None
    output: str = ""
    log_path: Path | None = None
    killed: Killed | None = None
    seconds: float

    @property
    def timed_out(self) -> bool:
        """The command was killed at its time limit."""
        return self.killed == "timeout"


def run_process(
    argv: Sequence[str],
    *,
    timeout: float,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    memory_mb: int | None = None,
    log_path: Path | str | None = None,
    output_limit: int | None = None,
) -> ProcessResult:
    """Run ``argv`` as the leader of a new session and kill its whole process group when it is over.

    Args:
        argv: the command (no shell unless ``argv`` starts one, e.g. ``["bash", "-c", script]``).
        timeout: seconds before the command and every process it started are killed.
        cwd: working folder (default: this process's).
        env: the command's environment (default: this process's).
        memory_mb: resident-memory limit of the whole session in MiB, or ``None`` for none. A watchdog
            kills the group above it; ``prlimit`` (when installed) also caps each process's address
            space at four times the limit, so that a runaway allocation fails inside the command.
        log_path: append stdout and stderr to this file instead of returning them.
        output_limit: keep at most this many characters of output (``None``: all).

    Returns:
        A :class:`ProcessResult`. Stdin is empty (``/dev/null``).

    Raises:
        OSError: the command cannot start (no such program or working folder).
    """
    argv = list(argv)
    limit = memory_mb * 1024 * 1024 if memory_mb is not None else None
    if limit is not None and (prlimit := shutil.which("prlimit")):
        argv = [prlimit, f"--as={limit * 4}", "--", *argv]
    start = time.monotonic()
    with _output_file(log_path) as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=None if env is None else dict(env), stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        killed: Killed | None = None
        stop = threading.Event()

        def watch() -> None:
            nonlocal killed
            while not stop.wait(_WATCH_INTERVAL):
                if session_rss_bytes(proc.pid) > limit:
                    killed = "memory"
                    kill_group(proc.pid)
                    return

        watcher = threading.Thread(target=watch, daemon=True) if limit is not None else None
        if watcher is not None:
            watcher.start()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            killed = killed or "timeout"
        finally:
            stop.set()
            if watcher is not None:
                watcher.join()
            # At a limit, on an interrupt, or after the leader exited: nothing of the group stays.
            kill_group(proc.pid)
            proc.wait()
        text = ""
        if log_path is None:
            out.seek(0)
            raw = out.read() if output_limit is None else out.read(output_limit * 4)
            text = raw.decode("utf-8", "replace")
            if output_limit is not None:
                text = text[:output_limit]
    exit_code = None if killed else proc.returncode
    if limit is not None and killed is None and proc.returncode != 0 and _MEMORY_MARKERS.search(text[-4000:]):
        killed = "memory"
    return ProcessResult(exit_code=exit_code, output=text, log_path=Path(log_path) if log_path else None,
                         killed=killed, seconds=time.monotonic() - start)


def _output_file(log_path: Path | str | None) -> IO[bytes]:
    if log_path is None:
        return tempfile.TemporaryFile()
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    return open(log_path, "ab")  # closed by the caller's ``with``


def session_rss_bytes(sid: int) -> int:
    """Resident memory of all processes of the session ``sid``, in bytes."""
    page = os.sysconf("SC_PAGE_SIZE")
    # /proc/PID/stat fields after "pid (comm)": state, ppid, pgrp, session, ... rss (24th field overall)
    return sum(int(fields[21]) * page for fields in _proc_stats() if int(fields[3]) == sid)


def kill_group(pgid: int) -> None:
    """SIGKILL the process group ``pgid`` (a leader started by :func:`run_process` and all it started) and
    wait, at most :data:`KILL_WAIT` seconds, until none of its processes runs any more.

    A process that moved to a group or session of its own (``setsid``) is out of reach; inside the
    sandbox the pid namespace (:func:`takeover.sandbox.wrap`) takes it down with the command.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone already
        os.killpg(pgid, signal.SIGKILL)
    # A signal is delivered when the process next runs: wait, so that the caller may remove the folder the
    # processes worked in, or look for them, right away.
    deadline = time.monotonic() + KILL_WAIT
    while any(int(f[2]) == pgid and f[0] not in (b"Z", b"X") for f in _proc_stats()):
        if time.monotonic() > deadline:
            return
        time.sleep(0.01)


def _proc_stats() -> Iterator[list[bytes]]:
    """The fields of every ``/proc/PID/stat`` after ``pid (comm)``; processes that exit meanwhile are skipped."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 21:
            yield fields
