"""Replay of whole classes of real-shaped runs, each on a small repository built here and a trajectory
written in the recording tool's own layout: the environment's setup as the starting state, generated and
scratch files, mini-swe-agent 2.x submissions, build products inside submissions, programs missing where
the run was recorded, unreproduced exit codes, and damaged mirrors (docs/protocol.md sections 3 and 5)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from _mini_swe_agent import SUBMIT_2X, write_1x, write_2x
from conftest import git, make_repo
from typer.testing import CliRunner

from takeover.checkpoints import materialize_checkpoint
from takeover.cli import app
from takeover.errors import RepositoryUnavailable
from takeover.points import analyze_run, checkpoint_method
from takeover.replay_settings import ReplaySettings
from takeover.repository_states.replay import replay_trajectory
from takeover.repository_states.snapshots import snapshot_patch, take_snapshot
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.trajectories import read_trajectories
from takeover.trajectories.events import Event, Trajectory

BASE = {
    "setup.py": "from setuptools import setup\nsetup(name='widget', install_requires=['Jinja2>=2.3', 'docutils'])\n",
    "pkg/__init__.py": "",
    "pkg/mod.py": "def f():\n    return 1\n",
    ".gitignore": "*.log\n",
}
# What SWE-bench's specification does to sphinx before the agent starts (a pin written into setup.py).
SETUP_STEP = "sed -i 's/Jinja2>=2.3/Jinja2<3.0/' setup.py"
FIX = "sed -i 's/return 1/return 2/' pkg/mod.py"


def _task(tmp_path, *, pre_install=(SETUP_STEP,), name="widget") -> tuple[SourceTask, RepoSource]:
    _, sha = make_repo(tmp_path / "src" / name, BASE, bare_mirror=tmp_path / "mirror" / f"acme__{name}.git")
    spec = {"pre_install": list(pre_install), "test_cmd": "pytest -rA", "log_parser": "pytest"}
    task = SourceTask(instance_id=f"acme__{name}-1", repo=f"acme/{name}", base_commit=sha,
                      problem_statement="f must return 2", takeover_env_spec=spec)
    return task, RepoSource(tmp_path / "mirror", offline=True)


def _recorded_patch(tmp_path, name: str, *, setup: str | None, commands: list[str], files: list[str] | None = None,
                    staged: bool = True) -> str:
    """The patch the recording image would hold: a clone of the base commit, the environment's setup step
    (committed as SWE-bench's harness does, or left in the working tree), the agent's commands, then the
    submission's own diff command."""
    work = tmp_path / "recorded" / name
    work.parent.mkdir(parents=True, exist_ok=True)
    git(tmp_path, "clone", "-q", str(tmp_path / "src" / "widget"), str(work))
    if setup is not None:
        subprocess.run(["bash", "-c", SETUP_STEP], cwd=work, check=True)
        if setup == "committed":
            git(work, "commit", "-q", "-am", "SWE-bench")
    for command in commands:
        subprocess.run(["bash", "-c", command], cwd=work, check=True)
    if files is not None:
        return git(work, "diff", "--", *files)
    git(work, "add", "-A")
    return git(work, "diff", "--cached")


def _analyze(path, task, source, **options):
    traj = read_trajectories(path)[0]
    results: list = []
    rp = analyze_run(traj, task, source, replay=ReplaySettings(use_environment=False, timeout=60), result_out=results, **options)
    return traj, rp, results[0]


# --- the task environment's own setup is the starting state ------------------------------------------


@pytest.mark.parametrize("form", ["committed", "working_tree"])
def test_environment_setup_is_the_starting_state_whichever_way_the_image_kept_it(tmp_path, form):
    task, source = _task(tmp_path)
    status = "" if form == "committed" else " M setup.py\n"
    submission = _recorded_patch(tmp_path, form, setup=form, commands=[FIX])
    assert ("setup.py" in submission) == (form == "working_tree")
    path = write_1x(tmp_path / "run.json", task.instance_id, [
        ("git status --short", status, 0),
        ("grep -n Jinja2 setup.py", "2:setup(name='widget', install_requires=['Jinja2<3.0', 'docutils'])\n", 0),
        (FIX, "", 0),
    ], submission)
    traj, rp, result = _analyze(path, task, source)

    assert rp.replay.verified and rp.replay.rule == "whole_tree", rp.replay
    assert rp.replay.environment == form and rp.replay.environment_files == ["setup.py"]
    # The replay saw the repository as the agent did: the pin is there, and git shows it as the image did.
    assert result.steps[0].output == status
    assert "Jinja2<3.0" in result.steps[2].output
    # The setup's edit is never the agent's: nothing changed until the agent's own edit at event 4.
    assert all(result.diffs[i] == {} for i in range(4))
    first = rp.point("after_first_source_edit")
    assert first.event_index == 4 and traj.events[4].command == FIX
    assert first.changed_source_files == ["pkg/mod.py"] and first.non_source_artifacts == []
    assert list(rp.patches) == ["after_first_source_edit"]
    assert "setup.py" not in rp.patches["after_first_source_edit"]
    assert "-setup(name='widget', install_requires=['Jinja2>=2.3', 'docutils'])" in rp.environment_patch
    assert "+setup(name='widget', install_requires=['Jinja2<3.0', 'docutils'])" in rp.environment_patch

    cp = materialize_checkpoint(task, traj, first, rp.patches[first.type], tmp_path / "cp", checkpoint_method(rp.replay),
                                repo_source=source, environment_files=rp.replay.environment_files)
    assert cp.files == ["pkg/mod.py"] and cp.environment_files == ["setup.py"]
    assert "return 2" in (tmp_path / "cp" / "workspace" / "pkg" / "mod.py").read_text()


def test_both_forms_give_the_same_points_and_the_task_environment_changes_nothing(tmp_path):
    task, source = _task(tmp_path)
    found = {}
    for form in ("committed", "working_tree"):
        submission = _recorded_patch(tmp_path, form, setup=form, commands=[FIX])
        path = write_1x(tmp_path / f"{form}.json", task.instance_id, [(FIX, "", 0)], submission)
        found[form] = _analyze(path, task, source)[1]
    # The same run in the other image, and replayed inside the task's prepared environment (which runs the
    # setup step itself): the same points, patches and environment edits.
    traj = read_trajectories(tmp_path / "committed.json")[0]
    with_env = analyze_run(traj, task, source, replay=ReplaySettings(use_environment=True, timeout=60))
    assert with_env.replay.verified and with_env.replay.interpreter.startswith("task environment"), with_env.replay
    for rp in (found["working_tree"], with_env):
        assert rp.points == found["committed"].points
        assert rp.patches == found["committed"].patches
        assert rp.environment_patch == found["committed"].environment_patch != ""


def test_recorded_snapshots_and_stored_diffs_leave_the_environment_setup_out(tmp_path):
    """Our own runner prepares the environment in its workspace (the setup step edits setup.py there) and
    snapshots every event; a stored-diff format keeps `git diff` text against base_commit."""
    task, source = _task(tmp_path)
    ws = source.workspace(task.repo, task.base_commit, tmp_path / "runws")
    subprocess.run(["bash", "-c", SETUP_STEP], cwd=ws, check=True)
    t0 = take_snapshot(ws)
    subprocess.run(["bash", "-c", FIX], cwd=ws, check=True)
    t1 = take_snapshot(ws)
    full = snapshot_patch(ws, task.base_commit, t1)
    events = [
        Event(index=0, kind="action", source="agent", type="command", command="ls", snapshot=t0),
        Event(index=1, kind="observation", source="environment", type="command", text="", state_diff=snapshot_patch(ws, task.base_commit, t0)),
        Event(index=2, kind="action", source="agent", type="command", command=FIX, snapshot=t1),
        Event(index=3, kind="observation", source="environment", type="command", text="", state_diff=full),
    ]
    recorded = Trajectory(format="takeover", events=events, final_patch=full)
    stored = Trajectory(format="swe-agent", events=[e.model_copy(update={"snapshot": None}) for e in events],
                        final_patch=full)
    # Snapshots are taken after actions, stored diffs come with observations.
    for traj, method, index in ((recorded, "recorded_snapshot", 2), (stored, "stored_diff", 3)):
        rp = analyze_run(traj, task, source, snapshot_repo=ws if method == "recorded_snapshot" else None)
        assert rp.replay.method == method and rp.replay.environment_files == ["setup.py"], rp.replay
        assert [(p.type, p.event_index, p.changed_source_files) for p in rp.points] == [
            ("after_first_source_edit", index, ["pkg/mod.py"])]
        assert "setup.py" not in rp.patches["after_first_source_edit"]


# --- generated and scratch files -----------------------------------------------------------------------

_SCRATCH = "mkdir reproduce_issue && printf 'from pkg.mod import f\\nprint(f())\\n' > reproduce_issue/run.py"
# Build output that differs on every build: a Sphinx _build with a .js file, and compiled extensions.
_SPHINX = ("python3 -c \"import os; os.makedirs('doc/_build/html/_static', exist_ok=True); "
           "open('doc/_build/html/_static/searchtools.js', 'w').write('var stamp = %r;' % os.urandom(8).hex())\"")
_COMPILE = ("mkdir -p build/lib/pkg && for f in build/lib/pkg/_speed.so pkg/_ext.so; do "
            "{ printf '\\177ELF\\0'; head -c 64 /dev/urandom; } > $f; done")


def test_scratch_folders_and_generated_output_never_make_points_and_checkpoints_repeat(tmp_path):
    task, source = _task(tmp_path, pre_install=())
    commands = [_SCRATCH, _SPHINX, _COMPILE, FIX]
    submission = _recorded_patch(tmp_path, "gen", setup=None, commands=commands)
    assert "_build/html/_static/searchtools.js" in submission and "pkg/_ext.so" in submission
    path = write_1x(tmp_path / "run.json", task.instance_id, [(c, "", 0) for c in commands], submission)
    _traj, rp, result = _analyze(path, task, source)

    assert rp.replay.verified and rp.replay.rule == "whole_tree", rp.replay
    assert any("left out of the submission" in n and "doc/_build/html/_static/searchtools.js" in n
               for n in rp.replay.notes), rp.replay.notes
    assert list(result.diffs[1]) == ["reproduce_issue/run.py"]
    assert result.diffs[3] == result.diffs[5] == result.diffs[1]  # the build output is in no state
    first = rp.point("after_first_source_edit")
    assert first.event_index == 6 and first.changed_source_files == ["pkg/mod.py"]
    assert first.non_source_artifacts == ["reproduce_issue/run.py"]
    assert "_build" not in rp.patches[first.type] and ".so" not in rp.patches[first.type]
    # A second replay builds other bytes: the same checkpoint all the same.
    _, again, _ = _analyze(path, task, source)
    assert again.model_dump_json() == rp.model_dump_json()


# --- mini-swe-agent 2.x submissions --------------------------------------------------------------------

_REPRO = "cat <<'EOF' > reproduce.py\nfrom pkg.mod import f\nprint(f())\nEOF"


def _steps_2x(diff: str):
    return [(_REPRO, "", 0), ("python3 reproduce.py", "1\n", 0), (FIX, "", 0), ("python3 reproduce.py", "2\n", 0),
            ("git diff -- pkg/mod.py > patch.txt", "", 0), ("cat patch.txt", diff, 0)]


def test_mini_swe_agent_2_submission_verifies_on_the_submitted_files(tmp_path):
    task, source = _task(tmp_path, pre_install=())
    submission = _recorded_patch(tmp_path, "2x", setup=None, commands=[_REPRO, FIX], files=["pkg/mod.py"])
    path = write_2x(tmp_path / "run.traj.json", task.instance_id, _steps_2x(submission), submission)
    traj, rp, result = _analyze(path, task, source)

    assert traj.events[-2].type == "finish" and traj.events[-2].command == SUBMIT_2X
    assert rp.replay.verified and rp.replay.rule == "submitted_files", rp.replay
    # Everything else stays as it was in the predecessor's tree: the scratch script and patch.txt.
    assert sorted(result.diffs[-1]) == ["patch.txt", "pkg/mod.py", "reproduce.py"]
    first = rp.point("after_first_source_edit")
    assert first.event_index == 4 and first.changed_source_files == ["pkg/mod.py"]
    check = rp.point("after_first_verification_result")
    assert check.event_index == 7 and check.non_source_artifacts == ["reproduce.py"]
    cp = materialize_checkpoint(task, traj, check, rp.patches[check.type], tmp_path / "cp", checkpoint_method(rp.replay),
                                repo_source=source)
    assert cp.files == ["pkg/mod.py", "reproduce.py"]


def test_mini_swe_agent_2_run_that_disagrees_inside_the_submitted_files_fails(tmp_path):
    task, source = _task(tmp_path, pre_install=())
    claimed = _recorded_patch(tmp_path, "claimed", setup=None, commands=[_REPRO, FIX.replace("2/", "3/")],
                              files=["pkg/mod.py"])
    path = write_2x(tmp_path / "run.traj.json", task.instance_id, _steps_2x(claimed), claimed)
    _, rp, _ = _analyze(path, task, source)
    assert not rp.replay.verified and rp.replay.first_mismatch == "pkg/mod.py"
    assert "inside the submitted files" in rp.replay.reason
    assert rp.points == [] and all("unreplayable" in m.reason for m in rp.missing)


def test_mini_swe_agent_1_layout_still_verifies_on_the_whole_tree(tmp_path):
    task, source = _task(tmp_path, pre_install=())
    submission = _recorded_patch(tmp_path, "1x", setup=None, commands=[_REPRO, FIX])
    path = write_1x(tmp_path / "run.json", task.instance_id, _steps_2x(submission)[:4], submission)
    _, rp, _ = _analyze(path, task, source)
    assert rp.replay.verified and rp.replay.rule == "whole_tree", rp.replay
    assert rp.point("after_first_source_edit").event_index == 4


# --- build products inside git add -A submissions ------------------------------------------------------


def test_build_products_in_a_submission_are_left_out_of_both_sides(tmp_path):
    task, source = _task(tmp_path, pre_install=())
    # The recording image's install left build/, an egg-info and a compiled module behind, untracked; the
    # agent's `git add -A` staged them with its fix. The replay has none of them (or other bytes).
    install = ("mkdir -p build/lib/pkg widget.egg-info pkg/__pycache__ && cp pkg/mod.py build/lib/pkg/ && "
               "printf 'Metadata-Version: 2.1\\nName: widget\\n' > widget.egg-info/PKG-INFO && "
               "{ printf '\\0\\0'; head -c 40 /dev/urandom; } > pkg/__pycache__/mod.cpython-39.pyc")
    submission = _recorded_patch(tmp_path, "built", setup=None, commands=[install, FIX])
    assert "widget.egg-info/PKG-INFO" in submission and "Binary files" in submission
    path = write_1x(tmp_path / "run.json", task.instance_id, [(FIX, "", 0)], submission)
    _, rp, result = _analyze(path, task, source)
    assert rp.replay.verified and rp.replay.rule == "whole_tree", rp.replay
    assert rp.replay.notes == [("generated output left out of the submission: build/lib/pkg/mod.py, "
                               "pkg/__pycache__/mod.cpython-39.pyc, widget.egg-info/PKG-INFO")]
    assert list(result.diffs[-1]) == ["pkg/mod.py"]


# --- the recording machine's programs ------------------------------------------------------------------


def test_a_program_missing_where_the_run_was_recorded_is_missing_in_the_replay(tmp_path):
    ws, sha = make_repo(tmp_path / "ws", BASE)
    # This host has `ed` (a stand-in that appends a line, so its effect is visible).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ed").write_text("#!/bin/sh\nfor last; do :; done\necho '# edited by ed' >> \"$last\"\n")
    (bin_dir / "ed").chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    ed_command = "printf '2s/return 1/return 2/\\nw\\nq\\n' | ed -s pkg/mod.py"
    plain = tmp_path / "plain"
    git(tmp_path, "clone", "-q", str(ws), str(plain))
    subprocess.run(["bash", "-c", ed_command], cwd=plain, env={**os.environ, **env}, check=True)
    assert "# edited by ed" in (plain / "pkg/mod.py").read_text()  # run plainly, it would change the file

    other, _ = make_repo(tmp_path / "expected", BASE)
    subprocess.run(["bash", "-c", FIX], cwd=other, check=True)
    git(other, "add", "-A")
    submission = git(other, "diff", "--cached")
    path = write_1x(tmp_path / "run.json", "acme__widget-1", [
        (ed_command, "bash: line 1: ed: command not found\n", 127),
        (FIX, "", 0),
    ], submission)
    traj = read_trajectories(path)[0]
    result = replay_trajectory(traj, ws, sha, env_vars=env, replay=ReplaySettings(use_sandbox=False, timeout=60))
    assert result.verdict.verified, result.verdict
    assert result.steps[0].missing == ["ed"] and result.steps[0].exit_code == 127
    assert "ed: command not found" in result.steps[0].output
    assert result.diffs[1] == {} and list(result.diffs[3]) == ["pkg/mod.py"]
    assert result.verdict.notes == ["event 0: ed was not found where the run was recorded (exit 127); replayed as missing"]


def test_a_command_that_failed_when_recorded_but_changes_files_here_refuses_the_run(tmp_path):
    task, source = _task(tmp_path, pre_install=())
    append = "python3 -c \"open('pkg/mod.py', 'a').write('# cache\\n')\""
    submission = _recorded_patch(tmp_path, "failed", setup=None, commands=[FIX])
    path = write_1x(tmp_path / "run.json", task.instance_id, [
        (append, "Traceback (most recent call last):\nPermissionError: [Errno 13] Permission denied: 'pkg/mod.py'\n", 1),
        (FIX, "", 0),
    ], submission)
    _, rp, result = _analyze(path, task, source)
    assert not rp.replay.verified
    assert rp.replay.reason == ("command at event 0 exited 0 in the replay but 1 in the recorded run, and changed "
                                "pkg/mod.py: the recorded run may not have made these changes")
    assert result.steps[2].action == "noop"  # nothing after the divergence ran
    assert [m.reason for m in rp.missing] == [f"run is unreplayable: {rp.replay.reason}"] * 3


# --- damaged mirrors, and one failure never stops the other runs ---------------------------------------


def _damage(bare, path: str) -> str:
    """Remove the loose object of ``path`` at HEAD from the bare repository ``bare``; returns its id."""
    oid = git(bare, "rev-parse", f"HEAD:{path}").strip()
    (bare / "objects" / oid[:2] / oid[2:]).unlink()
    return oid


def test_a_damaged_mirror_is_refused_in_one_line_and_the_other_runs_go_on(tmp_path, monkeypatch):
    task, source = _task(tmp_path, pre_install=())
    # A second repository pushed object by object (loose objects), then damaged.
    _, broken_sha = make_repo(tmp_path / "src" / "broken", BASE)
    bare = tmp_path / "mirror" / "acme__broken.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(tmp_path / "src" / "broken", "push", "-q", str(bare), "HEAD:refs/heads/main")
    git(bare, "symbolic-ref", "HEAD", "refs/heads/main")
    lost = _damage(bare, "pkg/mod.py")
    broken = SourceTask(instance_id="acme__broken-1", repo="acme/broken", base_commit=broken_sha,
                        problem_statement="f must return 2")

    with pytest.raises(RepositoryUnavailable) as caught:
        analyze_run(read_trajectories(write_1x(tmp_path / "b.json", broken.instance_id, [(FIX, "", 0)], ""))[0], broken, source, replay=ReplaySettings(use_environment=False))
    assert str(caught.value) == (f"acme/broken at {bare} lacks object {lost} needed by commit {broken_sha} "
                                 "(a partial or damaged clone: clone it again with git clone --bare)")

    runs = tmp_path / "runs"
    runs.mkdir()
    commands = [_SPHINX, FIX]
    submission = _recorded_patch(tmp_path, "good", setup=None, commands=commands)
    write_1x(runs / "acme__widget-1.json", task.instance_id, [(c, "", 0) for c in commands], submission)
    write_1x(runs / "acme__broken-1.json", broken.instance_id, [(FIX, "", 0)], submission)
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(task.model_dump_json() + "\n" + broken.model_dump_json() + "\n")
    monkeypatch.delenv("TAKEOVER_MIRROR", raising=False)
    args = ["points", str(runs), "--dataset", str(dataset), "--mirror", str(tmp_path / "mirror"), "--offline",
            "--no-environment", "--json"]
    first, second = CliRunner().invoke(app, args), CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    lines = [json.loads(line) for line in first.stdout.splitlines()]
    assert [(x["instance_id"], x["replay"]["verified"]) for x in lines] == [("acme__widget-1", True)]
    # Besides the progress lines (one per run file, with timings), the refusal is one line.
    refusals = [line for line in first.stderr.splitlines() if line.startswith("skipped:")]
    assert len(refusals) == 1 and "Traceback" not in first.stderr
    assert f"acme__broken-1.json: acme/broken at {bare} lacks object {lost} needed by commit {broken_sha}" in first.stderr
    # The same files give the same output, generated build output included.
    assert second.stdout == first.stdout
    assert [line for line in second.stderr.splitlines() if line.startswith("skipped:")] == refusals


def test_a_replay_that_breaks_its_own_workspace_is_that_runs_reason(tmp_path):
    task, source = _task(tmp_path, pre_install=())
    path = write_1x(tmp_path / "run.json", task.instance_id, [("rm -rf .git", "", 0), (FIX, "", 0)], "")
    _, rp, _ = _analyze(path, task, source)
    assert not rp.replay.verified
    assert rp.replay.reason.startswith("replay failed: SnapshotError: git rev-parse --absolute-git-dir in <workspace> "
                                       "failed: fatal: not a git repository"), rp.replay.reason
    assert [m.reason for m in rp.missing] == [f"run is unreplayable: {rp.replay.reason}"] * 3
