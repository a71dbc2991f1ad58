"""``takeover resume``: a real mini-swe-agent successor, driven by the scripted model server, continues a
Claude Code session on a copy of a small git repository; the run folder is takeover's run format, the
user's files are untouched unless --apply asks for the successor's changes (docs/protocol.md sections 5
and 8)."""

from __future__ import annotations

import json

import pytest
from conftest import git
from handoff_sessions import CALC_FIXED, calc_repo, claude_session, fingerprint, note
from typer.testing import CliRunner

from takeover.cli import app
from takeover.errors import InputError
from takeover.handoff import repository_state
from takeover.handoff.resume import apply_to_repository, resume_session
from takeover.llm import ModelSettings
from takeover.testing.scripted_server import ScriptedServer
from takeover.trajectories import read_trajectory
from takeover.vocabulary import ExitStatus

MUL = "\n\ndef mul(a, b):\n    return a * b\n"


def bash(command: str) -> dict:
    return {"content": f"THOUGHT: next step\n\n```mswea_bash_command\n{command}\n```"}


SUCCESSOR = [
    note(),  # the structured notes, written by the same model
    bash("git status --short && cat calc.py"),
    bash("printf '\\n\\ndef mul(a, b):\\n    return a * b\\n' >> calc.py && git add -A && git commit -qm mul"),
    bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
]


@pytest.fixture
def claude(tmp_path):
    root, base = calc_repo(tmp_path / "calc")
    return claude_session(tmp_path / "session.jsonl", root), root, base


def settings(srv: ScriptedServer) -> ModelSettings:
    return ModelSettings(model="scripted", base_url=srv.base_url, api_key_env=None, retries=0)


def test_resume_runs_a_successor_on_a_copy_and_leaves_the_repository_as_it_was(claude, tmp_path):
    session, root, base = claude
    before, session_bytes = fingerprint(root), session.read_bytes()
    out = tmp_path / "run"
    with ScriptedServer(SUCCESSOR) as srv:
        result = resume_session(session, root, settings(srv), out)
    assert fingerprint(root) == before and session.read_bytes() == session_bytes
    run = result.record
    assert (run.kind, run.exit_status, run.finished, run.base_commit) == ("takeover", ExitStatus.submitted, True, base)
    origin = run.origin
    assert (origin.point_type, origin.event_index, origin.view, origin.method) == (
        "session_end", 11, "structured_notes", "working_tree")
    assert origin.patch_sha256 == result.handoff.repository.patch_sha256
    assert (out / "prompt.md").read_text() == result.handoff.prompt
    assert "- Work completed: Changed calc.py so that sub returns a - b" in result.handoff.prompt
    assert json.loads((out / "handoff.json").read_text())["facts"]["continuation_label"] == "validated by predecessor"
    assert (out / "handoff.patch").read_text() == result.handoff.repository.patch
    # The copy held the user's uncommitted work, and the successor built on it (its commit stays there).
    ws = out / "workspace"
    assert (ws / "calc.py").read_text() == CALC_FIXED + MUL and (ws / "NOTES.md").is_file()
    assert git(ws, "remote").strip() == "" and not (ws / "pytest.log").exists()
    assert result.changed_files == ["calc.py"]
    successor = (out / "successor.patch").read_text()
    # Only the successor's own lines: the predecessor's fix and NOTES.md are its starting state.
    changed = [line for line in successor.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed == ["+", "+", "+def mul(a, b):", "+    return a * b"]
    traj = read_trajectory(out)
    assert traj.format == "takeover" and traj.agent_events == run.accounting.agent_events == 6
    assert len(srv.requests) == 4 and not result.applied


def test_resume_apply_brings_the_changes_into_the_working_tree_only(claude, tmp_path):
    session, root, _ = claude
    head = git(root, "rev-parse", "HEAD")
    with ScriptedServer(SUCCESSOR) as srv:
        result = CliRunner().invoke(app, [
            "resume", str(session), "--repo", str(root), "--model", "scripted", "--base-url", srv.base_url,
            "--api-key-env", "", "--retries", "0", "--out-dir", str(tmp_path / "run"), "--apply", "--json",
        ], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["applied"] is True and record["record"]["exit_status"] == "submitted"
    assert "patch" not in record["handoff"]["repository"]
    assert (root / "calc.py").read_text() == CALC_FIXED + MUL
    assert (root / "NOTES.md").read_text() == "sub fixed\n" and (root / "pytest.log").is_file()
    assert git(root, "rev-parse", "HEAD") == head and git(root, "diff", "--cached") == ""
    assert json.loads((tmp_path / "run" / "resume.json").read_text())["applied"] is True


def test_apply_refuses_a_repository_that_changed_since_the_handoff_and_out_inside_it(claude, tmp_path):
    session, root, _ = claude
    state = repository_state(root)
    (root / "calc.py").write_text("changed by the user meanwhile\n")
    applied, why = apply_to_repository(state, "diff --git a/x b/x\n", None)
    assert not applied and "the repository changed since the handoff" in why
    assert (root / "calc.py").read_text() == "changed by the user meanwhile\n"
    with ScriptedServer([note()]) as srv, pytest.raises(InputError, match="inside the repository"):
        resume_session(session, root, settings(srv), root / "run")
    assert not (root / "run").exists()


def test_resume_chooses_its_successor_like_agent_run(claude, tmp_path):
    """The agent choice's flags (``--agent``, ``--command-backend``, ``--protocol`` and their options) and the
    model's (``--temperature``) are agent run's: they reach the successor's run, and a choice the runtime or the
    backend refuses is refused before the note writer is called."""
    session, root, _ = claude
    out = tmp_path / "run"
    with ScriptedServer(SUCCESSOR) as srv:
        result = CliRunner().invoke(app, [
            "resume", str(session), "--repo", str(root), "--model", "scripted", "--base-url", srv.base_url,
            "--api-key-env", "", "--out-dir", str(out), "--json", "--agent", "mini-swe-agent", "--command-backend",
            "local", "--protocol", "text", "--temperature", "0.25"])
    assert result.exit_code == 0, result.output
    run = json.loads((out / "run.json").read_text())
    assert (run["agent"], run["command_backend"], run["protocol"]) == ("mini-swe-agent", "local", "text")
    assert run["model"]["temperature"] == 0.25 and srv.requests[-1]["temperature"] == 0.25  # the successor's calls
    assert srv.requests[0]["temperature"] == 0.0  # the notes are written at the protocol's temperature
    refusals = {
        ("--agent-option", "colour=red"): "error: agent mini-swe-agent: field 'options.colour': unknown option (its "
                                          "options: none)",
        ("--command-backend-option", "image=x"): "error: command backend local: field 'command_backend_options.image': "
                                                 "unknown option (its options: none)",
        ("--command-backend", "docker"): "error: agent: field 'command_backend': the successor works on a copy of "
                                         "the repository on this host: use command backend local",
    }
    with ScriptedServer([]) as srv:
        for flags, line in refusals.items():
            refused = CliRunner().invoke(app, ["resume", str(session), "--repo", str(root), "--model", "scripted",
                                               "--base-url", srv.base_url, "--out-dir", str(tmp_path / "no"), *flags])
            assert (refused.exit_code, refused.stderr) == (2, line + "\n")
    assert srv.requests == [] and not (tmp_path / "no").exists()
