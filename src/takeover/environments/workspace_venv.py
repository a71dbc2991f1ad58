"""The workspace venv: a small venv bound to one checkout, on top of the shared dependency venv.

SWE-bench's ``install`` step (usually ``pip install -e .``) binds a venv to ONE checkout path, so it
cannot go into the shared venv. Per workspace a tiny venv (``uv venv``, about 0.1 s) is made inside the
workspace's ``.git`` folder (``.git/takeover/venv``: never tracked, never in ``git status``, removed
with the workspace). Its site-packages holds a ``.pth`` line ``import site; site.addsitedir(<shared
site-packages>)`` (so the shared venv's own ``.pth`` files work too), copies of the shared venv's console
scripts re-pointed at the workspace interpreter, and the project installed by the spec's install step
with ``--no-deps`` (an editable install as a ``sys.path`` entry, :data:`EDITABLE_MODE`). Dependencies that this checkout declares but the shared venv lacks are then
installed into the workspace venv only. The spec's ``pre_install`` steps run once per workspace
(:func:`run_pre_install`). After the first install of a checkout state the whole venv is usually copied
instead (:mod:`takeover.environments.project_reuse`).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import site
import subprocess
from collections.abc import Mapping
from pathlib import Path

from takeover._util.io import stable_hash
from takeover.environments.build_steps import (
    PIP_INSTALL,
    BuildLog,
    BuildStepFailed,
    make_venv,
    needs_pip,
    pip_install,
    site_packages,
)
from takeover.environments.interpreters import uv_binary
from takeover.environments.shared_venv import SharedVenv
from takeover.environments.spec import EnvSpec
from takeover.errors import EnvironmentUnavailable
from takeover.sources.repos import cache_dir

# Run in the workspace venv after an install step: the requirements that no installed distribution
# satisfies, of the checkout's own distribution (with the requested extras) and of every other
# distribution of the workspace venv (dependencies installed there earlier).
_MISSING_DEPS = r"""
import json, sys, importlib.metadata as md
try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement
site, extras = sys.argv[1], json.loads(sys.argv[2])
missing = []
for dist in md.distributions(path=[site]):
    own = "dir_info" in json.loads(dist.read_text("direct_url.json") or "{}")
    for text in dist.requires or []:
        req = Requirement(text)
        if req.marker and not any(req.marker.evaluate({"extra": e}) for e in [""] + (extras if own else [])):
            continue
        try:
            have = md.version(req.name)
        except md.PackageNotFoundError:
            have = None
        if have is None or (req.specifier and not req.specifier.contains(have, prereleases=True)):
            missing.append(str(req.name) + str(req.specifier))
print(json.dumps(sorted(set(missing))))
"""


def workspace_state_dir(workspace: Path) -> Path:
    """Where takeover keeps a workspace's venv, setup log and markers: ``<workspace>/.git/takeover``; for
    a workspace that is no git checkout, a folder in the cache named after its path."""
    git_dir = workspace / ".git"
    if git_dir.is_dir():
        return git_dir / "takeover"
    return cache_dir() / "workspace-envs" / stable_hash(str(workspace.resolve()))


def workspace_venv_dir(workspace: Path) -> Path:
    """``<workspace>/.git/takeover/venv`` (see :func:`workspace_state_dir`)."""
    return workspace_state_dir(workspace) / "venv"


def make_workspace_venv(log: BuildLog, interpreter: Path, venv: Path, shared: SharedVenv) -> Path:
    """A fresh venv of ``interpreter`` at ``venv`` that sees the shared venv's site-packages (without a
    shared venv: this process's site-packages) and has the shared venv's console scripts. Returns its
    python.

    Raises:
        EnvironmentUnavailable: the venv cannot be created.
    """
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    python = make_venv(log, interpreter, venv, seed=False)
    sites = [shared.site_packages] if shared.site_packages is not None else [Path(p) for p in site.getsitepackages()]
    (site_packages(python) / "_takeover_shared_env.pth").write_text(
        "".join(f"import site; site.addsitedir({str(s)!r})\n" for s in sites))
    if shared.path is not None:
        _link_scripts(shared.path / "bin", venv / "bin")
    return python


def _pre_install_marker(workspace: Path) -> Path:
    return workspace_state_dir(workspace) / "pre_install.json"


def record_pre_install(spec: EnvSpec, workspace: Path) -> None:
    """Remember that the spec's ``pre_install`` steps have been run in ``workspace`` by the caller (grading
    runs them before the candidate patch, as the steps of SWE-bench's image); :func:`run_pre_install`
    then leaves them out."""
    marker = _pre_install_marker(workspace)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"hash": stable_hash(spec.pre_install), "steps": spec.pre_install}))


def run_pre_install(log: BuildLog, spec: EnvSpec, workspace: Path, env: Mapping[str, str]) -> bool:
    """Run the spec's ``pre_install`` steps in ``workspace`` once: they edit tracked files (``sed -i`` on
    ``setup.py``), and a second run would edit them again (``<=1.0.7<=1.0.7``). A marker in the
    workspace's state folder remembers the steps that ran (:func:`record_pre_install`); returns whether
    they ran now.

    Raises:
        EnvironmentUnavailable: a step failed (see :meth:`BuildLog.run`).
    """
    if not spec.pre_install:
        return False
    marker = _pre_install_marker(workspace)
    if marker.exists() and json.loads(marker.read_text()).get("hash") == stable_hash(spec.pre_install):
        return False
    for cmd in spec.pre_install:
        log.run(cmd, cwd=workspace, env=env, what=f"pre-install step {cmd!r}")
    record_pre_install(spec, workspace)
    return True


def install_project(log: BuildLog, spec: EnvSpec, python: Path, workspace: Path, env: Mapping[str, str]) -> None:
    """Run the spec's ``install`` steps in ``workspace`` for the workspace venv of ``python`` (``env``:
    its variables), then install what the installed distributions need and no venv has (without their
    own dependencies, so that the checkout's editable install is never replaced by a release).

    Raises:
        EnvironmentUnavailable: a step failed (see :meth:`BuildLog.run`).
    """
    for cmd in spec.install:
        shell, extras = _install_step_for_workspace(cmd, python)
        try:
            # uv's cache nearly always holds the build backend already: skip the index round trips.
            log.run(shell, cwd=workspace, env={**env, "UV_OFFLINE": "1"}, what=f"install step {cmd!r}")
        except EnvironmentUnavailable:
            try:
                log.run(shell, cwd=workspace, env=env, what=f"install step {cmd!r}")
            except BuildStepFailed as exc:
                if not needs_pip(exc.output):
                    raise
                # The shared venv's pip (on the path through its site-packages) installs into this venv.
                shell, _ = _install_step_for_workspace(cmd, python, use_uv=False)
                log.run(shell, cwd=workspace, env=env, what=f"install step {cmd!r} (pip, setup.py develop)")
        if not PIP_INSTALL.match(cmd):
            continue
        for _ in range(3):  # a missing dependency may itself need one
            out = subprocess.run([str(python), "-c", _MISSING_DEPS, str(site_packages(python)), json.dumps(extras)],
                                 capture_output=True, text=True, env=dict(env), check=False)
            missing = json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else []
            if not missing:
                break
            log.note(f"installing dependencies missing from the shared venv into the workspace venv: {missing}")
            pip_install(log, python, ["--no-deps", *missing], what="installing missing dependencies", env=env)


#: The setuptools editable mode of the checkout's install: a ``.pth`` path entry for the project root, as
#: ``setup.py develop`` gives in SWE-bench's images. setuptools' default PEP 660 install is an import hook
#: that finds only the packages it lists, and code that imports by file path (pylint's plugin loader,
#: through astroid's ``modpath_from_file``) then finds no module. Other build backends ignore the setting.
EDITABLE_MODE = "editable_mode=compat"


def _is_editable(args: list[str]) -> bool:
    return any(a in ("-e", "--editable") or a.startswith("--editable=") for a in args)


# SWE-bench install steps are "python -m pip install ..."; in a workspace venv the project goes in
# without dependencies (they live in the shared venv).
def _install_step_for_workspace(cmd: str, python: Path, *, use_uv: bool = True) -> tuple[str, list[str]]:
    """Rewrite a pip install step for the workspace venv; returns (shell command, requested extras)."""
    m = PIP_INSTALL.match(cmd)
    if not m:
        return cmd, []
    args = shlex.split(m.group("args"))
    extras = []
    for a in args:
        em = re.match(r"^\.?\[([^\]]+)\]$|^\.\[([^\]]+)\]$", a)
        if em:
            extras += [e.strip() for e in (em.group(1) or em.group(2)).split(",")]
    uv = uv_binary() if use_uv else None
    if "--no-deps" not in args:
        args.insert(0, "--no-deps")
    if uv and "--no-use-pep517" not in args:
        args = [a for a in args if a not in ("--verbose",)]
        if _is_editable(args) and not any("editable_mode" in a for a in args):
            args += ["--config-setting", EDITABLE_MODE]
        return shlex.join([uv, "pip", "install", "--python", str(python), *args]), extras
    return shlex.join([str(python), "-m", "pip", "install", *args]), extras


def _link_scripts(shared_bin: Path, ws_bin: Path) -> None:
    """Copy the shared venv's console scripts into the workspace venv, re-pointed at its interpreter."""
    old, new = str(shared_bin), str(ws_bin)
    for src in shared_bin.iterdir():
        dst = ws_bin / src.name
        if dst.exists() or src.name.startswith(("python", "activate", "deactivate")) or not src.is_file():
            continue
        try:
            data = src.read_bytes()
        except OSError:
            continue
        if len(data) > 200_000 or not data.startswith(b"#!") or old.encode() not in data:
            continue
        dst.write_bytes(data.replace(old.encode(), new.encode()))
        dst.chmod(0o755)
