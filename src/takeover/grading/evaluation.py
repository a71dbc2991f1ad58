"""The grading entry points: predictions in, one :class:`GradeResult` each out, written as files.

:func:`grade_predictions` grades SWE-bench predictions with a backend (``local``:
:mod:`takeover.grading.local_backend`, ``docker``: :mod:`takeover.grading.docker_backend`) and writes,
per prediction, the SWE-bench-shaped ``report.json`` and takeover's ``result.json`` (a saved result for
the same patch is reused). :func:`grade` grades one patch; :func:`grade_handoff_state` labels a
checkpoint's patch with its handoff state (docs/protocol.md section 6).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from takeover._io import atomic_write_json, atomic_write_text, sha256_text, stable_hash
from takeover.environments import EnvSpec
from takeover.errors import EnvironmentUnavailable, InputError
from takeover.grading.docker_backend import grade_docker
from takeover.grading.local_backend import grade_local
from takeover.grading.predictions import Prediction
from takeover.grading.verdict import GradeResult, swebench_report
from takeover.repos import RepoSource, cache_dir
from takeover.tasks import SourceTask
from takeover.vocabulary import HandoffState

#: The grading backends: ``local`` (venv + sandbox) and ``docker`` (swebench's official harness).
BACKENDS = ("local", "docker")
#: Seconds allowed for one test run unless the caller says otherwise.
DEFAULT_TIMEOUT = 1800.0

SpecFile = Path | str | Mapping[str, EnvSpec] | None


def _as_task(task: SourceTask | Mapping[str, Any]) -> SourceTask:
    return task if isinstance(task, SourceTask) else SourceTask.model_validate(task)


def _saved_result(path: Path, digest: str, backend: str, network: bool) -> GradeResult | None:
    """The result saved at ``path`` when it graded the same patch the same way without error, else None."""
    if not path.exists():
        return None
    try:
        old = GradeResult.model_validate_json(path.read_text())
    except ValueError:  # unreadable old result: grade again
        return None
    if old.patch_sha256 == digest and old.error is None and old.backend == backend and old.network == network:
        return old
    return None


def grade_predictions(
    tasks: Iterable[SourceTask | Mapping[str, Any]],
    predictions: Iterable[Prediction | Mapping[str, Any]],
    *,
    backend: str = "local",
    repo_source: RepoSource | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    log_dir: Path | str | None = None,
    spec_file: SpecFile = None,
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
        repo_source: where repositories come from (default ``RepoSource()``: no mirror, GitHub).
        timeout: seconds allowed for each test run.
        log_dir: default ``cache_dir()/grading``.
        spec_file: user environment spec file (see :func:`takeover.environments.env_spec_for`).
        keep_workspace: keep the temporary workspaces (``local``).
        run_id: the official harness's run id (``docker``).
        network: let the tests use the network (off by default; SWE-bench's Docker harness leaves it on,
            and a few suites need it, e.g. psf/requests calls httpbin.org).

    Raises:
        InputError: an unknown backend, or a prediction names an ``instance_id`` that is not among ``tasks``.
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
        return grade_docker(list(by_id.values()), preds, timeout=timeout, log_dir=root, run_id=run_id)
    source = repo_source or RepoSource()
    results = []
    for p in preds:
        folder = root / p.model_name_or_path.replace("/", "__") / p.instance_id
        saved = folder / "result.json"
        old = _saved_result(saved, sha256_text(p.model_patch or ""), backend, network) if resume else None
        if old is not None:
            results.append(old)
            continue
        folder.mkdir(parents=True, exist_ok=True)
        result = grade_local(by_id[p.instance_id], p, repo_source=source, timeout=timeout, log_dir=folder,
                             spec_file=spec_file, keep_workspace=keep_workspace, network=network)
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
    task: SourceTask | Mapping[str, Any],
    patch: str | None,
    *,
    backend: str = "local",
    repo_source: RepoSource | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    log_dir: Path | str | None = None,
    spec_file: SpecFile = None,
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
        network: let the tests use the network (see :func:`grade_predictions`,
            :data:`~takeover.grading.NETWORK_REPOS`).
    Returns:
        :class:`GradeResult`; ``handoff_state`` per docs/protocol.md section 6.
    Raises:
        InputError: an unknown backend.
        EnvironmentUnavailable: ``backend="docker"`` and no Docker daemon answers.
    """
    task = _as_task(task)
    pred = Prediction(instance_id=task.instance_id, model_name_or_path=model_name_or_path, model_patch=patch)
    return grade_predictions([task], [pred], backend=backend, repo_source=repo_source, timeout=timeout,
                             log_dir=log_dir, spec_file=spec_file, resume=resume, network=network)[0]


def grade_handoff_state(
    task: SourceTask,
    patch: str,
    *,
    backend: str = "local",
    repo_source: RepoSource | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    log_dir: Path | str | None = None,
    spec_file: SpecFile = None,
    network: bool = False,
) -> HandoffState:
    """The handoff state of a checkpoint's ``patch`` (docs/protocol.md section 6), from :func:`grade`.

    Raises:
        EnvironmentUnavailable: grading did not finish (environment, repository, test patch); the
            message has the reason.
        InputError: an unknown backend.
    """
    result = grade(task, patch, backend=backend, repo_source=repo_source, timeout=timeout, log_dir=log_dir,
                   spec_file=spec_file, network=network)
    if result.handoff_state is None:
        raise EnvironmentUnavailable(f"grading of {task.instance_id} did not finish: {result.error or 'no result'}")
    return result.handoff_state


def run_key(task: SourceTask, patch: str) -> str:
    """Stable key of a (task, patch) grading, for callers that store results themselves."""
    return stable_hash({"instance_id": task.instance_id, "patch": sha256_text(patch or "")})
