"""A cut at any event (docs/protocol.md section 4.5): the state after event N from each exact source (a
verified replay of a mini-swe-agent file, SWE-agent's stored diffs, takeover's recorded snapshots) equals
the state the run recorded there; events past the end and unreplayable runs are refused with the reason;
the checkpoint and view records name the event, and a point-type checkpoint's record keeps its fields."""

from __future__ import annotations

import json

import pytest
from _mini_swe_agent import write_1x
from conftest import CALC_BUGGY, CALC_TEST, git, make_repo

from takeover.checkpoints import materialize_checkpoint
from takeover.points import analyze_run, checkpoint_method, cut_at_event, event_states, run_events
from takeover.points.event_cuts import cut_from_states, event_rows
from takeover.replay_settings import ReplaySettings
from takeover.repository_states.snapshots import snapshot_patch, take_snapshot
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.trajectories import read_trajectory
from takeover.trajectories.events import Event, Trajectory
from takeover.views import load_inputs, write_views

TIMES = "def add(a, b):\n    return a * b\n"
FIXED = "def add(a, b):\n    return a + b\n"
#: (command, output, exit code): a wrong edit, a failing test, the right edit, a passing test.
STEPS = [
    ("ls", "calc.py\ntest_calc.py", 0),
    ("sed -i 's/a - b/a * b/' calc.py", "", 0),
    ("python3 check_calc.py", "1 failed", 1),
    ("sed -i 's/a \\* b/a + b/' calc.py", "", 0),
    ("python3 check_calc.py", "1 passed", 0),
]


def _calc(tmp_path):
    src, sha = make_repo(tmp_path / "src", {"calc.py": CALC_BUGGY, "test_calc.py": CALC_TEST},
                         bare_mirror=tmp_path / "mirror" / "acme__calc.git")
    diffs = {}
    for name, text in (("times", TIMES), ("fixed", FIXED)):
        (src / "calc.py").write_text(text)
        diffs[name] = git(src, "diff", "--full-index")
    task = SourceTask(instance_id="acme__calc-1", repo="acme/calc", base_commit=sha, problem_statement="add() subtracts")
    return task, RepoSource(tmp_path / "mirror", offline=True), diffs


@pytest.fixture
def calc(tmp_path):
    """The calculator task in a one-repository mirror, and the diffs of its two edits."""
    return _calc(tmp_path)


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """``(task, source, diffs, run file, trajectory, states)``: one verified replay of the mini-swe-agent run of
    :data:`STEPS`, shared by the tests that only read it."""
    tmp = tmp_path_factory.mktemp("replayed")
    task, source, diffs = _calc(tmp)
    run = write_1x(tmp / "run.json", "acme__calc-1", STEPS, diffs["fixed"])
    traj = read_trajectory(run)
    return task, source, diffs, run, traj, event_states(traj, task, source, replay=ReplaySettings(use_environment=False, timeout=30))


def _expected(diffs: dict[str, str]) -> list[str]:
    """The recorded state after each event of :data:`STEPS` plus the submission (action, observation)."""
    after = ["", "", diffs["times"], diffs["times"], diffs["times"], diffs["times"], diffs["fixed"], diffs["fixed"]]
    return [*after, diffs["fixed"], diffs["fixed"], diffs["fixed"], diffs["fixed"]]


def test_a_cut_of_a_replayed_mini_swe_agent_run_is_the_state_after_that_event(replayed):
    task, source, diffs, _, traj, states = replayed
    expected = _expected(diffs)
    assert len(traj.events) == len(expected)
    cut = cut_at_event(traj, task, 5, source, replay=ReplaySettings(use_environment=False, timeout=30))
    assert cut.reason is None and cut.replay.method == "verified_replay"
    assert (cut.patch, cut.point.type, cut.point.event_index) == (expected[5], "event", 5)
    for n, want in enumerate(expected):
        point, patch = cut_from_states(traj, states, n)
        assert (patch, point.event_index) == (want, n), n
    assert cut.point.changed_source_files == ["calc.py"]
    assert (cut.point.latest_verification_result, cut.point.validation_after_latest_source_change) == ("failed", "failed")


def test_a_cut_of_stored_diffs_takes_each_events_stored_state(calc):
    task, _, diffs = calc
    events = [Event(index=0, kind="action", source="agent", type="command", command="edit"),
              Event(index=1, kind="observation", source="environment", type="command", state_diff=diffs["times"], cause=0),
              Event(index=2, kind="action", source="agent", type="command", command="view"),
              Event(index=3, kind="observation", source="environment", type="command", cause=2),
              Event(index=4, kind="action", source="agent", type="command", command="edit"),
              Event(index=5, kind="observation", source="environment", type="command", state_diff=diffs["fixed"], cause=4)]
    traj = Trajectory(format="swe-agent", instance_id="acme__calc-1", events=events, final_patch=diffs["fixed"])
    nowhere = RepoSource("/nonexistent", offline=True)
    got = [cut_at_event(traj, task, n, nowhere).patch for n in range(6)]
    assert got == ["", diffs["times"], diffs["times"], diffs["times"], diffs["times"], diffs["fixed"]]
    assert cut_at_event(traj, task, 3, nowhere).replay.method == "stored_diff"


def test_a_cut_of_recorded_snapshots_reads_the_runs_own_trees(calc, tmp_path):
    task, source, _ = calc
    ws = source.workspace(task.repo, task.base_commit, tmp_path / "runws")
    (ws / "calc.py").write_text(TIMES)
    times = take_snapshot(ws)
    (ws / "calc.py").write_text(FIXED)
    fixed = take_snapshot(ws)
    events = [Event(index=0, kind="action", source="agent", type="command", command="sed", snapshot=times),
              Event(index=1, kind="observation", source="environment", type="command", cause=0),
              Event(index=2, kind="action", source="agent", type="command", command="sed", snapshot=fixed),
              Event(index=3, kind="observation", source="environment", type="command", cause=2)]
    traj = Trajectory(format="takeover", events=events, final_patch=snapshot_patch(ws, task.base_commit, fixed),
                      metadata={"snapshot_repo": str(ws)})
    cut = cut_at_event(traj, task, 1, RepoSource(tmp_path / "nowhere", offline=True))
    assert cut.replay.method == "recorded_snapshot"
    assert cut.patch == snapshot_patch(ws, task.base_commit, times)


def test_an_event_past_the_end_or_before_the_start_is_refused_without_a_replay(calc, tmp_path):
    task, _, diffs = calc
    traj = read_trajectory(write_1x(tmp_path / "run.json", "acme__calc-1", STEPS, diffs["fixed"]))
    nowhere = RepoSource("/nonexistent", offline=True)  # a replay would need it
    past = cut_at_event(traj, task, 12, nowhere)
    assert past.point is None and past.replay is None
    assert past.reason == "event 12 is past the end of the run: it has 12 events (0 to 11)"
    assert cut_at_event(traj, task, -1, nowhere).reason == (
        "event -1 does not exist: events are numbered from 0 (this run has 0 to 11)")


def test_a_cut_inside_an_unreplayable_run_is_refused_with_the_replays_reason(calc, tmp_path):
    task, source, diffs = calc
    wrong = diffs["fixed"].replace("a + b", "b + a")  # the run claims a patch its commands never made
    traj = read_trajectory(write_1x(tmp_path / "run.json", "acme__calc-1", STEPS, wrong))
    cut = cut_at_event(traj, task, 3, source, replay=ReplaySettings(use_environment=False, timeout=30))
    assert cut.point is None and cut.patch == ""
    assert cut.reason.startswith("run is unreplayable: ") and "calc.py" in cut.reason
    assert cut.reason == f"run is unreplayable: {cut.replay.reason}"


def test_every_event_lists_the_files_it_changed_and_its_verification(replayed):
    _, _, _, _, traj, states = replayed
    rows = event_rows(traj, states)
    assert len(rows) == 12
    changed = [(r.index, r.changed_files) for r in rows if r.changed_files]
    assert changed == [(2, ["calc.py"]), (6, ["calc.py"])]
    assert [r.index for r in rows if r.source_edit] == [2, 6]
    assert [(r.index, r.verification) for r in rows if r.verification] == [(5, "failed"), (9, "passed")]
    assert rows[2].summary == "sed -i 's/a - b/a * b/' calc.py" and rows[3].summary == rows[2].summary
    assert (rows[7].files, rows[7].patch_lines) == (1, 2)
    assert (rows[0].files, rows[0].patch_lines, rows[0].kind, rows[0].type) == (0, 0, "action", "command")


def test_the_event_listing_of_a_run_is_one_call(calc, tmp_path):
    task, _, diffs = calc
    events = [Event(index=0, kind="action", source="agent", type="command", command="edit"),
              Event(index=1, kind="observation", source="environment", type="command", state_diff=diffs["times"], cause=0)]
    traj = Trajectory(format="swe-agent", instance_id="acme__calc-1", events=events, final_patch=diffs["times"])
    listed = run_events(traj, task, RepoSource("/nonexistent", offline=True))
    assert (listed.reason, listed.replay.method, [r.changed_files for r in listed.rows]) == (
        None, "stored_diff", [[], ["calc.py"]])
    assert json.loads(listed.save(tmp_path / "events.json").read_text())["rows"][1]["changed_files"] == ["calc.py"]


def test_checkpoint_and_views_of_a_cut_name_the_event(replayed, tmp_path):
    task, source, diffs, run, traj, states = replayed
    point, patch = cut_from_states(traj, states, 5)
    cp = materialize_checkpoint(task, traj, point, patch, tmp_path / "cp", checkpoint_method(states.verdict),
                                repo_source=source)
    record = json.loads((tmp_path / "cp" / "checkpoint.json").read_text())
    assert (record["point"]["type"], record["point"]["event_index"]) == ("event", 5)
    assert cp.point.type == "event" and (tmp_path / "cp" / "checkpoint.patch").read_text() == diffs["times"]
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    inputs = load_inputs(run, None, dataset, checkpoint_dir=tmp_path / "cp")
    summary = write_views(inputs, ["repo_only", "raw_trace"], tmp_path / "views")
    assert (summary["point"]["type"], summary["point"]["event_index"]) == ("event", 5)
    raw = (tmp_path / "views" / "raw_trace.md").read_text()
    assert "[step 6 |" in raw and "[step 7 |" not in raw  # event 5 is the sixth step, the last one shown
    direct = load_inputs(run, None, dataset, event=5, repo_source=source)
    assert (direct.point_type, direct.point, direct.checkpoint_patch) == ("event", point, patch)
    assert load_inputs(run, None, dataset, event=40, repo_source=source).missing_reason == (
        "event 40 is past the end of the run: it has 12 events (0 to 11)")


def test_a_point_type_checkpoint_record_keeps_its_fields(calc, tmp_path):
    task, source, diffs = calc
    traj = read_trajectory(write_1x(tmp_path / "run.json", "acme__calc-1", STEPS, diffs["fixed"]))
    rp = analyze_run(traj, task, source, replay=ReplaySettings(use_environment=False, timeout=30))
    point = rp.point("after_first_source_edit")
    materialize_checkpoint(task, traj, point, rp.patches[point.type], tmp_path / "cp", "verified_replay",
                           repo_source=source, workspace=False)
    record = json.loads((tmp_path / "cp" / "checkpoint.json").read_text())
    assert list(record["point"]) == [
        "type", "event_index", "changed_source_files", "changed_test_files", "non_source_artifacts",
        "latest_verification_command", "latest_verification_result", "latest_verification_evidence",
        "validation_after_latest_source_change", "patch_sha256", "patch_lines", "unrecorded_files"]
    assert (record["point"]["type"], record["point"]["event_index"]) == ("after_first_source_edit", 2)
