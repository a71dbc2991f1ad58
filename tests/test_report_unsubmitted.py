"""The report's failure columns count what they name (docs/protocol.md section 9): a finished run whose agent
stopped without submitting is no failure, and may be solved; it is counted apart, as ``ended unsubmitted``."""

from __future__ import annotations

from takeover.report.markdown import _table
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
    assert (entry["solved"], entry["infrastructure_failures"], entry["agent_failures"], entry["unsubmitted"]) == (2, 1, 1, 2)
    table = _table([entry])
    assert "| infra fail | agent fail | ended unsubmitted |" in table
    assert table.rstrip().endswith("| 1 | 1 | 2 |")
