"""The report takes ``results.csv``'s columns from the result records (takeover.results): the fields of
``ResultRow``, each the field of the same name of the unit record it comes from. The column list is pinned
(``results.csv`` must not change), and a row read from unit files written as those records is a valid
``ResultRow`` holding the records' values. The section 8.3 metrics live beside the records."""

from __future__ import annotations

import json
from pathlib import Path

from takeover.report.rows import collect_rows, read_units, write_csv
from takeover.results import (
    GRADE_OUTPUT_COLUMNS,
    LABEL_COLUMNS,
    POINT_COLUMNS,
    RESULT_COLUMNS,
    RUN_OUTPUT_COLUMNS,
    STATUS_COLUMNS,
    GradeOutput,
    HandoffStateOutput,
    PlanEntry,
    ResultRow,
    TakeoverRunOutput,
    UnitLabels,
    checkpoint_diff_preserved,
    only_source_files_changed,
    pass_rate,
)

#: results.csv's columns as every earlier version wrote them (``flaky`` added last, so earlier columns keep
#: their positions).
PINNED_COLUMNS = [
    "successor", "instance_id", "point_type", "handoff_state", "view", "resolved", "agent_events", "prompt_tokens",
    "completion_tokens", "initial_prompt_chars", "initial_prompt_tokens", "wall_seconds", "exit_status",
    "checkpoint_diff_preserved", "only_source_files_changed", "fail_to_pass_rate", "pass_to_pass_rate", "status",
    "failure_kind", "reason", "flaky",
]


def test_results_csv_columns_are_the_result_row_fields_in_their_pinned_order():
    assert RESULT_COLUMNS == list(ResultRow.model_fields) == PINNED_COLUMNS
    assert RUN_OUTPUT_COLUMNS == ("agent_events", "prompt_tokens", "completion_tokens", "initial_prompt_chars",
                                  "initial_prompt_tokens", "wall_seconds", "exit_status", "checkpoint_diff_preserved",
                                  "only_source_files_changed")
    assert GRADE_OUTPUT_COLUMNS == ("resolved", "fail_to_pass_rate", "pass_to_pass_rate", "flaky")


def test_every_column_is_a_field_of_the_record_it_is_taken_from():
    sources = {LABEL_COLUMNS: UnitLabels, POINT_COLUMNS: HandoffStateOutput, RUN_OUTPUT_COLUMNS: TakeoverRunOutput,
               GRADE_OUTPUT_COLUMNS: GradeOutput}
    for columns, record in sources.items():
        assert set(columns) <= set(record.model_fields), record
    # Each column has exactly one source.
    assert sorted(c for columns in [*sources, STATUS_COLUMNS] for c in columns) == sorted(RESULT_COLUMNS)


def _unit(out: Path, stage: str, key: str, output: dict) -> None:
    path = out / "units" / stage / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"stage": stage, "key": key, "status": "done", "output": output}))


def test_a_row_read_from_record_written_unit_files_is_a_result_row_of_their_values(tmp_path):
    out = tmp_path / "exp"
    labels = UnitLabels(instance_id="acme__calc-1", point_type="after_first_source_edit", point_key="cp",
                        view="raw_trace", successor="m")
    run = TakeoverRunOutput(
        run_dir="/runs/1", exit_status="submitted", exit_detail=None, agent_events=12, llm_calls=6, prompt_tokens=900,
        completion_tokens=80, cached_tokens=None, reasoning_tokens=None, usage="reported", estimated_calls=0,
        initial_prompt_chars=1500, initial_prompt_tokens=400, wall_seconds=33.5, model_seconds=20.0,
        command_seconds=4.0, patch_path=None, patch_sha256="0" * 64, checkpoint_diff_preserved=True,
        only_source_files_changed=False)
    graded = GradeOutput(resolved=True, handoff_state="resolved_preserve", fail_to_pass_rate=1.0,
                         pass_to_pass_rate=0.5, network=False)
    point = HandoffStateOutput(handoff_state="needs_completion", resolved=False, fail_to_pass_rate=0.0,
                               pass_to_pass_rate=1.0, network=False, warnings=[])
    plan = {"stages": {
        "handoff_state": [PlanEntry(key="hs", labels=UnitLabels(instance_id="acme__calc-1", point_key="cp",
                                                                point_type="after_first_source_edit")).model_dump()],
        "takeover": [PlanEntry(key="tk", labels=labels).model_dump()],
        "grade": [PlanEntry(key="gk", labels=labels.model_copy(update={"takeover_key": "tk"})).model_dump()],
    }}
    out.mkdir()
    (out / "plan.json").write_text(json.dumps(plan))
    for stage, key, record in (("handoff_state", "hs", point), ("takeover", "tk", run), ("grade", "gk", graded)):
        _unit(out, stage, key, record.model_dump(mode="json"))

    (row,) = collect_rows(read_units(out))
    typed = ResultRow.model_validate({c: row[c] for c in RESULT_COLUMNS})
    assert typed.handoff_state == point.handoff_state  # the point's state, not the final patch's
    assert {c: getattr(typed, c) for c in RUN_OUTPUT_COLUMNS} == {c: getattr(run, c) for c in RUN_OUTPUT_COLUMNS}
    assert {c: getattr(typed, c) for c in GRADE_OUTPUT_COLUMNS} == {c: getattr(graded, c) for c in GRADE_OUTPUT_COLUMNS}
    assert (typed.successor, typed.view, typed.status, typed.failure_kind) == ("m", "raw_trace", "done", None)
    write_csv(out / "results.csv", [row])
    assert (out / "results.csv").read_text().splitlines()[0] == ",".join(PINNED_COLUMNS)


def test_the_section_8_3_metrics_of_a_takeover_run():
    checkpoint = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    kept = checkpoint.replace("+x = 2\n", "+x = 2\n+y = 3\n").replace("@@ -1 +1 @@", "@@ -1 +1,2 @@")
    undone = checkpoint.replace("+x = 2", "+x = 3")
    assert checkpoint_diff_preserved(checkpoint, kept) and not checkpoint_diff_preserved(checkpoint, undone)
    assert not checkpoint_diff_preserved(checkpoint, "") and checkpoint_diff_preserved("", "")
    tests_only = checkpoint.replace("a.py", "tests/test_a.py")
    assert only_source_files_changed(checkpoint) and only_source_files_changed("")
    assert not only_source_files_changed(tests_only)
    assert (pass_rate(["t1"], ["t2", "t3"]), pass_rate([], [])) == (1 / 3, None)
