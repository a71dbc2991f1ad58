"""One name per setting, from the flag to the Python keyword to the experiment file's key and the records:
the model's name is ``model`` (the request's field, ``--model``), the local grading backend's environment spec
file ``spec_file`` (its own option: ``--backend-option spec_file=FILE``), the embedded model's part wheels
``model_parts`` (``--model-parts``), the view budgets ``raw_trace_max_chars``/``raw_trace_max_tokens``/
``note_max_tokens`` (``[view_budgets]``), the three timeouts (``replay_timeout``, ``grading_timeout``: the
``timeout`` of ``[replay]`` and ``[grading]``; the model request's ``timeout``), the replay and grading settings
and the model request settings. A record is taken whole by the API (``grading``, ``replay``,
``view_budgets``); its fields are the flags' names. Nothing was released before these names: no earlier name
is read, except in a run folder on disk (an earlier version's ``run.json`` still loads)."""

from __future__ import annotations

import inspect
import json

import pytest
import typer
from conftest import make_repo
from handoff_sessions import calc_repo, claude_session
from pydantic import BaseModel, ValidationError
from test_agents import bash, settings
from test_checkpoints import BASE_FILES, _final_patch, _steps
from test_cli_names import _options, runner
from test_cli_points_flags import write_run

from takeover._util.io import stable_hash
from takeover.agents import RunLimits, read_run
from takeover.agents.runs import run_predecessor
from takeover.checkpoints import materialize_checkpoint
from takeover.cli import app
from takeover.cli.options import grading_settings, replay_settings, view_budgets
from takeover.embedded_model import EmbeddedModel, ensure_model
from takeover.environments import prepare_environment
from takeover.errors import InputError
from takeover.experiments import ExperimentConfig, load_experiment
from takeover.experiments.config import NotesConfig
from takeover.experiments.engine import InlineExecutor, run_units
from takeover.experiments.planning import DoneCheckpoint, Planner
from takeover.experiments.units import UnitSpec
from takeover.grading import grade, grade_checkpoint, grade_handoff_state, grade_predictions
from takeover.grading.local import LocalGradingOptions
from takeover.grading_settings import GradingSettings
from takeover.handoff import compose_handoff
from takeover.handoff.resume import resume_session
from takeover.llm import ModelClient, ModelSettings
from takeover.points import analyze_run, checkpoint_method
from takeover.quickstart import QuickstartOptions
from takeover.replay_settings import ReplaySettings
from takeover.results import CheckpointOutput, ImportOutput, TaskInputs, UnitLabels
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.testing.scripted_server import ScriptedServer
from takeover.trajectories import read_trajectory
from takeover.view_budgets import ViewBudgets
from takeover.views import build_view, write_views
from takeover.views.raw_trace import raw_trace_block

TASKS = '[dataset]\npath = "tasks.jsonl"\ninstance_ids = ["a__b-1"]\n'
ENDPOINT = 'base_url = "http://127.0.0.1:9/v1"\n'


def test_the_model_is_named_model_in_the_settings_the_request_and_the_experiment_file(tmp_path):
    with pytest.raises(ValidationError, match="name"):
        ModelSettings.model_validate({"name": "m"})  # one name: model
    with ScriptedServer([{"content": "ok"}]) as srv:
        ModelClient(ModelSettings(model="openai/m", base_url=srv.base_url, api_key_env=None, retries=0)).complete(
            [{"role": "user", "content": "hi"}])
    assert srv.requests[0]["model"] == "m"

    new_text = (f'out_dir = "o"\n{TASKS}[predecessor.model]\nmodel = "p"\n{ENDPOINT}'
                f'[[successors]]\nmodel = "s1"\n{ENDPOINT}[[successors]]\nmodel = "s2"\n'
                f'[notes.model]\nmodel = "n"\n')
    (tmp_path / "new.toml").write_text(new_text)
    new = load_experiment(tmp_path / "new.toml")
    assert [m.model for m in new.successors] == ["s1", "s2"] and new.notes_model.model == "n"
    assert new.predecessor.model.model == "p"


def test_a_run_folder_of_an_earlier_version_with_the_model_under_name_loads(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    out = tmp_path / "run"
    with ScriptedServer([bash("ls")]) as srv:
        first = run_predecessor(task, settings(srv), out, repo_source=RepoSource(mirror), limits=RunLimits(step_limit=1))
    data = json.loads((out / "run.json").read_text())
    assert data["model"]["model"] == data["inputs"]["model"]["model"] == "scripted" and "name" not in data["model"]
    # run.json as an earlier version wrote it: the model's name under "name", and the inputs key of that.
    data["model"] = {("name" if k == "model" else k): v for k, v in data["model"].items()}
    data["inputs"]["model"] = {("name" if k == "model" else k): v for k, v in data["inputs"]["model"].items()}
    data["inputs_key"] = stable_hash(data["inputs"])
    (out / "run.json").write_text(json.dumps(data))
    with ScriptedServer([]) as srv, pytest.raises(InputError, match="holds a different run"):
        run_predecessor(task, settings(srv), out, repo_source=RepoSource(mirror), limits=RunLimits(step_limit=1))
    assert srv.requests == [] and first.model["model"] == "scripted"
    traj = read_run(out)
    assert traj.model == "scripted" and traj.llm_calls[0].model == "scripted"


def test_one_python_keyword_per_flag():
    # spec_file: the local backend's own option and the environment say spec_file; grading takes the record.
    assert "spec_file" in LocalGradingOptions.model_fields and "spec_file" in inspect.signature(prepare_environment).parameters
    for function in (grade, grade_predictions, grade_checkpoint, grade_handoff_state):
        params = inspect.signature(function).parameters
        assert "grading" in params and not {"spec_file", "grading_timeout", "hash_seed", "network"} & set(params)
    assert "--backend-option" in _options(["grade"]) and "--spec-file" not in _options(["grade"])
    # --model-parts: the embedded model and the quickstart say model_parts.
    for function in (ensure_model, EmbeddedModel):
        assert "model_parts" in inspect.signature(function).parameters, function
    assert "model_parts" in QuickstartOptions.model_fields and "--model-parts" in _options(["serve-model"])
    # The raw_trace budget is never --max-tokens, which reads like a model's completion cap.
    assert {"raw_trace_max_chars", "raw_trace_max_tokens"} <= set(ViewBudgets.model_fields)
    assert {"raw_trace_max_chars", "raw_trace_max_tokens"} <= set(inspect.signature(raw_trace_block).parameters)
    for function in (build_view, write_views, compose_handoff, resume_session):
        params = inspect.signature(function).parameters
        assert "view_budgets" in params and not {"max_chars", "max_tokens", "raw_trace_max_chars"} & set(params)
    for command in (["views"], ["handoff"], ["resume"], ["quickstart"]):
        options = _options(command)
        assert {"--raw-trace-max-chars", "--raw-trace-max-tokens"} <= options, command
        assert not {"--max-chars", "--max-tokens"} & options, command


@pytest.mark.parametrize(("flag", "budget"), [("--raw-trace-max-chars", "300 characters"),
                                             ("--raw-trace-max-tokens", "60 estimated tokens")])
def test_the_raw_trace_budget_flags_reach_the_view(tmp_path, flag, budget):
    root, _ = calc_repo(tmp_path / "calc")
    session = claude_session(tmp_path / "session.jsonl", root)
    whole = runner().invoke(app, ["handoff", str(session)])
    new = runner().invoke(app, ["handoff", str(session), flag, budget.split()[0]])
    assert whole.exit_code == new.exit_code == 0, new.output
    assert "left out to fit a budget" not in whole.stdout
    assert f"oldest events were left out to fit a budget of {budget})" in new.stdout
    assert new.stderr == ""


# --- one name per setting: the flags, the Python keywords and the experiment keys of this release -----

#: (flag, the commands that take it, the Python functions or records that take its keyword, its experiment
#: key as (table, key); "successors[]" is every [[successors]] table).
GRADING_COMMANDS = ["grade", "checkpoint", "quickstart"]
VERIFIER_COMMANDS = [*GRADING_COMMANDS, "export harbor"]  # the settings a Harbor task's verifier honours
REPLAY_COMMANDS = ["points", "checkpoint", "views", "handoff", "rediscovery", "export atif"]
TASK_REPLAY_COMMANDS = [c for c in REPLAY_COMMANDS if c != "handoff"]  # a session has no task environment
SETTINGS = [
    ("--backend", GRADING_COMMANDS, [GradingSettings, grading_settings], ("grading", "backend")),
    ("--grading-timeout", VERIFIER_COMMANDS, [grading_settings], ("grading", "timeout")),
    ("--network", GRADING_COMMANDS, [GradingSettings, grading_settings], ("grading", "network")),
    ("--hash-seed", VERIFIER_COMMANDS, [GradingSettings, grading_settings], ("grading", "hash_seed")),
    ("--grading-rules", VERIFIER_COMMANDS, [GradingSettings, grading_settings], ("grading", "grading_rules")),
    ("--replay-timeout", REPLAY_COMMANDS, [replay_settings], ("replay", "timeout")),
    ("--memory-mb", REPLAY_COMMANDS, [ReplaySettings, replay_settings], ("replay", "memory_mb")),
    ("--use-sandbox", REPLAY_COMMANDS, [ReplaySettings, replay_settings], ("replay", "use_sandbox")),
    ("--use-environment", TASK_REPLAY_COMMANDS, [ReplaySettings, replay_settings], ("replay", "use_environment")),
    ("--timeout", ["views", "handoff", "resume", "agent run", "quickstart"], [ModelSettings, QuickstartOptions],
     ("successors[]", "timeout")),
    ("--retries", ["views", "handoff", "resume", "agent run", "quickstart"], [ModelSettings, QuickstartOptions],
     ("successors[]", "retries")),
    ("--max-retry-wait", ["views", "handoff", "resume", "agent run", "quickstart"], [ModelSettings, QuickstartOptions],
     ("successors[]", "max_retry_wait")),
    ("--raw-trace-max-chars", ["views", "handoff", "resume", "quickstart"],
     [ViewBudgets, view_budgets, raw_trace_block], ("view_budgets", "raw_trace_max_chars")),
    ("--raw-trace-max-tokens", ["views", "handoff", "resume", "quickstart"],
     [ViewBudgets, view_budgets, raw_trace_block], ("view_budgets", "raw_trace_max_tokens")),
    ("--note-max-tokens", ["views", "handoff", "resume", "quickstart"], [ViewBudgets, view_budgets],
     ("view_budgets", "note_max_tokens")),
    ("--out-dir", ["points", "checkpoint", "views", "agent run", "grade", "show", "handoff", "resume", "quickstart",
                   "tasks select"], [QuickstartOptions], ("", "out_dir")),
]
TABLES = {"": ExperimentConfig, "replay": ReplaySettings, "grading": GradingSettings, "notes": NotesConfig,
          "successors[]": ModelSettings, "view_budgets": ViewBudgets}


def table_default(key: tuple[str, str]):
    """The default of the record field an experiment key names (None for a table without defaults here)."""
    table, name = key
    record = TABLES[table]
    return record.model_fields[name].default if table and table != "successors[]" else None


def _takes(function, keyword: str) -> bool:
    if isinstance(function, type) and issubclass(function, BaseModel):
        return keyword in function.model_fields
    return keyword in inspect.signature(function).parameters


@pytest.mark.parametrize(("flag", "commands", "functions", "key"), SETTINGS, ids=[s[0] for s in SETTINGS])
def test_flag_python_keyword_and_experiment_key_are_one_name(flag, commands, functions, key):
    keyword = flag.removeprefix("--").replace("-", "_")
    for path in commands:
        command = typer.main.get_command(app)
        for name in path.split():
            command = command.commands[name]
        (param,) = [p for p in command.params if flag in getattr(p, "opts", [])]
        assert param.name == keyword, (path, param.name)
        # The flag's default is its record's (read from it, never declared again).
        if table_default(key) is not None and param.default is not None:
            assert param.default == table_default(key), (path, flag, param.default)
    for function in functions:
        assert _takes(function, keyword), (function, keyword)
    table, name = key
    # A table's key is the flag without the table's name: [grading] timeout is --grading-timeout.
    assert keyword in (name, f"{table}_{name}") and name in TABLES[table].model_fields


def test_the_view_budgets_are_an_experiment_table_of_the_flags_names(tmp_path):
    base = f'out_dir = "o"\n{TASKS}[predecessor]\ntrajectories = ["t/"]\n[[successors]]\nmodel = "m"\n{{}}\n'
    (tmp_path / "budget.toml").write_text(base.format(
        "[view_budgets]\nraw_trace_max_chars = 300\nraw_trace_max_tokens = 80\nnote_max_tokens = 700"))
    config = load_experiment(tmp_path / "budget.toml")
    assert config.view_budgets == ViewBudgets(raw_trace_max_chars=300, raw_trace_max_tokens=80, note_max_tokens=700)
    assert config.resolved()["view_budgets"]["raw_trace_max_chars"] == 300
    (tmp_path / "zero.toml").write_text(base.format("[view_budgets]\nraw_trace_max_chars = 0"))
    with pytest.raises(InputError) as exc:
        load_experiment(tmp_path / "zero.toml")
    assert exc.value.field == "view_budgets.raw_trace_max_chars"
    (tmp_path / "small.toml").write_text(base.format("[view_budgets]\nnote_max_tokens = 10"))  # the record's bound
    with pytest.raises(InputError, match="greater than or equal to 64"):
        load_experiment(tmp_path / "small.toml")
    (tmp_path / "none.toml").write_text(base.format(""))
    assert load_experiment(tmp_path / "none.toml").view_budgets == ViewBudgets()


SUMMARY = "- The agent wrote reproduce.py to check f.\n- It edited pkg/mod.py so that f returns 3."


def test_the_raw_trace_budget_redoes_only_raw_trace(tmp_path):
    """A folder resumes with no new model call; setting the budget redoes the raw_trace unit alone (with the
    budget applied) and still calls no model."""
    _, sha = make_repo(tmp_path / "src", BASE_FILES, bare_mirror=tmp_path / "mirror" / "acme__widget.git")
    task = SourceTask(instance_id="acme__widget-1", repo="acme/widget", base_commit=sha,
                      problem_statement="f must return 2")
    mirror_dir = tmp_path / "mirror"
    run_file = write_run(tmp_path / "run.json", task.instance_id, _steps(),
                         _final_patch(tmp_path, {"pkg/mod.py": "def f():\n    return 2\n"}))
    traj = read_trajectory(run_file)
    rp = analyze_run(traj, task, RepoSource(mirror_dir, offline=True), replay=ReplaySettings(use_environment=False))
    point = rp.point("after_first_source_edit")
    cp = materialize_checkpoint(task, traj, point, rp.patches[point.type], tmp_path / "cp",
                                checkpoint_method(rp.replay), workspace=False)
    task_file = tmp_path / "task.json"
    task_file.write_text(task.model_dump_json())
    files = {task.instance_id: TaskInputs(instance_id=task.instance_id, task=str(task_file), task_sha256="t")}
    imported = ImportOutput(file=str(run_file), record=None, format=traj.format, agent_events=len(traj.events),
                            prompt_tokens=None, completion_tokens=None, exit_status=None, final_patch_files=[])
    done = [DoneCheckpoint(UnitLabels(instance_id=task.instance_id, point_type=point.type, point_key="c"),
                           CheckpointOutput(checkpoint_dir=str(tmp_path / "cp"), patch_sha256=cp.patch_sha256,
                                            files=cp.files, method=cp.method, event_index=point.event_index,
                                            trajectory=imported), "c")]
    out = tmp_path / "out"

    with ScriptedServer([{"content": SUMMARY}]) as srv:
        def plan(**budget) -> dict[str, UnitSpec]:
            config = ExperimentConfig(out_dir=str(out), dataset={"path": "d.jsonl"}, predecessor={"trajectories": ["t"]},
                                      successors=[{"model": "m"}], views=["raw_trace", "summary_notes"],
                                      notes={"model": {"model": "openai/writer", "base_url": srv.base_url,
                                                       "api_key_env": None, "retries": 0}},
                                      view_budgets=ViewBudgets(**budget))
            return {s.labels["view"]: s for s in Planner(config, files, RepoSource(offline=True)).views(done)}

        before = plan()
        for spec in before.values():  # no budget beyond the defaults: no view_options in the key
            assert "view_options" not in spec.inputs
        first = run_units(list(before.values()), out, InlineExecutor())
        assert srv.served == 1 and all(r.status == "done" for r in first.values())
        assert first[before["raw_trace"].key].output["dropped_events"] == 0

        again = run_units(list(plan().values()), out, InlineExecutor())
        assert srv.served == 1 and {k: r.output for k, r in again.items()} == {k: r.output for k, r in first.items()}

        budget = plan(raw_trace_max_chars=300)
        assert budget["summary_notes"].key == before["summary_notes"].key
        assert budget["raw_trace"].key != before["raw_trace"].key
        assert budget["raw_trace"].inputs["view_options"] == {"raw_trace_max_chars": 300}
        assert "view_options" not in budget["summary_notes"].inputs
        cut = run_units(list(budget.values()), out, InlineExecutor())
        assert srv.served == 1  # the notes view was reused; raw_trace calls no model
        assert cut[budget["raw_trace"].key].output["dropped_events"] > 0
        assert cut[budget["summary_notes"].key].output == first[before["summary_notes"].key].output
