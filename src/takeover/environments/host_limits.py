"""Which SWE-bench environments this host cannot build, and why: said before any work is done.

A local build needs what SWE-bench's Docker image brings and a venv cannot: the pinned interpreter
(never downloaded here), a C/C++ compiler for projects with compiled extensions, and for a few
repositories sources or system libraries fetched from outside the package index. :func:`host_blockers`
names what this host lacks for one specification; :func:`check_buildable` raises with those reasons and
the alternative (``--backend docker``, SWE-bench's own image) before anything is installed, and
:func:`unbuildable_environments` lists every (repository, version) of the SWE-bench specifications that
cannot be built here, for ``takeover doctor`` (docs/protocol.md section 6).
"""

from __future__ import annotations

import ctypes.util
import functools
import shutil

from pydantic import BaseModel

from takeover.environments.interpreters import find_interpreter
from takeover.environments.spec import EnvSpec, spec_from_swebench
from takeover.environments.swebench_specs import repo_versions
from takeover.errors import EnvironmentUnavailable

#: Repositories whose install step compiles C or C++ extensions of the project itself.
COMPILED_REPOS = ("astropy/astropy", "matplotlib/matplotlib", "scikit-learn/scikit-learn")
#: The repositories of SWE-bench Verified (the ones ``takeover doctor`` reports on).
VERIFIED_REPOS = ("astropy/astropy", "django/django", "matplotlib/matplotlib", "mwaskom/seaborn", "pallets/flask",
                  "psf/requests", "pydata/xarray", "pylint-dev/pylint", "pytest-dev/pytest",
                  "scikit-learn/scikit-learn", "sphinx-doc/sphinx", "sympy/sympy")
#: What to use instead, said with every blocker.
DOCKER_ALTERNATIVE = "grade it with --backend docker (SWE-bench's own image) on a host with a Docker daemon"


class Unbuildable(BaseModel):
    """A (repository, version) of the specifications that this host cannot build.

    Attributes:
        repo, version: SWE-bench's names.
        reasons: what the host lacks, one sentence each.
    """

    repo: str
    version: str
    reasons: list[str]


@functools.lru_cache(maxsize=32)
def has_interpreter(version: str) -> bool:
    """Whether Python ``major.minor`` = ``version`` runs here (:func:`find_interpreter`, cached)."""
    try:
        find_interpreter(version)
    except EnvironmentUnavailable:
        return False
    return True


#: Why astropy before 4.1 cannot be built here: its build needs a git submodule from GitHub.
ASTROPY_HELPERS = ("its setup.py needs the astropy_helpers git submodule, which a checkout from the mirror lacks "
                   "and its bootstrap fetches from GitHub, which this host cannot reach")


def _astropy_with_helpers(version: str | None) -> bool:
    """Whether astropy ``version`` (SWE-bench's label) still builds with the astropy_helpers submodule
    (every release before 4.1; 4.1 moved to extension-helpers from the package index)."""
    try:
        major, minor = (int(x) for x in str(version).lstrip("v").split(".")[:2])
    except ValueError:
        return False
    return (major, minor) < (4, 1)


#: Why matplotlib cannot be built here (its sources come from outside the package index).
MATPLOTLIB_SOURCES = ("its build downloads FreeType and Qhull sources (and its pre_install fetches Qhull with wget) "
                      "from hosts other than the package index, which a local build cannot count on")


def host_blockers(spec: EnvSpec) -> list[str]:
    """What this host lacks to build ``spec``, one sentence each; empty when it can be built.

    Checks: the interpreter ``spec.python``; a C compiler for :data:`COMPILED_REPOS`; matplotlib, whose
    build downloads FreeType and Qhull sources, and astropy before 4.1, whose build needs a git submodule
    from GitHub, are never built locally; for specs needing
    ``pyenchant``, the enchant library. Looks only (no build, no network), in milliseconds once the
    interpreters are known.
    """
    reasons = []
    if spec.python and not has_interpreter(spec.python):
        reasons.append(f"no Python {spec.python} interpreter (interpreters are never downloaded; "
                       f"install one with: pyenv install {spec.python})")
    if spec.repo in COMPILED_REPOS and not (shutil.which("cc") or shutil.which("gcc")):
        reasons.append("the project compiles C extensions and no C compiler is installed (apt-get install build-essential)")
    if spec.repo == "matplotlib/matplotlib":
        reasons.append(MATPLOTLIB_SOURCES)
    if spec.repo == "astropy/astropy" and _astropy_with_helpers(spec.version):
        reasons.append(ASTROPY_HELPERS)
    if any(p.lower().startswith("pyenchant") for p in spec.pip_packages) and not ctypes.util.find_library("enchant-2"):
        reasons.append("pyenchant needs the enchant library, which the spec installs with apt-get "
                       "(apt-get install libenchant-2-dev)")
    return reasons


def check_buildable(spec: EnvSpec) -> None:
    """Raise before any work when this host cannot build ``spec``.

    Raises:
        EnvironmentUnavailable: names the repository and version, every reason (:func:`host_blockers`)
            and the Docker alternative.
    """
    reasons = host_blockers(spec)
    if reasons:
        raise EnvironmentUnavailable(f"{'; '.join(reasons)} (the environment of {spec.repo} {spec.version} "
                                     f"cannot be built on this host; {DOCKER_ALTERNATIVE})")


def unbuildable_environments(repos: tuple[str, ...] = VERIFIED_REPOS) -> list[Unbuildable]:
    """Every (repository, version) of swebench 4.1's ``MAP_REPO_VERSION_TO_SPECS``
    (:mod:`takeover.environments.swebench_specs`) for ``repos`` that this host cannot build, in the
    specifications' order."""
    out = []
    for repo in repos:
        for version in repo_versions(repo):
            reasons = host_blockers(spec_from_swebench(repo, version))
            if reasons:
                out.append(Unbuildable(repo=repo, version=version, reasons=reasons))
    return out
