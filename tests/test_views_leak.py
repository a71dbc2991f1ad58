"""The leak guard: no view may contain what the predecessor could not have seen at the handoff point
(later events, the handoff state, hidden test names, the gold patch). Each test would fail if that
information reached a view (docs/protocol.md section 7.5)."""

from __future__ import annotations

import pytest
from _views_support import Replay, real_run, real_task, requests_1766_points

from takeover.llm import ModelSettings
from takeover.views import LeakGuard, ViewLeakError, build_view
from takeover.views.raw_trace import raw_trace_block

ID = "psf__requests-1766"
HIDDEN_TEST = "test_requests.py::RequestsTestCase::test_DIGESTAUTH_QUOTES_QOP_VALUE"  # a FAIL_TO_PASS test
LATER_LINE = (  # a line of event 23's output (the failing test run, after the point)
    "TypeError: 'requests.post(url, data=\\'[{\"some\": \"data\"}]\\', files={\\'some\\': f})' object "
    "(type: <class 'str'>) must be callable"
)


@pytest.fixture(scope="module")
def run():
    return real_run(ID)


@pytest.fixture(scope="module")
def task():
    return real_task(ID)


@pytest.fixture(scope="module")
def point():
    return requests_1766_points()["after_first_source_edit"]  # event 14


@pytest.fixture(scope="module")
def guard(run, task, point, checkpoint_patch):
    return LeakGuard(run, point.event_index, task, checkpoint_patch, handoff_state="needs_completion")


def test_the_real_views_are_clean(run, task, point, guard, checkpoint_patch):
    for name in ("repo_only", "raw_trace"):
        assert guard.find(build_view(name, run, point, task, checkpoint_patch).prompt) == []


def test_a_later_event_in_a_view_is_a_leak(run, task, point, guard):
    # event 23 (the failing test run) comes after the point; its output is not visible at event 14
    assert LATER_LINE in run.events[23].text.splitlines()
    leaks = guard.find(f"notes...\n{LATER_LINE}\n...")
    assert [leak.kind for leak in leaks] == ["later_event"]
    later_trace = raw_trace_block(run, 25).block  # a trace that runs past the point
    with pytest.raises(ViewLeakError, match="later_event"):
        guard.check(later_trace, view="raw_trace")


def test_text_that_also_occurs_before_the_point_is_not_a_later_event_leak(run, guard):
    repeated = run.events[3].text  # grep output seen before the point (and again later)
    assert guard.find(repeated) == []


def test_the_handoff_state_is_a_leak(run, task, point, guard):
    assert [leak.kind for leak in guard.find("The checkpoint state is needs_completion.")] == [
        "handoff_state", "grading_vocabulary"]
    assert [leak.kind for leak in guard.find("Per the handoff state, keep going.")] == ["handoff_state"]
    assert [leak.kind for leak in guard.find("label: resolved_preserve")] == ["handoff_state"]


def test_a_template_that_names_the_handoff_state_is_refused_for_every_view(tmp_path, run, task, point, checkpoint_patch):
    (tmp_path / "preamble.md.j2").write_text("The official grading label of this repository is needs_completion.\n")
    for name in ("repo_only", "raw_trace"):
        with pytest.raises(ViewLeakError, match="needs_completion"):
            build_view(name, run, point, task, checkpoint_patch, template_dir=tmp_path, handoff_state="needs_completion")


def test_hidden_test_names_are_leaks_unless_the_predecessor_saw_them(run, task, point, guard):
    assert HIDDEN_TEST in task.FAIL_TO_PASS
    kinds = {leak.kind for leak in guard.find(f"Next, run {HIDDEN_TEST}.")}
    assert kinds == {"hidden_test"}
    assert [leak.detail for leak in guard.find("then test_DIGESTAUTH_QUOTES_QOP_VALUE")] == [
        "test_DIGESTAUTH_QUOTES_QOP_VALUE"]
    # a name in the problem statement is visible
    told = task.model_copy(update={"problem_statement": task.problem_statement + "\nSee test_DIGESTAUTH_QUOTES_QOP_VALUE."})
    assert LeakGuard(run, point.event_index, told).find("then test_DIGESTAUTH_QUOTES_QOP_VALUE") == []
    # a name the predecessor saw in its own test run (event 23, before event 25) is visible there only
    seen = task.model_copy(update={"PASS_TO_PASS": [*task.PASS_TO_PASS,
                                                    "test_requests.py::RequestsTestCase::test_conflicting_post_params"]})
    assert LeakGuard(run, 15, seen).find("test_conflicting_post_params errors")[0].kind == "hidden_test"
    assert LeakGuard(run, 25, seen).find("test_conflicting_post_params errors") == []


def test_gold_patch_lines_the_predecessor_never_wrote_are_leaks(run, task, point, checkpoint_patch):
    gold = task.patch + (
        "diff --git a/requests/utils.py b/requests/utils.py\n--- a/requests/utils.py\n+++ b/requests/utils.py\n"
        "@@ -1,1 +1,2 @@\n import os\n+QOP_QUOTING_ENABLED = quote_qop_values(True)\n"
    )
    guard = LeakGuard(run, point.event_index, task.model_copy(update={"patch": gold}), checkpoint_patch)
    assert [leak.kind for leak in guard.find("add QOP_QUOTING_ENABLED = quote_qop_values(True) to utils")] == ["gold_patch"]
    # the gold line the predecessor wrote itself (qop="auth") is not hidden
    assert guard.find("base += ', qop=\"auth\", nc=%s, cnonce=\"%s\"' % (ncvalue, cnonce)") == []


def test_leaking_notes_are_rejected_and_the_retry_does_not_repeat_the_hidden_text(run, task, point, checkpoint_patch):
    leaking = f"- The test run failed with: {LATER_LINE}\n- More notes."
    clean = "- The agent quoted qop in requests/auth.py.\n- Nothing was re-run after the edit."
    replay = Replay().script([{"content": leaking}, {"content": f"- Run {HIDDEN_TEST}.\n- Done."},
                              {"content": clean}])
    with replay.server:
        result = build_view("summary_notes", run, point, task, checkpoint_patch,
                            model=ModelSettings(model="m", base_url=replay.base_url, api_key_env=None))
    assert (result.validation, result.attempts) == ("retried", 3)
    assert "leak (later_event)" in result.rejections[0] and "leak (hidden_test)" in result.rejections[1]
    assert LATER_LINE not in result.prompt and HIDDEN_TEST not in result.prompt
    for request in replay.requests[1:]:
        feedback = request["messages"][-1]["content"]
        assert LATER_LINE not in feedback and "QUOTES_QOP" not in feedback
        assert "not in the" in feedback


def test_a_fragment_of_a_later_event_cut_mid_line_is_a_leak(run, guard):
    line = next(x for x in run.events[40].text.splitlines() if x.startswith("This confirms my fix is correct"))
    fragment = " ".join(line.split()[1:23])  # 22 words of a later thought, not the whole line
    assert guard.find(line)[0].kind == "later_event"
    assert [leak.kind for leak in guard.find(f"Notes: {fragment}.")] == ["later_event"]
    assert guard.find(" ".join(line.split()[1:19])) == []  # shorter than 20 words: not matched
