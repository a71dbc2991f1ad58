"""The ``docker`` grading backend: swebench's official harness (``run_instance``) on its own images.

It needs a Docker daemon (:func:`takeover._util.sandbox.docker_status`) and a SWE-bench (repo, version); a
prediction for any other task gets an error in its result.

What it adds to running swebench's harness as it is:

- **No download at grading**: the harness's ``TestSpec`` is made with the task's requirement files read
  from the mirror (:func:`takeover.environments.official_image.official_test_spec`), so a grading needs no
  network where the image already holds the environment; without a mirror swebench downloads them, and a
  failed download is one line in the result's ``error``.
- **The image is part of the key and of the result**: the instance image's content id enters the
  :class:`~takeover.grading.reuse.GradingKey` (a changed image under the same name grades again, in either
  direction), and ``result.json`` records ``image`` and ``image_id``. A missing image is pulled once and
  kept (every point and view of a task reuses it); one that cannot be pulled is one line naming it and
  docker's reason.
- **Labelled containers** that stop at once (:mod:`takeover._util.containers`); the stale ones of the
  grading's log folder (a grading killed with SIGKILL) are removed before it runs again.
- **Measured, not assumed**: ``network`` says whether the harness's container had a network;
  ``test_seconds`` is the harness's own test time, 0 when no test ran.

SWE-bench's ``run_instance`` returns the stored ``report.json`` of
``<log root>/<run_id>/<model_name_or_path>/<instance_id>/`` when one exists, whatever patch it was made for,
and names its container after the run id. So every grading gets a run id of its own (:func:`harness_run_id`:
the :class:`~takeover.grading.reuse.GradingKey`'s digest and a random part, so two gradings of one patch at
once never share a container or a folder), a model name that carries the patch hash (:func:`harness_prediction`),
and the harness's log root is ``run_evaluation/`` inside the grading's own log folder
(:mod:`takeover.grading.docker.harness_run`), never the current folder; the report read back must sit beside
the ``patch.diff`` of this very patch (:func:`read_harness_report`). The harness's logs are then copied to
the folder the ``local`` backend writes to. The hash seed of the grading (:mod:`takeover.grading.seeds`) is
a variable of the harness's container, which the eval script's ``docker exec`` inherits.

Under either harness version (:mod:`takeover._util.harness_version` knows their differences): swebench 4.1
gets its ``TestSpec`` from its specifications, swebench 5.x from the row's ``image``/``eval_script``/
``log_parser``/``eval_type``, derived when the row lacks them
(:func:`takeover.environments.row_grading.harness_test_spec`). The image is found (or pulled) and kept
before the harness runs, which then finds it. A grading under the other version's rules than the
installed harness's grades the harness's ``test_output.txt`` again under those rules.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from takeover._util import harness_version, sandbox
from takeover._util.containers import container_labels, docker_client, image_identity, remove_stale_containers
from takeover._util.io import sha256_text
from takeover._util.registries import NoOptions
from takeover.environments.official_image import instance_image_name
from takeover.environments.row_grading import harness_test_spec
from takeover.environments.swebench_specs import repo_version_specs
from takeover.errors import EnvironmentUnavailable, InputError, TakeoverError
from takeover.grading import swebench_rules
from takeover.grading.backend import LOG_FILES
from takeover.grading.docker.harness_run import HARNESS_LOGS, harness_log_root, unique_run_id
from takeover.grading.predictions import Prediction
from takeover.grading.reuse import EnvironmentKey, GradingKey, value_digest
from takeover.grading.seeds import HASH_SEED_VARIABLE
from takeover.grading.verdict import GradeResult, TestOutcome, grade_log, handoff_state, report_outcomes
from takeover.grading_settings import GradingSettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask

#: The files of the harness's instance folder copied to takeover's log folder (all it leaves there).
HARNESS_FILES = LOG_FILES
_RUNTIME = re.compile(r"Test runtime: ([\d_.]+) seconds")


def harness_run_id(key: GradingKey) -> str:
    """The harness's run id for one grading under ``key``, never the same twice
    (:func:`~takeover.grading.docker.harness_run.unique_run_id`: the harness names containers
    ``sweb.eval.<instance_id>.<run_id>``)."""
    return unique_run_id(key)


def harness_prediction(prediction: Prediction, key: GradingKey) -> dict[str, Any]:
    """The prediction given to the harness: ``model_name_or_path`` gets ``.<12 hex digits of the patch
    sha256>`` appended, so that two patches never share a log folder even under one run id."""
    return {"instance_id": prediction.instance_id,
            "model_name_or_path": f"{prediction.model_name_or_path}.{key.patch_sha256[:12]}",
            "model_patch": prediction.model_patch}


def harness_folder(run_id: str, harness_pred: dict[str, Any], *, root: Path | None = None) -> Path:
    """Where the harness writes the logs of ``harness_pred`` for ``run_id``:
    ``<root>/<run_id>/<model_name_or_path with / as __>/<instance_id>`` (``root``: swebench's
    ``RUN_EVALUATION_LOG_DIR``, ``logs/run_evaluation`` under the current folder)."""
    if root is None:
        root = harness_version.run_evaluation_log_dir()
    return Path(root) / run_id / harness_pred["model_name_or_path"].replace("/", "__") / harness_pred["instance_id"]


def read_harness_report(folder: Path, instance_id: str, model_patch: str | None) -> dict[str, Any] | None:
    """The harness's report entry for ``instance_id`` in ``folder``, checked to belong to ``model_patch``.

    Returns:
        ``report.json``'s ``{instance_id: {...}}`` entry (``patch_successfully_applied``, ``resolved``,
        ``tests_status``), or None when the harness wrote no report (the patch did not apply, the tests
        timed out, the container failed: ``run_instance.log`` says which).

    Raises:
        InputError: ``folder`` holds no ``patch.diff`` of ``model_patch`` (the files are another patch's,
            e.g. from an earlier run under the same run id), or the report is unreadable or is not
            about ``instance_id``.
    """
    patch_file = folder / "patch.diff"
    want = sha256_text(model_patch or "")
    if not patch_file.exists():
        raise InputError(folder, "the official harness left no patch.diff, so its results cannot be checked to "
                         "belong to this patch; remove the folder and grade again", record=instance_id)
    got = sha256_text(patch_file.read_text(encoding="utf-8"))
    if got != want:
        raise InputError(patch_file, f"the official harness's results here are for another patch (sha256 {got[:12]}, "
                         f"this patch is {want[:12]}); remove the folder and grade again", record=instance_id)
    report_path = folder / "report.json"
    if not report_path.exists():
        return None
    try:
        report = json.loads(report_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(report_path, f"unreadable report ({exc})", record=instance_id) from None
    if not isinstance(report, dict) or not isinstance(report.get(instance_id), dict):
        raise InputError(report_path, f"no report entry for {instance_id}", record=instance_id)
    entry = report[instance_id]
    if entry.get("patch_is_None") is not (model_patch is None):
        raise InputError(report_path, "the report's patch_is_None does not match this prediction",
                         record=instance_id, field="patch_is_None")
    return entry


def result_from_harness(folder: Path, task: SourceTask, prediction: Prediction, *, timeout: float) -> GradeResult:
    """A :class:`GradeResult` from the harness's files in ``folder`` (:func:`read_harness_report`).

    Without a report: a test run over the time limit leaves every listed test failed (``timed_out``), a
    patch that did not apply gives ``applied`` False with the harness's message, anything else an ``error``.

    Raises:
        InputError: the files belong to another patch (see :func:`read_harness_report`).
    """
    result = GradeResult(instance_id=prediction.instance_id, model_name_or_path=prediction.model_name_or_path,
                         backend=DockerBackend.name, patch_sha256=sha256_text(prediction.model_patch or ""))
    entry = read_harness_report(folder, prediction.instance_id, prediction.model_patch)
    run_log = folder / "run_instance.log"
    log_text = run_log.read_text(encoding="utf-8", errors="replace") if run_log.exists() else ""
    if (m := _RUNTIME.search(log_text)) is not None:
        result.test_seconds = float(m.group(1).replace("_", ""))
    test_output = folder / "test_output.txt"
    if entry is not None:
        result.applied = bool(entry.get("patch_successfully_applied"))
        status = entry.get("tests_status") or {}
        result.FAIL_TO_PASS = TestOutcome(**status.get("FAIL_TO_PASS", {}))
        result.PASS_TO_PASS = TestOutcome(**status.get("PASS_TO_PASS", {}))
        result.resolved = bool(entry.get("resolved"))
        if not result.applied:  # swebench's get_logs_eval found a failure code or no test output markers
            result.apply_error = f"the official harness could not apply the patch or run the tests (see {run_log})"
    elif swebench_rules.APPLY_PATCH_FAIL in log_text:
        result.apply_error = log_text.split(swebench_rules.APPLY_PATCH_FAIL, 1)[1].strip()[:4000] or "the patch does not apply"
    elif test_output.exists() and "Timeout error" in test_output.read_text(encoding="utf-8", errors="replace"):
        result.applied, result.timed_out = True, True
        result.FAIL_TO_PASS, result.PASS_TO_PASS, _ = report_outcomes({}, task)
    else:
        why = next((line.split(" - ERROR - ", 1)[1] for line in log_text.splitlines() if " - ERROR - " in line), "")
        result.error = (f"the official harness wrote no report{': ' + why[:400] if why else ''} "
                        f"(its log: {run_log.resolve()})")
    result.handoff_state = handoff_state(result)
    return result


def copy_harness_logs(folder: Path, log_dir: Path) -> None:
    """Copy :data:`HARNESS_FILES` that exist in the harness's ``folder`` to ``log_dir`` (the ``local``
    backend's place for them)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    for name in HARNESS_FILES:
        if (folder / name).is_file():
            shutil.copyfile(folder / name, log_dir / name)


def grade_docker(task: SourceTask, prediction: Prediction, key: GradingKey, *, timeout: float, log_dir: Path,
                 repo_source: RepoSource | None = None, hash_seed: int | None = None) -> GradeResult:
    """Grade ``prediction`` with the official harness under its own run id (:func:`harness_run_id`) on the
    task's instance image (pulled when absent, and kept); the harness's logs are copied to ``log_dir``.

    Args:
        key: the grading's key (its digest names the run).
        timeout: seconds for the test run (the harness's own limit).
        log_dir: ``<log_dir>/<model_name_or_path>/<instance_id>`` of :func:`~takeover.grading.grade_predictions`.
        repo_source: where the task's requirement files are read (a mirror, or offline the clone cache);
            without either, swebench downloads them from GitHub.
        hash_seed: the ``PYTHONHASHSEED`` of the harness's container (:mod:`takeover.grading.seeds`).

    Returns:
        The :class:`GradeResult` with ``image`` and ``image_id``; a failure of this prediction (unknown (repo,
        version), requirement files, image, container, results of another patch) is one line in its
        ``error``.
    Raises:
        EnvironmentUnavailable: no Docker daemon answers.
    """
    docker = sandbox.docker_status()
    if not docker.available:
        raise EnvironmentUnavailable(f"{docker.message}; use --backend local, or start Docker to use the official "
                                     "harness")
    base = GradeResult(instance_id=prediction.instance_id, model_name_or_path=prediction.model_name_or_path,
                       backend=DockerBackend.name, patch_sha256=key.patch_sha256)
    if swebench_spec(task) is None:
        base.error = (f"the docker backend needs a SWE-bench (repo, version) or a row with its eval_script; "
                      f"{task.repo} {task.version} is not in swebench's specifications: use --backend local with "
                      f"takeover_env_spec or --backend-option spec_file=FILE")
        return base
    base.image = instance_image_name(task.instance_id)
    started = time.monotonic()
    try:
        spec, fields = harness_test_spec(task, repo_source)
        base.image = fields.image
        image = image_identity(fields.image, pull=True)  # found (or pulled once) and kept: the harness then finds it
    except EnvironmentUnavailable as exc:
        base.error = str(exc)
        return base
    base.image_id, base.env_seconds = image.id, round(time.monotonic() - started, 3)
    if key.image_id is not None and key.image_id != image.id:
        base.error = (f"image {image.name} changed while this grading started ({key.image_id[:19]} became "
                      f"{image.id[:19]}); grade again")
        return base
    run_id = harness_run_id(key)
    pred = harness_prediction(prediction, key)
    shutil.rmtree(log_dir / HARNESS_LOGS, ignore_errors=True)  # an earlier grading's, in this folder
    folder = harness_folder(run_id, pred, root=log_dir / HARNESS_LOGS)
    remove_stale_containers(log_dir)  # a grading of this folder killed before its container was removed
    seeded = {HASH_SEED_VARIABLE: str(hash_seed)} if hash_seed is not None else {}
    client = docker_client(container_labels("grading", log_dir), environment=seeded)
    with (contextlib.redirect_stdout(sys.stderr),  # the harness's progress lines must not mix with --json output
          harness_log_root(log_dir / HARNESS_LOGS)):
        harness_version.run_instance(spec, pred, client=client, run_id=run_id, timeout=int(timeout))
    try:
        result = result_from_harness(folder, task, prediction, timeout=timeout)
    except TakeoverError as exc:
        base.error = str(exc)
        return base
    result.image, result.image_id, result.env_seconds = base.image, image.id, base.env_seconds
    result.eval_script_source = fields.eval_script_source
    result.warnings += fields.warnings
    _decide_under(result, key.grading_rules, folder / "test_output.txt", task, fields.log_parser)
    created = client.created[-1] if client.created else None
    result.network = bool(created and client.container_networks.get(created))
    if created and client.container_images.get(created) not in (None, image.id):
        result.error = (f"the harness ran image {client.container_images[created][:19]}, not {image.id[:19]} "
                        f"({image.name} changed during the grading); grade again")
        result.handoff_state = None
    if result.error is not None and not sandbox.docker_status().available:
        result.error = (f"the Docker daemon stopped answering during the grading; start it and grade again "
                        f"({result.error})")
    result.notes.append(f"official harness run id {run_id}; its own logs: {folder.resolve()}")
    if hash_seed is not None:
        result.notes.append(f"the tests ran with {HASH_SEED_VARIABLE}={hash_seed} in the harness's container")
    copy_harness_logs(folder, log_dir)
    result.log_path = str(log_dir / "test_output.txt")
    return result


def _decide_under(result: GradeResult, rules: str | None, test_output: Path, task: SourceTask, parser: str) -> None:
    """When ``rules`` are not the installed harness's, the harness's test log graded again under them (the
    harness's report decided under its own); a note says so."""
    installed = harness_version.installed_rules()
    if rules in (None, installed) or result.error is not None or not result.applied or not test_output.exists():
        return
    again = grade_log(test_output.read_text(encoding="utf-8", errors="replace"), task, log_parser=parser,
                      rules=rules, backend=result.backend)  # type: ignore[arg-type]
    result.FAIL_TO_PASS, result.PASS_TO_PASS = again.FAIL_TO_PASS, again.PASS_TO_PASS
    result.resolved = again.resolved and not result.timed_out
    result.notes.append(f"verdict decided under the {rules} rules from the harness's test log (the installed "
                        f"harness, {harness_version.harness_label()}, reported under {installed})")


def swebench_spec(task: SourceTask) -> Mapping[str, Any] | None:
    """What decides the task's environment in the harness: swebench 4.1's ``MAP_REPO_VERSION_TO_SPECS`` entry
    of its (repo, version) (:mod:`takeover.environments.swebench_specs`), else the row's own ``image`` and
    ``eval_script`` (a swebench 5.x row); None when there is neither."""
    spec = repo_version_specs(task.repo, task.version)
    row = task.model_extra or {}
    if spec is None and row.get("eval_script"):
        return {k: row.get(k) for k in ("image", "eval_script", "log_parser", "eval_type")}
    return spec


class DockerBackend:
    """The ``docker`` :class:`~takeover.grading.backend.GradingBackend`: see the module documentation.

    The tests are asked to have the network (SWE-bench's containers are); the environment in the grading key
    is swebench's specification of the task's (repo, version) and the content id of its instance image.
    """

    name = "docker"
    description = "the official SWE-bench images"
    writes_report = True
    uses_sandbox = False
    Options = NoOptions

    def tests_network(self, asked: bool) -> bool:
        """Always asked for: the harness makes its containers in the daemon's default network (whether they
        got one is measured per grading, the result's ``network``)."""
        return True

    def environment_key(self, task: SourceTask, options: NoOptions) -> EnvironmentKey:
        """The digest of swebench's specification of the task and the content id of its instance image,
        pulled first when the daemon lacks it; an empty key for a (repo, version) swebench does not know, no
        image id without a daemon or an image."""
        spec = swebench_spec(task)
        if spec is None:
            return EnvironmentKey()
        try:
            name = (task.model_extra or {}).get("image") or instance_image_name(task.instance_id)
            image_id = image_identity(name, pull=True).id
        except EnvironmentUnavailable:
            image_id = None  # the grading itself says why
        return EnvironmentKey(env_spec_sha256=value_digest(spec), image_id=image_id)

    def grade(self, task: SourceTask, prediction: Prediction, key: GradingKey, log_dir: Path,
              grading: GradingSettings, options: NoOptions, repo_source: RepoSource) -> GradeResult:
        """:func:`grade_docker` under the run id of ``key``, with ``grading``'s time limit and hash seed.

        Raises:
            EnvironmentUnavailable: no Docker daemon answers.
        """
        return grade_docker(task, prediction, key, timeout=grading.timeout, log_dir=log_dir,
                            repo_source=repo_source, hash_seed=grading.hash_seed)
