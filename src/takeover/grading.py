"""SWE-bench grading of a patch and the handoff state of a checkpoint (docs/protocol.md sections 6, 8; issue 3).

``local`` backend, per prediction: a fresh workspace at ``base_commit`` (shared-object clone of the
mirror); the candidate patch applied with SWE-bench's own fallbacks (``git apply``, then
``patch --batch --fuzz=5``); the task's environment prepared (:mod:`takeover.environments`, which runs
the install step after the patch, as SWE-bench's eval script does); the test files of ``test_patch``
reset to ``base_commit`` and ``test_patch`` applied; the spec's test command run on swebench's test
directives inside :func:`takeover.sandbox.wrap` (no network) with a time limit, its whole process group
killed at the limit. Test files that ``test_patch`` creates are removed first when the candidate patch
created them too, so the task's own version is the one run. The log carries SWE-bench's start/end markers, is parsed with the repository's
swebench log parser, and the FAIL_TO_PASS / PASS_TO_PASS report and ``resolved`` come from swebench's
``get_eval_tests_report`` and ``get_resolution_status``. A SWE-bench-compatible ``report.json`` is
written beside ``test_output.txt``.

``docker`` backend: the official harness (``swebench.harness.run_evaluation``) when a Docker daemon
answers; :class:`~takeover.errors.EnvironmentUnavailable` otherwise.

Timeouts follow SWE-bench: a killed test run yields an empty status map (every listed test counts as
failed) and ``resolved`` is false.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from takeover import sandbox
from takeover._io import atomic_write_json, atomic_write_text, iter_jsonl, sha256_text, stable_hash
from takeover.environments import EnvSpec, PreparedEnvironment, env_spec_for, prepare_environment
from takeover.errors import EnvironmentUnavailable, InputError, RepositoryUnavailable, TakeoverError
from takeover.repos import RepoSource, cache_dir
from takeover.tasks import SourceTask

HandoffState = Literal["invalid", "resolved_preserve", "needs_completion", "broke_existing"]
HANDOFF_STATES: tuple[str, ...] = ("invalid", "resolved_preserve", "needs_completion", "broke_existing")
BACKENDS = ("local", "docker")
# SWE-bench's own order of patch application commands (run_evaluation.GIT_APPLY_CMDS, without the
# --reject variant, which leaves a half-applied tree).
_APPLY_CMDS = (["git", "apply", "--verbose"], ["patch", "--batch", "--fuzz=5", "-p1", "-i"])
# Repositories whose SWE-bench tests need the internet. SWE-bench's Docker harness runs tests with the
# network on; our local backend runs them offline unless ``network=True``, and then these tasks cannot
# resolve, so their results carry a warning. Known from running the gold patches offline.
NETWORK_REPOS: dict[str, str] = {
    "psf/requests": "its tests call httpbin.org",
}
EXIT_CODE_MARKER = ">>>>> Test command exit code:"


class TestOutcome(BaseModel):
    """Tests of one class (FAIL_TO_PASS or PASS_TO_PASS) split by outcome, as in swebench's report."""

    __test__ = False  # not a pytest test class despite the name

    success: list[str] = Field(default_factory=list)
    failure: list[str] = Field(default_factory=list)


class GradeResult(BaseModel):
    """The grading of one patch for one task (docs/protocol.md sections 6 and 8).

    Attributes:
        resolved: swebench ``get_resolution_status`` is ``RESOLVED_FULL``.
        handoff_state: docs/protocol.md section 6 label; None when grading itself failed (see ``error``).
        FAIL_TO_PASS, PASS_TO_PASS: the swebench report lists.
        env_seconds, test_seconds: wall seconds for preparing the environment and running the tests.
        log_path: the test log (``test_output.txt``) with SWE-bench's markers; ``report.json`` is beside it.
        applied: the candidate patch applied; ``apply_error`` names the failing file/hunk when not.
        timed_out: the test command hit the limit and its process group was killed.
        error: why grading could not finish (environment build, test patch, repository), else None.
        network: the tests ran with the network on (``local`` backend; SWE-bench's Docker harness has it on).
        warnings: reasons the result may not match the official harness, e.g. the repository's tests need
            the network (:data:`NETWORK_REPOS`) and it was off.
    """

    model_config = ConfigDict(populate_by_name=True)

    instance_id: str
    model_name_or_path: str | None = None
    resolved: bool = False
    handoff_state: HandoffState | None = None
    FAIL_TO_PASS: TestOutcome = Field(default_factory=TestOutcome)
    PASS_TO_PASS: TestOutcome = Field(default_factory=TestOutcome)
    backend: str = "local"
    env_seconds: float = 0.0
    test_seconds: float = 0.0
    env_cached: bool | None = None
    env_build_seconds: float = 0.0
    log_path: str | None = None
    applied: bool = False
    apply_error: str | None = None
    timed_out: bool = False
    error: str | None = None
    sandboxed: bool = False
    patch_sha256: str | None = None
    notes: list[str] = Field(default_factory=list)
    network: bool = False
    warnings: list[str] = Field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The fields printed by ``takeover grade --json``."""
        return self.model_dump(mode="json", include={
            "instance_id", "resolved", "handoff_state", "FAIL_TO_PASS", "PASS_TO_PASS", "backend",
            "env_seconds", "env_cached", "env_build_seconds", "test_seconds", "log_path", "applied", "apply_error",
            "timed_out", "error", "network", "warnings"})


class Prediction(BaseModel):
    """One row of a SWE-bench predictions file (``preds.json`` / ``.jsonl``)."""

    model_config = ConfigDict(extra="allow")

    instance_id: str
    model_name_or_path: str = "takeover"
    model_patch: str | None = ""


def network_warning(repo: str, network: bool) -> str | None:
    """The warning for a task of ``repo`` graded with ``network`` (None when there is nothing to say):
    the repository's tests need the internet (:data:`NETWORK_REPOS`) and the network was off, so some
    tests fail whatever the patch and the task cannot be resolved."""
    if network or repo not in NETWORK_REPOS:
        return None
    return (f"{repo}: {NETWORK_REPOS[repo]}; graded without network, so those tests fail whatever the patch "
            f"(grade with --network, or [grading] network = true in an experiment)")


def handoff_state(result: GradeResult) -> HandoffState | None:
    """docs/protocol.md section 6, in order: patch does not apply -> ``invalid``; all FAIL_TO_PASS and
    PASS_TO_PASS pass -> ``resolved_preserve``; some FAIL_TO_PASS fail -> ``needs_completion``; else some
    PASS_TO_PASS fail -> ``broke_existing``. None when grading failed for another reason (``error``)."""
    if result.error is not None:
        return None
    if not result.applied:
        return "invalid"
    if not result.FAIL_TO_PASS.failure and not result.PASS_TO_PASS.failure:
        return "resolved_preserve"
    if result.FAIL_TO_PASS.failure:
        return "needs_completion"
    return "broke_existing"


# ---------------------------------------------------------------------------------------------------
# Logs and reports (pure functions over swebench's parsers and grading)


def resolve_log_parser(name: str | None, repo: str | None):
    """A swebench log parser function: by name (``pytest``, ``django``, ``sympy``, ``pytest_v2``,
    ``pytest_options``, ``seaborn``, ``matplotlib``, ...), by repository (``sympy/sympy``), or for
    ``repo`` from ``MAP_REPO_TO_PARSER``; ``pytest`` when nothing matches.

    Raises:
        EnvironmentUnavailable: an unknown parser name.
    """
    from swebench.harness import log_parsers
    from swebench.harness.log_parsers import MAP_REPO_TO_PARSER
    from swebench.harness.log_parsers import python as py_parsers

    if name:
        if name in MAP_REPO_TO_PARSER:
            return MAP_REPO_TO_PARSER[name]
        for module in (py_parsers, log_parsers):
            fn = getattr(module, f"parse_log_{name}", None)
            if callable(fn):
                return fn
        known = sorted(n[len("parse_log_"):] for n in dir(py_parsers) if n.startswith("parse_log_"))
        raise EnvironmentUnavailable(f"unknown log parser {name!r}; known: {', '.join(known)} or a repository name")
    if repo and repo in MAP_REPO_TO_PARSER:
        return MAP_REPO_TO_PARSER[repo]
    return py_parsers.parse_log_pytest


def _test_spec_stub(task: SourceTask):
    """A swebench ``TestSpec`` carrying what log parsers read (they take one; the Python ones ignore it)."""
    from swebench.harness.test_spec.test_spec import TestSpec

    return TestSpec(instance_id=task.instance_id, repo=task.repo, version=task.version or "",
                    repo_script_list=[], eval_script_list=[], env_script_list=[], arch="x86_64",
                    FAIL_TO_PASS=task.FAIL_TO_PASS, PASS_TO_PASS=task.PASS_TO_PASS, language="py",
                    docker_specs={}, namespace=None)


def parse_test_log(content: str, task: SourceTask, log_parser: str | None = None) -> tuple[dict[str, str], bool]:
    """Status map of a test log, as swebench's ``get_logs_eval`` computes it.

    Returns ``(status map {test name: PASSED/FAILED/...}, found)``; ``found`` is False (and the map
    empty) when the log holds a swebench failure code (apply failed, tests errored or timed out) or
    lacks the start/end markers.
    """
    from swebench.harness.constants import (
        APPLY_PATCH_FAIL,
        END_TEST_OUTPUT,
        RESET_FAILED,
        START_TEST_OUTPUT,
        TESTS_ERROR,
        TESTS_TIMEOUT,
    )

    if any(code in content for code in (APPLY_PATCH_FAIL, RESET_FAILED, TESTS_ERROR, TESTS_TIMEOUT)):
        return {}, False
    if START_TEST_OUTPUT not in content or END_TEST_OUTPUT not in content:
        return {}, False
    parser = resolve_log_parser(log_parser, task.repo)
    spec = _test_spec_stub(task)
    inner = content.split(START_TEST_OUTPUT)[1].split(END_TEST_OUTPUT)[0]
    status = parser(inner, spec) or parser(content, spec)
    return status, True


def tests_report(status_map: Mapping[str, str], task: SourceTask) -> dict[str, dict[str, list[str]]]:
    """swebench ``get_eval_tests_report`` of a status map against the task's FAIL_TO_PASS/PASS_TO_PASS."""
    from swebench.harness.constants import FAIL_ONLY_REPOS, EvalType
    from swebench.harness.grading import get_eval_tests_report

    eval_type = EvalType.FAIL_ONLY if task.repo in FAIL_ONLY_REPOS else EvalType.PASS_AND_FAIL
    gold = {"FAIL_TO_PASS": task.FAIL_TO_PASS, "PASS_TO_PASS": task.PASS_TO_PASS}
    return get_eval_tests_report(dict(status_map), gold, eval_type=eval_type)


def is_resolved(report: Mapping[str, Any]) -> bool:
    """swebench ``get_resolution_status(report) == RESOLVED_FULL``."""
    from swebench.harness.constants import ResolvedStatus
    from swebench.harness.grading import get_resolution_status

    return get_resolution_status(dict(report)) == ResolvedStatus.FULL.value


def grade_log(content: str, task: SourceTask, *, log_parser: str | None = None, applied: bool = True,
              backend: str = "local") -> GradeResult:
    """Grade a captured test log (SWE-bench markers) for ``task``; no tests are run."""
    status, _found = parse_test_log(content, task, log_parser) if applied else ({}, False)
    report = tests_report(status, task)
    result = GradeResult(
        instance_id=task.instance_id, backend=backend, applied=applied,
        FAIL_TO_PASS=TestOutcome(**report["FAIL_TO_PASS"]), PASS_TO_PASS=TestOutcome(**report["PASS_TO_PASS"]),
        resolved=applied and is_resolved(report),
    )
    result.handoff_state = handoff_state(result)
    return result


def swebench_report(result: GradeResult, model_patch: str | None) -> dict[str, Any]:
    """The ``report.json`` content swebench's ``get_eval_report`` writes (``{instance_id: {...}}``)."""
    return {result.instance_id: {
        "patch_is_None": model_patch is None,
        "patch_exists": model_patch is not None,
        "patch_successfully_applied": result.applied and result.error is None and not result.timed_out,
        "resolved": result.resolved,
        "tests_status": {
            "FAIL_TO_PASS": result.FAIL_TO_PASS.model_dump(),
            "PASS_TO_PASS": result.PASS_TO_PASS.model_dump(),
            "FAIL_TO_FAIL": {"success": [], "failure": []},
            "PASS_TO_FAIL": {"success": [], "failure": []},
        },
    }}


# ---------------------------------------------------------------------------------------------------
# Patches


def _failing_hunk(patch: str, message: str) -> str:
    """The hunk of ``patch`` named by a ``git apply`` error (``patch failed: path:line``), if found."""
    from unidiff import PatchSet
    from unidiff.errors import UnidiffParseError

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


def apply_patch(workspace: Path, patch: str, *, name: str = "patch.diff", scratch: Path | None = None) -> tuple[bool, str]:
    """Apply ``patch`` to ``workspace`` with SWE-bench's fallbacks; returns ``(applied, message)``.

    An empty patch applies trivially. On failure the message holds ``git apply``'s error (failing file
    and line) and the failing hunk text.
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


# ---------------------------------------------------------------------------------------------------
# Running the tests


def test_directives(task: SourceTask) -> list[str]:
    """swebench ``get_test_directives``: the test files of ``test_patch`` (Django: dotted modules)."""
    from swebench.harness.test_spec.python import get_test_directives

    return get_test_directives({"repo": task.repo, "test_patch": task.test_patch, "instance_id": task.instance_id})


def eval_script(spec: EnvSpec, task: SourceTask) -> str:
    """The bash script run in the sandbox: eval commands, the start marker, the test command on the
    directives, the exit-code line and the end marker (SWE-bench's constants)."""
    from swebench.harness.constants import END_TEST_OUTPUT, START_TEST_OUTPUT

    cmds = spec.test_cmds
    directives = " ".join(test_directives(task))
    lines = ["#!/bin/bash", "set -uo pipefail", *spec.eval_commands, f"echo '{START_TEST_OUTPUT}'"]
    lines += cmds[:-1]
    lines.append(f"{cmds[-1]} {directives}".rstrip())
    lines += ["rc=$?", f"echo \"{EXIT_CODE_MARKER} $rc\"", f"echo '{END_TEST_OUTPUT}'", "exit $rc"]
    return "\n".join(lines) + "\n"


def run_with_timeout(argv: list[str], *, cwd: Path, env: Mapping[str, str], log_path: Path,
                     timeout: float) -> tuple[int | None, bool, float]:
    """Run ``argv`` in a new session with stdout+stderr appended to ``log_path``.

    At ``timeout`` seconds the whole process group is killed (SIGKILL). Returns
    ``(exit status or None when killed, timed_out, seconds)``.
    """
    start = time.monotonic()
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=dict(env), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
            return rc, False, time.monotonic() - start
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            return None, True, time.monotonic() - start


def _wrap(argv: list[str], workspace: Path, readable: list[Path], network: bool = False) -> list[str]:
    """``sandbox.wrap`` with extra read-only folders (``/tmp`` is private inside the sandbox, so a cached
    environment under ``/tmp`` must be bound again)."""
    import inspect

    if "readable" in inspect.signature(sandbox.wrap).parameters:
        return sandbox.wrap(argv, workspace, readable=readable, network=network)
    return sandbox.wrap(argv, workspace, writable=[r for r in readable if not r.is_relative_to(workspace)],
                        network=network)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


def _grade_local(task: SourceTask, patch: str | None, *, repo_source: RepoSource, timeout: float, log_dir: Path,
                 spec_file: Any, keep_workspace: bool, result: GradeResult, network: bool = False) -> GradeResult:
    from swebench.harness.constants import TESTS_TIMEOUT

    from takeover.patches import patch_files

    test_log = log_dir / "test_output.txt"
    run_log = log_dir / "run_instance.log"
    for p in (test_log, run_log):
        p.unlink(missing_ok=True)
    result.log_path = str(test_log)
    tmp = Path(tempfile.mkdtemp(prefix=f"takeover-grade-{task.instance_id}-"))
    workspace = tmp / "repo"
    try:
        try:
            repo_source.workspace(task.repo, task.base_commit, workspace)
        except RepositoryUnavailable as exc:
            result.error = str(exc)
            return result
        ok, message = apply_patch(workspace, patch or "", scratch=log_dir)
        _write(run_log, f"candidate patch: {message}\n")
        result.applied = ok
        if not ok:
            result.apply_error = message
            return result
        try:
            spec = env_spec_for(task, spec_file)  # outside the timer: the first call imports swebench
            resolve_log_parser(spec.log_parser, task.repo)  # a wrong parser name fails before any work
        except TakeoverError as exc:
            result.error = f"environment: {exc}"
            return result
        start = time.monotonic()
        try:
            env: PreparedEnvironment = prepare_environment(task, workspace, spec=spec)
        except TakeoverError as exc:
            result.env_seconds = time.monotonic() - start
            result.error = f"environment: {exc}"
            _write(run_log, f"environment failed: {exc}\n")
            return result
        result.env_seconds = time.monotonic() - start
        result.env_cached = env.cached
        result.env_build_seconds = env.build_seconds
        result.notes += env.notes
        _write(run_log, f"environment: python {env.interpreter_version} at {env.python} (shared {env.shared_venv}, "
                        f"cached {env.cached}, build {env.build_seconds:.1f} s, setup {env.setup_seconds:.1f} s)\n")
        # SWE-bench: reset the test files to base_commit, then apply test_patch.
        tracked = [f for f in patch_files(task.test_patch)
                   if subprocess.run(["git", "cat-file", "-e", f"{task.base_commit}:{f}"], cwd=workspace,
                                     capture_output=True, check=False).returncode == 0]
        if tracked:
            subprocess.run(["git", "checkout", task.base_commit, "--", *tracked], cwd=workspace, capture_output=True, check=False)
        created = [f for f in patch_files(task.test_patch) if f not in tracked and (workspace / f).exists()]
        for f in created:
            (workspace / f).unlink()
        ok, message = apply_patch(workspace, task.test_patch, name="test_patch.diff", scratch=log_dir)
        if not ok:
            result.error = f"test_patch does not apply: {message}"
            return result
        script = eval_script(env.spec, task)
        atomic_write_text(log_dir / "eval.sh", script)
        st = sandbox.status()
        result.sandboxed = st.available
        _write(run_log, f"{st.message}\n")
        _write(run_log, f"network for the tests: {'on' if network else 'off'}\n")
        argv = _wrap(["bash", "-c", script], workspace, env.readable, network)
        test_env = env.env_vars()
        # An empty, writable home as in SWE-bench's containers (the real one is read-only in the sandbox).
        home = workspace / ".git" / "takeover" / "home"
        home.mkdir(parents=True, exist_ok=True)
        test_env["HOME"] = str(home)
        rc, timed_out, seconds = run_with_timeout(argv, cwd=workspace, env=test_env, log_path=test_log, timeout=timeout)
        result.test_seconds = seconds
        result.timed_out = timed_out
        if timed_out:
            _write(test_log, f"\n{TESTS_TIMEOUT} after {timeout:.0f} s: process group killed\n")
        content = test_log.read_text(encoding="utf-8", errors="replace")
        status, _ = parse_test_log(content, task, env.spec.log_parser)
        report = tests_report(status, task)
        result.FAIL_TO_PASS = TestOutcome(**report["FAIL_TO_PASS"])
        result.PASS_TO_PASS = TestOutcome(**report["PASS_TO_PASS"])
        result.resolved = not timed_out and is_resolved(report)
        _write(run_log, f"test command exit status {rc}, {seconds:.1f} s, timed out {timed_out}\n")
        return result
    finally:
        if not keep_workspace:
            shutil.rmtree(tmp, ignore_errors=True)


def docker_available() -> tuple[bool, str]:
    """Whether a Docker daemon answers (``docker`` Python client ``ping``), with a sentence."""
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        import docker

        client = docker.from_env(timeout=10)
        client.ping()
        return True, f"Docker daemon at {where}"
    except Exception as exc:  # noqa: BLE001 - docker raises many kinds of errors when no daemon answers
        return False, (f"no Docker daemon answers at {where} ({type(exc).__name__}); "
                       f"use --backend local, or start Docker to use the official harness")


def _grade_docker(tasks: list[SourceTask], preds: list[Prediction], *, timeout: float, log_dir: Path,
                  run_id: str) -> list[GradeResult]:
    """Run swebench's official harness (``run_instances``) and read back its reports."""
    ok, message = docker_available()
    if not ok:
        raise EnvironmentUnavailable(message)
    from swebench.harness.constants import (
        LOG_REPORT,
        LOG_TEST_OUTPUT,
        MAP_REPO_VERSION_TO_SPECS,
        RUN_EVALUATION_LOG_DIR,
    )
    from swebench.harness.run_evaluation import run_instances

    by_id = {t.instance_id: t for t in tasks}
    unknown = [p for p in preds if by_id[p.instance_id].version not in MAP_REPO_VERSION_TO_SPECS.get(
        by_id[p.instance_id].repo, {})]
    preds_known = [p for p in preds if p not in unknown]
    # exclude_none: swebench reads environment_setup_commit when the key exists, even when it is null
    instances = [by_id[p.instance_id].model_dump(mode="json", exclude_none=True) for p in preds_known]
    predictions = {p.instance_id: p.model_dump(mode="json") for p in preds_known}
    start = time.monotonic()
    if preds_known:
        run_instances(predictions, instances, cache_level="env", clean=False, force_rebuild=False, max_workers=1,
                      run_id=run_id, timeout=int(timeout))
    seconds = time.monotonic() - start
    results = []
    for p in preds:
        folder = RUN_EVALUATION_LOG_DIR / run_id / p.model_name_or_path.replace("/", "__") / p.instance_id
        result = GradeResult(instance_id=p.instance_id, model_name_or_path=p.model_name_or_path, backend="docker",
                             test_seconds=seconds / max(len(preds), 1), log_path=str(folder / LOG_TEST_OUTPUT),
                             patch_sha256=sha256_text(p.model_patch or ""), network=True)
        report_path = folder / LOG_REPORT
        if p in unknown:
            t = by_id[p.instance_id]
            result.error = (f"the docker backend needs a SWE-bench (repo, version); {t.repo} {t.version} is not in "
                            f"swebench's specifications: use --backend local with takeover_env_spec or --env-spec")
        elif not report_path.exists():
            result.error = f"the official harness wrote no report at {report_path}"
        else:
            import json

            rep = json.loads(report_path.read_text())[p.instance_id]
            result.applied = bool(rep.get("patch_successfully_applied"))
            status = rep.get("tests_status") or {}
            result.FAIL_TO_PASS = TestOutcome(**status.get("FAIL_TO_PASS", {}))
            result.PASS_TO_PASS = TestOutcome(**status.get("PASS_TO_PASS", {}))
            result.resolved = bool(rep.get("resolved"))
            if not result.applied:
                result.apply_error = "the official harness could not apply the patch (see run_instance.log)"
        result.handoff_state = handoff_state(result)
        out = log_dir / result.model_name_or_path.replace("/", "__") / p.instance_id / "result.json"
        atomic_write_json(out, result)
        results.append(result)
    return results


# ---------------------------------------------------------------------------------------------------
# Public entry points


def read_predictions(path: Path | str) -> list[Prediction]:
    """Read SWE-bench predictions: ``preds.json`` (a list, or a dict keyed by ``instance_id``) or JSONL.

    Raises:
        InputError: bad JSON or a record without ``instance_id`` (names file, record and field).
    """
    import json

    path = Path(path)
    rows: list[tuple[str, Any]] = []
    if path.suffix == ".jsonl":
        rows = [(f"line {n}", v) for n, v in iter_jsonl(path)]
    else:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise InputError(path, f"cannot read predictions ({exc})") from None
        if isinstance(data, dict):
            rows = [(f"key {k!r}", {"instance_id": k, **v} if isinstance(v, dict) else v) for k, v in data.items()]
        elif isinstance(data, list):
            rows = [(f"index {i}", v) for i, v in enumerate(data)]
        else:
            raise InputError(path, "expected a list or an object of predictions")
    preds = []
    for where, row in rows:
        if not isinstance(row, dict):
            raise InputError(path, "a prediction must be an object", record=where)
        if not isinstance(row.get("instance_id"), str):
            raise InputError(path, "missing or non-string instance_id", record=where, field="instance_id")
        if row.get("model_patch") is not None and not isinstance(row.get("model_patch"), str):
            raise InputError(path, "model_patch must be a string", record=where, field="model_patch")
        preds.append(Prediction.model_validate(row))
    return preds


def _as_task(task: Any) -> SourceTask:
    return task if isinstance(task, SourceTask) else SourceTask.model_validate(task)


def grade_predictions(
    tasks: Iterable[Any],
    predictions: Iterable[Prediction | Mapping[str, Any]],
    *,
    backend: str = "local",
    repo_source: RepoSource | None = None,
    timeout: float = 1800,
    log_dir: Path | str | None = None,
    spec_file: Any = None,
    resume: bool = True,
    keep_workspace: bool = False,
    run_id: str = "takeover",
    network: bool = False,
) -> list[GradeResult]:
    """Grade SWE-bench predictions, one :class:`GradeResult` per prediction, in order.

    Each result goes to ``<log_dir>/<model_name_or_path>/<instance_id>/`` (``test_output.txt``,
    ``report.json``, ``result.json``, ``eval.sh``, ``run_instance.log``) written atomically; with
    ``resume`` a result already there for the same patch (sha256) is reused. A failure of one
    prediction (environment, repository) is recorded in its ``error`` and the others go on.

    Args:
        tasks: source tasks (``SourceTask`` or dicts) covering the predictions' ``instance_id``s.
        predictions: ``Prediction`` records or dicts (``instance_id``, ``model_name_or_path``, ``model_patch``).
        backend: ``local`` (venv + sandbox) or ``docker`` (swebench's official harness).
        timeout: seconds allowed for each test run.
        log_dir: default ``cache_dir()/grading``.
        spec_file: user environment spec file (see :func:`takeover.environments.env_spec_for`).
        network: let the tests use the network (off by default; SWE-bench's Docker harness leaves it on,
            and a few suites need it, e.g. psf/requests calls httpbin.org).

    Raises:
        InputError: a prediction names an ``instance_id`` that is not among ``tasks``.
        EnvironmentUnavailable: ``backend="docker"`` and no Docker daemon answers.
    """
    if backend not in BACKENDS:
        raise InputError("--backend", f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
    by_id = {t.instance_id: t for t in map(_as_task, tasks)}
    preds = [p if isinstance(p, Prediction) else Prediction.model_validate(dict(p)) for p in predictions]
    for i, p in enumerate(preds):
        if p.instance_id not in by_id:
            raise InputError("predictions", f"instance {p.instance_id!r} is not in the dataset", record=f"index {i}",
                             field="instance_id")
    root = Path(log_dir) if log_dir is not None else cache_dir() / "grading"
    if backend == "docker":
        return _grade_docker(list(by_id.values()), preds, timeout=timeout, log_dir=root, run_id=run_id)
    source = repo_source or RepoSource()
    results = []
    for p in preds:
        task = by_id[p.instance_id]
        folder = root / p.model_name_or_path.replace("/", "__") / p.instance_id
        digest = sha256_text(p.model_patch or "")
        saved = folder / "result.json"
        if resume and saved.exists():
            try:
                old = GradeResult.model_validate_json(saved.read_text())
                if (old.patch_sha256 == digest and old.error is None and old.backend == backend
                        and old.network == network):
                    results.append(old)
                    continue
            except ValueError:
                pass  # unreadable old result: grade again
        folder.mkdir(parents=True, exist_ok=True)
        result = GradeResult(instance_id=p.instance_id, model_name_or_path=p.model_name_or_path, backend=backend,
                             patch_sha256=digest, network=network)
        warning = network_warning(task.repo, network)
        if warning:
            result.warnings.append(warning)
        try:
            _grade_local(task, p.model_patch, repo_source=source, timeout=timeout, log_dir=folder,
                         spec_file=spec_file, keep_workspace=keep_workspace, result=result, network=network)
        except TakeoverError as exc:
            result.error = str(exc)
        except Exception as exc:  # noqa: BLE001 - one broken task must not stop the others
            result.error = f"unexpected {type(exc).__name__}: {exc}"
        result.handoff_state = handoff_state(result)
        if result.log_path and not Path(result.log_path).exists():
            # No test ran (patch does not apply, repository or environment failed): the log path that is
            # printed must exist and say why.
            why = (f"candidate patch does not apply:\n{result.apply_error}" if result.apply_error
                   else result.error or "grading stopped before the tests")
            atomic_write_text(result.log_path, f"no tests were run: {why}\n")
        if p.model_patch is not None:
            atomic_write_text(folder / "patch.diff", p.model_patch)
        atomic_write_json(folder / "report.json", swebench_report(result, p.model_patch))
        atomic_write_json(saved, result)
        results.append(result)
    return results


def grade(
    task: Any,
    patch: str | None,
    *,
    backend: str = "local",
    repo_source: RepoSource | None = None,
    timeout: float = 1800,
    log_dir: Path | str | None = None,
    spec_file: Any = None,
    model_name_or_path: str = "takeover",
    resume: bool = False,
    network: bool = False,
) -> GradeResult:
    """Grade one patch for one task (same code path as :func:`grade_predictions`).

    Args:
        task: a :class:`SourceTask` or an instance dict.
        patch: the candidate ``model_patch`` (``""`` = the empty patch).
        timeout: seconds for the test run; at the limit the process group is killed (``timed_out``).
        log_dir: folder for the logs (default ``cache_dir()/grading``).
        network: let the tests use the network (see :func:`grade_predictions`, :data:`NETWORK_REPOS`).
    Returns:
        :class:`GradeResult`; ``handoff_state`` per docs/protocol.md section 6.
    """
    task = _as_task(task)
    pred = Prediction(instance_id=task.instance_id, model_name_or_path=model_name_or_path, model_patch=patch)
    return grade_predictions([task], [pred], backend=backend, repo_source=repo_source, timeout=timeout,
                             log_dir=log_dir, spec_file=spec_file, resume=resume, network=network)[0]


def run_key(task: SourceTask, patch: str) -> str:
    """Stable key of a (task, patch) grading, for callers that store results themselves."""
    return stable_hash({"instance_id": task.instance_id, "patch": sha256_text(patch or "")})


__all__ = [
    "HANDOFF_STATES",
    "NETWORK_REPOS",
    "GradeResult",
    "Prediction",
    "TestOutcome",
    "apply_patch",
    "docker_available",
    "env_spec_for",
    "eval_script",
    "grade",
    "grade_log",
    "grade_predictions",
    "handoff_state",
    "is_resolved",
    "network_warning",
    "parse_test_log",
    "read_predictions",
    "resolve_log_parser",
    "run_with_timeout",
    "swebench_report",
    "test_directives",
    "tests_report",
]
