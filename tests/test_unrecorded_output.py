"""Replayed content the record does not determine is named, and the same on a rerun (docs/protocol.md
section 5.3, extension "Unrecorded output").

A predecessor wrote a program's output into a file (``python3 -c '...uuid4()...' > run_id.txt``, like
``pytest test_dummy.py > pytest_output.txt`` and its timing line): the record shows the command, never the
bytes, and a replay writes other bytes each time. The point after it names the file as unrecorded in
``checkpoint.json``; a second checkpoint of the same point on this machine takes the first replay's bytes
(same patch, same hash); a replay elsewhere (another cache) differs in that file only, and the hash of the
rest of the patch is the same. Files whose content the record shows (a here-document, an ``echo``, an
output later printed with ``cat``) are not named.
"""

from __future__ import annotations

import json

import pytest
from conftest import git, make_repo
from user_commands import takeover

from takeover._util.patches import split_patch
from takeover.points import analyze_run, cut_at_event
from takeover.repository_states.unrecorded_output import output_targets
from takeover.sources.repos import RepoSource
from takeover.sources.tasks import SourceTask
from takeover.trajectories.events import Event, Trajectory

BASE = {"pkg/mod.py": "def f():\n    return 1\n", "tests/test_mod.py": "def test_f():\n    pass\n"}
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"
STEPS = [
    ("cat <<'EOF' > check.py\nfrom pkg.mod import f\nprint('f() =', f())\nEOF", "", 0),           # event 0
    ("python3 -c 'import uuid; print(uuid.uuid4())' > run_id.txt", "", 0),                        # event 2
    ("echo 'hello there' > greeting.txt", "", 0),                                                 # event 4
    ("python3 check.py > answer.txt; cat answer.txt", "f() = 1", 0),                              # event 6
    ("sed -i 's/return 1/return 2/' pkg/mod.py", "", 0),                                          # event 8: the edit
    ("rm run_id.txt greeting.txt answer.txt check.py", "", 0),                                    # event 10
]


def _run(final_patch: str, steps=STEPS) -> Trajectory:
    events = []
    for command, output, code in [*steps, (SUBMIT, final_patch, None)]:
        i = len(events)
        events.append(Event(index=i, kind="action", source="agent", type="command", command=command))
        events.append(Event(index=i + 1, kind="observation", source="environment", type="command", text=output,
                            exit_code=code, cause=i))
    return Trajectory(format="mini-swe-agent", instance_id="acme__widget-1", events=events, final_patch=final_patch,
                      working_dir="/testbed", source_path="run.json")


@pytest.fixture
def predecessor(tmp_path):
    _, sha = make_repo(tmp_path / "src", BASE, bare_mirror=tmp_path / "mirror" / "acme__widget.git")
    task = SourceTask(instance_id="acme__widget-1", repo="acme/widget", base_commit=sha, problem_statement="f()")
    final, _ = make_repo(tmp_path / "final", BASE)
    (final / "pkg" / "mod.py").write_text("def f():\n    return 2\n")
    git(final, "add", "-A")
    return task, RepoSource(tmp_path / "mirror", offline=True), _run(git(final, "diff", "--cached"))


def test_output_targets_are_the_files_output_is_sent_into():
    assert output_targets("pytest test_dummy.py > pytest_output.txt") == ["pytest_output.txt"]
    assert output_targets("python run.py 2>&1 | tee -a log.txt other.txt && echo ok") == ["log.txt", "other.txt"]
    assert output_targets("make >> 'build log.txt' 2> err.txt; ls >/dev/null") == ["build log.txt", "err.txt"]
    assert output_targets("cat <<'EOF' > x.py\nprint(1)\nEOF") == ["x.py"]
    assert output_targets("grep -n 'a' f.py 2>&1; echo $? >&2") == []


def test_the_point_names_the_unrecorded_file_and_a_rerun_here_gives_the_same_patch(predecessor, monkeypatch, tmp_path):
    task, source, run = predecessor
    first = analyze_run(run, task, source, use_environment=False, replay_timeout=60)
    assert first.replay.verified, first.replay.reason
    point = first.point("after_first_source_edit")
    assert point.event_index == 8
    # run_id.txt holds output the record never shows; greeting.txt (echo), answer.txt (printed by cat) and
    # check.py (a here-document) hold what the record shows.
    assert point.unrecorded_files == ["run_id.txt"]
    assert {"run_id.txt", "greeting.txt", "answer.txt", "check.py"} <= set(split_patch(first.patches[point.type]))
    again = analyze_run(run, task, source, use_environment=False, replay_timeout=60)
    assert again.patches == first.patches and again.point(point.type) == point
    cut = cut_at_event(run, task, 4, source, use_environment=False, replay_timeout=60)
    assert cut.point.unrecorded_files == ["run_id.txt"]
    assert split_patch(cut.patch)["run_id.txt"] == split_patch(first.patches[point.type])["run_id.txt"]
    assert cut_at_event(run, task, 0, source, use_environment=False, replay_timeout=60).point.unrecorded_files == []
    # Elsewhere (another machine: another cache), the replay writes other bytes there, and only there.
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "elsewhere"))
    other = analyze_run(run, task, source, use_environment=False, replay_timeout=60)
    mine, theirs = split_patch(first.patches[point.type]), split_patch(other.patches[point.type])
    assert mine["run_id.txt"] != theirs["run_id.txt"]
    assert {p: d for p, d in mine.items() if p != "run_id.txt"} == {p: d for p, d in theirs.items() if p != "run_id.txt"}


def test_checkpoint_json_names_the_unrecorded_file_and_two_checkpoints_of_the_point_are_one(predecessor, tmp_path):
    task, _, run = predecessor
    (tmp_path / "run.json").write_text(_mini_swe_agent_file(run))
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    records = []
    for name in ("cp-1", "cp-2"):
        done = takeover("checkpoint", tmp_path / "run.json", "--point-type", "after_first_source_edit", "--dataset",
                        dataset, "--mirror", tmp_path / "mirror", "--offline", "--out-dir", tmp_path / name)
        assert done.exit_code == 0, done.stderr
        records.append(json.loads((tmp_path / name / "checkpoint.json").read_text()))
    first, second = records
    assert first["unrecorded_files"] == first["point"]["unrecorded_files"] == ["run_id.txt"]
    assert first["patch_sha256"] == second["patch_sha256"] and first["recorded_patch_sha256"] != first["patch_sha256"]
    assert first["recorded_patch_sha256"] == second["recorded_patch_sha256"]
    assert (tmp_path / "cp-1" / "checkpoint.patch").read_bytes() == (tmp_path / "cp-2" / "checkpoint.patch").read_bytes()


def _mini_swe_agent_file(run: Trajectory) -> str:
    """``run`` as a mini-swe-agent 1.x file (what ``takeover checkpoint`` reads)."""
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "<pr_description>x</pr_description>"}]
    for action, observation in zip(run.events[::2], run.events[1::2], strict=True):
        messages.append({"role": "assistant", "content": f"THOUGHT: go\n\n```bash\n{action.command}\n```"})
        body = observation.text if observation.exit_code is None else (
            f"<returncode>{observation.exit_code}</returncode>\n<output>\n{observation.text}\n</output>")
        messages.append({"role": "user", "content": body})
    return json.dumps({"instance_id": run.instance_id, "trajectory_format": "mini-swe-agent-1", "messages": messages,
                       "info": {"exit_status": "Submitted", "submission": run.final_patch, "mini_version": "1.15.0",
                                "config": {"environment": {"cwd": "/testbed"}}}})
