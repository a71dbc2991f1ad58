"""The scratch rule knows the repository (docs/protocol.md section 3.2): a folder the agent created and named
like scratch (``reproduce_issue/``) holds scratch files, a package the repository has at ``base_commit``
(``debug_toolbar/``, ``tmp_utils/``, ``scratchpad/`` in some projects) holds source files, and a top-level
file ``base_commit`` has is never scratch. Checked on the rule itself, and through every source of
per-event states on a small repository built here."""

from __future__ import annotations

import subprocess

import pytest
from _mini_swe_agent import SUBMIT_1X, write_1x
from conftest import git, make_repo

from takeover.points import analyze_run, detect_points
from takeover.replay_settings import ReplaySettings
from takeover.repository_states.file_classes import file_class, is_scratch_file
from takeover.repository_states.snapshots import snapshot_patch, take_snapshot, top_level_names
from takeover.results import only_source_files_changed
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.trajectories import read_trajectories
from takeover.trajectories.events import Event, Trajectory

BASE = {
    "debug_toolbar/__init__.py": "",
    "debug_toolbar/panels.py": "def panel():\n    return 1\n",
    "tmp_utils/paths.py": "ROOT = '/'\n",
    "debug.py": "DEBUG = False\n",
    "setup.py": "from setuptools import setup\nsetup(name='debug-toolbar')\n",
}
EDIT_PANEL = "sed -i 's/return 1/return 2/' debug_toolbar/panels.py"
NEW_PANEL = "printf 'def timer():\\n    return 0\\n' > debug_toolbar/timer.py"
SCRATCH = "mkdir reproduce_issue && printf 'print(1)\\n' > reproduce_issue/run.py && printf 'x = 1\\n' > tmp_check.py"


def test_the_folder_rule_applies_only_to_folders_base_commit_lacks():
    top = {"debug_toolbar", "tmp_utils", "scratchpad", "debug.py", "setup.py"}
    for path in ("debug_toolbar/panels.py", "debug_toolbar/timer.py", "tmp_utils/paths.py", "scratchpad/core.py"):
        assert not is_scratch_file(path, base_top_level=top) and file_class(path, base_top_level=top) == "source"
    # Folders and files the agent created: the rule as before.
    for path in ("reproduce_issue/run.py", "Debug_runs/a.py", "tmp_check.py", "reproduce.py"):
        assert is_scratch_file(path, base_top_level=top) and file_class(path, base_top_level=top) == "artifact"
    # A top-level file the repository has is its own, whatever its name.
    assert file_class("debug.py", base_top_level=top) == "source"
    # Unknown top level: the name alone decides, as the paper's rule and its folder extension say.
    assert file_class("debug_toolbar/panels.py") == "artifact" and file_class("debug.py") == "artifact"
    assert file_class("sympy/core/reproduce.py", base_top_level=set()) == "source"
    assert file_class("tests/debug_helpers.py", base_top_level=set()) == "test"


def _task(tmp_path) -> tuple[SourceTask, RepoSource]:
    _, sha = make_repo(tmp_path / "src" / "dt", BASE, bare_mirror=tmp_path / "mirror" / "acme__dt.git")
    task = SourceTask(instance_id="acme__dt-1", repo="acme/dt", base_commit=sha, problem_statement="panel returns 1",
                      takeover_env_spec={"python": None, "log_parser": "pytest"})
    return task, RepoSource(tmp_path / "mirror", offline=True)


def _recorded(tmp_path, task, source) -> tuple[Trajectory, object]:
    """Our runner's form of a run: a snapshot after every action (a scratch folder and file first, then an
    edit of the package, a failed test run, and a new module of the package)."""
    ws = source.workspace(task.repo, task.base_commit, tmp_path / "runws")
    events, trees = [], []
    for i, command in enumerate([SCRATCH, EDIT_PANEL, "python -m pytest -q", NEW_PANEL]):
        subprocess.run(["bash", "-c", command], cwd=ws, check=False, capture_output=True)
        trees.append(take_snapshot(ws))
        events.append(Event(index=2 * i, kind="action", source="agent", type="command", command=command,
                            snapshot=trees[-1]))
        text = "1 failed" if "pytest" in command else ""
        events.append(Event(index=2 * i + 1, kind="observation", source="environment", type="command", text=text,
                            state_diff=snapshot_patch(ws, task.base_commit, trees[-1])))
    final = snapshot_patch(ws, task.base_commit, trees[-1])
    return Trajectory(format="takeover", events=events, final_patch=final), ws


def _assert_package_edits_are_source_edits(rp, offset: int) -> None:
    """The run's points, ``offset`` 0 for states taken after actions and 1 after observations."""
    assert rp.replay.verified, rp.replay
    assert [(p.type, p.event_index) for p in rp.points] == [
        ("after_first_source_edit", 2 + offset), ("after_first_verification_result", 5),
        ("after_first_post_failure_edit", 6 + offset)]
    first, _, after_failure = rp.points
    assert first.changed_source_files == ["debug_toolbar/panels.py"]
    assert first.non_source_artifacts == ["reproduce_issue/run.py", "tmp_check.py"]
    assert after_failure.changed_source_files == ["debug_toolbar/panels.py", "debug_toolbar/timer.py"]


def test_edits_of_a_package_named_like_scratch_are_source_edits_in_recorded_and_stored_states(tmp_path):
    task, source = _task(tmp_path)
    traj, ws = _recorded(tmp_path, task, source)
    assert top_level_names(ws, task.base_commit) == ["debug.py", "debug_toolbar", "setup.py", "tmp_utils"]
    recorded = analyze_run(traj, task, source, snapshot_repo=ws)
    assert recorded.replay.method == "recorded_snapshot"
    _assert_package_edits_are_source_edits(recorded, 0)
    stored_only = traj.model_copy(update={"events": [e.model_copy(update={"snapshot": None}) for e in traj.events]})
    stored = analyze_run(stored_only, task, source)
    assert stored.replay.method == "stored_diff" and stored.replay.notes == []
    _assert_package_edits_are_source_edits(stored, 1)
    # Without any copy of the repository the names alone decide, and the verdict says which folders.
    unknown = analyze_run(stored_only, task, RepoSource(tmp_path / "nowhere", offline=True))
    assert unknown.points == [] and "debug_toolbar" in unknown.replay.notes[0]
    assert "counted as scratch folders by name" in unknown.replay.notes[0]


def test_a_replayed_run_edits_the_package_and_its_final_patch_is_all_source(tmp_path):
    task, source = _task(tmp_path)
    work = tmp_path / "recorded"
    git(tmp_path, "clone", "-q", str(tmp_path / "src" / "dt"), str(work))
    for command in (SCRATCH, EDIT_PANEL, NEW_PANEL):
        subprocess.run(["bash", "-c", command], cwd=work, check=True)
    git(work, "add", "-A")
    submission = git(work, "diff", "--cached")
    path = write_1x(tmp_path / "run.json", task.instance_id,
                    [(SCRATCH, "", 0), (EDIT_PANEL, "", 0), (NEW_PANEL, "", 0)], submission)
    traj = read_trajectories(path)[0]
    assert traj.events[-2].command == SUBMIT_1X
    rp = analyze_run(traj, task, source, replay=ReplaySettings(use_environment=False, timeout=60))
    assert rp.replay.verified and rp.replay.method == "verified_replay", rp.replay
    first = rp.point("after_first_source_edit")
    assert traj.events[first.event_index].command == EDIT_PANEL
    assert first.changed_source_files == ["debug_toolbar/panels.py"]
    assert first.non_source_artifacts == ["reproduce_issue/run.py", "tmp_check.py"]
    top = top_level_names(tmp_path / "mirror" / "acme__dt.git", task.base_commit)
    package_only = git(work, "diff", "--cached", "--", "debug_toolbar")
    assert only_source_files_changed(package_only, top) and not only_source_files_changed(package_only)
    assert not only_source_files_changed(submission, top)  # the scratch files are not source


@pytest.mark.parametrize("top", [None, []])
def test_detection_without_the_repository_keeps_the_scratch_folder_out(top):
    diff = "diff --git a/reproduce_issue/run.py b/reproduce_issue/run.py\nnew file mode 100644\n"
    events = [Event(index=0, kind="action", source="agent", type="command", command="mkdir reproduce_issue")]
    points, missing = detect_points(events, [{"reproduce_issue/run.py": diff}], base_top_level=top)
    assert points == [] and missing[0].reason.startswith("no source edit in the run")
