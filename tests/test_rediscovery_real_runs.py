"""Rediscovery on the shared real runs (docs/protocol.md section 9.1): a run cut at a handoff point
is the predecessor, the same run from its start the successor (a self-pair). Every read, search and
verification before the cut is rediscovery (the count is known exactly), and after the cut only real repeats
are."""

from __future__ import annotations

import pytest
from prerequisites import requires, shared

from takeover.points import detect_points, stored_diffs
from takeover.rediscovery import REDISCOVERY_LABELS, event_derived_states, label_successor
from takeover.trajectories import Trajectory, read_trajectories, read_trajectory

RECOGNISED = ("read", "search", "verification")


def _points(run: Trajectory) -> dict[str, int]:
    points, _ = detect_points(run.events, stored_diffs(run) or event_derived_states(run))
    return {p.type: p.event_index for p in points}


def _self_pair(run: Trajectory, cut: int):
    result = label_successor(run, cut, run, start="base")
    before = [a for a in result.labels if a.event <= cut]
    after = [a for a in result.labels if a.event > cut and a.label in REDISCOVERY_LABELS]
    return result, before, after


@requires("shared:trajectories/mini-swe-agent/django__django-11066.json")
def test_django_11066_cut_after_the_first_source_edit():
    run = read_trajectory(shared("trajectories/mini-swe-agent/django__django-11066.json"))
    assert _points(run)["after_first_source_edit"] == 6
    result, before, after = _self_pair(run, 6)
    # ls -R (0), cat __init__.py (2), a message without a command (4), the here-document (6).
    assert [(a.event, a.label, a.repeats) for a in before] == [
        (0, "research", 0), (2, "reread", 2), (4, "new", None), (6, "redo_edit", 6)]
    assert after == []
    # The first new action that touches the repository: the here-document at 8 (the message at 4 does not).
    assert result.figures.rediscovery_actions == 3 and result.figures.events_until_first_new == 8


@requires("shared:trajectories/mini-swe-agent/psf__requests-1766.json")
def test_requests_1766_a_real_repeat_after_the_cut():
    """The run undoes its sed (event 24) and applies it again (28): a repeat of the checkpoint's edit for the cuts
    before the undo, not for the cut at the undo."""
    run = read_trajectory(shared("trajectories/mini-swe-agent/psf__requests-1766.json"))
    points = _points(run)
    assert points == {"after_first_source_edit": 14, "after_first_verification_result": 17,
                      "after_first_post_failure_edit": 24}
    expected_before = {14: 6, 17: 7, 24: 10}
    for kind, cut in points.items():
        _, before, after = _self_pair(run, cut)
        recognised = [a for a in before if a.kind in RECOGNISED]
        assert len(recognised) == expected_before[cut], kind
        assert all(a.label in REDISCOVERY_LABELS and a.repeats == a.event for a in recognised)
        assert [(a.event, a.label, a.repeats) for a in after] == ([(28, "redo_edit", 14)] if cut < 24 else [])


@requires("shared:trajectories/swe-agent/pydicom__pydicom-1458.gpt4-0x.traj")
def test_swe_agent_run_with_its_own_tools():
    run = read_trajectory(shared("trajectories/swe-agent/pydicom__pydicom-1458.gpt4-0x.traj"))
    points = _points(run)
    _, before, after = _self_pair(run, points["after_first_verification_result"])
    assert [(a.kind, a.label) for a in before if a.kind in RECOGNISED] == [
        ("verification", "rerun"), ("search", "research"), ("read", "reread"), ("verification", "rerun")]
    assert after == []


@requires("shared:trajectories")
@pytest.mark.parametrize("folder", ["mini-swe-agent", "swe-agent", "openhands"])
def test_every_read_search_and_verification_before_the_cut_is_rediscovery(folder):
    root = shared("trajectories") / folder
    pairs = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".traj")):
        if path.name in ("index.json", "run_results_summary.json") or "eval_reports" in path.parts:
            continue
        for run in read_trajectories(path):
            for cut in _points(run).values():
                _, before, _ = _self_pair(run, cut)
                pairs += 1
                for a in before:
                    if a.kind in RECOGNISED:  # it repeats itself, or the same action done again before the cut
                        assert a.label in REDISCOVERY_LABELS and a.event <= a.repeats <= cut, (path.name, cut, a)
                    elif a.label != "new":
                        assert a.kind == "edit" and a.label == "redo_edit", (path.name, cut, a)
    assert pairs > 0
