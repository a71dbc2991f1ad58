"""Point detection at the edges of docs/protocol.md section 4: which command an observation answers, results
read from the output alone or the exit code alone, a source edit made by the very event that observes a
verification, an edit that reverts everything, the reasons of missing points written out, and a point at
any event (``point_at``)."""

from __future__ import annotations

import hashlib

from takeover.points import detect_points, point_at, source_edits, verifications
from takeover.points.detection import command_of
from takeover.trajectories.events import Event

EDIT = "diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"


def act(i: int, command: str) -> Event:
    return Event(index=i, kind="action", source="agent", type="command", command=command)


def obs(i: int, text: str = "", exit_code: int | None = None, cause: int | None = None) -> Event:
    return Event(index=i, kind="observation", source="environment", type="command", text=text, exit_code=exit_code,
                 cause=cause)


def test_the_command_an_observation_answers():
    events = [act(0, "python reproduce.py"), act(1, "ls"), obs(2), obs(3, cause=0), obs(4, cause=5)]
    assert command_of(events, 3) == "python reproduce.py"  # its cause, event 0, not the nearest action
    assert command_of(events, 2) == "ls"  # no cause: the nearest earlier action
    assert command_of(events, 4) == "ls"  # a cause outside the run: the nearest earlier action
    assert command_of([obs(0), act(1, "pytest")], 0) is None  # no earlier action
    # the nearest earlier action two events back, past another observation
    assert command_of([act(0, "ls"), act(1, "python check.py"), obs(2), obs(3)], 3) == "python check.py"
    assert command_of([act(0, "ls"), obs(1)], 1) == "ls"


def test_results_from_the_output_alone_and_from_the_exit_code_alone():
    events = [act(0, "pytest"), obs(1, "=== 1 failed in 0.1s ===", None, 0),
              act(2, "pytest"), obs(3, "", 1, 2),
              act(4, "pytest"), obs(5, "ok", None, 4)]
    found = [(v.event_index, v.result, v.evidence) for v in verifications(events)]
    assert found == [(1, "failed", "=== 1 failed in 0.1s ==="), (3, "failed", None), (5, "passed", None)]


def test_a_verification_observed_at_the_source_edit_itself_is_not_after_it():
    """A format with per-step diffs may record the edit on the observation that also verifies: the
    verification is not *after* the edit (sections 4.3 and 4.4), neither for the second point type, nor
    for the post-failure edit, nor for the validation after the latest source change."""
    events = [act(0, "python reproduce.py"), obs(1, "Traceback\nAssertionError", 1, 0),
              act(2, "python reproduce.py"), obs(3, "AssertionError again", 1, 2)]
    diffs = [{}, {"pkg/mod.py": EDIT}, {"pkg/mod.py": EDIT}, {"pkg/mod.py": EDIT.replace("a = 2", "a = 3")}]
    points, missing = detect_points(events, diffs)
    assert source_edits(events, diffs) == [1, 3]
    assert [(p.type, p.event_index) for p in points] == [
        ("after_first_source_edit", 1), ("after_first_verification_result", 3)]
    first = points[0]
    assert (first.latest_verification_result, first.validation_after_latest_source_change) == ("failed", "none")
    assert points[1].validation_after_latest_source_change == "none"  # 3 is an edit and the check at once
    assert [(m.type, m.reason) for m in missing] == [(
        "after_first_post_failure_edit",
        "no source edit after the first failed verification (event 3) other than git stash/restore/checkout/reset/clean or a backup copied back")]


def test_an_edit_that_reverts_everything_is_a_point_with_an_empty_patch():
    events = [act(0, "sed -i s/1/2/ pkg/mod.py"), obs(1), act(2, "pytest"), obs(3, "1 failed", 1, 2),
              act(4, "sed -i s/2/1/ pkg/mod.py"), obs(5)]
    diffs = [{"pkg/mod.py": EDIT}] * 4 + [{}, {}]
    points, missing = detect_points(events, diffs)
    assert missing == []
    post = points[2]
    assert (post.type, post.event_index, post.changed_source_files) == ("after_first_post_failure_edit", 4, [])
    assert (post.patch_lines, post.patch_sha256) == (0, hashlib.sha256(b"").hexdigest())
    assert points[0].patch_lines == 2


def test_a_run_without_source_edits_names_the_first_five_paths_it_touched():
    touched = ["a.md", "b.log", "c.txt", "d.json", "e.cfg", "f.ini"]
    events = [act(0, "touch files"), obs(1)]
    points, missing = detect_points(events, [{}, {p: "x" for p in touched}])
    assert points == []
    assert {m.reason for m in missing} == {
        "no source edit in the run (only test files or non-source artifacts changed: a.md, b.log, c.txt, d.json, e.cfg)"}
    assert {m.reason for m in detect_points([act(0, "ls"), obs(1)], [{}, {}])[1]} == {"no source edit in the run"}


def test_the_reasons_of_missing_points_written_out():
    events = [act(0, "sed -i s/1/2/ pkg/mod.py"), obs(1)]
    _, missing = detect_points(events, [{"pkg/mod.py": EDIT}] * 2)
    assert [(m.type, m.reason) for m in missing] == [
        ("after_first_verification_result", "no verification command observed after the first source edit (event 0)"),
        ("after_first_post_failure_edit", "no failed verification result after the first source edit (event 0)"),
    ]


def test_a_point_at_an_event_before_any_source_edit():
    """point_at serves any event (an interrupted session's last one, say), with or without earlier edits."""
    checks = verifications([act(0, "pytest"), obs(1, "2 passed", 0, 0)])
    point = point_at("session_end", 1, {"notes.md": "x"}, [], checks)
    assert (point.type, point.event_index, point.non_source_artifacts) == ("session_end", 1, ["notes.md"])
    assert (point.latest_verification_result, point.validation_after_latest_source_change) == ("passed", "none")
    assert point_at("session_end", 1, {}, [3], checks).validation_after_latest_source_change == "none"


def test_a_replay_failure_reason_is_one_line_without_the_temporary_workspace(tmp_path):
    from takeover.points.event_states import _reason

    ws = tmp_path / "ws"
    ws.mkdir()
    exc = RuntimeError(f"git apply failed in {ws.resolve()}/pkg/a.py\nsecond line")
    assert _reason(exc, ws) == "RuntimeError: git apply failed in <workspace>/pkg/a.py"
    assert _reason(OSError(f"{ws}/x: " + "y" * 400), ws) == "OSError: <workspace>/x: " + "y" * (300 - 15)
    assert _reason(ValueError(), ws) == "ValueError: "
