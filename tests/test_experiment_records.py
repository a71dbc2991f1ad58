"""What stages hand each other is typed (takeover.results): unit specs carry their function and repository
source, a failed unit's tokens are a field of its failure, an environment that could not be built blocks
the task's points, and the environment stage reports what it built."""

from __future__ import annotations

import json

import pytest
from conftest import CALC_BUGGY, CALC_ENV_SPEC, make_repo

from takeover._util.io import stable_form
from takeover.errors import TakeoverError
from takeover.experiments import ExperimentConfig
from takeover.experiments.engine import InlineExecutor, run_units
from takeover.experiments.planning import Planner, stages_of
from takeover.experiments.stages import environment_unit, import_unit
from takeover.experiments.units import UnitContext, UnitFailure, UnitResult, UnitSpec
from takeover.results import EnvironmentOutput, PlanEntry, TaskInputs, TrajectoryFile, UnitLabels
from takeover.sources.repos import RepoSource
from takeover.testing.engine_units import fail_unless_file, record_call


def test_a_unit_failure_is_a_takeover_error_and_its_tokens_reach_the_unit_file(tmp_path):
    assert issubclass(UnitFailure, TakeoverError)
    failure = UnitFailure("no", "agent", prompt_tokens=7, completion_tokens=2)
    assert (failure.reason, failure.kind, failure.prompt_tokens, failure.completion_tokens) == ("no", "agent", 7, 2)
    spec = UnitSpec(stage="s", fn=fail_unless_file, inputs={"ok_file": str(tmp_path / "nope"), "prompt_tokens": 11})
    result = run_units([spec], tmp_path / "out", InlineExecutor())[spec.key]
    assert result.status == "failed" and result.prompt_tokens == 11 and result.completion_tokens == 0


def test_a_spec_names_its_function_and_keeps_records_as_json(tmp_path):
    labels = UnitLabels(instance_id="a__b-1", view="raw_trace")
    spec = UnitSpec(stage="demo", fn=record_call, inputs=TaskInputs(instance_id="a__b-1", task="t", task_sha256="s"),
                    labels=labels, repo_source=RepoSource(tmp_path, offline=True))
    assert spec.fn == "takeover.testing.engine_units:record_call" and spec.function is record_call
    assert spec.labels == {"instance_id": "a__b-1", "view": "raw_trace"}  # unset labels are not written
    assert spec.inputs == {"instance_id": "a__b-1", "task": "t", "task_sha256": "s"}
    again = UnitSpec.model_validate_json(spec.model_dump_json())
    assert again.key == spec.key and again.repo_source == spec.repo_source
    with pytest.raises(ValueError, match=r"\(a name\), not the function"):
        again.function  # noqa: B018 - read back from JSON, a spec has only the function's name
    entry = PlanEntry(key=spec.key, labels=labels)
    assert stable_form(entry) == {"key": spec.key, "labels": spec.labels}  # as plan.json has it


def _config(tmp_path, **execution) -> ExperimentConfig:
    return ExperimentConfig(out_dir=str(tmp_path / "out"), dataset={"path": "d.jsonl"},
                            predecessor={"trajectories": ["t"]}, successors=[{"model": "m"}], execution=execution)


def _result(spec: UnitSpec, status: str, output: dict | None = None, reason: str | None = None) -> UnitResult:
    return UnitResult(stage=spec.stage, key=spec.key, status=status, reason=reason, inputs=spec.inputs,
                      output=output or {}, started_at="2026-01-01T00:00:00+00:00", seconds=0.0)


def test_an_environment_that_was_not_built_blocks_the_points_of_its_task(tmp_path):
    config = _config(tmp_path, prepare_environments=True)
    assert stages_of(config)[0] == "environment" and stages_of(_config(tmp_path))[0] == "predecessor"
    files = {i: TaskInputs(instance_id=i, task=f"{i}.json", task_sha256="s") for i in ("a__b-1", "a__b-2")}
    planner = Planner(config, files, RepoSource(offline=True))

    class Task:
        def __init__(self, instance_id):
            self.instance_id = instance_id

    tasks = [Task("a__b-1"), Task("a__b-2")]
    envs = planner.environments(tasks)
    index = {i: TrajectoryFile(file=f"{i}.traj.json", sha256="h", format="mini-swe-agent") for i in files}
    preds = planner.predecessors(tasks, index, {})
    imported = {"file": "f", "record": None, "format": "mini-swe-agent", "agent_events": 2, "prompt_tokens": None,
                "completion_tokens": None, "exit_status": None, "final_patch_files": []}
    pred_results = {p.key: _result(p, "done", imported) for p in preds}
    env_results = {envs[0].key: _result(envs[0], "failed", reason="no Python 2.5"),
                   envs[1].key: _result(envs[1], "done")}
    specs, blocked = planner.points(preds, pred_results, env_results)
    assert [s.labels["instance_id"] for s in specs] == ["a__b-2"]
    assert len(blocked) == 1 and blocked[0][1] == f"environment unit {envs[0].key} failed: no Python 2.5"
    assert all(s.repo_source == RepoSource(offline=True) for s in specs + envs + preds)


def test_the_environment_unit_says_what_it_prepared(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    _, sha = make_repo(tmp_path / "src" / "calc", {"calc.py": CALC_BUGGY}, bare_mirror=tmp_path / "m" / "acme__calc.git")
    task_file = tmp_path / "task.json"
    task_file.write_text(json.dumps({"instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": sha,
                                     "problem_statement": "x", "version": "0.1", "takeover_env_spec": CALC_ENV_SPEC}))
    work = tmp_path / "work"
    work.mkdir()
    ctx = UnitContext(out_dir=str(tmp_path), work_dir=str(work), key="k", stage="environment",
                      repo_source=RepoSource(tmp_path / "m", offline=True))
    out = EnvironmentOutput.model_validate(environment_unit(
        {"instance_id": "acme__calc-1", "task": str(task_file), "task_sha256": "s"}, ctx).output)
    assert (out.repo, out.version, out.cached) == ("acme/calc", "0.1", True) and out.interpreter_version
    assert list(work.iterdir()) == []  # the scratch checkout is gone


def test_an_imported_trajectory_that_changed_fails_its_unit(tmp_path):
    traj = tmp_path / "run.json"
    traj.write_text("{}")
    inputs = {"instance_id": "a__b-1", "task": "t", "task_sha256": "s",
              "trajectory": {"file": str(traj), "record": None, "sha256": "0" * 64, "format": "mini-swe-agent"}}
    ctx = UnitContext(out_dir=str(tmp_path), work_dir=str(tmp_path), key="k", stage="predecessor")
    with pytest.raises(UnitFailure, match="changed since it was indexed"):
        import_unit(inputs, ctx)
