"""``takeover quickstart``: the whole protocol on one real task, offline, on one machine.

Default run: SWE-bench Verified ``pytest-dev__pytest-7521`` with the public mini-swe-agent run of
gemini-3-pro as the predecessor (GitHub ``gruckion/mini-swe-agent`` at commit ``d12a71a``), the
``after_first_source_edit`` handoff point, all four views (notes written by the model), one takeover run
per view under a small step limit, local grading, and the report. With no ``--base-url`` the embedded
0.5B model (:mod:`takeover.embedded_model`) is served on 127.0.0.1 for the note writer and the successor,
and stopped at the end.

The stages themselves are the experiment engine's (:func:`takeover.experiments.run_experiment` and
:func:`takeover.report.build_report`). Modules: ``options`` (every choice, one per flag), ``pinned`` and
``downloads`` (the pinned inputs, downloaded and checked by sha256, or local paths), ``experiment_config``
(the experiment it runs and the report's notice), ``estimate`` (the known work and the expected duration
on this machine), ``run`` (the run), ``outcome`` (what it returns and writes).
"""

from takeover.quickstart.downloads import download, quickstart_cache, resolve_dataset, resolve_trajectories
from takeover.quickstart.estimate import (
    KnownCall,
    KnownWork,
    RunEstimate,
    actual_phrase,
    describe_estimate,
    estimate_note,
    estimate_run,
    load_known_work,
    measure_work,
    progress_phrase,
    work_configuration,
)
from takeover.quickstart.experiment_config import build_config, report_notice, rerun_command, warning_text
from takeover.quickstart.model_calls import CALLS_FILE, describe_call
from takeover.quickstart.options import (
    DEFAULT_INSTANCE,
    DEFAULT_OUT_DIR,
    DEFAULT_POINT_TYPES,
    DEFAULT_STEP_LIMIT,
    DEFAULT_WALL_TIME_LIMIT_SECONDS,
    DEFAULT_WORKERS,
    EMBEDDED_NOTE_MAX_TOKENS,
    EMBEDDED_RAW_TRACE_MAX_TOKENS,
    EMBEDDED_STEP_MAX_TOKENS,
    QuickstartOptions,
)
from takeover.quickstart.outcome import QuickstartResult, StageTime, quickstart_md
from takeover.quickstart.pinned import HF_DATASET, PINNED, PinnedTask, row_fingerprint
from takeover.quickstart.run import QuickstartDisplay, run_quickstart

__all__ = [
    "CALLS_FILE",
    "DEFAULT_INSTANCE",
    "DEFAULT_OUT_DIR",
    "DEFAULT_POINT_TYPES",
    "DEFAULT_STEP_LIMIT",
    "DEFAULT_WALL_TIME_LIMIT_SECONDS",
    "DEFAULT_WORKERS",
    "EMBEDDED_NOTE_MAX_TOKENS",
    "EMBEDDED_RAW_TRACE_MAX_TOKENS",
    "EMBEDDED_STEP_MAX_TOKENS",
    "HF_DATASET",
    "PINNED",
    "KnownCall",
    "KnownWork",
    "PinnedTask",
    "QuickstartDisplay",
    "QuickstartOptions",
    "QuickstartResult",
    "RunEstimate",
    "StageTime",
    "actual_phrase",
    "build_config",
    "describe_call",
    "describe_estimate",
    "download",
    "estimate_note",
    "estimate_run",
    "load_known_work",
    "measure_work",
    "progress_phrase",
    "quickstart_cache",
    "quickstart_md",
    "report_notice",
    "rerun_command",
    "resolve_dataset",
    "resolve_trajectories",
    "row_fingerprint",
    "run_quickstart",
    "warning_text",
    "work_configuration",
]
