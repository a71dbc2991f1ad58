"""One name per setting, from the flag to the Python keyword to the experiment file's key and the records:
the model's name is ``model`` (the request's field, ``--model``), the environment spec file ``spec_file``
(``--spec-file``), the embedded model's part wheels ``model_parts`` (``--model-parts``) and the raw_trace
budget ``raw_trace_max_chars``/``raw_trace_max_tokens``. The earlier names keep working for one release,
with a warning where a person wrote them, and records of earlier versions still load."""

from __future__ import annotations

import inspect
import json

import pytest
from conftest import make_repo
from handoff_sessions import calc_repo, claude_session
from pydantic import ValidationError
from test_agents import bash, settings
from test_cli_names import _options, runner

from takeover._util.io import stable_hash
from takeover.agents import RunLimits, read_run, run_predecessor
from takeover.cli import app, handoff, views
from takeover.embedded_model import EmbeddedModel, ensure_model
from takeover.environments import prepare_environment
from takeover.errors import InputError
from takeover.experiments import load_experiment
from takeover.grading import grade, grade_predictions
from takeover.handoff import compose_handoff
from takeover.handoff.resume import resume_session
from takeover.llm import ModelClient, ModelSettings
from takeover.quickstart import QuickstartOptions
from takeover.sources.repos import RepoSource
from takeover.testing.scripted_server import ScriptedServer
from takeover.views import build_view, write_views
from takeover.views.raw_trace import raw_trace_block

TASKS = '[dataset]\npath = "tasks.jsonl"\ninstance_ids = ["a__b-1"]\n'
ENDPOINT = 'base_url = "http://127.0.0.1:9/v1"\n'


def test_the_model_is_named_model_in_the_settings_the_request_and_the_experiment_file(tmp_path):
    assert ModelSettings.model_validate({"name": "m"}) == ModelSettings(model="m")  # records of earlier versions
    with pytest.raises(ValidationError, match="give 'model' once"):
        ModelSettings.model_validate({"name": "m", "model": "m"})
    with ScriptedServer([{"content": "ok"}]) as srv:
        ModelClient(ModelSettings(model="openai/m", base_url=srv.base_url, api_key_env=None, retries=0)).complete(
            [{"role": "user", "content": "hi"}])
    assert srv.requests[0]["model"] == "m"

    new_text = (f'out_dir = "o"\n{TASKS}[predecessor.model]\nmodel = "p"\n{ENDPOINT}'
                f'[[successors]]\nmodel = "s1"\n{ENDPOINT}[[successors]]\nmodel = "s2"\n'
                f'[notes.model]\nmodel = "n"\n')
    (tmp_path / "new.toml").write_text(new_text)
    (tmp_path / "old.toml").write_text(new_text.replace("model = ", "name = "))
    new = load_experiment(tmp_path / "new.toml")
    with pytest.warns(FutureWarning) as caught:
        old = load_experiment(tmp_path / "old.toml")
    assert old.model_copy(update={"base_dir": None}) == new.model_copy(update={"base_dir": None})
    assert [m.model for m in old.successors] == ["s1", "s2"] and old.notes_model.model == "n"
    messages = sorted(str(w.message).split(": ", 1)[1] for w in caught)
    assert messages == sorted(f"key '{k}.name' is deprecated; use '{k}.model'; the old key is read until the next "
                              "release" for k in ("predecessor.model", "successors[0]", "successors[1]", "notes.model"))
    (tmp_path / "both.toml").write_text(new_text.replace('model = "s1"', 'model = "s1"\nname = "s1"'))
    with pytest.raises(InputError) as exc:
        load_experiment(tmp_path / "both.toml")
    assert exc.value.field == "successors[0].name" and "give 'successors[0].model' only" in exc.value.reason


def test_a_run_folder_of_an_earlier_version_with_the_model_under_name_loads_and_resumes(tmp_path, task_and_mirror):
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
    with ScriptedServer([]) as srv:
        again = run_predecessor(task, settings(srv), out, repo_source=RepoSource(mirror), limits=RunLimits(step_limit=1))
        assert srv.requests == []
        with pytest.raises(InputError, match=r"holds a different run \(predecessor, model scripted, 1 steps; differs "
                                             r"in limits\).*use another --out-dir or delete it"):
            run_predecessor(task, settings(srv), out, repo_source=RepoSource(mirror), limits=RunLimits(step_limit=2))
    assert again.model == first.model and again.accounting == first.accounting
    traj = read_run(out)
    assert traj.model == "scripted" and traj.llm_calls[0].model == "scripted"


def test_one_python_keyword_per_flag():
    # --spec-file: grade, grade_predictions and the environment all say spec_file.
    for function in (grade, grade_predictions, prepare_environment):
        assert "spec_file" in inspect.signature(function).parameters, function
    assert "--spec-file" in _options(["grade"]) and "--env-spec" not in _options(["grade"])
    # --model-parts: the embedded model and the quickstart say model_parts.
    for function in (ensure_model, EmbeddedModel):
        assert "model_parts" in inspect.signature(function).parameters, function
    assert "model_parts" in QuickstartOptions.model_fields and "--model-parts" in _options(["serve-model"])
    # The raw_trace budget is never --max-tokens, which reads like a model's completion cap.
    for function in (build_view, write_views, compose_handoff, resume_session, raw_trace_block):
        params = inspect.signature(function).parameters
        assert {"raw_trace_max_chars", "raw_trace_max_tokens"} <= set(params), function
        assert not {"max_chars", "max_tokens"} & set(params), function
    for command in (["views"], ["handoff"], ["resume"]):
        options = _options(command)
        assert {"--raw-trace-max-chars", "--raw-trace-max-tokens"} <= options, command
        assert not {"--max-chars", "--max-tokens"} & options, command
    assert views.RENAMED["--max-tokens"] == handoff.RESUME_RENAMED["--max-tokens"] == "--raw-trace-max-tokens"


def test_the_earlier_flags_still_work_with_a_warning(tmp_path):
    make_repo(tmp_path / "src", {"a.py": "x = 1\n"})
    res = runner().invoke(app, ["grade", "--dataset", str(tmp_path / "none.jsonl"), "--instance-id", "a__b-1",
                                "--gold", "--env-spec", str(tmp_path / "specs.toml")])
    assert res.exit_code == 2 and "No such option" not in res.output + res.stderr
    assert "warning: --env-spec is deprecated; use --spec-file" in res.stderr
    res = runner().invoke(app, ["handoff", str(tmp_path / "none.jsonl"), "--repo", str(tmp_path / "src"),
                                "--max-chars", "100", "--max-tokens=50"])
    assert "No such option" not in res.output + res.stderr
    assert "warning: --max-chars is deprecated; use --raw-trace-max-chars" in res.stderr
    assert "warning: --max-tokens is deprecated; use --raw-trace-max-tokens" in res.stderr


@pytest.mark.parametrize(("flag", "old", "budget"), [("--raw-trace-max-chars", "--max-chars", "300 characters"),
                                                     ("--raw-trace-max-tokens", "--max-tokens", "60 estimated tokens")])
def test_the_raw_trace_budget_flags_reach_the_view_under_either_spelling(tmp_path, flag, old, budget):
    root, _ = calc_repo(tmp_path / "calc")
    session = claude_session(tmp_path / "session.jsonl", root)
    whole = runner().invoke(app, ["handoff", str(session)])
    new = runner().invoke(app, ["handoff", str(session), flag, budget.split()[0]])
    earlier = runner().invoke(app, ["handoff", str(session), f"{old}={budget.split()[0]}"])
    assert whole.exit_code == new.exit_code == earlier.exit_code == 0, new.output + earlier.output
    assert "left out to fit a budget" not in whole.stdout
    assert f"oldest events were left out to fit a budget of {budget})" in new.stdout
    assert earlier.stdout == new.stdout and new.stderr == ""
    assert f"warning: {old} is deprecated; use {flag}" in earlier.stderr


def test_unit_keys_are_those_of_folders_written_before_the_model_rename():
    from takeover._util.io import stable_hash
    from takeover.experiments.units import UnitSpec, key_form

    settings = ModelSettings(model="openai/m", base_url="http://127.0.0.1:1/v1", api_key_env=None).model_dump()
    inputs = {"instance_id": "a__b-1", "model": settings, "view": "raw_trace"}
    spec = UnitSpec(stage="view", fn="takeover.experiments.stages:view_unit", inputs=inputs)
    earlier = {**inputs, "model": {("name" if k == "model" else k): v for k, v in settings.items()}}
    assert spec.key == stable_hash({"stage": "view", "fn": "takeover.experiments.stages:view_unit", "inputs": earlier})
    assert spec.inputs["model"]["model"] == "openai/m"  # the unit file keeps today's names
    assert key_form({"model": "x"}) == {"model": "x"}  # a plain field called model is not settings
