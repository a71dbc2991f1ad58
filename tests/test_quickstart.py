"""The quickstart's argument handling, pinned inputs and experiment config (no model, no network)."""

from __future__ import annotations

import shutil

import pytest
from conftest import DATASET, TRAJ
from prerequisites import requires

from takeover import quickstart as qs
from takeover.errors import InputError, TakeoverError
from takeover.grading_settings import GradingSettings
from takeover.limits import RunLimits
from takeover.llm import ModelSettings
from takeover.view_budgets import ViewBudgets

PYTEST_TRAJ = TRAJ / "mini-swe-agent" / "pytest-dev__pytest-7521.json"


def test_defaults_are_the_pinned_task_one_point_type_all_views():
    o = qs.QuickstartOptions().checked()
    assert o.instance_ids == ["pytest-dev__pytest-7521"]
    assert o.point_types == ["after_first_source_edit"]
    assert o.views is None and o.embedded
    assert (o.limits.step_limit, o.limits.wall_time_limit_seconds) == (qs.DEFAULT_STEP_LIMIT,
                                                                       qs.DEFAULT_WALL_TIME_LIMIT_SECONDS)


@pytest.mark.parametrize(
    ("kwargs", "flag", "words"),
    [
        ({"point_types": ["after_lunch"]}, "--point-type", "unknown point type 'after_lunch'"),
        ({"views": ["full_trace"]}, "--view", "unknown view 'full_trace'"),
        ({"grading": GradingSettings(backend="modal")}, "--backend", "unknown backend 'modal'"),
        ({"base_url": "http://127.0.0.1:8000/v1"}, "--model", "give the model name"),
        ({"model": "qwen"}, "--base-url", "needs --base-url"),
        ({"instance_ids": ["psf__requests-1766"]}, "--trajectories", "no built-in predecessor run"),
    ],
)
def test_bad_flags_are_named(kwargs, flag, words):
    with pytest.raises(InputError) as exc:
        qs.QuickstartOptions(**kwargs).checked()
    assert exc.value.path == flag and words in exc.value.reason


def test_missing_paths_are_named(tmp_path):
    with pytest.raises(InputError, match=r"absent\.jsonl: not found \(given with --dataset\)"):
        qs.QuickstartOptions(dataset=tmp_path / "absent.jsonl").checked()
    with pytest.raises(InputError, match="given with --trajectories"):
        qs.QuickstartOptions(trajectories=[tmp_path / "none.json"]).checked()


@requires("shared:swebench_verified.jsonl",
          "shared:trajectories/mini-swe-agent/pytest-dev__pytest-7521.json")
def test_pins_match_the_real_public_files():
    from takeover._util.io import sha256_file
    from takeover.sources.tasks import load_tasks

    pin = qs.PINNED["pytest-dev__pytest-7521"]
    assert sha256_file(PYTEST_TRAJ) == pin.trajectory_sha256
    row = next(t for t in load_tasks(DATASET) if t.instance_id == pin.instance_id)
    assert qs.row_fingerprint(row) == pin.row_sha256
    assert qs.row_fingerprint(row.model_dump()) == pin.row_sha256
    assert "d12a71affd95403b036b2bdbd827349b77bfffb9" in pin.trajectory_url


@requires("shared:swebench_verified.jsonl",
          "shared:trajectories/mini-swe-agent/pytest-dev__pytest-7521.json")
def test_local_paths_win_and_offline_without_cache_explains(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    local = qs.QuickstartOptions(dataset=DATASET, trajectories=[PYTEST_TRAJ]).checked()
    assert qs.resolve_dataset(local) == DATASET.resolve()
    assert qs.resolve_trajectories(local) == [PYTEST_TRAJ.resolve()]
    offline = qs.QuickstartOptions(offline=True)
    with pytest.raises(TakeoverError, match="not cached .* --offline is set; pass it with --trajectories"):
        qs.resolve_trajectories(offline)
    with pytest.raises(TakeoverError, match="--offline is set; pass a SWE-bench Verified file with --dataset"):
        qs.resolve_dataset(offline)


@requires("shared:trajectories/mini-swe-agent/pytest-dev__pytest-7521.json")
def test_cached_trajectory_is_used_only_when_its_hash_matches(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    dest = qs.quickstart_cache() / "trajectories" / "pytest-dev__pytest-7521.traj.json"
    dest.parent.mkdir(parents=True)
    shutil.copyfile(PYTEST_TRAJ, dest)
    offline = qs.QuickstartOptions(offline=True)
    assert qs.resolve_trajectories(offline) == [dest]
    dest.write_text("{}")  # damaged cache: not trusted, and offline it cannot be fetched again
    with pytest.raises(TakeoverError, match="not cached"):
        qs.resolve_trajectories(offline)


def test_download_checks_sha256(tmp_path):
    src = tmp_path / "file.json"
    src.write_text('{"a": 1}')
    with pytest.raises(TakeoverError, match="differs from the pinned"):
        qs.download(src.as_uri(), tmp_path / "out.json", "0" * 64)
    assert not (tmp_path / "out.json").exists()
    from takeover._util.io import sha256_file

    got = qs.download(src.as_uri(), tmp_path / "out.json", sha256_file(src))
    assert got.read_text() == '{"a": 1}'


@requires("shared:swebench_verified.jsonl",
          "shared:trajectories/mini-swe-agent/pytest-dev__pytest-7521.json")
def test_experiment_config_is_built_from_the_flags(tmp_path):
    o = qs.QuickstartOptions(dataset=DATASET, trajectories=[PYTEST_TRAJ], views=["repo_only", "raw_trace"],
                             limits=RunLimits(step_limit=5, wall_time_limit_seconds=60), out_dir=tmp_path / "out",
                             mirror=tmp_path, grading=GradingSettings(timeout=600, hash_seed=3)).checked()
    model = ModelSettings(model="openai/demo", base_url="http://127.0.0.1:1/v1", api_key_env=None)
    cfg = qs.build_config(o, DATASET, [PYTEST_TRAJ], model)
    assert cfg.dataset.instance_ids == ["pytest-dev__pytest-7521"]
    assert cfg.predecessor.trajectories == [str(PYTEST_TRAJ)]
    assert cfg.views == ["repo_only", "raw_trace"]
    assert cfg.point_types == ["after_first_source_edit"]
    assert (cfg.limits.step_limit, cfg.limits.wall_time_limit_seconds) == (5, 60)
    assert cfg.grading == GradingSettings(timeout=600, hash_seed=3)  # the study's record, whole
    assert [m.settings().model_dump() for m in cfg.successors] == [model.model_dump()]
    assert [m.agent.runtime for m in cfg.successors] == ["mini-swe-agent"]
    assert cfg.notes_model.model_dump() == model.model_dump()
    assert cfg.out == (tmp_path / "out").resolve() and cfg.mirror_path == tmp_path.resolve()


def test_embedded_model_notes_are_capped_and_the_notice_says_so():
    o = qs.QuickstartOptions(dataset=DATASET, trajectories=[PYTEST_TRAJ])
    assert o.embedded and o.budgets.note_max_tokens == 512
    model = ModelSettings(model="openai/qwen2.5-coder-0.5b-instruct", base_url="http://127.0.0.1:1/v1", api_key_env=None)
    assert qs.build_config(o, DATASET, [PYTEST_TRAJ], model).view_budgets.note_max_tokens == 512
    assert "capped at 512 completion tokens" in qs.warning_text(o, model)
    # A budget given is kept, even the protocol's own value (the record knows it was given).
    assert qs.QuickstartOptions(view_budgets=ViewBudgets(note_max_tokens=1600)).budgets.note_max_tokens == 1600
    real = qs.QuickstartOptions(model="openai/demo", base_url="http://127.0.0.1:1/v1")
    assert not real.embedded and real.budgets.note_max_tokens == 1600  # a real endpoint keeps the protocol's cap


def test_the_embedded_models_raw_trace_keeps_the_newest_events_within_a_budget_and_the_notice_says_so():
    o = qs.QuickstartOptions(dataset=DATASET, trajectories=[PYTEST_TRAJ])
    model = ModelSettings(model="openai/qwen2.5-coder-0.5b-instruct", base_url="http://127.0.0.1:1/v1", api_key_env=None)
    assert o.budgets.raw_trace_max_tokens == qs.EMBEDDED_RAW_TRACE_MAX_TOKENS == 2000
    assert qs.build_config(o, DATASET, [PYTEST_TRAJ], model).view_budgets.raw_trace_max_tokens == 2000
    assert "newest events within 2,000 estimated tokens" in qs.warning_text(o, model)
    given = qs.QuickstartOptions(view_budgets=ViewBudgets(raw_trace_max_tokens=9000))
    assert given.budgets.raw_trace_max_tokens == 9000
    chars = qs.QuickstartOptions(view_budgets=ViewBudgets(raw_trace_max_chars=5000)).budgets  # one budget given: kept
    assert (chars.raw_trace_max_chars, chars.raw_trace_max_tokens) == (5000, None)
    real = qs.QuickstartOptions(model="openai/demo", base_url="http://127.0.0.1:1/v1")
    assert real.budgets.raw_trace_max_tokens is None  # a real endpoint gets the whole trace, as in the paper
    assert "estimated tokens" not in qs.warning_text(real, model)


def test_report_notice_says_the_rates_mean_nothing_and_how_to_rerun():
    o = qs.QuickstartOptions(dataset=DATASET, trajectories=[PYTEST_TRAJ])
    text = qs.warning_text(o, ModelSettings(model="openai/qwen2.5-coder-0.5b-instruct", api_key_env=None))
    assert "A 0.5B model's solved rates mean nothing" in text
    cmd = qs.rerun_command(o)
    assert cmd in text
    assert "--base-url http://127.0.0.1:8000/v1" in cmd and f"--dataset {DATASET}" in cmd
    assert "--instance-id pytest-dev__pytest-7521" in cmd


def test_cli_rejects_bad_flags_with_one_line(tmp_path):
    from typer.testing import CliRunner

    from takeover.cli import app

    res = CliRunner().invoke(app, ["quickstart", "--point-type", "bogus", "--out-dir", str(tmp_path / "o")])
    assert res.exit_code == 2 and res.stderr.startswith("error: --point-type")
    helptext = CliRunner().invoke(app, ["quickstart", "--help"], terminal_width=200).stdout
    for flag in ("--instance-id", "--dataset", "--trajectories", "--point-type", "--view", "--step-limit", "--model",
                 "--base-url", "--mirror", "--out-dir", "--offline"):
        assert flag in helptext


def test_a_stage_that_cannot_run_stops_the_quickstart_with_its_name(tmp_path, monkeypatch):
    import json

    from rich.console import Console

    from takeover.cli.quickstart import ConsoleDisplay

    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    console = Console(file=(tmp_path / "console.txt").open("w"), width=200)
    o = qs.QuickstartOptions(offline=True, out_dir=tmp_path / "out")
    result = qs.run_quickstart(o, ConsoleDisplay(console))
    console.file.close()
    assert not result.ok and result.report is None
    assert result.problems[0].startswith("inputs: ")
    saved = json.loads((tmp_path / "out" / "quickstart.json").read_text())
    assert saved["ok"] is False and saved["problems"] == result.problems
    text = (tmp_path / "console.txt").read_text()
    assert "quickstart stopped at stage 'inputs'" in text
    assert "it measures this machine's speed, and the quickstart says how long the run should take here" in text
    assert str(tmp_path / "out" / "report.md") in text
    assert str(tmp_path / "out" / "report.html") in text


def test_the_notice_names_the_handoff_state_and_what_it_means_for_the_solved_rates():
    o = qs.QuickstartOptions(dataset=DATASET, trajectories=[PYTEST_TRAJ])
    model = ModelSettings(model="openai/qwen2.5-coder-0.5b-instruct", base_url="http://127.0.0.1:1/v1", api_key_env=None)
    assert "handoff state" not in qs.report_notice(o, model).text  # written before any result: none known
    notice = qs.report_notice(o, model, {"pytest-dev__pytest-7521 after_first_source_edit": "resolved_preserve"})
    assert notice.text.endswith(
        "The handoff point pytest-dev__pytest-7521 after_first_source_edit is in handoff state resolved_preserve: "
        "the checkpoint already solves the task, so every view starts from a solved repository and reads as solved "
        "unless its run undoes the fix: the solved rates cannot tell the views apart.")
