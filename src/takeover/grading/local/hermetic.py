"""The fixed environment a test command runs with, whatever the caller's holds (docs/protocol.md section 6).

SWE-bench runs its eval script with ``docker exec`` in the task's image: no terminal, only the image's
variables (``PATH`` with the task's conda environment, ``TZ=Etc/UTC``, ``HOME``) and what the
specification's ``eval_commands`` export (Django sets ``LANG``/``LC_ALL=en_US.UTF-8``). The ``local``
backend gives the test command the same kind of environment, built from nothing the caller set:

- :data:`FIXED_VARIABLES`: no colour (``NO_COLOR=1``, ``PY_COLORS=0``; a coloured ``PASSED`` is not
  seen by SWE-bench's log parsers), the terminal size ``shutil.get_terminal_size`` falls back to without
  a terminal (``COLUMNS=80``, ``LINES=24``; status lines wrap at the width), SWE-bench's ``TZ``;
- ``PATH``: the task environment's ``bin`` folders, then :data:`SYSTEM_PATH` and the folders of the
  programs the eval script calls (``bash``, ``git``, ``patch``) when they live elsewhere;
- ``VIRTUAL_ENV`` and ``PYTHONNOUSERSITE=1`` from the task environment
  (:meth:`takeover.environments.PreparedEnvironment.env_vars`), ``HOME`` an empty folder;
- ``LANG`` and ``LC_ALL``: the locale the specification asks for when this machine has it, else
  :data:`FALLBACK_LOCALE` with a note (:func:`hermetic_locale`); the specification's own ``export`` lines are
  rewritten to the same locale (:func:`hermetic_eval_commands`).

Everything else the caller holds (``FORCE_COLOR``, ``PYTEST_ADDOPTS``, ``PYTHONWARNINGS``,
``PYTHONPATH``, ``TERM``, ``TMPDIR``, proxies, ...) is left out.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from takeover.environments import EnvSpec, PreparedEnvironment

#: Variables every test command gets, with their values.
FIXED_VARIABLES: dict[str, str] = {
    "NO_COLOR": "1",
    "PY_COLORS": "0",
    "COLUMNS": "80",
    "LINES": "24",
    "TZ": "Etc/UTC",
}
#: The system part of ``PATH`` (Ubuntu's default, as in SWE-bench's images).
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: The locale used when the specification asks for none, or for one this machine lacks.
FALLBACK_LOCALE = "C.UTF-8"
#: Locale variables an ``eval_commands`` line may export; their values are made to name an existing locale.
_LOCALE_EXPORT = re.compile(r"""^(\s*export\s+(LANG|LC_ALL|LC_CTYPE)=)(["']?)([^"'\s;]+)\3(\s*)$""")
# Programs the eval script runs from the system, whose folder must be on PATH.
_PROGRAMS = ("bash", "git", "patch")


def _normalized(name: str) -> str:
    """``en_US.UTF-8`` and ``en_US.utf8`` are the same locale to glibc (``locale -a`` prints the latter)."""
    lang, _, codeset = name.partition(".")
    return f"{lang}.{codeset.lower().replace('-', '')}" if codeset else lang


@functools.cache
def _host_locales() -> frozenset[str] | None:
    """Normalized names printed by ``locale -a``, or None when it cannot be run."""
    if not shutil.which("locale"):
        return None
    try:
        proc = subprocess.run(["locale", "-a"], capture_output=True, text=True, check=False, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return frozenset(_normalized(line.strip()) for line in proc.stdout.splitlines() if line.strip())


@functools.cache
def host_has_locale(name: str) -> bool:
    """Whether this machine has the locale ``name`` (``en_US.UTF-8``): listed by ``locale -a``, or, where
    that program is missing, accepted by ``setlocale`` in a child interpreter. ``C`` and ``POSIX`` always
    exist."""
    if name in ("C", "POSIX"):
        return True
    listed = _host_locales()
    if listed is not None:
        return _normalized(name) in listed
    probe = f"import locale; locale.setlocale(locale.LC_ALL, {name!r})"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, check=False).returncode == 0


def requested_locale(spec: EnvSpec) -> str | None:
    """The locale the specification's ``eval_commands`` export in ``LC_ALL`` (else ``LANG``), or None."""
    found: dict[str, str] = {}
    for line in spec.eval_commands:
        m = _LOCALE_EXPORT.match(line)
        if m:
            found[m.group(2)] = m.group(4)
    return found.get("LC_ALL") or found.get("LANG") or found.get("LC_CTYPE")


def hermetic_locale(spec: EnvSpec) -> tuple[str, str | None]:
    """``(locale, note)``: the locale the tests of ``spec`` run in, and a note when it is a fallback.

    The specification's locale when this machine has it; otherwise :data:`FALLBACK_LOCALE` (a UTF-8
    locale glibc has built in), with a note naming the missing one. A specification that asks for none
    gets :data:`FALLBACK_LOCALE` without a note: under ``docker exec`` the image has no locale set and
    Python 3.7 and later coerce that C locale to ``C.UTF-8`` anyway (PEP 538).
    """
    wanted = requested_locale(spec)
    if wanted is None:
        return FALLBACK_LOCALE, None
    if host_has_locale(wanted):
        return wanted, None
    return FALLBACK_LOCALE, (f"locale {wanted} (asked for by the environment specification) does not exist on "
                             f"this machine: the tests ran with {FALLBACK_LOCALE} (install the locale, e.g. "
                             f"locale-gen {wanted}, to run them as specified)")


def hermetic_eval_commands(commands: list[str], locale: str) -> list[str]:
    """``commands`` with every ``export LANG=``/``LC_ALL=``/``LC_CTYPE=`` line set to ``locale`` (the one
    :func:`hermetic_locale` chose), so that the script never switches to a locale this machine lacks."""
    out = []
    for line in commands:
        m = _LOCALE_EXPORT.match(line)
        out.append(f"{m.group(1)}{locale}{m.group(5)}" if m else line)
    return out


def _program_dirs() -> list[str]:
    """Folders of :data:`_PROGRAMS` found on the caller's ``PATH`` outside :data:`SYSTEM_PATH`."""
    system = SYSTEM_PATH.split(os.pathsep)
    dirs: list[str] = []
    for program in _PROGRAMS:
        found = shutil.which(program)
        folder = str(Path(found).parent) if found else None
        if folder and folder not in system and folder not in dirs:
            dirs.append(folder)
    return dirs


def hermetic_environment(prepared: PreparedEnvironment, *, home: Path, locale: str) -> dict[str, str]:
    """The complete environment of a test command run in ``prepared``: see the module documentation.

    Args:
        prepared: the task's environment (its ``bin`` folders, ``VIRTUAL_ENV``).
        home: the value of ``HOME`` (an empty, writable folder).
        locale: ``LANG`` and ``LC_ALL`` (from :func:`hermetic_locale`).

    Returns:
        ``{name: value}``; nothing in it comes from ``os.environ`` apart from where ``bash``, ``git`` and
        ``patch`` are installed.
    """
    base = {**FIXED_VARIABLES, "PATH": os.pathsep.join([SYSTEM_PATH, *_program_dirs()]), "LANG": locale,
            "LC_ALL": locale}
    env = prepared.env_vars(base=base)
    env["HOME"] = str(home)
    return env
