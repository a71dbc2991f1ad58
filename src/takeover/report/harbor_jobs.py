"""Takeover runs from Harbor job folders: the trials of tasks that ``takeover export harbor`` wrote, as rows of
the report beside takeover's own runs (docs/protocol.md sections 8.6 and 9).

A trial is a folder holding Harbor's ``result.json`` (with a ``trial_name``) and ``config.json``; trials are
found in ``OUT/*/`` (``OUT`` is a job folder) and ``OUT/*/*/`` (``OUT`` holds job folders, Harbor's
``jobs/``). Each trial of an exported task (its task name ``<instance_id>__<point_type>-<event_index>__<view>``,
:func:`takeover.harbor.task_folder.task_name`) is one takeover run; trials of other tasks are skipped.

- The point, the view and the handoff state come from the task's ``task.toml`` ``[metadata]`` when the
  trial's task folder is still where Harbor read it, else from the task name.
- ``successor``: Harbor's agent name, its model when it has one, then ``(harbor)``, so the tables keep
  Harbor's runs apart from takeover's own while computing the same statistics over both.
- ``resolved`` and the FAIL_TO_PASS / PASS_TO_PASS pass rates: the verifier's ``verifier/report.json``
  (written by the task's ``tests/test.sh``); without it, the reward (``1`` is resolved).
- ``agent_events``, ``prompt_tokens``, ``completion_tokens``: from the trial's ATIF trajectory
  ``agent/trajectory.json``, read as takeover reads any ATIF run (:mod:`takeover.trajectories.atif`): steps
  marked ``is_copied_context`` (the predecessor's run a raw_trace task seeds) are not the successor's and
  are left out. Without a trajectory (Harbor's oracle and nop agents write none) they are empty.
- ``status``: ``done`` when the verifier gave a reward; a trial that stopped on the agent's time limit and
  was still verified is ``done`` with ``exit_status`` ``time_limit`` (``failure_kind`` ``agent``); any other
  exception, or no reward, is ``failed`` (``infrastructure``) with Harbor's exception as the reason.
- A trial Harbor recorded as interrupted (``CancelledError`` or ``KeyboardInterrupt``, with the empty message
  Harbor writes for them: the user stopped ``harbor run``) is ``failed`` (``infrastructure``), the reason
  saying it was interrupted and should be run again.
- ``wall_seconds``: the agent's execution time; ``initial_prompt_chars``: the task's ``instruction.md``.
- ``run_dir`` (not a column of ``results.csv``): the ATIF trajectory, whose steps the HTML drill-down shows.

Damaged records never crash the report and are never left out without a word (docs/protocol.md section 9):
a trial whose ``result.json`` is empty, cut short, not UTF-8, not a JSON object or has a field of another
type than Harbor writes (:class:`TrialResult`, the fields read here), or whose verifier ``report.json`` or
ATIF trajectory cannot be read, is *unreadable*. It is listed with the file and the reason
(``unreadable``, each ``{"source", "path", "reason", "takeover_key"}``); when its task and agent can still be
told (its ``config.json``, or the part of ``result.json`` that reads), it is also a row with ``status``
``unreadable`` (``infrastructure``, not solved), counted in its (successor, view) like a failed run. A
folder counts as a trial when its ``result.json`` names a ``trial_name``, or when that file cannot be read
and the folder is not a job (it holds no folder with a ``result.json``); a readable ``result.json`` of
something else (a job, another tool) is not a trial.
"""

from __future__ import annotations

import re
import tomllib
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from takeover._util.io import read_json, read_text
from takeover.errors import InputError, json_type
from takeover.trajectories import read_trajectory
from takeover.views import HANDOFF_VIEWS

_NAME = re.compile(r"^(?P<instance_id>.+)__(?P<point_type>[a-z_]+)-(?P<event_index>\d+)__(?P<view>[a-z_]+)$")
#: The exception types Harbor records, with an empty message, for a trial stopped from outside (the user
#: pressed Ctrl-C on ``harbor run``, or its job was cancelled).
INTERRUPTED = ("CancelledError", "KeyboardInterrupt")


class _Part(BaseModel):
    """A part of a Harbor record: the fields read here, typed as Harbor writes them (strictly: a string is
    never read as a number), any other field ignored."""

    model_config = ConfigDict(extra="ignore", strict=True)


class ModelInfo(_Part):
    name: str
    provider: str | None = None


class AgentInfo(_Part):
    name: str
    model_info: ModelInfo | None = None


class VerifierResult(_Part):
    rewards: dict[str, float] | None = None


class ExceptionInfo(_Part):
    exception_type: str
    exception_message: str


class TimingInfo(_Part):
    started_at: str | None = None
    finished_at: str | None = None

    @field_validator("started_at", "finished_at")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        if value is not None:
            datetime.fromisoformat(value)  # a ValueError names the field
        return value


class TaskRef(_Part):
    path: str | None = None


class AgentConfig(_Part):
    name: str | None = None
    model_name: str | None = None


class TrialConfig(_Part):
    task: TaskRef | None = None
    agent: AgentConfig | None = None


class TrialResult(_Part):
    """The fields of Harbor's ``result.json`` (its ``TrialResult``) that the report reads."""

    task_name: str
    trial_name: str
    task_id: TaskRef | None = None
    config: TrialConfig | None = None
    agent_info: AgentInfo | None = None
    verifier_result: VerifierResult | None = None
    exception_info: ExceptionInfo | None = None
    agent_execution: TimingInfo | None = None


class TestOutcomes(_Part):
    __test__ = False  # a pydantic model, not a pytest test class

    success: list[str] = []
    failure: list[str] = []


class Verdict(_Part):
    """One instance's entry of the verifier's ``report.json`` (:mod:`takeover.harbor.swebench_verdict`)."""

    resolved: bool | None = None
    tests_status: dict[str, TestOutcomes] = {}


def _record(path: Path, model: type[_Part], *, field: str | None = None) -> Any:
    """``model`` read from the JSON file ``path`` (``field``: from that key of its object).

    Raises:
        InputError: the file cannot be read, is not a JSON object, lacks ``field`` or fails ``model``.
    """
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise InputError(path, f"expected a JSON object, got {json_type(doc)}")
    if field is not None:
        if field not in doc:
            raise InputError(path, f"holds no entry for {field}")
        doc = doc[field]
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        error = InputError.from_validation(path, exc)
        if field is not None and error.field:
            error = InputError(path, error.reason, field=f"{field}.{error.field}")
        raise error from None


def _json_or_none(path: Path) -> Any:
    try:
        return read_json(path)
    except InputError:
        return None


def _text_at(doc: Any, *keys: str) -> str | None:
    """The string at ``doc[k1][k2]...``, or ``None`` when the path is absent or holds something else."""
    for key in keys:
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc if isinstance(doc, str) and doc else None


def _names_trial(folder: Path) -> bool:
    """Whether ``folder/config.json`` is a Harbor trial's configuration (it names a ``trial_name``)."""
    return _text_at(_json_or_none(folder / "config.json"), "trial_name") is not None


def _is_job(folder: Path) -> bool:
    """Whether ``folder`` is a Harbor job (its ``config.json`` names a ``job_name``, or it holds trials)."""
    return (_text_at(_json_or_none(folder / "config.json"), "job_name") is not None
            or any(folder.glob("*/result.json")))


def harbor_trial_folders(out_dir: Path | str) -> list[Path]:
    """The Harbor trial folders in ``OUT/*/`` and ``OUT/*/*/`` (sorted): those whose ``result.json`` names a
    ``trial_name``, and those whose ``result.json`` cannot be read (or names none while their
    ``config.json`` is a trial's) and that are neither a job nor inside a trial."""
    out = Path(out_dir)
    found = []
    for result in sorted({*out.glob("*/result.json"), *out.glob("*/*/result.json")}):
        folder = result.parent
        head = _json_or_none(result)
        if isinstance(head, dict) and "trial_name" in head:
            found.append(folder)
        elif isinstance(head, dict) and not _names_trial(folder):
            continue  # a job's result, or another tool's record
        elif not _is_job(folder) and not _names_trial(folder.parent):
            found.append(folder)
    return found


def _task_folder(raw: str | None, trial: Path) -> Path | None:
    if not raw:
        return None
    path = Path(raw)
    for candidate in ([path] if path.is_absolute() else [Path.cwd() / path, trial.parent.parent / path,
                                                         trial.parent.parent.parent / path]):
        if (candidate / "task.toml").is_file():
            return candidate
    return None


def _point(task_name: str, folder: Path | None) -> dict[str, Any] | None:
    meta: dict[str, Any] = {}
    if folder is not None:
        try:
            meta = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8")).get("metadata") or {}
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            meta = {}
    if not isinstance(meta, dict) or not all(isinstance(meta.get(k), str) for k in ("instance_id", "point_type", "view")) \
            or not isinstance(meta.get("event_index"), int):
        match = _NAME.match(task_name)
        if match is None or match["view"] not in HANDOFF_VIEWS:
            return None  # not a task takeover exported
        meta = {**match.groupdict(), "event_index": int(match["event_index"])}
    meta.setdefault("point_key", f"{meta['instance_id']}@{meta['point_type']}:{meta['event_index']}")
    return meta


def _seconds(timing: TimingInfo | None) -> float | None:
    if timing is None or not timing.started_at or not timing.finished_at:
        return None
    try:
        return (datetime.fromisoformat(timing.finished_at) - datetime.fromisoformat(timing.started_at)).total_seconds()
    except TypeError:  # one time with a zone, the other without: the duration is unknown
        return None


def _rate(outcome: TestOutcomes | None) -> float | None:
    if outcome is None:
        return None
    total = len(outcome.success) + len(outcome.failure)
    return len(outcome.success) / total if total else None


def _successor(agent: str | None, model: str | None) -> str:
    return " ".join(p for p in (agent or "agent", model, "(harbor)") if p)


def successor_name(result: TrialResult) -> str:
    """``<agent> <model> (harbor)`` (the model left out when the agent has none)."""
    info = result.agent_info
    model = (info.model_info.name if info and info.model_info else None) or (
        result.config.agent.model_name if result.config and result.config.agent else None)
    provider = info.model_info.provider if info and info.model_info else None
    if model and provider and not model.startswith(f"{provider}/"):
        model = f"{provider}/{model}"
    return _successor(info.name if info else None, model)


def failure_reason(error: ExceptionInfo) -> str:
    """The reason of a trial Harbor recorded an exception for: its type and the first line of its message;
    for an interrupted trial (:data:`INTERRUPTED`, no message) what happened and what to do."""
    first = next((line for line in error.exception_message.splitlines() if line.strip()), "").strip()[:300]
    if error.exception_type in INTERRUPTED and not first:
        return (f"{error.exception_type}: the trial was interrupted before it finished (Harbor recorded no "
                "message; harbor run was stopped); run it again")
    return f"{error.exception_type}: {first or '(Harbor recorded no message)'}"


def _base_row(trial: Path, successor: str, point: dict[str, Any]) -> dict[str, Any]:
    return {
        "successor": successor, "instance_id": point["instance_id"], "point_type": point["point_type"],
        "handoff_state": point.get("handoff_state"), "view": point["view"], "point_key": point["point_key"],
        "takeover_key": f"{trial.parent.name}/{trial.name}", "resolved": False,
        "agent_events": None, "prompt_tokens": None, "completion_tokens": None, "initial_prompt_chars": None,
        "initial_prompt_tokens": None, "wall_seconds": None, "exit_status": None,
        "checkpoint_diff_preserved": None, "only_source_files_changed": None,
        "fail_to_pass_rate": None, "pass_to_pass_rate": None, "run_dir": None,
    }


def trial_row(trial: Path) -> dict[str, Any] | None:
    """The report row of one Harbor trial folder (module docstring), or ``None`` for a trial of a task that
    ``takeover export harbor`` did not write.

    Raises:
        InputError: ``result.json``, the verifier's ``report.json`` or the ATIF trajectory cannot be read, or
            has a field of another type than Harbor writes (names the file and the field).
    """
    result: TrialResult = _record(trial / "result.json", TrialResult)
    raw_path = (result.task_id.path if result.task_id else None) or (
        result.config.task.path if result.config and result.config.task else None)
    folder = _task_folder(raw_path, trial)
    point = _point(result.task_name, folder)
    if point is None:
        return None
    rewards = (result.verifier_result.rewards if result.verifier_result else None) or {}
    report_path = trial / "verifier" / "report.json"
    verdict = _record(report_path, Verdict, field=point["instance_id"]) if report_path.is_file() else Verdict()
    resolved = bool(verdict.resolved) if verdict.resolved is not None else float(rewards.get("reward") or 0) >= 1
    row = _base_row(trial, successor_name(result), point)
    atif = trial / "agent" / "trajectory.json"
    if atif.is_file():
        traj = read_trajectory(atif, format="atif")
        row["agent_events"] = traj.agent_events
        if traj.usage_reported:
            row["prompt_tokens"], row["completion_tokens"] = traj.prompt_tokens, traj.completion_tokens
        row["run_dir"] = str(atif)  # the drill-down's transcript of the run
    instruction = folder / "instruction.md" if folder is not None else None
    if instruction is not None and instruction.is_file():
        try:
            row["initial_prompt_chars"] = len(read_text(instruction))
        except InputError:
            pass  # the task's own file, not the trial's record: its size is unknown
    error = result.exception_info
    timed_out = error is not None and "Timeout" in error.exception_type and bool(rewards)
    row.update(resolved=resolved and bool(rewards), wall_seconds=_seconds(result.agent_execution),
               exit_status="time_limit" if timed_out else ("environment_error" if error else "submitted"),
               fail_to_pass_rate=_rate(verdict.tests_status.get("FAIL_TO_PASS")),
               pass_to_pass_rate=_rate(verdict.tests_status.get("PASS_TO_PASS")))
    if error is not None and not timed_out or not rewards:
        row.update(status="failed", failure_kind="infrastructure", resolved=False,
                   reason=failure_reason(error) if error is not None else "the verifier gave no reward")
    else:
        row.update(status="done", failure_kind="agent" if timed_out else None, reason=None)
    return row


def unreadable_row(trial: Path, reason: str) -> dict[str, Any] | None:
    """The row of a trial whose record cannot be read (``status`` ``unreadable``, not solved), placed by what
    can still be read: the task and agent its ``result.json`` or ``config.json`` name. ``None`` when they do
    not say which exported task and agent it was.

    Raises:
        LookupError: they name a task that ``takeover export harbor`` did not write (the trial is not one of
            the report's).
    """
    result, config = _json_or_none(trial / "result.json"), _json_or_none(trial / "config.json")
    task_path = _text_at(result, "task_id", "path") or _text_at(config, "task", "path")
    task_name = _text_at(result, "task_name") or (Path(task_path).name if task_path else None)
    point = _point(task_name or "", _task_folder(task_path, trial))
    if point is None and task_name:
        raise LookupError(task_name)
    agent = _text_at(result, "agent_info", "name") or _text_at(config, "agent", "name")
    if point is None or agent is None:
        return None
    row = _base_row(trial, _successor(agent, _text_at(config, "agent", "model_name")), point)
    row.update(status="unreadable", failure_kind="infrastructure", reason=reason)
    return row


def harbor_rows(out_dir: Path | str, unreadable: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One report row per trial of an exported task under ``OUT`` (see module docstring), in folder order.

    A trial that cannot be read is a row with ``status`` ``unreadable`` when its task and agent can still be
    told, and is appended to ``unreadable`` in any case (``{"source": "Harbor trial", "path", "reason",
    "takeover_key"}``; ``takeover_key`` ``None`` when it is in no row), unless what can be read names a
    task takeover did not export. Never raises for a damaged trial.
    """
    rows = []
    for trial in harbor_trial_folders(out_dir):
        try:
            row = trial_row(trial)
        except Exception as exc:  # noqa: BLE001 - any damaged record is one unreadable trial, never a crash
            error = exc if isinstance(exc, InputError) else InputError(
                trial / "result.json", f"cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''})")
            try:
                row = unreadable_row(trial, str(error))
            except LookupError:
                continue  # a trial of another task
            if unreadable is not None:
                unreadable.append({"source": "Harbor trial", "path": error.path, "reason": str(error),
                                   "takeover_key": row["takeover_key"] if row else None})
        if row is not None:
            rows.append(row)
    return rows
