"""Python interpreters and ``uv`` on this machine: the one place that looks for them.

Interpreters are never downloaded. A version ``major.minor`` is looked for in pyenv's versions
(``$PYENV_ROOT``, ``~/.pyenv``, ``/root/.pyenv``), among the interpreters ``uv`` knows (``uv python find``
with downloads off) and as ``pythonX.Y`` on ``PATH``, in that order. ``takeover doctor`` lists the same
places that an environment build uses.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from uv import find_uv_bin

from takeover.errors import EnvironmentUnavailable


def uv_binary() -> str | None:
    """Path of ``uv`` (on ``PATH``, beside the running interpreter, or from the ``uv`` package), or None."""
    found = shutil.which("uv")
    if found:
        return found
    beside = Path(sys.executable).parent / "uv"
    if beside.exists():
        return str(beside)
    try:
        return find_uv_bin()
    except OSError:  # the package is installed without its binary
        return None


@functools.lru_cache(maxsize=64)
def interpreter_version(python: str | Path) -> str | None:
    """``major.minor.micro`` of an interpreter, or None when it does not run (within 30 seconds)."""
    try:
        out = subprocess.run([str(python), "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                             capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in re.split(r"[.\-]", name))


def interpreter_candidates(version: str) -> list[Path]:
    """Paths that may hold Python ``version`` (``major.minor``), best first; none of them is run.

    pyenv versions ``X.Y.Z`` (highest patch first), the interpreter ``uv python find`` names (downloads
    off), and ``pythonX.Y`` on ``PATH`` (pyenv's shims skipped: they may point at no interpreter).
    A path may not exist.
    """
    candidates: list[Path] = []
    roots = [os.environ.get("PYENV_ROOT"), str(Path.home() / ".pyenv"), "/root/.pyenv"]
    for root in dict.fromkeys(r for r in roots if r):
        versions = Path(root) / "versions"
        if versions.is_dir():
            for d in sorted(versions.glob(f"{version}.*"), key=lambda p: _version_key(p.name), reverse=True):
                if re.fullmatch(rf"{re.escape(version)}\.\d+", d.name):
                    candidates.append(d / "bin" / f"python{version}")
    uv = uv_binary()
    if uv:
        try:
            out = subprocess.run([uv, "python", "find", "--no-python-downloads", "--no-project", version],
                                 capture_output=True, text=True, timeout=60,
                                 env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"}, check=False)
            if out.returncode == 0 and out.stdout.strip():
                candidates.append(Path(out.stdout.strip()))
        except (OSError, subprocess.TimeoutExpired):
            pass
    path = os.pathsep.join(d for d in os.environ.get("PATH", os.defpath).split(os.pathsep)
                           if Path(d).name != "shims")
    on_path = shutil.which(f"python{version}", path=path)
    if on_path:
        candidates.append(Path(on_path))
    return list(dict.fromkeys(candidates))


@functools.lru_cache(maxsize=32)
def find_interpreter(version: str) -> Path:
    """An interpreter of ``major.minor`` = ``version`` on this machine; never downloads one.

    The first of :func:`interpreter_candidates` that exists and runs as that version.

    Raises:
        EnvironmentUnavailable: none found; the message says how to install one.
    """
    for cand in interpreter_candidates(version):
        if cand.exists():
            got = interpreter_version(cand)
            if got and got.rsplit(".", 1)[0] == version:
                return cand
    raise EnvironmentUnavailable(
        f"no Python {version} interpreter on this machine (looked in pyenv versions, uv-managed interpreters "
        f"and python{version} on PATH); install one: pyenv install {version} (or: uv python install {version})"
    )
