"""``takeover handoff`` on a small git repository with a Claude Code and a Codex CLI session written here in
their native layouts, and the scripted model server as the note writer: the facts, note validation (valid,
retried, leaking, rejected), secrets, the printed prompt, JSON output, no-model output, and that neither the
session file nor the repository changes (docs/protocol.md sections 4, 5 and 7)."""

from __future__ import annotations

import json
import shutil

import pytest
from _replay import Replay
from conftest import git
from handoff_sessions import (
    CALC_FIXED,
    GOOD_NOTE,
    SECRETS,
    calc_repo,
    claude_session,
    codex_session,
    fingerprint,
    note,
)
from typer.testing import CliRunner

from takeover.cli import app
from takeover.handoff import compose_handoff, handoff_markdown, repository_state
from takeover.handoff.printout import PROMPT_MARKER
from takeover.handoff.session import is_source_edit
from takeover.llm import ModelSettings
from takeover.report.transcript import read_transcripts
from takeover.repository_states.snapshots import snapshot_patch, take_snapshot, worktree_patch
from takeover.trajectories.events import Event


@pytest.fixture(scope="module")
def server():
    replay = Replay()
    with replay.server:
        yield replay


@pytest.fixture
def claude(tmp_path):
    root, base = calc_repo(tmp_path / "calc")
    return claude_session(tmp_path / "session.jsonl", root), root, base


def settings(server: Replay) -> ModelSettings:
    return ModelSettings(model="scripted", base_url=server.base_url, api_key_env=None, retries=0)


def cli(*args: str):
    return CliRunner().invoke(app, list(map(str, args)), catch_exceptions=False)


def model_args(server: Replay) -> list[str]:
    return ["--model", "scripted", "--base-url", server.base_url, "--api-key-env", "", "--retries", "0"]


def test_claude_code_session_without_a_model_prints_the_facts_and_the_raw_trace_and_changes_nothing(claude):
    session, root, base = claude
    before, session_bytes = fingerprint(root), session.read_bytes()
    result = cli("handoff", session)  # the repository is the session's own folder
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert fingerprint(root) == before and session.read_bytes() == session_bytes
    assert f"- Repository: `{root}`, changes against HEAD `{base[:12]}` (main)" in out
    assert "- Untracked files: `NOTES.md`" in out  # pytest.log is ignored by git
    assert "- Changed source files: `calc.py`\n- Changed test files: none\n- Non-source artifacts: `NOTES.md`" in out
    assert "- Latest verification: `python -m pytest -q` -> passed" in out
    assert "- Validation status after the latest source change: passed" in out
    assert "- Continuation label: **validated by predecessor**" in out
    assert "no model given: the view is raw_trace" in out
    prompt = out.split(PROMPT_MARKER + "\n\n", 1)[1]
    assert prompt.startswith("<takeover_instructions>") and '<previous_agent view="raw_trace">' in prompt
    assert "[step 1 | agent | command]\npython -m pytest -q" in prompt
    assert "the task is the first request the user made in the previous agent's session\n(claude-code" in prompt
    assert "<task>\nFix sub() in calc.py: it adds. Use my token [REDACTED] if you need to push.\n</task>" in prompt
    assert "OPENAI_API_KEY=[REDACTED]" in prompt
    assert not any(secret in result.output for secret in SECRETS)
    # The raw trace holds each file edit whole: the replaced and the new text, a written file's content.
    assert f"Edit {root}/calc.py\nold text:\n    return a + b  # sub\nnew text:\n    return a - b  # sub" in prompt
    assert f"Write {root}/NOTES.md\nfile text:\nsub fixed" in prompt


def test_a_session_without_usage_has_unknown_token_counts_not_zero(claude, tmp_path):
    session, _, _ = claude
    records = [json.loads(line) for line in session.read_text().splitlines()]
    for record in records:
        (record.get("message") or {}).pop("usage", None)
    bare = tmp_path / "no-usage.jsonl"
    bare.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = cli("handoff", bare, "--repo", session.parent / "calc")
    assert result.exit_code == 0, result.output
    assert "6 model calls, prompt tokens not recorded" in result.stdout
    # The drill-down of the same file: unknown, not 0.
    (t,) = read_transcripts(bare)
    assert (t.prompt_tokens, t.completion_tokens, t.calls_without_usage) == (None, None, 6)
    (t,) = read_transcripts(session)
    assert t.prompt_tokens is not None and t.prompt_tokens > 0


def test_facts_are_the_studys_point_record_and_a_later_untested_edit_needs_verification(tmp_path):
    root, _ = calc_repo(tmp_path / "calc")
    session = claude_session(tmp_path / "s.jsonl", root, sed_after_tests=True)
    h = compose_handoff(session, root)
    assert h.source_edits == [4, 12]  # the Edit, then the sed -i
    p = h.point
    assert (p.type, p.event_index, p.latest_verification_result) == ("session_end", 13, "passed")
    assert p.changed_source_files == ["calc.py"] and p.non_source_artifacts == ["NOTES.md"]
    assert p.patch_sha256 == h.repository.patch_sha256 and p.patch_lines == 3
    f = h.facts
    assert (f.validation_status, f.continuation_label) == ("none", "needs verification")
    assert f.repository_change_state == "2 files changed against the base commit (+2/-1 lines): 1 source, 0 test, 1 other"
    assert h.view_name == "raw_trace" and h.view.validation == "not_applicable"


def test_codex_session_is_diffed_against_its_starting_commit_with_committed_work(tmp_path):
    root, base = calc_repo(tmp_path / "calc")
    session = codex_session(tmp_path / "rollout-2025-10-20T08-00-00-x.jsonl", root, base)
    before = fingerprint(root)
    h = compose_handoff(session, root)
    assert fingerprint(root) == before
    repo = h.repository
    assert (repo.base_source, repo.base_commit) == ("session", base) and repo.head != base
    assert repo.untracked == ["repro_sub.py"] and h.session.start_commit == base
    assert "-    return a + b  # sub\n+    return b - a  # sub" in repo.patch  # committed during the session
    assert h.source_edits == [1]  # apply_patch of calc.py; repro_sub.py is a scratch file
    f = h.facts
    assert f.changed_source_files == ["calc.py"] and f.non_source_artifacts == ["repro_sub.py"]
    assert (f.validation_status, f.latest_validation_command) == ("failed", "python -m pytest -q")
    assert f.latest_validation_evidence == "1 failed, 1 passed"
    assert f.continuation_label == "source change with failing validation"
    assert (h.session.format, h.session.prompt_tokens, h.session.llm_calls) == ("codex-cli", 16000, 3)
    text = handoff_markdown(h)
    assert f"changes against the session's starting commit `{base[:12]}`" in text
    assert "<task>\nFix sub() in calc.py.\n</task>" in text


def test_a_starting_commit_the_repository_lacks_falls_back_to_head(tmp_path):
    root, base = calc_repo(tmp_path / "calc")
    session = codex_session(tmp_path / "rollout.jsonl", root, "0123456789abcdef0123456789abcdef01234567")
    h = compose_handoff(session, root)
    assert h.repository.base_source == "HEAD" and h.repository.base_commit != base
    assert h.facts.changed_source_files == [] and h.facts.continuation_label == "no source change observed"
    assert h.notes[0].startswith("the session started at commit 0123456789ab, which this repository does not have")


def test_structured_notes_valid_note_as_json_with_the_prompt_written_to_a_file(claude, server, tmp_path):
    session, root, _ = claude
    before = fingerprint(root)
    server.script([note()])
    out = tmp_path / "next" / "prompt.md"
    result = cli("handoff", session, "--repo", root, *model_args(server), "--json", "--out-dir", out.parent)
    assert result.exit_code == 0, result.output
    assert fingerprint(root) == before
    [line] = result.stdout.splitlines()
    record = json.loads(line)
    view = record["view"]
    assert (record["view_name"], view["validation"], view["attempts"]) == ("structured_notes", "valid", 1)
    assert view["structured"] == {"facts": record["facts"], "notes": GOOD_NOTE}
    assert out.read_text() == view["prompt"]
    assert "- Work completed: Changed calc.py so that sub returns a - b; wrote NOTES.md." in view["prompt"]
    assert "- Continuation label: validated by predecessor" in view["prompt"]
    assert "patch" not in record["repository"] and record["point"]["type"] == "session_end"
    assert view["note_usage"]["calls"] == 1 and record["failure"] is None
    [request] = server.requests
    sent = json.dumps(request)
    assert "Changed source files: calc.py" in sent and "[REDACTED]" in sent
    assert not any(secret in sent or secret in result.output for secret in SECRETS)


def test_an_invalid_note_is_retried_with_the_reason(claude, server):
    session, root, _ = claude
    server.script([{"content": "The bug is fixed."}, note()])
    h = compose_handoff(session, root, model=settings(server))
    assert (h.view.validation, h.view.attempts) == ("retried", 2)
    assert h.view.rejections == ["attempt 1: the answer is not a JSON object"]
    retry = server.requests[1]["messages"][-1]["content"]
    assert retry.startswith("Your answer could not be used: the answer is not a JSON object.")
    # Every field named again: small models drop one on a retry when told only "the seven fields".
    assert retry.endswith("each of them present, and nothing else: problem_understanding, work_completed, "
                          "evidence_observed, observed_failures, remaining_uncertainty, rollback_notes, "
                          "recommended_next_action.")
    assert "notes retried after 2 attempt(s)" in handoff_markdown(h)


CODEX_NOTE = {
    "problem_understanding": "sub() in calc.py must return its first argument minus its second.",
    "work_completed": "Changed sub in calc.py with apply_patch, wrote repro_sub.py and committed the work.",
    "evidence_observed": "After the edit python -m pytest -q reported 1 failed, 1 passed.",
    "observed_failures": "test_sub failed with assert -2 == 2.",
    "remaining_uncertainty": "Why sub still returns the wrong sign is not yet known.",
    "rollback_notes": "The committed change to sub in calc.py may need to be corrected.",
    "recommended_next_action": "Make sub in calc.py return a - b, then run python -m pytest -q.",
}


def test_a_note_that_denies_the_failing_tests_is_retried_with_the_reasons(tmp_path, server):
    root, base = calc_repo(tmp_path / "calc")
    session = codex_session(tmp_path / "rollout.jsonl", root, base)
    contradicting = {**CODEX_NOTE, "observed_failures": "No failures observed in the log",
                     "remaining_uncertainty": "The task is fixed and done."}
    server.script([{"content": json.dumps(contradicting)}, {"content": json.dumps(CODEX_NOTE)}])
    h = compose_handoff(session, root, model=settings(server))
    assert h.facts.validation_status == "failed" and h.facts.latest_validation_evidence == "1 failed, 1 passed"
    assert (h.view.validation, h.view.attempts) == ("retried", 2)
    assert h.view.structured["notes"] == CODEX_NOTE
    [rejection] = h.view.rejections
    reasons = [
        ("contradiction: field observed_failures says 'No failures observed' but the predecessor saw validation "
        "fail after the latest source change (latest validation evidence: '1 failed, 1 passed')"),
        ("overconfident: field remaining_uncertainty claims 'task is fixed' but no passing validation was observed "
        "after the latest source change (status: failed)"),
    ]
    retry = server.requests[1]["messages"][-1]["content"]
    for reason in reasons:
        assert reason in rejection and reason in retry


def test_the_leak_guard_rejects_grading_vocabulary_without_repeating_hidden_text(claude, server):
    session, root, _ = claude
    server.script([note(rollback_notes="Revert calc.py to the checkpoint if needed."), note()])
    h = compose_handoff(session, root, model=settings(server))
    assert (h.view.validation, h.view.attempts) == ("retried", 2)
    assert h.view.rejections == ["attempt 1: leak (grading_vocabulary): checkpoint"]
    retry = server.requests[1]["messages"][-1]["content"]
    assert "it uses the term 'checkpoint', which does not belong in the notes" in retry


def test_three_rejected_notes_print_the_facts_and_no_prompt(claude, server, tmp_path):
    session, root, _ = claude
    server.script([note(work_completed="Tests pass now; the checkpoint is fine.")] * 3)
    out = tmp_path / "next" / "prompt.md"
    result = cli("handoff", session, "--repo", root, *model_args(server), "--out-dir", out.parent)
    assert result.exit_code == 1, result.output
    assert "## No structured_notes view" in result.stdout and PROMPT_MARKER not in result.stdout
    assert "rejected after 3 attempt(s)" in result.stdout
    assert "- attempt 3: leak (grading_vocabulary): checkpoint" in result.stdout
    assert "- Continuation label: **validated by predecessor**" in result.stdout
    assert not out.exists() and len(server.requests) == 3


def test_summary_notes_and_bad_input(claude, server, tmp_path):
    session, root, _ = claude
    bullets = "- sub() added its arguments.\n- calc.py was changed to subtract.\n- pytest passed afterwards."
    server.script([{"content": bullets}])
    h = compose_handoff(session, root, model=settings(server), view="summary_notes")
    assert h.view.validation == "valid" and h.view.summary_shape == {"bullets": 3, "words": 15}
    assert '<previous_agent view="summary_notes">\n- sub() added its arguments.' in h.prompt
    result = cli("handoff", session, "--view", "summary_notes")
    assert result.exit_code == 2 and "a model is needed to write the notes" in result.stderr
    (tmp_path / "plain").mkdir()
    result = cli("handoff", session, "--repo", tmp_path / "plain")
    assert result.exit_code == 2 and "not inside a git repository" in result.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_text(session.read_text().splitlines()[0] + "\n" + session.read_text().splitlines()[1] + "\n")
    result = cli("handoff", empty, "--repo", root)
    assert result.exit_code == 2 and "the session has no events" in result.stderr


def test_worktree_patch_is_the_snapshot_of_the_study_without_writing(claude, tmp_path):
    _, root, base = claude
    (root / "data.bin").write_bytes(b"\x00\x01binary")
    (root / "test_calc.py").unlink()
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    before = fingerprint(root)
    assert worktree_patch(root, base) == snapshot_patch(copy, base, take_snapshot(copy))
    state = repository_state(root)
    assert state.untracked == ["NOTES.md", "data.bin"] and fingerprint(root) == before
    assert "deleted file mode 100644" in state.patch and "GIT binary patch" in state.patch


@pytest.mark.parametrize(
    ("command", "edits"),
    [
        ("cat calc.py", False),
        ("sed -n 1,5p calc.py && grep -n sub calc.py 2>/dev/null | head", False),
        ("git diff -- calc.py", False),
        ("sed -i 's/+/-/' calc.py", True),
        ("cat > calc.py <<'EOF'\ndef sub(a, b):\n    return a - b\nEOF", True),
        ("python - <<'EOF'\nopen('calc.py', 'w').write('x = 1')\nEOF", True),
        ("git checkout .", True),
        ("python -c 'from calc import sub; print(sub(3, 1))'", False),
        ("python -m pytest -q test_calc.py", False),  # a verification command
        ("rm reproduce.py", False),  # a scratch file is not a source file
        ("cp /elsewhere/calc.py /tmp/calc.py", False),  # outside the repository
        ("echo done > /tmp/out.py", False),
    ],
)
def test_which_commands_count_as_source_edits(command, edits):
    event = Event(index=0, kind="action", source="agent", type="command", command=command, cwd="/work/calc")
    assert is_source_edit(event, ["/work/calc"]) is edits


def test_which_file_edits_count_as_source_edits():
    def edit(path, verb="str_replace", cwd=None):
        return Event(index=0, kind="action", source="agent", type="file_edit", path=path, edit=verb, cwd=cwd)

    roots = ["/home/me/calc", "/old/place/calc"]
    assert is_source_edit(edit("/home/me/calc/calc.py"), roots)
    assert is_source_edit(edit("/old/place/calc/pkg/m.py"), roots)  # the session's own folder
    assert is_source_edit(edit("m.py", cwd="/home/me/calc/pkg"), roots)
    assert not is_source_edit(edit("/home/me/calc/calc.py", "not_applied"), roots)
    assert not is_source_edit(edit("/home/me/calc/tests/test_m.py"), roots)
    assert not is_source_edit(edit("/home/me/other/m.py"), roots)
    assert is_source_edit(edit(None, "apply_patch"), roots)  # a patch that did not parse: counted


def test_handoff_of_a_repository_in_a_subfolder_and_an_unborn_head(tmp_path):
    root, base = calc_repo(tmp_path / "calc")
    session = claude_session(tmp_path / "s.jsonl", root)
    (root / "pkg").mkdir()
    h = compose_handoff(session, root / "pkg")  # a folder inside the repository
    assert h.repository.root == str(root) and h.repository.base_commit == base
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q")
    (fresh / "calc.py").write_text(CALC_FIXED)
    state = repository_state(fresh)
    assert (state.base_source, state.head, state.untracked) == ("empty_tree", None, ["calc.py"])
    assert "+++ b/calc.py" in state.patch
