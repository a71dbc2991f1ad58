"""OpenHands' own Python environment, built once into takeover's cache: the OpenHands runtime
(:mod:`takeover.agents.openhands`) runs its agent there, and the ``condensed`` view
(:mod:`takeover.views.condensed`) its condenser.

``openhands-sdk`` and ``openhands-tools`` need Python >= 3.12 and pull heavy packages (``browser-use``,
``litellm``...), while takeover runs on 3.11 and stays light. So OpenHands runs in a venv of
its own: Python :data:`PYTHON` (3.13 when no 3.12 is found; never downloaded), with exactly the packages of
``openhands_requirements.lock`` beside this file (``uv pip compile --universal`` of :data:`PACKAGES`, installed with
``--no-deps``), under ``cache_dir()/openhands/<key>`` (``TAKEOVER_CACHE``; the key hashes the lock and the
interpreter's version). The first build takes about half a minute with uv's cache warm (it downloads
~200 MB otherwise) and writes ``environment.json`` (interpreter, seconds, every installed version), which
each run copies into its ``run.json`` (``environment.agent_environment``).
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from takeover._util.io import atomic_write_json, sha256_text, stable_hash
from takeover.environments.build_steps import BUILD_TIMEOUT, BuildLog, make_venv, pip_install
from takeover.environments.interpreters import find_interpreter, interpreter_version, uv_binary
from takeover.errors import EnvironmentUnavailable
from takeover.sources.repos import cache_dir

#: What the environment is for; the lock pins these and all their dependencies.
PACKAGES = ("openhands-sdk==1.58.2", "openhands-tools==1.58.2")
#: The interpreters it may use, best first (the SDK needs >= 3.12).
PYTHON = ("3.12", "3.13")
LOCK = Path(__file__).with_name("openhands_requirements.lock")
_DONE = "environment.json"


@dataclass(frozen=True)
class OpenHandsEnvironment:
    """A built environment.

    Attributes:
        python: its interpreter.
        root: its folder (the venv).
        description: ``environment.json``: ``python`` (version), ``packages`` (name -> version, every
            installed package), ``build_seconds`` (how long the first build took), ``lock_sha256``.
    """

    python: Path
    root: Path
    description: dict

    @property
    def versions(self) -> dict[str, str]:
        """The versions of OpenHands' own packages and of litellm (for ``run.json``'s ``versions``)."""
        wanted = ("openhands-sdk", "openhands-tools", "litellm")
        return {name: self.description["packages"][name] for name in wanted if name in self.description["packages"]}


def _interpreter() -> Path:
    errors = []
    for version in PYTHON:
        try:
            return find_interpreter(version)
        except EnvironmentUnavailable as exc:
            errors.append(str(exc))
    raise EnvironmentUnavailable("OpenHands needs Python 3.12 or 3.13: " + errors[0])


def _installed(python: Path) -> dict[str, str]:
    uv = uv_binary()
    argv = [uv, "pip", "freeze", "--python", str(python)] if uv else [str(python), "-m", "pip", "freeze"]
    out = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
    pins = (line.split("==", 1) for line in out.stdout.splitlines() if "==" in line)
    return {name.lower(): version for name, version in pins}


def openhands_environment() -> OpenHandsEnvironment:
    """The OpenHands environment, built on first use (one build at a time: a file lock); later calls, in
    any process, reuse it.

    Raises:
        EnvironmentUnavailable: no Python 3.12/3.13, or the packages cannot be installed (offline without
            them in uv's cache); the message names the build log.
    """
    interpreter = _interpreter()
    version = interpreter_version(interpreter) or "?"
    lock_text = LOCK.read_text(encoding="utf-8")
    key = stable_hash({"lock": lock_text, "python": version.rsplit(".", 1)[0]})
    root = cache_dir() / "openhands"
    venv = root / key
    done = venv / _DONE
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / f"{key}.lock")):
        if not done.exists():
            log = BuildLog(root / f"{key}.build.log", BUILD_TIMEOUT)
            t0 = time.perf_counter()
            python = make_venv(log, interpreter, venv, seed=False)
            pip_install(log, python, ["--no-deps", "-r", str(LOCK)],
                        what="installing OpenHands (openhands-sdk, openhands-tools)")
            atomic_write_json(done, {
                "python": version,
                "interpreter": str(interpreter),
                "build_seconds": round(time.perf_counter() - t0, 1),
                "lock_sha256": sha256_text(lock_text),
                "packages": _installed(python),
            })
    description = json.loads(done.read_text(encoding="utf-8"))
    return OpenHandsEnvironment(python=venv / "bin" / "python", root=venv, description=description)


def litellm_model(model: str, base_url: str | None) -> str:
    """The model name as OpenHands' litellm routes it: a model behind an OpenAI-compatible ``base_url``
    without a provider prefix of litellm's (``openai/``, ``hosted_vllm/``...) gets ``openai/``."""
    if base_url and "/" not in model:
        return f"openai/{model}"
    return model
