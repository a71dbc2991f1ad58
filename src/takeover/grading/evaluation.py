"""The grading entry points: predictions in, one :class:`GradeResult` each out, written as files.

:func:`grade_predictions` grades SWE-bench predictions with a backend chosen by name
(:data:`takeover.grading.backends.BACKENDS`: ``local``, :mod:`takeover.grading.local`; ``docker``,
:mod:`takeover.grading.docker`) and writes, per prediction, the SWE-bench-shaped ``report.json`` and
takeover's ``result.json``. A stored result is reused only when everything that decides its verdict is
unchanged (:mod:`takeover.grading.reuse`, docs/protocol.md section 6). :func:`grade` grades one patch;
:func:`grade_checkpoint` grades a checkpoint's patch for its handoff state, beside the reference patch
(docs/protocol.md section 6), and :func:`grade_handoff_state` gives that label alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from takeover._util import harness_version
from takeover._util.folders import own_output
from takeover._util.io import atomic_write_json, atomic_write_text
from takeover.errors import EnvironmentUnavailable, InputError
from takeover.grading.backend import LOG_FILES, GradingBackend
from takeover.grading.backends import checked_grading, grading_backend
from takeover.grading.flaky import grade_with_seeds
from takeover.grading.predictions import Prediction
from takeover.grading.reuse import GradingKey
from takeover.grading.seeds import HASH_SEED_VARIABLE
from takeover.grading.verdict import GradeResult, set_aside_by_reference, swebench_report
from takeover.grading_settings import GradingSettings
from takeover.sources.repos import RepoSource, cache_dir
from takeover.sources.tasks import SourceTask
from takeover.vocabulary import HandoffState

#: The ``model_name_or_path`` the task's reference patch is graded under (for the set-aside PASS_TO_PASS tests).
REFERENCE_MODEL = "reference"

def _as_task(task: SourceTask | Mapping[str, Any]) -> SourceTask:
    return task if isinstance(task, SourceTask) else SourceTask.model_validate(task)


def _stored_result(path: Path) -> GradeResult | None:
    """The result stored at ``path``, or None when there is none or it cannot be read (graded again)."""
    if not path.exists():
        return None
    try:
        return GradeResult.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _reuse(stored: GradeResult | None, key: GradingKey, path: Path, force: bool) -> tuple[GradeResult | None, str | None]:
    """``(result to reuse, None)`` when ``stored`` graded under ``key`` without error and ``force`` is off;
    else ``(None, why it is graded again)`` (the note is None without a stored result)."""
    if stored is None:
        return None, None
    when = stored.graded_at or "an unknown time"
    if force:
        return None, f"graded again (--force); the stored result of {when} was replaced"
    if stored.error is not None:
        return None, f"graded again: the stored result of {when} had an error"
    changed = key.changes_from(stored.grading_key)
    if changed:
        return None, f"graded again: {', '.join(changed)} changed since the stored result of {when}"
    note = f"reused the result graded at {when} ({path}); --force grades again"
    return stored.model_copy(update={"reused": True, "reuse_note": note}), None


def grading_key(task: SourceTask, patch: str | None, grading: GradingSettings | None = None) -> GradingKey:
    """The :class:`GradingKey` of grading ``patch`` for ``task`` under ``grading``, on this machine: the
    backend's :meth:`~takeover.grading.backend.GradingBackend.environment_key` under its own options, and the
    rest of :meth:`GradingKey.of` (the network the tests get, the time limit, the verdict rules).

    Args:
        patch: the candidate patch (None and ``""`` are the empty patch).
        grading: the grading settings (:class:`takeover.grading_settings.GradingSettings`; default: its
            defaults).

    Never raises for a missing or invalid specification: the key then has no ``env_spec_sha256``, and the
    grading itself reports the error.

    Raises:
        InputError: an unknown backend or an option it refuses.
    """
    grading = checked_grading(grading or GradingSettings())
    impl = grading_backend(grading.backend)
    environment = impl.environment_key(task, impl.Options.model_validate(grading.options))
    return GradingKey.of(task, patch, environment, backend=impl.name, network=impl.tests_network(grading.network),
                         timeout=grading.timeout, grading_rules=grading.grading_rules)


def _write_files(folder: Path, result: GradeResult, model_patch: str | None, *, writes_report: bool) -> None:
    """The files every backend leaves in ``folder``: a test log that exists (saying why no test ran when
    none did), ``patch.diff``, ``report.json`` (those a backend that ``writes_report`` left are kept) and
    ``result.json``."""
    if result.log_path is None:
        result.log_path = str(folder / "test_output.txt")
    if not Path(result.log_path).exists():
        # No test ran (patch does not apply, repository or environment failed): the log path that is
        # printed must exist and say why.
        why = (f"candidate patch does not apply:\n{result.apply_error}" if result.apply_error
               else result.error or "grading stopped before the tests")
        atomic_write_text(result.log_path, f"no tests were run: {why}\n")
    if model_patch is not None and (not writes_report or not (folder / "patch.diff").exists()):
        atomic_write_text(folder / "patch.diff", model_patch)
    if not writes_report or not (folder / "report.json").exists():
        atomic_write_json(folder / "report.json", swebench_report(result, model_patch))
    atomic_write_json(folder / "result.json", result)


def grade_predictions(
    tasks: Iterable[SourceTask | Mapping[str, Any]],
    predictions: Iterable[Prediction | Mapping[str, Any]],
    grading: GradingSettings | None = None,
    *,
    log_dir: Path | str | None = None,
    repo_source: RepoSource | None = None,
    force: bool = False,
) -> list[GradeResult]:
    """Grade SWE-bench predictions, one :class:`GradeResult` per prediction, in order.

    Each result goes to ``<log_dir>/<model_name_or_path>/<instance_id>/`` (``test_output.txt``,
    ``report.json``, ``result.json``, ``eval.sh``, ``run_instance.log``, ``patch.diff``) written
    atomically. A result already stored there is reused when its grading key (patch, dataset row,
    environment specification, backend, network, time limit, takeover and swebench versions, verdict rules:
    :class:`~takeover.grading.reuse.GradingKey`) equals this grading's and it has no error; the returned
    copy says so (``reused``, ``reuse_note``, ``graded_at`` of the stored grading). A failure of one
    prediction (environment, repository) is recorded in its ``error`` and the others go on.

    Args:
        tasks: source tasks (``SourceTask`` or dicts) covering the predictions' ``instance_id``s.
        predictions: ``Prediction`` records or dicts (``instance_id``, ``model_name_or_path``, ``model_patch``).
        grading: how to grade (:class:`takeover.grading_settings.GradingSettings`, whole; default: its
            defaults): the backend (:data:`takeover.grading.backends.BACKENDS`: ``local``, a venv and the
            sandbox; ``docker``, swebench's official harness, one run id per patch) and its own options, the
            time limit of each test run, the network (``local``: off by default; SWE-bench's Docker harness
            always has it on, :meth:`~takeover.grading.backend.GradingBackend.tests_network`; offline, a
            suite that reads ``HTTPBIN_URL`` gets a local httpbin: :mod:`takeover.environments.local_httpbin`),
            the verdict rules (docs/protocol.md section 6, extension "Grading rules"; recorded in each result
            and its key) and the hash seed (default: one per grading key, :func:`takeover.grading.seeds.first_seed`;
            a test that passes with the reference patch and fails is graded again under another seed, and a
            verdict that changes is flaky: :mod:`takeover.grading.flaky`, docs/protocol.md section 6,
            extension "Hash seeds and flaky verdicts"; a stored result graded under another named seed is
            graded again).
        log_dir: default ``cache_dir()/grading``.
        repo_source: where repositories come from (default ``RepoSource()``: no mirror, GitHub).
        force: grade again even when a stored result could be reused.

    Raises:
        InputError: an unknown backend or an option it refuses, a prediction names an ``instance_id`` that
            is not among ``tasks``, or a prediction's folder holds what a grading of it did not write
            (:func:`refuse_other_result`; checked for every prediction before any is graded).
        EnvironmentUnavailable: the backend cannot grade on this machine and a prediction is to be graded
            (``docker`` without a Docker daemon).
    """
    grading = checked_grading(grading or GradingSettings())
    impl = grading_backend(grading.backend)
    options = impl.Options.model_validate(grading.options)
    by_id = {t.instance_id: t for t in map(_as_task, tasks)}
    preds = [p if isinstance(p, Prediction) else Prediction.model_validate(dict(p)) for p in predictions]
    for i, p in enumerate(preds):
        if p.instance_id not in by_id:
            raise InputError("predictions", f"instance {p.instance_id!r} is not in the dataset", record=f"index {i}",
                             field="instance_id")
    # Absolute: the patch and logs are handed to commands that run in the task workspace, not here.
    root = Path(log_dir).resolve() if log_dir is not None else cache_dir() / "grading"
    source = repo_source or RepoSource()
    folders = [root / p.model_name_or_path.replace("/", "__") / p.instance_id for p in preds]
    for p, folder in zip(preds, folders, strict=True):  # before any grading: nothing is written over a foreign file
        refuse_other_result(folder, p)
    results = []
    for p, folder in zip(preds, folders, strict=True):
        task = by_id[p.instance_id]
        key = grading_key(task, p.model_patch, grading)
        with _grading_folder_lock(folder):  # another grading of this folder finishes first; then it is reused
            results.append(_grade_in_folder(impl, task, p, key, folder, _Grading(grading, options, source),
                                            force=force))
    return results


#: What a grading writes in its folder before ``result.json``, its last file: the logs, the Docker harness's own
#: log folder, and the folders of a second seed's grading (``seed-<N>``, :mod:`takeover.grading.flaky`).
_GRADING_FILES = (*LOG_FILES, "run_evaluation")


def _held_result(folder: Path) -> dict[str, Any] | None:
    """What ``folder`` holds of a grading: its ``result.json`` when that is an object naming its instance; for a
    grading stopped before its result, only the files a grading writes (the instance is the folder's name);
    else ``None``."""
    path = folder / "result.json"
    if not path.exists():
        own = all(p.name in _GRADING_FILES or p.name.startswith("seed-") for p in folder.iterdir())
        return {"instance_id": folder.name} if own else None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("instance_id"), str) else None


def refuse_other_result(folder: Path | str, prediction: Prediction) -> dict[str, Any] | None:
    """The grading ``folder`` holds when it is of ``prediction``'s instance and model (graded again or reused
    by its key), or ``None`` for a new folder: the rule every command's output follows
    (:func:`takeover._util.folders.own_output`).

    Raises:
        InputError: ``folder`` holds a ``result.json`` that is not a grading's (unreadable, or naming no
            instance), another instance's or model's result, or files a grading does not write; nothing has
            been written.
    """
    model = prediction.model_name_or_path
    return own_output(
        folder, read=_held_result, record="result.json (takeover grade's)",
        identity=lambda d: {"instance_id": d["instance_id"], "model_name_or_path": d.get("model_name_or_path") or model},
        wanted={"instance_id": prediction.instance_id, "model_name_or_path": model},
        describe=lambda d: f"the grading of {d['instance_id']} (model {d.get('model_name_or_path') or model})",
        what=f"the grading of {prediction.instance_id} (model {model})")


@dataclass(frozen=True)
class _Grading:
    """What every prediction of one :func:`grade_predictions` call is graded with."""

    settings: GradingSettings
    options: Any
    repo_source: RepoSource


@contextlib.contextmanager
def _grading_folder_lock(folder: Path) -> Iterator[None]:
    """Hold ``folder``'s grading lock (an exclusive ``flock`` on ``.<name>.lock`` beside it, released by the
    kernel when the holder dies), waiting for another process or thread grading into it: two units of a study
    grading the same reference patch into the shared cache, or two ``takeover grade`` runs into one
    ``--out-dir``, never write the same files at once (docs/protocol.md section 6, extension "Concurrent
    gradings")."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _grade_in_folder(impl: GradingBackend, task: SourceTask, p: Prediction, key: GradingKey, folder: Path,
                     how: _Grading, *, force: bool) -> GradeResult:
    """One prediction of :func:`grade_predictions`: the stored result when it may be reused, else graded now
    (under seeds, :func:`~takeover.grading.flaky.grade_with_seeds`) and stored in ``folder``."""
    hash_seed = how.settings.hash_seed
    reused, why = _reuse(_stored_result(folder / "result.json"), key, folder / "result.json", force)
    if reused is not None and hash_seed is not None and reused.hash_seed != hash_seed:
        reused, why = None, (f"graded again under {HASH_SEED_VARIABLE}={hash_seed} (the stored result ran under "
                             f"{reused.hash_seed})")
    if reused is not None:
        return reused
    folder.mkdir(parents=True, exist_ok=True)
    for name in LOG_FILES:  # never left over from an earlier patch
        (folder / name).unlink(missing_ok=True)
    tested = how.settings.model_copy(update={"network": key.network})  # what the tests get

    def grade_once(seed: int, where: Path) -> GradeResult:
        return impl.grade(task, p, key, where, tested.model_copy(update={"hash_seed": seed}), how.options,
                          how.repo_source)

    result = grade_with_seeds(grade_once, key, folder, hash_seed)
    result.grading_key = key
    result.grading_rules, result.harness = key.grading_rules, harness_version.harness_label()
    result.graded_at = datetime.now(UTC).isoformat(timespec="seconds")
    result.reuse_note = why
    _write_files(folder, result, p.model_patch, writes_report=impl.writes_report)
    return result


def grade(
    task: SourceTask | Mapping[str, Any],
    patch: str | None,
    grading: GradingSettings | None = None,
    *,
    log_dir: Path | str | None = None,
    repo_source: RepoSource | None = None,
    model_name_or_path: str = "takeover",
    force: bool = False,
) -> GradeResult:
    """Grade one patch for one task (same code path as :func:`grade_predictions`).

    Args:
        task: a :class:`SourceTask` or an instance dict.
        patch: the candidate ``model_patch`` (``""`` = the empty patch).
        grading: how to grade (:class:`takeover.grading_settings.GradingSettings`, whole; see
            :func:`grade_predictions`); at the time limit the test's process group is killed (``timed_out``).
        log_dir: folder for the logs (default ``cache_dir()/grading``).
        force: grade again even when a stored result could be reused (see :func:`grade_predictions`).
    Returns:
        :class:`GradeResult`; ``handoff_state`` per docs/protocol.md section 6.
    Raises:
        InputError: an unknown backend or an option it refuses.
        EnvironmentUnavailable: the backend cannot grade on this machine (``docker`` without a daemon).
    """
    task = _as_task(task)
    pred = Prediction(instance_id=task.instance_id, model_name_or_path=model_name_or_path, model_patch=patch)
    return grade_predictions([task], [pred], grading, log_dir=log_dir, repo_source=repo_source, force=force)[0]


def grade_checkpoint(
    task: SourceTask | Mapping[str, Any],
    patch: str,
    grading: GradingSettings | None = None,
    *,
    log_dir: Path | str | None = None,
    repo_source: RepoSource | None = None,
    force: bool = False,
) -> GradeResult:
    """Grade a checkpoint's ``patch`` for its handoff state (docs/protocol.md section 6).

    As :func:`grade`, and the task's reference patch (``task.patch``) too, under the same ``grading``
    (backend and its options, network, time limit, verdict rules, hash seed; stored under
    ``cache_dir()/grading/reference`` and reused by its grading key): the PASS_TO_PASS tests the reference
    fails here are set aside from the handoff state (extension,
    :func:`~takeover.grading.verdict.set_aside_by_reference`), and ``set_aside`` names them. No reference is
    graded when the checkpoint's grading did not finish or its patch does not apply.

    Raises:
        InputError: an unknown backend or an option it refuses.
        EnvironmentUnavailable: the backend cannot grade on this machine (``docker`` without a daemon).
    """
    task = _as_task(task)
    result = grade(task, patch, grading, log_dir=log_dir, repo_source=repo_source, force=force)
    if result.error is not None or not result.applied or not task.patch:
        return result
    if patch == task.patch:
        return set_aside_by_reference(result, result)
    reference = grade(task, task.patch, grading, log_dir=cache_dir() / "grading", repo_source=repo_source,
                      model_name_or_path=REFERENCE_MODEL)
    return set_aside_by_reference(result, reference)


def grade_handoff_state(
    task: SourceTask,
    patch: str,
    grading: GradingSettings | None = None,
    *,
    log_dir: Path | str | None = None,
    repo_source: RepoSource | None = None,
) -> HandoffState:
    """The handoff state of a checkpoint's ``patch`` (docs/protocol.md section 6), from
    :func:`grade_checkpoint` under ``grading`` (PASS_TO_PASS tests the reference patch fails here are set
    aside).

    Raises:
        EnvironmentUnavailable: grading did not finish (environment, repository, test patch); the
            message has the reason.
        InputError: an unknown backend or an option it refuses.
    """
    result = grade_checkpoint(task, patch, grading, log_dir=log_dir, repo_source=repo_source)
    if result.handoff_state is None:
        raise EnvironmentUnavailable(f"grading of {task.instance_id} did not finish: {result.error or 'no result'}")
    return result.handoff_state
