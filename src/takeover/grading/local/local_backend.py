"""The ``local`` grading backend: SWE-bench's evaluation of one prediction without Docker.

Per prediction: the specification looked up and what this host cannot build said before any work
(:func:`takeover.environments.check_buildable`); a fresh workspace at ``base_commit`` (a shared-object
clone from the repository source) put into the task's starting state (the specification's ``pre_install``
edits, in the form the candidate patch was made in: :mod:`takeover.repository_states.starting_state`); the
candidate patch
applied with SWE-bench's fallbacks; the task's environment prepared (:mod:`takeover.environments`, which runs the
install step after the patch, as SWE-bench's eval script does); ``test_patch`` applied and the eval script run in the sandbox with a time limit and a fixed
environment (:mod:`takeover.grading.local.harness`, :mod:`takeover.grading.local.hermetic`); the log parsed and
graded (:mod:`takeover.grading.verdict`). The folder ``log_dir`` receives ``test_output.txt``,
``run_instance.log`` (with the test environment), ``eval.sh`` and the patches.

The tests run without network unless asked (SWE-bench's Docker harness leaves it on). A suite that
reads ``HTTPBIN_URL`` (psf/requests before 2.9) gets a local httpbin inside the sandbox instead
(:mod:`takeover.environments.local_httpbin`); otherwise the suites of :data:`NETWORK_REPOS` cannot pass
offline, and their results carry a warning.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from takeover._util import sandbox
from takeover._util.folders import scratch_folder
from takeover._util.io import atomic_write_text, sha256_text
from takeover.environments import (
    EnvSpec,
    check_buildable,
    env_spec_for,
    prepare_environment,
    record_pre_install,
)
from takeover.environments.local_httpbin import (
    HTTPBIN_PACKAGES,
    HTTPBIN_VARIABLE,
    httpbin_venv,
    server_commands,
    uses_httpbin_url,
)
from takeover.environments.shared_venv import BROKEN_NOTE, LEFT_OUT_NOTE
from takeover.errors import TakeoverError
from takeover.grading.local.harness import (
    apply_test_patch,
    apply_with_fallbacks,
    eval_script,
    home_folder,
    run_tests,
)
from takeover.grading.local.hermetic import hermetic_environment, hermetic_locale
from takeover.grading.log_parsing import parse_test_log, resolve_log_parser
from takeover.grading.predictions import Prediction
from takeover.grading.reuse import EnvironmentKey, GradingKey, value_digest
from takeover.grading.seeds import seed_export
from takeover.grading.verdict import (
    GradeResult,
    handoff_state,
    missing_module_skips,
    missing_module_warning,
    report_outcomes,
    runner_not_started,
)
from takeover.grading_settings import GradingSettings
from takeover.repository_states.starting_state import apply_starting_state, environment_edits, recorded_form
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask

# Repositories whose SWE-bench tests need the internet. Known from running the gold patches offline.
NETWORK_REPOS: dict[str, str] = {
    "psf/requests": "its tests call httpbin.org",
}
#: The warning of a suite served a local httpbin, kept only when a test failed: a failure may be one of the
#: tests that call an internet host themselves (https://httpbin.org, other hosts) and fail offline.
#: Prefix of the temporary folder of one grading: ``takeover-grade-<pid>-<instance_id>-<random>``.
GRADE_SCRATCH = "takeover-grade-"

PAST_HTTPBIN_WARNING = ("{repo}: HTTPBIN_URL was served by a local httpbin, but some tests reach past it (https "
                        "URLs, other hosts) and fail without network whatever the patch; a failing test may be one "
                        "of them (grade with --network on a machine with internet access, or --backend docker)")


def network_warning(repo: str, network: bool) -> str | None:
    """The warning for a task of ``repo`` graded with ``network`` (None when there is nothing to say):
    the repository's tests need the internet (:data:`NETWORK_REPOS`) and the network was off, so some
    tests fail whatever the patch and the task cannot be resolved."""
    if network or repo not in NETWORK_REPOS:
        return None
    return (f"{repo}: {NETWORK_REPOS[repo]}; graded without network, so those tests fail whatever the patch "
            f"(grade with --network, or [grading] network = true in an experiment)")


def _append(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


def _environment_setup_edits(task: SourceTask, spec: EnvSpec, workspace: Path, model_patch: str,
                             run_log: Path) -> None:
    """Put the fresh checkout ``workspace`` into the task's starting state before the candidate patch, in
    the form the patch was made in (:mod:`takeover.repository_states.starting_state`, docs/protocol.md
    section 6).

    The specification's ``pre_install`` steps are part of the environment's image, never the patch's
    work. A patch made in an image that committed their edits (SWE-bench's ``git commit -am SWE-bench``)
    does not carry them: the edits are committed here too and the patch goes on top. A patch made in an
    image that left them in the working tree carries them (``git diff`` shows them): it goes onto
    ``base_commit`` as it is, and brings the edits itself. Either way the steps are marked as done, so
    the environment's preparation never runs them a second time after the patch (a ``sed`` pin applied
    twice breaks the install).
    """
    if not spec.pre_install:
        return
    state = environment_edits(task, workspace, spec=spec)
    form = recorded_form(state, model_patch)
    if form == "committed":
        apply_starting_state(workspace, state, form)
    record_pre_install(spec, workspace)
    changed = ", ".join(state.files) or "nothing"
    where = ("committed before the candidate patch" if form == "committed"
             else "carried by the candidate patch, which applies to base_commit")
    _append(run_log, f"environment setup steps ({len(state.steps)}) change {changed}: {where}\n")
    for note in state.notes:
        _append(run_log, f"environment setup: {note}\n")


def _lines(path: Path) -> list[str] | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None


def left_out_packages(notes: list[str]) -> list[str]:
    """Names of the packages the environment's specification installs but its build left out or removed
    (the build's notes, :data:`~takeover.environments.shared_venv.LEFT_OUT_NOTE` and ``BROKEN_NOTE``)."""
    names: list[str] = []
    for note in notes:
        for prefix, sep in ((LEFT_OUT_NOTE, ", "), (BROKEN_NOTE, "; ")):
            if note.startswith(prefix + ": "):
                listed = note[len(prefix) + 2:].rsplit("; tests", 1)[0]
                names += [re.split(r"[<>=!~\[ (;]", item.strip(), maxsplit=1)[0] for item in listed.split(sep)]
    return [n for n in names if n]


def _local_services(workspace: Path, repo: str, network: bool, result: GradeResult) -> tuple[list[str], list[Path]]:
    """``(script lines, folders they read)`` of the services the tests get in place of the internet: a
    local httpbin for a checkout that reads ``HTTPBIN_URL`` when the network is off
    (:mod:`takeover.environments.local_httpbin`, docs/protocol.md section 6). When one stands in, the
    result's network warning gives way to a note saying so."""
    if network or not uses_httpbin_url(workspace):
        return [], []
    try:
        venv = httpbin_venv()
    except TakeoverError as exc:
        result.notes.append(f"no local httpbin for {HTTPBIN_VARIABLE}: {str(exc).splitlines()[0][:300]}")
        return [], []
    # Some tests reach past HTTPBIN_URL (https://httpbin.org, other hosts): those still cannot pass offline.
    result.warnings = [PAST_HTTPBIN_WARNING.format(repo=repo) if w == network_warning(repo, network) else w
                       for w in result.warnings]
    result.notes.append(f"{HTTPBIN_VARIABLE} pointed at a local httpbin ({', '.join(HTTPBIN_PACKAGES)}) served "
                        f"inside the sandbox, in place of httpbin.org")
    return server_commands(venv, home_folder(workspace).parent), [venv]


class LocalGradingOptions(BaseModel):
    """The ``local`` backend's own options (the grading record's ``options``; ``--backend-option NAME=VALUE``).

    Attributes:
        spec_file: the user's environment specification: a spec file (JSON/TOML: key ``owner/name`` or
            ``owner/name/version`` -> environment spec) or its loaded mapping (see
            :func:`takeover.environments.env_spec_for`); None: the task's own or SWE-bench's.
        keep_workspace: keep each grading's temporary workspace, for debugging (never removed).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    spec_file: Path | dict[str, EnvSpec] | None = None
    keep_workspace: bool = False


def grade_local(task: SourceTask, prediction: Prediction, *, log_dir: Path, grading: GradingSettings,
                rules: str, options: LocalGradingOptions | None = None,
                repo_source: RepoSource | None = None) -> GradeResult:
    """Grade one prediction for ``task`` in a fresh workspace; the logs go to ``log_dir``.

    Args:
        grading: the settings (:class:`takeover.grading_settings.GradingSettings`): ``timeout`` seconds for
            the test run, ``network`` for the tests, ``hash_seed`` the ``PYTHONHASHSEED`` the eval script
            exports (:mod:`takeover.grading.seeds`; None: the caller's choice is left to the test runner,
            sympy's picks a random one).
        rules: the verdict rules, ``swebench-4.1`` or ``swebench-5.0``.
        options: the backend's own options (:class:`LocalGradingOptions`; default: none).
        repo_source: where repositories come from (default ``RepoSource()``).

    Returns:
        The :class:`GradeResult` with its handoff state. Nothing is raised for a failure of this one
        prediction (repository, environment, test patch, or an unexpected error): it is in ``error``.
    """
    options = options or LocalGradingOptions()
    # Named with our pid, so that the folder of a grading killed with kill -9 is removed by the next one;
    # a workspace kept for debugging is named without it and never removed.
    tmp = (Path(tempfile.mkdtemp(prefix=f"takeover-grade-{task.instance_id}-")) if options.keep_workspace
           else scratch_folder(GRADE_SCRATCH, label=task.instance_id))
    try:
        result = _grade_in(tmp / "repo", task, prediction, repo_source=repo_source or RepoSource(), log_dir=log_dir,
                           grading=grading, options=options, rules=rules)
    finally:
        if not options.keep_workspace:
            shutil.rmtree(tmp, ignore_errors=True)
    result.handoff_state = handoff_state(result)
    return result


def _grade_in(workspace: Path, task: SourceTask, prediction: Prediction, *, repo_source: RepoSource, log_dir: Path,
              grading: GradingSettings, options: LocalGradingOptions, rules: str) -> GradeResult:
    timeout, network, hash_seed = grading.timeout, grading.network, grading.hash_seed
    result = GradeResult(instance_id=prediction.instance_id, model_name_or_path=prediction.model_name_or_path,
                         backend=LocalBackend.name, patch_sha256=sha256_text(prediction.model_patch or ""),
                         network=network)
    warning = network_warning(task.repo, network)
    if warning:
        result.warnings.append(warning)
    test_log = log_dir / "test_output.txt"
    run_log = log_dir / "run_instance.log"
    result.log_path = str(test_log)
    try:
        for path in (test_log, run_log):
            path.unlink(missing_ok=True)
        spec, spec_error = None, None
        try:
            spec = env_spec_for(task, options.spec_file)  # outside the timer: the first call imports swebench
            resolve_log_parser(spec.log_parser, task.repo)  # a wrong parser name fails before any work
        except TakeoverError as exc:
            spec_error = exc  # reported once the patch is known to apply (a patch that does not is invalid)
        if spec is not None and spec_error is None and spec.needs_build:
            try:
                check_buildable(spec)  # before any work: why this host cannot, and what to use instead
            except TakeoverError as exc:
                result.error = f"environment: {exc}"
                _append(run_log, f"environment: {exc}\n")
                return result
        repo_source.workspace(task.repo, task.base_commit, workspace)
        start = time.monotonic()
        if spec is not None:
            _environment_setup_edits(task, spec, workspace, prediction.model_patch or "", run_log)
        setup_seconds = time.monotonic() - start
        result.applied, message = apply_with_fallbacks(workspace, prediction.model_patch or "", scratch=log_dir)
        _append(run_log, f"candidate patch: {message}\n")
        if not result.applied:
            result.apply_error = message
            return result
        if spec is None or spec_error is not None:
            result.error = f"environment: {spec_error}"
            return result
        start = time.monotonic()
        try:
            env = prepare_environment(task, workspace, spec=spec)
        except TakeoverError as exc:
            result.env_seconds = setup_seconds + time.monotonic() - start
            result.error = f"environment: {exc}"
            _append(run_log, f"environment failed: {exc}\n")
            return result
        result.env_seconds = setup_seconds + time.monotonic() - start
        result.env_cached = env.cached
        result.env_build_seconds = env.build_seconds
        result.setup_commit, result.setup_commit_source = env.setup_commit, env.setup_commit_source
        result.notes += env.notes
        _append(run_log, f"environment: python {env.interpreter_version} at {env.python} (shared {env.shared_venv}, "
                         f"cached {env.cached}, build {env.build_seconds:.1f} s, setup {env.setup_seconds:.1f} s)\n")
        ok, message = apply_test_patch(workspace, task, scratch=log_dir)
        if not ok:
            result.error = f"test_patch does not apply: {message}"
            return result
        prologue, readable = _local_services(workspace, task.repo, network, result)
        seeded = [seed_export(hash_seed)] if hash_seed is not None else []  # before anything Python runs
        script = eval_script(env.spec, task, [*seeded, *prologue])
        atomic_write_text(log_dir / "eval.sh", script)
        locale, locale_note = hermetic_locale(env.spec)
        if locale_note:
            result.notes.append(locale_note)
        shown = hermetic_environment(env, home=home_folder(workspace), locale=locale)
        _append(run_log, "test environment (nothing else from the caller's): "
                         + " ".join(f"{k}={v}" for k, v in sorted(shown.items())) + "\n")
        st = sandbox.status()
        result.sandboxed = st.available
        _append(run_log, f"{st.message}\n")
        _append(run_log, f"network for the tests: {'on' if network else 'off'}\n")
        if hash_seed is not None:
            _append(run_log, f"hash seed of the tests: {seed_export(hash_seed)}\n")
        done = run_tests(script, workspace, env, log_path=test_log, timeout=timeout, network=network,
                         readable=readable)
        result.test_seconds = done.seconds
        result.timed_out = done.timed_out
        log_text = test_log.read_text(encoding="utf-8", errors="replace")
        not_started = runner_not_started(log_text, done.exit_code, env.spec.test_cmds[-1] if env.spec.test_cmds else "")
        if not_started:  # no verdict: every test would count as failed
            result.error = f"tests: {not_started}"
            return result
        status, _ = parse_test_log(log_text, task, env.spec.log_parser, rules)
        result.FAIL_TO_PASS, result.PASS_TO_PASS, resolved = report_outcomes(status, task, rules)
        result.warnings += missing_module_warning(missing_module_skips(
            log_text, result.FAIL_TO_PASS.failure + result.PASS_TO_PASS.failure, left_out_packages(env.notes),
            lambda name: _lines(workspace / name)))
        result.resolved = not done.timed_out and resolved
        if not result.FAIL_TO_PASS.failure and not result.PASS_TO_PASS.failure:
            result.warnings = [w for w in result.warnings if w != PAST_HTTPBIN_WARNING.format(repo=task.repo)]
        _append(run_log, f"test command exit status {done.exit_code}, {done.seconds:.1f} s, "
                         f"timed out {done.timed_out}\n")
    except TakeoverError as exc:
        result.error = str(exc)
    except Exception as exc:  # noqa: BLE001 - one broken task must not stop the others
        result.error = f"unexpected {type(exc).__name__}: {exc}"
    return result


class LocalBackend:
    """The ``local`` :class:`~takeover.grading.backend.GradingBackend`: see the module documentation.

    The tests have the network only when asked; the environment in the grading key is the
    :class:`~takeover.environments.EnvSpec` in use (without its notes and source) and the locale the tests
    run in on this machine.
    """

    name = "local"
    description = "a cached venv, sandboxed"
    writes_report = False
    uses_sandbox = True
    Options = LocalGradingOptions

    def tests_network(self, asked: bool) -> bool:
        """The network is on only when asked (the sandbox is offline)."""
        return asked

    def environment_key(self, task: SourceTask, options: LocalGradingOptions) -> EnvironmentKey:
        """The digest of the task's environment specification (``options.spec_file``'s, else the task's own
        or SWE-bench's) and its test locale on this machine; an empty key when there is no valid
        specification."""
        try:
            spec = env_spec_for(task, options.spec_file)
        except TakeoverError:
            return EnvironmentKey()
        return EnvironmentKey(env_spec_sha256=value_digest(spec.model_dump(mode="json", exclude={"notes", "source"})),
                              test_locale=hermetic_locale(spec)[0])

    def grade(self, task: SourceTask, prediction: Prediction, key: GradingKey, log_dir: Path,
              grading: GradingSettings, options: LocalGradingOptions, repo_source: RepoSource) -> GradeResult:
        """:func:`grade_local` under the key's verdict rules (the result is :mod:`takeover.grading.evaluation`'s
        to store)."""
        return grade_local(task, prediction, log_dir=log_dir, grading=grading, rules=key.grading_rules,
                           options=options, repo_source=repo_source)
