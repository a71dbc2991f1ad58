"""Units of work: keyed by a hash of their inputs, each result one small JSON file written atomically.

A unit (a predecessor run, a checkpoint, a view, a takeover run, a grading) is described by a
:class:`UnitSpec`: the stage, the unit function that does the work (a module-level function, so that
worker processes and Ray tasks receive it by reference; ``fn`` is its ``"module:function"`` name), its
JSON inputs (:mod:`takeover.results` describes those of each stage), labels for progress and reports,
the resources it holds (``model``: calls a model endpoint; ``env``: uses a test environment) and where
repositories come from (:class:`~takeover.sources.repos.RepoSource`). Its key is
``stable_hash({stage, fn, inputs})``: change any input (or an upstream result that is part of the
inputs) and the unit is redone; leave them alone and a re-run skips it.

The result lives at ``OUT/units/<stage>/<key>.json`` (:class:`UnitResult`). It is written by the
process that did the work, the moment the work ends, so a crash of the coordinator loses nothing
finished. A stored file is trusted only when its content agrees with its name: its ``stage`` and
``key`` are the file's, and its ``instance_id`` is the planned unit's. A file that disagrees or cannot
be read counts as missing (the unit is redone) and is noted in ``OUT/rejected_units.jsonl``.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr, field_validator, model_validator

from takeover._util.io import append_jsonl, atomic_write_json, stable_form, stable_hash
from takeover._util.logs import third_party_logging
from takeover._util.redact import redact
from takeover.errors import EnvironmentUnavailable, InputError, RepositoryUnavailable, TakeoverError
from takeover.llm.call_log import serving_unit
from takeover.llm.settings import key_form as endpoint_key_form
from takeover.sources.repos import RepoSource

FailureKind = Literal["infrastructure", "agent"]
Resource = Literal["model", "env"]


class UnitFailure(TakeoverError):
    """Raised by a unit function to fail on purpose with a reason and a kind.

    ``kind="infrastructure"``: the harness or the machine failed (environment build, repository, model
    endpoint, upstream unit); ``kind="agent"``: the agent did something that makes the unit unusable.
    Both stay in the denominator of every rate (docs/protocol.md section 9).

    Attributes:
        reason: one line saying why.
        kind: ``infrastructure`` or ``agent``.
        prompt_tokens, completion_tokens: tokens the unit spent before it failed (a failed run or note
            writer still costs tokens; the unit file records them).
    """

    def __init__(self, reason: str, kind: FailureKind = "infrastructure", *, prompt_tokens: int = 0,
                 completion_tokens: int = 0):
        super().__init__(reason)
        self.reason = reason
        self.kind = kind
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens


def _json_object(value: Any) -> Any:
    """A record (pydantic model) as its JSON object in the stable form of keys
    (:func:`takeover._util.io.stable_form`: fields at their default left out); anything else unchanged."""
    return stable_form(value)


def key_form(value: Any) -> Any:
    """``value`` with model endpoint settings in their key form (:func:`takeover.llm.settings.key_form`:
    without the address of an endpoint that names its model otherwise), so that a folder whose embedded
    model ran on another port is resumed, not redone with new model calls. Only the key uses this form; the
    unit file stores the inputs as they are."""
    if isinstance(value, dict):
        if {"model", "base_url", "extra"} <= value.keys():  # endpoint settings naming their model otherwise
            value = endpoint_key_form(value)
        return {k: key_form(v) for k, v in value.items()}
    if isinstance(value, list):
        return [key_form(v) for v in value]
    return value


class UnitSpec(BaseModel):
    """What to do for one unit. ``key`` is derived from ``stage``, ``fn`` and ``inputs`` only.

    Build it with the unit function itself, ``UnitSpec(stage=..., fn=points_unit, inputs=...)``: ``fn``
    becomes the function's ``"module:function"`` name (in the key and the JSON) and :attr:`function` the
    function (it travels to a worker by reference, never as JSON). ``inputs`` and ``labels`` may be
    records (:mod:`takeover.results`); they are kept as their JSON objects in the stable form of keys (fields at
their default left out: :func:`takeover._util.io.stable_form`). ``repo_source`` says where
    repositories come from and, like ``labels`` (what progress displays and reports group by), is not
    part of the key.
    """

    stage: str
    fn: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    labels: dict[str, Any] = Field(default_factory=dict)
    resources: list[Resource] = Field(default_factory=list)
    repo_source: RepoSource = Field(default_factory=RepoSource)
    _function: Callable | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _name_the_function(cls, data: Any, handler) -> UnitSpec:
        function = data.get("fn") if isinstance(data, dict) and callable(data.get("fn")) else None
        if function is not None:
            data = {**data, "fn": f"{function.__module__}:{function.__qualname__}"}
        spec = handler(data)
        if function is not None:
            spec._function = function
        return spec

    @field_validator("inputs", "labels", mode="before")
    @classmethod
    def _records_as_json(cls, value: Any) -> Any:
        return _json_object(value)

    @property
    def key(self) -> str:
        """16 hex characters: ``stable_hash({stage, fn, inputs})`` over the inputs' key form
        (:func:`key_form`); the unit file's name."""
        return stable_hash({"stage": self.stage, "fn": self.fn, "inputs": key_form(self.inputs)})

    @property
    def function(self) -> Callable[[dict, UnitContext], UnitOutcome | dict]:
        """The unit function. Raises ``ValueError`` for a spec read back from JSON (it has only the name)."""
        if self._function is None:
            raise ValueError(f"unit spec {self.stage}/{self.key} was built from {self.fn!r} (a name), not the function")
        return self._function


class UnitOutcome(BaseModel):
    """What a unit function returns: its small result (a record of :mod:`takeover.results`, kept as its
    JSON object) and the tokens it spent (units: tokens)."""

    output: dict[str, Any] = Field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @field_validator("output", mode="before")
    @classmethod
    def _record_as_json(cls, value: Any) -> Any:
        return _json_object(value)


class UnitResult(BaseModel):
    """The result file of one unit (``OUT/units/<stage>/<key>.json``).

    Attributes:
        status: ``done`` or ``failed``.
        reason: why it failed (one line, secrets redacted); ``None`` when done.
        failure_kind: ``infrastructure`` or ``agent`` (see :class:`UnitFailure`).
        started_at: ISO time (UTC); seconds: wall time of the unit (seconds).
        prompt_tokens, completion_tokens: tokens spent by the unit's model calls.
        output: the stage's small result (never a whole trajectory).
        host, pid: the machine and process that ran the unit; node: the Ray node id when the Ray executor
            ran it (``None`` otherwise).
    """

    stage: str
    key: str
    status: Literal["done", "failed"]
    reason: str | None = None
    failure_kind: FailureKind | None = None
    labels: dict[str, Any] = Field(default_factory=dict)
    inputs: dict[str, Any] = Field(default_factory=dict)
    output: dict[str, Any] = Field(default_factory=dict)
    started_at: str
    seconds: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    host: str | None = None
    pid: int | None = None
    node: str | None = None


class UnitContext(BaseModel):
    """Passed to every unit function: where to write its artifacts.

    Attributes:
        out_dir: the experiment's output folder.
        work_dir: this unit's own folder ``OUT/work/<stage>/<key>/`` (emptied before a redo is up to the
            function; it is created before the call).
        key: the unit key.
        stage: the unit's stage.
        repo_source: where repositories come from (the spec's).
    """

    out_dir: str
    work_dir: str
    key: str
    stage: str
    repo_source: RepoSource = Field(default_factory=RepoSource)


def unit_path(out_dir: Path | str, stage: str, key: str) -> Path:
    """``OUT/units/<stage>/<key>.json``: the unit's result file."""
    return Path(out_dir) / "units" / stage / f"{key}.json"


def work_path(out_dir: Path | str, stage: str, key: str) -> Path:
    """``OUT/work/<stage>/<key>/``: the unit's own folder for its artifacts."""
    return Path(out_dir) / "work" / stage / key


def check_result(out_dir: Path | str, stage: str, key: str,
                 instance_id: str | None = None) -> tuple[UnitResult | None, str | None]:
    """The stored result of a unit and why it was rejected: ``(result, None)`` when it is usable,
    ``(None, None)`` when there is no file, ``(None, reason)`` when the file cannot be read or its
    content disagrees with its name (stored ``stage``/``key`` differ from the file's, or its inputs'
    ``instance_id`` differs from ``instance_id``, the planned unit's). A file is never trusted by its
    name alone: a copied or renamed unit file must not stand in for another unit."""
    path = unit_path(out_dir, stage, key)
    try:
        result = UnitResult.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:
        return None, f"unreadable: {' '.join(str(exc).split())[:300]}"
    if result.stage != stage or result.key != key:
        return None, f"stored stage/key {result.stage}/{result.key} differ from the file's {stage}/{key}"
    stored_iid = result.inputs.get("instance_id")
    if instance_id is not None and stored_iid != instance_id:
        return None, f"stored instance_id {stored_iid!r} differs from the planned unit's {instance_id!r}"
    return result, None


def read_result(out_dir: Path | str, stage: str, key: str, instance_id: str | None = None) -> UnitResult | None:
    """The stored result of a unit, or ``None`` when missing, unreadable or not this unit's (see
    :func:`check_result`); then it is redone."""
    return check_result(out_dir, stage, key, instance_id)[0]


#: The form of unit inputs and keys, written to ``OUT/units/FORMAT``. Units of another form (an earlier
#: version of takeover) are never mixed with today's: :func:`set_aside_earlier_units` moves them away.
#: Bumped whenever a default of a record in unit inputs changes (the stable form leaves defaults out).
#: 3: every record in its stable form; grading, replay and view settings whole.
UNITS_FORMAT = 3


def set_aside_earlier_units(out_dir: Path | str) -> str | None:
    """Make ``OUT/units`` hold units of :data:`UNITS_FORMAT` only: a folder written by an earlier version
    (no ``FORMAT`` file, or another number in it) is moved to ``OUT/units.earlier-N`` (``N``: its format),
    so that its units are recomputed rather than mixed with today's; returns the one line that says so
    (``None`` when nothing was moved). Marks the folder with today's format."""
    units = Path(out_dir) / "units"
    marker = units / "FORMAT"
    found = marker.read_text(encoding="utf-8").strip() if marker.is_file() else "1"
    moved = None
    if units.is_dir() and found != str(UNITS_FORMAT) and any(units.iterdir()):
        aside = units.with_name(f"units.earlier-{found}")
        if aside.exists():
            aside = units.with_name(f"units.earlier-{found}-{int(time.time())}")
        units.rename(aside)
        moved = (f"{units} was written by an earlier version of takeover (unit format {found}, now "
                 f"{UNITS_FORMAT}): its units are recomputed, not reused; they were moved to {aside}")
    units.mkdir(parents=True, exist_ok=True)
    marker.write_text(f"{UNITS_FORMAT}\n", encoding="utf-8")
    return moved


def note_rejected(out_dir: Path | str, stage: str, key: str, reason: str) -> None:
    """Record that a stored unit file was not reused (``OUT/rejected_units.jsonl``, one line each)."""
    append_jsonl(Path(out_dir) / "rejected_units.jsonl", {
        "stage": stage, "key": key, "path": str(unit_path(out_dir, stage, key)), "reason": reason,
        "at": datetime.now(UTC).isoformat(timespec="seconds")})


_INFRA_ERRORS: tuple[type[BaseException], ...] = (
    EnvironmentUnavailable,
    RepositoryUnavailable,
    OSError,
    TimeoutError,
    subprocess.SubprocessError,
)


def classify_exception(exc: BaseException) -> FailureKind:
    """Failure kind of an unexpected exception: every exception that escapes a unit function is a
    failure of the harness, the machine or an endpoint, never of the agent, so ``infrastructure``."""
    if isinstance(exc, UnitFailure):
        return exc.kind
    return "infrastructure"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, UnitFailure):
        text = exc.reason
    elif isinstance(exc, (InputError, *_INFRA_ERRORS)):
        text = f"{type(exc).__name__}: {exc}"
    else:
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
        text = f"{type(exc).__name__}: {exc}{where}"
    text = " ".join(text.split())
    return redact(text[:2000])


def _quiet_worker() -> None:
    """Offline and quiet model libraries in worker processes: no cost-map download, no INFO lines per
    model call interleaved with the progress display (unless the coordinator was asked for them)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    third_party_logging()


def execute_unit(function: Callable[[dict, UnitContext], UnitOutcome | dict], spec_json: str, out_dir: str,
                 *, node: str | None = None) -> str:
    """Run one unit (``function`` on the spec's inputs) and write its result file; returns the
    :class:`UnitResult` as JSON.

    This is the function that worker processes and Ray tasks call: ``function`` travels by reference
    (a module-level function), the spec and the result as plain strings, so that any executor can carry
    them. It never raises for a failure of the unit itself: the failure is recorded (status ``failed``,
    reason, kind, the tokens a :class:`UnitFailure` says were spent) and returned. ``node``: the Ray node
    id, recorded in the result.
    """
    _quiet_worker()
    spec = UnitSpec.model_validate_json(spec_json)
    key = spec.key
    work = work_path(out_dir, spec.stage, key)
    work.mkdir(parents=True, exist_ok=True)
    ctx = UnitContext(out_dir=str(out_dir), work_dir=str(work), key=key, stage=spec.stage,
                      repo_source=spec.repo_source)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.monotonic()
    common = {
        "stage": spec.stage,
        "key": key,
        "labels": spec.labels,
        "inputs": spec.inputs,
        "started_at": started,
        "host": os.uname().nodename,
        "pid": os.getpid(),
        "node": node,
    }
    try:
        with serving_unit({"stage": spec.stage, "key": key, **spec.labels}):  # named by its model calls' log
            outcome = function(spec.inputs, ctx)
        if isinstance(outcome, dict):
            outcome = UnitOutcome(output=outcome)
        result = UnitResult(
            status="done",
            output=outcome.output,
            prompt_tokens=outcome.prompt_tokens,
            completion_tokens=outcome.completion_tokens,
            seconds=round(time.monotonic() - t0, 3),
            **common,
        )
    except Exception as exc:  # noqa: BLE001 - a unit failure is data, not a crash of the experiment
        failure = exc if isinstance(exc, UnitFailure) else None
        result = UnitResult(
            status="failed",
            reason=_reason(exc),
            failure_kind=classify_exception(exc),
            prompt_tokens=failure.prompt_tokens if failure else 0,
            completion_tokens=failure.completion_tokens if failure else 0,
            seconds=round(time.monotonic() - t0, 3),
            **common,
        )
    atomic_write_json(unit_path(out_dir, spec.stage, key), result)
    return result.model_dump_json()


def blocked_result(spec: UnitSpec, reason: str) -> UnitResult:
    """The (unwritten) result of a unit that cannot run because an upstream unit failed."""
    return UnitResult(
        stage=spec.stage,
        key=spec.key,
        status="failed",
        reason=reason,
        failure_kind="infrastructure",
        labels=spec.labels,
        inputs=spec.inputs,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        seconds=0.0,
    )


def load_results(out_dir: Path | str, stage: str) -> dict[str, UnitResult]:
    """Every stored result of ``stage`` by key (unreadable files are skipped)."""
    folder = Path(out_dir) / "units" / stage
    out: dict[str, UnitResult] = {}
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.json")):
        try:
            result = UnitResult.model_validate(json.loads(path.read_bytes()))
        except ValueError:
            continue
        if result.stage == stage and result.key == path.stem:  # content agrees with the name
            out[path.stem] = result
    return out
