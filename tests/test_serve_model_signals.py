"""``takeover serve-model`` ends its model server, and everything the server started, within seconds of
SIGTERM or SIGINT, whatever the server is doing: answering a long completion, or still being checked at
start-up. The llama.cpp server is played by a stand-in written here (``python -m llama_cpp.server`` finds
it first on ``PYTHONPATH``) that ignores SIGTERM and SIGINT, starts a helper that ignores them too, and
answers through the scripted OpenAI-compatible server; afterwards /proc is searched for any of them."""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from test_processes import processes_with

from takeover.embedded_model import SERVER_MODULES, STARTUP_REQUESTS, free_port

STAND_IN = '''
import os, signal, subprocess, sys, time
from pathlib import Path

from takeover.testing.scripted_server import ScriptedServer

signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
folder = Path(args["--model"]).parent
stubborn = "import signal, time; [signal.signal(s, signal.SIG_IGN) for s in (signal.SIGTERM, signal.SIGINT)]; time.sleep(3600)"
helper = subprocess.Popen([sys.executable, "-c", stubborn, args["--model"]])
(folder / "pids").write_text(f"{os.getpid()} {helper.pid}")
busy_from = int((folder / "busy-from").read_text())


def answer(body, n):
    if n >= busy_from:  # a long prompt evaluation: the answer never comes
        (folder / f"busy-{n}").write_text("")
        return {"delay": 3600, "content": "late"}
    return {"content": "ready", "usage": {"prompt_tokens": 12, "completion_tokens": 1}}


with ScriptedServer(answer, port=int(args["--port"])):
    while True:
        time.sleep(3600)
'''


def stand_in_path(root: Path) -> Path:
    """A folder for ``PYTHONPATH`` with the stand-in ``llama_cpp.server`` and empty packages for the server
    extras that are not installed (only their presence is checked)."""
    (root / "llama_cpp").mkdir(parents=True)
    (root / "llama_cpp" / "__init__.py").write_text("")
    (root / "llama_cpp" / "server.py").write_text(STAND_IN)
    for name in SERVER_MODULES:
        if importlib.util.find_spec(name) is None:
            (root / name).mkdir()
            (root / name / "__init__.py").write_text("")
    return root


def group_members(pgid: int) -> list[int]:
    """Pids of the live processes of process group ``pgid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
                found.append(int(entry.name))
    return found


def wait_for(path: Path, proc: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, f"serve-model exited early with {proc.returncode}"
        assert time.monotonic() < deadline, f"{path.name} did not appear within {seconds} s"
        time.sleep(0.1)


@pytest.mark.parametrize(
    ("signals", "phase", "exit_code"),
    [
        ([signal.SIGTERM], "serving", 0),
        ([signal.SIGINT], "serving", 0),
        ([signal.SIGTERM], "starting", 0),
        # A second Ctrl-C while the server is being stopped is delivered after the stop: it ends serve-model
        # as an interrupt (status 130) and cannot cut the stop short.
        ([signal.SIGINT, signal.SIGINT], "serving", 130),
    ],
    ids=["sigterm-while-serving", "sigint-while-serving", "sigterm-during-start-up", "sigint-twice-while-serving"],
)
def test_serve_model_stops_its_server_group_on_a_signal_whatever_the_server_does(tmp_path, signals, phase,
                                                                               exit_code):
    token = f"stand-in-{uuid.uuid4().hex}"
    model = tmp_path / f"{token}.gguf"
    model.write_bytes(b"GGUF")
    # While serving, the start-up's completions (the usage check and the speed measurement) are answered and
    # the next one hangs; during start-up the usage check itself hangs.
    (tmp_path / "busy-from").write_text(str(STARTUP_REQUESTS) if phase == "serving" else "0")
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(stand_in_path(tmp_path / "path")),
                                                         os.environ.get("PYTHONPATH", "")]),
           "TAKEOVER_CACHE": str(tmp_path / "cache")}
    stderr = (tmp_path / "stderr").open("wb")
    serve = subprocess.Popen([sys.executable, "-m", "takeover.cli", "serve-model", "--port", str(port),
                              "--model-path", str(model)], env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=stderr)
    client = None
    try:
        if phase == "serving":
            deadline = time.monotonic() + 60
            while b"serving" not in (tmp_path / "stderr").read_bytes():
                assert serve.poll() is None and time.monotonic() < deadline, (tmp_path / "stderr").read_text()
                time.sleep(0.1)
            client = socket.create_connection(("127.0.0.1", port))
            body = b'{"model": "m", "messages": [{"role": "user", "content": "a long prompt"}]}'
            client.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            wait_for(tmp_path / f"busy-{STARTUP_REQUESTS}", serve)
        else:
            wait_for(tmp_path / "busy-0", serve)
        server_pid, _helper_pid = map(int, (tmp_path / "pids").read_text().split())
        assert len(processes_with(token)) >= 2  # the stand-in server and its helper run
        t0 = time.monotonic()
        for signum in signals:
            serve.send_signal(signum)
            time.sleep(0.5)
        assert serve.wait(timeout=60) == exit_code, (tmp_path / "stderr").read_text()
        deadline = time.monotonic() + 30  # generous: the stop takes about STOP_GRACE seconds
        while processes_with(token) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes_with(token) == [], (tmp_path / "stderr").read_text()
        assert group_members(server_pid) == []
        assert time.monotonic() - t0 < 20  # STOP_GRACE (2 s) and the kill, with room for a busy machine
    finally:
        if client is not None:
            client.close()
        stderr.close()
        if serve.poll() is None:
            serve.kill()
            serve.wait()
        for pid in processes_with(token):  # never leave the stand-ins running, even when the test fails
            os.kill(pid, signal.SIGKILL)
