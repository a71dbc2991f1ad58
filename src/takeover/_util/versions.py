"""Versions of the packages that shape results, for records (``run.json``, an experiment's ``versions.json``)."""

from __future__ import annotations

import platform
from importlib import metadata

#: Packages whose behaviour the results depend on, in the order records list them.
PACKAGES = ("takeover", "swebench", "mini-swe-agent", "litellm", "numpy", "scipy", "pydantic", "ray")


def package_versions() -> dict[str, str]:
    """``{"python": "3.11.9", "takeover": ..., ...}``: the Python version, then each of :data:`PACKAGES`
    that is installed (a package that is not installed, such as the optional ``ray``, is left out)."""
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out
