"""Checkpoints and the run analysis API: exact sources of per-event states (recorded snapshots, stored
diffs, verified replay), materialized workspaces that reproduce checkpoint.patch, JSON round trips, and
the ``takeover points`` / ``takeover checkpoint`` commands on a small mirror."""

from __future__ import annotations

import hashlib
import json
import subprocess

import pytest
from conftest import git, make_repo
from prerequisites import requires
from typer.testing import CliRunner

from takeover.checkpoints import materialize_checkpoint
from takeover.cli import app
from takeover.errors import InputError
from takeover.points import RunPoints, analyze_run, checkpoint_method
from takeover.replay_settings import ReplaySettings
from takeover.repository_states.snapshots import snapshot_patch, take_snapshot
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.trajectories.events import Event, Trajectory

BASE_FILES = {"pkg/mod.py": "def f():\n    return 1\n", "tests/test_mod.py": "def test_f():\n    pass\n"}
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"


@pytest.fixture
def mirror(tmp_path):
    """A mirror folder with one repository ``acme/widget`` and its base commit."""
    _, sha = make_repo(tmp_path / "src", BASE_FILES, bare_mirror=tmp_path / "mirror" / "acme__widget.git")
    task = SourceTask(instance_id="acme__widget-1", repo="acme/widget", base_commit=sha, problem_statement="f must return 2")
    return tmp_path / "mirror", task


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    """One verified replay of the small run, shared by the tests that only read its result."""
    tmp = tmp_path_factory.mktemp("analyzed")
    _, sha = make_repo(tmp / "src", BASE_FILES, bare_mirror=tmp / "mirror" / "acme__widget.git")
    task = SourceTask(instance_id="acme__widget-1", repo="acme/widget", base_commit=sha, problem_statement="f must return 2")
    source = RepoSource(tmp / "mirror", offline=True)
    traj = _trajectory(_final_patch(tmp, {"pkg/mod.py": "def f():\n    return 2\n"}))
    return task, source, traj, analyze_run(traj, task, source, replay=ReplaySettings(use_environment=False, timeout=30))


def _final_patch(tmp_path, changes: dict[str, str]) -> str:
    repo, _ = make_repo(tmp_path / "final", BASE_FILES)
    for rel, text in changes.items():
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    return git(repo, "diff", "--cached")


def _steps():
    """(command, observation, exit code) of a small mini-swe-agent-like run."""
    return [
        ("cat <<'EOF' > reproduce.py\nfrom pkg.mod import f\nassert f() == 2, f()\nEOF", "", 0),
        ("python3 reproduce.py", "Traceback (most recent call last):\nAssertionError: 1", 1),
        ("sed -i 's/return 1/return 3/' pkg/mod.py", "", 0),
        ("python3 reproduce.py", "Traceback (most recent call last):\nAssertionError: 3", 1),
        ("git checkout pkg/mod.py", "", 0),
        ("sed -i 's/return 1/return 2/' pkg/mod.py", "", 0),
        ("python3 reproduce.py && echo verified", "verified", 0),
        ("rm reproduce.py", "", 0),
    ]


def _trajectory(final_patch: str) -> Trajectory:
    events = []
    for command, output, code in [*_steps(), (SUBMIT, final_patch, None)]:
        i = len(events)
        events.append(Event(index=i, kind="action", source="agent", type="command", command=command))
        events.append(Event(index=i + 1, kind="observation", source="environment", type="command", text=output,
                            exit_code=code, cause=i))
    return Trajectory(format="mini-swe-agent", instance_id="acme__widget-1", events=events,
                      final_patch=final_patch, working_dir="/testbed", source_path="run.json")


def test_analyze_run_by_verified_replay(analyzed):
    _, source, _, rp = analyzed
    assert rp.replay.verified and rp.replay.method == "verified_replay"
    got = {p.type: p for p in rp.points}
    assert rp.missing == []
    assert got["after_first_source_edit"].event_index == 4  # sed -> return 3 (reproduce.py is an artifact)
    assert got["after_first_verification_result"].event_index == 7
    assert got["after_first_verification_result"].latest_verification_result == "failed"
    assert got["after_first_verification_result"].latest_verification_evidence == "AssertionError: 3"
    # The git checkout at event 8 reverts the source: not the post-failure edit; event 10 is.
    assert got["after_first_post_failure_edit"].event_index == 10
    assert got["after_first_post_failure_edit"].non_source_artifacts == ["reproduce.py"]
    for p in rp.points:
        assert p.patch_sha256 == hashlib.sha256(rp.patches[p.type].encode()).hexdigest()
    assert "+    return 3" in rp.patches["after_first_source_edit"]
    assert "+    return 2" in rp.patches["after_first_post_failure_edit"]
    # The mirror is untouched by the replay (no new objects, no index, no refs).
    assert not (source.mirror / "acme__widget.git" / "index").exists()


def test_unreplayable_run_has_no_qualifying_points(mirror, tmp_path):
    mirror_dir, task = mirror
    wrong = _final_patch(tmp_path, {"pkg/mod.py": "def f():\n    return 7\n"})
    rp = analyze_run(_trajectory(wrong), task, RepoSource(mirror_dir, offline=True), replay=ReplaySettings(use_environment=False, timeout=30))
    assert not rp.replay.verified and rp.replay.first_mismatch == "pkg/mod.py"
    assert rp.points == [] and [m.type for m in rp.missing] == [
        "after_first_source_edit", "after_first_verification_result", "after_first_post_failure_edit"]
    assert all(m.reason.startswith("run is unreplayable: ") for m in rp.missing)
    with pytest.raises(ValueError, match="not exact"):
        checkpoint_method(rp.replay)


def test_a_run_without_an_edit_after_its_failure_reports_that_point_missing(mirror, tmp_path):
    """On a repository built here, what the real psf__requests-2317 run shows with the mirror: a source edit,
    a failed verification, and no source edit after it (docs/protocol.md section 4)."""
    mirror_dir, task = mirror
    final = _final_patch(tmp_path, {"pkg/mod.py": "def f():\n    return 3\n",
                                    "reproduce.py": "from pkg.mod import f\nassert f() == 2, f()\n"})
    events = []
    for command, output, code in [_steps()[0], _steps()[2], _steps()[3], (SUBMIT, final, None)]:
        i = len(events)
        events.append(Event(index=i, kind="action", source="agent", type="command", command=command))
        events.append(Event(index=i + 1, kind="observation", source="environment", type="command", text=output,
                            exit_code=code, cause=i))
    t = Trajectory(format="mini-swe-agent", instance_id=task.instance_id, events=events, final_patch=final,
                   working_dir="/testbed")
    rp = analyze_run(t, task, RepoSource(mirror_dir, offline=True), replay=ReplaySettings(use_environment=False, timeout=30))
    assert rp.replay.verified, rp.replay
    assert [(p.type, p.event_index) for p in rp.points] == [
        ("after_first_source_edit", 2), ("after_first_verification_result", 5)]
    assert rp.points[0].changed_source_files == ["pkg/mod.py"]
    assert [m.type for m in rp.missing] == ["after_first_post_failure_edit"]
    assert "first failed verification (event 5)" in rp.missing[0].reason


def test_stored_diffs_are_used_directly(mirror, tmp_path):
    _, task = mirror
    diff = _final_patch(tmp_path, {"pkg/mod.py": "def f():\n    return 2\n"})
    events = [
        Event(index=0, kind="action", source="agent", type="command", command="edit"),
        Event(index=1, kind="observation", source="environment", type="command", text="", state_diff=diff),
        Event(index=2, kind="action", source="agent", type="command", command="pytest"),
        Event(index=3, kind="observation", source="environment", type="command", text="1 failed", state_diff=diff),
    ]
    t = Trajectory(format="swe-agent", events=events, final_patch=diff)
    rp = analyze_run(t, task, RepoSource(tmp_path / "nowhere", offline=True))  # no repository needed
    assert rp.replay.verified and rp.replay.method == "stored_diff" and rp.replay.first_mismatch is None
    assert [(p.type, p.event_index) for p in rp.points] == [
        ("after_first_source_edit", 1), ("after_first_verification_result", 3)]


def test_recorded_snapshots_are_read_from_the_run_repository(mirror, tmp_path):
    mirror_dir, task = mirror
    ws = RepoSource(mirror_dir, offline=True).workspace(task.repo, task.base_commit, tmp_path / "runws")
    t0 = take_snapshot(ws)
    (ws / "pkg/mod.py").write_text("def f():\n    return 2\n")
    t1 = take_snapshot(ws)
    events = [
        Event(index=0, kind="action", source="agent", type="command", command="ls", snapshot=t0),
        Event(index=1, kind="observation", source="environment", type="command", text=""),
        Event(index=2, kind="action", source="agent", type="command", command="sed", snapshot=t1),
        Event(index=3, kind="observation", source="environment", type="command", text=""),
    ]
    t = Trajectory(format="takeover", events=events, final_patch=snapshot_patch(ws, task.base_commit, t1))
    rp = analyze_run(t, task, snapshot_repo=ws)
    assert rp.replay.method == "recorded_snapshot" and rp.replay.verified
    assert [(p.type, p.event_index, p.changed_source_files) for p in rp.points] == [
        ("after_first_source_edit", 2, ["pkg/mod.py"])]


def test_run_points_json_round_trip(analyzed, tmp_path):
    rp = analyzed[3]
    path = rp.save(tmp_path / "out" / "run.points.json")
    back = RunPoints.load(path)
    assert back == rp and back.model_dump_json() == rp.model_dump_json()
    assert back.point("after_first_post_failure_edit").event_index == 10
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(InputError, match="bad.json"):
        RunPoints.load(tmp_path / "bad.json")


def test_materialize_checkpoint_reproduces_the_patch(analyzed, tmp_path):
    task, source, t, rp = analyzed
    point = rp.point("after_first_post_failure_edit")
    patch = rp.patches[point.type]
    out = tmp_path / "cp"
    cp = materialize_checkpoint(task, t, point, patch, out, checkpoint_method(rp.replay), repo_source=source)
    assert (out / "checkpoint.patch").read_text() == patch
    saved = json.loads((out / "checkpoint.json").read_text())
    assert saved["instance_id"] == "acme__widget-1" and saved["method"] == "verified_replay"
    assert saved["point"]["type"] == "after_first_post_failure_edit" and saved["point"]["event_index"] == 10
    assert saved["files"] == ["pkg/mod.py", "reproduce.py"] == cp.files
    assert saved["patch_sha256"] == hashlib.sha256(patch.encode()).hexdigest() == point.patch_sha256
    assert saved["trajectory"] == "run.json"
    ws = out / "workspace"
    assert (ws / "pkg/mod.py").read_text() == "def f():\n    return 2\n"
    assert (ws / "reproduce.py").exists()  # untracked scratch file is part of the checkpoint
    # git apply-able onto a fresh checkout, giving the same state.
    fresh = source.workspace(task.repo, task.base_commit, tmp_path / "fresh")
    subprocess.run(["git", "apply", "--binary", str(out / "checkpoint.patch")], cwd=fresh, check=True)
    assert take_snapshot(fresh) == take_snapshot(ws)
    # Re-running reuses the verified workspace; a tampered one is refused.
    materialize_checkpoint(task, t, point, patch, out, "verified_replay", repo_source=source)
    (ws / "pkg/mod.py").write_text("tampered\n")
    with pytest.raises(InputError, match="does not reproduce checkpoint.patch"):
        materialize_checkpoint(task, t, point, patch, out, "verified_replay", repo_source=source)


def test_checkpoint_without_workspace(mirror, tmp_path):
    _, task = mirror
    from takeover.points import HandoffPoint

    cp = materialize_checkpoint(task, None, HandoffPoint(type="after_first_source_edit", event_index=0), "",
                                tmp_path / "cp", "stored_diff", workspace=False)
    assert cp.files == [] and cp.workspace is None and (tmp_path / "cp" / "checkpoint.patch").read_text() == ""


def _write_run(path, instance_id, final_patch):
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "<pr_description>x</pr_description>"}]
    for command, output, code in [*_steps(), (SUBMIT, final_patch, None)]:
        messages.append({"role": "assistant", "content": f"THOUGHT: go\n\n```bash\n{command}\n```"})
        body = output if code is None else f"<returncode>{code}</returncode>\n<output>\n{output}\n</output>"
        messages.append({"role": "user", "content": body})
    doc = {"instance_id": instance_id, "trajectory_format": "mini-swe-agent-1", "messages": messages,
           "info": {"exit_status": "Submitted", "submission": final_patch, "mini_version": "1.15.0",
                    "config": {"environment": {"cwd": "/testbed"}}}}
    path.write_text(json.dumps(doc))
    return path


def test_cli_points_json_and_checkpoint(mirror, tmp_path, monkeypatch):
    mirror_dir, task = mirror
    final = _final_patch(tmp_path, {"pkg/mod.py": "def f():\n    return 2\n"})
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    run = _write_run(tmp_path / "acme__widget-1.json", "acme__widget-1", final)
    stray = _write_run(tmp_path / "other.json", "acme__widget-404", final)
    monkeypatch.delenv("TAKEOVER_MIRROR", raising=False)
    runner = CliRunner()
    args = ["points", str(run), str(stray), "--dataset", str(dataset), "--mirror", str(mirror_dir), "--offline",
            "--no-environment", "--json", "--out-dir", str(tmp_path / "pts")]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]
    assert len(lines) == 1
    obj = lines[0]
    assert list(obj) == ["instance_id", "replay", "points", "missing"]
    assert obj["replay"] == {"verified": True, "method": "verified_replay", "rule": "whole_tree", "first_mismatch": None,
                             "reason": None, "environment_files": [], "environment": None, "notes": []}
    assert [(p["type"], p["event_index"], p["changed_source_files"]) for p in obj["points"]] == [
        ("after_first_source_edit", 4, ["pkg/mod.py"]),
        ("after_first_verification_result", 7, ["pkg/mod.py"]),
        ("after_first_post_failure_edit", 10, ["pkg/mod.py"]),
    ]
    assert obj["missing"] == []
    assert "skipped" in res.stderr and "acme__widget-404" in res.stderr
    assert (tmp_path / "pts" / "acme__widget-1.points.json").exists()

    res = runner.invoke(app, ["checkpoint", str(run), "--point-type", "after_first_source_edit", "--out-dir", str(tmp_path / "cp"),
                              "--dataset", str(dataset), "--mirror", str(mirror_dir), "--offline",
                              "--points-file", str(tmp_path / "pts" / "acme__widget-1.points.json")])
    assert res.exit_code == 0, res.output
    saved = json.loads((tmp_path / "cp" / "checkpoint.json").read_text())
    assert saved["point"]["event_index"] == 4 and saved["files"] == ["pkg/mod.py", "reproduce.py"]
    assert "return 3" in (tmp_path / "cp" / "workspace" / "pkg/mod.py").read_text()


@requires("bubblewrap")
def test_replayed_commands_cannot_modify_the_mirror(mirror, tmp_path):
    mirror_dir, task = mirror
    bare = mirror_dir / "acme__widget.git"
    refs_before = git(bare, "for-each-ref")
    attack = f"touch {bare}/objects/pwned; rm -rf {bare}/refs {bare}/objects/pack; echo x > {bare}/HEAD"
    events = []
    for i, command in enumerate([attack, "git status --short"]):
        events.append(Event(index=2 * i, kind="action", source="agent", type="command", command=command))
        events.append(Event(index=2 * i + 1, kind="observation", source="environment", type="command", text="",
                            cause=2 * i))
    t = Trajectory(format="mini-swe-agent", events=events, final_patch="", working_dir="/testbed")
    out: list = []
    rp = analyze_run(t, task, RepoSource(mirror_dir, offline=True), replay=ReplaySettings(use_environment=False, timeout=30), result_out=out)
    assert rp.replay.verified  # the attack changed nothing in the workspace either
    assert not (bare / "objects" / "pwned").exists()
    assert git(bare, "for-each-ref") == refs_before and (bare / "HEAD").read_text().startswith("ref: ")
    # The workspace could still read the mirror's objects (git status worked inside the sandbox).
    assert "fatal" not in out[0].steps[2].output
