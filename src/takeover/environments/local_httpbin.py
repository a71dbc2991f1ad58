"""A local httpbin for test suites that read ``HTTPBIN_URL``, so they pass without the internet.

psf/requests' test suite of the 1.x and early 2.x releases (SWE-bench versions 1.1 to 2.4) calls
``HTTPBIN = os.environ.get('HTTPBIN_URL', 'http://httpbin.org/')``. SWE-bench's images have the network
and reach httpbin.org; the ``local`` backend's tests run without it. Instead, httpbin itself (the same
application httpbin.org serves, from PyPI) is served on 127.0.0.1 inside the sandbox, beside the tests,
and ``HTTPBIN_URL`` points at it (docs/protocol.md section 6). Later requests releases (2.9 on) start
their own local httpbin through ``pytest-httpbin``, which their specification installs; nothing is
needed for them.

The server's Python is a small venv of its own (:data:`HTTPBIN_PACKAGES`, resolved as of
:data:`PACKAGES_DATE`), built once with ``uv`` under ``cache_dir()/httpbin/<hash>`` from this machine's
interpreter; the task's environment is left untouched. :func:`server_commands` are the shell lines
that start it and export the variable.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from filelock import FileLock

from takeover._util.io import stable_hash
from takeover.environments.build_steps import BUILD_TIMEOUT, BuildLog, make_venv, pip_install
from takeover.sources.repos import cache_dir

#: The variable the test suites read.
HTTPBIN_VARIABLE = "HTTPBIN_URL"
#: What the server's venv holds (httpbin's own dependencies resolve as of :data:`PACKAGES_DATE`).
HTTPBIN_PACKAGES = ("httpbin==0.10.2",)
#: uv's ``exclude-newer`` for the server's venv, so that it is the same wherever it is built.
PACKAGES_DATE = "2024-06-01T00:00:00Z"
#: Seconds the tests wait for the server to listen before they start anyway (and fail as offline).
START_SECONDS = 30
# Run by the venv's python with the port file's path: serves httpbin on a free port of 127.0.0.1 (the
# sandbox's own loopback) and writes the port to the file once it listens.
_SERVER = """
import os, sys
from werkzeug.serving import make_server
from httpbin import app
server = make_server("127.0.0.1", 0, app, threaded=True)
with open(sys.argv[1] + ".part", "w") as fh:
    fh.write(str(server.server_port))
os.replace(sys.argv[1] + ".part", sys.argv[1])
server.serve_forever()
"""


def uses_httpbin_url(workspace: Path) -> bool:
    """Whether a tracked file of the checkout ``workspace`` reads :data:`HTTPBIN_VARIABLE` (``git grep``)."""
    proc = subprocess.run(["git", "grep", "-q", "-F", HTTPBIN_VARIABLE], cwd=workspace, capture_output=True,
                          check=False)
    return proc.returncode == 0


def httpbin_venv() -> Path:
    """The folder of the server's venv (:data:`HTTPBIN_PACKAGES`), built on first use; later calls reuse it.

    Raises:
        EnvironmentUnavailable: the venv cannot be built (no ``uv`` or ``venv``, or the packages cannot be
            had: offline without them in uv's cache). The message names the build log.
    """
    key = stable_hash({"packages": HTTPBIN_PACKAGES, "date": PACKAGES_DATE,
                       "python": ".".join(map(str, sys.version_info[:2]))})
    root = cache_dir() / "httpbin"
    venv = root / key
    done = venv / "takeover-httpbin.ok"
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / f"{key}.lock")):
        if done.exists():
            return venv
        log = BuildLog(root / f"{key}.build.log", BUILD_TIMEOUT, PACKAGES_DATE)
        # The interpreter takeover runs on, by its installation's path (a venv of it may go away).
        base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
        python = make_venv(log, base if base.exists() else Path(sys.executable), venv, seed=False)
        pip_install(log, python, list(HTTPBIN_PACKAGES), what="installing httpbin for a local HTTPBIN_URL")
        done.write_text("ok\n")
    return venv


def server_commands(venv: Path, state_dir: Path) -> list[str]:
    """Shell lines (bash) that start httpbin from ``venv`` in the background, wait until it listens (at
    most :data:`START_SECONDS`), and export :data:`HTTPBIN_VARIABLE` as its URL. The port file goes to
    ``state_dir``; the server ends with the script."""
    port_file = shlex.quote(str(state_dir / "httpbin.port"))
    python = shlex.quote(str(venv / "bin" / "python"))
    return [
        f"rm -f {port_file}",
        f"{python} -c {shlex.quote(_SERVER.strip())} {port_file} >/dev/null 2>&1 &",
        "takeover_httpbin=$!",
        "trap 'kill $takeover_httpbin 2>/dev/null' EXIT",
        f"for _ in $(seq {START_SECONDS * 10}); do [ -s {port_file} ] && break; sleep 0.1; done",
        f"export {HTTPBIN_VARIABLE}=\"http://127.0.0.1:$(cat {port_file} 2>/dev/null)/\"",
    ]
