"""A stored unit file is reused only when its content agrees with its name (stage, key, instance)."""

from __future__ import annotations

import json
from pathlib import Path

from takeover.experiments.engine import InlineExecutor, run_units
from takeover.experiments.units import UnitSpec, check_result, load_results, unit_path
from takeover.testing.engine_units import record_call

REC = record_call


def _spec(log: Path, value: int, instance_id: str) -> UnitSpec:
    return UnitSpec(stage="demo", fn=REC, inputs={"value": value, "log": str(log), "sleep": 0.0, "resources": [],
                                                  "instance_id": instance_id})


def _calls(log: Path) -> list[int]:
    return [json.loads(line)["value"] for line in log.read_text().splitlines()] if log.exists() else []


def test_unit_file_of_another_unit_or_unreadable_is_redone_and_noted(tmp_path):
    out, log = tmp_path / "out", tmp_path / "calls.jsonl"
    a, b, c = _spec(log, 1, "acme__a-1"), _spec(log, 2, "acme__b-2"), _spec(log, 3, "acme__c-3")
    run_units([a], out, InlineExecutor())
    assert _calls(log) == [1]
    # b's file is a copy of a's (another key and instance inside); c's file is not JSON.
    unit_path(out, "demo", b.key).write_bytes(unit_path(out, "demo", a.key).read_bytes())
    unit_path(out, "demo", c.key).write_text("{not json")
    result, problem = check_result(out, "demo", b.key, "acme__b-2")
    assert result is None and a.key in problem and b.key in problem
    assert set(load_results(out, "demo")) == {a.key}  # the copy is not b's result

    results = run_units([a, b, c], out, InlineExecutor())
    assert _calls(log) == [1, 2, 3]  # a reused; b and c redone
    assert results[b.key].output["double"] == 4 and results[b.key].key == b.key
    assert results[c.key].output["double"] == 6
    rejected = [json.loads(line) for line in (out / "rejected_units.jsonl").read_text().splitlines()]
    assert [(r["stage"], r["key"]) for r in rejected] == [("demo", b.key), ("demo", c.key)]
    assert "differ from the file's" in rejected[0]["reason"] and rejected[1]["reason"].startswith("unreadable")
    # Now that the files are b's and c's own, they are reused.
    run_units([a, b, c], out, InlineExecutor())
    assert _calls(log) == [1, 2, 3]


def test_unit_file_with_the_right_key_but_another_instance_is_redone(tmp_path):
    out, log = tmp_path / "out", tmp_path / "calls.jsonl"
    a = _spec(log, 1, "acme__a-1")
    run_units([a], out, InlineExecutor())
    path = unit_path(out, "demo", a.key)
    record = json.loads(path.read_text())
    record["inputs"]["instance_id"] = "acme__z-9"
    path.write_text(json.dumps(record))
    result, problem = check_result(out, "demo", a.key, "acme__a-1")
    assert result is None and "acme__z-9" in problem
    run_units([a], out, InlineExecutor())
    assert _calls(log) == [1, 1]
    assert json.loads(path.read_text())["inputs"]["instance_id"] == "acme__a-1"
