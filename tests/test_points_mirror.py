"""Replay of real mini-swe-agent runs against the real repositories (needs TAKEOVER_MIRROR).

The replays use the plain interpreter (no task environment), so they run wherever the mirror exists; the
points asserted here were checked by hand against the trajectories.
"""

from __future__ import annotations

import pytest
from prerequisites import requires, shared

from takeover.checkpoints import materialize_checkpoint
from takeover.points import analyze_run, checkpoint_method
from takeover.replay_settings import ReplaySettings
from takeover.repository_states.snapshots import patch_sha256
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import load_tasks
from takeover.trajectories import read_trajectories

pytestmark = pytest.mark.mirror


def _run(instance_id, mirror_dir):
    traj = read_trajectories(shared(f"trajectories/mini-swe-agent/{instance_id}.json"))[0]
    task = next(t for t in load_tasks(shared("swebench_verified.jsonl")) if t.instance_id == instance_id)
    source = RepoSource(mirror_dir, offline=True)
    return traj, task, source, analyze_run(traj, task, source, replay=ReplaySettings(use_environment=False))


@requires("mirror", counterpart="test_checkpoints.py::test_analyze_run_by_verified_replay")
def test_requests_1766_replays_and_has_all_three_points(mirror_dir, tmp_path):
    traj, task, source, rp = _run("psf__requests-1766", mirror_dir)
    assert rp.replay.verified and rp.replay.method == "verified_replay", rp.replay
    got = {p.type: p for p in rp.points}
    first = got["after_first_source_edit"]
    # Event 14 is `sed -i 's/qop=auth/qop="auth"/' requests/auth.py`; reproduce_issue.py came before it.
    assert first.event_index == 14 and traj.events[14].command.startswith("sed -i")
    assert first.changed_source_files == ["requests/auth.py"]
    assert first.non_source_artifacts == ["reproduce_issue.py"]
    assert got["after_first_verification_result"].event_index == 17  # output of `python3 reproduce_issue.py`
    # `python3 test_requests.py` fails (exit 1); the next source edit reverts the quoting.
    post = got["after_first_post_failure_edit"]
    assert post.event_index == 24 and post.latest_verification_result == "failed"
    assert post.changed_source_files == []
    assert rp.missing == []

    cp = materialize_checkpoint(task, traj, first, rp.patches[first.type], tmp_path / "cp",
                                checkpoint_method(rp.replay), repo_source=source)
    assert cp.files == ["reproduce_issue.py", "requests/auth.py"]
    assert cp.patch_sha256 == first.patch_sha256 == patch_sha256(rp.patches[first.type])
    assert 'qop="auth"' in (tmp_path / "cp" / "workspace" / "requests" / "auth.py").read_text()


@requires("mirror", counterpart="test_checkpoints.py::test_a_run_without_an_edit_after_its_failure_reports_that_point_missing")
def test_requests_2317_replays_and_reports_the_missing_point(mirror_dir):
    _, _, _, rp = _run("psf__requests-2317", mirror_dir)
    assert rp.replay.verified, rp.replay
    assert [(p.type, p.event_index) for p in rp.points] == [
        ("after_first_source_edit", 38), ("after_first_verification_result", 41)]
    assert rp.points[0].changed_source_files == ["requests/sessions.py"]
    assert [m.type for m in rp.missing] == ["after_first_post_failure_edit"]
    assert "first failed verification (event 57)" in rp.missing[0].reason
