"""SWE-bench's test harness in a workspace: patches applied with its fallbacks, its eval script, run sandboxed.

As in SWE-bench's ``run_evaluation``: a patch is applied with ``git apply``, then ``patch --batch
--fuzz=5``; before ``test_patch`` the test files it touches are reset to ``base_commit`` (and files it
creates are removed, so the task's own version is the one run); the eval script runs the eval commands
and the spec's test command on swebench's test directives between SWE-bench's start and end markers, and then
the test command's exit status as swebench 5.x's eval scripts record it.
The script runs inside :func:`takeover._util.sandbox.wrap` (no network unless asked) through
:func:`takeover._util.processes.run_process`, with the fixed environment of :mod:`takeover.grading.local.hermetic`
(nothing from the caller's): at the time limit its whole process group is killed and the log gets
SWE-bench's time-out marker.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from takeover._util import sandbox
from takeover._util.patches import patch_files
from takeover._util.processes import ProcessResult, run_process
from takeover.environments import EnvSpec, PreparedEnvironment, swebench_specs
from takeover.grading.local.hermetic import hermetic_environment, hermetic_eval_commands, hermetic_locale
from takeover.grading.swebench_rules import END_TEST_OUTPUT, START_TEST_OUTPUT, TEST_EXIT_CODE, TESTS_TIMEOUT
from takeover.sources.tasks import SourceTask

# SWE-bench's own order of patch application commands (run_evaluation.GIT_APPLY_CMDS, without the
# --reject variant, which leaves a half-applied tree).
_APPLY_CMDS = (["git", "apply", "--verbose"], ["patch", "--batch", "--fuzz=5", "-p1", "-i"])


def _failing_hunk(patch: str, message: str) -> str:
    """The hunk of ``patch`` named by a ``git apply`` error (``patch failed: path:line``), if found."""
    m = re.search(r"patch failed: (.+?):(\d+)", message)
    if not m:
        return ""
    path, line = m.group(1), int(m.group(2))
    try:
        for pf in PatchSet(patch):
            if pf.path.removeprefix("a/").removeprefix("b/") == path:
                for h in pf:
                    if h.source_start == line or h.source_start <= line < h.source_start + max(h.source_length, 1):
                        text = str(h)
                        return text if len(text) < 4000 else text[:4000] + "\n[... hunk truncated]"
    except (UnidiffParseError, ValueError):  # unparseable patch: the git message alone has to do
        return ""
    return ""


def apply_with_fallbacks(workspace: Path, patch: str, *, name: str = "patch.diff",
                         scratch: Path | None = None) -> tuple[bool, str]:
    """Apply ``patch`` to ``workspace`` with SWE-bench's fallbacks; returns ``(applied, message)``.

    An empty patch applies trivially. The patch is written to ``scratch/name`` (default: a new temporary
    folder). On failure the message holds ``git apply``'s error (failing file and line) and the failing
    hunk text, and the tree is restored.
    """
    if not patch or not patch.strip():
        return True, "empty patch"
    folder = scratch or Path(tempfile.mkdtemp(prefix="takeover-patch-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(patch if patch.endswith("\n") else patch + "\n", encoding="utf-8")
    first_error = ""
    for cmd in _APPLY_CMDS:
        if cmd[0] == "patch" and not shutil.which("patch"):
            continue
        proc = subprocess.run([*cmd, str(path)], cwd=workspace, capture_output=True, text=True, check=False)
        if proc.returncode == 0:
            return True, " ".join(cmd)
        if not first_error:
            first_error = (proc.stderr or proc.stdout).strip()
        if cmd[0] == "git":
            continue
        # patch --batch may leave partial hunks; restore the tree before reporting
        subprocess.run(["git", "checkout", "--", "."], cwd=workspace, capture_output=True, check=False)
    lines = [ln for ln in first_error.splitlines() if ln.startswith("error:")] or first_error.splitlines()[-3:]
    hunk = _failing_hunk(patch, first_error)
    return False, "\n".join(lines) + (f"\nfailing hunk:\n{hunk}" if hunk else "")


def apply_test_patch(workspace: Path, task: SourceTask, *, scratch: Path) -> tuple[bool, str]:
    """Reset the files of ``task.test_patch`` to ``base_commit`` (removing those it creates) and apply it,
    as SWE-bench's eval script does; returns ``(applied, message)`` of :func:`apply_with_fallbacks`."""
    files = patch_files(task.test_patch)
    tracked = [f for f in files
               if subprocess.run(["git", "cat-file", "-e", f"{task.base_commit}:{f}"], cwd=workspace,
                                 capture_output=True, check=False).returncode == 0]
    if tracked:
        subprocess.run(["git", "checkout", task.base_commit, "--", *tracked], cwd=workspace, capture_output=True, check=False)
    for f in files:
        if f not in tracked and (workspace / f).exists():
            (workspace / f).unlink()
    return apply_with_fallbacks(workspace, task.test_patch, name="test_patch.diff", scratch=scratch)


def test_directives(task: SourceTask) -> list[str]:
    """swebench 4.1 ``get_test_directives``: the test files of ``test_patch`` (Django: dotted modules)."""
    return swebench_specs.test_directives(task.repo, task.test_patch)


def eval_script(spec: EnvSpec, task: SourceTask, prologue: Sequence[str] = ()) -> str:
    """The bash script run in the sandbox: ``prologue`` (services the tests need, e.g.
    :func:`takeover.environments.local_httpbin.server_commands`), eval commands, the start marker, the test
    command on the directives, the end marker and the exit-code line (SWE-bench's constants); it exits with
    the test command's status.

    The locale the eval commands export is one this machine has
    (:func:`~takeover.grading.local.hermetic.hermetic_locale`).
    """
    cmds = spec.test_cmds
    directives = " ".join(test_directives(task))
    locale, _note = hermetic_locale(spec)
    lines = ["#!/bin/bash", "set -uo pipefail", *prologue, *hermetic_eval_commands(spec.eval_commands, locale),
             f"echo '{START_TEST_OUTPUT}'"]
    lines += cmds[:-1]
    lines.append(f"{cmds[-1]} {directives}".rstrip())
    lines += ["rc=$?", f"echo '{END_TEST_OUTPUT}'", f"echo '{TEST_EXIT_CODE}: '$rc", "exit $rc"]
    return "\n".join(lines) + "\n"


def home_folder(workspace: Path) -> Path:
    """The empty, writable ``HOME`` of the tests in ``workspace`` (the real one is read-only in the
    sandbox; SWE-bench's containers have their own)."""
    return workspace / ".git" / "takeover" / "home"


def run_tests(script: str, workspace: Path, env: PreparedEnvironment, *, log_path: Path, timeout: float,
              network: bool = False, readable: Sequence[Path] = ()) -> ProcessResult:
    """Run the eval ``script`` in ``workspace`` with the task's environment, inside the sandbox.

    Output is appended to ``log_path``; at ``timeout`` seconds the whole process group is killed and
    SWE-bench's ``TESTS_TIMEOUT`` marker is appended. The script's environment is
    :func:`~takeover.grading.local.hermetic.hermetic_environment` (``HOME`` = :func:`home_folder`), whatever this
    process's holds. ``network`` lets the tests use the network; ``readable`` are further folders the
    script reads (a service's venv in a cache under ``/tmp``).

    Raises:
        OSError: the script cannot start.
    """
    # /tmp is private inside the sandbox: a cached environment under /tmp must be bound again.
    argv = sandbox.wrap(["bash", "-c", script], workspace, readable=[*env.readable, *readable], network=network)
    home = home_folder(workspace)
    home.mkdir(parents=True, exist_ok=True)
    test_env = hermetic_environment(env, home=home, locale=hermetic_locale(env.spec)[0])
    done = run_process(argv, cwd=workspace, env=test_env, log_path=log_path, timeout=timeout)
    if done.timed_out:
        with open(log_path, "a", encoding="utf-8") as fh:
            fh.write(f"\n{TESTS_TIMEOUT} after {timeout:.0f} s: process group killed\n")
    return done
