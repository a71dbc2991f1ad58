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


def _pyenv_candidates(version: str) -> list[Path]:
    """pyenv's ``X.Y.Z`` folders of ``version``, highest patch first (paths may not exist)."""
    candidates: list[Path] = []
    roots = [os.environ.get("PYENV_ROOT"), str(Path.home() / ".pyenv"), "/root/.pyenv"]
    for root in dict.fromkeys(r for r in roots if r):
        versions = Path(root) / "versions"
        if versions.is_dir():
            for d in sorted(versions.glob(f"{version}.*"), key=lambda p: _version_key(p.name), reverse=True):
                if re.fullmatch(rf"{re.escape(version)}\.\d+", d.name):
                    candidates.append(d / "bin" / f"python{version}")
    return candidates


def _path_candidates(version: str) -> list[Path]:
    """``pythonX.Y`` on ``PATH`` (pyenv's shims skipped: they may point at no interpreter)."""
    path = os.pathsep.join(d for d in os.environ.get("PATH", os.defpath).split(os.pathsep)
                           if Path(d).name != "shims")
    on_path = shutil.which(f"python{version}", path=path)
    return [Path(on_path)] if on_path else []


def _uv_candidates(version: str) -> list[Path]:
    """The interpreter ``uv python find`` names with downloads off (about a second: asked last)."""
    uv = uv_binary()
    if not uv:
        return []
    try:
        out = subprocess.run([uv, "python", "find", "--no-python-downloads", "--no-project", version],
                             capture_output=True, text=True, timeout=60,
                             env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"}, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [Path(out.stdout.strip())] if out.returncode == 0 and out.stdout.strip() else []


def interpreter_candidates(version: str) -> list[Path]:
    """Paths that may hold Python ``version`` (``major.minor``), best first; none of them is run.

    pyenv versions ``X.Y.Z`` (highest patch first), the interpreter ``uv python find`` names (downloads
    off), and ``pythonX.Y`` on ``PATH`` (pyenv's shims skipped: they may point at no interpreter).
    A path may not exist.
    """
    found = _pyenv_candidates(version) + _uv_candidates(version) + _path_candidates(version)
    return list(dict.fromkeys(found))


def _runs_as(cand: Path, version: str) -> bool:
    got = interpreter_version(cand) if cand.exists() else None
    return bool(got) and got.rsplit(".", 1)[0] == version


@functools.lru_cache(maxsize=32)
def find_interpreter(version: str) -> Path:
    """An interpreter of ``major.minor`` = ``version`` on this machine; never downloads one.

    The first of :func:`interpreter_candidates` that exists and runs as that version; ``uv python find``
    (the slow one) is asked only when pyenv and ``PATH`` have none.

    Raises:
        EnvironmentUnavailable: none found; the message says how to install one.
    """
    for cand in _pyenv_candidates(version) + _path_candidates(version):
        if _runs_as(cand, version):
            return cand
    for cand in _uv_candidates(version):
        if _runs_as(cand, version):
            return cand
    raise EnvironmentUnavailable(
        f"no Python {version} interpreter on this machine (looked in pyenv versions, uv-managed interpreters "
        f"and python{version} on PATH); install one: pyenv install {version} (or: uv python install {version})"
    )
