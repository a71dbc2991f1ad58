"""One name per setting: every --json prints JSON Lines in input order, and --mirror is the one reader of
TAKEOVER_MIRROR."""

from __future__ import annotations

import json

import typer
from conftest import make_repo
from typer.testing import CliRunner

from takeover.cli import app, experiment
from takeover.sources.repos import RepoSource

ENDPOINT = '[[successors]]\nmodel = "m"\nbase_url = "http://127.0.0.1:9/v1"\n'
BASE = '[dataset]\npath = "tasks.jsonl"\ninstance_ids = ["a__b-1"]\n[predecessor]\ntrajectories = ["t/"]\n' + ENDPOINT


def runner() -> CliRunner:
    try:
        return CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 always keeps stderr apart
        return CliRunner()


def _options(command_path: list[str]) -> set[str]:
    command = typer.main.get_command(app)
    for name in command_path:
        command = command.commands[name]
    return {opt for param in command.params for opt in param.opts + param.secondary_opts}


def test_an_unknown_name_is_refused_naming_the_flag(tmp_path):
    res = runner().invoke(app, ["checkpoint", str(tmp_path / "run.json"), "--point-type=after_lunch",
                                "--out-dir", str(tmp_path / "cp"), "--dataset", str(tmp_path / "d.jsonl")])
    assert res.exit_code == 2 and "unknown point type 'after_lunch'" in res.stderr
    res = runner().invoke(app, ["views", str(tmp_path / "run.json"), "--point-type", "after_lunch",
                                "--dataset", str(tmp_path / "d.jsonl"), "--out-dir", str(tmp_path / "v")])
    assert res.exit_code == 2 and "--point-type: unknown point type 'after_lunch'" in " ".join(res.output.split())


def test_the_new_flags_give_no_warning(tmp_path):
    res = runner().invoke(app, ["quickstart", "--backend", "modal", "--out-dir", str(tmp_path / "o")])
    assert res.exit_code == 2 and "warning" not in res.stderr
    assert res.stderr == "error: --backend: unknown backend 'modal': use local or docker\n"


def _experiment(tmp_path, text: str, name: str = "exp.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_run_takes_the_mirror_from_the_environment(tmp_path):
    path = _experiment(tmp_path, 'out_dir = "o"\n' + BASE)
    config = experiment.read_experiment(path, tmp_path / "mirror")
    assert config.mirror_path == (tmp_path / "mirror").resolve()
    named = experiment.read_experiment(_experiment(tmp_path, 'out_dir = "o"\nmirror = "m"\n' + BASE, "named.toml"),
                                       tmp_path / "x")
    assert named.mirror_path == tmp_path / "m"  # the file's own mirror wins
    res = runner().invoke(app, ["run", str(path), "--no-progress"], env={"TAKEOVER_MIRROR": str(tmp_path / "env")})
    assert "warning: " not in res.stderr
    config = json.loads((tmp_path / "o" / "config.resolved.json").read_text())
    assert config["mirror"] == str(tmp_path / "env") and config["offline"] is False


def test_mirror_comes_from_the_option_or_the_variable_never_from_library_code(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_MIRROR", str(tmp_path))
    assert RepoSource().mirror is None  # the library takes what it is given
    assert RepoSource(tmp_path, offline=True) == RepoSource.model_validate_json(
        RepoSource(tmp_path, offline=True).model_dump_json())  # it travels to worker processes as JSON
    make_repo(tmp_path / "src", {"a.py": "x = 1\n"}, bare_mirror=tmp_path / "m" / "octo__demo.git")
    res = runner().invoke(app, ["doctor", "--json"], env={"TAKEOVER_MIRROR": str(tmp_path / "m"),
                                                           "TAKEOVER_CACHE": str(tmp_path / "cache")})
    rows = {r["name"]: r for r in map(json.loads, res.stdout.splitlines())}
    assert rows["mirror"]["status"] == "ok" and "octo/demo" in rows["mirror"]["detail"]


DOES_NOT_APPLY = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,1 +1,1 @@\n-nothing\n+x\n"


def test_grade_json_prints_one_line_per_prediction_in_input_order(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    _, sha = make_repo(tmp_path / "src" / "calc", {"calc.py": "def add(a, b):\n    return a - b\n"},
                       bare_mirror=tmp_path / "mirror" / "acme__calc.git")
    tasks = [{"instance_id": f"acme__calc-{i}", "repo": "acme/calc", "base_commit": sha, "problem_statement": "x",
              "version": "0.1", "FAIL_TO_PASS": [], "PASS_TO_PASS": [], "takeover_env_spec": {"python": None, "test_cmd": "pytest -rA",
                                                      "log_parser": "pytest"}} for i in (2, 1)]
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    patch = tmp_path / "p.diff"
    patch.write_text(DOES_NOT_APPLY)
    res = runner().invoke(app, ["grade", "--dataset", str(dataset), "--instance-id", "acme__calc-2", "--instance-id",
                                "acme__calc-1", "--patch", str(patch), "--mirror", str(tmp_path / "mirror"),
                                "--offline", "--json", "--out-dir", str(tmp_path / "logs")])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert [r["instance_id"] for r in rows] == ["acme__calc-2", "acme__calc-1"]
    assert all(r["handoff_state"] == "invalid" for r in rows)

