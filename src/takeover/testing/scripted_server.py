"""A scripted OpenAI-compatible HTTP server on 127.0.0.1 that replays recorded responses.

Tests, benchmarks and demos talk to it instead of a real model: it speaks ``POST /v1/chat/completions``
(and ``/chat/completions``) and ``GET /v1/models``, answers each request with the next entry of its
script, and keeps every request it received for assertions. It is a real server on a real socket, so the
code under test (litellm, mini-swe-agent, our client) runs unchanged.

A script entry (dict) is one of:

- ``{"content": "text"}``: a normal completion. Optional ``usage`` ({``prompt_tokens``,
  ``completion_tokens``, ``cached_tokens``, ``reasoning_tokens``}); without it usage is computed
  deterministically (see :func:`count_words`): prompt tokens = words in all request messages, completion
  tokens = words in the content and the reasoning. ``"usage": null`` sends no usage at all; a count given
  as ``0`` is sent as 0 (a server that served the prompt from its cache). ``cached_tokens`` goes to
  ``usage.prompt_tokens_details``, ``reasoning_tokens`` to ``usage.completion_tokens_details``.
- ``{"content": null, "reasoning_content": "..."}``: a reasoning server's answer (``content`` may be any
  text too, e.g. inline ``<think>...</think>`` blocks).
- ``{"finish_reason": "length", ...}``: the reply's ``finish_reason`` (default ``stop``, or
  ``tool_calls``).
- ``{"status": 429, "error": "rate limited"}``: an HTTP error with an OpenAI-style error body; with
  ``"retry_after": 6`` it carries ``Retry-After: 6``, with ``"retry_after_date": 6`` a ``Retry-After``
  HTTP date 6 seconds after the moment it is sent.
- ``{"delay": 5.0, ...}``: sleep that many seconds before answering (to provoke client timeouts).
- ``{"drop": true}``: close the connection without answering (a dropped connection).
- ``{"tool_calls": [{"name": "bash", "arguments": {...}}], "content": ""}``: a native tool call answer.
- :func:`function_call` makes an OpenHands text-protocol answer (a ``<function=...>`` block in ``content``).

``script`` may also be a callable ``f(request_json, n) -> entry`` for answers that depend on the request.
When the script is exhausted the server answers HTTP 500 ``script exhausted``.

Structured output: every request's ``response_format`` (``None`` when it carried none) is recorded in
:attr:`ScriptedServer.response_formats`. A server made with ``refuse_response_format=400`` (or ``422``)
plays an endpoint that does not support the parameter: it answers every request that carries one with that
status and an error naming ``response_format``, as OpenAI-compatible servers do, without using a script
entry; ``refuse_response_format="json_schema"`` refuses only that type as llama-cpp-python's server does
(0.3.x accepts ``json_object`` with a schema but not ``json_schema``; its error handler turns the request's
validation error into HTTP 500 with the error, which names ``response_format``, in ``error.message``).
"""

from __future__ import annotations

import email.utils
import itertools
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

Entry = dict[str, Any]
Script = list[Entry] | Callable[[dict, int], Entry]


def count_words(text: str) -> int:
    """The scripted server's deterministic token count: whitespace-separated words."""
    return len(text.split())


def function_call(name: str, **parameters: object) -> Entry:
    """A script entry whose reply is one OpenHands text-protocol function call (``native_tool_calling``
    off): ``<function=NAME>`` with one ``<parameter=KEY>VALUE</parameter>`` per keyword, as OpenHands'
    prompt asks a model to write it; e.g. ``function_call("terminal", command="ls")``,
    ``function_call("file_editor", command="create", path="/testbed/a.py", file_text="x = 1\n")``,
    ``function_call("finish", message="done")``."""
    params = "".join(f"<parameter={key}>{value}</parameter>\n" for key, value in parameters.items())
    return {"content": f"<function={name}>\n{params}</function>"}


def _message_text(msg: dict) -> str:
    content = msg.get("content")
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def prompt_words(request: dict) -> int:
    """Scripted prompt tokens of a chat request: words over all its messages' contents."""
    return sum(count_words(_message_text(m)) for m in request.get("messages", []))


class ScriptedServer:
    """Context manager: ``with ScriptedServer([...]) as srv: srv.base_url`` -> ``http://127.0.0.1:PORT/v1``.

    Attributes:
        requests: the JSON bodies received, in order (refused ones included).
        served: number of script entries answered (errors included).
        refused: requests refused for their ``response_format`` (see the module docstring).
    """

    def __init__(self, script: Script, *, model: str = "scripted-model", port: int = 0,
                 context_tokens: int | None = None, refuse_response_format: int | str | None = None):
        self.script = script
        self.model = model
        self.context_tokens = context_tokens
        self.refuse_response_format = refuse_response_format
        self.requests: list[dict] = []
        self.served = 0
        self.refused = 0
        self._lock = threading.Lock()
        self._counter = itertools.count()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def response_formats(self) -> list[dict | None]:
        """The ``response_format`` of every request received, in order (``None``: the request had none)."""
        return [r.get("response_format") for r in self.requests]

    def _refusal(self, body: dict) -> tuple[int, dict] | None:
        """``(status, error body)`` when this server refuses the request's ``response_format``, else ``None``."""
        wanted, given = self.refuse_response_format, body.get("response_format")
        if wanted is None or given is None:
            return None
        if wanted == "json_schema":
            if not (isinstance(given, dict) and given.get("type") == "json_schema"):
                return None
            # llama-cpp-python 0.3.36's server, as it answers: the request's validation error, caught by its
            # route handler, as a 500 (the message then names the handler's file and line).
            return 500, {"error": {"message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
                                              "'response_format', 'type'), 'msg': \"Input should be 'text' or "
                                              "'json_object'\", 'input': 'json_schema', 'ctx': {'expected': "
                                              "\"'text' or 'json_object'\"}}\n\n  POST /v1/chat/completions",
                                   "type": "internal_server_error", "param": None, "code": None}}
        return int(wanted), {"error": {"message": "Unrecognized request argument supplied: response_format",
                                       "type": "invalid_request_error", "param": "response_format"}}

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="scripted-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _next_entry(self, body: dict) -> Entry | None:
        with self._lock:
            n = next(self._counter)
            self.requests.append(body)
            self.served += 1
        if callable(self.script):
            return self.script(body, n)
        return self.script[n] if n < len(self.script) else None

    def _completion(self, body: dict, entry: Entry) -> dict:
        content = entry.get("content", "")
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if entry.get("reasoning_content") is not None:
            message["reasoning_content"] = entry["reasoning_content"]
        finish = "stop"
        if entry.get("tool_calls"):
            message["tool_calls"] = [
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": call["arguments"]
                        if isinstance(call["arguments"], str)
                        else json.dumps(call["arguments"]),
                    },
                }
                for i, call in enumerate(entry["tool_calls"])
            ]
            finish = "tool_calls"
        out: dict[str, Any] = {
            "id": f"chatcmpl-scripted-{self.served}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", self.model),
            "choices": [{"index": 0, "message": message, "finish_reason": entry.get("finish_reason", finish)}],
        }
        if "usage" in entry and entry["usage"] is None:
            return out
        usage = dict(entry.get("usage") or {})
        prompt = usage.get("prompt_tokens", prompt_words(body))
        completion = usage.get(
            "completion_tokens", count_words(content or "") + count_words(entry.get("reasoning_content") or "")
        )
        out["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        if usage.get("cached_tokens") is not None:
            out["usage"]["prompt_tokens_details"] = {"cached_tokens": usage["cached_tokens"]}
        if usage.get("reasoning_tokens") is not None:
            out["usage"]["completion_tokens_details"] = {"reasoning_tokens": usage["reasoning_tokens"]}
        return out

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def do_GET(self):
                if self.path.rstrip("/").endswith("/models"):
                    entry = {"id": server.model, "object": "model"}
                    if server.context_tokens is not None:  # as vLLM reports it
                        entry["max_model_len"] = server.context_tokens
                    self._send(200, {"object": "list", "data": [entry]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "invalid JSON body"}})
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"unknown path {self.path}"}})
                    return
                refusal = server._refusal(body)
                if refusal is not None:
                    with server._lock:
                        server.requests.append(body)
                        server.refused += 1
                    self._send(*refusal)
                    return
                entry = server._next_entry(body)
                if entry is None:
                    self._send(500, {"error": {"message": "script exhausted", "type": "server_error"}})
                    return
                if entry.get("delay"):
                    time.sleep(float(entry["delay"]))
                if entry.get("drop"):
                    self.close_connection = True  # the socket closes with no answer at all
                    return
                if entry.get("status", 200) != 200:
                    headers = {}
                    if entry.get("retry_after") is not None:
                        headers["Retry-After"] = str(entry["retry_after"])
                    if entry.get("retry_after_date") is not None:
                        when = time.time() + float(entry["retry_after_date"])
                        headers["Retry-After"] = email.utils.formatdate(when, usegmt=True)
                    self._send(
                        int(entry["status"]),
                        {"error": {"message": entry.get("error", "scripted error"), "type": "scripted", "code": entry["status"]}},
                        headers,
                    )
                    return
                self._send(200, server._completion(body, entry))

        return Handler


def load_script(path: Path | str) -> list[Entry]:
    """Read a script file: a JSON list of entries, or JSON Lines of entries."""
    text = Path(path).read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> None:
    """``python -m takeover.testing.scripted_server SCRIPT.json [--port N]``: serve until interrupted."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("script")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    srv = ScriptedServer(load_script(args.script), port=args.port).start()
    print(srv.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()


if __name__ == "__main__":
    main()
