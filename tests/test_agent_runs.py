"""Agent runs whose numbers must not depend on where they are written, re-runs that must not mix inputs,
the CLI's exit codes, and secrets in every file of a run directory (scripted model, small git repo)."""

from __future__ import annotations

import json

import pytest
from conftest import git, make_repo
from prerequisites import requires
from test_agents import BUGGY, FIXED, SUBMIT, TEST, _checkpoint, bash, events_of, settings

from takeover._util import sandbox
from takeover.agents import ExitStatus, RunLimits
from takeover.agents.runs import run_predecessor, run_takeover
from takeover.errors import InputError
from takeover.sources.repos import RepoSource
from takeover.testing.scripted_server import ScriptedServer


def _cli(args: list[str]):
    from typer.testing import CliRunner

    from takeover.cli import app

    return CliRunner().invoke(app, ["agent", "run", *args])


def _checkpoint_folder(tmp_path, task):
    ws = tmp_path / "scratch"
    make_repo(ws, {"calc.py": BUGGY, "test_calc.py": TEST})
    (ws / "calc.py").write_text(FIXED)
    patch = git(ws, "diff")
    prompt = "<takeover_instructions>continue</takeover_instructions>\n<original_task>fix add</original_task>"
    return _checkpoint(tmp_path, task, patch, prompt)


@requires("bubblewrap")  # without a sandbox the prompt names the host folder (run.json says so)
def test_the_same_takeover_in_two_output_folders_has_identical_prompts_and_numbers(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    folder = _checkpoint_folder(tmp_path, task)
    script = [bash("pwd && cat calc.py"), bash("git diff -- calc.py > patch.txt"), bash(SUBMIT)]
    records, requests = [], []
    for out in (tmp_path / "a", tmp_path / "deeper" / "folder" / "with-a-much-longer-name"):
        with ScriptedServer(script) as srv:
            records.append(run_takeover(folder, "repo_only", settings(srv), out, task=task, repo_source=RepoSource(mirror)))
        requests.append(srv.requests)
    a, b = records
    out_a, out_b = tmp_path / "a", tmp_path / "deeper" / "folder" / "with-a-much-longer-name"
    assert (out_a / "prompt.md").read_text() == (out_b / "prompt.md").read_text()
    assert requests[0][0]["messages"] == requests[1][0]["messages"]  # the whole initial prompt
    assert a.accounting.initial_prompt_chars == b.accounting.initial_prompt_chars > 0
    assert a.accounting.prompt_tokens == b.accounting.prompt_tokens
    assert a.command_root == b.command_root == "/testbed" and a.path_note is None
    assert str(out_a) not in json.dumps(requests[0])
    events = events_of(out_a)
    assert events[1]["text"].startswith("<returncode>0</returncode>\n<output>\n/testbed\n")
    assert events[0]["cwd"] == "/testbed" and "+    return a + b" in a.submission
    # Snapshots were taken on the host path: the patch holds the agent's file.
    assert "patch.txt" in (out_a / "patch.diff").read_text()
    assert a.inputs_key == b.inputs_key and a.setup_seconds is not None and a.setup_seconds > 0


def test_a_finished_run_is_reused_only_for_the_same_inputs(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    out = tmp_path / "run"
    with ScriptedServer([bash("ls")]) as srv:
        first = run_predecessor(task, settings(srv), out, repo_source=RepoSource(mirror), limits=RunLimits(step_limit=1))
    assert first.exit_status is ExitStatus.step_limit and first.inputs["limits"]["step_limit"] == 1
    # Same inputs (another endpoint address of the same model): reused, no model call.
    with ScriptedServer([]) as srv:
        assert run_predecessor(task, settings(srv), out, repo_source=RepoSource(mirror), limits=RunLimits(step_limit=1)) == first
        assert srv.requests == []
        with pytest.raises(InputError, match=r"holds a different run .*differs in limits.*use another --out-dir"):
            run_predecessor(task, settings(srv), out, repo_source=RepoSource(mirror), limits=RunLimits(step_limit=2))
        other = settings(srv).model_copy(update={"model": "other-model"})
        with pytest.raises(InputError, match=r"differs in model\).*model other-model"):
            run_predecessor(task, other, out, repo_source=RepoSource(mirror), limits=RunLimits(step_limit=1))
        with pytest.raises(InputError, match="differs in prompt_sha256"):
            run_predecessor(
                task, settings(srv), out, repo_source=RepoSource(mirror), limits=RunLimits(step_limit=1), prompt="other"
            )
    assert json.loads((out / "run.json").read_text())["inputs_key"] == first.inputs_key  # untouched


def test_a_finished_run_of_an_earlier_version_says_so_and_is_still_read(tmp_path, task_and_mirror):
    from takeover._util.io import stable_hash
    from takeover.trajectories import read_trajectories
    from takeover.trajectories.takeover_run import EARLIER_LIMIT_NAMES

    task, mirror = task_and_mirror
    out = tmp_path / "run"
    with ScriptedServer([bash("ls")]) as srv:
        first = run_predecessor(task, settings(srv), out, repo_source=RepoSource(mirror), limits=RunLimits(step_limit=1))
    # run.json as an earlier version wrote it: the limits under their earlier names, inputs of another form.
    earlier = {name: old for old, name in EARLIER_LIMIT_NAMES.items()}
    data = json.loads((out / "run.json").read_text())
    data["limits"] = {earlier[k]: v for k, v in data["limits"].items()}
    del data["inputs"]["format"]
    data["inputs"]["limits"] = {earlier[k]: v for k, v in data["inputs"]["limits"].items()}
    data["inputs_key"] = stable_hash(data["inputs"])
    assert data["limits"]["steps"] == 1 and data["inputs_key"] != first.inputs_key
    (out / "run.json").write_text(json.dumps(data))
    with ScriptedServer([]) as srv:
        with pytest.raises(InputError, match=r"holds a run written by an earlier version of takeover"):
            run_predecessor(task, settings(srv), out, repo_source=RepoSource(mirror), limits=RunLimits(step_limit=1))
        assert srv.requests == []
    [traj] = read_trajectories(out)
    assert traj.format == "takeover" and traj.agent_events == first.accounting.agent_events


def test_takeover_rerun_with_another_view_is_refused_by_the_cli_with_exit_2(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    folder = _checkpoint_folder(tmp_path, task)
    (folder / "views" / "raw_trace.md").write_text("another view's prompt")
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    out = tmp_path / "run"
    with ScriptedServer([bash("ls")]) as srv:
        base = [
            "--dataset",
            str(dataset),
            "--instance-id",
            task.instance_id,
            "--model",
            "scripted",
            "--base-url",
            srv.base_url,
            "--api-key-env",
            "",
            "--step-limit",
            "1",
            "--mirror",
            str(mirror),
            "--offline",
            "--out-dir",
            str(out),
            "--checkpoint-dir",
            str(folder),
        ]
        done = _cli([*base, "--view", "repo_only"])
        assert done.exit_code == 0, done.output
        assert "step_limit" in done.output and "setup (checkout, environment)" in done.output
        refused = _cli([*base, "--view", "raw_trace"])
    assert refused.exit_code == 2, refused.output
    assert "holds a different run (view repo_only, model scripted" in refused.output
    assert "use another --out-dir or delete it" in refused.output
    assert json.loads((out / "run.json").read_text())["origin"]["view"] == "repo_only"


def test_cli_exits_1_on_a_model_error_and_0_on_agent_outcomes(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    with ScriptedServer([{"status": 500, "error": "endpoint down"}]) as srv:
        base = [
            "--dataset",
            str(dataset),
            "--instance-id",
            task.instance_id,
            "--model",
            "scripted",
            "--base-url",
            srv.base_url,
            "--api-key-env",
            "",
            "--mirror",
            str(mirror),
            "--offline",
            "--max-retry-wait",
            "0.05",  # four attempts of one failing call without seconds of back-off
        ]
        failed = _cli([*base, "--out-dir", str(tmp_path / "bad")])
    assert failed.exit_code == 1, failed.output
    assert "model_error" in failed.output and "exit code 1" in failed.output
    assert json.loads((tmp_path / "bad" / "run.json").read_text())["exit_status"] == "model_error"
    with ScriptedServer([{"content": "no command here"}] * 3) as srv:
        base[base.index("--base-url") + 1] = srv.base_url
        format_errors = _cli([*base, "--out-dir", str(tmp_path / "fmt")])
    assert format_errors.exit_code == 0, format_errors.output
    assert "format_error" in format_errors.output


TOKENS = {
    "github": "ghp_" + "A1b2C3d4E5" * 4,
    "aws": "AKIA" + "ABCDEFGH23456789",
    "slack": "xoxb-" + "1234567890-abcdefghijKL",
    "gitlab": "glpat-" + "xY9_zW8-vU7tS6rQ5pO4",
}


def test_no_token_shape_survives_in_any_file_of_a_run(tmp_path, task_and_mirror):
    task, mirror = task_and_mirror
    echo = " ".join(TOKENS.values())
    # The command builds the tokens from pieces, so only the observation (and the files the agent writes)
    # hold them whole.
    build = "; ".join(f"printf '%s%s\\n' '{t[:4]}' '{t[4:]}'" for t in TOKENS.values())
    script = [
        bash(f"echo {echo}", thought=f"THOUGHT: token {TOKENS['github']}"),
        bash(f"({build}) | tee leak.txt"),
        bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat leak.txt"),
    ]
    with ScriptedServer(script) as srv:
        run_predecessor(task, settings(srv), tmp_path / "run", repo_source=RepoSource(mirror), prompt=f"task {TOKENS['aws']}")
    events = events_of(tmp_path / "run")
    assert TOKENS["github"][4:] in events[3]["text"] or "[REDACTED]" in events[3]["text"]
    written = [p for p in (tmp_path / "run").iterdir() if p.is_file()]
    assert {p.name for p in written} >= {
        "run.json",
        "events.jsonl",
        "calls.jsonl",
        "prompt.md",
        "patch.diff",
        "acme__calc-1.traj.json",
    }
    for path in written:
        text = path.read_text()
        for name, token in TOKENS.items():
            assert token not in text, (path.name, name)
    assert "[REDACTED]" in (tmp_path / "run" / "patch.diff").read_text()
    assert "[REDACTED]" in events[1]["text"] and "[REDACTED]" in events[3]["text"]


def test_redact_masks_common_token_shapes_and_private_keys():
    from takeover._util.redact import MASK, redact, redact_obj

    pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
    text = (
        f"id AKIAABCDEFGH23456789 slack xoxp-12345-67890-abcdefXYZ gl glpat-abcdefghij0123456789\n{pem}\nend"
    )
    assert redact(text) == f"id {MASK} slack {MASK} gl {MASK}\n{MASK}\nend"
    # Not secrets: a word that merely starts like a key, and ordinary upper-case identifiers.
    assert redact("AKIA_CONFIG and MAX_PROMPT_TOKENS") == "AKIA_CONFIG and MAX_PROMPT_TOKENS"
    assert redact_obj({"out": ["\nghp_" + "x" * 36]}) == {"out": ["\n" + MASK]}


def test_without_a_sandbox_the_prompt_names_the_host_path_and_run_json_says_so(
    tmp_path, task_and_mirror, monkeypatch
):
    monkeypatch.setenv(sandbox.DISABLE_ENV, "1")
    task, mirror = task_and_mirror
    with ScriptedServer([bash("pwd")]) as srv:
        record = run_predecessor(
            task, settings(srv), tmp_path / "run", repo_source=RepoSource(mirror), limits=RunLimits(step_limit=1)
        )
    ws = str((tmp_path / "run" / "workspace").resolve())
    assert record.command_root == ws and "depend on the output folder" in record.path_note
    assert f"files in {ws} (this is" in srv.requests[0]["messages"][1]["content"]
    assert events_of(tmp_path / "run")[1]["text"].startswith(f"<returncode>0</returncode>\n<output>\n{ws}\n")
    assert record.sandbox.startswith("sandbox disabled")
