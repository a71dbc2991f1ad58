"""The ``docker`` grading backend: swebench's official harness (``run_instances``) on its own images.

It needs a Docker daemon (:func:`takeover.sandbox.docker_status`) and a SWE-bench (repo, version); a
prediction for any other task gets an error in its result. The harness writes its logs under its own
``RUN_EVALUATION_LOG_DIR``; takeover reads back each ``report.json`` into a :class:`GradeResult`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from takeover import sandbox
from takeover._io import atomic_write_json, sha256_text
from takeover.errors import EnvironmentUnavailable
from takeover.grading.predictions import Prediction
from takeover.grading.verdict import GradeResult, TestOutcome, handoff_state
from takeover.tasks import SourceTask


def grade_docker(tasks: list[SourceTask], preds: list[Prediction], *, timeout: float, log_dir: Path,
                 run_id: str) -> list[GradeResult]:
    """Grade ``preds`` with the official harness, one :class:`GradeResult` per prediction, in order; each is
    also written to ``<log_dir>/<model_name_or_path>/<instance_id>/result.json``.

    Args:
        timeout: seconds for each test run (the harness's own limit).
        run_id: the harness's run id (its log folder).

    Raises:
        EnvironmentUnavailable: no Docker daemon answers.
    """
    docker = sandbox.docker_status()
    if not docker.available:
        raise EnvironmentUnavailable(f"{docker.message}; use --backend local, or start Docker to use the official "
                                     "harness")
    from swebench.harness.constants import (  # slow to import: only when needed
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
