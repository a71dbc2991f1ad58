"""One run of swebench's harness kept apart from every other: its own run id, its logs inside the grading's
folder (docs/protocol.md section 6, extension "Concurrent gradings").

swebench's ``run_instance`` (4.1 and 5.x alike) names its container ``sweb.eval.<instance_id>.<run_id>`` and
writes its logs to ``logs/run_evaluation/<run_id>/...`` under the current folder. Two gradings of one patch
at the same moment (the reference patch of a task graded beside each of its checkpoints, two studies or a
study and the test suite on one daemon) under one run id shared the container name, so the second failed
("409 Conflict"), and shared the log folder, so one read the other's files. So:

- :func:`unique_run_id`: every grading gets a run id of its own, the grading key's digest (to find it) and a
  random part (to keep it apart);
- :func:`harness_log_root`: while the harness runs, its log root is a folder inside the grading's own log
  folder, never the current folder (a study's ``--out-dir`` holds everything of its gradings).
"""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path

from takeover.grading.reuse import GradingKey

#: The folder, inside a grading's log folder, that the harness writes its logs to.
HARNESS_LOGS = "run_evaluation"
# The harness reads its log root from a module global: gradings in threads of one process take turns.
_ROOT_LOCK = threading.Lock()


def unique_run_id(key: GradingKey) -> str:
    """``takeover-<12 hex digits of the key's digest>-<8 random hex digits>``: a valid part of a Docker
    container name, never the same for two gradings."""
    return f"takeover-{key.digest[:12]}-{secrets.token_hex(4)}"


@contextlib.contextmanager
def harness_log_root(root: Path) -> Iterator[Path]:
    """While inside, swebench's ``run_instance`` writes its logs under ``root`` (made absolute) instead of
    ``logs/run_evaluation`` of the current folder; yields ``root``. Both harness versions read the module
    global ``RUN_EVALUATION_LOG_DIR`` of ``swebench.harness.run_evaluation`` when they run.

    Raises:
        RuntimeError: that module has no ``RUN_EVALUATION_LOG_DIR`` (a swebench this code does not know).
    """
    from swebench.harness import run_evaluation as module

    if not hasattr(module, "RUN_EVALUATION_LOG_DIR"):
        raise RuntimeError(f"{module.__name__} has no RUN_EVALUATION_LOG_DIR: cannot keep the harness's logs in "
                           "the grading's folder with this swebench")
    root = Path(root).resolve()
    with _ROOT_LOCK:
        before = module.RUN_EVALUATION_LOG_DIR
        module.RUN_EVALUATION_LOG_DIR = root
        try:
            yield root
        finally:
            module.RUN_EVALUATION_LOG_DIR = before
