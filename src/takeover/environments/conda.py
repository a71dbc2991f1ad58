"""SWE-bench's conda specifications adapted to a Python virtual environment.

SWE-bench builds one conda environment per (repository, version); takeover builds a venv from the same
specification. Conda package names become pip requirements (``pytables`` -> ``tables``, ``numpy=1.19``
-> ``numpy==1.19.*``), ``conda install`` steps become pip packages, activation lines are dropped, and
system steps (``apt-get``, ``locale-gen``, writes under ``/etc``) are skipped. Every adaptation is said
in a note for the user.
"""

from __future__ import annotations

import re
import shlex

# Conda packages that have no pip equivalent worth installing in a venv (compilers, system libraries).
_CONDA_ONLY = {"python", "pip", "hdf5", "gxx_linux-64", "gcc_linux-64", "cxx-compiler", "c-compiler", "compilers",
               "libgcc", "libgcc-ng", "libstdcxx-ng", "make", "pkg-config", "nodejs", "git", "openssl"}
# Conda package names that differ on PyPI.
_CONDA_TO_PIP = {"pytables": "tables", "pyqt": "PyQt5", "matplotlib-base": "matplotlib", "py-lief": "lief",
                 "dask-core": "dask", "iris": "scitools-iris"}
_SYSTEM_STEP = re.compile(r"(^|[;&|]\s*)(sudo\s+)?(apt-get|apt|yum|dnf|apk|locale-gen|update-locale)\b|/etc/")
_CONDA_STEP = re.compile(r"(^|\s)(source\s+/opt/miniconda3|conda\s+activate|conda\s+deactivate)")
_CONDA_INSTALL = re.compile(r"^\s*conda\s+install\s+(?P<args>.*)$")

_TOX_CURRENT_ENV = re.compile(r"\btox\s+--current-env\s+-e\s*(?P<env>[\w.-]+)")

#: Prefix of the note left for each skipped system step (the build's error message lists those steps).
SKIPPED_SYSTEM_STEP = "skipped system step"


def conda_packages_as_pip(text: str, notes: list[str]) -> list[str]:
    """SWE-bench ``packages`` (conda names, maybe quoted with pins) as pip requirement strings.

    Conda-only packages (compilers, system libraries) are dropped with a note appended to ``notes``.
    """
    out = []
    for item in shlex.split(text):
        name = re.split(r"[<>=!~ ]", item, maxsplit=1)[0].strip().lower()
        if name in _CONDA_ONLY:
            if name not in ("python", "pip"):
                notes.append(f"skipped conda-only package {item!r} (no pip equivalent)")
            continue
        if name in _CONDA_TO_PIP:
            item = _CONDA_TO_PIP[name] + item[len(name):]
        # conda's single "=" pins a version prefix; pip spells it "==x.*".
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)=([0-9][^=<>!]*)", item)
        if m:
            item = f"{m.group(1)}=={m.group(2)}" + ("" if m.group(2).count(".") >= 2 else ".*")
        out.append(item)
    return out


def adapt_steps(commands: list[str], notes: list[str]) -> tuple[list[str], list[str]]:
    """Split SWE-bench shell steps into (pip packages for the shared venv, shell steps for a workspace).

    System steps are skipped and conda steps adapted, each with a note appended to ``notes``.
    """
    packages: list[str] = []
    shell: list[str] = []
    for cmd in commands:
        if _SYSTEM_STEP.search(cmd):
            notes.append(f"{SKIPPED_SYSTEM_STEP} (needs root and a package manager; install by hand if tests "
                         f"need it): {cmd}")
            continue
        if _CONDA_STEP.search(cmd):
            continue
        m = _CONDA_INSTALL.match(cmd)
        if m:
            words = shlex.split(m.group("args"))
            kept, skip = [], False
            for w in words:
                if skip:
                    skip = False
                elif w in ("-c", "--channel", "-n", "--name"):
                    skip = True
                elif not w.startswith("-"):
                    kept.append(w)
            pkgs = conda_packages_as_pip(" ".join(shlex.quote(k) for k in kept), notes)
            notes.append(f"conda step adapted to pip: {cmd} -> pip install {' '.join(pkgs)}")
            packages += pkgs
            continue
        shell.append(cmd)
    return packages, shell


def tox_current_env_steps(test_cmd: str | list[str], python: str | None, notes: list[str]) -> list[str]:
    """Eval steps that let ``tox --current-env -e<env>`` run in a venv.

    tox-current-env links ``.tox/<env>/bin/python`` to the running interpreter. In a conda environment
    that is a real prefix; in a venv it is ``<venv>/bin/python``, and a Python older than 3.11 started
    through a second link does not find the venv's ``pyvenv.cfg`` and runs bare (``No module named
    pytest``). The plugin keeps files it finds there, so small scripts that ``exec`` the venv's python by
    its own path go there first. Returns no steps when the test command does not use tox-current-env.
    """
    cmds = [test_cmd] if isinstance(test_cmd, str) else list(test_cmd)
    found = next((m for c in cmds if (m := _TOX_CURRENT_ENV.search(c))), None)
    if not found:
        return []
    env = found.group("env")
    names = ["python", "python3"] + ([f"python{python}"] if python else [])
    notes.append(f"tox --current-env in a venv: .tox/{env}/bin/{{{','.join(names)}}} exec the venv's python")
    step = (f'mkdir -p .tox/{env}/bin && for n in {" ".join(names)}; do '
            f'printf \'#!/bin/sh\\nexec "%s" "$@"\\n\' "$(command -v python)" > .tox/{env}/bin/$n '
            f'&& chmod +x .tox/{env}/bin/$n; done')
    return [step]
