"""The report's failure columns count what they name (docs/protocol.md section 9): a finished run whose agent
stopped without submitting is no failure, and may be solved; it is counted apart, as ``ended unsubmitted``."""

from __future__ import annotations

from takeover.report.markdown import _table, time_limited_note
from takeover.report.tables import summarize


def row(point: str, *, status: str = "done", resolved: bool = False, exit_status: str = "submitted",
        failure_kind: str | None = None) -> dict:
    return {"successor": "m", "view": "repo_only", "point_key": point, "resolved": resolved, "status": status,
            "exit_status": exit_status, "failure_kind": failure_kind, "agent_events": 10, "prompt_tokens": 100,
            "initial_prompt_chars": 50}


def test_runs_that_ended_unsubmitted_are_counted_apart_from_failures():
    rows = [
        row("p1", resolved=True),
        row("p2", resolved=True, exit_status="step_limit", failure_kind="agent"),  # solved, never submitted
        row("p3", exit_status="time_limit", failure_kind="agent"),
        row("p4", status="failed", failure_kind="infrastructure"),
        row("p5", status="failed", failure_kind="agent"),  # a unit the agent made unusable
    ]
    (entry,) = summarize(rows, resamples=10)
    assert (entry["solved"], entry["infrastructure_failures"], entry["agent_failures"], entry["unsubmitted"],
            entry["time_limited"]) == (2, 1, 1, 2, 1)
    table = _table([entry])
    assert "| infra fail | agent fail | ended unsubmitted |" in table
    assert table.rstrip().endswith("| 1 | 1 | 2 (1 time limit) | 0 |")  # the time-limited run is marked; no flaky


def test_a_view_whose_runs_the_wall_time_limit_ended_is_named_under_the_table():
    rows = [row("p1", exit_status="time_limit", failure_kind="agent") | {"view": "raw_trace"},
            row("p1"), row("p2") | {"view": "raw_trace"}, row("p2")]
    summary = summarize(rows, resamples=10)
    assert [(e["view"], e["time_limited"]) for e in summary] == [("repo_only", 0), ("raw_trace", 1)]
    assert time_limited_note(summary) == (
        "Time-limited runs, ended by their wall-time limit: raw_trace (m): 1 of 2. Their events, tokens and Δ "
        "columns show where the limit cut them, not what their view did.\n")
    assert time_limited_note(summary[:1]) == ""  # none: no sentence
