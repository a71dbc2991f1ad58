"""Units of work: keyed by a hash of their inputs, each result one small JSON file written atomically.

A unit (a predecessor run, a checkpoint, a view, a takeover run, a grading) is described by a
:class:`UnitSpec`: the stage, the function that does the work (``"module:function"``, so that worker
processes and Ray tasks can import it), its JSON inputs, labels for progress and reports, and the
resources it holds (``model``: calls a model endpoint; ``env``: uses a test environment). Its key is
``stable_hash({stage, fn, inputs})``: change any input (or an upstream result that is part of the
inputs) and the unit is redone; leave them alone and a re-run skips it.

The result lives at ``OUT/units/<stage>/<key>.json`` (:class:`UnitResult`). It is written by the
process that did the work, the moment the work ends, so a crash of the coordinator loses nothing
finished. A stored file is trusted only when its content agrees with its name: its ``stage`` and
``key`` are the file's, and its ``instance_id`` is the planned unit's. A file that disagrees or cannot
be read counts as missing (the unit is redone) and is noted in ``OUT/rejected_units.jsonl``.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from takeover._io import append_jsonl, atomic_write_json, stable_hash
from takeover.errors import EnvironmentUnavailable, InputError, RepositoryUnavailable
from takeover.redact import redact

FailureKind = Literal["infrastructure", "agent"]
Resource = Literal["model", "env"]


class UnitFailure(Exception):
    """Raised by a unit function to fail on purpose with a reason and a kind.

    ``kind="infrastructure"``: the harness or the machine failed (environment build, repository, model
    endpoint, upstream unit); ``kind="agent"``: the agent did something that makes the unit unusable.
    Both stay in the denominator of every rate (docs/protocol.md section 9).
    """

    def __init__(self, reason: str, kind: FailureKind = "infrastructure"):
        super().__init__(reason)
        self.reason = reason
        self.kind = kind


class UnitSpec(BaseModel):
    """What to do for one unit. ``key`` is derived from ``stage``, ``fn`` and ``inputs`` only.

    ``context`` carries settings that must not change the key (where the mirror is, network access,
    the output folder), ``labels`` what progress displays and reports group by.
    """

    stage: str
    fn: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    labels: dict[str, Any] = Field(default_factory=dict)
    resources: list[Resource] = Field(default_factory=list)
    context: dict[str, Any] = Field(default_factory=dict)

    @property
    def key(self) -> str:
        return stable_hash({"stage": self.stage, "fn": self.fn, "inputs": self.inputs})


class UnitOutcome(BaseModel):
    """What a unit function returns: its small result and the tokens it spent (units: tokens)."""

    output: dict[str, Any] = Field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0


class UnitResult(BaseModel):
    """The result file of one unit (``OUT/units/<stage>/<key>.json``).

    Attributes:
        status: ``done`` or ``failed``.
        reason: why it failed (one line, secrets redacted); ``None`` when done.
        failure_kind: ``infrastructure`` or ``agent`` (see :class:`UnitFailure`).
        started_at: ISO time (UTC); seconds: wall time of the unit (seconds).
        prompt_tokens, completion_tokens: tokens spent by the unit's model calls.
        output: the stage's small result (never a whole trajectory).
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


class UnitContext(BaseModel):
    """Passed to every unit function: where to write its artifacts.

    Attributes:
        out_dir: the experiment's output folder.
        work_dir: this unit's own folder ``OUT/work/<stage>/<key>/`` (emptied before a redo is up to the
            function; it is created before the call).
        key: the unit key.
        context: the spec's ``context`` (mirror, network access, ...).
    """

    out_dir: str
    work_dir: str
    key: str
    stage: str
    context: dict[str, Any] = Field(default_factory=dict)


def unit_path(out_dir: Path | str, stage: str, key: str) -> Path:
    return Path(out_dir) / "units" / stage / f"{key}.json"


def work_path(out_dir: Path | str, stage: str, key: str) -> Path:
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


def note_rejected(out_dir: Path | str, stage: str, key: str, reason: str) -> None:
    """Record that a stored unit file was not reused (``OUT/rejected_units.jsonl``, one line each)."""
    append_jsonl(Path(out_dir) / "rejected_units.jsonl", {
        "stage": stage, "key": key, "path": str(unit_path(out_dir, stage, key)), "reason": reason,
        "at": datetime.now(UTC).isoformat(timespec="seconds")})


def _import(fn: str) -> Callable[[dict, UnitContext], UnitOutcome | dict]:
    module, _, name = fn.partition(":")
    return getattr(importlib.import_module(module), name)


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
    model call interleaved with the progress display."""
    import logging

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm", "httpx"):
        logging.getLogger(name).setLevel(logging.WARNING)


def execute_unit(spec_json: str, out_dir: str) -> str:
    """Run one unit and write its result file; returns the :class:`UnitResult` as JSON.

    This is the function that worker processes and Ray tasks call: arguments and result are plain
    strings so that any executor can carry them. It never raises for a failure of the unit itself: the
    failure is recorded (status ``failed``, reason, kind) and returned.
    """
    _quiet_worker()
    spec = UnitSpec.model_validate_json(spec_json)
    key = spec.key
    work = work_path(out_dir, spec.stage, key)
    work.mkdir(parents=True, exist_ok=True)
    ctx = UnitContext(out_dir=str(out_dir), work_dir=str(work), key=key, stage=spec.stage, context=spec.context)
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
    }
    try:
        outcome = _import(spec.fn)(spec.inputs, ctx)
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
        tokens = getattr(exc, "tokens", None) or (0, 0)
        result = UnitResult(
            status="failed",
            reason=_reason(exc),
            failure_kind=classify_exception(exc),
            prompt_tokens=tokens[0],
            completion_tokens=tokens[1],
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
