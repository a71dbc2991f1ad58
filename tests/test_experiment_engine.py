"""The unit-of-work engine (resume, redo on changed inputs, failures, caps, executors) and the
experiment file (errors naming the file and the TOML key)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from conftest import DATA
from prerequisites import requires

from takeover.errors import InputError
from takeover.experiments import ExperimentConfig, load_experiment
from takeover.experiments.engine import InlineExecutor, ProcessExecutor, make_executor, run_units
from takeover.experiments.progress import ProgressLines
from takeover.experiments.units import UnitResult, UnitSpec, unit_path
from takeover.testing.engine_units import fail_unless_file, record_call

REC = record_call
FAIL = fail_unless_file


def _calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _specs(log: Path, values, *, sleep=0.0, resources=()) -> list[UnitSpec]:
    return [
        UnitSpec(stage="demo", fn=REC, inputs={"value": v, "log": str(log), "sleep": sleep,
                                              "resources": list(resources)},
                 labels={"v": v}, resources=list(resources))
        for v in values
    ]


def test_units_resume_and_redo_changed_inputs(tmp_path):
    out, log = tmp_path / "out", tmp_path / "calls.jsonl"
    events = []
    results = run_units(_specs(log, [1, 2, 3]), out, InlineExecutor(), progress=events.append)
    assert [r.output["double"] for r in results.values()] == [2, 4, 6]
    assert [r.prompt_tokens for r in results.values()] == [1, 2, 3]
    assert len(_calls(log)) == 3
    spec = _specs(log, [2])[0]
    stored = UnitResult.model_validate_json(unit_path(out, "demo", spec.key).read_text())
    assert stored.status == "done" and stored.labels == {"v": 2} and stored.seconds >= 0
    assert [e.kind for e in events] == ["planned"] + ["started", "finished"] * 3
    mtimes = {p.name: p.stat().st_mtime_ns for p in (out / "units" / "demo").iterdir()}

    # Same plan again: nothing runs, the stored results come back unchanged.
    events.clear()
    again = run_units(_specs(log, [1, 2, 3]), out, InlineExecutor(), progress=events.append)
    assert len(_calls(log)) == 3
    assert [r.output["double"] for r in again.values()] == [2, 4, 6]
    assert events[0].reused == 3 and events[0].reused_tokens == 1 + 2 + 3 + 3 and len(events) == 1
    # One changed input (3 -> 4): only that unit runs.
    run_units(_specs(log, [1, 2, 4]), out, InlineExecutor())
    assert [c["value"] for c in _calls(log)] == [1, 2, 3, 4]
    assert all((out / "units" / "demo" / n).stat().st_mtime_ns == t for n, t in mtimes.items())


def test_failures_are_recorded_with_kind_and_retried_only_on_request(tmp_path):
    out, ok = tmp_path / "out", tmp_path / "ok"
    specs = [
        UnitSpec(stage="s", fn=FAIL, inputs={"ok_file": str(ok), "kind": kind}, labels={"kind": kind})
        for kind in ("infrastructure", "agent", "crash")
    ]
    first = list(run_units(specs, out, InlineExecutor()).values())
    assert [r.status for r in first] == ["failed"] * 3
    assert [r.failure_kind for r in first] == ["infrastructure", "agent", "infrastructure"]
    assert first[0].reason == f"{ok} is missing"
    assert first[2].reason.startswith("RuntimeError: boom at engine_units.py:")
    ok.write_text("")
    # A plain re-run keeps the failures (nothing is redone behind the user's back) ...
    assert [r.status for r in run_units(specs, out, InlineExecutor()).values()] == ["failed"] * 3
    # ... and --retry failed redoes exactly those.
    assert [r.status for r in run_units(specs, out, InlineExecutor(), retry_failed=True).values()] == ["done"] * 3


def _max_overlap(calls: list[dict], resource: str | None = None) -> int:
    chosen = [c for c in calls if resource is None or resource in c["resources"]]
    points = sorted([(c["start"], 1) for c in chosen] + [(c["end"], -1) for c in chosen], key=lambda x: (x[0], x[1]))
    best = cur = 0
    for _, d in points:
        cur += d
        best = max(best, cur)
    return best


def test_process_executor_respects_resource_caps(tmp_path):
    out, log = tmp_path / "out", tmp_path / "calls.jsonl"
    specs = _specs(log, [1, 2, 3, 4], sleep=0.4, resources=["env"]) + _specs(log, [5, 6], sleep=0.4)
    # Units 5 and 6 wait for each other to start: they can only finish if they run at the same time,
    # however slowly the worker processes start on a loaded machine.
    (tmp_path / "meet").mkdir()
    for spec, peer in zip(specs[4:], (6, 5), strict=True):
        spec.inputs.update(meet=str(tmp_path / "meet"), peers=[peer])
    ex = ProcessExecutor(3)
    try:
        results = run_units(specs, out, ex, caps={"env": 1})
    finally:
        ex.close()
    assert sorted(r.output["double"] for r in results.values()) == [2, 4, 6, 8, 10, 12]
    calls = _calls(log)
    assert _max_overlap(calls, "env") == 1  # the environment cap holds
    assert _max_overlap(calls) >= 2  # ... while other units run beside it
    assert len({c["pid"] for c in calls}) >= 2


@pytest.mark.slow
@requires("ray")
def test_ray_executor_runs_the_same_units(tmp_path):
    out, log = tmp_path / "out", tmp_path / "calls.jsonl"
    ex = make_executor("ray", 2)
    try:
        results = run_units(_specs(log, [1, 2, 3], sleep=0.1), out, ex, caps={"model": 1})
    finally:
        ex.close()
    assert [r.output["double"] for r in results.values()] == [2, 4, 6]
    assert all(unit_path(out, "demo", k).exists() for k in results)
    # Resumable across executors: the inline executor finds everything done.
    again = run_units(_specs(log, [1, 2, 3], sleep=0.1), out, InlineExecutor())
    assert len(_calls(log)) == 3 and list(again) == list(results)


# --- experiment file ---------------------------------------------------------------------------------

GOOD = """
out_dir = "out"
views = ["repo_only", "raw_trace"]
[dataset]
path = "tasks.jsonl"
instance_ids = ["a__b-1"]
[predecessor]
trajectories = ["trajs/"]
[[successors]]
model = "scripted"
base_url = "http://127.0.0.1:9/v1"
[execution]
workers = 2
"""


def test_load_experiment_resolves_paths_and_writes_defaults(tmp_path):
    f = tmp_path / "exp.toml"
    f.write_text(GOOD)
    c = load_experiment(f)
    assert c.out == tmp_path / "out"
    assert c.trajectory_paths == [tmp_path / "trajs"]
    assert c.dataset_path == tmp_path / "tasks.jsonl"
    assert c.notes_model.model == "scripted"  # no predecessor model: the first successor writes notes
    r = c.resolved()
    assert r["execution"]["model_concurrency"] == 2 and r["limits"]["step_limit"] == 500
    assert r["point_types"] == ["after_first_source_edit", "after_first_verification_result",
                                "after_first_post_failure_edit"]
    # Constructible in Python too (what the quickstart does).
    c2 = ExperimentConfig(out_dir=str(tmp_path / "o"), dataset={"path": "d.jsonl"},
                          predecessor={"trajectories": ["t"]}, successors=[{"model": "m"}])
    assert c2.views == ["repo_only", "raw_trace", "summary_notes", "structured_notes"]


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        (GOOD.replace("workers = 2", "workers = 0"), "execution.workers", "greater than or equal to 1"),
        (GOOD.replace('base_url = "http', 'base_ur = "http'), "successors[0].base_ur", "unknown key"),
        (GOOD.replace('"raw_trace"', '"raw_trail"'), "views[1]", "unknown view 'raw_trail'; the views are"),
        (GOOD.replace('trajectories = ["trajs/"]', ""), "predecessor", "exactly one of"),
        (GOOD.replace('out_dir = "out"', ""), "out_dir", "required key is missing"),
    ],
)
def test_bad_experiment_files_name_file_and_key(tmp_path, text, field, reason):
    f = tmp_path / "exp.toml"
    f.write_text(text)
    with pytest.raises(InputError) as exc:
        load_experiment(f)
    assert exc.value.path == str(f) and exc.value.field == field
    assert reason in exc.value.reason


def test_bad_toml_and_missing_file(tmp_path):
    f = tmp_path / "exp.toml"
    f.write_text("out_dir = \n")
    with pytest.raises(InputError, match="not valid TOML"):
        load_experiment(f)
    with pytest.raises(InputError, match="experiment file not found"):
        load_experiment(tmp_path / "nope.toml")


# --- selection over the real dataset and imported real trajectories ---------------------------------


@requires("shared:trajectories/mini-swe-agent", "shared:swebench_verified.jsonl")
def test_import_index_and_selection_over_real_trajectories(tmp_path):
    data_dir = DATA
    from takeover.experiments.selection import index_trajectories
    from takeover.experiments.selection import select_source_tasks as select

    folder = data_dir / "trajectories" / "mini-swe-agent"
    expected = sorted(p.stem for p in folder.glob("*__*.json"))
    config = ExperimentConfig(
        out_dir=str(tmp_path / "out"),
        dataset={"path": str(data_dir / "swebench_verified.jsonl"), "difficulties": [], "limit": 100,
                 "repos": ["psf/requests", "pallets/flask", "pytest-dev/pytest", "sympy/sympy"]},
        predecessor={"trajectories": [str(folder)]},
        successors=[{"model": "m"}],
    )
    notes: list[str] = []
    index = index_trajectories(config, notes)
    assert sorted(index) == expected  # every run file, and nothing else
    assert all(index[i].format == "mini-swe-agent" and index[i].file.endswith(f"{i}.json") for i in index)
    assert any("eval_reports" in n and "skipped" in n for n in notes)  # summaries beside the runs are skipped
    # The index is cached by file content: a second pass parses nothing and gives the same answer.
    assert len(list((tmp_path / "out" / "work" / "import_index").glob("*.json"))) >= len(expected)
    assert index_trajectories(config, []) == index
    tasks = select(config, index)
    assert sorted(t.instance_id for t in tasks) == [i for i in expected if not i.startswith("django")]
    # The seeded order is reproducible and explicit ids win over the selection.
    assert [t.instance_id for t in select(config, index)] == [t.instance_id for t in tasks]
    explicit = config.model_copy(update={"dataset": config.dataset.model_copy(
        update={"instance_ids": ["psf__requests-1766"]})})
    assert [t.instance_id for t in select(explicit, index)] == ["psf__requests-1766"]
    bad = config.model_copy(update={"dataset": config.dataset.model_copy(update={"instance_ids": ["nope-1"]})})
    with pytest.raises(InputError, match="instances not in the dataset: nope-1"):
        select(bad, index)


def test_follow_up_units_are_planned_as_their_upstream_unit_ends_and_reused_later(tmp_path):
    out, log = tmp_path / "out", tmp_path / "calls.jsonl"
    first = [UnitSpec(stage="a", fn=REC, inputs={"value": v, "log": str(log)}, labels={"v": v}) for v in (1, 2)]

    def follow(spec, result):
        if spec.stage != "a":
            return [], []
        nxt = UnitSpec(stage="b", fn=REC, inputs={"value": result.output["double"], "log": str(log)},
                       labels={"v": result.output["double"]})
        if spec.inputs["value"] == 2:
            return [], [(nxt, "a said no")]
        return [nxt], []

    events = []
    results = run_units(first, out, InlineExecutor(), progress=events.append, follow=follow, following={"b": 2})
    assert [(r.stage, r.output["double"]) for r in results.values()] == [("a", 2), ("a", 4), ("b", 4)]
    assert [c["value"] for c in _calls(log)] == [1, 2, 2]  # b(2) was queued when a(1) ended
    assert [(e.kind, e.stage) for e in events[:2]] == [("planned", "a"), ("planned", "b")]
    assert events[1].total == 2
    blocked = [e for e in events if e.blocked]
    assert len(blocked) == 1 and blocked[0].stage == "b" and blocked[0].result.reason == "a said no"
    # Again: everything stored is reused, the follow-up units included; nothing runs.
    events.clear()
    again = run_units(first, out, InlineExecutor(), progress=events.append, follow=follow, following={"b": 2})
    assert list(again) == list(results) and len(_calls(log)) == 3
    assert [e.kind for e in events].count("started") == 0
    assert [(e.stage, e.reused_result) for e in events if e.kind == "finished" and not e.blocked] == [("b", True)]
    # Printed: the follow-up stage's plan never claims "0 reused" before its upstream units have ended.
    stream = io.StringIO()
    run_units(first, out, InlineExecutor(), progress=ProgressLines(stream=stream), follow=follow, following={"b": 2})
    lines = [line.split(" ", 1)[1] for line in stream.getvalue().splitlines()]
    assert "a: 2 unit(s) planned, 2 reused, 0 to run" in lines
    assert [line for line in lines if line.startswith("b: 2 unit(s) planned")] == [
        "b: 2 unit(s) planned as the stage before ends (stored ones are reused)"]
    assert any(line.startswith("b 1/2 done, reused") for line in lines), lines
