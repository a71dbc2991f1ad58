"""Model-written notes (summary_notes, structured_notes) against the scripted server: the exact outcome of
valid, broken, overconfident, contradicting and leaking answers, rate limits and timeouts
(docs/protocol.md section 7)."""

from __future__ import annotations

import json

import pytest
from _views_support import Replay, real_run, real_task, requests_1766_patches, requests_1766_points

from takeover.llm import ModelSettings
from takeover.testing.scripted_server import count_words, prompt_words
from takeover.trajectories.events import Event, Trajectory
from takeover.views import NotesFailed, build_view
from takeover.views.evidence import strip_code

ID = "psf__requests-1766"

SUMMARY = """- The issue asks requests to send the Digest auth qop value in double quotes, as RFC 2617 and curl do.
- The agent located the header construction in requests/auth.py, in build_digest_header.
- It wrote reproduce_issue.py, which prints the Authorization header for a fixed challenge.
- Before any edit the script printed qop=auth without quotes.
- The agent then edited requests/auth.py with sed so that the header writes qop="auth".
- The script has not been run again since that edit, so the effect is not yet observed."""

GOOD = {
    "problem_understanding": "Digest auth must send the qop value in double quotes, as RFC 2617 and curl do.",
    "work_completed": 'Edited requests/auth.py so the Authorization header writes qop="auth"; wrote reproduce_issue.py.',
    "evidence_observed": "Before the edit, reproduce_issue.py printed qop=auth without quotes.",
    "observed_failures": "NONE OBSERVED",
    "remaining_uncertainty": "The reproduction script was not re-run after the edit; the test suite was not run.",
    "rollback_notes": "NONE OBSERVED",
    "recommended_next_action": "Run python3 reproduce_issue.py and check the header now contains qop=\"auth\".",
}


def answer(**changes) -> str:
    return json.dumps({**GOOD, **changes})


@pytest.fixture(scope="module")
def replay():
    r = Replay()
    with r.server:
        yield r


@pytest.fixture(scope="module")
def run():
    return real_run(ID)


@pytest.fixture(scope="module")
def task():
    return real_task(ID)


@pytest.fixture(scope="module")
def points():
    return requests_1766_points()


def model(replay: Replay, **kw) -> ModelSettings:
    return ModelSettings(**{"model": "writer", "base_url": replay.base_url, "api_key_env": None, "backoff": 0.01,
                            "timeout": 5.0, **kw})


def test_summary_notes_valid_first_answer(replay, run, task, points, checkpoint_patch):
    point = points["after_first_source_edit"]
    replay.script([{"content": SUMMARY}])
    result = build_view("summary_notes", run, point, task, checkpoint_patch, model=model(replay))
    assert (result.validation, result.attempts, result.rejections) == ("valid", 1, [])
    assert result.block == SUMMARY
    assert f'<previous_agent view="summary_notes">\n{SUMMARY}\n</previous_agent>' in result.prompt
    request = replay.requests[0]
    assert request["temperature"] == 0.0 and request["max_tokens"] == 1600
    assert [m["role"] for m in request["messages"]] == ["system", "user"]
    evidence = request["messages"][1]["content"]
    assert task.problem_statement.strip() in evidence
    assert "[step 15 | agent | command]" in evidence and "[step 16 " not in evidence
    assert "```bash" in evidence  # summary notes keep code; only structured notes remove it
    usage = result.note_usage
    assert (usage.calls, usage.failed_calls) == (1, 0)
    assert usage.prompt_tokens == prompt_words(request) and usage.completion_tokens == count_words(SUMMARY)
    assert result.note_model["model"] == "writer"
    assert result.summary_shape == {"bullets": 6, "words": len(SUMMARY.split())}


def test_structured_notes_valid_answer_and_deterministic_fields(replay, run, task, points, checkpoint_patch):
    replay.script([{"content": answer(), "usage": {"prompt_tokens": 3000, "completion_tokens": 200}}])
    result = build_view("structured_notes", run, points["after_first_source_edit"], task, checkpoint_patch,
                        model=model(replay))
    assert (result.validation, result.attempts) == ("valid", 1)
    assert (result.note_usage.prompt_tokens, result.note_usage.completion_tokens) == (3000, 200)
    facts = result.structured["facts"]
    assert facts["continuation_label"] == "needs verification"
    assert facts["changed_source_files"] == ["requests/auth.py"]
    assert facts["repository_change_state"] == "2 files changed against the base commit (+14/-1 lines): 1 source, 0 test, 1 other"
    assert "- Continuation label: needs verification" in result.block
    assert "- Non-source artifacts: reproduce_issue.py" in result.block
    assert "- Latest validation command: python3 reproduce_issue.py" in result.block
    assert f"- Work completed: {GOOD['work_completed']}" in result.block
    evidence = replay.requests[0]["messages"][1]["content"].split("<event_log>")[1]
    assert "```" not in evidence and "[code block removed]" in evidence
    assert "$ sed -i 's/qop=auth/qop=\"auth\"/' requests/auth.py" in evidence


def test_broken_json_is_retried_and_usage_sums_every_attempt(replay, run, task, points, checkpoint_patch):
    replay.script([
        {"content": '{"problem_understanding": "quote qop", "work_completed": ', "usage": {"prompt_tokens": 100, "completion_tokens": 7}},
        {"content": answer(), "usage": {"prompt_tokens": 130, "completion_tokens": 90, "cached_tokens": 100}},
    ])
    result = build_view("structured_notes", run, points["after_first_source_edit"], task, checkpoint_patch,
                        model=model(replay))
    assert (result.validation, result.attempts) == ("retried", 2)
    assert result.rejections == ["attempt 1: the answer is not a JSON object"]
    u = result.note_usage
    assert (u.calls, u.prompt_tokens, u.completion_tokens, u.cached_tokens) == (2, 230, 97, 100)
    retry = replay.requests[1]["messages"]
    assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
    assert "not a JSON object" in retry[3]["content"]


def test_json_in_a_code_fence_with_trailing_text_is_repaired_without_a_retry(replay, run, task, points, checkpoint_patch):
    replay.script([{"content": f"Here are the notes:\n```json\n{answer()}\n```\nLet me know if you need more."}])
    result = build_view("structured_notes", run, points["after_first_source_edit"], task, checkpoint_patch,
                        model=model(replay))
    assert (result.validation, result.attempts, replay.served) == ("repaired", 1, 1)
    assert result.structured["notes"]["rollback_notes"] == "NONE OBSERVED"


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ({"work_completed": "Fixed."}, "overconfident: field work_completed only says 'Fixed.'"),
        ({"evidence_observed": "All tests pass with the change."}, "overconfident: field evidence_observed claims 'All tests pass'"),
        ({"work_completed": "No code changes were made yet."}, "contradiction: field work_completed says 'No code changes'"),
        ({"work_completed": "NONE OBSERVED"}, "contradiction: work_completed is empty"),
        ({"rollback_notes": "The checkpoint diff may need reverting."}, "leak (grading_vocabulary): checkpoint"),
        ({"remaining_uncertainty": "FAIL_TO_PASS tests were not run."}, "leak (grading_vocabulary): fail_to_pass"),
    ],
)
def test_rejected_answers_are_retried_with_the_reason(replay, run, task, points, bad, reason, checkpoint_patch):
    replay.script([{"content": answer(**bad)}, {"content": answer()}])
    result = build_view("structured_notes", run, points["after_first_source_edit"], task, checkpoint_patch,
                        model=model(replay))
    assert (result.validation, result.attempts, result.note_usage.calls) == ("retried", 2, 2)
    assert len(result.rejections) == 1 and reason in result.rejections[0]


def test_a_success_claim_is_accepted_when_the_predecessor_saw_validation_pass(replay, run, task, points, checkpoint_patch):
    point = points["after_first_verification_result"]  # reproduce_issue.py passed after the edit
    replay.script([{"content": answer(evidence_observed="After the edit the reproduction works as expected.")}])
    result = build_view("structured_notes", run, point, task, checkpoint_patch, model=model(replay))
    assert (result.validation, result.attempts) == ("valid", 1)
    assert result.structured["facts"]["continuation_label"] == "validated by predecessor"


def test_hedged_claims_are_not_overconfidence(replay, run, task, points, checkpoint_patch):
    text = "Whether all tests pass is UNKNOWN; the fix is not verified yet."
    replay.script([{"content": answer(evidence_observed=text)}])
    result = build_view("structured_notes", run, points["after_first_source_edit"], task, checkpoint_patch,
                        model=model(replay))
    assert result.validation == "valid"


def test_three_invalid_answers_fail_with_the_usage_spent(replay, run, task, points, checkpoint_patch):
    replay.script([{"content": "Done."}, {"content": "not json"}, {"content": answer(work_completed="Solved!")}])
    with pytest.raises(NotesFailed) as info:
        build_view("structured_notes", run, points["after_first_source_edit"], task, checkpoint_patch,
                   model=model(replay))
    exc = info.value
    assert (exc.outcome, exc.attempts, exc.usage.calls, replay.served) == ("rejected", 3, 3, 3)
    assert [r.split(":")[0] for r in exc.reasons] == ["attempt 1", "attempt 2", "attempt 3"]


def test_rate_limit_then_valid_is_one_note_attempt_and_two_calls(replay, run, task, points):
    replay.script([{"status": 429, "error": "slow down"}, {"content": SUMMARY}])
    result = build_view("summary_notes", run, points["after_first_source_edit"], task, model=model(replay))
    assert (result.validation, result.attempts) == ("valid", 1)
    assert (result.note_usage.calls, result.note_usage.failed_calls) == (2, 1)
    assert result.note_usage.completion_tokens == count_words(SUMMARY)


def test_timeout_then_valid(replay, run, task, points):
    replay.script([{"delay": 1.5, "content": SUMMARY}, {"content": SUMMARY}])
    result = build_view("summary_notes", run, points["after_first_source_edit"], task,
                        model=model(replay, timeout=0.3))
    assert (result.validation, result.attempts) == ("valid", 1)
    assert (result.note_usage.calls, result.note_usage.failed_calls) == (2, 1)
    assert result.note_usage.seconds >= 0.3


def test_endpoint_failure_is_a_model_error(replay, run, task, points):
    replay.script([{"status": 400, "error": "model not found"}])
    with pytest.raises(NotesFailed) as info:
        build_view("summary_notes", run, points["after_first_source_edit"], task, model=model(replay))
    assert (info.value.outcome, info.value.attempts, info.value.usage.calls) == ("model_error", 1, 1)
    assert "model not found" in str(info.value)


def test_evidence_packet_is_the_last_80_events_each_clipped(replay, task):
    events = []
    for i in range(0, 120, 2):
        events.append(Event(index=i, kind="action", source="agent", type="command", text=f"run {i}\n" + "x" * 2000,
                            command=f"echo {i}"))
        events.append(Event(index=i + 1, kind="observation", source="environment", type="command", text=f"out {i}"))
    run = Trajectory(format="takeover", instance_id=task.instance_id, events=events)
    point = requests_1766_points()["after_first_source_edit"].model_copy(update={"event_index": 100})
    replay.script([{"content": SUMMARY}])
    build_view("summary_notes", run, point, task, model=model(replay))
    evidence = replay.requests[0]["messages"][1]["content"]
    assert "last 80 events (21 earlier events not shown)" in evidence
    assert "[step 22 | environment | command]" in evidence and "[step 21 |" not in evidence
    assert "[step 101 | agent | command]" in evidence and "[step 102 |" not in evidence
    assert "x" * 1193 in evidence and "x" * 1194 not in evidence  # 1,200 characters with "run 22\n"
    assert "[... 808 more characters clipped]" in evidence  # "run 100\n" + 2000 x = 2008 characters


def test_strip_code_removes_fenced_blocks_and_diffs():
    text = "Plan:\n```python\nprint('hi')\n```\nthen\ndiff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\nDone reading."
    assert strip_code(text) == "Plan:\n[code block removed]\nthen\n[patch text removed]\nDone reading."


@pytest.mark.parametrize(
    ("field", "text", "rejected"),
    [
        ("work_completed", "No changes were made to the tests; requests/auth.py was edited.", False),
        ("work_completed", "No code changes have been made so far.", True),
        ("work_completed", "The agent has not made any edits yet.", True),
        ("evidence_observed", "The issue is now fixed.", True),
        ("evidence_observed", "It is not yet verified whether the issue is fixed.", False),
        ("recommended_next_action", "Check that all tests pass.", False),
        ("problem_understanding", "Done", True),
        ("recommended_next_action", "UNKNOWN", True),
        ("observed_failures", "UNKNOWN", False),
    ],
)
def test_content_checks_on_single_fields(field, text, rejected, checkpoint_patch):
    from takeover.views.structured import ModelNotes, compute_fields, content_problems

    facts = compute_fields(requests_1766_points()["after_first_source_edit"], checkpoint_patch)
    notes = ModelNotes.model_validate({**GOOD, field: text})
    assert bool(content_problems(notes, facts)) is rejected


def failing_point():
    """psf__requests-1766 at event 23: ``python3 test_requests.py`` failed after the qop edit (status failed)."""
    return requests_1766_points()["after_first_verification_result"].model_copy(update={
        "event_index": 23, "latest_verification_command": "python3 test_requests.py",
        "latest_verification_result": "failed", "latest_verification_evidence": "FAILED (errors=1)",
        "validation_after_latest_source_change": "failed"})


CONSISTENT = {
    "evidence_observed": "After the edit python3 test_requests.py ran 90 tests and ended with FAILED (errors=1).",
    "observed_failures": "One test raised a TypeError: a string was passed to pytest.raises instead of a callable.",
    "remaining_uncertainty": "Whether the TypeError comes from the qop edit is not yet known.",
    "recommended_next_action": "Run python3 test_requests.py on the unedited code to see whether the error remains.",
}


def test_notes_that_deny_the_failing_validation_are_retried_with_the_reasons(replay, run, task, checkpoint_patch):
    contradicting = answer(observed_failures="No failures observed in the log",
                           remaining_uncertainty="The task is fixed and done.")
    replay.script([{"content": contradicting}, {"content": answer(**CONSISTENT)}])
    result = build_view("structured_notes", run, failing_point(), task, checkpoint_patch, model=model(replay))
    assert (result.validation, result.attempts, result.note_usage.calls) == ("retried", 2, 2)
    assert result.structured["facts"]["validation_status"] == "failed"
    [rejection] = result.rejections
    reasons = [
        ("contradiction: field observed_failures says 'No failures observed' but the predecessor saw validation "
        "fail after the latest source change (latest validation evidence: 'FAILED (errors=1)')"),
        "overconfident: field remaining_uncertainty only says 'The task is fixed and done.'",
        ("overconfident: field remaining_uncertainty claims 'task is fixed' but no passing validation was observed "
        "after the latest source change (status: failed)"),
    ]
    for reason in reasons:
        assert reason in rejection
    retry = replay.requests[1]["messages"][-1]["content"]
    assert retry.startswith("Your answer could not be used: ")
    for reason in reasons:
        assert reason in retry


def test_summary_notes_that_deny_the_failing_validation_are_retried(replay, run, task, checkpoint_patch):
    head = ("- Digest auth must send the qop value in double quotes.\n"
            "- The agent edited requests/auth.py with sed so that the header writes qop=\"auth\".\n")
    bad = head + "- No failures were observed.\n- The issue is fixed."
    good = head + ("- python3 test_requests.py then ran 90 tests and ended with FAILED (errors=1).\n"
                   "- Whether that error comes from the edit is not yet known.")
    replay.script([{"content": bad}, {"content": good}])
    result = build_view("summary_notes", run, failing_point(), task, checkpoint_patch, model=model(replay))
    assert (result.validation, result.attempts, result.block) == ("retried", 2, good)
    [rejection] = result.rejections
    reasons = [
        ("contradiction: the notes say 'No failures were observed' but the predecessor saw validation fail after "
        "the latest source change (latest validation evidence: 'FAILED (errors=1)')"),
        ("overconfident: the notes claim 'issue is fixed' but no passing validation was observed after the latest "
        "source change (status: failed)"),
    ]
    retry = replay.requests[1]["messages"][-1]["content"]
    for reason in reasons:
        assert reason in rejection and reason in retry


@pytest.mark.parametrize(
    ("field", "text", "rejected"),
    [
        ("observed_failures", "NONE OBSERVED", True),
        ("observed_failures", "None.", True),
        ("observed_failures", "No errors were seen.", True),
        ("observed_failures", "UNKNOWN", False),
        ("observed_failures", "The reproduction ran without errors, but test_requests.py failed.", False),
        ("observed_failures", "FAILED (errors=1) from python3 test_requests.py.", False),
        ("evidence_observed", "The test run finished without any errors.", True),
        ("rollback_notes", "NONE OBSERVED", False),
        ("recommended_next_action", "Fix the TypeError and make sure no tests fail.", False),
        ("remaining_uncertainty", "The fix works.", True),
        ("remaining_uncertainty", "Whether the fix works is not known.", False),
        ("rollback_notes", "If the fix works, nothing needs reverting.", False),
        ("recommended_next_action", "Since the bug is solved, delete reproduce_issue.py.", True),
        ("work_completed", "Fixed the bug in requests/auth.py by quoting qop.", True),
        ("work_completed", "Tried to fix the bug in requests/auth.py by quoting qop.", False),
        ("problem_understanding", "It is done and solved.", True),
        # A denial of the failure the predecessor saw is a contradiction in any field.
        ("remaining_uncertainty", "No failures observed after the latest source change.", True),
        ("rollback_notes", "No errors were seen, so nothing needs reverting.", True),
        # A field that repeats its description from the instructions is not filled in.
        ("evidence_observed", "Results the agent actually saw (test output, reproduction output)", True),
        ("recommended_next_action", "One concrete next step.", True),
        ("evidence_observed", "Results the agent saw: test_digest_auth failed with a TypeError.", False),
    ],
)
def test_content_checks_when_validation_failed(field, text, rejected, checkpoint_patch):
    from takeover.views.structured import ModelNotes, compute_fields, content_problems

    facts = compute_fields(failing_point(), checkpoint_patch)
    notes = ModelNotes.model_validate({**GOOD, **CONSISTENT, field: text})
    assert bool(content_problems(notes, facts)) is rejected


@pytest.mark.parametrize(
    ("field", "text", "rejected"),
    [
        ("observed_failures", "NONE OBSERVED", True),  # a failure was seen before the latest edit
        ("remaining_uncertainty", "The task is fixed and done.", True),
    ],
)
def test_content_checks_when_the_latest_evidence_is_a_failure_line(field, text, rejected):
    from takeover.views.structured import ModelNotes, compute_fields, content_problems

    point = requests_1766_points()["after_first_post_failure_edit"]  # status none, evidence FAILED (errors=1)
    facts = compute_fields(point, requests_1766_patches()["after_first_post_failure_edit"])
    notes = ModelNotes.model_validate({**GOOD, "work_completed": "Reverted the qop quoting in requests/auth.py.",
                                       field: text})
    assert bool(content_problems(notes, facts)) is rejected


def test_a_file_edit_is_whole_in_the_raw_trace_and_without_code_in_the_notes_evidence():
    from takeover.trajectories.events import Event
    from takeover.views.evidence import packet_entry, render_event

    edit = Event(index=4, kind="action", source="agent", type="file_edit", text="Edit /repo/calc.py",
                 path="/repo/calc.py", edit="str_replace", old_text="return a + b", new_text="return a - b")
    assert render_event(edit) == ("[step 5 | agent | file_edit]\nEdit /repo/calc.py\n"
                                  "old text:\nreturn a + b\nnew text:\nreturn a - b")
    assert packet_entry(edit, remove_code=True) == "[step 5 | agent | file_edit]\nEdit /repo/calc.py"
    # A reader that left the text empty: the same labels, built from the fields.
    bare = edit.model_copy(update={"text": "", "old_text": None, "new_text": None, "file_text": "x = 1\n"})
    assert render_event(bare) == "[step 5 | agent | file_edit]\nstr_replace /repo/calc.py\nfile text:\nx = 1"
    assert packet_entry(bare, remove_code=True) == "[step 5 | agent | file_edit]\nstr_replace /repo/calc.py"
