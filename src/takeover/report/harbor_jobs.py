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
- ``wall_seconds``: the agent's execution time; ``initial_prompt_chars``: the task's ``instruction.md``.
- ``run_dir`` (not a column of ``results.csv``): the ATIF trajectory, whose steps the HTML drill-down shows.
"""

from __future__ import annotations

import json
import re
import tomllib
from datetime import datetime
from pathlib import Path
from typing import Any

from takeover.errors import InputError
from takeover.trajectories import read_trajectory
from takeover.vocabulary import VIEWS

_NAME = re.compile(r"^(?P<instance_id>.+)__(?P<point_type>[a-z_]+)-(?P<event_index>\d+)__(?P<view>[a-z_]+)$")


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(path, f"not a readable Harbor file: {exc}") from None


def harbor_trial_folders(out_dir: Path | str) -> list[Path]:
    """The Harbor trial folders in ``OUT/*/`` and ``OUT/*/*/`` (sorted): those whose ``result.json`` names a
    ``trial_name``."""
    out = Path(out_dir)
    found = []
    for result in sorted([*out.glob("*/result.json"), *out.glob("*/*/result.json")]):
        try:
            head = json.loads(result.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(head, dict) and "trial_name" in head and "task_name" in head:
            found.append(result.parent)
    return found


def _task_folder(result: dict, trial: Path) -> Path | None:
    raw = ((result.get("task_id") or {}).get("path") or ((result.get("config") or {}).get("task") or {}).get("path"))
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
        except (OSError, tomllib.TOMLDecodeError):
            meta = {}
    if not {"instance_id", "point_type", "event_index", "view"} <= set(meta):
        match = _NAME.match(task_name)
        if match is None or match["view"] not in VIEWS:
            return None  # not a task takeover exported
        meta = {**match.groupdict(), "event_index": int(match["event_index"])}
    meta.setdefault("point_key", f"{meta['instance_id']}@{meta['point_type']}:{meta['event_index']}")
    return meta


def _seconds(timing: dict | None) -> float | None:
    if not timing or not timing.get("started_at") or not timing.get("finished_at"):
        return None
    return (datetime.fromisoformat(timing["finished_at"]) - datetime.fromisoformat(timing["started_at"])).total_seconds()


def _rate(outcome: dict | None) -> float | None:
    if not outcome:
        return None
    total = len(outcome.get("success") or []) + len(outcome.get("failure") or [])
    return len(outcome.get("success") or []) / total if total else None


def successor_name(result: dict) -> str:
    """``<agent> <model> (harbor)`` (the model left out when the agent has none)."""
    agent = result.get("agent_info") or {}
    model = (agent.get("model_info") or {}).get("name") or ((result.get("config") or {}).get("agent") or {}).get("model_name")
    provider = (agent.get("model_info") or {}).get("provider")
    if model and provider and not model.startswith(f"{provider}/"):
        model = f"{provider}/{model}"
    return " ".join(p for p in (agent.get("name") or "agent", model, "(harbor)") if p)


def trial_row(trial: Path) -> dict[str, Any] | None:
    """The report row of one Harbor trial folder (module docstring), or ``None`` for a trial of a task that
    ``takeover export harbor`` did not write.

    Raises:
        InputError: ``result.json``, the verifier's ``report.json`` or the ATIF trajectory cannot be read
            (names the file).
    """
    result = _load(trial / "result.json")
    folder = _task_folder(result, trial)
    point = _point(str(result.get("task_name") or ""), folder)
    if point is None:
        return None
    verifier = result.get("verifier_result") or {}
    rewards = verifier.get("rewards") or {}
    report_path = trial / "verifier" / "report.json"
    verdict = (_load(report_path).get(point["instance_id"]) or {}) if report_path.is_file() else {}
    tests = verdict.get("tests_status") or {}
    resolved = bool(verdict["resolved"]) if "resolved" in verdict else float(rewards.get("reward") or 0) >= 1
    events = prompt = completion = None
    atif = trial / "agent" / "trajectory.json"
    if atif.is_file():
        traj = read_trajectory(atif, format="atif")
        events = traj.agent_events
        if traj.usage_reported:
            prompt, completion = traj.prompt_tokens, traj.completion_tokens
    instruction = folder / "instruction.md" if folder is not None else None
    error = result.get("exception_info") or None
    timed_out = bool(error) and "Timeout" in str(error.get("exception_type")) and bool(rewards)
    row: dict[str, Any] = {
        "successor": successor_name(result), "instance_id": point["instance_id"], "point_type": point["point_type"],
        "handoff_state": point.get("handoff_state"), "view": point["view"], "point_key": point["point_key"],
        "takeover_key": f"{trial.parent.name}/{trial.name}", "resolved": resolved and bool(rewards),
        "agent_events": events, "prompt_tokens": prompt, "completion_tokens": completion,
        "initial_prompt_chars": len(instruction.read_text(encoding="utf-8")) if instruction and instruction.is_file()
        else None, "initial_prompt_tokens": None, "wall_seconds": _seconds(result.get("agent_execution")),
        "exit_status": "time_limit" if timed_out else ("environment_error" if error else "submitted"),
        "checkpoint_diff_preserved": None, "only_source_files_changed": None,
        "fail_to_pass_rate": _rate(tests.get("FAIL_TO_PASS")), "pass_to_pass_rate": _rate(tests.get("PASS_TO_PASS")),
        "run_dir": str(atif) if atif.is_file() else None,  # the drill-down's transcript of the run
    }
    if error and not timed_out or not rewards:
        reason = (f"{error.get('exception_type')}: {str(error.get('exception_message') or '').splitlines()[0][:300]}"
                  if error else "the verifier gave no reward")
        row.update(status="failed", failure_kind="infrastructure", reason=reason, resolved=False)
    else:
        row.update(status="done", failure_kind="agent" if timed_out else None, reason=None)
    return row


def harbor_rows(out_dir: Path | str) -> list[dict[str, Any]]:
    """One report row per trial of an exported task under ``OUT`` (see module docstring), in folder order.

    Raises:
        InputError: as :func:`trial_row`.
    """
    rows = []
    for trial in harbor_trial_folders(out_dir):
        row = trial_row(trial)
        if row is not None:
            rows.append(row)
    return rows
