"""The command line under a newcomer's hands: every --help, untrusted text in rich output, folders of
trajectories, narrow pipes, unknown token counts, mistyped options and exit statuses."""

from __future__ import annotations

import json

import pytest
import typer
from conftest import DATASET, TRAJ, make_repo
from prerequisites import requires
from typer.testing import CliRunner

from takeover import __version__
from takeover.cli import app
from takeover.errors import InputError
from takeover.trajectories import read_trajectories
from takeover.trajectories.registry import expand_paths

MINI_DIR = TRAJ / "mini-swe-agent"
MINI_IDS = sorted(p.stem for p in MINI_DIR.glob("*__*.json"))


def runner(**kwargs) -> CliRunner:
    try:
        return CliRunner(mix_stderr=False, **kwargs)
    except TypeError:  # click >= 8.2 always keeps stderr apart
        return CliRunner(**kwargs)


def _command_paths(command, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [prefix]
    if hasattr(command, "commands"):  # a group (typer may ship its own click)
        for name, sub in command.commands.items():
            paths.extend(_command_paths(sub, (*prefix, name)))
    return paths


def test_help_of_every_command_and_subcommand_exits_0():
    paths = _command_paths(typer.main.get_command(app))
    assert ("grade",) in paths and ("tasks", "select") in paths and len(paths) > 10
    for path in paths:
        result = runner().invoke(app, [*path, "--help"], catch_exceptions=False)
        assert result.exit_code == 0, (path, result.output)
        assert "Usage:" in result.output, path
    grade_help = runner().invoke(app, ["grade", "--help"]).output
    assert "owner/name/version" in " ".join(grade_help.split())


def test_version_option_and_command_agree():
    option = runner().invoke(app, ["--version"])
    command = runner().invoke(app, ["version"])
    assert option.exit_code == 0 and command.exit_code == 0
    assert option.stdout.strip() == command.stdout.strip() == __version__


def test_an_apply_error_with_rich_markup_prints_as_text(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    mirror = tmp_path / "mirror"
    _, sha = make_repo(tmp_path / "src" / "calc", {"calc.py": "def f():\n    return 1\n"},
                       bare_mirror=mirror / "acme__calc.git")
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(json.dumps({
        "instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": sha, "problem_statement": "x",
        "version": "0.1", "patch": "", "test_patch": "", "FAIL_TO_PASS": [], "PASS_TO_PASS": [],
    }) + "\n")
    patch = tmp_path / "bad.patch"
    patch.write_text(
        "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n"
        " def f():\n-    return '[/red] [bold'\n+    return 2\n"
    )
    result = runner().invoke(app, ["grade", "--dataset", str(dataset), "--instance-id", "acme__calc-1", "--patch",
                                   str(patch), "--mirror", str(mirror), "--offline", "--out-dir",
                                   str(tmp_path / "logs")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "patch does not apply" in result.stdout
    assert "[/red] [bold" in result.stdout  # printed literally, not parsed as markup


@requires("shared:trajectories/mini-swe-agent")
def test_inspect_a_folder_reads_every_run_and_skips_other_json():
    assert len(MINI_IDS) == 16
    result = runner(env={"COLUMNS": "80"}).invoke(app, ["inspect", str(MINI_DIR)])
    assert result.exit_code == 0, result.output
    for iid in MINI_IDS:  # full ids although COLUMNS=80: piped tables are not squeezed
        assert iid in result.stdout, iid
    assert "Submitted" in result.stdout
    skipped = [line for line in result.stderr.splitlines() if line.startswith("note: skipped")]
    assert any("index.json" in line for line in skipped)
    assert any("run_results_summary.json" in line for line in skipped)
    assert sum(".report.json" in line for line in skipped) == 16
    assert "error" not in result.stderr

    as_json = runner().invoke(app, ["inspect", "--json", str(MINI_DIR)])
    assert sorted(json.loads(line)["instance_id"] for line in as_json.stdout.splitlines()) == MINI_IDS


@requires("shared:trajectories/mini-swe-agent")
def test_expand_paths_keeps_files_and_walks_folders(tmp_path):
    files = expand_paths([MINI_DIR])
    assert sorted(p.stem for p in files if p.parent == MINI_DIR and "__" in p.name) == MINI_IDS
    assert MINI_DIR / "eval_reports" / "psf__requests-1766.report.json" in files  # listed; readers skip it
    one = MINI_DIR / "psf__requests-1766.json"
    assert expand_paths([one]) == [one]
    with pytest.raises(InputError, match="not found"):
        expand_paths([tmp_path / "nope"])


def test_a_named_non_trajectory_file_is_still_an_error(tmp_path):
    other = tmp_path / "report.json"
    other.write_text('{"resolved": true}')
    result = runner().invoke(app, ["inspect", str(other)])
    assert result.exit_code == 2
    assert "unknown trajectory format" in result.stderr


@requires("shared:trajectories/openhands/v0-messages/swe-gym_openhands_sampled_trajectories.sample_raw.json",
          "shared:trajectories/swe-agent/pydicom__pydicom-1458.gpt4-0x.traj")
def test_unknown_token_usage_is_null_not_zero():
    v0_messages = TRAJ / "openhands" / "v0-messages" / "swe-gym_openhands_sampled_trajectories.sample_raw.json"
    rows = [json.loads(line) for line in
            runner().invoke(app, ["inspect", "--json", str(v0_messages)]).stdout.splitlines()]
    assert rows and all(r["prompt_tokens"] is None and r["completion_tokens"] is None for r in rows)
    table = runner().invoke(app, ["inspect", str(v0_messages)])
    assert "n/a" in table.stdout and "records no token usage" in table.stdout

    swe = TRAJ / "swe-agent" / "pydicom__pydicom-1458.gpt4-0x.traj"
    stats = json.loads(swe.read_text())["info"]["model_stats"]
    row = json.loads(runner().invoke(app, ["inspect", "--json", str(swe)]).stdout)
    assert row["usage_per_call"] is False
    assert (row["prompt_tokens"], row["completion_tokens"]) == (stats["tokens_sent"], stats["tokens_received"])
    assert f"{stats['tokens_sent']}*" in runner().invoke(app, ["inspect", str(swe)]).stdout


@requires("shared:swebench_verified.jsonl")
def test_tasks_select_rejects_a_mistyped_bucket_and_a_negative_limit(tmp_path):
    out = tmp_path / "tasks.jsonl"
    bad = runner().invoke(app, ["tasks", "select", "--dataset", str(DATASET), "--difficulty", "15 min-1 hour",
                                "--out-dir", str(tmp_path)])
    assert bad.exit_code == 2
    for bucket in ("<15 min fix", "15 min - 1 hour", "1-4 hours", ">4 hours"):
        assert repr(bucket) in bad.stderr
    assert not out.exists()
    negative = runner().invoke(app, ["tasks", "select", "--dataset", str(DATASET), "--limit", "-1", "--out-dir",
                                     str(tmp_path)])
    assert negative.exit_code == 2 and "--limit" in negative.stderr


def test_malformed_json_message_says_at_once(tmp_path):
    bad = tmp_path / "t.json"
    bad.write_text('{"messages": "abc')
    with pytest.raises(InputError) as info:
        read_trajectories(bad)
    assert "Unterminated string starting at column" in str(info.value)
    assert "at at" not in str(info.value)


@requires("shared:swebench_verified.jsonl",
          "shared:trajectories/openhands/v0/alibaba__fastjson2-2775.output.jsonl")
def test_points_exits_1_when_every_run_is_skipped():
    other = TRAJ / "openhands" / "v0" / "alibaba__fastjson2-2775.output.jsonl"  # not a SWE-bench Verified task
    result = runner().invoke(app, ["points", str(other), "--dataset", str(DATASET), "--offline"])
    assert result.exit_code == 1, result.output
    assert "skipped:" in result.stderr and "alibaba__fastjson2-2775" in result.stderr
    assert "no trajectory could be analysed" in result.stderr
    folder = runner().invoke(app, ["points", str(other.parent), "--dataset", str(DATASET), "--offline"])
    assert folder.exit_code == 1, folder.output  # a folder is expanded; every run in it is skipped
    assert "ponylang__ponyc-4593" in folder.stderr and "alibaba__fastjson2-2775" in folder.stderr


@requires("shared:swebench_verified.jsonl",
          "shared:trajectories/openhands/v0/alibaba__fastjson2-2775.output.jsonl")
def test_views_of_a_run_outside_the_dataset_says_so(tmp_path):
    other = TRAJ / "openhands" / "v0" / "alibaba__fastjson2-2775.output.jsonl"
    result = runner().invoke(app, ["views", str(other), "--dataset", str(DATASET), "--point-type",
                                   "after_first_source_edit", "--out-dir", str(tmp_path / "v"), "--offline"])
    assert result.exit_code == 2, result.output
    assert "'alibaba__fastjson2-2775' is not in" in result.stderr
    assert "--checkpoint" in result.stderr and "--points-file" in result.stderr
    assert "github.com" not in result.output + result.stderr


@requires("shared:swebench_verified.jsonl")
def test_tasks_select_default_buckets_tolerate_a_subset_missing_one(tmp_path):
    lines = [line for line in DATASET.read_text().splitlines() if '"1-4 hours"' in line][:3]
    subset = tmp_path / "subset.jsonl"
    subset.write_text("\n".join(lines) + "\n")
    result = runner().invoke(app, ["tasks", "select", "--dataset", str(subset), "--out-dir", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    assert "selected 3 of 3 tasks" in result.stdout
    assert len((tmp_path / "s" / "tasks.jsonl").read_text().splitlines()) == 4  # the header and 3 tasks


@requires("shared:trajectories/mini-swe-agent",
          "shared:trajectories/openhands/v1/openagentsafety.v1.output.jsonl")
def test_a_run_folder_is_kept_whole_inside_a_folder_and_given_alone(tmp_path):
    row = json.loads((TRAJ / "openhands" / "v1" / "openagentsafety.v1.output.jsonl").read_text().splitlines()[0])
    root = tmp_path / "runs"
    conv = root / "conversation"
    (conv / "events").mkdir(parents=True)
    (conv / "base_state.json").write_text(json.dumps({"id": "c0ffee", "agent": {"llm": {"model": "m"}}}))
    for i, ev in enumerate(row["history"]):
        (conv / "events" / f"event-{i:05d}-{ev['id']}.json").write_text(json.dumps(ev))
    mini = root / "psf__requests-1766.json"
    mini.write_text((MINI_DIR / mini.name).read_text())
    assert expand_paths([root]) == [conv, mini]
    assert expand_paths([conv]) == [conv]
    flat = expand_paths([root], keep_run_dirs=False)  # the experiment importer hashes files
    assert conv not in flat and conv / "base_state.json" in flat and mini in flat
    result = runner().invoke(app, ["inspect", "--json", str(root)])
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["format"] for line in result.stdout.splitlines()] == ["openhands-v1", "mini-swe-agent"]
    alone = runner().invoke(app, ["inspect", "--json", str(conv)])
    assert alone.exit_code == 0 and json.loads(alone.stdout)["format"] == "openhands-v1"
