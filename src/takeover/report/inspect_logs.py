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
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from takeover.errors import EnvironmentUnavailable, InputError

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


def _row(sample: Any, model: str, log: Path) -> dict[str, Any] | None:
    meta = sample.metadata or {}
    if not all(k in meta for k in ("instance_id", "point_type", "view", "point_key")):
        return None  # a sample of another task
    score = (sample.scores or {}).get(SCORER)
    value = score.value if score is not None and isinstance(score.value, dict) else {}
    extra = (score.metadata or {}) if score is not None else {}
    error = sample.error.message.splitlines()[0][:300] if sample.error else None
    limit = sample.limit.type if sample.limit else None
    exit_status = "environment_error" if error else _EXIT.get(limit or "", "submitted" if not limit else "step_limit")
    reason = error or extra.get("grading_error") or (None if score is not None else "not scored")
    text = sample.input if isinstance(sample.input, str) else "".join(str(getattr(m, "text", "")) for m in sample.input)
    row: dict[str, Any] = {
        "successor": f"{model} (inspect)", "instance_id": meta["instance_id"], "point_type": meta["point_type"],
        "handoff_state": meta.get("handoff_state"), "view": meta["view"], "point_key": meta["point_key"],
        "takeover_key": f"{log.name}#{sample.id}", "resolved": bool(value.get("resolved")) and reason is None,
        "agent_events": value.get("agent_events"), "prompt_tokens": value.get("prompt_tokens"),
        "completion_tokens": extra.get("completion_tokens"), "initial_prompt_chars": len(text),
        "initial_prompt_tokens": None, "wall_seconds": sample.total_time, "exit_status": exit_status,
        "checkpoint_diff_preserved": None, "only_source_files_changed": None,
        "fail_to_pass_rate": extra.get("fail_to_pass_rate"), "pass_to_pass_rate": extra.get("pass_to_pass_rate"),
    }
    if reason is not None:
        row.update(status="failed", failure_kind="infrastructure", reason=reason)
    else:
        row.update(status="done", failure_kind="agent" if exit_status != "submitted" else None, reason=None)
    return row


def inspect_rows(out_dir: Path | str) -> list[dict[str, Any]]:
    """One report row per sample of the handoff task in the logs of ``OUT`` (see module docstring), in log
    then sample order; samples of other tasks are skipped.

    Raises:
        InputError: a log that Inspect cannot read (names the file).
        EnvironmentUnavailable: there are logs and Inspect is not installed.
    """
    files = eval_log_files(out_dir)
    if not files:
        return []
    if read_eval_log is None:
        raise EnvironmentUnavailable(f"{files[0]}: reading Inspect logs needs inspect-ai: pip install 'takeover[inspect]'")
    rows = []
    for path in files:
        try:
            header = read_eval_log(str(path), header_only=True)
            samples = list(read_eval_log_samples(str(path), all_samples_required=False))
        except Exception as exc:  # noqa: BLE001 - any unreadable log is bad input naming the file
            raise InputError(path, f"not a readable Inspect log: {str(exc).splitlines()[0][:200]}") from None
        for sample in samples:
            row = _row(sample, header.eval.model, path)
            if row is not None:
                rows.append(row)
    return rows
