"""The model relay of a sandboxed OpenHands run: the endpoint behind a Unix socket.

OpenHands runs its commands in its own terminal, inside its own process, so the sandbox (bubblewrap: no
network, writes only in the workspace) must hold the whole OpenHands process; it then cannot reach the
model endpoint, not even on 127.0.0.1 (a new network namespace has its own loopback). The relay serves
the endpoint on a Unix socket in the run folder, which the sandbox can reach: inside, the driver
(:mod:`takeover.agents.openhands.oh_driver`) listens on its own loopback and pipes each connection to
the socket; here each HTTP request is sent on to the real endpoint with the API key added, so that the
key never enters the sandbox and commands reach no host but the endpoint, and no path of it but the one
the run's ``base_url`` names.

Each answered request is kept (:attr:`ModelRelay.exchanges`): the first one's messages give the run's
initial prompt characters, and each response's ``id`` links its seconds to OpenHands' call of that id.
"""

from __future__ import annotations

import json
import socketserver
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlsplit

import httpx

from takeover.llm import Usage
from takeover.llm.usage import usage_from_payload


@dataclass
class Exchange:
    """One request through the relay: its JSON body, the response's status, ``id``, reply text (the first
    choice's ``content``) and usage, and the seconds it took."""

    request: dict[str, Any]
    status: int
    response_id: str | None
    reply: str
    usage: Usage | None
    seconds: float


def _reply(answer: Any) -> str:
    try:
        return answer["choices"][0]["message"].get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError):
        return ""


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    allow_reuse_address = True


class ModelRelay:
    """Serve ``base_url`` on the Unix socket ``socket_path`` until :meth:`close` (a context manager).

    Args:
        socket_path: where the socket is made (its folder must exist; a path under 100 characters).
        base_url: the endpoint root (``http://127.0.0.1:8080/v1``); requests for paths outside it get 403.
        api_key: sent as ``Authorization: Bearer`` (``None``: no key).
        timeout: seconds per request to the endpoint.
    """

    def __init__(self, socket_path: Path, base_url: str, api_key: str | None, timeout: float):
        parts = urlsplit(base_url.rstrip("/"))
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.base_path = parts.path
        self.api_key = api_key
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=timeout)
        self.socket_path = socket_path
        socket_path.unlink(missing_ok=True)
        self._server = _Server(str(socket_path), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the run records its calls."""

            def _forward(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(size) if size else b""
                path = self.path.split("?", 1)[0]
                if not (path == relay.base_path or path.startswith(relay.base_path.rstrip("/") + "/")):
                    self._reply(403, b'{"error": {"message": "the relay serves only the model endpoint"}}',
                                "application/json")
                    return
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "authorization", "content-length", "connection",
                                                "accept-encoding")}
                if relay.api_key:
                    headers["Authorization"] = f"Bearer {relay.api_key}"
                t0 = time.perf_counter()
                try:
                    response = relay._client.request(self.command, relay.origin + self.path, content=body,
                                                     headers=headers)
                except httpx.HTTPError as exc:
                    self._reply(502, json.dumps({"error": {"message": f"relay: {exc}"}}).encode(),
                                "application/json")
                    return
                seconds = time.perf_counter() - t0
                try:
                    request = json.loads(body) if body else {}
                    answer = response.json()
                except ValueError:
                    request, answer = {}, {}
                answer = answer if isinstance(answer, dict) else {}
                with relay._lock:
                    relay.exchanges.append(Exchange(
                        request=request if isinstance(request, dict) else {}, status=response.status_code,
                        response_id=answer.get("id") if isinstance(answer.get("id"), str) else None,
                        reply=_reply(answer), usage=usage_from_payload(answer.get("usage")), seconds=seconds))
                self._reply(response.status_code, response.content,
                            response.headers.get("content-type", "application/json"))

            def _reply(self, status: int, content: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_POST = _forward
            do_GET = _forward

        return Handler

    def close(self) -> None:
        """Stop serving and remove the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._client.close()
        self.socket_path.unlink(missing_ok=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
