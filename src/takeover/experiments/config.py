"""The experiment file: one TOML file names everything a study needs (docs/protocol.md sections 2-9).

Example (paths are relative to the TOML file's folder)::

    out_dir = "out/pilot"
    mirror = "/data/mirror"            # folder of bare repositories owner__name.git
    offline = false                    # true: never clone from GitHub
    views = ["repo_only", "raw_trace", "summary_notes", "structured_notes"]   # the default; also any
                                       # registered view ("trace_digest") or a view file ("./my_view.toml")
    point_types = ["after_first_source_edit", "after_first_verification_result",
                   "after_first_post_failure_edit"]

    [dataset]
    path = "swebench_verified.jsonl"
    difficulties = ["15 min - 1 hour", "1-4 hours"]
    seed = 20260430
    limit = 75
    # instance_ids = ["psf__requests-1766"]   # explicit list instead of the seeded selection

    # allow_unconfined = true          # run agents even without bubblewrap (runs marked not isolated)

    [predecessor]                       # either a model to run ...
    model = { model = "openai/qwen", base_url = "http://127.0.0.1:8000/v1" }
    agent = "mini-swe-agent"           # the agent choice: a runtime's name, or a table (below)
    # trajectories = ["runs/mini-swe-agent/"]   # ... or trajectory files/folders to import

    [[successors]]
    model = "openai/qwen"
    base_url = "http://127.0.0.1:8000/v1"
    # successors may differ in model or agent; the agent choice whole (takeover.agents.AgentChoice):
    agent = { runtime = "mini-swe-agent", command_backend = "local", protocol = "text" }
    # agent = { runtime = "command", options = { agent_command = "claude -p ... < {prompt_file}" } }

    [limits]                            # every agent run's (takeover.limits.RunLimits)
    step_limit = 500
    wall_time_limit_seconds = 14400

    [grading]                           # how patches are graded (takeover.grading_settings.GradingSettings)
    backend = "local"
    timeout = 1800                      # seconds per test run (--grading-timeout)
    network = false                     # true: tests may use the internet (psf/requests needs it)
    # hash_seed = 1535730572            # the tests' PYTHONHASHSEED (default: one per grading key)
    # grading_rules = "swebench-4.1"    # whose verdict rules decide (default: the installed swebench's)
    # options = { spec_file = "envs.toml" }   # the backend's own options (--backend-option NAME=VALUE)

    [replay]                            # how recorded runs are replayed (takeover.replay_settings.ReplaySettings)
    # timeout = 300                     # seconds per replayed command (--replay-timeout)
    # memory_mb = 4096                  # MiB per replayed command (--memory-mb)
    # use_sandbox = true                # bubblewrap where available (--use-sandbox/--no-sandbox)
    # use_environment = true            # the task's environment (--use-environment/--no-environment)

    [view_budgets]                      # the views' budgets (takeover.view_budgets.ViewBudgets)
    # raw_trace_max_chars = 40000       # raw_trace budget (default: none, as in the paper)
    # raw_trace_max_tokens = 10000
    # note_max_tokens = 1600            # completion tokens per note-writing call (every model-written view)

    # [view_options.NAME]               # one view's own options (its Options; --view-option NAME.KEY=VALUE)

    [execution]
    workers = 4
    model_concurrency = 4
    environment_concurrency = 2
    executor = "local"

Every key has one name, the same as the Python field and the command-line flag (``--step-limit``,
``--raw-trace-max-chars``; a table's ``timeout`` is ``--grading-timeout``, ``--replay-timeout``; ``[grading]``'s
``options`` are ``--backend-option``; a model table's ``timeout``, ``retries`` and ``max_retry_wait`` are
``--timeout``, ``--retries`` and ``--max-retry-wait``). A relative path among the grading backend's options
(``spec_file``) is resolved against the file's folder, as the other paths are.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from takeover._util.io import read_text
from takeover.agents import DEFAULT_AGENT, AgentChoice
from takeover.agents.runtimes import checked_choice
from takeover.errors import InputError
from takeover.grading.backends import checked_grading
from takeover.grading_settings import GradingSettings
from takeover.limits import RunLimits
from takeover.llm import ModelSettings
from takeover.replay_settings import ReplaySettings
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import PAPER_DIFFICULTIES, PAPER_LIMIT, PAPER_SEED
from takeover.view_budgets import ViewBudgets
from takeover.views.handoff_view import HandoffView
from takeover.views.view_files import is_view_file
from takeover.views.view_registry import view_named, view_options
from takeover.vocabulary import POINT_TYPES, VIEWS, PointType


def _registered_or_file(ref: str) -> str:
    """``ref`` when it names a registered view or a view file (read with the other paths, once ``base_dir``
    is known)."""
    if not is_view_file(ref):
        try:
            view_named(ref)
        except InputError as exc:
            raise ValueError(exc.reason) from None
    return ref


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DatasetConfig(_Strict):
    """Source tasks (docs/protocol.md section 2).

    Attributes:
        path: SWE-bench instances file (``.jsonl``/``.json``/``.parquet``) or a Hugging Face dataset name.
        difficulties: SWE-bench ``difficulty`` buckets kept by the seeded selection (``[]``: every one).
        seed: seed of the shuffled order.
        limit: first N of the shuffled order (``None``: all).
        instance_ids: explicit instances; when given, difficulties/seed/limit are not used.
        repos: keep only these repositories (``owner/name``), applied before the seeded selection.
    """

    path: str
    difficulties: list[str] = Field(default_factory=lambda: list(PAPER_DIFFICULTIES))
    seed: int = PAPER_SEED
    limit: int | None = PAPER_LIMIT
    instance_ids: list[str] | None = None
    repos: list[str] | None = None


def _checked(choice: AgentChoice) -> AgentChoice:
    """An agent choice whose names are registered and whose options its runtime accepts (in their form)."""
    try:
        return checked_choice(choice)
    except InputError as exc:
        raise ValueError(f"{exc.reason} ({exc.field})" if exc.field and exc.field.startswith("options.")
                         else exc.reason) from None


class PredecessorConfig(_Strict):
    """Who starts the source tasks: a model run by us under the agent choice ``agent``
    (:class:`takeover.agents.AgentChoice`, default mini-swe-agent), or trajectories imported from
    files/folders."""

    model: ModelSettings | None = None
    agent: AgentChoice = Field(default_factory=AgentChoice)
    trajectories: list[str] | None = None

    _agent_checked = field_validator("agent")(_checked)

    @model_validator(mode="after")
    def _one_source(self) -> PredecessorConfig:
        if (self.model is None) == (not self.trajectories):
            raise ValueError("give exactly one of 'model' (run a predecessor) or 'trajectories' (import runs)")
        if self.trajectories and "agent" in self.model_fields_set:
            raise ValueError("'agent' runs the predecessor 'model'; imported trajectories need none")
        return self


class SuccessorConfig(ModelSettings):
    """One successor: the model's endpoint settings (:class:`takeover.llm.ModelSettings`, the keys of a
    ``[[successors]]`` table) and the agent choice that runs it (``agent``,
    :class:`takeover.agents.AgentChoice`, default mini-swe-agent). Two successors differ in their model or
    their agent runtime."""

    agent: AgentChoice = Field(default_factory=AgentChoice)

    _agent_checked = field_validator("agent")(_checked)

    @model_validator(mode="before")
    @classmethod
    def _from_model_settings(cls, data: Any) -> Any:
        # Built in Python from plain endpoint settings (the quickstart does): the same keys, the default agent.
        return data.model_dump() if type(data) is ModelSettings else data

    def settings(self) -> ModelSettings:
        """The endpoint settings alone."""
        return ModelSettings.model_validate(self.model_dump(exclude={"agent"}))

    def name(self, with_agent: bool) -> str:
        """The successor's name in progress lines and the report: the model, and with ``with_agent`` its
        agent runtime in parentheses (:attr:`ExperimentConfig.successor_names` says when)."""
        return f"{self.model} ({self.agent.runtime})" if with_agent else self.model


class NotesConfig(_Strict):
    """Note writer for ``summary_notes``/``structured_notes`` (paper: the predecessor's model).

    Defaults to the predecessor model when one is run, else to the first successor. Its completion cap per
    call is a view budget (``[view_budgets] note_max_tokens``).
    """

    model: ModelSettings | None = None


class ExecutionConfig(_Strict):
    """Parallelism: ``workers`` processes (or Ray tasks) in flight; at most ``model_concurrency`` units
    that call a model and ``environment_concurrency`` units that use a test environment at a time.

    ``prepare_environments``: build each selected task's local test environment first, as a stage of its
    own (its time shows apart; later stages reuse the cached environment). The quickstart turns it on.
    """

    workers: int = Field(default=1, ge=1)
    model_concurrency: int | None = Field(default=None, ge=1)
    environment_concurrency: int | None = Field(default=None, ge=1)
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    prepare_environments: bool = False


class ExperimentConfig(_Strict):
    """A whole study. Construct it from a TOML file with :func:`load_experiment` or directly in Python.

    Relative paths are resolved against ``base_dir`` (the TOML file's folder; the current folder when
    built in Python). The settings records are whole tables: ``limits`` (:class:`takeover.limits.RunLimits`),
    ``grading`` (:class:`takeover.grading_settings.GradingSettings`, its backend and options checked by the
    backends' registry), ``replay`` (:class:`takeover.replay_settings.ReplaySettings`) and ``view_budgets``
    (:class:`takeover.view_budgets.ViewBudgets`: the ``raw_trace`` budget, an Extension of docs/protocol.md
    section 7, and the note writers' completion cap).
    """

    name: str = "experiment"
    out_dir: str
    mirror: str | None = None
    offline: bool = False
    allow_unconfined: bool = Field(
        default=False,
        description="run agents even where their commands cannot be confined (no bubblewrap): their runs are "
                    "then marked not isolated (docs/protocol.md section 8.6)",
    )
    dataset: DatasetConfig
    predecessor: PredecessorConfig
    successors: list[SuccessorConfig] = Field(min_length=1)
    views: list[Annotated[str, AfterValidator(_registered_or_file)]] = Field(default_factory=lambda: list(VIEWS))
    view_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    point_types: list[PointType] = Field(default_factory=lambda: list(POINT_TYPES))
    limits: RunLimits = Field(default_factory=RunLimits)
    grading: GradingSettings = Field(default_factory=GradingSettings)
    replay: ReplaySettings = Field(default_factory=ReplaySettings)
    view_budgets: ViewBudgets = Field(default_factory=ViewBudgets)
    notes: NotesConfig = Field(default_factory=NotesConfig)
    execution: ExecutionConfig = Field(default_factory=ExecutionConfig)
    bootstrap_resamples: int = 5000
    bootstrap_seed: int = PAPER_SEED
    base_dir: str | None = Field(default=None, description="folder that relative paths are resolved against")

    _handoff_views: dict[str, HandoffView] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _views_are_registered(self) -> ExperimentConfig:
        # Every view is resolved once, here: a registered name or a view file (relative to the file's folder),
        # and each view's own options are checked by its Options model before any unit runs.
        found: dict[str, HandoffView] = {}
        for i, ref in enumerate(self.views):
            try:
                view = view_named(ref, base_dir=self.base_dir, where=f"views[{i}]")
            except InputError as exc:
                raise ValueError(f"views[{i}] = {ref!r}: {exc.reason if exc.path == f'views[{i}]' else exc}") from None
            if view.name in found:
                raise ValueError(f"views[{i}] = {ref!r}: the view {view.name} is listed twice")
            found[view.name] = view
        for name, given in self.view_options.items():
            if name not in found:
                raise ValueError(f"view_options.{name}: not a view of this study (its views: {', '.join(found)})")
            try:
                view_options(found[name], self.view_budgets, given)
            except InputError as exc:
                raise ValueError(f"{exc.field}: {exc.reason}") from None
        self._handoff_views = found
        return self

    @property
    def view_names(self) -> list[str]:
        """The study's views by name, in the order given (a view file's by the name it declares)."""
        return list(self._handoff_views)

    def handoff_view(self, name: str) -> HandoffView:
        """The study's view ``name`` (:attr:`view_names`)."""
        return self._handoff_views[name]

    def options_of(self, name: str) -> dict[str, Any]:
        """What view ``name`` is built with beyond its defaults: the budgets its options name, then its
        ``[view_options.NAME]`` table (:func:`takeover.views.view_registry.view_options`)."""
        return view_options(self._handoff_views[name], self.view_budgets, self.view_options.get(name))

    @field_validator("successors")
    @classmethod
    def _successors_unique(cls, value: list[SuccessorConfig]) -> list[SuccessorConfig]:
        names = [(m.model, m.agent.runtime) for m in value]
        if len(set(names)) != len(names):
            raise ValueError(f"successors must differ in model or agent: {[f'{m} ({a})' for m, a in names]}")
        return value

    @model_validator(mode="after")
    def _grading_backend_accepts_its_options(self) -> ExperimentConfig:
        try:
            checked = checked_grading(self.grading, self.base_dir)
        except InputError as exc:
            raise ValueError(f"grading.{exc.field}: {exc.reason}") from None
        self.grading = checked
        return self

    @model_validator(mode="after")
    def _runtimes_accept_their_choices(self) -> ExperimentConfig:
        # Refused before any unit runs: a runtime that cannot honour a limit says so (docs/protocol.md
        # section 8.4).
        tables = [("predecessor", self.predecessor)] if self.predecessor.model else []
        tables += [(f"successors[{i}]", s) for i, s in enumerate(self.successors)]
        for where, table in tables:
            try:
                checked_choice(table.agent, self.limits)
            except InputError as exc:
                field = f"agent.{exc.field}" if exc.field in ("protocol", "command_backend") else f"limits.{exc.field}"
                raise ValueError(f"{where}.agent = {table.agent.runtime!r}: {exc.reason} ({field})") from None
        return self

    @property
    def successor_names(self) -> list[str]:
        """Each successor's name (:meth:`SuccessorConfig.name`), in order: its model, with its agent runtime
        when that is not the default or the successors run under more than one (so two that differ only in
        agent stay apart, and the names of studies of the default runtime stay as they were)."""
        mixed = len({s.agent.runtime for s in self.successors}) > 1
        return [s.name(mixed or s.agent.runtime != DEFAULT_AGENT) for s in self.successors]

    # --- resolved paths -------------------------------------------------------------------------------
    def _resolve(self, value: str) -> Path:
        p = Path(value).expanduser()
        if not p.is_absolute() and self.base_dir:
            p = Path(self.base_dir) / p
        return p.absolute()

    @property
    def out(self) -> Path:
        """The output folder (absolute)."""
        return self._resolve(self.out_dir)

    @property
    def dataset_path(self) -> Path | str:
        """The dataset file (absolute), or the dataset name when no such file exists (Hugging Face)."""
        p = self._resolve(self.dataset.path)
        if p.exists() or p.suffix in {".jsonl", ".json", ".parquet"}:
            return p
        return self.dataset.path

    @property
    def mirror_path(self) -> Path | None:
        """The mirror folder (absolute), or ``None``. ``takeover run --mirror`` (or ``TAKEOVER_MIRROR``)
        fills ``mirror`` when the file names none."""
        return self._resolve(self.mirror) if self.mirror else None

    def repo_source(self) -> RepoSource:
        """Where this experiment's repositories come from: ``mirror``, then GitHub unless ``offline``."""
        return RepoSource(self.mirror_path, offline=self.offline)

    @property
    def trajectory_paths(self) -> list[Path]:
        """The configured trajectory files and folders (absolute)."""
        return [self._resolve(p) for p in self.predecessor.trajectories or []]

    @property
    def notes_model(self) -> ModelSettings:
        """The note writer: ``notes.model``, else the predecessor model, else the first successor's model."""
        return self.notes.model or self.predecessor.model or self.successors[0].settings()

    def resolved(self) -> dict[str, Any]:
        """The fully resolved configuration (absolute paths, defaults filled, no secrets)."""
        data = self.model_dump(mode="json")
        data["out_dir"] = str(self.out)
        data["mirror"] = str(self.mirror_path) if self.mirror_path else None
        data["dataset"]["path"] = str(self.dataset_path)
        data["views"] = [str(self._resolve(v)) if is_view_file(v) else v for v in self.views]
        if self.predecessor.trajectories:
            data["predecessor"]["trajectories"] = [str(p) for p in self.trajectory_paths]
        data["notes"]["model"] = self.notes_model.public()
        data["execution"]["model_concurrency"] = self.execution.model_concurrency or self.execution.workers
        data["execution"]["environment_concurrency"] = (
            self.execution.environment_concurrency or self.execution.workers
        )
        return data


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _toml_type(value: Any) -> str:
    """The TOML name of a value's type, for "expected X, got Y" messages."""
    for kind, name in ((bool, "a boolean"), (int, "an integer"), (float, "a float"), (str, "a string"),
                       (list, "an array"), (dict, "a table")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def load_experiment(path: Path | str) -> ExperimentConfig:
    """Read an experiment TOML file into an :class:`ExperimentConfig`.

    Raises:
        InputError: the file is missing, is not valid TOML, or a key is unknown or has a bad value; the
            error names the file and the TOML key (``successors[0].base_url``).
    """
    path = Path(path)
    if not path.exists():
        raise InputError(path, "experiment file not found")
    try:
        raw = tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as exc:
        where = re.search(r" \(at line (\d+), column (\d+)\)$", str(exc))
        if where is None:
            raise InputError(path, f"not valid TOML: {exc}") from None
        reason = str(exc)[: where.start()]
        raise InputError(path, f"not valid TOML: {reason} (column {where.group(2)})",
                         record=f"line {where.group(1)}") from None
    raw.setdefault("base_dir", str(path.resolve().parent))
    try:
        return ExperimentConfig.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "missing":
            msg = "required key is missing"
        elif err["type"].endswith(("_type", "_parsing")) and "input" in err:
            msg += f", got {_toml_type(err['input'])}"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise InputError(path, msg + more, field=_loc(err["loc"]) or None) from None
