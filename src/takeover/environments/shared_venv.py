"""The shared dependency venv of an environment: built once per specification, reused by every workspace.

``cache_dir()/envs/<hash>`` is a venv of the right interpreter holding the *dependencies* only.
``<hash>`` is :func:`takeover._util.io.stable_hash` of the resolved specification (interpreter version and
path, packages, requirement text read from the checkout, pip pins, install steps). It is built under a
file lock (``<hash>.lock``); the marker ``<hash>/takeover-env.json`` is written atomically only after a
successful build, so a reader that sees the marker can trust the folder and a crashed build is simply
redone. A failed build leaves its log as ``<hash>.failed.log`` and is not retried in the same process.
To collect the project's own dependencies the spec's install step runs once against the first
workspace, then the project itself is uninstalled again (a checkout-bound editable install must not
live in a shared venv).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from filelock import FileLock
from pydantic import BaseModel

from takeover._util.io import atomic_write_json, stable_hash
from takeover.environments.build_steps import PIP_INSTALL, BuildLog, make_venv, pip_install, site_packages
from takeover.environments.hints import skipped_steps_hint
from takeover.environments.interpreters import uv_binary
from takeover.environments.requirements import Dependencies
from takeover.environments.spec import EnvSpec
from takeover.errors import EnvironmentUnavailable
from takeover.sources.repos import cache_dir

#: The marker file of a finished shared venv (inside its folder).
MARKER = "takeover-env.json"
#: Start of the build log's line naming the environment.yml packages pip could not install.
LEFT_OUT_NOTE = "environment.yml packages left out (pip cannot install them here)"
#: Start of the build note naming the environment.yml packages removed because they fail to import.
BROKEN_NOTE = "environment.yml packages removed: they install but fail to import here"
# Run in the shared venv: the requested distributions whose modules raise anything but ImportError on
# import (a binding without its system library: cfgrib without ecCodes raises RuntimeError). Test suites
# guard optional imports with ``except ImportError``, so such a package breaks the collection of every
# test module that probes it; removed, it is merely skipped.
_BROKEN_IMPORTS = r"""
import importlib, importlib.metadata as md, json, sys
broken = {}
for name in json.loads(sys.argv[1]):
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        continue
    tops = (dist.read_text("top_level.txt") or "").split()
    if not tops:
        tops = sorted({f.parts[0].removesuffix(".py") for f in dist.files or []
                       if len(f.parts) > 1 or f.suffix == ".py"})
    for mod in [t for t in tops if t.isidentifier() and not t.startswith("_")]:
        try:
            importlib.import_module(mod)
        except ImportError:
            pass
        except BaseException as exc:
            broken[dist.metadata["Name"]] = f"{mod}: {type(exc).__name__}: {exc}"[:200]
            break
print(json.dumps(broken))
"""
# uv's and pip's words for a requirement that no index has.
_NOT_IN_INDEX = re.compile(r"Because (\S+) was not found in the (?:package registry|cache)|"
                           r"No matching distribution found for (\S+)")
# Builds that failed in this process, by hash: later tasks of the same environment fail at once.
_FAILED: dict[str, str] = {}


class SharedVenv(BaseModel):
    """The shared venv of a specification.

    Attributes:
        env_hash: the hash of what the venv is built from (:func:`shared_venv_key`).
        path: ``cache_dir()/envs/<hash>``; None when nothing goes into a shared venv.
        site_packages: its site-packages folder (None without ``path``).
        build_seconds: wall seconds spent building it in this call (0 when it existed).
        cached: it existed already (or none was needed).
        build_notes: what the build could not give (left-out packages), from its marker.
    """

    env_hash: str
    path: Path | None = None
    site_packages: Path | None = None
    build_seconds: float = 0.0
    cached: bool = True
    build_notes: list[str] = []


def shared_venv_key(spec: EnvSpec, interpreter: Path, interpreter_version: str | None,
                    deps: Dependencies, exclude_newer: str | None = None) -> dict[str, Any]:
    """What the shared venv is built from; its :func:`~takeover._util.io.stable_hash` names the venv's folder
    (and the workspace venv's, when it is outside a git checkout)."""
    key = {
        "interpreter": interpreter_version, "interpreter_path": str(interpreter), "packages": deps.packages,
        "environment_packages": deps.environment_packages, "requirements": deps.requirements_text,
        "pip_packages": spec.pip_packages, "install": spec.install, "pre_install": spec.pre_install,
        "seed": spec.seed, "exclude_newer": exclude_newer, "layout": 2,
    }
    if deps.environment_packages:
        key["import_check"] = 1  # packages failing to import are removed (venvs built before kept them)
    return key


def needs_shared_venv(spec: EnvSpec, deps: Dependencies) -> bool:
    """Whether anything goes into a shared venv (packages, pins, another interpreter, a pip install step)."""
    return bool(deps.packages or deps.environment_packages or deps.requirements_text or spec.pip_packages or spec.python
                or any(PIP_INSTALL.match(c) for c in spec.install))


def ensure_shared_venv(spec: EnvSpec, interpreter: Path, interpreter_version: str | None, deps: Dependencies,
                       workspace: Path, notes: list[str], *, timeout: float,
                       exclude_newer: str | None = None) -> SharedVenv:
    """The shared venv of this specification: reused when its marker exists, else built under the lock;
    none (``path`` None) when nothing goes into one (:func:`needs_shared_venv`).

    Args:
        interpreter, interpreter_version: the interpreter the venv is made of, and its ``major.minor.micro``.
        workspace: a checkout of the task, against which the spec's install step collects the
            project's dependencies.
        notes: the build's notes so far (written into the marker; skipped system steps are named when
            the build fails).
        timeout: seconds each build command may take.
        exclude_newer: resolve packages as of this date (see :class:`BuildLog`).

    Raises:
        EnvironmentUnavailable: the build failed (now or earlier in this process); the message has the
            failing step, a hint and the log's path.
    """
    key = shared_venv_key(spec, interpreter, interpreter_version, deps, exclude_newer)
    env_hash = stable_hash(key)
    if not needs_shared_venv(spec, deps):
        return SharedVenv(env_hash=env_hash)
    envs = cache_dir() / "envs"
    shared = envs / env_hash
    marker = shared / MARKER
    if env_hash in _FAILED:
        raise EnvironmentUnavailable(f"{_FAILED[env_hash]} (failed earlier in this process; not retried)")
    if not marker.exists():
        envs.mkdir(parents=True, exist_ok=True)
        with FileLock(envs / f"{env_hash}.lock"):
            if not marker.exists():  # another process may have finished it while we waited
                log = BuildLog(envs / f"{env_hash}.build.log", timeout, exclude_newer)
                seconds = _build_once(spec, interpreter, deps, workspace, notes, key, shared, log)
                return SharedVenv(env_hash=env_hash, path=shared, build_seconds=seconds, cached=False,
                                  **_read_marker(marker))
    return SharedVenv(env_hash=env_hash, path=shared, **_read_marker(marker))


def _build_once(spec: EnvSpec, interpreter: Path, deps: Dependencies, workspace: Path, notes: list[str],
                key: dict[str, Any], shared: Path, log: BuildLog) -> float:
    """Build the shared venv at ``shared`` and write its marker; returns the wall seconds it took. On
    failure the build log is kept as ``<hash>.failed.log`` and the folder removed."""
    envs, env_hash = shared.parent, shared.name
    start = time.monotonic()
    shutil.rmtree(shared, ignore_errors=True)  # leftovers of a crashed build
    build_log = log.path
    build_log.unlink(missing_ok=True)
    try:
        build_notes = _build(spec, interpreter, shared, deps, workspace, log)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            shutil.copyfile(build_log, envs / f"{env_hash}.failed.log")
        shutil.rmtree(shared, ignore_errors=True)
        if not isinstance(exc, EnvironmentUnavailable):
            raise
        hint = skipped_steps_hint(notes)
        failure = EnvironmentUnavailable(f"{exc}; {hint}" if hint else str(exc))
        _FAILED[env_hash] = str(failure)
        raise failure from None
    seconds = time.monotonic() - start
    atomic_write_json(shared / MARKER, {
        "spec": spec.model_dump(mode="json"), "key": key, "hash": env_hash,
        "site_packages": str(site_packages(shared / "bin" / "python")),
        "build_seconds": round(seconds, 3), "notes": notes, "build_notes": build_notes,
    })
    return seconds


def _read_marker(marker: Path) -> dict[str, Any]:
    """The site-packages folder and the build notes a finished shared venv's marker holds."""
    data = json.loads(marker.read_text())
    return {"site_packages": Path(data["site_packages"]), "build_notes": data.get("build_notes", [])}


def _build(spec: EnvSpec, interpreter: Path, dest: Path, deps: Dependencies, workspace: Path,
           log: BuildLog) -> list[str]:
    """Build the shared venv at ``dest``; returns notes on what it lacks against the spec."""
    build_notes = []
    python = make_venv(log, interpreter, dest, seed=spec.seed)
    pins = [p for p in spec.pip_packages if re.fullmatch(r"[A-Za-z0-9_.\-]+==[^,;\s]+", p)]
    constraints = dest / "takeover-constraints.txt"
    constraints.write_text("".join(f"{p}\n" for p in pins))
    if deps.packages:
        pip_install(log, python, deps.packages, what=f"installing packages for {spec.repo} {spec.version}",
                    binary_first=True)
    if deps.environment_packages:
        left_out = _install_each_if_needed(log, python, deps.environment_packages, constraints)
        broken = _remove_broken_imports(log, python, deps.environment_packages)
        if left_out:
            build_notes.append(f"{LEFT_OUT_NOTE}: {', '.join(left_out)}; tests that import them are skipped or "
                               f"fail here (grade with --backend docker for the official environment)")
        if broken:
            build_notes.append(f"{BROKEN_NOTE}: {'; '.join(broken)}; tests that need them are skipped here")
    if deps.requirements_text:
        reqs = dest / "takeover-requirements.txt"
        reqs.write_text(deps.requirements_text)
        pip_install(log, python, ["-r", str(reqs)], what=f"installing {deps.requirements_file}", binary_first=True)
    if spec.pip_packages:
        pip_install(log, python, list(spec.pip_packages), what="installing pip_packages", binary_first=True)
    site = site_packages(python)
    env = {**os.environ, "PATH": f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}", "VIRTUAL_ENV": str(dest)}
    env.pop("PYTHONPATH", None)
    for cmd in spec.install:
        m = PIP_INSTALL.match(cmd)
        if not m:
            continue  # setup.py install and the like: the workspace venv gets it; deps come with it there
        args = shlex.split(m.group("args"))
        if not _install_dependencies_only(log, python, args, workspace, env, dest):
            pip_install(log, python, args, cwd=workspace, env=env,
                        what=f"installing the dependencies of {spec.repo} ({cmd})")
    uv = uv_binary()
    for name in _project_dists(python, site, workspace):
        argv = [uv, "pip", "uninstall", "--python", str(python), name] if uv else [str(python), "-m", "pip", "uninstall", "-y", name]
        log.run(argv, what=f"removing {name} from the shared venv")
    return build_notes


def _install_dependencies_only(log: BuildLog, python: Path, args: list[str], workspace: Path,
                               env: dict[str, str], dest: Path) -> bool:
    """Install what the install step ``pip install <args>`` would bring besides the project itself,
    without building the project: ``uv pip compile`` reads the project's metadata (no compiler runs),
    preferring every installed version (its output file, seeded with them, is its list of preferences;
    pip likewise keeps what satisfies), then the list is installed. Returns False, having changed
    nothing, when that cannot be done (no uv, pip-only options, no resolution): the caller runs the step
    itself."""
    uv = uv_binary()
    flags = {"-e", "--editable", "-v", "--verbose"}
    targets = [a for a in args if not a.startswith("-")]
    if not uv or any(a.startswith("-") and a not in flags for a in args) or not targets:
        return False
    if not all(t == "." or t.startswith((".[", "./")) for t in targets):
        return False
    editable = "-e" in args or "--editable" in args
    lines = [("-e " if editable else "") + str(workspace) + t[1:] for t in targets]
    frozen = subprocess.run([uv, "pip", "freeze", "--python", str(python)], capture_output=True, text=True,
                            check=False)
    if frozen.returncode != 0:
        return False
    (dest / "takeover-project.in").write_text("\n".join(lines) + "\n")
    out = dest / "takeover-project-dependencies.txt"
    out.write_text("".join(f"{line}\n" for line in frozen.stdout.splitlines() if "==" in line and " @ " not in line))
    try:
        log.run([uv, "pip", "compile", "--python", str(python), "--no-header", "--no-annotate", "-q",
                 str(dest / "takeover-project.in"), "-o", str(out)],
                cwd=workspace, env=env, what="resolving the project's dependencies from its metadata")
    except EnvironmentUnavailable:
        log.note("the project's dependencies do not resolve from its metadata: installing it")
        return False
    wanted = [line for line in out.read_text().splitlines()
              if line.strip() and not line.lstrip().startswith(("-e", "#")) and str(workspace) not in line
              and workspace.as_uri() not in line]
    if wanted:
        out.write_text("\n".join(wanted) + "\n")
        pip_install(log, python, ["-r", str(out)], what="installing the project's dependencies", binary_first=True)
    return True


def _remove_broken_imports(log: BuildLog, python: Path, packages: list[str]) -> list[str]:
    """Uninstall the requested packages whose import raises anything but ImportError (see
    :data:`_BROKEN_IMPORTS`); returns ``"name (module: error)"`` for each, also noted in the log."""
    names = [_requirement_name(p) for p in packages]
    out = subprocess.run([str(python), "-c", _BROKEN_IMPORTS, json.dumps(names)], capture_output=True, text=True,
                         timeout=log.timeout, check=False)
    broken = json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else {}
    uv = uv_binary()
    for name, why in broken.items():
        log.note(f"{name} fails to import ({why}): removed")
        argv = ([uv, "pip", "uninstall", "--python", str(python), name] if uv
                else [str(python), "-m", "pip", "uninstall", "-y", name])
        log.run(argv, what=f"removing {name}")
    return [f"{name} ({why})" for name, why in broken.items()]


def _install_each_if_needed(log: BuildLog, python: Path, packages: list[str], constraints: Path) -> list[str]:
    """Install a conda ``environment.yml``'s packages with pip, kept to the spec's pins (``constraints``):
    all together, leaving out each package the index does not have (conda-only ones such as ``cdms2``);
    when they still do not resolve together, one by one, leaving out (with a note in the log) those that
    pip cannot install here: ones needing system libraries without a wheel, or whose releases all
    conflict with the pins. Returns the packages left out."""
    left_out: list[str] = []
    wanted = list(packages)
    for _ in range(len(packages)):
        try:
            pip_install(log, python, ["-c", str(constraints), *wanted], what="installing environment.yml packages",
                        binary_first=True)
            return left_out
        except EnvironmentUnavailable as exc:
            missing = _NOT_IN_INDEX.search(str(exc))
            name = next((g for g in missing.groups() if g), "") if missing else ""
            drop = [p for p in wanted if name and _requirement_name(p) == _requirement_name(name)]
            if not drop:
                break
            left_out += drop
            wanted = [p for p in wanted if p not in drop]
            log.note(f"{', '.join(drop)} is not in the package index: installing the others together")
    log.note("environment.yml packages do not install together; installing them one by one")
    for pkg in wanted:
        try:
            pip_install(log, python, ["-c", str(constraints), pkg], what=f"installing {pkg}", binary_first=True)
        except EnvironmentUnavailable:
            left_out.append(pkg)
    if left_out:
        log.note(f"{LEFT_OUT_NOTE}: {', '.join(left_out)}")
    return left_out


def _requirement_name(requirement: str) -> str:
    """The normalized distribution name of a requirement string or a wheel's path."""
    if requirement.endswith(".whl"):
        name = Path(requirement).name.split("-")[0]
    else:
        name = re.split(r"[<>=!~;\[ ]", requirement.strip(), maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def _project_dists(python: Path, site: Path, workspace: Path) -> list[str]:
    """Names of distributions in ``site`` installed from the folder ``workspace`` (``direct_url.json``
    with ``dir_info``: an install of the checkout, not of a wheel or archive)."""
    code = ("import importlib.metadata as md, json, sys\n"
            "for d in md.distributions(path=[sys.argv[1]]):\n"
            "    raw = d.read_text('direct_url.json')\n"
            "    info = json.loads(raw) if raw else {}\n"
            "    if 'dir_info' in info and info.get('url', '').rstrip('/') == sys.argv[2].rstrip('/'):\n"
            "        print(d.metadata['Name'])\n")
    out = subprocess.run([str(python), "-c", code, str(site), workspace.resolve().as_uri()], capture_output=True,
                         text=True, check=False)
    return [x for x in out.stdout.split() if x]
