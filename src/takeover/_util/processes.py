"""The one process runner: a command in a session of its own, killed with everything it started; and
processes that end with the process that started them.

Every command takeover runs on a task's behalf goes through :func:`run_process`: the build steps of a
task environment, the test command of the grading, the shell commands of a replay and of an agent. The
command is the leader of a new session and process group. At the time limit, at the memory limit when
one is asked, and when the leader exits, every process left in that group is killed (SIGKILL), so no
``pip`` of a timed-out build, no ``sleep`` a test started in the background and no server an agent
forgot keeps running after its command is over.

A process that starts long-lived helpers ends them with itself: :func:`end_with_parent` (for a child: the
kernel kills it when its parent dies) and :func:`end_descendants` (for a process that is about to exit: every
process below it, and the sessions they lead, are killed).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
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
    sandbox the pid namespace (:func:`takeover._util.sandbox.wrap`) takes it down with the command.
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
    for _, fields in _proc_stats_by_pid():
        yield fields


# --- processes that end with the one that started them -------------------------------------------------

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """libc's ``prctl`` (Linux), looked up once: a child between fork and exec must not load libraries."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def end_with_parent(parent_pid: int | None = None, signum: int = signal.SIGKILL) -> None:
    """Ask the kernel to send ``signum`` to this process when the thread that started it ends (Linux
    ``prctl(PR_SET_PDEATHSIG)`` through ctypes; nothing elsewhere).

    Args:
        parent_pid: the pid that started this process; when it is already gone (it died before the call),
            this process exits at once with status 1.
        signum: the signal sent (SIGKILL: the process cannot outlive its parent; SIGTERM lets it clean up).
    """
    prctl = _prctl()
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0)
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)


# Run by a fresh interpreter before the command replaces it: argv is [pid, signum, command...].
_TRAMPOLINE = ("import ctypes, os, sys; ctypes.CDLL(None).prctl(1, int(sys.argv[2]), 0, 0, 0); "
               "os.getppid() == int(sys.argv[1]) or os._exit(1); os.execvp(sys.argv[3], sys.argv[3:])")


def ending_with_parent(argv: Sequence[str], signum: int = signal.SIGKILL) -> list[str]:
    """``argv`` wrapped so that the command gets ``signum`` when this process's calling thread ends: a short
    Python program sets ``PR_SET_PDEATHSIG`` (:func:`end_with_parent`) and then becomes the command
    (``exec``, same pid). Unchanged outside Linux. Unlike a ``preexec_fn`` it is safe in a process with
    threads.

    Example: ``subprocess.Popen(ending_with_parent(["python", "-m", "llama_cpp.server", ...]))``.
    """
    if _prctl() is None:
        return list(argv)
    return [sys.executable, "-c", _TRAMPOLINE, str(os.getpid()), str(int(signum)), *argv]


def descendants(pid: int) -> list[int]:
    """Pids of every living process below ``pid`` in the process tree (children first, then theirs),
    from ``/proc/PID/task/*/children`` (Linux; empty elsewhere)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{parent}/task/{tid}/children", "rb") as fh:
                    children = [int(c) for c in fh.read().split()]
            except OSError:
                continue
            for child in children:
                if child not in found:
                    found.append(child)
                    todo.append(child)
    return found


def end_descendants(pid: int | None = None) -> list[int]:
    """SIGKILL every process below ``pid`` (default: this process) and every process in a session one
    of them leads (the commands of :func:`run_process` lead sessions of their own, and their children
    stay in them when the leader dies first); wait at most :data:`KILL_WAIT` seconds until they are gone.

    Returns:
        the pids that were signalled.
    """
    pid = os.getpid() if pid is None else pid
    own_session = os.getsid(0)
    found = descendants(pid)
    sessions = set()
    for child in found:
        with contextlib.suppress(OSError):
            sid = os.getsid(child)
            if sid == child and sid != own_session:
                sessions.add(sid)
    if sessions:
        found += [int(name) for name, fields in _proc_stats_by_pid() if int(fields[3]) in sessions
                  and int(name) not in found and int(name) != pid]
    for child in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(child, signal.SIGKILL)
    deadline = time.monotonic() + KILL_WAIT
    while time.monotonic() < deadline and any(_alive(child) for child in found):
        time.sleep(0.01)
    return found


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, already dead and waiting for its parent, does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def _proc_stats_by_pid() -> Iterator[tuple[str, list[bytes]]]:
    """``(pid, fields)`` of every process, as :func:`_proc_stats`."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 21:
            yield name, fields
