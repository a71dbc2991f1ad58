"""A stand-in for llama-cpp-python's server, so that ``takeover serve-model`` and the quickstart's embedded
model run without llama.cpp and without the model's weights.

:func:`install` writes a ``llama_cpp`` package (and empty packages for the server extras the embedded
model looks for, when they are not installed) into a folder to put first on ``PYTHONPATH``. Its ``python -m llama_cpp.server`` writes
the command line it was given to ``$STANDIN_ARGV`` (JSON) and answers as the scripted OpenAI-compatible
server with the script named by ``$STANDIN_SCRIPT`` (``module:function``, imported with the tests folder
on the path), until it is stopped.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

TESTS = Path(__file__).resolve().parent
EXTRAS = ("uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")

SERVER_MAIN = '''
import argparse, importlib, json, os, sys, threading

parser = argparse.ArgumentParser()
for flag in ("--model", "--model_alias", "--host", "--port", "--n_ctx", "--n_threads", "--n_threads_batch",
             "--n_batch", "--flash_attn", "--logits_all"):
    parser.add_argument(flag)
args = parser.parse_args()
with open(os.environ["STANDIN_ARGV"], "w") as fh:
    json.dump(sys.argv[1:], fh)
sys.path.insert(0, os.environ["STANDIN_TESTS"])
module, name = os.environ["STANDIN_SCRIPT"].split(":")
script = getattr(importlib.import_module(module), name)
from takeover.testing.scripted_server import ScriptedServer

server = ScriptedServer(script, model=args.model_alias, port=int(args.port)).start()
threading.Event().wait()
'''


def install(folder: Path, argv_log: Path, script: str = "test_experiment_e2e:script") -> dict[str, str]:
    """Write the stand-in packages into ``folder``; returns the environment variables a process needs to
    use them (``PYTHONPATH`` first, and where the stand-in logs and finds its script)."""
    (folder / "llama_cpp" / "server").mkdir(parents=True, exist_ok=True)
    (folder / "llama_cpp" / "__init__.py").write_text('__version__ = "0.0-standin"\n')
    (folder / "llama_cpp" / "server" / "__init__.py").write_text("")
    (folder / "llama_cpp" / "server" / "__main__.py").write_text(SERVER_MAIN)
    for extra in EXTRAS:
        if importlib.util.find_spec(extra) is not None:
            continue  # a real one is installed: never shadow it
        (folder / extra).mkdir(exist_ok=True)
        (folder / extra / "__init__.py").write_text("")
    return {"PYTHONPATH": str(folder), "STANDIN_ARGV": str(argv_log), "STANDIN_TESTS": str(TESTS),
            "STANDIN_SCRIPT": script}


def logged_argv(argv_log: Path) -> dict[str, str]:
    """The stand-in server's flags as ``{"--port": "8080", ...}``."""
    argv = json.loads(argv_log.read_text())
    return dict(zip(argv[::2], argv[1::2], strict=True))
