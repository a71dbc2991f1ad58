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


def _shared_runs(folder: str):
    root = shared("trajectories") / folder
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".traj")):
        if path.name in ("index.json", "run_results_summary.json") or "eval_reports" in path.parts:
            continue
        for run in read_trajectories(path):
            yield path, run


#: Repeats the rules leave new on purpose: their output depends on the time, randomness or the network.
VARYING = ("time", "randomness", "network")


@requires("shared:trajectories")
@pytest.mark.parametrize("folder", FOLDERS := ["mini-swe-agent", "swe-agent", "openhands"])
def test_every_action_before_the_cut_repeats_itself_but_messages_and_varying_output(folder):
    """In a self-pair every action before the cut is the predecessor's own: each read, search, verification,
    edit and command is rediscovery, except a message and a repeat whose output depends on the time,
    randomness or the network."""
    pairs = 0
    for path, run in _shared_runs(folder):
        for cut in _points(run).values():
            _, before, _ = _self_pair(run, cut)
            pairs += 1
            for a in before:
                if a.label == "new":
                    assert a.reason == "message" or a.reason in VARYING, (path.name, cut, a)
                    assert (a.reason == "message") == (run.events[a.event].type in ("message", "finish")), a
                else:  # it repeats itself, or the same action done again before the cut
                    assert a.label in REDISCOVERY_LABELS and a.event <= a.repeats <= cut, (path.name, cut, a)
                    assert a.kind != "edit" or a.label == "redo_edit", (path.name, cut, a)
    assert pairs > 0


#: Measured with the rules before the repeat rule (same command on the same state), on the same self-pairs.
NEW_BEFORE_THE_REPEAT_RULE = (126, 825)


@requires("shared:trajectories")
def test_the_share_of_new_actions_before_the_cut_in_self_pairs(capsys):
    """The actions before the cut still ``new`` in the self-pairs of every shared run, each with its reason
    (printed with ``pytest -s``), against the share before the repeat rule."""
    new: list[tuple[str, str, int, str | None]] = []
    actions = 0
    for folder in FOLDERS:
        for path, run in _shared_runs(folder):
            for kind, cut in _points(run).items():
                _, before, _ = _self_pair(run, cut)
                actions += len(before)
                name = f"{path.name}{'' if run.record is None else '#' + run.record}"
                new += [(name, kind, a.event, a.reason) for a in before if a.label == "new"]
    with capsys.disabled():
        was, of = NEW_BEFORE_THE_REPEAT_RULE
        print(f"\nnew actions before the cut in self-pairs: before the repeat rule {was} of {of} ({was / of:.1%}), "
              f"now {len(new)} of {actions} ({len(new) / actions:.1%})")
        for row in new:
            print("  ", *row)
    assert actions == of and len(new) == 44
    reasons = {r for *_, r in new}
    assert reasons == {"message", "time", "randomness", "network"}
    # The repeats with varying output, by run and event (each counted once per point that cuts after it).
    varying = sorted({(name, event, reason) for name, _, event, reason in new if reason != "message"})
    assert varying == [
        ("django__django-11848.json", 8, "time"),  # python3 -c "...datetime.datetime.now().year"
        ("django__django-11848.json", 12, "time"),  # reproduce_issue.py reads datetime.now()
        ("django__django-11848.json", 24, "time"),  # update_http.py writes code that names datetime.now()
        ("django__django-11848.json", 28, "time"),
        ("marshmallow-code__marshmallow-1867.demo-default.traj", 4, "network"),  # pip install -e .[dev]
        ("marshmallow-code__marshmallow-1867.demo-function_calling_replace_from_source.traj", 4, "network"),
        ("pytest-dev__pytest-5631.json", 4, "network"),  # pip install numpy
        ("swe-gym_openhands_sampled_trajectories.sample_raw.json#index 2", 14, "randomness"),  # torch.randn
        ("swe-gym_openhands_sampled_trajectories.sample_raw.json#index 2", 18, "randomness"),
    ]


@requires("shared:trajectories/swe-agent/marshmallow-code__marshmallow-1867.demo-function_calling_replace.traj")
def test_an_independent_run_of_the_same_task_repeats_only_where_command_and_state_match():
    """Two shared runs of marshmallow-1867, each from the task's starting state: the second is labelled against
    the whole first. The second installs the package first (the first did not): its runs of reproduce.py are
    on another environment."""
    folder = shared("trajectories/swe-agent")
    first = read_trajectory(folder / "marshmallow-code__marshmallow-1867.demo-function_calling_replace.traj")
    second = read_trajectory(folder / "marshmallow-code__marshmallow-1867.demo-function_calling_replace_from_source.traj")
    result = label_successor(first, len(first.events) - 1, second, start="base")
    assert [(a.event, a.label, a.repeats, a.reason) for a in result.labels] == [
        (0, "new", None, "search"),  # ls -F: the first listed the folder after creating reproduce.py
        (2, "new", None, "read"),  # setup.py: never read by the first
        (4, "new", None, "command"),  # pip install -e .[dev]: never run by the first
        (6, "redo_edit", 0, None),  # create reproduce.py
        (8, "redo_edit", 2, None),  # the same insert into it
        (10, "new", None, "verification"),  # python reproduce.py, after an install the first did not make
        (12, "research", 6, None),  # ls -F with reproduce.py created, as the first's
        (14, "research", 8, None),  # find_file fields.py src
        (16, "reread", 10, None),  # src/marshmallow/fields.py, unchanged
        (18, "redo_edit", 14, None),  # the first's last edit of fields.py
        (20, "new", None, "verification"),
        (22, "redo_edit", 18, None),  # rm reproduce.py
        (24, "new", None, "message"),  # submit
    ]
    # Each repeat names an action of the same shape: the same command, view or edit.
    for a in result.labels:
        if a.repeats is not None:
            mine, theirs = second.events[a.event], first.events[a.repeats]
            assert (mine.type, mine.edit, mine.new_text, mine.file_text) == (
                theirs.type, theirs.edit, theirs.new_text, theirs.file_text), a
            assert (mine.command or "").replace('"', "") == (theirs.command or "").replace('"', ""), a
