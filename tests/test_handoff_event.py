"""``takeover handoff --event N``: a session handed over after an earlier event gets the repository as it
was then, rebuilt by replaying the session in a scratch copy and verified against the repository now;
the repository is never changed, and a state that cannot be rebuilt exactly is refused with the reason."""

from __future__ import annotations

import pytest
from conftest import git
from handoff_sessions import CALC, CALC_FIXED, calc_repo, claude_session, fingerprint

from takeover.errors import InputError
from takeover.handoff import compose_handoff


@pytest.fixture
def session(tmp_path):
    root, _ = calc_repo(tmp_path / "calc")
    path = claude_session(tmp_path / "session.jsonl", root)
    return path, root


def _fixed_diff(tmp_path) -> str:
    other, _ = calc_repo(tmp_path / "other")
    (other / "calc.py").write_text(CALC_FIXED)
    return git(other, "diff", "--full-index")


def test_a_handoff_after_an_earlier_event_has_the_repository_as_it_was_then(session, tmp_path):
    path, root = session
    before = fingerprint(root)
    h = compose_handoff(path, root, event=5)  # event 5 answers the Edit of calc.py; NOTES.md came later
    assert (h.point.type, h.point.event_index) == ("event", 5)
    assert h.repository.patch == _fixed_diff(tmp_path)
    assert h.repository.untracked == [] and h.point.changed_source_files == ["calc.py"]
    assert h.point.latest_verification_result == "failed"  # the passing run (event 7) comes after the cut
    assert "[step 6 |" in h.prompt and "[step 7 |" not in h.prompt
    assert any(n.startswith("handoff after event 5: replayed from") for n in h.notes)
    assert fingerprint(root) == before


def test_the_last_event_is_the_repository_now_and_an_event_past_it_is_refused(session):
    path, root = session
    last = compose_handoff(path, root, event=11)
    assert (last.point.type, last.point.event_index) == ("event", 11)
    assert last.repository.patch == compose_handoff(path, root).repository.patch
    with pytest.raises(InputError, match=r"event 12 is not in the session: it has 12 events \(0 to 11\)"):
        compose_handoff(path, root, event=12)


def test_a_repository_changed_after_the_session_cannot_be_cut_before_its_end(session):
    path, root = session
    (root / "calc.py").write_text(CALC.replace("a + b  # sub", "a - b  # sub, by hand"))
    with pytest.raises(InputError, match=r"state after event 5 cannot be rebuilt exactly: its replay does not end "
                                         r"at the repository as it is now \(.*calc\.py"):
        compose_handoff(path, root, event=5)
