"""Where a run's states come from and what reaches the replay (docs/protocol.md section 5.1): the snapshot
repository our runner names in the trajectory, stored diffs compared with the final patch, the per-command
limits, the sandbox, the work folder and the task environment; and the RunPoints record around them."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import CALC_BUGGY, CALC_TEST, git, make_repo

from takeover.errors import InputError
from takeover.points import RunPoints, analyze_run
from takeover.replay_settings import ReplaySettings
from takeover.repository_states.snapshots import snapshot_patch, take_snapshot
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.trajectories.events import Event, Trajectory

FIXED = "def add(a, b):\n    return a + b\n"


def act(i: int, command: str, **kw) -> Event:
    return Event(index=i, kind="action", source="agent", type="command", command=command, **kw)


def obs(i: int, text: str = "", exit_code: int | None = 0, **kw) -> Event:
    return Event(index=i, kind="observation", source="environment", type="command", text=text, exit_code=exit_code,
                 cause=i - 1, **kw)


@pytest.fixture
def calc(tmp_path):
    """The calculator task in a one-repository mirror, and the patch that fixes it."""
    src, sha = make_repo(tmp_path / "src", {"calc.py": CALC_BUGGY, "test_calc.py": CALC_TEST},
                         bare_mirror=tmp_path / "mirror" / "acme__calc.git")
    (src / "calc.py").write_text(FIXED)
    fix = git(src, "diff")
    task = SourceTask(instance_id="acme__calc-1", repo="acme/calc", base_commit=sha, problem_statement="add() subtracts",
                      takeover_env_spec={"python": None, "test_cmd": "pytest -rA", "log_parser": "pytest"})
    return task, RepoSource(tmp_path / "mirror", offline=True), fix


def run_of(steps: list[str], final_patch: str, **metadata) -> Trajectory:
    events = []
    for command in steps:
        events += [act(len(events), command), obs(len(events) + 1)]
    return Trajectory(format="mini-swe-agent", instance_id="acme__calc-1", events=events, final_patch=final_patch,
                      source_path="runs/calc.json", record="2", working_dir="/testbed", metadata=metadata)


def test_the_record_names_the_run_and_its_missing_points(calc):
    task, source, fix = calc
    run = run_of(["sed -i 's/a - b/a + b/' calc.py", "python -m pytest -q test_calc.py"], fix)
    rp = analyze_run(run, task, source, replay=ReplaySettings(use_environment=False))
    assert (rp.instance_id, rp.repo, rp.base_commit) == ("acme__calc-1", "acme/calc", task.base_commit)
    assert (rp.trajectory, rp.trajectory_record, rp.format, rp.events) == ("runs/calc.json", "2", "mini-swe-agent", 4)
    assert [p.type for p in rp.points] == ["after_first_source_edit", "after_first_verification_result"]
    assert rp.point("after_first_post_failure_edit") is None
    reason = "no failed verification result after the first source edit (event 0)"
    assert [(m.type, m.reason) for m in rp.missing] == [("after_first_post_failure_edit", reason)]
    assert rp.missing_reason("after_first_post_failure_edit") == reason
    assert rp.missing_reason("after_first_source_edit") == "not found"


def test_saved_records_are_two_space_json_and_bad_files_are_named(calc, tmp_path):
    task, source, fix = calc
    rp = analyze_run(run_of(["sed -i 's/a - b/a + b/' calc.py"], fix), task, source, replay=ReplaySettings(use_environment=False))
    path = rp.save(tmp_path / "calc.points.json")
    text = path.read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n"
    assert RunPoints.load(path) == rp
    bad = tmp_path / "bad.points.json"
    bad.write_text('{"instance_id": "x"}')
    with pytest.raises(InputError) as raised:  # the field, not "N validation errors for RunPoints"
        RunPoints.load(bad)
    assert str(raised.value) == (f"{bad}: field 'repo': not a points file (takeover points --out-dir): missing "
                                 "(and 2 more field(s))")


def test_the_snapshot_repository_named_in_the_run_is_used_without_being_told(calc, tmp_path):
    task, source, _ = calc
    ws = source.workspace(task.repo, task.base_commit, tmp_path / "runws")
    (ws / "calc.py").write_text(FIXED)
    fixed = take_snapshot(ws)
    events = [act(0, "ls"), obs(1), act(2, "sed -i 's/a - b/a + b/' calc.py", snapshot=fixed), obs(3)]
    run = Trajectory(format="takeover", events=events, final_patch=snapshot_patch(ws, task.base_commit, fixed),
                     metadata={"snapshot_repo": str(ws)})
    rp = analyze_run(run, task, RepoSource(tmp_path / "nowhere", offline=True))
    assert (rp.replay.method, rp.replay.verified, rp.replay.first_mismatch) == ("recorded_snapshot", True, None)
    assert [(p.type, p.event_index) for p in rp.points] == [("after_first_source_edit", 2)]
    assert rp.patches["after_first_source_edit"] == snapshot_patch(ws, task.base_commit, fixed)


def test_stored_diffs_are_compared_with_the_final_patch_for_information_only(calc):
    task, _, fix = calc
    other = fix.replace("a + b", "b + a")
    events = [act(0, "edit"), obs(1, state_diff=fix), act(2, "edit again"), obs(3, state_diff=other)]
    nowhere = RepoSource("/nonexistent", offline=True)
    rp = analyze_run(Trajectory(format="swe-agent", events=events, final_patch=fix), task, nowhere)
    assert (rp.replay.method, rp.replay.verified, rp.replay.first_mismatch) == ("stored_diff", True, "calc.py")
    same = analyze_run(Trajectory(format="swe-agent", events=events, final_patch=other), task, nowhere)
    assert same.replay.first_mismatch is None
    unknown = analyze_run(Trajectory(format="swe-agent", events=events, final_patch=None), task, nowhere)
    assert unknown.replay.first_mismatch is None and unknown.replay.verified


def test_limits_sandbox_and_work_folder_reach_the_replay(calc, tmp_path):
    task, source, fix = calc
    run = run_of(["pwd", "sed -i 's/a - b/a + b/' calc.py"], fix)
    steps: list = []
    (tmp_path / "work").mkdir()
    rp = analyze_run(run, task, source, work_dir=tmp_path / "work", replay=ReplaySettings(use_environment=False, use_sandbox=False), result_out=steps)
    assert rp.replay.verified and (rp.replay.mode, rp.replay.sandbox) == ("rewrite", "sandbox off: commands run unconfined")
    where = steps[0].steps[0].output.strip()
    assert where.startswith(str(tmp_path / "work" / "takeover-points-")) and where.endswith("/workspace")
    assert list((tmp_path / "work").iterdir()) == []  # removed afterwards
    slow = analyze_run(run_of(["sleep 5", "sed -i 's/a - b/a + b/' calc.py"], fix), task, source, replay=ReplaySettings(use_environment=False, timeout=1))
    assert not slow.replay.verified and "time limit" in slow.replay.reason
    hungry = "python3 -c \"b = bytearray(600 * 1024 * 1024); print(len(b))\""
    fat = analyze_run(run_of([hungry, "sed -i 's/a - b/a + b/' calc.py"], fix), task, source, replay=ReplaySettings(use_environment=False, memory_mb=200))
    assert not fat.replay.verified and "memory" in fat.replay.reason


def test_the_task_environment_reaches_the_replay_or_the_verdict_says_why_not(calc, tmp_path):
    task, source, fix = calc
    run = run_of(["python3 -c 'import sys; print(sys.prefix)'", "sed -i 's/a - b/a + b/' calc.py"], fix)
    steps: list = []
    rp = analyze_run(run, task, source, result_out=steps)  # the environment by default
    assert rp.replay.verified and rp.replay.interpreter == "task environment for acme/calc None"
    # the spec builds nothing: the environment is this interpreter, first on the replayed commands' PATH
    assert steps[0].steps[0].output.strip() == sys.prefix
    plain: list = []
    rp = analyze_run(run, task, source, replay=ReplaySettings(use_environment=False), result_out=plain)
    assert rp.replay.interpreter.startswith("plain interpreter on PATH (") and "no task environment" in rp.replay.interpreter
    unknown = task.model_copy(update={"repo": "acme/calc", "takeover_env_spec": None, "version": "9.9"})
    rp = analyze_run(run, unknown, source)
    assert rp.replay.interpreter.startswith("plain interpreter on PATH (task environment unavailable: ")
    assert "acme/calc" in rp.replay.interpreter
