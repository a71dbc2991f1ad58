"""The project's own install, made once per (environment, checkout state) and carried to new workspaces.

SWE-bench's install step (``pip install -e .``) builds the project in an isolated build environment for
every workspace: about a second and a half on sympy, most of a new workspace's setup. An editable install
of a pure-Python project writes nothing but small files that name the checkout's path: a ``.pth`` line
or an import finder holding that path, the distribution's metadata, console scripts whose first line
names the venv's interpreter, and sometimes files generated into the checkout (an ``egg-info`` folder, a
``_version.py`` written by setuptools-scm). So after the first real install, takeover keeps the
workspace venv and the generated files as a *template* in ``cache_dir()/envs/<env hash>.projects/<key>``
and gives each later workspace a copy with the old paths replaced by its own: no build, no resolver.

``<key>`` (:func:`project_key`) is a hash of the environment, the checkout's commit, the install steps,
the files that decide what an install writes (``setup.py``, ``setup.cfg``, ``pyproject.toml``,
``MANIFEST.in``, as they are in the workspace after the candidate patch and the ``pre_install`` steps)
and the names at the top of the tree and of ``src/`` (a new top-level package changes an editable
finder). A template is only made when it is safe to move (:func:`save_template`): every distribution
installed from the checkout is an editable one (a plain ``pip install .`` copies this checkout's sources
into the venv, which another workspace must not get). A project whose install compiles extensions into
the checkout (``.so`` files: astropy, scikit-learn) keeps one template per *build inputs*
(:func:`build_inputs`: the changes against the commit in C, Cython, Fortran and build files), so a
workspace whose patch touches only Python sources gets the compiled extensions of its commit, and one
whose patch touches a build input compiles them (the correct fallback). See docs/protocol.md section 6
(grading runs SWE-bench's own install step; this changes only its cost).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

from takeover._util.io import atomic_write_json, stable_hash
from takeover.environments.build_steps import site_packages
from takeover.environments.spec import EnvSpec

#: The marker of a finished template (inside its folder), written last.
TEMPLATE_MARKER = "takeover-project.json"
#: Suffixes of compiled files: a project whose install generates one in the checkout is built per workspace.
COMPILED_SUFFIXES = (".so", ".pyd", ".dll", ".dylib")
# Files that decide what an install of the checkout writes.
_METADATA_FILES = ("setup.py", "setup.cfg", "pyproject.toml", "MANIFEST.in")
# Files larger than this (bytes) are copied as they are, never searched for paths to rewrite.
_REWRITE_LIMIT = 2_000_000
# Generated files in the checkout larger than this in total (bytes) make the template not worth keeping.
_GENERATED_LIMIT = 1_000_000_000
#: Suffixes and names of the files a compiled build reads besides Python sources: a workspace whose
#: changes against the commit touch one of them compiles its own extensions.
BUILD_INPUT_SUFFIXES = (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".pyx", ".pxd", ".pxi", ".f", ".f90", ".for",
                        ".cu", ".in", ".templ", ".tmpl", ".toml", ".cfg", ".sh", ".cmake", ".def")
BUILD_INPUT_NAMES = ("setup.py", "setup_package.py", "meson.build", "CMakeLists.txt", "Makefile")
# Generated files that a compiled install leaves but no import needs (object files, the build folder).
_BUILD_LEFTOVERS = (".o", ".obj")

# Run in the workspace venv: the distributions installed from the checkout (direct_url.json with
# dir_info pointing at it), as (name, editable) pairs.
_PROJECT_DISTS = r"""
import importlib.metadata as md, json, sys
out = []
for d in md.distributions(path=[sys.argv[1]]):
    info = json.loads(d.read_text("direct_url.json") or "{}")
    if "dir_info" in info and info.get("url", "").rstrip("/") == sys.argv[2].rstrip("/"):
        out.append([d.metadata["Name"], bool(info["dir_info"].get("editable"))])
print(json.dumps(out))
"""


def _git_lines(workspace: Path, *args: str) -> list[str] | None:
    """NUL-separated output of a git command in ``workspace``; None when it fails (not a checkout)."""
    out = subprocess.run(["git", *args, "-z"], cwd=workspace, capture_output=True, check=False)
    if out.returncode != 0:
        return None
    return [x for x in out.stdout.decode("utf-8", "surrogateescape").split("\0") if x]


def checkout_fingerprint(spec: EnvSpec, workspace: Path) -> dict | None:
    """What of ``workspace`` decides its project's install: commit, install steps, metadata files, and the
    names at the top of the tree and of ``src/``; None when it is no git checkout.

    Taken after the ``pre_install`` steps and before anything is installed (an install adds folders such
    as ``<name>.egg-info``). Reads a few files (milliseconds). ``layout`` counts the ways takeover has
    installed projects (2: editable installs as a path entry), so a template of an older way is not reused.
    """
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=workspace, capture_output=True, text=True, check=False)
    if head.returncode != 0:
        return None
    metadata = {}
    for rel in _METADATA_FILES:
        path = workspace / rel
        metadata[rel] = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
    tops = {folder: sorted(p.name for p in (workspace / folder).iterdir() if p.name != ".git")
            for folder in (".", "src") if (workspace / folder).is_dir()}
    return {"commit": head.stdout.strip(), "install": spec.install, "pre_install": spec.pre_install,
            "metadata": metadata, "tops": tops, "layout": 2}


def project_key(fingerprint: dict, env_hash: str) -> str:
    """The key of the template that fits a checkout (:func:`checkout_fingerprint`) in an environment."""
    return stable_hash({"env": env_hash, **fingerprint})


def template_dir(cache_envs: Path, env_hash: str, key: str) -> Path:
    """``<cache>/envs/<env hash>.projects/<key>``: where the template of ``key`` lives."""
    return cache_envs / f"{env_hash}.projects" / key


def untracked_files(workspace: Path) -> set[str] | None:
    """Paths (relative) of untracked files in the checkout, ignored ones included; None outside git."""
    lines = _git_lines(workspace, "ls-files", "--others")
    return None if lines is None else set(lines)


def build_inputs(workspace: Path) -> dict[str, str]:
    """The build inputs (:data:`BUILD_INPUT_SUFFIXES`, :data:`BUILD_INPUT_NAMES`) that differ from the
    checkout's commit, tracked or new, as ``{path: sha256 of the content, or "deleted"}``."""
    changed = set(_git_lines(workspace, "diff", "--name-only", "HEAD") or [])
    changed |= set(_git_lines(workspace, "ls-files", "--others", "--exclude-standard") or [])
    out = {}
    for rel in sorted(changed):
        if not (rel.endswith(BUILD_INPUT_SUFFIXES) or rel.rsplit("/", 1)[-1] in BUILD_INPUT_NAMES):
            continue
        path = workspace / rel
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "deleted"
    return out


def _rewrite_file(path: Path, replacements: list[tuple[bytes, bytes]]) -> None:
    """Replace each old path by the new one in ``path`` (a regular text file; big ones and binaries, whose
    offsets a longer path would break, are left alone)."""
    if path.is_symlink() or path.name.endswith(COMPILED_SUFFIXES) or path.stat().st_size > _REWRITE_LIMIT:
        return
    data = path.read_bytes()
    if b"\0" in data:
        return
    new = data
    for old, repl in replacements:
        new = new.replace(old, repl)
    if new != data:
        path.write_bytes(new)  # the file keeps its mode (scripts stay executable)


def _rewrite_tree(root: Path, replacements: list[tuple[bytes, bytes]]) -> None:
    """:func:`_rewrite_file` on every file under ``root`` (symlinks untouched)."""
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            _rewrite_file(Path(dirpath) / name, replacements)


def _variant(dest: Path, inputs: dict[str, str] | None) -> Path:
    """The folder of a template: ``dest`` itself, or for a compiled project ``dest/inputs-<hash>``."""
    return dest if inputs is None else dest / f"inputs-{stable_hash(inputs)}"


def save_template(dest: Path, python: Path, venv: Path, workspace: Path, generated: set[str]) -> str:
    """Keep the workspace venv of a finished install (and the files it generated in the checkout) as the
    template at ``dest``, when it is safe to move; returns what was decided, for the build log.

    Args:
        python: the workspace venv's interpreter (asked which distributions came from the checkout).
        generated: paths, relative to ``workspace``, of files the install created in the checkout.

    Nothing is raised: a template that cannot be written is simply not there next time.
    """
    generated = {g for g in generated if not g.endswith(_BUILD_LEFTOVERS) and not g.startswith("build/")}
    compiled = sorted(g for g in generated if g.endswith(COMPILED_SUFFIXES))
    inputs = build_inputs(workspace) if compiled else None
    folder = _variant(dest, inputs)
    if (folder / TEMPLATE_MARKER).exists():
        return "template exists already"
    out = subprocess.run([str(python), "-c", _PROJECT_DISTS, str(_purelib(venv, python)), workspace.as_uri()],
                         capture_output=True, text=True, check=False)
    dists = json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else []
    if not dists:
        return "no template: no distribution of the checkout is installed from it"
    if not all(editable for _, editable in dists):
        return "no template: the checkout is installed as a copy (not editable)"
    sizes = [(workspace / g).stat().st_size for g in generated if (workspace / g).is_file()]
    if sum(sizes) > _GENERATED_LIMIT:
        return "no template: the install generated too many bytes in the checkout"
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.parent / f".{folder.name}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        shutil.copytree(venv, tmp / "venv", symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        for rel in sorted(generated):
            src = workspace / rel
            if src.is_file() and not src.is_symlink():
                target = tmp / "generated" / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, target)
        atomic_write_json(tmp / TEMPLATE_MARKER, {"workspace": str(workspace), "venv": str(venv),
                                                  "generated": sorted(generated), "distributions": dists,
                                                  "build_inputs": inputs})
        os.rename(tmp, folder)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if (folder / TEMPLATE_MARKER).exists():  # another process saved the same template first
            return "template exists already"
        return f"no template: {exc}"
    kind = f"with {len(compiled)} compiled files, for these build inputs" if compiled else "editable"
    return f"template saved for later workspaces ({', '.join(n for n, _ in dists)} {kind})"


def reuse_template(dest: Path, venv: Path, workspace: Path) -> bool:
    """Give ``workspace`` the venv at ``venv`` (replaced) and the generated files of the template at
    ``dest`` (for a compiled project: the one of this workspace's :func:`build_inputs`), with the
    template's paths rewritten to this workspace's; False when there is no fitting template.

    Raises:
        OSError: the copy failed (the caller installs the project instead).
    """
    src = dest
    if not (src / TEMPLATE_MARKER).exists():
        if not dest.is_dir() or not any(dest.glob(f"inputs-*/{TEMPLATE_MARKER}")):
            return False
        src = _variant(dest, build_inputs(workspace))
        if not (src / TEMPLATE_MARKER).exists():
            return False
    info = json.loads((src / TEMPLATE_MARKER).read_text())
    replacements = [(info["venv"].encode(), str(venv).encode()),
                    (info["workspace"].encode(), str(workspace).encode())]
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src / "venv", venv, symlinks=True)
    _rewrite_tree(venv, replacements)
    generated = src / "generated"
    if generated.is_dir():
        for rel in info["generated"]:
            path = generated / rel
            if path.is_file():
                target = workspace / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
                _rewrite_file(target, replacements)
    return True


def _purelib(venv: Path, python: Path) -> Path:
    """The venv's site-packages, found on disk (``lib/pythonX.Y/site-packages``) without running it."""
    found = sorted(venv.glob("lib/python*/site-packages"))
    return found[0] if found else site_packages(python)
