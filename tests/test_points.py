"""Handoff point detection over (events, per-event per-file diffs): docs/protocol.md sections 3 and 4."""

from __future__ import annotations

import hashlib

import pytest

from takeover.points import detect_points, source_edits, verifications
from takeover.trajectories.events import Event
from takeover.vocabulary import POINT_TYPES

SRC_V1 = "diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1 +1 @@\n-a\n+b\n"
SRC_V2 = "diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1 +1 @@\n-a\n+c\n"
OTHER = "diff --git a/pkg/other.py b/pkg/other.py\n--- a/pkg/other.py\n+++ b/pkg/other.py\n@@ -1 +1 @@\n-x\n+y\n"
TEST = "diff --git a/tests/test_mod.py b/tests/test_mod.py\n--- a/tests/test_mod.py\n+++ b/tests/test_mod.py\n@@ -1 +1,2 @@\n a\n+b\n"
REPRO = "diff --git a/reproduce.py b/reproduce.py\nnew file mode 100644\n--- /dev/null\n+++ b/reproduce.py\n@@ -0,0 +1 @@\n+print(1)\n"


class Run:
    """Builds (events, diffs) step by step: each command is an action + its observation."""

    def __init__(self):
        self.events: list[Event] = []
        self.diffs: list[dict[str, str]] = []
        self.state: dict[str, str] = {}

    def cmd(self, command: str, output: str = "", exit_code: int | None = 0, **changes: str | None) -> int:
        """Run ``command``; ``changes`` maps a key of FILES to its new diff (None removes it)."""
        i = len(self.events)
        self.events.append(Event(index=i, kind="action", source="agent", type="command", command=command))
        for key, diff in changes.items():
            path = FILES[key]
            if diff is None:
                self.state.pop(path, None)
            else:
                self.state[path] = diff
        self.diffs.append(dict(self.state))
        self.events.append(Event(index=i + 1, kind="observation", source="environment", type="command",
                                 text=output, exit_code=exit_code, cause=i))
        self.diffs.append(dict(self.state))
        return i

    def detect(self):
        return detect_points(self.events, self.diffs)


FILES = {"src": "pkg/mod.py", "other": "pkg/other.py", "test": "tests/test_mod.py", "repro": "reproduce.py"}


def by_type(points):
    return {p.type: p for p in points}


def test_all_three_points_with_every_field():
    r = Run()
    r.cmd("ls")
    r.cmd("cat <<'EOF' > reproduce.py\nprint(1)\nEOF", repro=REPRO)
    r.cmd("python reproduce.py", "Traceback (most recent call last):\nValueError: boom", 1)  # before any edit
    edit1 = r.cmd("sed -i 's/a/b/' pkg/mod.py", src=SRC_V1)
    r.cmd("cat pkg/mod.py", "b")
    r.cmd("python reproduce.py", "ok", 0)  # first verification after the edit: passed
    r.cmd("sed -i 's/x/y/' tests/test_mod.py", test=TEST)  # test edit: not a source edit
    r.cmd("pytest tests -q", "E   AssertionError: b != c\n1 failed, 3 passed in 0.1s", 1)  # first failure
    edit2 = r.cmd("sed -i 's/b/c/' pkg/mod.py", src=SRC_V2)
    r.cmd("pytest tests -q", "4 passed in 0.1s", 0)
    points, missing = r.detect()
    assert missing == []
    assert [p.type for p in points] == list(POINT_TYPES)
    got = by_type(points)

    first = got["after_first_source_edit"]
    assert first.event_index == edit1
    assert first.changed_source_files == ["pkg/mod.py"]
    assert first.changed_test_files == []
    assert first.non_source_artifacts == ["reproduce.py"]
    # The latest verification at or before the point is the pre-edit one (it still counts as context).
    assert first.latest_verification_command == "python reproduce.py"
    assert first.latest_verification_result == "failed"
    assert first.latest_verification_evidence == "ValueError: boom"
    assert first.validation_after_latest_source_change == "none"
    patch = SRC_V1 + REPRO  # path order: pkg/mod.py < reproduce.py
    assert first.patch_sha256 == hashlib.sha256(patch.encode()).hexdigest()
    assert first.patch_lines == 3

    verif = got["after_first_verification_result"]
    assert verif.event_index == edit1 + 5  # the observation of the second `python reproduce.py`
    assert r.events[verif.event_index].kind == "observation"
    assert verif.latest_verification_result == "passed"
    assert verif.validation_after_latest_source_change == "passed"

    post = got["after_first_post_failure_edit"]
    assert post.event_index == edit2
    assert post.changed_test_files == ["tests/test_mod.py"]
    assert post.latest_verification_result == "failed"
    assert post.latest_verification_evidence == "1 failed, 3 passed in 0.1s"
    # The failed run came before the latest source edit (edit2 itself): nothing validated it yet.
    assert post.validation_after_latest_source_change == "none"


def test_verification_before_the_first_edit_does_not_count():
    r = Run()
    r.cmd("python reproduce.py", "AssertionError", 1)
    r.cmd("pytest -q", "1 failed", 1)
    r.cmd("sed -i s/a/b/ pkg/mod.py", src=SRC_V1)
    r.cmd("sed -i s/b/c/ pkg/mod.py", src=SRC_V2)  # an edit after a failure that preceded the first edit
    points, missing = r.detect()
    assert [p.type for p in points] == ["after_first_source_edit"]
    reasons = {m.type: m.reason for m in missing}
    assert "no verification command observed after the first source edit (event 4)" == reasons["after_first_verification_result"]
    assert "no failed verification result" in reasons["after_first_post_failure_edit"]


@pytest.mark.parametrize(
    "restore",
    ["git checkout pkg/mod.py", "git stash", "git restore pkg/mod.py", "git reset --hard", "git clean -fd && git checkout ."],
)
def test_git_restore_events_are_not_the_post_failure_edit(restore):
    r = Run()
    r.cmd("sed -i s/a/b/ pkg/mod.py", src=SRC_V1)
    r.cmd("pytest", "1 failed", 1)
    r.cmd(restore, src=None)  # the source diff changes (reverted), but it is a git restore
    r.cmd("git stash pop", src=SRC_V1)  # also a restore
    real = r.cmd("sed -i s/a/c/ pkg/mod.py", src=SRC_V2)
    points, _ = r.detect()
    assert by_type(points)["after_first_post_failure_edit"].event_index == real
    # They are still source edits in the section 3 sense.
    assert source_edits(r.events, r.diffs) == [0, 4, 6, 8]


def test_only_restores_after_failure_leave_the_point_missing():
    r = Run()
    r.cmd("sed -i s/a/b/ pkg/mod.py", src=SRC_V1)
    fail = r.cmd("python reproduce.py", "Traceback", 1)
    r.cmd("git checkout pkg/mod.py", src=None)
    points, missing = r.detect()
    assert [p.type for p in points] == ["after_first_source_edit", "after_first_verification_result"]
    assert missing[0].type == "after_first_post_failure_edit"
    assert f"first failed verification (event {fail + 1})" in missing[0].reason


def test_test_edits_and_scratch_files_never_create_a_point():
    r = Run()
    r.cmd("cat > reproduce.py", repro=REPRO)
    r.cmd("python reproduce.py", "1 failed", 1)
    r.cmd("vi tests/test_mod.py", test=TEST)
    r.cmd("pytest", "1 passed", 0)
    points, missing = r.detect()
    assert points == []
    assert [m.type for m in missing] == list(POINT_TYPES)
    assert all(m.reason.startswith("no source edit in the run") for m in missing)
    assert "reproduce.py" in missing[0].reason and "tests/test_mod.py" in missing[0].reason


def test_an_edit_of_a_second_source_file_is_a_source_edit():
    r = Run()
    r.cmd("e1", src=SRC_V1)
    r.cmd("pytest", "FAILED", 1)
    r.cmd("touch notes.md")  # no change
    e2 = r.cmd("e2", other=OTHER)
    points, _ = r.detect()
    post = by_type(points)["after_first_post_failure_edit"]
    assert post.event_index == e2 and post.changed_source_files == ["pkg/mod.py", "pkg/other.py"]


def test_unknown_results_count_as_verification_but_not_as_failure():
    r = Run()
    r.cmd("e1", src=SRC_V1)
    r.cmd("python reproduce.py", "Digest realm", None)  # no exit code, no pattern: unknown
    r.cmd("e2", src=SRC_V2)
    points, missing = r.detect()
    assert by_type(points)["after_first_verification_result"].latest_verification_result == "unknown"
    assert [m.type for m in missing] == ["after_first_post_failure_edit"]


def test_verifications_read_the_command_of_the_cause():
    r = Run()
    r.cmd("python -m pytest -x", "2 passed", 0)
    checks = verifications(r.events)
    assert [(v.event_index, v.command, v.result) for v in checks] == [(1, "python -m pytest -x", "passed")]


def test_diffs_must_match_events():
    r = Run()
    r.cmd("ls")
    with pytest.raises(ValueError, match="2 events"):
        detect_points(r.events, r.diffs[:1])
