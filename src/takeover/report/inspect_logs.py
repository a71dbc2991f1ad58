"""Takeover runs from Inspect AI logs: the ``.eval`` logs of ``inspect eval takeover/handoff`` as rows of the
report, beside the rows of takeover's own runs (docs/protocol.md sections 8.5 and 9).

Logs are read from ``OUT/*.eval`` and ``OUT/logs/*.eval`` (Inspect's default log folder), one sample at a
time. Each sample of the handoff task is one takeover run: its metadata (:data:`SAMPLE_METADATA`, written
by :mod:`takeover.inspect_task`) names the point and the view, its score the outcome. The row's
``successor`` is the log's model followed by ``(inspect)``, so the tables keep Inspect's runs apart from
takeover's own runs of the same model while computing the same statistics over both.

- ``status`` ``done`` for a scored sample whose grading finished; ``failed`` (``infrastructure``) for a
  sample that errored or whose grading did not finish, with the reason; a sample stopped by a limit is
  ``done`` with ``failure_kind`` ``agent``.
- ``exit_status`` from Inspect's limit: ``message`` and ``turn`` -> ``step_limit``, ``token`` ->
  ``token_limit``, ``time`` and ``working`` -> ``time_limit``, ``cost`` -> ``cost_limit``; an error ->
  ``environment_error``; otherwise ``submitted``.
- ``initial_prompt_chars``: characters of the sample's input (the takeover prompt); ``wall_seconds``:
  Inspect's ``total_time``. Columns Inspect does not give (``checkpoint_diff_preserved``,
  ``only_source_files_changed``, ``initial_prompt_tokens``) are empty.

Reading needs the ``inspect`` extra; without it a folder that holds ``.eval`` logs is bad input saying so.

A damaged log never crashes the report and is never left out without a word (docs/protocol.md section 9): a
log Inspect cannot read (cut short, not a log), or one whose samples stop being readable part-way, is listed
as *unreadable* with the file and the reason (the samples read before stay rows); a sample of the handoff
task whose metadata or score has a field of another type than the task writes (:class:`SampleFields`) is a
row with ``status`` ``unreadable`` (not solved), listed too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from takeover.errors import EnvironmentUnavailable, InputError
from takeover.results import RESULT_COLUMNS

try:  # Inspect is an optional extra: only folders holding its logs need it
    from inspect_ai.log import read_eval_log, read_eval_log_samples
except ImportError:  # pragma: no cover - exercised where the extra is not installed
    read_eval_log = read_eval_log_samples = None

#: Metadata keys of a handoff sample (the contract between the task and this reader).
SAMPLE_METADATA = ("instance_id", "repo", "base_commit", "point_type", "event_index", "view", "handoff_state",
                   "checkpoint_dir", "point_key")
#: The scorer's value keys: ``resolved`` (1.0 or 0.0), ``agent_events``, ``prompt_tokens`` (tokens).
SCORE_VALUES = ("resolved", "agent_events", "prompt_tokens")
SCORER = "handoff_scorer"
_EXIT = {"message": "step_limit", "turn": "step_limit", "token": "token_limit", "time": "time_limit",
         "working": "time_limit", "cost": "cost_limit"}


def point_key(instance_id: str, point_type: str, event_index: int) -> str:
    """The key that pairs the views of one handoff point: instance, point type (or ``event``) and index."""
    return f"{instance_id}@{point_type}:{event_index}"


def eval_log_files(out_dir: Path | str) -> list[Path]:
    """The ``.eval`` logs of ``OUT`` and ``OUT/logs``, sorted."""
    out = Path(out_dir)
    return sorted([*out.glob("*.eval"), *(out / "logs").glob("*.eval")])


class _Fields(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


class SampleMetadata(_Fields):
    """The metadata of a handoff sample that the report reads (:data:`SAMPLE_METADATA`)."""

    instance_id: str
    point_type: str
    view: str
    point_key: str
    handoff_state: str | None = None


class ScoreValue(_Fields):
    """The scorer's value (:data:`SCORE_VALUES`): ``resolved`` 1.0 or 0.0, counts in events and tokens."""

    resolved: float | None = None
    agent_events: int | None = None
    prompt_tokens: int | None = None


class ScoreMetadata(_Fields):
    completion_tokens: int | None = None
    fail_to_pass_rate: float | None = None
    pass_to_pass_rate: float | None = None
    grading_error: str | None = None


def _validated(model: type[_Fields], value: Any, where: str) -> Any:
    try:
        return model.model_validate(value if value is not None else {})
    except ValidationError as exc:
        error = InputError.from_validation("", exc)
        raise ValueError(f"{where}{'.' + error.field if error.field else ''}: {error.reason}") from None


def _row(sample: Any, model: str, log: Path) -> dict[str, Any] | None:
    """The row of one sample, ``None`` for a sample of another task.

    Raises:
        ValueError: the sample's metadata or score has a field of another type than the task writes.
    """
    raw = sample.metadata or {}
    if not all(k in raw for k in ("instance_id", "point_type", "view", "point_key")):
        return None  # a sample of another task
    meta = _validated(SampleMetadata, raw, "metadata")
    score = (sample.scores or {}).get(SCORER)
    value = _validated(ScoreValue, score.value if score is not None and isinstance(score.value, dict) else {},
                       f"scores.{SCORER}.value")
    extra = _validated(ScoreMetadata, score.metadata if score is not None else {}, f"scores.{SCORER}.metadata")
    error = sample.error.message.strip().splitlines()[0][:300] if sample.error and sample.error.message.strip() else (
        "the sample ended with an error Inspect recorded without a message" if sample.error else None)
    limit = sample.limit.type if sample.limit else None
    exit_status = "environment_error" if error else _EXIT.get(limit or "", "submitted" if not limit else "step_limit")
    reason = error or extra.grading_error or (None if score is not None else "not scored")
    text = sample.input if isinstance(sample.input, str) else "".join(str(getattr(m, "text", "")) for m in sample.input)
    row: dict[str, Any] = {
        "successor": f"{model} (inspect)", "instance_id": meta.instance_id, "point_type": meta.point_type,
        "handoff_state": meta.handoff_state, "view": meta.view, "point_key": meta.point_key,
        "takeover_key": _key(log, sample), "resolved": bool(value.resolved) and reason is None,
        "agent_events": value.agent_events, "prompt_tokens": value.prompt_tokens,
        "completion_tokens": extra.completion_tokens, "initial_prompt_chars": len(text),
        "initial_prompt_tokens": None, "wall_seconds": sample.total_time, "exit_status": exit_status,
        "checkpoint_diff_preserved": None, "only_source_files_changed": None,
        "fail_to_pass_rate": extra.fail_to_pass_rate, "pass_to_pass_rate": extra.pass_to_pass_rate,
    }
    if reason is not None:
        row.update(status="failed", failure_kind="infrastructure", reason=reason)
    else:
        row.update(status="done", failure_kind="agent" if exit_status != "submitted" else None, reason=None)
    return row


def _unreadable_sample(sample: Any, model: str, log: Path, reason: str) -> dict[str, Any] | None:
    """The row of a sample whose fields cannot be read, placed by its metadata when that much reads."""
    meta = sample.metadata if isinstance(sample.metadata, dict) else {}
    if not all(isinstance(meta.get(k), str) for k in ("instance_id", "point_type", "view", "point_key")):
        return None
    row: dict[str, Any] = {c: None for c in RESULT_COLUMNS}
    row.update(successor=f"{model} (inspect)", instance_id=meta["instance_id"], point_type=meta["point_type"],
               view=meta["view"], point_key=meta["point_key"], takeover_key=_key(log, sample),
               resolved=False, status="unreadable", failure_kind="infrastructure", reason=reason)
    return row


def _key(log: Path, sample: Any) -> str:
    """The run's ``takeover_key``: ``<log>#<sample id>``, and its epoch after ``/`` when Inspect ran several."""
    epoch = sample.epoch if isinstance(getattr(sample, "epoch", None), int) else 1
    return f"{log.name}#{sample.id}" + (f"/epoch-{epoch}" if epoch > 1 else "")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


def inspect_rows(out_dir: Path | str, unreadable: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One report row per sample of the handoff task in the logs of ``OUT`` (see module docstring), in log
    then sample order; samples of other tasks are skipped.

    A log that cannot be read, whole or from some sample on, and a sample whose fields cannot be read, are
    appended to ``unreadable`` (``{"source": "Inspect log", "path", "reason", "takeover_key"}``); an
    unreadable sample whose metadata names its point and view is also a row with ``status``
    ``unreadable``. Never raises for a damaged log.

    Raises:
        EnvironmentUnavailable: there are logs and Inspect is not installed.
    """
    files = eval_log_files(out_dir)
    if not files:
        return []
    if read_eval_log is None:
        raise EnvironmentUnavailable(f"{files[0]}: reading Inspect logs needs inspect-ai: pip install 'takeover[inspect]'")
    found: list[dict[str, Any]] = []
    rows = []

    def note(path: Path, reason: str, key: str | None = None) -> None:
        found.append({"source": "Inspect log", "path": str(path), "reason": f"{path}: {reason}", "takeover_key": key})

    for path in files:
        try:
            header = read_eval_log(str(path), header_only=True)
            model = str(header.eval.model)
        except Exception as exc:  # noqa: BLE001 - any unreadable log is one unreadable record naming the file
            note(path, f"not a readable Inspect log ({_first_line(exc)})")
            continue
        read = 0
        try:
            for sample in read_eval_log_samples(str(path), all_samples_required=False):
                read += 1
                try:
                    row = _row(sample, model, path)
                except (ValueError, TypeError, AttributeError) as exc:
                    reason = f"sample {sample.id}: {_first_line(exc)}"
                    row = _unreadable_sample(sample, model, path, f"{path}: {reason}")
                    note(path, reason, row["takeover_key"] if row else None)
                if row is not None:
                    rows.append(row)
        except Exception as exc:  # noqa: BLE001 - the samples read so far stay; the rest is unreadable
            note(path, f"samples after the {read} read cannot be read ({_first_line(exc)})")
    if unreadable is not None:
        unreadable.extend(found)
    return rows
