"""The sandbox probe against an independent check, so that a probe wrongly answering "unavailable" fails
here instead of turning the sandbox tests into skips (they skip on the same probe)."""

from __future__ import annotations

import shutil
import subprocess

from takeover._util import sandbox


def bwrap_runs_true() -> bool:
    """Independently of takeover: ``bwrap`` is on PATH and runs ``true`` with what the sandbox needs (a
    read-only root, /dev, /proc and no network)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "true"]
    return subprocess.run(argv, capture_output=True, timeout=60, check=False).returncode == 0


def test_the_probe_says_what_bubblewrap_can_do_here(monkeypatch):
    monkeypatch.delenv(sandbox.DISABLE_ENV, raising=False)
    works = bwrap_runs_true()
    st = sandbox.status()
    assert st.available is works, st.message
    assert (st.tool == shutil.which("bwrap")) if works else st.tool is None


def test_the_sandbox_can_be_turned_off_on_purpose(monkeypatch):
    monkeypatch.setenv(sandbox.DISABLE_ENV, "1")
    st = sandbox.status()
    assert (st.available, st.tool) == (False, None) and sandbox.DISABLE_ENV in st.message
