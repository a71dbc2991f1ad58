"""Stand-in images of SWE-bench instances for the tests that talk to a real Docker daemon.

No image registry is reachable from the test machines, so the docker tests cannot pull SWE-bench's official
instance images. They build a **stand-in** instead, under the official image's name, made the way SWE-bench
makes its images but on another base:

- a Debian minbase root (``debootstrap`` from the Debian mirror apt is configured with), built once and
  cached under ``<the user's takeover cache>/docker-stand-ins/`` (``prerequisites.USER_CACHE``: it takes
  minutes, and is kept from one session to the next);
- a small ``conda`` stand-in (:data:`CONDA`, :data:`ACTIVATE`): ``conda create -n NAME python=X.Y PKG...``
  makes a venv ``/opt/miniconda3/envs/NAME`` and pip-installs the packages, ``conda activate NAME``
  activates it; nothing else of conda exists (a spec that needs ``conda env create`` fails, saying so);
- CPython: Debian's 3.11, or for another version the host's pyenv build copied in (without its
  site-packages; both are built on the same Debian);
- SWE-bench's own ``setup_env.sh`` and ``setup_repo.sh`` of the task (swebench's ``TestSpec``, with the
  requirement files read from the mirror: :func:`takeover.environments.official_image.official_test_spec`),
  run in the root under bubblewrap, with the clone URL pointed at the mirror; PyPI is reached with the
  host's network and CA bundle, which are not part of the image;
- ``/etc/pip.conf`` that makes pip give up at once without a network (:data:`PIP_CONF`);
- ``docker import`` under swebench's name for the instance, with the label :data:`STAND_IN_LABEL`.

A stand-in is never an official image: it has no Ubuntu, no conda and no compilers (``build-essential``),
and its packages come from pip, not conda. It is labelled so, and the README says what differs. The finished
root of each instance is cached too (a tar file keyed by everything that went into it), so a later session
only imports it, and an image already in the daemon under the same key is used as it is.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from prerequisites import USER_CACHE

from takeover.environments.official_image import instance_image_name as official_image_name
from takeover.environments.official_image import official_test_spec
from takeover.environments.swebench_specs import repo_version_specs  # swebench 4.1's table, under 4.1 and 5.x
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask

#: Label of every stand-in image: its value says what it is; :data:`KEY_LABEL` holds the build key.
STAND_IN_LABEL = "org.takeover.stand-in"
STAND_IN_TEXT = "takeover test stand-in of a SWE-bench instance image (Debian minbase, venvs, not conda)"
KEY_LABEL = "org.takeover.stand-in.key"
SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
#: Debian packages of the root: git, patch and kill (procps) for the harness, Debian's Python 3.11 with venv,
#: and the shared libraries that pyenv's CPython builds link to.
PACKAGES = ("git", "ca-certificates", "patch", "procps", "python3", "python3-venv", "libssl3", "libffi8", "libsqlite3-0",
            "libbz2-1.0", "liblzma5", "libreadline8", "zlib1g", "libncursesw6", "libexpat1", "libtirpc3",
            "libgdbm6", "libuuid1")
DEBIAN_PYTHON = "3.11"
PYENV = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
MIRROR_IN_ROOT = "/mirror"
#: The image's environment, as SWE-bench's Dockerfiles set it.
#: pip in the image gives up at once without a network (the tests' containers have none): SWE-bench's eval
#: scripts reinstall the project (``pip install -e .``), which otherwise retries for 15 s and then fails, leaving
#: the image's own install in place either way.
PIP_CONF = "[global]\nretries = 0\ntimeout = 5\n"
IMAGE_ENV = {"PATH": "/opt/miniconda3/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
             "TZ": "Etc/UTC", "LANG": "C.UTF-8"}

CONDA = r"""#!/bin/bash
# takeover test stand-in for conda (this is not conda): `conda create -n NAME python=X.Y [PKG...] [-y]` makes
# the venv /opt/miniconda3/envs/NAME with Python X.Y and pip-installs PKG (conda's NAME=V becomes NAME==V).
# `conda activate` is the shell function of /opt/miniconda3/bin/activate. Anything else fails, naming itself.
set -euo pipefail
root=/opt/miniconda3
if [ "${1:-}" != create ]; then
  echo "stand-in conda: 'conda $*' is not supported (only create and activate)" >&2
  exit 1
fi
shift
name="" python="" pkgs=()
while [ $# -gt 0 ]; do
  case "$1" in
    -n|--name) name="$2"; shift 2 ;;
    -y|--yes) shift ;;
    -c|--channel) shift 2 ;;
    python=*) python="${1#python=}"; shift ;;
    *=*) pkgs+=("$(echo "$1" | sed -E 's/^([^=<>!]+)=([^=])/\1==\2/')"); shift ;;
    *) pkgs+=("$1"); shift ;;
  esac
done
interpreter=""
for candidate in /usr/bin/python"$python" /root/.pyenv/versions/"$python".*/bin/python"$python"; do
  if [ -x "$candidate" ]; then interpreter="$candidate"; break; fi
done
if [ -z "$interpreter" ]; then
  echo "stand-in conda: no Python $python in this image" >&2
  exit 1
fi
"$interpreter" -m venv "$root/envs/$name"
if [ "${#pkgs[@]}" -gt 0 ]; then
  "$root/envs/$name/bin/python" -m pip install "${pkgs[@]}"
fi
"""

ACTIVATE = r"""# takeover test stand-in for conda's activation (this is not conda), sourced by SWE-bench's scripts:
# `conda activate NAME` activates the venv /opt/miniconda3/envs/NAME; other subcommands run the stand-in.
conda() {
  if [ "${1:-}" = activate ]; then
    if [ -n "${2:-}" ] && [ "$2" != base ]; then
      source "/opt/miniconda3/envs/$2/bin/activate" && export CONDA_DEFAULT_ENV="$2"
    else
      export CONDA_DEFAULT_ENV=base
    fi
  elif [ "${1:-}" = deactivate ]; then
    deactivate 2>/dev/null || true
  else
    command /opt/miniconda3/bin/conda "$@"
  fi
}
export CONDA_DEFAULT_ENV="${CONDA_DEFAULT_ENV:-base}"
"""


@dataclass
class StandIn:
    """A stand-in image in the daemon.

    Attributes:
        image: its name (swebench's name of the official image of the instance).
        image_id: the daemon's content id (``sha256:...``).
        seconds: what this call took (finding it, importing the cached root, or building it).
        how: ``daemon`` (already there), ``cached root`` (imported from the cached root), ``built``.
    """

    image: str
    image_id: str
    seconds: float
    how: str


def stand_in_dir() -> Path:
    """Where the roots are cached: ``<the user's takeover cache>/docker-stand-ins``, kept between sessions
    (the suite's own cache is new in each one)."""
    return USER_CACHE / "docker-stand-ins"


def _run(argv: list[str], *, log: Path | None = None, timeout: float = 1800, **kwargs) -> None:
    """Run ``argv``; its output goes to ``log``. Raises RuntimeError with the log's tail on failure."""
    out = open(log, "a") if log else subprocess.DEVNULL  # noqa: SIM115 - closed below
    try:
        done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, check=False, **kwargs)
    finally:
        if log:
            out.close()
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:] if log else ""
        raise RuntimeError(f"{argv[0]} failed with status {done.returncode}:\n{tail}")


class _Lock:
    """An exclusive file lock (two sessions never build the same root at once)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = open(path, "w")  # noqa: SIM115 - closed in __exit__

    def __enter__(self):
        fcntl.flock(self.fh, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fh, fcntl.LOCK_UN)
        self.fh.close()


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def base_root() -> tuple[Path, float]:
    """The cached Debian minbase root (built with ``debootstrap`` when missing); returns ``(path, seconds
    spent building it now)``."""
    key = _digest(SUITE, DEBIAN_MIRROR, *PACKAGES)[:16]
    root = stand_in_dir() / f"base-{SUITE}-{key}"
    if (root / "etc" / "debian_version").exists():
        return root, 0.0
    with _Lock(stand_in_dir() / "base.lock"):
        if (root / "etc" / "debian_version").exists():
            return root, 0.0
        start = time.monotonic()
        partial = root.with_name(root.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        _run(["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE, str(partial), DEBIAN_MIRROR],
             log=stand_in_dir() / f"{root.name}.log")
        for folder in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for item in (partial / folder).glob("*"):
                if item.is_file():
                    item.unlink()
        partial.rename(root)
        for old in stand_in_dir().glob(f"base-{SUITE}-*"):  # roots of other package lists
            if old != root and old.is_dir() and not old.name.endswith(".partial"):
                shutil.rmtree(old)
        return root, time.monotonic() - start


def _python_install(version: str) -> Path | None:
    """The host's pyenv build of Python ``version`` (``3.9`` -> ``~/.pyenv/versions/3.9.18``), or None for
    Debian's own version."""
    if version == DEBIAN_PYTHON:
        return None
    found = sorted(PYENV.glob(f"{version}.*"))
    if not found:
        raise RuntimeError(f"no pyenv build of Python {version} under {PYENV} for the stand-in image")
    return found[-1]


def _scripts(task: SourceTask, spec) -> tuple[str, str, str]:
    """``(python version, setup_env.sh, setup_repo.sh)`` of the task's ``TestSpec``, the clone pointed at the
    mirror."""
    mirror_url = f"file://{MIRROR_IN_ROOT}/{task.repo_slug}.git"
    repo_script = spec.install_repo_script.replace(f"https://github.com/{task.repo}", mirror_url)
    return str(repo_version_specs(task.repo, task.version)["python"]), spec.setup_env_script, repo_script


def _daemon_image(image: str) -> tuple[str, str | None] | None:
    """``(id, build key label)`` of ``image`` in the daemon, or None."""
    done = subprocess.run(["docker", "image", "inspect", image], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None
    info = json.loads(done.stdout)[0]
    return info["Id"], ((info.get("Config") or {}).get("Labels") or {}).get(KEY_LABEL)


def _import(tarball: Path, image: str, key: str) -> str:
    changes = [f"ENV {name}={value}" for name, value in IMAGE_ENV.items()]
    changes += ["WORKDIR /testbed", f'LABEL {STAND_IN_LABEL}="{STAND_IN_TEXT}"', f"LABEL {KEY_LABEL}={key}"]
    argv = ["docker", "import"]
    for change in changes:
        argv += ["--change", change]
    done = subprocess.run([*argv, str(tarball), image], capture_output=True, text=True, check=False, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"docker import of {tarball} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def _build_root(task: SourceTask, source: RepoSource, python: str, env_script: str, repo_script: str,
                tarball: Path, log: Path) -> None:
    """Make the instance's root from the base root and write it to ``tarball`` (atomically)."""
    base, _ = base_root()
    mirror = source.bare_repo(task.repo, task.base_commit)
    with tempfile.TemporaryDirectory(prefix="takeover-stand-in-", dir=stand_in_dir()) as scratch:
        root = Path(scratch) / "root"
        _run(["cp", "-a", str(base), str(root)], log=log)
        conda = root / "opt" / "miniconda3"
        (conda / "bin").mkdir(parents=True)
        (conda / "etc" / "profile.d").mkdir(parents=True)
        (conda / "bin" / "conda").write_text(CONDA)
        (conda / "bin" / "conda").chmod(0o755)
        (conda / "bin" / "activate").write_text(ACTIVATE)
        (conda / "etc" / "profile.d" / "conda.sh").write_text(ACTIVATE)
        install = _python_install(python)
        if install is not None:
            dest = root / install.relative_to("/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            # the interpreter alone: not the host's packages, nor the standard library's own tests
            shutil.copytree(install, dest, symlinks=True, ignore=shutil.ignore_patterns("site-packages", "test"))
            for lib in dest.glob("lib/python*.*"):
                (lib / "site-packages").mkdir(exist_ok=True)
        (root / "root" / ".bashrc").write_text("source /opt/miniconda3/etc/profile.d/conda.sh\n")
        (root / "root" / "setup_env.sh").write_text(env_script)
        (root / "root" / "setup_repo.sh").write_text(repo_script)
        (root / "etc" / "resolv.conf").write_text(Path("/etc/resolv.conf").read_text())
        (root / MIRROR_IN_ROOT.lstrip("/")).mkdir()
        pip_cache = stand_in_dir() / "pip-cache"
        pip_cache.mkdir(exist_ok=True)
        (root / "root" / ".cache" / "pip").mkdir(parents=True)
        bwrap = ["bwrap", "--bind", str(root), "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                 "--ro-bind", str(mirror), f"{MIRROR_IN_ROOT}/{task.repo_slug}.git",
                 # the host's trust store, to reach PyPI as the host does; bound for the build only
                 "--ro-bind", "/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/certs/ca-certificates.crt",
                 "--bind", str(pip_cache), "/root/.cache/pip", "--unshare-pid", "--die-with-parent", "--clearenv",
                 "--setenv", "HOME", "/root", "--setenv", "PIP_CERT", "/etc/ssl/certs/ca-certificates.crt",
                 "--setenv", "PIP_DISABLE_PIP_VERSION_CHECK", "1", "--setenv", "PIP_NO_INPUT", "1",
                 *[arg for name, value in IMAGE_ENV.items() for arg in ("--setenv", name, value)], "--chdir", "/root"]
        # As SWE-bench's Dockerfiles: the environment (through ~/.bashrc), then the repository.
        _run([*bwrap, "/bin/bash", "-c", "source ~/.bashrc && /bin/bash /root/setup_env.sh"], log=log)
        (root / "root" / ".bashrc").write_text("source /opt/miniconda3/etc/profile.d/conda.sh && conda activate testbed\n")
        (root / "testbed").mkdir()  # the environment image's WORKDIR, which the clone goes into
        _run([*bwrap, "--chdir", "/testbed", "/bin/bash", "/root/setup_repo.sh"], log=log)
        for name in ("setup_env.sh", "setup_repo.sh"):
            (root / "root" / name).unlink()
        (root / "etc" / "pip.conf").write_text(PIP_CONF)
        shutil.rmtree(root / "root" / ".cache" / "pip")
        shutil.rmtree(root / MIRROR_IN_ROOT.lstrip("/"))  # only the empty mount points are left
        partial = tarball.with_name(tarball.name + ".partial")
        _run(["tar", "--numeric-owner", "-C", str(root), "-cf", str(partial), "."], log=log)
        partial.rename(tarball)


def stand_in_image(task: SourceTask, source: RepoSource) -> StandIn:
    """The stand-in image of ``task`` in the daemon, under swebench's name of the official image: the one
    there when it was made from the same inputs, else imported from the cached root, else built (see the
    module docstring).

    Raises:
        RuntimeError: a step failed (its log's tail is in the message).
    """
    start = time.monotonic()
    spec = official_test_spec(task, source)
    python, env_script, repo_script = _scripts(task, spec)
    base, _ = base_root()
    key = _digest(base.name, python, str(_python_install(python)), CONDA, ACTIVATE, PIP_CONF, env_script,
                  repo_script)[:24]
    image = spec.instance_image_key
    found = _daemon_image(image)
    if found is not None and found[1] == key:
        return StandIn(image, found[0], time.monotonic() - start, "daemon")
    tarball = stand_in_dir() / f"{task.instance_id}-{key}.tar"
    how = "cached root"
    with _Lock(stand_in_dir() / f"{task.instance_id}.lock"):
        if not tarball.exists():
            how = "built"
            for old in stand_in_dir().glob(f"{task.instance_id}-*.*"):  # roots made from other inputs
                old.unlink()
            log = stand_in_dir() / f"{task.instance_id}-{key}.log"
            _build_root(task, source, python, env_script, repo_script, tarball, log)
        image_id = _import(tarball, image, key)
    if found is not None and found[0] != image_id:  # the stand-in the tag named before, now untagged
        # Never forced: the daemon refuses to remove an image a container (running or not) was made from, so
        # a study or test session still using the old stand-in keeps it.
        subprocess.run(["docker", "image", "rm", found[0]], capture_output=True, check=False)
    return StandIn(image, image_id, time.monotonic() - start, how)


# Small tasks under SWE-bench (repository, version) specifications, built in the test, so that the docker tests
# run on two repositories where no mirror of real repositories is (CI). Each is a made-up repository at a made-up
# instance id; only the specification, the parser and the image's name are the real repository's.

# flask 2.3's specification (Python 3.11, requirements/dev.txt, pinned packages, `pip install -e .`) on a
# one-module package whose add() subtracts.
TINY_INSTANCE = "pallets__flask-90001"
TINY_FILES = {
    ".gitignore": "*.egg-info/\n__pycache__/\n",
    "setup.py": "from setuptools import setup\n\nsetup(name='tinyadd', version='0.1', packages=['tinyadd'], "
                "package_dir={'': 'src'})\n",
    "src/tinyadd/__init__.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
    "tests/test_tinyadd.py": "from tinyadd import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
    "requirements/dev.txt": "# development\n-r tests.txt\n",
    "requirements/tests.txt": "pytest==7.2.2\n",
}
TINY_TEST_PATCH = """diff --git a/tests/test_tinyadd.py b/tests/test_tinyadd.py
--- a/tests/test_tinyadd.py
+++ b/tests/test_tinyadd.py
@@ -1,5 +1,9 @@
-from tinyadd import mul
+from tinyadd import add, mul
 
 
 def test_mul():
     assert mul(2, 3) == 6
+
+
+def test_add():
+    assert add(1, 2) == 3
"""
TINY_GOLD = """diff --git a/src/tinyadd/__init__.py b/src/tinyadd/__init__.py
--- a/src/tinyadd/__init__.py
+++ b/src/tinyadd/__init__.py
@@ -1,5 +1,5 @@
 def add(a, b):
-    return a - b
+    return a + b
 
 
 def mul(a, b):
"""
TINY_F2P = ["tests/test_tinyadd.py::test_add"]
TINY_P2P = ["tests/test_tinyadd.py::test_mul"]

# requests 2.31's specification (Python 3.9 from pyenv, `conda create ... pytest`, a non-editable
# `pip install .`, requests' own log parser `parse_log_pytest_options`) on a flat package whose header lookup is
# case-sensitive. The tests are a package (tests/__init__.py), as requests' are, so pytest puts /testbed first
# on sys.path and the checkout, not the image's non-editable install, is what they import; a parametrized test
# gives names with options (``test_header[content-type]``), which that parser rewrites.
REQUESTS_INSTANCE = "psf__requests-90001"
REQUESTS_FILES = {
    ".gitignore": "*.egg-info/\n__pycache__/\nbuild/\n",
    "setup.py": "from setuptools import setup\n\nsetup(name='tinyrequests', version='0.1', packages=['tinyrequests'])\n",
    "tinyrequests/__init__.py": "",
    "tinyrequests/utils.py": "def header(headers, name):\n    for key, value in headers.items():\n"
                             "        if key == name:\n            return value\n    return None\n\n\n"
                             "def join_url(base, path):\n    return base.rstrip('/') + '/' + path.lstrip('/')\n",
    "tests/__init__.py": "",
    "tests/test_utils.py": "from tinyrequests.utils import join_url\n\n\ndef test_join_url():\n"
                           "    assert join_url('http://a/', '/b') == 'http://a/b'\n",
}
REQUESTS_TEST_PATCH = """diff --git a/tests/test_utils.py b/tests/test_utils.py
--- a/tests/test_utils.py
+++ b/tests/test_utils.py
@@ -1,5 +1,12 @@
-from tinyrequests.utils import join_url
+import pytest
+
+from tinyrequests.utils import header, join_url
 
 
 def test_join_url():
     assert join_url('http://a/', '/b') == 'http://a/b'
+
+
+@pytest.mark.parametrize('name', ['Content-Type', 'content-type'])
+def test_header(name):
+    assert header({'Content-Type': 'text/html'}, name) == 'text/html'
"""
REQUESTS_GOLD = """diff --git a/tinyrequests/utils.py b/tinyrequests/utils.py
--- a/tinyrequests/utils.py
+++ b/tinyrequests/utils.py
@@ -1,6 +1,6 @@
 def header(headers, name):
     for key, value in headers.items():
-        if key == name:
+        if key.lower() == name.lower():
             return value
     return None
 
"""
REQUESTS_F2P = ["tests/test_utils.py::test_header[content-type]"]
REQUESTS_P2P = ["tests/test_utils.py::test_header[Content-Type]", "tests/test_utils.py::test_join_url"]


def _small_task(folder: Path, instance_id: str, repo: str, version: str, files: dict[str, str], *,
                problem: str, gold: str, test_patch: str, f2p: list[str], p2p: list[str]) -> tuple[SourceTask, RepoSource]:
    """A made-up task of ``repo`` at ``version`` and a mirror holding its repository (``owner__name.git``) under
    ``folder``; the commit is the same in every session (fixed dates and identity), so its stand-in image is
    reused."""
    from conftest import make_repo

    folder = folder.resolve()
    slug = repo.replace("/", "__")
    _, sha = make_repo(folder / "src" / slug, files, bare_mirror=folder / "mirror" / f"{slug}.git")
    task = SourceTask(instance_id=instance_id, repo=repo, version=version, base_commit=sha,
                      environment_setup_commit=sha, problem_statement=problem, patch=gold, test_patch=test_patch,
                      FAIL_TO_PASS=f2p, PASS_TO_PASS=p2p)
    return task, RepoSource(folder / "mirror", offline=True)


def tiny_task(folder: Path) -> tuple[SourceTask, RepoSource]:
    """The small flask task (:data:`TINY_INSTANCE`) and a mirror holding its repository under ``folder``."""
    return _small_task(folder, TINY_INSTANCE, "pallets/flask", "2.3", TINY_FILES,
                       problem="add() subtracts instead of adding", gold=TINY_GOLD, test_patch=TINY_TEST_PATCH,
                       f2p=TINY_F2P, p2p=TINY_P2P)


def requests_task(folder: Path) -> tuple[SourceTask, RepoSource]:
    """The small requests task (:data:`REQUESTS_INSTANCE`) and a mirror holding its repository under ``folder``."""
    return _small_task(folder, REQUESTS_INSTANCE, "psf/requests", "2.31", REQUESTS_FILES,
                       problem="header() is case-sensitive, but header names are not", gold=REQUESTS_GOLD,
                       test_patch=REQUESTS_TEST_PATCH, f2p=REQUESTS_F2P, p2p=REQUESTS_P2P)


@dataclass
class DockerTask:
    """A task, where its repository comes from, and its stand-in image in the daemon."""

    task: SourceTask
    source: RepoSource
    stand_in: StandIn


def tiny_docker_task(folder: Path) -> DockerTask:
    """The small flask task (:func:`tiny_task`) under ``folder`` with its stand-in image (the
    ``tiny_docker_task`` fixture of ``conftest.py`` makes it once per session)."""
    task, source = tiny_task(folder)
    return DockerTask(task, source, stand_in_image(task, source))


def requests_docker_task(folder: Path) -> DockerTask:
    """The small requests task (:func:`requests_task`) under ``folder`` with its stand-in image (the
    ``requests_docker_task`` fixture of ``conftest.py`` makes it once per session)."""
    task, source = requests_task(folder)
    return DockerTask(task, source, stand_in_image(task, source))


@contextlib.contextmanager
def private_instance(made: DockerTask) -> Iterator[tuple[SourceTask, str]]:
    """``(task, image name)``: ``made``'s task under an instance id of its own, whose official image name is
    tagged on the stand-in for as long as the block runs (then untagged: the stand-in stays). A test that
    retags its image, or must not see another session's retagging of the shared name, uses it: other test
    sessions and studies grade with the stand-in's own name on the same daemon at the same moment."""
    import docker

    number = int(made.task.instance_id.rsplit("-", 1)[1]) * 100 + secrets.randbelow(100)
    instance_id = f"{made.task.instance_id.rsplit('-', 1)[0]}-{number}{secrets.randbelow(10**4):04d}"
    name = official_image_name(instance_id)
    client = docker.from_env()
    client.images.get(made.stand_in.image_id).tag(name)
    try:
        yield made.task.model_copy(update={"instance_id": instance_id}), name
    finally:
        with contextlib.suppress(docker.errors.ImageNotFound):
            client.images.remove(name)
